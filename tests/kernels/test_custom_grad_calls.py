"""Helpers called from a ``@wp.func_grad`` body run for real in the backward pass: their side effects (atomics,
array writes) happen once per thread, and the custom gradient is still the one applied.

References: the gradient of ``x * s`` by hand; the counters by counting threads.
"""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.func
def cg_count_and_pass(counter: wp.array(dtype=int), log: wp.array(dtype=float), i: int, v: float) -> float:
    wp.atomic_add(counter, 0, 1)
    log[i] = v
    return v


@wp.func
def cg_scale(counter: wp.array(dtype=int), log: wp.array(dtype=float), i: int, x: float, s: float) -> float:
    return x * s


@wp.func_grad(cg_scale)
def cg_adj_scale(counter: wp.array(dtype=int), log: wp.array(dtype=float), i: int, x: float, s: float,
                 adj_ret: float):
    wp.adjoint[x] += cg_count_and_pass(counter, log, i, adj_ret * s)
    wp.adjoint[s] += adj_ret * x


@wp.kernel
def cg_kernel(counter: wp.array(dtype=int), log: wp.array(dtype=float), x: wp.array(dtype=float),
              s: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = cg_scale(counter, log, i, x[i], s[i])


def test_helpers_called_by_custom_gradients_run_once(device: str) -> None:
    n = 5
    xs = np.linspace(-1.0, 2.0, n)
    ss = np.linspace(0.5, 3.0, n)
    counter = wp.zeros(1, dtype=int, device=device)
    log = wp.zeros(n, dtype=float, device=device)
    x = wp.array(xs.astype(np.float32), requires_grad=True, device=device)
    s = wp.array(ss.astype(np.float32), requires_grad=True, device=device)
    out = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(cg_kernel, dim=n, inputs=[counter, log, x, s, out], device=device)
    assert counter.numpy()[0] == 0  # the forward pass does not call the helper
    seed = np.arange(1, n + 1, dtype=np.float64)
    tape.backward(grads={out: wp.array(seed.astype(np.float32), device=device)})
    assert counter.numpy()[0] == n  # once per thread in the backward pass
    np.testing.assert_allclose(log.numpy(), seed * ss, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), seed * ss, rtol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), seed * xs, rtol=1e-6)
