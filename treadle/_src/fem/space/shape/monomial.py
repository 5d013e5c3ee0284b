"""Shape functions given by a node set and a monomial space: the basis dual to point evaluation at the nodes.

The coefficients come from inverting the Vandermonde matrix of the monomials at the nodes; the kernel functions
are generated as straight-line code (one polynomial per node). Serendipity and non-conforming polynomial bases of
squares and cubes are built this way.
"""

import functools
import itertools
from typing import Any

import numpy as np

from ... import codegen
from ...element import Element
from ...polynomial import Polynomial, quadrature_1d
from ...types import coords_type
from .base import ELEMENT_EDGES, ShapeFunction, reference_vertex_coords


def _monomial(exps: tuple[int, ...], var: list[str]) -> str:
    parts = []
    for e, v in zip(exps, var):
        parts += [v] * e
    return " * ".join(parts) if parts else "S(1.0)"


def _param_index(element: Element) -> list[int]:
    """Which node coordinates are the polynomial variables (the last two barycentric ones on triangles)."""
    if element == Element.TRIANGLE:
        return [1, 2]
    return list(range(3 if element in (Element.CUBE, Element.TETRAHEDRON) else 2))


def _make_funcs(name: str, dim: int, nodes: np.ndarray, monomials: list[tuple[int, ...]], weights: np.ndarray,
                S: Any, var_index: tuple[int, ...] | None = None, node_coords: np.ndarray | None = None) -> Any:
    from types import SimpleNamespace

    import treadle as wp

    n = len(nodes)
    vander = np.array([[np.prod([p[d] ** m[d] for d in range(dim)]) for m in monomials] for p in nodes])
    coef = np.linalg.inv(vander)  # column i: coefficients of node i's function
    var = ["x", "y", "z"][:dim]
    vi = list(range(dim)) if var_index is None else list(var_index)
    head = [f"    {v} = coords[{vi[d]}]" for d, v in enumerate(var)]
    Coords = coords_type(S)
    VecC = wp.types.vector(dim, S)

    def poly(c: np.ndarray, mons: list[tuple[int, ...]]) -> str:
        terms = [f"S({float(ci)!r}) * {_monomial(m, var)}" for ci, m in zip(c, mons) if abs(ci) > 1e-13]
        return " + ".join(terms) if terms else "S(0.0)"

    value_lines = ["def element_inner_weight(coords: Coords, node: int) -> S:"] + head
    grad_lines = ["def element_inner_weight_gradient(coords: Coords, node: int) -> VecC:"] + head
    for i in range(n):
        c = coef[:, i]
        last = i == n - 1
        cond = [] if last else [f"    if node == {i}:"]
        ind = "    " if last else "        "
        value_lines += cond + [f"{ind}return {poly(c, monomials)}"]
        comps = []
        for d in range(dim):
            dc, dm = [], []
            for ci, m in zip(c, monomials):
                if m[d] > 0:
                    dc.append(ci * m[d])
                    dm.append(tuple(m[k] - (1 if k == d else 0) for k in range(dim)))
            comps.append(poly(np.array(dc), dm))
        grad_lines += cond + [f"{ind}return VecC({', '.join(comps)})"]
    ns = {"S": S, "Coords": Coords, "VecC": VecC, "__name__": codegen.GEN_MODULE}
    codegen.exec_source("\n".join(value_lines + [""] + grad_lines) + "\n", f"shape {name} {codegen.type_key(S)}", ns)
    key = ("monomial_shape", name, codegen.type_key(S))
    NodeM = wp.types.matrix(shape=(n, 3), dtype=S)
    full = np.concatenate([nodes, np.zeros((n, 3 - dim))], axis=1) if node_coords is None else node_coords
    NODES = NodeM(*[float(v) for v in np.asarray(full).reshape(-1)])
    VW = wp.types.vector(n, S)
    W = VW(*[float(w) for w in weights])

    def node_coords_in_element(node: int) -> Coords:
        return Coords(NODES[node, 0], NODES[node, 1], NODES[node, 2])

    def node_quadrature_weight(node: int) -> S:
        return W[node]

    return SimpleNamespace(element_inner_weight=codegen.func(ns["element_inner_weight"], *key),
                           element_inner_weight_gradient=codegen.func(ns["element_inner_weight_gradient"], *key),
                           node_coords_in_element=codegen.func(node_coords_in_element, *key),
                           node_quadrature_weight=codegen.func(node_quadrature_weight, *key), key=key)


