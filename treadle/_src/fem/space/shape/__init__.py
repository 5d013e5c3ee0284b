"""Shape functions of the reference elements, and the factory choosing one."""

import functools
from typing import Any

import treadle as wp

from ...element import Element
from ...polynomial import Polynomial
from .base import ElementBasis, NodeEntity, ShapeFunction
from .lagrange import SimplexLagrangeShape, TensorLagrangeShape


@functools.cache
def make_element_shape_function(element: Element, degree: int, element_basis: ElementBasis | None = None,
                                family: Polynomial | None = None, scalar_type: Any = None) -> ShapeFunction:
    """The shape function of an element for a degree and kind of basis.

    Args:
        element: the reference element.
        degree: polynomial degree.
        element_basis: kind of basis (Lagrange by default).
        family: point family of tensor-product Lagrange nodes (Gauss-Lobatto-Legendre by default).
        scalar_type: precision of the kernel functions (``wp.float32`` by default).

    """
    S = wp.float32 if scalar_type is None else scalar_type
    basis = ElementBasis.LAGRANGE if element_basis is None else ElementBasis(element_basis)
    element = Element(element)
    degree = int(degree)
    if degree < 0:
        raise ValueError(f"degree must be non-negative, got {degree}")
    if basis == ElementBasis.LAGRANGE:
        if element in (Element.SQUARE, Element.CUBE):
            fam = Polynomial.LOBATTO_GAUSS_LEGENDRE if family is None else Polynomial(family)
            return TensorLagrangeShape(element, degree, fam, S)
        if element in (Element.TRIANGLE, Element.TETRAHEDRON):
            return SimplexLagrangeShape(element, degree, S)
    if basis == ElementBasis.SERENDIPITY:
        from .monomial import SerendipityShape

        if element in (Element.SQUARE, Element.CUBE):
            fam = Polynomial.LOBATTO_GAUSS_LEGENDRE if family is None else Polynomial(family)
            return SerendipityShape(element, degree, fam, S)
        # on simplices the serendipity and Lagrange spaces coincide
        return SimplexLagrangeShape(element, degree, S)
    if basis in (ElementBasis.NEDELEC_FIRST_KIND, ElementBasis.RAVIART_THOMAS):
        from .vector import VectorShape

        kind = "N1" if basis == ElementBasis.NEDELEC_FIRST_KIND else "RT"
        if degree != 1:
            raise NotImplementedError(f"{basis.name} shape functions are available for degree 1 only, got {degree}")
        return VectorShape(element, kind, S)
    if basis == ElementBasis.NONCONFORMING_POLYNOMIAL:
        from .monomial import NonconformingPolynomialShape

        return NonconformingPolynomialShape(element, degree, S)
    if basis == ElementBasis.BSPLINE and element in (Element.SQUARE, Element.CUBE):
        from .bspline import BSplineShape

        return BSplineShape(element, degree, S)
    raise NotImplementedError(f"{basis.name} shape functions on {element.name} are not available")


__all__ = ["ElementBasis", "NodeEntity", "ShapeFunction", "make_element_shape_function"]
