"""``wp.static()`` with kernel locals that hold literals, and struct values built at compile time."""

from __future__ import annotations

import numpy as np

import treadle as wp

OFFSET = 3


@wp.func
def _static_plus_two():
    return wp.static(OFFSET + 2)


@wp.struct
class StaticS:
    mat: wp.mat33
    vec: wp.vec3
    i: int


@wp.struct
class StaticOuter:
    s: StaticS
    q: wp.quat


@wp.func
def _make_s(mat: wp.mat33, vec: wp.vec3, i: int):
    s = StaticS()
    s.mat = mat
    s.vec = vec
    s.i = i
    return s


@wp.func
def _make_outer(mat: wp.mat33, vec: wp.vec3, i: int):
    o = StaticOuter()
    o.s = _make_s(mat, vec, i)
    o.q = wp.quat(0.0, 0.0, 0.0, 1.0)
    return o


@wp.kernel
def static_kernel(results: wp.array(dtype=int), out: wp.array(dtype=StaticOuter)):
    n = 4
    results[0] = _static_plus_two()
    results[1] = wp.static(_static_plus_two() + n)  # a local holding a literal is visible to wp.static
    out[0] = wp.static(_make_outer(wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0), wp.vec3(1.0, 2.0, 3.0), 7))


def test_static_locals_and_struct_values(device):
    results = wp.zeros(2, dtype=int, device=device)
    out = wp.zeros(1, dtype=StaticOuter, device=device)
    wp.launch(static_kernel, dim=1, inputs=[results, out], device=device)
    np.testing.assert_array_equal(results.numpy(), [5, 9])
    o = out.numpy()[0]
    np.testing.assert_array_equal(o["s"]["mat"], np.arange(1.0, 10.0).reshape(3, 3))
    np.testing.assert_array_equal(o["s"]["vec"], [1.0, 2.0, 3.0])
    assert o["s"]["i"] == 7
    np.testing.assert_array_equal(o["q"], [0.0, 0.0, 0.0, 1.0])
