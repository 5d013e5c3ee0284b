"""Measures and normals of elements from their deformation gradients (kernel functions).

``fem.Geometry._element_measure`` and ``fem.Geometry._element_normal``. An element of dimension ``k`` in a world of dimension ``d`` has a ``d x k`` deformation gradient (a ``d``-vector
for ``k = 1``): its measure is the ``k``-volume its columns span, and for ``k = d - 1`` its normal is the unit
vector completing them (``(t_y, -t_x)`` for a segment in the plane, ``t0 x t1`` in space), the orientation of the
geometries' side normals.
"""

import treadle as wp

_V2 = wp.types.vector(length=2, dtype=wp.Float)
_V3 = wp.types.vector(length=3, dtype=wp.Float)
_M22 = wp.types.matrix(shape=(2, 2), dtype=wp.Float)
_M33 = wp.types.matrix(shape=(3, 3), dtype=wp.Float)
_M32 = wp.types.matrix(shape=(3, 2), dtype=wp.Float)


@wp.func
def element_measure(F: _V2):
    return wp.length(F)


@wp.func
def element_measure(F: _V3):  # noqa: F811 - overload
    return wp.length(F)


@wp.func
def element_measure(F: _M22):  # noqa: F811 - overload
    return wp.abs(wp.determinant(F))


@wp.func
def element_measure(F: _M33):  # noqa: F811 - overload
    return wp.abs(wp.determinant(F))


@wp.func
def element_measure(F: _M32):  # noqa: F811 - overload
    t0 = wp.vector(F[0, 0], F[1, 0], F[2, 0])
    t1 = wp.vector(F[0, 1], F[1, 1], F[2, 1])
    return wp.length(wp.cross(t0, t1))


@wp.func
def element_normal(F: _V2):
    return wp.normalize(wp.vector(F[1], -F[0]))


@wp.func
def element_normal(F: _M32):  # noqa: F811 - overload
    t0 = wp.vector(F[0, 0], F[1, 0], F[2, 0])
    t1 = wp.vector(F[0, 1], F[1, 1], F[2, 1])
    return wp.normalize(wp.cross(t0, t1))
