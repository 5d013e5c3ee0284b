"""Nodal quadrature on the sides of an element: each side node's weight, from moment fitting on the side.

The nodes lying on a side carry the restriction of the basis to that side; their weights are the ones that integrate
the restricted polynomial space (the shape's :meth:`~.base.ShapeFunction.trace_monomials`) exactly, normalised to
the side's measure, found by least squares when the system is not square. A node shared by several sides takes its
weight from the first of them (the reference sides of one element are congruent, so the weights agree).
"""

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import treadle as wp

from ... import codegen
from ...element import ELEMENT_DIMENSION, Element

_TOL = 1e-9
#: a side: (on-side test, side-local coordinates, whether the side is a simplex)
Side = tuple[Callable[[np.ndarray], bool], Callable[[np.ndarray], np.ndarray], bool]


def element_sides(element: Element) -> list[Side]:
    """The sides of a reference element in its node coordinates (barycentric triples on triangles)."""
    dim = ELEMENT_DIMENSION[element]
    sides: list[Side] = []
    if element in (Element.SQUARE, Element.CUBE, Element.LINE_SEGMENT):
        for d in range(dim):
            rest = [e for e in range(dim) if e != d]
            for v in (0.0, 1.0):
                sides.append((lambda c, d=d, v=v: abs(c[d] - v) < _TOL, lambda c, r=rest: c[r], False))
    elif element == Element.TRIANGLE:
        for d in range(3):
            sides.append((lambda c, d=d: abs(c[d]) < _TOL, lambda c, d=d: c[[(d + 1) % 3]], False))
    else:
        for d, rest in ((0, [1, 2]), (1, [0, 2]), (2, [0, 1])):
            sides.append((lambda c, d=d: abs(c[d]) < _TOL, lambda c, r=rest: c[r], True))
        sides.append((lambda c: abs(c[0] + c[1] + c[2] - 1.0) < _TOL, lambda c: c[[1, 2]], True))
    return sides


def _moment(alpha: tuple[int, ...], simplex: bool) -> float:
    """Mean of the monomial ``x^alpha`` over the unit side (cube or simplex)."""
    if not simplex:
        return float(np.prod([1.0 / (a + 1) for a in alpha]))
    k = len(alpha)
    return math.factorial(k) * float(np.prod([math.factorial(a) for a in alpha])) / math.factorial(k + sum(alpha))


def trace_node_weights(shape: Any) -> np.ndarray:
    """Side quadrature weight of each node of ``shape`` (see the module documentation)."""
    coords = np.asarray(shape.node_coords(), dtype=np.float64)
    out = np.zeros(len(coords))
    done = np.zeros(len(coords), dtype=bool)
    for on_side, local, simplex in element_sides(shape.element):
        nodes = [n for n in range(len(coords)) if on_side(coords[n])]
        if not nodes:
            continue
        pts = np.array([local(coords[n]) for n in nodes])
        side_dim = pts.shape[1]
        mons = shape.trace_monomials(side_dim)
        vander = np.array([[np.prod(p ** np.array(m)) for m in mons] for p in pts])
        rhs = np.array([_moment(m, simplex) for m in mons])
        w, *_ = np.linalg.lstsq(vander.T, rhs, rcond=None)
        for n, wn in zip(nodes, w):
            if not done[n]:
                out[n] = wn
                done[n] = True
    return out


@functools.cache
def _trace_func(name: str, weights: tuple[float, ...], S: Any) -> Any:
    VN = wp.types.vector(len(weights), S)
    W = VN(*weights)

    def trace_node_quadrature_weight(node: int) -> S:
        return W[node]

    return codegen.func(trace_node_quadrature_weight, "trace_weight", name, codegen.type_key(S))


def trace_weight_func(shape: Any) -> Any:
    """The kernel function ``(node) -> side quadrature weight`` of ``shape``."""
    w = tuple(float(v) for v in trace_node_weights(shape))
    return _trace_func(shape.name, w, shape.scalar_type)
