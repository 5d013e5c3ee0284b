"""Reference elements as objects: dimension, measure, center and quadrature rules.

These are the classes of the reference's ``warp.fem.geometry.element``.

Quadrature rules come from :func:`..element.element_quadrature`; their weights sum to one (a fraction of the
element, as everywhere in ``treadle.fem``).
"""

from typing import Any

from ..element import ELEMENT_DIMENSION, Element, element_quadrature
from ..polynomial import Polynomial, quadrature_1d
from ..types import Coords, Coords_f64

__all__ = ["Coords", "Coords_f64", "Cube", "Element", "LinearEdge", "Polynomial", "PrototypeElement", "Square",
           "Tetrahedron", "Triangle", "quadrature_1d"]


class PrototypeElement:
    """A reference element: its kind, dimension, measure, center, and quadrature rules."""

    #: The element kind.
    element: Element = Element.LINE_SEGMENT
    #: Measure of the reference element.
    _measure: float = 1.0
    #: Reference coordinates of the element's center.
    _center: tuple[float, float, float] = (0.5, 0.0, 0.0)

    @property
    def dimension(self) -> int:
        """Topological dimension."""
        return ELEMENT_DIMENSION[self.element]

    def measure(self) -> float:
        """Measure (length, area, volume) of the reference element."""
        return self._measure

    def center(self) -> Coords:
        """Reference coordinates of the center."""
        return Coords(*self._center)

    def instantiate_quadrature(self, order: int, family: Any = None) -> tuple[list[Coords], list[float]]:
        """A rule exact for polynomials of degree ``order``: ``(coordinates, weights)``, weights summing to one.

        Args:
            order: degree integrated exactly.
            family: point family of tensor-product rules; on simplices ``None`` selects the element's own
                (collapsed or Grundmann-Moeller) rule, as does any family.

        """
        pts, w = element_quadrature(self.element, order, family)
        return [Coords(*(float(x) for x in p)) for p in pts], [float(x) for x in w]


class LinearEdge(PrototypeElement):
    """The segment ``[0, 1]``."""

    element = Element.LINE_SEGMENT


class Square(PrototypeElement):
    """The square ``[0, 1]^2``."""

    element = Element.SQUARE
    _center = (0.5, 0.5, 0.0)


class Cube(PrototypeElement):
    """The cube ``[0, 1]^3``."""

    element = Element.CUBE
    _center = (0.5, 0.5, 0.5)


class Triangle(PrototypeElement):
    """The unit triangle, in barycentric coordinates."""

    element = Element.TRIANGLE
    _measure = 0.5
    _center = (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)


class Tetrahedron(PrototypeElement):
    """The unit tetrahedron."""

    element = Element.TETRAHEDRON
    _measure = 1.0 / 6.0
    _center = (0.25, 0.25, 0.25)
