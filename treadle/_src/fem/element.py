"""Reference elements and their quadrature rules.

Every rule's weights sum to one: a quadrature weight is a fraction of the element, and the element's measure
(``fem.measure``) carries its size.
"""

import enum
import functools
import itertools
import math

import numpy as np

from .polynomial import Polynomial, points_for_order, quadrature_1d


class Element(enum.Enum):
    """The reference shape of a cell or side.

    Attributes:
        LINE_SEGMENT: ``[0, 1]``.
        SQUARE: ``[0, 1]^2``.
        CUBE: ``[0, 1]^3``.
        TRIANGLE: the unit triangle, barycentric coordinates.
        TETRAHEDRON: the unit tetrahedron.

    """

    LINE_SEGMENT = 1
    SQUARE = 2
    CUBE = 3
    TRIANGLE = 4
    TETRAHEDRON = 5

    @property
    def prototype(self) -> object:
        """The reference element object (measure, center, quadrature rules)."""
        from .geometry import element as prototypes

        return {Element.LINE_SEGMENT: prototypes.LinearEdge, Element.SQUARE: prototypes.Square,
                Element.CUBE: prototypes.Cube, Element.TRIANGLE: prototypes.Triangle,
                Element.TETRAHEDRON: prototypes.Tetrahedron}[self]()


#: Dimension of each reference element.
ELEMENT_DIMENSION = {Element.LINE_SEGMENT: 1, Element.SQUARE: 2, Element.CUBE: 3, Element.TRIANGLE: 2,
                     Element.TETRAHEDRON: 3}

#: Reference vertices of each element, in the order meshes list them (coordinates as in ``fem.types``).
ELEMENT_VERTICES = {
    Element.LINE_SEGMENT: [(0, 0, 0), (1, 0, 0)],
    Element.SQUARE: [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)],
    Element.CUBE: [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)],
    Element.TRIANGLE: [(1, 0, 0), (0, 1, 0), (0, 0, 1)],
    Element.TETRAHEDRON: [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)],
}


def _tensor(n: int, dim: int, family: Polynomial) -> tuple[np.ndarray, np.ndarray]:
    x, w = quadrature_1d(n, family)
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    pts = np.zeros((n**dim, 3))
    for d in range(dim):
        pts[:, d] = grids[d].reshape(-1)
    weights = np.prod([g.reshape(-1) for g in wgrids], axis=0)
    return pts, weights


def _triangle(order: int) -> tuple[np.ndarray, np.ndarray]:
    if order <= 1:
        return np.array([[1 / 3, 1 / 3, 1 / 3]]), np.array([1.0])
    if order == 2:
        a, b = 2.0 / 3.0, 1.0 / 6.0
        return np.array([[a, b, b], [b, a, b], [b, b, a]]), np.full(3, 1.0 / 3.0)
    # collapsed (Duffy) tensor rule: x = u, y = v (1 - u), Jacobian (1 - u)
    n = math.ceil((order + 2) / 2)
    x, w = quadrature_1d(n, Polynomial.GAUSS_LEGENDRE)
    pts, weights = [], []
    for u, wu in zip(x, w):
        for v, wv in zip(x, w):
            px, py = u, v * (1.0 - u)
            pts.append((1.0 - px - py, px, py))
            weights.append(2.0 * wu * wv * (1.0 - u))
    return np.array(pts), np.array(weights)


def _grundmann_moeller(dim: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Grundmann-Moeller rule on the ``dim``-simplex, exact to degree ``2s + 1 >= order`` (barycentric points).

    Weights alternate in sign; they are normalised to sum to one (the rule is exact for constants).
    """
    s = max(0, (order - 1 + 1) // 2)
    d = 2 * s + 1
    pts: list[list[float]] = []
    wts: list[float] = []
    for i in range(s + 1):
        denom = d + dim - 2 * i
        w = (-1) ** i * denom**d / (math.factorial(i) * math.factorial(d + dim - i))
        for beta in itertools.product(range(s - i + 1), repeat=dim + 1):
            if sum(beta) != s - i:
                continue
            pts.append([(2 * b + 1) / denom for b in beta])
            wts.append(w)
    wa = np.array(wts)
    return np.array(pts), wa / wa.sum()


def _tetrahedron(order: int) -> tuple[np.ndarray, np.ndarray]:
    if order <= 1:
        return np.array([[0.25, 0.25, 0.25]]), np.array([1.0])
    if order == 2:
        a = (5.0 + 3.0 * math.sqrt(5.0)) / 20.0
        b = (5.0 - math.sqrt(5.0)) / 20.0
        return np.array([[b, b, b], [a, b, b], [b, a, b], [b, b, a]]), np.full(4, 0.25)
    n = math.ceil((order + 3) / 2)
    gm_pts, gm_w = _grundmann_moeller(3, order)
    if len(gm_w) < n**3:  # fewer points than the collapsed rule (from order 4 on)
        return gm_pts[:, 1:].copy(), gm_w
    x, w = quadrature_1d(n, Polynomial.GAUSS_LEGENDRE)
    pts, weights = [], []
    for u, wu in zip(x, w):
        for v, wv in zip(x, w):
            for t, wt in zip(x, w):
                px = u
                py = v * (1.0 - u)
                pz = t * (1.0 - u) * (1.0 - v)
                pts.append((px, py, pz))
                weights.append(6.0 * wu * wv * wt * (1.0 - u) ** 2 * (1.0 - v))
    return np.array(pts), np.array(weights)


@functools.cache
def _element_rule(element: Element, order: int, family: Polynomial) -> tuple[np.ndarray, np.ndarray]:
    if element in (Element.LINE_SEGMENT, Element.SQUARE, Element.CUBE):
        n = points_for_order(order, family)
        return _tensor(n, ELEMENT_DIMENSION[element], family)
    if element == Element.TRIANGLE:
        return _triangle(order)
    if element == Element.TETRAHEDRON:
        return _tetrahedron(order)
    raise TypeError(f"unknown element {element!r}")


def element_quadrature(element: Element, order: int, family: Polynomial | None = None) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
    """A rule on a reference element that integrates polynomials of degree ``order`` exactly.

    Args:
        element: the reference element.
        order: polynomial degree integrated exactly (at least 0).
        family: point family of the tensor-product rules of segments, squares and cubes (Gauss-Legendre by
            default); simplices use their own rules.

    Returns:
        ``(coords, weights)``: an ``(n, 3)`` array of reference coordinates and ``n`` weights summing to one.

    """
    if order < 0:
        raise ValueError(f"quadrature order must be non-negative, got {order}")
    fam = Polynomial.GAUSS_LEGENDRE if family is None else Polynomial(family)
    pts, w = _element_rule(Element(element), int(order), fam)
    return pts.copy(), w.copy()
