"""Adjoints start from -0.0 (``treadle::adj_zero``): gradients are the same numbers, signed zeros included.

The backward pass seeds and resets every float adjoint with -0.0, the exact additive identity, so that the C++
compiler can drop the first accumulation into it. Gradient buffers start from +0.0 and only receive sums, so a
gradient that is exactly zero must still come out as +0.0, and non-zero gradients must match NumPy float64
references through scalars, vectors, branches and a dynamic loop (where adjoints are reset every iteration).
"""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def times_weight(x: wp.array(dtype=float), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] * w[i])


@wp.kernel
def vec_loss(v: wp.array(dtype=wp.vec3), s: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    a = v[i] * s[i]
    b = wp.vec3(a[0], 0.0, a[2]) + v[i]
    if s[i] > 0.5:
        b = b * 2.0
    wp.atomic_add(out, 0, wp.dot(b, b))


@wp.kernel
def loop_loss(x: wp.array(dtype=float), n: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    acc = 0.0
    t = x[i]
    for _k in range(n[i]):
        t = wp.sin(t) * 0.9 + acc * 0.1
        acc = acc + t * t
    wp.atomic_add(out, 0, acc)


def _backward(kernel, inputs, out):
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, inputs[0].shape[0], inputs=[*inputs, out])
    tape.backward(loss=out)
    return tape


def test_zero_gradients_stay_positive_zero():
    x = wp.array(np.array([1.0, -2.0, 3.0, 0.0], np.float32), dtype=float, requires_grad=True)
    w = wp.array(np.array([-0.0, 0.0, -0.0, -0.0], np.float32), dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    _backward(times_weight, [x, w], out)
    gx = x.grad.numpy()
    assert np.all(gx == 0.0) and not np.any(np.signbit(gx)), gx
    np.testing.assert_array_equal(w.grad.numpy(), x.numpy())


def test_vector_gradients_match_numpy():
    rng = np.random.default_rng(7)
    n = 64
    v_np = rng.standard_normal((n, 3))
    s_np = rng.random(n)
    s_np[::5] = 0.0
    v = wp.array(v_np.astype(np.float32), dtype=wp.vec3, requires_grad=True)
    s = wp.array(s_np.astype(np.float32), dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    _backward(vec_loss, [v, s], out)
    # b = (v*s + v) * k with the middle component just v, k = 2 where s > 0.5; loss = sum |b|^2
    k = np.where(s_np > 0.5, 2.0, 1.0)[:, None]
    scale = np.stack([s_np + 1.0, np.ones(n), s_np + 1.0], axis=1)
    b = v_np * scale * k
    gv = 2.0 * b * k * scale
    gs = (2.0 * b * k * v_np)[:, [0, 2]].sum(axis=1)
    np.testing.assert_allclose(v.grad.numpy(), gv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s.grad.numpy(), gs, rtol=1e-5, atol=1e-5)
    assert not np.any(np.signbit(v.grad.numpy()[:, 1][v_np[:, 1] == 0.0]))


def test_dynamic_loop_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    n = 16
    x_np = rng.random(n) * 2.0 - 1.0
    n_np = np.arange(n) % 5  # zero trips included: their gradient is exactly 0
    x = wp.array(x_np.astype(np.float32), dtype=float, requires_grad=True)
    counts = wp.array(n_np.astype(np.int32), dtype=int)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    _backward(loop_loss, [x, counts], out)

    def f(xv: np.ndarray) -> np.ndarray:
        acc = np.zeros_like(xv)
        t = xv.copy()
        for k in range(int(n_np.max())):
            live = k < n_np
            t = np.where(live, np.sin(t) * 0.9 + acc * 0.1, t)
            acc = np.where(live, acc + t * t, acc)
        return acc

    h = 1e-6
    fd = (f(x_np + h) - f(x_np - h)) / (2 * h)
    g = x.grad.numpy()
    np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-5)
    assert np.all(g[n_np == 0] == 0.0) and not np.any(np.signbit(g[n_np == 0]))
