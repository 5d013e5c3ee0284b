"""``wp.config.deterministic``: bit-identical float atomics run to run and across thread counts."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.compiler.determinism import kernel_order_dependent

N = 300_000


@wp.kernel
def sum_float(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])


@wp.kernel
def scatter(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, i % 7, x[i] * x[i])


@wp.kernel
def count(hist: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(hist, i % 5, 1)


@wp.kernel
def slots(counter: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    s = wp.atomic_add(counter, 0, 1)
    out[s] = i


@wp.kernel
def loss(x: wp.array(dtype=float), l: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(l, 0, wp.sin(x[i]) * x[i])


def _data() -> np.ndarray:
    # values of very different magnitudes: a parallel sum is almost surely order-dependent in its last bits
    rng = np.random.default_rng(11)
    return (rng.random(N) * 10.0 ** rng.integers(-6, 6, N)).astype(np.float32)


def _run_sum(nt: int) -> tuple[bytes, bytes]:
    with wp.config.override(num_threads=nt):
        x = wp.array(_data(), dtype=float)
        total = wp.zeros(1, dtype=float)
        out = wp.zeros(7, dtype=float)
        wp.launch(sum_float, N, inputs=[x, total])
        wp.launch(scatter, N, inputs=[x, out])
        return total.numpy().tobytes(), out.numpy().tobytes()


def test_order_dependence_analysis():
    def ir(k):
        inst = k.get_instance(None)
        return kernel_order_dependent(inst.ir, inst.deps)

    assert ir(sum_float) and ir(scatter) and ir(slots) and ir(loss)
    assert not ir(count)  # integer atomics whose result is unused commute exactly


@pytest.mark.parametrize("mode", [True, wp.DeterministicMode.RUN_TO_RUN])
def test_float_atomics_bit_identical_across_runs_and_thread_counts(mode):
    with wp.config.override(deterministic=mode):
        results = [_run_sum(nt) for nt in (1, 2, 4, 1, 2)]
    assert all(r == results[0] for r in results)
    exact = float(np.sum(_data(), dtype=np.float64))
    got = float(np.frombuffer(results[0][0], np.float32)[0])
    assert abs(got - exact) <= N * np.finfo(np.float32).eps * exact


def test_slot_allocation_is_in_thread_order():
    with wp.config.override(deterministic=True, num_threads=4):
        counter = wp.zeros(1, dtype=int)
        out = wp.zeros(N, dtype=int)
        wp.launch(slots, N, inputs=[counter, out])
    np.testing.assert_array_equal(out.numpy(), np.arange(N))


def test_module_option_overrides_config():
    wp.set_module_options({"deterministic": True})
    try:
        a = [_run_sum(nt) for nt in (1, 3)]
        assert a[0] == a[1]
    finally:
        wp.set_module_options({"deterministic": None})  # None: follow wp.config.deterministic again


def test_tape_backward_is_bit_identical():
    grads = []
    for nt in (1, 2, 4):
        with wp.config.override(deterministic=True, num_threads=nt):
            x = wp.array(_data() * 1e-3, dtype=float, requires_grad=True)
            l = wp.zeros(1, dtype=float, requires_grad=True)
            tape = wp.Tape()
            with tape:
                wp.launch(loss, N, inputs=[x, l])
            tape.backward(loss=l)
            grads.append((l.numpy().tobytes(), x.grad.numpy().tobytes()))
    assert grads[0] == grads[1] == grads[2]
