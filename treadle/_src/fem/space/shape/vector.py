"""Vector-valued shape functions: lowest-order Nedelec (first kind, H(curl)) and Raviart-Thomas (H(div)) bases.

One node per edge (Nedelec) or per facet (Raviart-Thomas: edges in 2D, faces in 3D). On the reference element a
basis function's tangential integral along its edge (Nedelec) or its flux through its facet (Raviart-Thomas) is one
and that of every other node is zero. Values are reference-coordinate vectors; a function space maps them to world
vectors by the covariant (``F^-T``) or contravariant (``F / |F|``) Piola map, and multiplies each by the sign that
orients its edge or facet the same way from every cell sharing it.

The functions are affine on simplices, squares and for Raviart-Thomas on cubes (``phi(x) = A x + b``, stored as
tables); the cube's Nedelec functions are bilinear in the two coordinates transverse to their edge.
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from ... import codegen
from ...element import ELEMENT_DIMENSION, Element
from ...types import coords_type
from .base import ELEMENT_EDGES, ELEMENT_FACES, ShapeFunction, ShapeValue, reference_vertex_coords


def _ref_vertices(element: Element) -> np.ndarray:
    """Vertices in the parameter coordinates the gradients are taken in (``(l1, l2)`` on triangles)."""
    v = reference_vertex_coords(element)
    if element == Element.TRIANGLE:
        return np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    return v[:, :ELEMENT_DIMENSION[element]]


def _barycentric_affine(element: Element) -> tuple[np.ndarray, np.ndarray]:
    """``(c, g)`` with barycentric coordinate ``l_i(x) = c[i] + g[i] . x`` on a simplex."""
    v = _ref_vertices(element)
    n = len(v)
    m = np.hstack([np.ones((n, 1)), v])  # l_i(v_j) = delta_ij
    coef = np.linalg.inv(m)  # column i: (c_i, g_i)
    return coef[0], coef[1:].T


def _entities(element: Element, kind: str) -> list[tuple[int, ...]]:
    """The entities carrying the nodes: edges (Nedelec; Raviart-Thomas in 2D) or faces (Raviart-Thomas in 3D)."""
    if kind == "N1" or ELEMENT_DIMENSION[element] == 2:
        return list(ELEMENT_EDGES[element])
    return list(ELEMENT_FACES[element])


def _affine_tables(element: Element, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``A (N, dim, dim)`` and ``b (N, dim)`` of affine bases (all but the cube's Nedelec functions)."""
    dim = ELEMENT_DIMENSION[element]
    ents = _entities(element, kind)
    verts = _ref_vertices(element)
    n = len(ents)
    A = np.zeros((n, dim, dim))
    b = np.zeros((n, dim))
    if element in (Element.TRIANGLE, Element.TETRAHEDRON):
        c, g = _barycentric_affine(element)
        for k, ent in enumerate(ents):
            if kind == "N1":
                a, bb = ent  # Whitney form l_a grad l_b - l_b grad l_a
                A[k] = np.outer(g[bb], g[a]) - np.outer(g[a], g[bb])
                b[k] = c[a] * g[bb] - c[bb] * g[a]
            else:
                opposite = next(i for i in range(dim + 1) if i not in ent)
                # (x - v_opposite) scaled to a unit flux through the facet (dim! times the reference volume)
                scale = 1.0 if dim == 2 else 2.0
                A[k] = scale * np.eye(dim)
                b[k] = -scale * verts[opposite]
        return A, b
    for k, ent in enumerate(ents):
        pts = verts[list(ent)]
        if kind == "N1":  # square edges: unit along the edge, linear across it
            axis = int(np.argmax(np.abs(pts[1] - pts[0])))
            other = 1 - axis
            off = pts[0, other]
            A[k, axis, other] = 1.0 if off > 0.5 else -1.0
            b[k, axis] = 0.0 if off > 0.5 else 1.0
        else:  # facets of squares and cubes: normal along the axis, linear in that coordinate
            axis = int(np.argmin(np.ptp(pts, axis=0)))
            off = pts[0, axis]
            A[k, axis, axis] = 1.0 if off > 0.5 else -1.0
            b[k, axis] = 0.0 if off > 0.5 else 1.0
    return A, b


def _cube_n1_eval(x: np.ndarray, k: int) -> np.ndarray:
    """Value of the cube's Nedelec function ``k`` at reference point ``x`` (host version of the kernel function)."""
    axis, sub = divmod(k, 4)
    t1, t2 = [a for a in range(3) if a != axis]
    o1, o2 = sub % 2, sub // 2
    v = np.zeros(3)
    v[axis] = (x[t1] if o1 else 1.0 - x[t1]) * (x[t2] if o2 else 1.0 - x[t2])
    return v


