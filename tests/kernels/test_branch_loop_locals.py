"""Variables first assigned inside a loop or one branch and read after it, compiled and interpreted.

Every kernel variable starts as the zero of its type, so a read after a loop sees the last iteration's value (as in
Python) and, when the loop ran no iteration or the branch was not taken, zero. Gradients flow through the last
assignment (checked against finite differences); a variable whose type differs between paths stays an error.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenKeyError, CodegenTypeError

MODES = ["release", "interpret"]


@wp.kernel
def last_square(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    for i in range(n):
        v = a[i] * a[i]
    out[0] = v


@wp.kernel
def taken_branch(a: wp.array(dtype=float), c: int, out: wp.array(dtype=float)):
    if c > 0:
        w = wp.sin(a[0]) * 3.0
    out[0] = w


@wp.kernel
def last_vec(a: wp.array(dtype=float), n: int, out: wp.array(dtype=wp.vec3)):
    for i in range(n):
        v = wp.vec3(a[i], 2.0 * a[i], 1.0)
    out[0] = v


@wp.kernel
def while_last(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = 0
    while i < n:
        v = a[i] + 1.0
        i += 1
    out[0] = v


@wp.kernel
def component_of_loop_local(a: wp.array(dtype=float), n: int, out: wp.array(dtype=wp.vec3)):
    for i in range(n):
        v = wp.vec3(a[i])
    v.y = 5.0
    out[0] = v


def _run(kernel, a_np, n, mode, out_dtype=float):
    a = wp.array(a_np, dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=out_dtype, requires_grad=True)
    with wp.config.override(mode=mode):
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, 1, inputs=[a, n, out])
        if out_dtype is float:
            tape.backward(grads={out: wp.array(np.ones(1, dtype=np.float32))})
    return out.numpy(), a.grad.numpy()


def _fd(f, x, h=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    for k in range(x.size):
        xp, xm = x.astype(np.float64).copy(), x.astype(np.float64).copy()
        xp[k] += h
        xm[k] -= h
        g[k] = (f(xp) - f(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [3, 2, 0])
def test_loop_local_keeps_last_iteration(mode, n):
    a = np.array([1.5, 2.0, 3.0], dtype=np.float32)
    out, grad = _run(last_square, a, n, mode)
    expect = float(a[n - 1] ** 2) if n else 0.0
    np.testing.assert_allclose(out, [expect], rtol=1e-6)
    fd = _fd(lambda x: x[n - 1] ** 2 if n else 0.0, a)
    np.testing.assert_allclose(grad, fd, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("c", [1, 0])
def test_branch_local_is_zero_when_not_taken(mode, c):
    a = np.array([0.7, 0.0, 0.0], dtype=np.float32)
    out, grad = _run(taken_branch, a, c, mode)
    expect = 3.0 * np.sin(0.7) if c else 0.0
    np.testing.assert_allclose(out, [expect], rtol=1e-5)
    np.testing.assert_allclose(grad, [3.0 * np.cos(0.7) if c else 0.0, 0.0, 0.0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [3, 0])
def test_vector_and_while_locals(mode, n):
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    out, _ = _run(last_vec, a, n, mode, out_dtype=wp.vec3)
    np.testing.assert_allclose(out[0], [a[n - 1], 2 * a[n - 1], 1.0] if n else [0.0, 0.0, 0.0])
    out, grad = _run(while_last, a, n, mode)
    np.testing.assert_allclose(out, [a[n - 1] + 1.0 if n else 0.0])
    np.testing.assert_allclose(grad, [0.0, 0.0, 1.0] if n else [0.0, 0.0, 0.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [2, 0])
def test_component_store_into_loop_local(mode, n):
    a = np.array([1.0, 4.0], dtype=np.float32)
    out, _ = _run(component_of_loop_local, a, n, mode, out_dtype=wp.vec3)
    v = a[n - 1] if n else 0.0
    np.testing.assert_allclose(out[0], [v, 5.0, v])


def test_type_differing_between_paths_is_an_error():
    @wp.kernel
    def two_types(a: wp.array(dtype=float), c: int):
        if c > 0:
            x = a[0]
        else:
            x = wp.vec3(1.0)
        a[1] = x

    with pytest.raises(CodegenTypeError, match="has type float32 but is assigned a vec3f"):
        wp.launch(two_types, 1, inputs=[wp.zeros(2, dtype=float), 1])


def test_read_before_any_assignment_in_the_source_is_an_error():
    @wp.kernel
    def read_first(a: wp.array(dtype=float), n: int):
        s = 0.0
        for i in range(n):
            s = s + later  # noqa: F821 - no assignment to 'later' comes before this line
            later = a[i]
        a[0] = s

    with pytest.raises(CodegenKeyError, match="name 'later' is not defined"):
        wp.launch(read_first, 1, inputs=[wp.zeros(2, dtype=float), 2])