def _lumped_weights(element: Element, nodes: np.ndarray, monomials: list[tuple[int, ...]], dim: int) -> np.ndarray:
    """Integrals of the basis functions (row sums of the mass matrix), made positive for nodal quadrature."""
    from ...element import element_quadrature

    pts, w = element_quadrature(element, 2 * max(sum(m) for m in monomials))
    pts = pts[:, _param_index(element)]
    vander = np.array([[np.prod([p[d] ** m[d] for d in range(dim)]) for m in monomials] for p in nodes])
    coef = np.linalg.inv(vander)
    vals = np.array([[np.prod([q[d] ** m[d] for d in range(dim)]) for m in monomials] for q in pts]) @ coef
    integ = w @ vals
    if np.any(integ <= 0.0):  # serendipity vertex functions integrate to negative values: share equally
        integ = np.full(len(nodes), 1.0 / len(nodes))
    return integ / integ.sum()


def serendipity_monomials(dim: int, degree: int) -> list[tuple[int, ...]]:
    """Monomials of superlinear degree at most ``degree`` (variables of exponent one do not count)."""
    out = []
    for e in itertools.product(range(degree + 1), repeat=dim):
        superlinear = sum(v for v in e if v >= 2)
        if superlinear <= degree and all(v <= degree for v in e):
            out.append(e)
    return sorted(out, key=lambda m: (sum(m), m))


class SerendipityShape(ShapeFunction):
    """Serendipity polynomials of degree 2 or 3 on squares and cubes: vertex and edge nodes only.

    Edge nodes sit at the ``family``'s 1D points (so traces match those of Lagrange elements of the same degree).
    """

    def __init__(self, element: Element, degree: int, family: Polynomial, scalar_type: Any) -> None:
        super().__init__(scalar_type)
        if element not in (Element.SQUARE, Element.CUBE):
            raise TypeError(f"serendipity shapes are for squares and cubes, not {element.name}")
        if degree not in (1, 2, 3):
            raise NotImplementedError(f"serendipity shapes of degree {degree} (1 to 3 are available)")
        self.element = element
        self.ORDER = int(degree)
        self.family = family
        dim = 2 if element == Element.SQUARE else 3
        verts = reference_vertex_coords(element)[:, :dim]
        x, _ = quadrature_1d(degree + 1, family)
        nodes = [v for v in verts]
        for a, b in ELEMENT_EDGES[element]:
            for t in x[1:-1]:
                nodes.append(verts[a] + t * (verts[b] - verts[a]))
        self._nodes = np.array(nodes)
        self._monomials = serendipity_monomials(dim, degree)
        if len(self._monomials) != len(nodes):  # pragma: no cover - the definitions above match
            raise RuntimeError("serendipity: node and monomial counts differ")
        self.NODES_PER_ELEMENT = len(nodes)
        self._weights = _lumped_weights(element, self._nodes, self._monomials, dim)
        self.funcs = _cached_funcs(self.name, dim, tuple(map(tuple, self._nodes)), tuple(self._monomials),
                                   tuple(self._weights), scalar_type)

    @property
    def name(self) -> str:
        """E.g. ``Square_S2_LGL``."""
        return f"{self.element.name.title()}_S{self.ORDER}_{self.family.value}"

    def trace_monomials(self, side_dim: int) -> list[tuple[int, ...]]:
        """Serendipity monomials of the side."""
        return serendipity_monomials(side_dim, self.ORDER)

    def node_coords(self) -> np.ndarray:
        """Vertices, then edge nodes."""
        out = np.zeros((self.NODES_PER_ELEMENT, 3))
        out[:, :self.dimension] = self._nodes
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        """Positive nodal weights summing to one."""
        return self._weights

    def is_continuous_capable(self) -> bool:
        """Serendipity elements are continuous."""
        return True

    def element_node_triangulation(self) -> np.ndarray:
        """Triangles (or tetrahedra) of the vertices only (a coarse plot)."""
        if self.dimension == 2:
            return np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int32)
        return np.array([[0, 1, 3, 4], [1, 2, 3, 6], [1, 3, 4, 6], [1, 4, 5, 6], [3, 4, 6, 7]], dtype=np.int32)


