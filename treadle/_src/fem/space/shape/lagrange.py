"""Lagrange shape functions: tensor products on squares and cubes, barycentric lattices on triangles and tetrahedra."""

import functools
import itertools
import math
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from ... import codegen
from ...element import Element
from ...polynomial import Polynomial, is_closed, lagrange_scales, quadrature_1d
from ...types import coords_type
from .base import ShapeFunction


def _points_1d(degree: int, family: Polynomial) -> tuple[np.ndarray, np.ndarray]:
    """Interpolation nodes and nodal quadrature weights of a 1D Lagrange basis of ``degree``."""
    if degree == 0:
        return np.array([0.5]), np.array([1.0])
    return quadrature_1d(degree + 1, family)


@functools.cache
def _tensor_funcs(dim: int, degree: int, family: Polynomial, S: Any) -> SimpleNamespace:
    pts, wts = _points_1d(degree, family)
    scales = lagrange_scales(pts) if degree > 0 else np.array([1.0])
    K1 = degree + 1
    VK = wp.types.vector(K1, S)
    P = VK(*[float(p) for p in pts])
    W = VK(*[float(w) for w in wts])
    SC = VK(*[float(s) for s in scales])
    Coords = coords_type(S)
    VecC = wp.types.vector(dim, S)
    key = ("lagrange_tensor", dim, degree, family.value, codegen.type_key(S))

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def basis_1d(x: S, i: int) -> S:
        v = S(1.0)
        for m in range(wp.static(K1)):
            if m != i:
                v = v * (x - P[m])
        return v * SC[i]

    @_f
    def basis_1d_deriv(x: S, i: int) -> S:
        d = S(0.0)
        for m in range(wp.static(K1)):
            if m != i:
                p = S(1.0)
                for r in range(wp.static(K1)):
                    if r != i and r != m:
                        p = p * (x - P[r])
                d = d + p
        return d * SC[i]

    if dim == 2:
        @_f
        def element_inner_weight(coords: Coords, node: int) -> S:
            i = node // K1
            j = node - i * K1
            return basis_1d(coords[0], i) * basis_1d(coords[1], j)

        @_f
        def element_inner_weight_gradient(coords: Coords, node: int) -> VecC:
            i = node // K1
            j = node - i * K1
            bx = basis_1d(coords[0], i)
            by = basis_1d(coords[1], j)
            return VecC(basis_1d_deriv(coords[0], i) * by, bx * basis_1d_deriv(coords[1], j))

        @_f
        def node_coords_in_element(node: int) -> Coords:
            i = node // K1
            j = node - i * K1
            return Coords(P[i], P[j], S(0.0))

        @_f
        def node_quadrature_weight(node: int) -> S:
            i = node // K1
            j = node - i * K1
            return W[i] * W[j]
    else:
        @_f
        def element_inner_weight(coords: Coords, node: int) -> S:
            ij = node // K1
            k = node - ij * K1
            i = ij // K1
            j = ij - i * K1
            return basis_1d(coords[0], i) * basis_1d(coords[1], j) * basis_1d(coords[2], k)

        @_f
        def element_inner_weight_gradient(coords: Coords, node: int) -> VecC:
            ij = node // K1
            k = node - ij * K1
            i = ij // K1
            j = ij - i * K1
            bx = basis_1d(coords[0], i)
            by = basis_1d(coords[1], j)
            bz = basis_1d(coords[2], k)
            return VecC(basis_1d_deriv(coords[0], i) * by * bz, bx * basis_1d_deriv(coords[1], j) * bz,
                        bx * by * basis_1d_deriv(coords[2], k))

        @_f
        def node_coords_in_element(node: int) -> Coords:
            ij = node // K1
            k = node - ij * K1
            i = ij // K1
            j = ij - i * K1
            return Coords(P[i], P[j], P[k])

        @_f
        def node_quadrature_weight(node: int) -> S:
            ij = node // K1
            k = node - ij * K1
            i = ij // K1
            j = ij - i * K1
            return W[i] * W[j] * W[k]

    del _f
    return SimpleNamespace(**locals())


