"""Shape functions of ``treadle.fem`` (the reference's ``warp.fem.space.shape``): one class per element and basis."""

from ..._src.fem.space.shape import ElementBasis as ElementBasis
from ..._src.fem.space.shape import ShapeFunction as ShapeFunction
from ..._src.fem.space.shape import make_element_shape_function as make_element_shape_function
from ..._src.fem.space.shape.base import ShapeValue as ShapeValue
from ..._src.fem.space.shape.named import CubeBSplineShapeFunctions as CubeBSplineShapeFunctions
from ..._src.fem.space.shape.named import CubeNedelecFirstKindShapeFunctions as CubeNedelecFirstKindShapeFunctions
from ..._src.fem.space.shape.named import (
    CubeNonConformingPolynomialShapeFunctions as CubeNonConformingPolynomialShapeFunctions,
)
from ..._src.fem.space.shape.named import CubeRaviartThomasShapeFunctions as CubeRaviartThomasShapeFunctions
from ..._src.fem.space.shape.named import CubeSerendipityShapeFunctions as CubeSerendipityShapeFunctions
from ..._src.fem.space.shape.named import CubeTripolynomialShapeFunctions as CubeTripolynomialShapeFunctions
from ..._src.fem.space.shape.named import SquareBipolynomialShapeFunctions as SquareBipolynomialShapeFunctions
from ..._src.fem.space.shape.named import SquareBSplineShapeFunctions as SquareBSplineShapeFunctions
from ..._src.fem.space.shape.named import SquareNedelecFirstKindShapeFunctions as SquareNedelecFirstKindShapeFunctions
from ..._src.fem.space.shape.named import (
    SquareNonConformingPolynomialShapeFunctions as SquareNonConformingPolynomialShapeFunctions,
)
from ..._src.fem.space.shape.named import SquareRaviartThomasShapeFunctions as SquareRaviartThomasShapeFunctions
from ..._src.fem.space.shape.named import SquareSerendipityShapeFunctions as SquareSerendipityShapeFunctions
from ..._src.fem.space.shape.named import (
    TetrahedronNedelecFirstKindShapeFunctions as TetrahedronNedelecFirstKindShapeFunctions,
)
from ..._src.fem.space.shape.named import (
    TetrahedronNonConformingPolynomialShapeFunctions as TetrahedronNonConformingPolynomialShapeFunctions,
)
from ..._src.fem.space.shape.named import TetrahedronPolynomialShapeFunctions as TetrahedronPolynomialShapeFunctions
from ..._src.fem.space.shape.named import (
    TetrahedronRaviartThomasShapeFunctions as TetrahedronRaviartThomasShapeFunctions,
)
from ..._src.fem.space.shape.named import (
    TriangleNedelecFirstKindShapeFunctions as TriangleNedelecFirstKindShapeFunctions,
)
from ..._src.fem.space.shape.named import (
    TriangleNonConformingPolynomialShapeFunctions as TriangleNonConformingPolynomialShapeFunctions,
)
from ..._src.fem.space.shape.named import TrianglePolynomialShapeFunctions as TrianglePolynomialShapeFunctions
from ..._src.fem.space.shape.named import TriangleRaviartThomasShapeFunctions as TriangleRaviartThomasShapeFunctions

__all__ = [
    "CubeBSplineShapeFunctions",
    "CubeNedelecFirstKindShapeFunctions",
    "CubeNonConformingPolynomialShapeFunctions",
    "CubeRaviartThomasShapeFunctions",
    "CubeSerendipityShapeFunctions",
    "CubeTripolynomialShapeFunctions",
    "ElementBasis",
    "ShapeFunction",
    "ShapeValue",
    "SquareBSplineShapeFunctions",
    "SquareBipolynomialShapeFunctions",
    "SquareNedelecFirstKindShapeFunctions",
    "SquareNonConformingPolynomialShapeFunctions",
    "SquareRaviartThomasShapeFunctions",
    "SquareSerendipityShapeFunctions",
    "TetrahedronNedelecFirstKindShapeFunctions",
    "TetrahedronNonConformingPolynomialShapeFunctions",
    "TetrahedronPolynomialShapeFunctions",
    "TetrahedronRaviartThomasShapeFunctions",
    "TriangleNedelecFirstKindShapeFunctions",
    "TriangleNonConformingPolynomialShapeFunctions",
    "TrianglePolynomialShapeFunctions",
    "TriangleRaviartThomasShapeFunctions",
    "make_element_shape_function",
]