class VectorShape(ShapeFunction):
    """Lowest-order Nedelec (first kind) or Raviart-Thomas functions on a reference element.

    Args:
        element: triangle, square, tetrahedron or cube.
        kind: ``"N1"`` (Nedelec) or ``"RT"`` (Raviart-Thomas).
        scalar_type: precision of the kernel functions.

    """

    def __init__(self, element: Element, kind: str, scalar_type: Any) -> None:
        super().__init__(scalar_type)
        if element not in (Element.TRIANGLE, Element.SQUARE, Element.TETRAHEDRON, Element.CUBE):
            raise NotImplementedError(f"{'Nedelec' if kind == 'N1' else 'Raviart-Thomas'} shape functions on "
                                      f"{element.name} are not available")
        self.element = element
        self.kind = kind
        self.ORDER = 1
        self.value = ShapeValue.CovariantVector if kind == "N1" else ShapeValue.ContravariantVector
        self._ents = _entities(element, kind)
        self.NODES_PER_ELEMENT = len(self._ents)
        dim = ELEMENT_DIMENSION[element]
        side_nodes = {"N1": {2: 1, 3: 4 if element == Element.CUBE else 3}, "RT": {2: 1, 3: 1}}
        self.NODES_PER_SIDE = side_nodes[kind][dim]
        #: nodal weight of a node on a side (the side's nodes share the side equally)
        self.trace_node_weight = 1.0 / self.NODES_PER_SIDE
        self._cube_n1 = element == Element.CUBE and kind == "N1"
        if not self._cube_n1:
            self._A, self._b = _affine_tables(element, kind)
        self.duals, self.orientations = self._duals()
        self.funcs = _vector_funcs(self)

    @property
    def name(self) -> str:
        """E.g. ``Tetrahedron_N1``."""
        return f"{self.element.name.title()}_{self.kind}"

    def evaluate(self, x: np.ndarray, k: int) -> np.ndarray:
        """Reference value of function ``k`` at parameter point ``x`` (NumPy, for tests and host tables)."""
        if self._cube_n1:
            return _cube_n1_eval(x, k)
        return self._A[k] @ x + self._b[k]

    def _param(self, coords: np.ndarray) -> np.ndarray:
        c = np.asarray(coords, dtype=np.float64)
        return c[1:3] if self.element == Element.TRIANGLE else c[:self.dimension]

    def _duals(self) -> tuple[np.ndarray, list[int]]:
        """Per node: the dual vector extracting its dof, and its orientation (see :meth:`node_orientations`).

        The dual vector ``d`` gives the dof of a reference value ``v`` at the node as ``dot(v, d)``.
        """
        verts = _ref_vertices(self.element)
        duals, orient = [], []
        for k, ent in enumerate(self._ents):
            pts = verts[list(ent)]
            tangent = pts[1] - pts[0]
            if self.kind == "N1":
                direction = tangent
            elif self.dimension == 2:
                direction = np.array([-tangent[1], tangent[0]])  # counter-clockwise normal of a -> b
            else:
                direction = np.cross(pts[1] - pts[0], pts[2] - pts[1])  # right-hand normal of the vertex cycle
            x = self._param(self.node_coords()[k])
            val = self.evaluate(x, k)
            proj = float(val @ direction)
            # basis functions are constant along their entity's direction at the node: scale to a unit dof
            duals.append(direction / proj)
            orient.append(1 if proj > 0 else -1)
        return np.array(duals), orient

    def node_coords(self) -> np.ndarray:
        """Edge midpoints or facet centroids, in reference coordinates."""
        v = reference_vertex_coords(self.element)
        return np.array([v[list(ent)].mean(axis=0) for ent in self._ents])

    def node_quadrature_weights(self) -> np.ndarray:
        """Equal weights."""
        return np.full(self.NODES_PER_ELEMENT, 1.0 / self.NODES_PER_ELEMENT)

    def node_entity_vertices(self) -> list[tuple[int, ...]]:
        """Per node: the local vertices of its edge or face, in the order its orientation refers to."""
        return list(self._ents)

    def node_orientations(self) -> list[int]:
        """Per node: ``+1`` or ``-1``, the orientation of its basis function against its entity's vertex order.

        ``+1`` when the function points along its edge's ``a -> b`` direction (Nedelec), its edge's
        counter-clockwise normal (2D Raviart-Thomas) or its face cycle's right-hand normal (3D).
        """
        return list(self.orientations)

    def is_nodal(self) -> bool:
        """No: the dofs are tangential integrals or fluxes, not point values."""
        return False

    def is_continuous_capable(self) -> bool:
        """Always: every node lies on a shared edge or facet."""
        return True

    def element_node_triangulation(self) -> np.ndarray:
        """Not defined: the nodes are edge or facet centres."""
        raise NotImplementedError(f"{self.name} has no node triangulation (its nodes are edge or facet centres)")


