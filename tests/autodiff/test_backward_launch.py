"""Tape.backward's adjoint launches reuse one frame per kernel plan (``LaunchPlan.run_backward``).

The frame is repacked for every launch, so gradients must follow whichever arrays (and gradient buffers) each recorded
launch used: other arrays with the same kernel, a gradient buffer replaced between two backward passes, and other
threads running backward passes of the same kernel at the same time (they pack into frames of their own).
"""

from __future__ import annotations

import threading

import numpy as np

import treadle as wp


@wp.kernel
def sq_loss(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    d = wp.sin(x[i]) - y[i]
    wp.atomic_add(out, 0, d * d)


def _problem(seed: int, n: int):
    rng = np.random.default_rng(seed)
    x_np = rng.random(n).astype(np.float32)
    y_np = rng.random(n).astype(np.float32)
    x = wp.array(x_np, dtype=float, requires_grad=True)
    y = wp.array(y_np, dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    d = np.sin(x_np.astype(np.float64)) - y_np
    return x, y, out, 2.0 * d * np.cos(x_np.astype(np.float64)), -2.0 * d


def _backward(x, y, out):
    tape = wp.Tape()
    with tape:
        wp.launch(sq_loss, x.shape[0], inputs=[x, y, out])
    tape.backward(loss=out)
    return tape


def test_other_arrays_same_kernel():
    for seed, n in ((1, 1000), (2, 37), (3, 5000)):
        x, y, out, gx, gy = _problem(seed, n)
        _backward(x, y, out)
        np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(y.grad.numpy(), gy, rtol=1e-5, atol=1e-6)


def test_gradient_buffer_replaced_between_passes():
    x, y, out, gx, gy = _problem(4, 300)
    _backward(x, y, out)
    first = x.grad
    x.grad = wp.zeros(300, dtype=float)
    y.grad = None  # no gradient for y now: its adjoint is skipped
    _backward(x, y, out)
    np.testing.assert_allclose(first.numpy(), gx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5, atol=1e-6)
    assert y.grad is None


def test_backward_from_several_threads():
    results: dict[int, bool] = {}

    def work(seed: int) -> None:
        ok = True
        for k in range(20):
            x, y, out, gx, _gy = _problem(seed * 100 + k, 2000 + seed)
            _backward(x, y, out)
            ok = ok and np.allclose(x.grad.numpy(), gx, rtol=1e-5, atol=1e-6)
        results[seed] = ok

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: True, 1: True, 2: True, 3: True}


def test_zero_size_and_repeated_backward_accumulates():
    x, y, out, gx, _gy = _problem(5, 0)
    _backward(x, y, out)
    assert x.grad.numpy().size == 0
    x, y, out, gx, _gy = _problem(6, 64)
    tape = _backward(x, y, out)
    tape.backward(loss=out)  # a second pass adds the same gradient again
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * gx, rtol=1e-5, atol=1e-6)
