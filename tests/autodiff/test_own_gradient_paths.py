"""Backward kernels add load gradients with plain adds when every thread owns its elements (checked per launch);
the dense loop then runs a specialisation with those checks folded away. Each path must give the same, exact
gradients: dense arrays with and without gradients, strided views (general loop), and shared elements (atomics)."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def _loss(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    d = wp.sin(x[i]) - y[i]
    wp.atomic_add(out, 0, d * d)


@wp.kernel
def _pairs(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i // 2]  # two threads read (and so add gradient to) each element
    wp.atomic_add(out, 0, v * v)


def _data(n: int = 10_000):
    rng = np.random.default_rng(7)
    return rng.uniform(-2, 2, n), rng.uniform(-1, 1, n)


@pytest.mark.parametrize("y_grad", [False, True])
def test_dense_arrays_with_and_without_gradients(y_grad):
    xs, ys = _data()
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    y = wp.array(ys, dtype=wp.float64, requires_grad=y_grad)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_loss, len(xs), inputs=[x, y, out])
    tape.backward(loss=out)
    d = np.sin(xs) - ys
    np.testing.assert_allclose(x.grad.numpy(), 2 * d * np.cos(xs), rtol=1e-12, atol=1e-14)
    if y_grad:
        np.testing.assert_allclose(y.grad.numpy(), -2 * d, rtol=1e-12, atol=1e-14)


def test_strided_views_take_the_general_loop():
    xs, ys = _data(20_000)
    base = wp.array(xs, dtype=wp.float64, requires_grad=True)
    x = base[::2]
    y = wp.array(ys[::2].copy(), dtype=wp.float64)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_loss, x.shape[0], inputs=[x, y, out])
    tape.backward(loss=out)
    d = np.sin(xs[::2]) - ys[::2]
    expect = np.zeros_like(xs)
    expect[::2] = 2 * d * np.cos(xs[::2])
    np.testing.assert_allclose(base.grad.numpy(), expect, rtol=1e-12, atol=1e-14)


def test_shared_elements_accumulate_every_thread():
    xs, _ = _data(5_000)
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_pairs, 2 * len(xs), inputs=[x, out])
    tape.backward(loss=out)
    np.testing.assert_allclose(x.grad.numpy(), 4 * xs, rtol=1e-12)
