"""Uniform B-spline shape functions of squares and cubes (degrees 1 to 3).

A cell ``[0, 1]^d`` of a regular grid sees the tensor products of the cardinal B-splines centred on the grid points
whose support covers it: points ``0, 1`` for degree 1 (the bilinear hat functions), points ``-1, 0, 1, 2`` for degrees
2 and 3. Node ``n`` is the grid point ``(i, j[, k])`` with ``n = (i * m + j) [* m + k]`` (``m`` points per axis);
its reference coordinates are the point's offset from the cell's origin. The functions sum to one everywhere, but
only the degree-1 ones interpolate (are one at their own node). The nodal quadrature weight is uniform.

Degree-1 functions are the cell's bilinear (trilinear) polynomials (``1 - x`` or ``x`` per axis): the hat functions
on the cell, extended linearly (and smoothly) outside it.
"""

import functools
import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from ... import codegen
from ...element import Element
from ...types import coords_type
from .base import ShapeFunction


def bspline_1d(t: np.ndarray, degree: int) -> np.ndarray:
    """The cardinal B-spline of ``degree`` (1 to 3) centred on zero, evaluated at ``t`` (NumPy reference)."""
    a = np.abs(np.asarray(t, dtype=np.float64))
    if degree == 1:
        return np.where(a < 1.0, 1.0 - a, 0.0)
    if degree == 2:
        return np.where(a < 0.5, 0.75 - a * a, np.where(a < 1.5, 0.5 * (1.5 - a) ** 2, 0.0))
    return np.where(a < 1.0, 2.0 / 3.0 - a * a + 0.5 * a ** 3, np.where(a < 2.0, (2.0 - a) ** 3 / 6.0, 0.0))


def bspline_points(degree: int) -> list[int]:
    """Grid offsets of the B-splines of ``degree`` whose support covers the cell ``[0, 1]``."""
    return [0, 1] if degree == 1 else [-1, 0, 1, 2]


@functools.cache
def _bspline_funcs(dim: int, degree: int, S: Any) -> SimpleNamespace:
    pts = bspline_points(degree)
    M = len(pts)
    N = M ** dim
    OFF = S(float(pts[0]))
    Coords = coords_type(S)
    VecC = wp.types.vector(dim, S)
    W = S(1.0 / N)
    key = ("bspline", dim, degree, codegen.type_key(S))

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def b1(t: S, o: S) -> S:
        a = wp.abs(t)
        if wp.static(degree == 1):
            # the cell's linear piece: the node at the origin side (o = 0) or the far side (o = 1)
            if o < S(0.5):
                return S(1.0) - t
            return S(1.0) + t
        elif wp.static(degree == 2):
            if a < S(0.5):
                return S(0.75) - a * a
            if a < S(1.5):
                return S(0.5) * (S(1.5) - a) * (S(1.5) - a)
            return S(0.0)
        else:
            if a < S(1.0):
                return S(2.0 / 3.0) - a * a + S(0.5) * a * a * a
            if a < S(2.0):
                return (S(2.0) - a) * (S(2.0) - a) * (S(2.0) - a) / S(6.0)
            return S(0.0)

    @_f
    def db1(t: S, o: S) -> S:
        a = wp.abs(t)
        s = wp.sign(t)
        if wp.static(degree == 1):
            if o < S(0.5):
                return S(-1.0)
            return S(1.0)
        elif wp.static(degree == 2):
            if a < S(0.5):
                return S(-2.0) * t
            if a < S(1.5):
                return -s * (S(1.5) - a)
            return S(0.0)
        else:
            if a < S(1.0):
                return S(-2.0) * t + S(1.5) * s * a * a
            if a < S(2.0):
                return -s * S(0.5) * (S(2.0) - a) * (S(2.0) - a)
            return S(0.0)

    @_f
    def node_offset(node: int, axis: int) -> S:
        m = node
        for _ in range(wp.static(dim - 1) - axis):
            m = m // wp.static(M)
        return S(m % wp.static(M)) + OFF

    @_f
    def element_inner_weight(coords: Coords, node: int) -> S:
        w = S(1.0)
        for d in range(wp.static(dim)):
            o = node_offset(node, d)
            w = w * b1(coords[d] - o, o)
        return w

    @_f
    def element_inner_weight_gradient(coords: Coords, node: int) -> VecC:
        g = VecC()
        for d in range(wp.static(dim)):
            p = S(1.0)
            for e in range(wp.static(dim)):
                o = node_offset(node, e)
                if e == d:
                    p = p * db1(coords[e] - o, o)
                else:
                    p = p * b1(coords[e] - o, o)
            g[d] = p
        return g

    @_f
    def node_coords_in_element(node: int) -> Coords:
        c = Coords()
        for d in range(wp.static(dim)):
            c[d] = node_offset(node, d)
        return c

    @_f
    def node_quadrature_weight(node: int) -> S:
        return W

    del _f
    return SimpleNamespace(**locals())


class BSplineShape(ShapeFunction):
    """Uniform B-splines of degree 1, 2 or 3 on squares and cubes (see the module documentation)."""

    def __init__(self, element: Element, degree: int, scalar_type: Any) -> None:
        super().__init__(scalar_type)
        if element not in (Element.SQUARE, Element.CUBE):
            raise TypeError(f"B-spline shapes are for squares and cubes, not {element.name}")
        if degree not in (1, 2, 3):
            raise NotImplementedError(f"B-spline shapes of degree {degree} (1 to 3 are available)")
        self.element = element
        self.ORDER = int(degree)
        self.NODES_PER_ELEMENT = len(bspline_points(degree)) ** self.dimension
        self.funcs = _bspline_funcs(self.dimension, self.ORDER, scalar_type)

    @property
    def name(self) -> str:
        """E.g. ``SquareBSpline2``."""
        return f"{self.element.name.title()}BSpline{self.ORDER}"

    def node_coords(self) -> np.ndarray:
        """Offsets of the grid points carrying the nodes, from the cell's origin."""
        out = np.zeros((self.NODES_PER_ELEMENT, 3))
        pts = bspline_points(self.ORDER)
        for n, idx in enumerate(itertools.product(pts, repeat=self.dimension)):
            out[n, :self.dimension] = idx
        return out

    def node_quadrature_weights(self) -> np.ndarray:
        """Uniform weights."""
        return np.full(self.NODES_PER_ELEMENT, 1.0 / self.NODES_PER_ELEMENT)

    def is_nodal(self) -> bool:
        """Only degree-1 B-splines interpolate their nodes."""
        return self.ORDER == 1

    def is_continuous_capable(self) -> bool:
        """B-spline nodes are shared between neighbouring cells of a grid."""
        return True
