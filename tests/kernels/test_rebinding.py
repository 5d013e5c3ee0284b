"""A variable given a value of another type in the block that declared it becomes a new variable (as in Python).

Inside a branch or loop, a variable declared outside keeps its type (the branches must agree): an error at the line.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenTypeError


@wp.kernel
def _retyped(arr: wp.array2d(dtype=int), out: wp.array(dtype=int), fout: wp.array(dtype=float)):
    sub = arr[:2]
    out[0] = sub.ndim * 10 + sub.shape[0]
    sub = arr[1]  # a 1-d view now
    out[1] = sub.ndim * 10 + sub[2]
    x = 1
    x = 2.5  # not an integer: a float variable from here on
    fout[0] = x
    x = wp.vec3(1.0, 2.0, 3.0)
    fout[1] = x[2]
    y = 0.0
    y = 3  # an integer literal still converts to the variable's float type
    fout[2] = y / 2.0


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_straight_line_rebinding(mode):
    out, fout = wp.zeros(2, dtype=int), wp.zeros(3, dtype=float)
    with wp.config.override(mode=mode):
        wp.launch(_retyped, 1, inputs=[wp.array(np.arange(12).reshape(3, 4), dtype=int), out, fout])
    np.testing.assert_array_equal(out.numpy(), [22, 16])
    np.testing.assert_array_equal(fout.numpy(), [2.5, 3.0, 1.5])


@wp.kernel
def _loss(xs: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    y = xs[i] * 2.0
    z = y * y
    y = wp.vec2(z, xs[i])  # the float y is still what z was computed from
    for k in range(2):
        w = xs[i] * float(k)
        w = wp.vec2(w, 1.0)  # rebinding inside a loop body that declared it
        wp.atomic_add(loss, 0, w[0])
    wp.atomic_add(loss, 0, y[0] + 3.0 * y[1])


def test_gradients_through_rebound_variables():
    x = np.array([1.0, 2.0, -0.5], np.float32)
    xs = wp.array(x, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_loss, 3, inputs=[xs, loss])
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(4 * x**2 + 3 * x + x), rtol=1e-6)
    np.testing.assert_allclose(xs.grad.numpy(), 8 * x + 4, rtol=1e-6)


@wp.kernel
def _in_branch(n: int, out: wp.array(dtype=float)):
    x = 1.0
    if n > 0:
        x = wp.vec3(1.0)
    out[0] = 1.0


@wp.kernel
def _in_loop(n: int, out: wp.array(dtype=float)):
    x = 1.0
    for i in range(n):
        x = wp.vec3(1.0)
    out[0] = 1.0


@pytest.mark.parametrize("kernel", [_in_branch, _in_loop])
def test_retyping_inside_a_branch_or_loop_is_an_error(kernel):
    with pytest.raises(CodegenTypeError, match="variable 'x' has type float32 but is assigned a vec3f"):
        wp.launch(kernel, 1, inputs=[1, wp.zeros(1, dtype=float)])
