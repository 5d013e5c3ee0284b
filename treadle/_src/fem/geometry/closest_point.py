"""Closest points of simplices with a vertex at the origin, as kernel functions.

``project_on_seg_at_origin(q, e)``, ``project_on_tri_at_origin(q, e0, e1)`` and ``project_on_tet_at_origin(q, e0,
e1, e2)`` take a query point ``q`` relative to the simplex's first vertex and the simplex's edge vectors from that
vertex; each returns ``(squared distance, coordinates)`` of the closest point of the (closed) simplex. Triangle
coordinates are barycentric ``(1 - u - v, u, v)``; segment and tetrahedron coordinates are the edge parameters
``(t, 0, 0)`` and ``(u, v, w)``. Vectors may be 2D or 3D and of any float type.
"""

from typing import Any

import treadle as wp

from ..types import Coords


@wp.func
def project_on_seg_at_origin(q: Any, e: Any):
    """Closest point of the segment ``[0, e]`` to ``q``: ``(squared distance, t)``."""
    ee = wp.dot(e, e)
    t = type(ee)(0.0)
    if ee > type(ee)(0.0):
        t = wp.clamp(wp.dot(q, e) / ee, type(ee)(0.0), type(ee)(1.0))
    d = q - t * e
    return wp.dot(d, d), t


@wp.func
def project_on_tri_at_origin(q: Any, e0: Any, e1: Any):
    """Closest point of the triangle ``(0, e0, e1)`` to ``q``: ``(squared distance, barycentric coordinates)``."""
    a = wp.dot(e0, e0)
    b = wp.dot(e0, e1)
    c = wp.dot(e1, e1)
    p0 = wp.dot(q, e0)
    p1 = wp.dot(q, e1)
    zero = type(a)(0.0)
    one = type(a)(1.0)
    det = a * c - b * b
    if det > zero:
        # the projection on the triangle's plane, kept when it lies inside
        u = (c * p0 - b * p1) / det
        v = (a * p1 - b * p0) / det
        if u >= zero and v >= zero and u + v <= one:
            d = q - u * e0 - v * e1
            return wp.dot(d, d), Coords(float(one - u - v), float(u), float(v))
    # otherwise the closest point lies on an edge
    r0 = project_on_seg_at_origin(q, e0)
    r1 = project_on_seg_at_origin(q, e1)
    r2 = project_on_seg_at_origin(q - e0, e1 - e0)
    best = r0[0]
    coords = Coords(float(one - r0[1]), float(r0[1]), 0.0)
    if r1[0] < best:
        best = r1[0]
        coords = Coords(float(one - r1[1]), 0.0, float(r1[1]))
    if r2[0] < best:
        best = r2[0]
        coords = Coords(0.0, float(one - r2[1]), float(r2[1]))
    return best, coords


@wp.func
def project_on_tet_at_origin(q: Any, e0: Any, e1: Any, e2: Any):
    """Closest point of the tetrahedron ``(0, e0, e1, e2)`` to ``q``: ``(squared distance, (u, v, w))``."""
    m = wp.transpose(wp.matrix_from_rows(e0, e1, e2))
    det = wp.determinant(m)
    zero = type(det)(0.0)
    one = type(det)(1.0)
    if det != zero:
        uvw = wp.inverse(m) * q
        if uvw[0] >= zero and uvw[1] >= zero and uvw[2] >= zero and uvw[0] + uvw[1] + uvw[2] <= one:
            return zero, Coords(float(uvw[0]), float(uvw[1]), float(uvw[2]))
    # otherwise the closest point lies on a face; face barycentric coordinates map back to (u, v, w)
    f0 = project_on_tri_at_origin(q, e0, e1)
    f1 = project_on_tri_at_origin(q, e0, e2)
    f2 = project_on_tri_at_origin(q, e1, e2)
    f3 = project_on_tri_at_origin(q - e0, e1 - e0, e2 - e0)
    best = f0[0]
    coords = Coords(f0[1][1], f0[1][2], 0.0)
    if f1[0] < best:
        best = f1[0]
        coords = Coords(f1[1][1], 0.0, f1[1][2])
    if f2[0] < best:
        best = f2[0]
        coords = Coords(0.0, f2[1][1], f2[1][2])
    if f3[0] < best:
        best = f3[0]
        coords = Coords(f3[1][0], f3[1][1], f3[1][2])
    return best, coords
