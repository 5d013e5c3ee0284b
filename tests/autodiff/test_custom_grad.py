"""Custom adjoints with @wp.func_grad."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.func
def safe_sqrt(x: float) -> float:
    return wp.sqrt(wp.max(x, 0.0))


@wp.func_grad(safe_sqrt)
def adj_safe_sqrt(x: float, adj_ret: float):
    if x > 1e-6:
        wp.adjoint[x] += adj_ret / (2.0 * wp.sqrt(x))


@wp.func
def scaled_pair(a: float, b: float) -> float:
    return a * b


@wp.func_grad(scaled_pair)
def adj_scaled_pair(a: float, b: float, adj_ret: float):
    # a deliberately different gradient, to prove this code (not autodiff) runs
    wp.adjoint[a] += 100.0 * adj_ret
    wp.adjoint[b] += 1000.0 * adj_ret


@wp.kernel
def use_custom(x: wp.array(dtype=float), y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, safe_sqrt(x[i]) + scaled_pair(x[i], y[i]))


def test_func_grad_replaces_the_adjoint():
    xs = np.array([0.0, 0.25, 4.0], dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    y = wp.array(np.ones(3, dtype=np.float32), requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(use_custom, dim=3, inputs=[x, y, loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), [0.0 + 100.0, 1.0 + 100.0, 0.25 + 100.0], rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), [1000.0] * 3)
    np.testing.assert_allclose(loss.numpy()[0], np.sqrt(xs).sum() + xs.sum(), rtol=1e-6)


@wp.func
def counted(x: float, counter: wp.array(dtype=int)) -> float:
    wp.atomic_add(counter, 0, 1)
    return x * 3.0


@wp.func_replay(counted)
def replay_counted(x: float, counter: wp.array(dtype=int)) -> float:
    wp.atomic_add(counter, 1, 1)  # the replay is seen through its side effect on slot 1
    return x * 3.0


@wp.kernel
def use_replay(x: wp.array(dtype=float), counter: wp.array(dtype=int), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, counted(x[i], counter))


def test_func_replay_is_used_in_the_backward_pass():
    x = wp.array(np.ones(4, dtype=np.float32), requires_grad=True)
    counter = wp.zeros(2, dtype=int)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(use_replay, dim=4, inputs=[x, counter, loss])
    tape.backward(loss)
    np.testing.assert_array_equal(counter.numpy(), [4, 4])
    np.testing.assert_allclose(x.grad.numpy(), [3.0] * 4)


@wp.func
def writes_and_returns(x: float, log: wp.array(dtype=float)) -> float:
    wp.atomic_add(log, 0, 1.0)
    return x * x


@wp.kernel
def side_effects(x: wp.array(dtype=float), log: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, writes_and_returns(x[i], log))


def test_backward_replay_has_no_side_effects():
    x = wp.array(np.arange(3, dtype=np.float32), requires_grad=True)
    log = wp.zeros(1, dtype=float)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(side_effects, dim=3, inputs=[x, log, loss])
    tape.backward(loss)
    assert log.numpy()[0] == 3.0 and loss.numpy()[0] == 5.0
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 4.0])


@wp.func
def square_plus(x: float, y: float) -> float:
    return x * x + wp.sin(y)


@wp.kernel
def grad_in_kernel(x: wp.array(dtype=float), gx: wp.array(dtype=float), gy: wp.array(dtype=float),
                   ga: wp.array(dtype=float)):
    i = wp.tid()
    dx, dy = wp.grad(square_plus)(x[i], 2.0 * x[i])
    gx[i] = dx
    gy[i] = dy
    ga[i] = wp.grad(wp.sin)(x[i])


def test_wp_grad_in_kernels():
    xs = np.array([0.1, 0.5, 1.5], dtype=np.float32)
    gx, gy, ga = (wp.zeros(3, dtype=float) for _ in range(3))
    wp.launch(grad_in_kernel, dim=3, inputs=[wp.array(xs), gx, gy, ga])
    np.testing.assert_allclose(gx.numpy(), 2 * xs, rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), np.cos(2 * xs), rtol=1e-6)
    np.testing.assert_allclose(ga.numpy(), np.cos(xs), rtol=1e-6)


@wp.func_native("out[tid] = x[tid] * 3.0f + 1.0f;", adj_snippet="adj_x[tid] += adj_out[tid] * 3.0f;")
def native_affine(x: wp.array(dtype=float), out: wp.array(dtype=float), tid: int): ...


@wp.func_native("return a * b;", adj_snippet="adj_a += b * adj_ret; adj_b += a * adj_ret;")
def native_mul(a: float, b: float) -> float: ...


@wp.kernel
def use_native(x: wp.array(dtype=float), out: wp.array(dtype=float), prod: wp.array(dtype=float)):
    i = wp.tid()
    native_affine(x, out, i)
    prod[i] = native_mul(x[i], 2.5)


def test_func_native_snippets():
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    prod = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(use_native, dim=2, inputs=[x, out, prod])
    np.testing.assert_allclose(out.numpy(), [4.0, 7.0])
    np.testing.assert_allclose(prod.numpy(), [2.5, 5.0])
    tape.backward(grads={prod: np.ones(2, dtype=np.float32), out: np.array([1.0, 10.0], dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [2.5 + 3.0, 2.5 + 30.0])


@wp.kernel
def uses_identity(m: wp.array(dtype=wp.mat22), loss: wp.array(dtype=float)):
    i = wp.tid()
    a = m[i] + wp.identity(n=2, dtype=float)
    wp.atomic_add(loss, 0, wp.determinant(a))


def test_backward_through_identity():
    m = wp.zeros(1, dtype=wp.mat22, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(uses_identity, dim=1, inputs=[m, loss])
    tape.backward(loss)
    np.testing.assert_allclose(m.grad.numpy()[0], np.eye(2))  # d det(I + M) / dM at M = 0


@wp.func
def two_outputs(x: float, y: float):
    return x * 3.0 + y, y * y


@wp.func
def cube_helper(v: float) -> float:
    return v * v * v


@wp.func_grad(two_outputs)
def adj_two_outputs(x: float, y: float, adj_ret0: float, adj_ret1: float):
    # deliberately not the true derivative (so the test sees this function was used), and calling a helper
    wp.adjoint[x] += adj_ret0 * cube_helper(2.0)
    wp.adjoint[y] += adj_ret1 * y * 10.0


@wp.kernel
def use_two_outputs(xs: wp.array(dtype=float), ys: wp.array(dtype=float), a: wp.array(dtype=float),
                    b: wp.array(dtype=float)):
    i = wp.tid()
    p, q = two_outputs(xs[i], ys[i])
    a[i] = p
    b[i] = q


def test_custom_grad_of_a_function_returning_a_tuple():
    # one adjoint parameter per returned value (adj_ret0, adj_ret1), and helpers callable from the gradient
    xs = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    ys = wp.array(np.array([3.0, 4.0], dtype=np.float32), requires_grad=True)
    a = wp.zeros(2, dtype=float, requires_grad=True)
    b = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(use_two_outputs, dim=2, inputs=[xs, ys], outputs=[a, b])
    np.testing.assert_allclose(a.numpy(), [6.0, 10.0])
    np.testing.assert_allclose(b.numpy(), [9.0, 16.0])
    tape.backward(grads={a: np.array([1.0, 2.0], dtype=np.float32), b: np.array([0.5, 1.0], dtype=np.float32)})
    np.testing.assert_allclose(xs.grad.numpy(), [8.0, 16.0])
    np.testing.assert_allclose(ys.grad.numpy(), [15.0, 40.0])