class TensorLagrangeShape(ShapeFunction):
    """Lagrange polynomials of degree ``degree`` in each coordinate on squares or cubes.

    Node ``(i, j[, k])`` of the ``(degree + 1)^dim`` lattice of ``family`` points has index
    ``(i * (degree + 1) + j) [* (degree + 1) + k]``.
    """

    def __init__(self, element: Element, degree: int, family: Polynomial, scalar_type: Any) -> None:
        super().__init__(scalar_type)
        if element not in (Element.SQUARE, Element.CUBE):
            raise TypeError(f"tensor-product Lagrange shapes are for squares and cubes, not {element.name}")
        self.element = element
        self.ORDER = int(degree)
        self.family = family
        dim = 2 if element == Element.SQUARE else 3
        self.NODES_PER_ELEMENT = (degree + 1) ** dim
        self.funcs = _tensor_funcs(dim, int(degree), family, scalar_type)

    @property
    def name(self) -> str:
        """E.g. ``Square_P2_LGL``."""
        return f"{self.element.name.title()}_P{self.ORDER}_{self.family.value}"

    def trace_monomials(self, side_dim: int) -> list[tuple[int, ...]]:
        """Tensor-product monomials: degree at most ``ORDER`` in each side coordinate."""
        return list(itertools.product(range(self.ORDER + 1), repeat=side_dim))

    def node_coords(self) -> np.ndarray:
        """The lattice points."""
        pts, _ = _points_1d(self.ORDER, self.family)
        dim = self.dimension
        out = np.zeros((self.NODES_PER_ELEMENT, 3))
        for n, idx in enumerate(itertools.product(range(self.ORDER + 1), repeat=dim)):
            for d in range(dim):
                out[n, d] = pts[idx[d]]
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        """Tensor products of the 1D nodal weights."""
        _, w = _points_1d(self.ORDER, self.family)
        return np.array([np.prod([w[i] for i in idx])
                         for idx in itertools.product(range(self.ORDER + 1), repeat=self.dimension)])

    def is_continuous_capable(self) -> bool:
        """Whether nodes sit on the element boundary (needed for a continuous space)."""
        return self.ORDER == 0 or is_closed(self.family)

    def element_node_triangulation(self) -> np.ndarray:
        """Two triangles per lattice square (2D) or five... six tetrahedra per lattice cube (3D)."""
        k1 = self.ORDER + 1
        if self.dimension == 2:
            tris = []
            for i in range(self.ORDER):
                for j in range(self.ORDER):
                    a, b, c, d = i * k1 + j, (i + 1) * k1 + j, (i + 1) * k1 + j + 1, i * k1 + j + 1
                    tris += [(a, b, c), (a, c, d)]
            return np.array(tris, dtype=np.int32).reshape(-1, 3)
        tets = []
        for i in range(self.ORDER):
            for j in range(self.ORDER):
                for k in range(self.ORDER):
                    v = [((i + a) * k1 + (j + b)) * k1 + (k + c) for a, b, c in
                         [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]]
                    for t in ((0, 1, 3, 4), (1, 2, 3, 6), (1, 3, 4, 6), (1, 4, 5, 6), (3, 4, 6, 7)):
                        tets.append(tuple(v[x] for x in t))
        return np.array(tets, dtype=np.int32).reshape(-1, 4)


def simplex_lattice(dim: int, degree: int) -> list[tuple[int, ...]]:
    """Multi-indices ``(a0, ..., a_dim)`` summing to ``degree``: the nodes of a simplex Lagrange basis, in order.

    Vertices first (in vertex order), then the remaining lattice points in lexicographic order.
    """
    pts = [a for a in itertools.product(range(degree + 1), repeat=dim + 1) if sum(a) == degree]
    verts = [tuple(degree if m == v else 0 for m in range(dim + 1)) for v in range(dim + 1)]
    rest = sorted((p for p in pts if p not in verts), reverse=True)
    return verts + rest if degree > 0 else [tuple([0] * (dim + 1))]


