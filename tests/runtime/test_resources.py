"""Resource safety: no memory growth over many allocations and launches, memory freed exactly when its last user
(a view, a NumPy array, a DLPack consumer) goes, and kernels launched from several Python threads at once."""

from __future__ import annotations

import gc
import os
import threading
import tracemalloc
import typing
import weakref

import numpy as np
import pytest

import treadle as wp

MB = 1 << 20


def _rss() -> int:
    """Resident set size in bytes (Linux ``/proc/self/statm``), or tracemalloc's count elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - not Linux
        return tracemalloc.get_traced_memory()[0]


@wp.kernel(module="unique")
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def test_no_growth_over_100k_allocate_free_cycles():
    for _ in range(2000):  # warm up pools, caches and the allocator's free lists
        wp.zeros(256, dtype=float)
        wp.empty((8, 8), dtype=wp.vec3)
    gc.collect()
    before = _rss()
    for i in range(100_000):
        a = wp.zeros(256, dtype=float) if i % 2 else wp.empty((8, 8), dtype=wp.vec3)
        del a
    gc.collect()
    grown = _rss() - before
    # 100k * ~1 KiB allocated in total; anything kept per cycle would be >= 100 MB
    assert grown < 16 * MB, f"RSS grew by {grown / MB:.1f} MiB over 100k allocate/free cycles"


def test_no_growth_over_10k_launches():
    x = wp.array(np.arange(64, dtype=np.float32))
    y = wp.zeros(64, dtype=float)
    for _ in range(500):
        wp.launch(axpy, dim=64, inputs=[x, y, 1.0])
    gc.collect()
    before = _rss()
    for i in range(10_000):
        if i % 10 == 0:  # some launches with freshly allocated arguments too
            tmp = wp.zeros(64, dtype=float)
            wp.launch(axpy, dim=64, inputs=[x, tmp, 2.0])
        else:
            wp.launch(axpy, dim=64, inputs=[x, y, 1.0])
    gc.collect()
    grown = _rss() - before
    assert grown < 8 * MB, f"RSS grew by {grown / MB:.1f} MiB over 10k launches"
    np.testing.assert_allclose(y.numpy(), np.arange(64) * (500 + 9000))


class _Traced:
    """Bytes allocated (and not freed) since the start of the block, as tracemalloc sees them (NumPy reports its
    data buffers, which own Treadle's CPU memory)."""

    def __enter__(self) -> _Traced:
        gc.collect()
        tracemalloc.start()
        self.base = tracemalloc.get_traced_memory()[0]
        return self

    def now(self) -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - self.base

    def __exit__(self, *exc: object) -> None:
        tracemalloc.stop()


N = 8 * MB // 4  # an 8 MiB float32 array


def test_memory_lives_while_a_view_lives():
    with _Traced() as t:
        a = wp.array(np.arange(N, dtype=np.float32))
        assert t.now() >= 8 * MB
        ref = weakref.ref(a)
        v = a[N - 4 :]  # a slice view
        del a
        assert t.now() >= 8 * MB  # kept alive by the view ...
        np.testing.assert_array_equal(v.numpy(), np.arange(N - 4, N, dtype=np.float32))  # ... and valid
        del v
        assert ref() is None
        assert t.now() < 1 * MB  # freed with the last view


def test_memory_lives_while_a_numpy_view_lives():
    with _Traced() as t:
        a = wp.array(np.arange(N, dtype=np.float32))
        n = a.numpy()
        assert np.shares_memory(n, a.numpy())  # a view, not a copy
        del a
        assert t.now() >= 8 * MB
        assert n[-1] == N - 1 and n[12345] == 12345
        del n
        assert t.now() < 1 * MB


def test_memory_lives_while_a_dlpack_consumer_lives():
    with _Traced() as t:
        a = wp.array(np.arange(N, dtype=np.float32))
        n = np.from_dlpack(a)  # NumPy consumes a DLPack capsule
        assert n.ctypes.data == a.ptr
        del a
        assert t.now() >= 8 * MB
        assert n[-1] == N - 1
        del n
        assert t.now() < 1 * MB


def test_unconsumed_dlpack_capsule_frees_the_memory():
    with _Traced() as t:
        a = wp.array(np.arange(N, dtype=np.float32))
        cap = wp.to_dlpack(a)
        del a
        assert t.now() >= 8 * MB  # the capsule holds it
        del cap
        assert t.now() < 1 * MB


@wp.kernel(module="unique")
def thread_work(x: wp.array(dtype=float), y: wp.array(dtype=float), k: float):
    i = wp.tid()
    acc = 0.0
    for j in range(16):
        acc = acc + x[i] * k + float(j)
    y[i] = acc


def test_launches_from_several_python_threads():
    n, threads, reps = 1000, 6, 60
    x = wp.array(np.linspace(0.0, 1.0, n, dtype=np.float32))
    wp.launch(thread_work, dim=n, inputs=[x, wp.zeros(n, dtype=float), 1.0])  # compile once up front
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def worker(t: int) -> None:
        try:
            y = wp.zeros(n, dtype=float)
            barrier.wait()
            for r in range(reps):
                k = float(t * 100 + r)
                wp.launch(thread_work, dim=n, inputs=[x, y, k])
                want = 16.0 * x.numpy() * k + 120.0
                np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()  # no timeout: a hang is a failure the test runner reports, not a race against the clock
    assert not errors, errors[0]


@pytest.mark.parametrize("mode", ["first_use", "generic"])
def test_first_launch_races_from_several_threads(mode):
    """Several threads launching a kernel nobody has compiled yet: it compiles once and every launch is right."""

    @wp.kernel(module="unique")
    def fresh(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * 3.0 + 1.0

    @wp.kernel(module="unique")
    def fresh_generic(x: wp.array(dtype=typing.Any), y: wp.array(dtype=typing.Any)):
        i = wp.tid()
        y[i] = x[i] * x.dtype(3.0) + x.dtype(1.0)

    k = fresh if mode == "first_use" else fresh_generic
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def worker(t: int) -> None:
        try:
            dt = np.float32 if mode == "first_use" or t % 2 else np.float64
            x = wp.array(np.arange(100, dtype=dt) + t)
            y = wp.zeros(100, dtype=x.dtype)
            barrier.wait()
            wp.launch(k, dim=100, inputs=[x, y])
            np.testing.assert_allclose(y.numpy(), (np.arange(100) + t) * 3.0 + 1.0)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    assert not errors, errors[0]
