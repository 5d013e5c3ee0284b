"""Shape functions: the basis of an element's local polynomial space, and where its nodes sit.

A shape function object describes one reference element's basis: ``NODES_PER_ELEMENT`` functions, their values and
reference-coordinate gradients at a point (kernel functions ``element_inner_weight(coords, node)`` and
``element_inner_weight_gradient(coords, node)``), each node's reference coordinates and nodal quadrature weight, and
for continuous spaces each node's place on the element's vertices, edges, faces or interior (``node_entities``),
from which a mesh topology numbers shared nodes once.
"""

import enum
import itertools
from typing import Any

import numpy as np

from ...element import ELEMENT_DIMENSION, Element


class NodeEntity(enum.IntEnum):
    """Where a node of an element lies."""

    VERTEX = 0
    EDGE = 1
    FACE = 2
    INTERIOR = 3


class ShapeValue(str, enum.Enum):
    """Kind of values a shape function takes (compares equal to its lower-case string name).

    Attributes:
        Scalar: scalar weights.
        CovariantVector: H(curl) vectors, mapped to world space by the covariant Piola map.
        ContravariantVector: H(div) vectors, mapped to world space by the contravariant Piola map.

    """

    Scalar = "scalar"
    CovariantVector = "covariant"
    ContravariantVector = "contravariant"


class ElementBasis(enum.Enum):
    """Kind of basis of a polynomial space.

    Attributes:
        LAGRANGE: nodal Lagrange polynomials (full tensor product on squares and cubes).
        SERENDIPITY: serendipity polynomials on squares and cubes (no interior nodes).
        NONCONFORMING_POLYNOMIAL: complete polynomials of the degree on squares and cubes, discontinuous.
        NEDELEC_FIRST_KIND: H(curl)-conforming vector basis (first kind, lowest order).
        RAVIART_THOMAS: H(div)-conforming vector basis (lowest order).
        BSPLINE: B-splines on grids.

    """

    LAGRANGE = "P"
    SERENDIPITY = "S"
    NONCONFORMING_POLYNOMIAL = "dP"
    NEDELEC_FIRST_KIND = "N1"
    RAVIART_THOMAS = "RT"
    BSPLINE = "B"


#: Reference edges (pairs of reference vertices) and faces (vertex cycles) of each element.
ELEMENT_EDGES = {
    Element.LINE_SEGMENT: [],
    Element.TRIANGLE: [(1, 2), (2, 0), (0, 1)],
    Element.SQUARE: [(0, 1), (1, 2), (3, 2), (0, 3)],
    Element.TETRAHEDRON: [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)],
    Element.CUBE: [(0, 1), (3, 2), (4, 5), (7, 6), (0, 3), (1, 2), (4, 7), (5, 6), (0, 4), (1, 5), (3, 7), (2, 6)],
}
ELEMENT_FACES = {
    Element.LINE_SEGMENT: [],
    Element.TRIANGLE: [],
    Element.SQUARE: [],
    Element.TETRAHEDRON: [(1, 2, 3), (0, 3, 2), (0, 1, 3), (0, 2, 1)],
    Element.CUBE: [(0, 3, 7, 4), (1, 2, 6, 5), (0, 4, 5, 1), (3, 2, 6, 7), (0, 1, 2, 3), (4, 7, 6, 5)],
}


def reference_vertex_coords(element: Element) -> np.ndarray:
    """Reference coordinates of an element's vertices as an ``(n, 3)`` array (in ``fem.types`` conventions)."""
    if element == Element.TRIANGLE:
        return np.eye(3)
    if element == Element.TETRAHEDRON:
        return np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float64)
    if element == Element.LINE_SEGMENT:
        return np.array([[0, 0, 0], [1, 0, 0]], dtype=np.float64)
    if element == Element.SQUARE:
        return np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float64)
    return np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
                    dtype=np.float64)


def _barycentric(element: Element, coords: np.ndarray) -> np.ndarray:
    """Barycentric (simplices) or multilinear vertex weights of reference points, ``(n, vertex_count)``."""
    c = np.atleast_2d(coords)
    if element == Element.TRIANGLE:
        return c[:, :3].copy()
    if element == Element.TETRAHEDRON:
        return np.stack([1.0 - c[:, 0] - c[:, 1] - c[:, 2], c[:, 0], c[:, 1], c[:, 2]], axis=1)
    verts = reference_vertex_coords(element)
    dim = ELEMENT_DIMENSION[element]
    w = np.ones((len(c), len(verts)))
    for d in range(dim):
        w *= np.where(verts[None, :, d] > 0.5, c[:, d:d + 1], 1.0 - c[:, d:d + 1])
    return w