@functools.cache
def _vector_funcs_cached(element: Element, kind: str, S: Any, A_flat: tuple[float, ...], b_flat: tuple[float, ...],
                         coords_flat: tuple[float, ...], duals_flat: tuple[float, ...]) -> SimpleNamespace:
    dim = ELEMENT_DIMENSION[element]
    N = len(coords_flat) // 3
    Coords = coords_type(S)
    VecC = wp.types.vector(dim, S)
    MatC = wp.types.matrix(shape=(dim, dim), dtype=S)
    NC = wp.types.matrix(shape=(N, 3), dtype=S)
    NCOORDS = NC(*coords_flat)
    ND = wp.types.matrix(shape=(N, dim), dtype=S)
    DUALS = ND(*duals_flat)
    WEIGHT = S(1.0 / N)
    TRI = element == Element.TRIANGLE
    DIM = dim
    key = ("vector_shape", element.value, kind, codegen.type_key(S))

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def param_coords(coords: Coords) -> VecC:
        x = VecC()
        if wp.static(TRI):
            x[0] = coords[1]
            x[1] = coords[2]
        else:
            for d in range(wp.static(DIM)):
                x[d] = coords[d]
        return x

    if element == Element.CUBE and kind == "N1":
        # edge node = 4 * axis + sub; the two transverse axes in increasing order, offsets (sub % 2, sub // 2)
        @_f
        def transverse_axis(node: int, which: int) -> int:
            axis = node // 4
            if which == 0:
                return wp.where(axis == 0, 1, 0)
            return wp.where(axis == 2, 1, 2)

        @_f
        def edge_slope(node: int, which: int) -> S:
            sub = node % 4
            o = wp.where(which == 0, sub % 2, sub // 2)
            return S(2 * o - 1)

        @_f
        def edge_factor(coords: Coords, node: int, which: int) -> S:
            # x on the far side's edges (offset 1), 1 - x on the near side's
            sl = edge_slope(node, which)
            return (S(1.0) - sl) * S(0.5) + sl * coords[transverse_axis(node, which)]

        @_f
        def element_inner_weight(coords: Coords, node: int) -> VecC:
            v = VecC()
            v[node // 4] = edge_factor(coords, node, 0) * edge_factor(coords, node, 1)
            return v

        @_f
        def element_inner_weight_gradient(coords: Coords, node: int) -> MatC:
            g = MatC()
            axis = node // 4
            g[axis, transverse_axis(node, 0)] = edge_slope(node, 0) * edge_factor(coords, node, 1)
            g[axis, transverse_axis(node, 1)] = edge_factor(coords, node, 0) * edge_slope(node, 1)
            return g
    else:
        AM = wp.types.matrix(shape=(N * dim, dim), dtype=S)
        ATAB = AM(*A_flat)
        BTAB = ND(*b_flat)

        @_f
        def element_inner_weight(coords: Coords, node: int) -> VecC:
            x = param_coords(coords)
            v = VecC()
            for i in range(wp.static(DIM)):
                acc = BTAB[node, i]
                for j in range(wp.static(DIM)):
                    acc += ATAB[node * wp.static(DIM) + i, j] * x[j]
                v[i] = acc
            return v

        @_f
        def element_inner_weight_gradient(coords: Coords, node: int) -> MatC:
            g = MatC()
            for i in range(wp.static(DIM)):
                for j in range(wp.static(DIM)):
                    g[i, j] = ATAB[node * wp.static(DIM) + i, j]
            return g

    @_f
    def node_coords_in_element(node: int) -> Coords:
        return Coords(NCOORDS[node, 0], NCOORDS[node, 1], NCOORDS[node, 2])

    @_f
    def node_quadrature_weight(node: int) -> S:
        return WEIGHT

    @_f
    def node_dual_weight(node: int) -> VecC:
        v = VecC()
        for i in range(wp.static(DIM)):
            v[i] = DUALS[node, i]
        return v

    return SimpleNamespace(element_inner_weight=element_inner_weight,
                           element_inner_weight_gradient=element_inner_weight_gradient,
                           node_coords_in_element=node_coords_in_element, node_quadrature_weight=node_quadrature_weight,
                           node_dual_weight=node_dual_weight, key=codegen.digest(*key), VecC=VecC, MatC=MatC)


def _vector_funcs(shape: VectorShape) -> SimpleNamespace:
    def flat(a: Any) -> tuple[float, ...]:
        return tuple(float(v) for v in np.asarray(a).reshape(-1))

    A = () if shape._cube_n1 else flat(shape._A.reshape(-1, shape.dimension))
    b = () if shape._cube_n1 else flat(shape._b)
    return _vector_funcs_cached(shape.element, shape.kind, shape.scalar_type, A, b, flat(shape.node_coords()),
                                flat(shape.duals))


__all__ = ["VectorShape"]
