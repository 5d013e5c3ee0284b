"""Nodal quadrature: evaluating at a space's nodes with nodal weights (``assembly="nodal"``, ``NodalQuadrature``).

On cells, a node's point is its reference coordinates and its weight the shape function's nodal weight. On sides,
the points are the cell nodes that lie on the side (others give ``OUTSIDE`` coordinates and are skipped) and the
weights those of the same-degree nodal rule on the side's reference shape.
"""

import functools
import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .element import Element
from .field.nodal_funcs import basis_domain_funcs
from .polynomial import Polynomial, quadrature_1d
from .types import ElementKind, coords_type

_CACHE: dict[tuple[Any, ...], SimpleNamespace] = {}


def nodal_funcs(test: Any, domain: Any) -> SimpleNamespace:
    """``node_coords(fa, element, k)`` and ``node_weight(fa, element, k)`` of a test field's nodes on ``domain``."""
    key = (id(test._cell), domain.element_kind, id(domain.geometry._funcs))
    f = _CACHE.get(key)
    if f is None:
        f = _CACHE[key] = _make(test, domain)
    return f


def _make(test: Any, domain: Any) -> SimpleNamespace:
    dom = basis_domain_funcs(test._cell, domain, "test_dof", test.space)
    FieldArg = dom.FieldArg
    shape = test.space.basis.shape
    sf = shape.funcs
    node_coords_fn = sf.node_coords_in_element
    node_weight_fn = sf.node_quadrature_weight
    geo = domain.geometry._funcs
    S = domain.geometry.scalar_type
    Coords = coords_type(S)
    key = ("nodal", FieldArg.key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)
    if domain.element_kind == ElementKind.CELL:
        def node_coords(fa: FieldArg, element: int, k: int) -> Coords:
            return Coords(node_coords_fn(k))

        def node_weight(fa: FieldArg, element: int, k: int) -> S:
            return S(node_weight_fn(k))
    else:
        to_cell_arg = geo.side_to_cell_arg
        inner_index = geo.side_inner_cell_index
        outer_index = geo.side_outer_cell_index
        from_cell = geo.side_from_cell_coords
        count = test._cell.cell_node_count
        trace_weight = trace_weight_func(shape, domain.geometry.reference_side(), S)

        @_f
        def node_coords(fa: FieldArg, element: int, k: int) -> Coords:
            ca = to_cell_arg(fa.elt_arg)
            ci = inner_index(fa.elt_arg, element)
            n_in = count(ca, fa.eval_arg, ci)
            if k < n_in:
                return from_cell(fa.elt_arg, element, ci, Coords(node_coords_fn(k)))
            return from_cell(fa.elt_arg, element, outer_index(fa.elt_arg, element), Coords(node_coords_fn(k - n_in)))

        def node_weight(fa: FieldArg, element: int, k: int) -> S:
            c = node_coords(fa, element, k)
            return trace_weight(c)
    if not isinstance(node_coords, wp.Function):
        node_coords = _f(node_coords)
    return SimpleNamespace(node_coords=node_coords, node_weight=_f(node_weight))


@functools.cache
def _side_rule(side: Element, degree: int, family: Polynomial) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (side reference coordinates) and nodal weights of the degree-``degree`` rule on a side shape."""
    if side == Element.TRIANGLE:
        from .space.shape.lagrange import _simplex_nodal_weights, simplex_lattice

        lattice = simplex_lattice(2, degree)
        pts = np.array([[a[0] / degree, a[1] / degree, a[2] / degree] for a in lattice]) if degree else \
            np.array([[1 / 3, 1 / 3, 1 / 3]])
        return pts, _simplex_nodal_weights(2, degree)
    n = degree + 1
    x, w = quadrature_1d(n, family) if degree else (np.array([0.5]), np.array([1.0]))
    dim = 1 if side == Element.LINE_SEGMENT else 2
    pts, wts = [], []
    for idx in itertools.product(range(n), repeat=dim):
        p = [0.0, 0.0, 0.0]
        for d in range(dim):
            p[d] = x[idx[d]]
        pts.append(p)
        wts.append(float(np.prod([w[i] for i in idx])))
    return np.array(pts), np.array(wts)


_TRACE: dict[tuple[Any, ...], Any] = {}


def trace_weight_func(shape: Any, side: Element, S: Any) -> Any:
    """Kernel function ``(side coords) -> weight`` of the nodal rule on ``side`` matching ``shape``'s nodes."""
    constant = getattr(shape, "trace_node_weight", None)
    if constant is not None:  # vector-valued bases: the side's nodes share it equally
        key_c = ("constant", float(constant), S)
        f = _TRACE.get(key_c)
        if f is None:
            Coords = coords_type(S)
            WC = S(constant)

            def trace_weight_constant(c: Coords) -> S:
                return WC

            f = _TRACE[key_c] = codegen.func(trace_weight_constant, "trace_c", float(constant), codegen.type_key(S))
        return f
    family = getattr(shape, "family", Polynomial.LOBATTO_GAUSS_LEGENDRE)
    if shape.element in (Element.TRIANGLE, Element.TETRAHEDRON):
        family = Polynomial.EQUISPACED_CLOSED
    key = (side, shape.ORDER, family, S)
    f = _TRACE.get(key)
    if f is not None:
        return f
    pts, wts = _side_rule(side, shape.ORDER, family)
    n = len(wts)
    Coords = coords_type(S)
    PM = wp.types.matrix(shape=(n, 3), dtype=S)
    P = PM(*[float(v) for v in pts.reshape(-1)])
    VW = wp.types.vector(n, S)
    W = VW(*[float(v) for v in wts])
    N = n

    def trace_weight(c: Coords) -> S:
        best = S(1.0e30)
        wbest = S(0.0)
        for m in range(N):
            d = wp.abs(c[0] - P[m, 0]) + wp.abs(c[1] - P[m, 1]) + wp.abs(c[2] - P[m, 2])
            if d < best:
                best = d
                wbest = W[m]
        return wbest

    f = _TRACE[key] = codegen.func(trace_weight, "trace", side.value, shape.ORDER, family.value, codegen.type_key(S))
    return f
