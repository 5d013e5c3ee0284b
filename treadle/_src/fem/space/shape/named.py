"""The shape-function classes under the reference's names, one per element and kind of basis.

Each class fixes the element (and for vector bases the kind) of one of the generic shapes; constructors take the
degree, the 1D point ``family`` where the basis has one (tensor-product Lagrange and serendipity bases), and the
``scalar_type`` (``wp.float32`` by default).
"""

from typing import Any

import treadle as wp

from ...element import Element
from ...polynomial import Polynomial
from .bspline import BSplineShape
from .lagrange import SimplexLagrangeShape, TensorLagrangeShape
from .monomial import NonconformingPolynomialShape, SerendipityShape
from .vector import VectorShape


def _with_family(name: str, base: type, element: Element, doc: str) -> type:
    def __init__(self: Any, degree: int, family: Polynomial, scalar_type: Any = wp.float32) -> None:
        base.__init__(self, element, degree, Polynomial(family), scalar_type)

    return type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _degree_only(name: str, base: type, element: Element, doc: str) -> type:
    def __init__(self: Any, degree: int, scalar_type: Any = wp.float32) -> None:
        base.__init__(self, element, degree, scalar_type)

    return type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _vector(name: str, element: Element, kind: str, doc: str) -> type:
    def __init__(self: Any, degree: int = 1, scalar_type: Any = wp.float32) -> None:
        if int(degree) != 1:
            raise NotImplementedError(f"vector-valued shape functions are available for degree 1 only, got {degree}")
        VectorShape.__init__(self, element, kind, scalar_type)

    return type(name, (VectorShape,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


_TP = "Tensor-product Lagrange polynomials on the unit {}, nodes at a 1D point family."
_SE = "Serendipity polynomials (degree 2 or 3) on the unit {}."
_PL = "Lagrange polynomials on the reference {} (equispaced barycentric nodes)."
_NC = "Complete polynomials of a total degree on the reference {}, interior nodes (discontinuous)."
_BS = "Uniform B-splines (degree 1 to 3) on a {} grid cell."
_N1 = "Lowest-order Nedelec (first kind, H(curl)) vector basis on the reference {}."
_RT = "Lowest-order Raviart-Thomas (H(div)) vector basis on the reference {}."

SquareBipolynomialShapeFunctions = _with_family("SquareBipolynomialShapeFunctions", TensorLagrangeShape,
                                                Element.SQUARE, _TP.format("square"))
CubeTripolynomialShapeFunctions = _with_family("CubeTripolynomialShapeFunctions", TensorLagrangeShape, Element.CUBE,
                                               _TP.format("cube"))
SquareSerendipityShapeFunctions = _with_family("SquareSerendipityShapeFunctions", SerendipityShape, Element.SQUARE,
                                               _SE.format("square"))
CubeSerendipityShapeFunctions = _with_family("CubeSerendipityShapeFunctions", SerendipityShape, Element.CUBE,
                                             _SE.format("cube"))
TrianglePolynomialShapeFunctions = _degree_only("TrianglePolynomialShapeFunctions", SimplexLagrangeShape,
                                                Element.TRIANGLE, _PL.format("triangle"))
TetrahedronPolynomialShapeFunctions = _degree_only("TetrahedronPolynomialShapeFunctions", SimplexLagrangeShape,
                                                   Element.TETRAHEDRON, _PL.format("tetrahedron"))
SquareNonConformingPolynomialShapeFunctions = _degree_only("SquareNonConformingPolynomialShapeFunctions",
                                                           NonconformingPolynomialShape, Element.SQUARE,
                                                           _NC.format("square"))
CubeNonConformingPolynomialShapeFunctions = _degree_only("CubeNonConformingPolynomialShapeFunctions",
                                                         NonconformingPolynomialShape, Element.CUBE,
                                                         _NC.format("cube"))
TriangleNonConformingPolynomialShapeFunctions = _degree_only("TriangleNonConformingPolynomialShapeFunctions",
                                                             NonconformingPolynomialShape, Element.TRIANGLE,
                                                             _NC.format("triangle"))
TetrahedronNonConformingPolynomialShapeFunctions = _degree_only("TetrahedronNonConformingPolynomialShapeFunctions",
                                                                NonconformingPolynomialShape, Element.TETRAHEDRON,
                                                                _NC.format("tetrahedron"))
SquareBSplineShapeFunctions = _degree_only("SquareBSplineShapeFunctions", BSplineShape, Element.SQUARE,
                                           _BS.format("square"))
CubeBSplineShapeFunctions = _degree_only("CubeBSplineShapeFunctions", BSplineShape, Element.CUBE,
                                         _BS.format("cubic"))
SquareNedelecFirstKindShapeFunctions = _vector("SquareNedelecFirstKindShapeFunctions", Element.SQUARE, "N1",
                                               _N1.format("square"))
CubeNedelecFirstKindShapeFunctions = _vector("CubeNedelecFirstKindShapeFunctions", Element.CUBE, "N1",
                                             _N1.format("cube"))
TriangleNedelecFirstKindShapeFunctions = _vector("TriangleNedelecFirstKindShapeFunctions", Element.TRIANGLE, "N1",
                                                 _N1.format("triangle"))
TetrahedronNedelecFirstKindShapeFunctions = _vector("TetrahedronNedelecFirstKindShapeFunctions", Element.TETRAHEDRON,
                                                    "N1", _N1.format("tetrahedron"))
SquareRaviartThomasShapeFunctions = _vector("SquareRaviartThomasShapeFunctions", Element.SQUARE, "RT",
                                            _RT.format("square"))
CubeRaviartThomasShapeFunctions = _vector("CubeRaviartThomasShapeFunctions", Element.CUBE, "RT", _RT.format("cube"))
TriangleRaviartThomasShapeFunctions = _vector("TriangleRaviartThomasShapeFunctions", Element.TRIANGLE, "RT",
                                              _RT.format("triangle"))
TetrahedronRaviartThomasShapeFunctions = _vector("TetrahedronRaviartThomasShapeFunctions", Element.TETRAHEDRON, "RT",
                                                 _RT.format("tetrahedron"))

__all__ = [n for n in dir() if n.endswith("ShapeFunctions")]
