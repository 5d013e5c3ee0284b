"""Starred call arguments in kernels: ``f(*v)`` with vectors, quaternions, matrices (rows), tuples and array slices
with constant bounds; errors for everything else, at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenTypeError, CodegenValueError


@wp.func
def _pair() -> tuple[float, float]:
    return 1.5, 2.5


@wp.func
def _sum3(a: float, b: float, c: float) -> float:
    return a + 10.0 * b + 100.0 * c


@wp.kernel
def _unpack(arr: wp.array(dtype=float), out: wp.array(dtype=float)):
    v3 = wp.vec3(1.0, 2.0, 3.0)
    v4 = wp.vec4(*v3, 4.0)  # components, then more arguments
    q = wp.quat(*v4)
    m = wp.mat22(5.0, 6.0, 7.0, 8.0)
    rows = wp.matrix_from_rows(*m)  # rows of a matrix
    firsts = wp.vec3(*arr[0:6:2])  # elements 0, 2, 4 of an array
    t = wp.vec2(*_pair())  # the values of a tuple
    out[0] = wp.max(*v3[1:])  # a vector slice
    out[1] = q[3] + q[0]
    out[2] = rows[1, 0]
    out[3] = firsts[0] + firsts[1] + firsts[2]
    out[4] = t[0] + t[1]
    out[5] = _sum3(*v3)
    out[6] = wp.vec4(0.5, *wp.vec2(*arr[1:3]), 0.25)[2]


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_starred_arguments(mode):
    arr = wp.array(np.arange(10, dtype=np.float32) * 10.0)
    out = wp.zeros(7, dtype=float)
    with wp.config.override(mode=mode):
        wp.launch(_unpack, 1, inputs=[arr, out])
    np.testing.assert_array_equal(out.numpy(), [3.0, 5.0, 7.0, 0.0 + 20.0 + 40.0, 4.0, 321.0, 20.0])


@wp.kernel
def _grad(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    w = wp.vec4(*x[i], 1.0)
    wp.atomic_add(loss, 0, wp.dot(w, wp.vec4(1.0, 2.0, 3.0, 4.0)) * w[1])


def test_gradients_flow_through_unpacked_values():
    xs = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_grad, 2, inputs=[x, loss])
    tape.backward(loss)
    c = np.array([1.0, 2.0, 3.0])
    d = xs @ c + 4.0
    expect = np.outer(xs[:, 1], c)
    expect[:, 1] += d
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-6)


@wp.kernel
def _bad_int(out: wp.array(dtype=int)):
    x = 42
    v = wp.vec3i(*x)


@wp.kernel
def _bad_no_stop(arr: wp.array(dtype=int)):
    v = wp.vec3i(*arr[0:])


@wp.kernel
def _bad_runtime_bound(arr: wp.array(dtype=int), n: int):
    v = wp.vec3i(*arr[:n])


@wp.kernel
def _bad_negative(arr: wp.array(dtype=int)):
    v = wp.vec3i(*arr[:-3])


@wp.kernel
def _bad_step(arr: wp.array(dtype=int)):
    v = wp.vec3i(*arr[5:2:-1])


@pytest.mark.parametrize("kernel, cls, text", [
    (_bad_int, CodegenTypeError, "only supported for vectors, matrices"),
    (_bad_no_stop, CodegenValueError, "requires explicit upper bound"),
    (_bad_runtime_bound, CodegenValueError, "compile-time constant"),
    (_bad_negative, CodegenValueError, "cannot be negative for arrays"),
    (_bad_step, CodegenValueError, "step cannot be negative"),
])
def test_unpacking_errors(kernel, cls, text):
    args = [wp.zeros(10, dtype=int)] + ([3] if kernel is _bad_runtime_bound else [])
    with pytest.raises(cls, match=text):
        wp.launch(kernel, 1, inputs=args)
