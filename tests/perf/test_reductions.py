"""Float atomic adds into constant elements that the CPU launcher privatises per chunk (``compiler/reductions.py``):
same results as plain atomics, within rounding, and never when it would be visible; other atomics stay atomic."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.compiler.determinism import combinable_targets
from treadle._src.compiler.reductions import privatize

N = 200_000


@pytest.fixture(autouse=True)
def _threads():
    with wp.config.override(num_threads=4):
        yield


@wp.kernel
def two_sums(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])
    wp.atomic_sub(out, 3, x[i] * 2.0)
    out[1] += 1.0


@wp.kernel
def histogram(x: wp.array(dtype=float), hist: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(hist, i % 5, x[i])


@wp.kernel
def vec_sum(x: wp.array(dtype=float), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.vec3(x[i], 1.0, -x[i]))


@wp.kernel
def double_sum(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])


@wp.kernel
def old_value_used(x: wp.array(dtype=float), out: wp.array(dtype=float), olds: wp.array(dtype=float)):
    i = wp.tid()
    olds[i] = wp.atomic_add(out, 0, x[i])


@wp.kernel
def reads_target(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[0])


@wp.kernel
def target_also_read(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] + out[1])


def _ir(k):
    return k.get_instance(None).ir


def test_which_kernels_combine_and_privatise():
    assert combinable_targets(_ir(two_sums)) == ["out"] and privatize(_ir(two_sums)) is not None
    assert combinable_targets(_ir(histogram)) == ["hist"] and privatize(_ir(histogram)) is None  # i % 5: not const
    assert combinable_targets(_ir(vec_sum)) == ["out"] and privatize(_ir(vec_sum)) is None  # vectors: atomics
    assert combinable_targets(_ir(old_value_used)) is None
    assert combinable_targets(_ir(target_also_read)) is None


def _data(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(N).astype(np.float32)


def _close(got: float, exact: float, n: int = N) -> None:
    assert abs(got - exact) <= n * np.finfo(np.float32).eps * max(abs(exact), 1.0), (got, exact)


def test_privatised_sums_into_constant_elements():
    x_np = _data()
    out = wp.array(np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32), dtype=float)
    for _ in range(2):
        wp.launch(two_sums, N, inputs=[wp.array(x_np, dtype=float), out])
    got = out.numpy()
    s = float(np.sum(x_np, dtype=np.float64))
    _close(got[0], 1.0 + 2 * s)
    assert got[1] == 2.0 + 2 * N
    assert got[2] == 3.0 and got[4] == 5.0
    _close(got[3], 4.0 - 4 * s)


def test_atomic_histogram_vector_and_double_sums():
    x_np = _data(1)
    x = wp.array(x_np, dtype=float)
    hist = wp.zeros(5, dtype=float)
    wp.launch(histogram, N, inputs=[x, hist])
    ref = np.array([x_np[k::5].astype(np.float64).sum() for k in range(5)])
    for g, r in zip(hist.numpy(), ref):
        _close(g, r, N // 5)
    v = wp.zeros(1, dtype=wp.vec3)
    wp.launch(vec_sum, N, inputs=[x, v])
    s = float(x_np.astype(np.float64).sum())
    got = v.numpy()[0]
    _close(got[0], s)
    assert got[1] == N
    _close(got[2], -s)
    d = wp.zeros(1, dtype=wp.float64)
    wp.launch(double_sum, N, inputs=[wp.array(x_np.astype(np.float64), dtype=wp.float64), d])
    assert abs(d.numpy()[0] - s) <= 1e-9 * s


def test_old_values_stay_exact_atomics():
    x = wp.ones(N, dtype=float)
    out = wp.zeros(1, dtype=float)
    olds = wp.zeros(N, dtype=float)
    wp.launch(old_value_used, N, inputs=[x, out, olds])
    assert out.numpy()[0] == N
    np.testing.assert_array_equal(np.sort(olds.numpy()), np.arange(N, dtype=np.float32))


def test_aliased_target_is_not_privatised():
    """``out`` is ``x``: every thread reads x[0] after the adds of the threads before it (deterministic: serial)."""
    with wp.config.override(deterministic=True):
        x = wp.array(np.array([1.0] + [0.0] * 9, np.float32), dtype=float)
        wp.launch(reads_target, 10, inputs=[x, x])
        assert x.numpy()[0] == 2.0**10  # privatised it would be 1 + 10
        x = wp.array(np.array([1.0] + [0.0] * 9, np.float32), dtype=float)
        wp.launch(reads_target, 10, inputs=[x, x[0:1]])  # a view of the same memory
        assert x.numpy()[0] == 2.0**10


def test_privatised_launch_matches_serial_launch_in_deterministic_mode():
    x_np = _data(3)
    outs = []
    for nt in (1, 4):
        with wp.config.override(deterministic=True, num_threads=nt):
            out = wp.zeros(5, dtype=float)
            wp.launch(two_sums, N, inputs=[wp.array(x_np, dtype=float), out])
            outs.append(out.numpy().tobytes())
    assert outs[0] == outs[1]