@functools.cache
def _simplex_funcs(dim: int, degree: int, S: Any) -> SimpleNamespace:
    lattice = simplex_lattice(dim, degree)
    N = len(lattice)
    NB = dim + 1
    IM = wp.types.matrix(shape=(N, NB), dtype=wp.int32)
    ALPHA = IM(*[int(a) for p in lattice for a in p])
    quad = _simplex_nodal_weights(dim, degree)
    VN = wp.types.vector(N, S)
    QW = VN(*[float(w) for w in quad])
    Coords = coords_type(S)
    VecC = wp.types.vector(dim, S)
    K = degree
    key = ("lagrange_simplex", dim, degree, codegen.type_key(S))

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    if dim == 2:
        bary_lines = ["    l0 = coords[0]", "    l1 = coords[1]", "    l2 = coords[2]"]
    else:
        bary_lines = ["    l0 = S(1.0) - coords[0] - coords[1] - coords[2]", "    l1 = coords[0]", "    l2 = coords[1]",
                      "    l3 = coords[2]"]

    # straight-line code per node: the weight is a product of linear factors of the barycentric coordinates
    def factors(alpha: tuple[int, ...]) -> list[tuple[int, int]]:
        return [(m, j) for m in range(NB) for j in range(alpha[m])]

    def term(m: int, j: int) -> str:
        return f"(S({float(K)}) * l{m} - S({float(j)})) * S({1.0 / (j + 1)!r})"

    def product(fs: list[tuple[int, int]]) -> str:
        return " * ".join(term(m, j) for m, j in fs) if fs else "S(1.0)"

    lines = ["def element_inner_weight(coords: Coords, node: int) -> S:"]
    lines += bary_lines
    grad_lines = ["def element_inner_weight_gradient(coords: Coords, node: int) -> VecC:"] + bary_lines
    for n, alpha in enumerate(lattice):
        fs = factors(alpha)
        last = n == N - 1
        cond = [] if last else [f"    if node == {n}:"]
        ind = "    " if last else "        "
        lines += cond + [f"{ind}return {product(fs)}"]
        dl = []
        for m in range(NB):
            terms = []
            for idx, (mm, j) in enumerate(fs):
                if mm != m:
                    continue
                rest = fs[:idx] + fs[idx + 1:]
                terms.append(f"S({float(K) / (j + 1)!r}) * {product(rest)}")
            dl.append(" + ".join(terms) if terms else "S(0.0)")
        comps = ", ".join(f"({dl[d + 1]}) - ({dl[0]})" for d in range(dim))
        grad_lines += cond + [f"{ind}return VecC({comps})"]
    ns = {"S": S, "Coords": Coords, "VecC": VecC, "__name__": codegen.GEN_MODULE}
    codegen.exec_source("\n".join(lines + [""] + grad_lines) + "\n", f"simplex shape {dim} {degree} "
                        f"{codegen.type_key(S)}", ns)
    element_inner_weight = _f(ns["element_inner_weight"])
    element_inner_weight_gradient = _f(ns["element_inner_weight_gradient"])

    @_f
    def node_coords_in_element(node: int) -> Coords:
        if wp.static(dim == 2):
            return Coords(S(ALPHA[node, 0]) / S(K), S(ALPHA[node, 1]) / S(K), S(ALPHA[node, 2]) / S(K))
        else:
            return Coords(S(ALPHA[node, 1]) / S(K), S(ALPHA[node, 2]) / S(K), S(ALPHA[node, 3]) / S(K))

    @_f
    def node_quadrature_weight(node: int) -> S:
        return QW[node]

    del _f
    return SimpleNamespace(**locals())