#: simplices inscribed in the square and the cube, centred on the element's centre (vertex rows)
_INSCRIBED_SIMPLEX = {
    Element.SQUARE: np.array([[0.0, 0.25], [1.0, 0.25], [0.5, 1.0]]),
    Element.CUBE: np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]),
}


class NonconformingPolynomialShape(ShapeFunction):
    """Complete polynomials of total degree ``degree`` on any element, with interior nodes (discontinuous spaces).

    Nodes are the barycentric lattice of the degree pulled towards the centroid, ``(a_i + 1 / (d + 1)) / (degree + 1)``
    for ``a_0 + ... + a_d = degree``, of the element itself (triangles, tetrahedra) or of a simplex inscribed in it
    with its centroid at the element's centre (squares, cubes). Nodal quadrature weights are the lattice's symmetric
    simplex weights.
    """

    def __init__(self, element: Element, degree: int, scalar_type: Any) -> None:
        super().__init__(scalar_type)
        if element not in (Element.SQUARE, Element.CUBE, Element.TRIANGLE, Element.TETRAHEDRON):
            raise TypeError(f"non-conforming polynomial shapes are not available on {element.name}")
        self.element = element
        self.ORDER = int(degree)
        self.family = Polynomial.EQUISPACED_OPEN
        dim = self.dimension
        from .lagrange import _simplex_nodal_weights, simplex_lattice

        lattice = simplex_lattice(dim, degree)
        bary = (np.array(lattice, dtype=np.float64) + 1.0 / (dim + 1)) / (degree + 1)
        self._monomials = [a for a in itertools.product(range(degree + 1), repeat=dim) if sum(a) <= degree]
        if element in (Element.SQUARE, Element.CUBE):
            self._nodes = bary @ _INSCRIBED_SIMPLEX[element]
            full = np.concatenate([self._nodes, np.zeros((len(lattice), 3 - dim))], axis=1)
        else:
            full = bary if dim == 2 else bary[:, 1:]
            self._nodes = bary[:, 1:]
        self._full = full
        self.NODES_PER_ELEMENT = len(lattice)
        # the lattice's symmetric simplex weights: they sum to one and average the nodes to the element's centre
        self._weights = _simplex_nodal_weights(dim, int(degree))
        self.funcs = _cached_funcs(self.name, dim, tuple(map(tuple, self._nodes)), tuple(self._monomials),
                                   tuple(self._weights), scalar_type, tuple(_param_index(element)),
                                   tuple(map(tuple, full)))

    @property
    def name(self) -> str:
        """E.g. ``Square_dP2``."""
        return f"{self.element.name.title()}_dP{self.ORDER}"

    def node_coords(self) -> np.ndarray:
        """The interior lattice."""
        return np.array(self._full, dtype=np.float64)

    def node_quadrature_weights(self) -> np.ndarray:
        """Integrals of the basis functions (positive)."""
        return self._weights

    def is_continuous_capable(self) -> bool:
        """No: the nodes are interior."""
        return False

    def element_node_triangulation(self) -> np.ndarray:
        """Not available for interior node sets."""
        raise NotImplementedError("non-conforming polynomial spaces have no node triangulation")


@functools.cache
def _cached_funcs(name: str, dim: int, nodes: tuple, monomials: tuple, weights: tuple, S: Any,
                  var_index: tuple | None = None, node_coords: tuple | None = None) -> Any:
    return _make_funcs(name, dim, np.array(nodes), list(monomials), np.array(weights), S, var_index,
                       None if node_coords is None else np.array(node_coords))