def classify_nodes(element: Element, node_coords: np.ndarray, tol: float = 1e-9) -> list[tuple[NodeEntity, int]]:
    """The entity (vertex, edge, face or interior, and which one) each node at ``node_coords`` lies on."""
    verts = reference_vertex_coords(element)
    dim = ELEMENT_DIMENSION[element]
    out: list[tuple[NodeEntity, int]] = []
    weights = _barycentric(element, node_coords)
    for n, c in enumerate(np.atleast_2d(node_coords)):
        for v, p in enumerate(verts):
            if np.allclose(c[:dim], p[:dim], atol=tol):
                out.append((NodeEntity.VERTEX, v))
                break
        else:
            support = set(np.nonzero(np.abs(weights[n]) > tol)[0].tolist())
            found = None
            for e, (a, b) in enumerate(ELEMENT_EDGES[element]):
                if support <= {a, b}:
                    found = (NodeEntity.EDGE, e)
                    break
            if found is None:
                for f, face in enumerate(ELEMENT_FACES[element]):
                    if support <= set(face):
                        found = (NodeEntity.FACE, f)
                        break
            if found is None:
                found = (NodeEntity.INTERIOR, 0)
            if dim == 1 and found[0] == NodeEntity.INTERIOR:
                found = (NodeEntity.INTERIOR, 0)
            out.append(found)
    return out


class ShapeFunction:
    """Base class of shape functions (see the module documentation).

    Attributes:
        element: the reference element.
        ORDER: the polynomial degree.
        NODES_PER_ELEMENT: number of basis functions (nodes) per element.
        scalar_type: precision of the kernel functions.

    """

    element: Element
    ORDER: int
    NODES_PER_ELEMENT: int
    #: the enumeration of value kinds, reachable from any shape (``shape.value == shape.Value.Scalar``)
    Value = ShapeValue
    #: kind of values: scalar, covariant (H(curl) vectors) or contravariant (H(div) vectors)
    value: ShapeValue = ShapeValue.Scalar

    def __init__(self, scalar_type: Any) -> None:
        self.scalar_type = scalar_type

    @property
    def name(self) -> str:
        """A name identifying the basis (element, kind, degree, family)."""
        raise NotImplementedError

    @property
    def dimension(self) -> int:
        """Dimension of the reference element."""
        return ELEMENT_DIMENSION[self.element]

    def node_coords(self) -> np.ndarray:
        """Reference coordinates of the nodes, ``(NODES_PER_ELEMENT, 3)`` float64."""
        raise NotImplementedError

    def node_quadrature_weights(self) -> np.ndarray:
        """Weights of the nodal quadrature rule (summing to one)."""
        raise NotImplementedError

    def node_entities(self) -> list[tuple[NodeEntity, int]]:
        """Per node: the entity it lies on (for continuous numbering)."""
        return classify_nodes(self.element, self.node_coords())

    def is_nodal(self) -> bool:
        """Whether the basis interpolates (each function is one at its node, zero at the others)."""
        return True

    def make_element_inner_weight(self) -> Any:
        """The kernel function ``(coords, node) -> weight``."""
        return self.funcs.element_inner_weight

    def make_element_inner_weight_gradient(self) -> Any:
        """The kernel function ``(coords, node) -> reference gradient``."""
        return self.funcs.element_inner_weight_gradient

    def make_node_coords_in_element(self) -> Any:
        """The kernel function ``(node) -> reference coordinates``."""
        return self.funcs.node_coords_in_element

    def make_node_quadrature_weight(self) -> Any:
        """The kernel function ``(node) -> nodal quadrature weight``."""
        return self.funcs.node_quadrature_weight

    def make_trace_node_quadrature_weight(self) -> Any:
        """The kernel function ``(node) -> weight of the node in the nodal quadrature of the sides it lies on``.

        Weights come from :meth:`trace_node_quadrature_weights`; nodes on no side weigh zero.
        """
        from .trace import trace_weight_func

        return trace_weight_func(self)

    def trace_monomials(self, side_dim: int) -> list[tuple[int, ...]]:
        """Exponents of the monomials spanning the basis restricted to a side (complete polynomials by default)."""
        return [a for a in itertools.product(range(self.ORDER + 1), repeat=side_dim) if sum(a) <= self.ORDER]

    def trace_node_quadrature_weights(self) -> np.ndarray:
        """Per node: its weight in the nodal quadrature of a side through it (zero for nodes on no side)."""
        from .trace import trace_node_weights

        return trace_node_weights(self)

    def element_node_triangulation(self) -> np.ndarray:
        """Triangles (2D) or tetrahedra (3D) of local node indices covering the element, for plotting."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<ShapeFunction {self.name}>"