@functools.cache
def _simplex_nodal_weights(dim: int, degree: int) -> np.ndarray:
    """Positive weights on the Lagrange lattice for nodal quadrature (summing to one).

    One weight per symmetry class of nodes, fitted by non-negative least squares to integrate the barycentric
    monomials of degree up to ``degree + 1`` (exactly where positivity allows: degree 1 for any lattice).
    """
    from scipy.optimize import nnls

    lattice = simplex_lattice(dim, degree)
    n = len(lattice)
    if degree <= 1:
        return np.full(n, 1.0 / n)
    classes = sorted({tuple(sorted(a)) for a in lattice})
    cls_of = [classes.index(tuple(sorted(a))) for a in lattice]
    bary = np.array(lattice, dtype=np.float64) / degree
    rows, rhs = [], []
    for total in range(degree + 2):
        for alpha in itertools.product(range(total + 1), repeat=dim + 1):
            if sum(alpha) != total:
                continue
            exact = math.factorial(dim) * np.prod([math.factorial(a) for a in alpha]) / math.factorial(dim + total)
            vals = np.prod(bary ** np.array(alpha), axis=1)
            row = np.zeros(len(classes))
            for node, c in enumerate(cls_of):
                row[c] += vals[node]
            scale = 100.0 if total == 0 else 1.0
            rows.append(row * scale)
            rhs.append(exact * scale)
    w_cls, _ = nnls(np.array(rows), np.array(rhs))
    w = np.array([w_cls[c] for c in cls_of])
    if np.any(w <= 0.0):  # keep every node in nodal integrals: lift zero classes a little, then renormalise
        w = np.maximum(w, 0.05 / n)
    return w / w.sum()


class SimplexLagrangeShape(ShapeFunction):
    """Lagrange polynomials of total degree ``degree`` on triangles or tetrahedra (equispaced barycentric nodes).

    Nodes follow :func:`simplex_lattice`: the vertices, then the other lattice points.
    """

    def __init__(self, element: Element, degree: int, scalar_type: Any) -> None:
        super().__init__(scalar_type)
        if element not in (Element.TRIANGLE, Element.TETRAHEDRON):
            raise TypeError(f"simplex Lagrange shapes are for triangles and tetrahedra, not {element.name}")
        self.element = element
        self.ORDER = int(degree)
        self.family = Polynomial.EQUISPACED_CLOSED
        dim = 2 if element == Element.TRIANGLE else 3
        self.NODES_PER_ELEMENT = len(simplex_lattice(dim, degree))
        self.funcs = _simplex_funcs(dim, int(degree), scalar_type)

    @property
    def name(self) -> str:
        """E.g. ``Triangle_P2``."""
        return f"{self.element.name.title()}_P{self.ORDER}"

    def node_coords(self) -> np.ndarray:
        """Lattice points in reference coordinates."""
        dim = self.dimension
        k = max(self.ORDER, 1)
        out = np.zeros((self.NODES_PER_ELEMENT, 3))
        for n, a in enumerate(simplex_lattice(dim, self.ORDER)):
            if self.ORDER == 0:
                out[n] = [1 / 3, 1 / 3, 1 / 3] if dim == 2 else [0.25, 0.25, 0.25]
            elif dim == 2:
                out[n] = [a[0] / k, a[1] / k, a[2] / k]
            else:
                out[n] = [a[1] / k, a[2] / k, a[3] / k]
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        """Integrals of the basis functions."""
        return _simplex_nodal_weights(self.dimension, self.ORDER)

    def is_continuous_capable(self) -> bool:
        """Always (equispaced lattices include the boundary)."""
        return True

    def element_node_triangulation(self) -> np.ndarray:
        """The lattice's sub-triangles (2D) or sub-tetrahedra (3D, corner ones only when degree > 1)."""
        dim = self.dimension
        lattice = simplex_lattice(dim, self.ORDER)
        index = {a: n for n, a in enumerate(lattice)}
        k = self.ORDER
        out = []
        if dim == 2:
            for i in range(k):
                for j in range(k - i):
                    a, b, c = (k - i - j, i, j), (k - i - j - 1, i + 1, j), (k - i - j - 1, i, j + 1)
                    out.append((index[a], index[b], index[c]))
                    if j < k - i - 1:
                        d = (k - i - j - 2, i + 1, j + 1)
                        out.append((index[b], index[d], index[c]))
            return np.array(out, dtype=np.int32).reshape(-1, 3)
        for i in range(k):
            for j in range(k - i):
                for m in range(k - i - j):
                    base = (k - i - j - m, i, j, m)
                    corners = [base, (base[0] - 1, i + 1, j, m), (base[0] - 1, i, j + 1, m), (base[0] - 1, i, j, m + 1)]
                    out.append(tuple(index[c] for c in corners))
        return np.array(out, dtype=np.int32).reshape(-1, 4)
