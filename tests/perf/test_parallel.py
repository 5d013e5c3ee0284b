"""Parallel CPU execution: atomics under contention, dense and strided paths, launch shapes, threads, fork.

Launch sizes here are far above the serial threshold, so the work really is split across the thread pool.
"""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

import treadle as wp
from treadle._src.runtime import threadpool

N = 200_000


@pytest.fixture(autouse=True)
def _two_threads():
    with wp.config.override(num_threads=max(2, threadpool.cpu_count())):
        yield


@wp.kernel
def count_all(counter: wp.array(dtype=int), hist: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(counter, 0, 1)
    wp.atomic_add(hist, i % 17, 1)


@wp.kernel
def sum_float(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])


@wp.kernel
def minmax(x: wp.array(dtype=int), lo: wp.array(dtype=int), hi: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i])
    wp.atomic_max(hi, 0, x[i])


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def scale2d(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), s: float):
    i, j = wp.tid()
    out[i, j] = a[i, j] * s + float(i) - float(j)


@wp.kernel
def stencil3d(u: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    i += 1
    j += 1
    k += 1
    out[i, j, k] = u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1] + u[
        i, j, k + 1] - 6.0 * u[i, j, k]


@wp.kernel
def write_tid(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


def test_integer_atomics_are_exact_under_contention():
    counter = wp.zeros(1, dtype=int)
    hist = wp.zeros(17, dtype=int)
    for _ in range(3):
        wp.launch(count_all, N, inputs=[counter, hist])
    assert counter.numpy()[0] == 3 * N
    np.testing.assert_array_equal(hist.numpy(), 3 * np.bincount(np.arange(N) % 17, minlength=17))


def test_integer_min_max_under_contention():
    rng = np.random.default_rng(0)
    vals = rng.integers(-10**9, 10**9, N).astype(np.int32)
    lo = wp.array([2**31 - 1], dtype=int)
    hi = wp.array([-(2**31)], dtype=int)
    wp.launch(minmax, N, inputs=[wp.array(vals, dtype=int), lo, hi])
    assert lo.numpy()[0] == vals.min() and hi.numpy()[0] == vals.max()


def test_float_atomic_sum_within_rounding():
    rng = np.random.default_rng(1)
    vals = rng.random(N).astype(np.float32)
    total = wp.zeros(1, dtype=float)
    wp.launch(sum_float, N, inputs=[wp.array(vals, dtype=float), total])
    exact = float(np.sum(vals.astype(np.float64)))
    # any summation order of N float32 values is within N * eps of the exact sum (relative to the sum of |x|)
    assert abs(float(total.numpy()[0]) - exact) <= N * np.finfo(np.float32).eps * exact


def test_dense_and_strided_1d_views_agree():
    rng = np.random.default_rng(2)
    base_x = rng.random(2 * N).astype(np.float32)
    base_y = rng.random(2 * N).astype(np.float32)
    x = wp.array(base_x, dtype=float)
    y = wp.array(base_y, dtype=float)
    wp.launch(saxpy, 2 * N, inputs=[x, y, 2.5])  # dense
    np.testing.assert_allclose(y.numpy(), 2.5 * base_x + base_y, rtol=1e-6)
    # every other element, through strided views (the general, runtime-stride instantiation)
    xs = wp.array(base_x, dtype=float)[::2]
    ys = wp.array(base_y, dtype=float)[1::2]
    assert not xs.is_contiguous and not ys.is_contiguous
    wp.launch(saxpy, N, inputs=[xs, ys, -1.5])
    np.testing.assert_allclose(ys.numpy(), -1.5 * base_x[::2] + base_y[1::2], rtol=1e-6)


def test_2d_transposed_and_sliced_views():
    rng = np.random.default_rng(3)
    a_np = rng.random((300, 700)).astype(np.float32)
    a = wp.array(a_np, dtype=float)
    for view, ref in [(a, a_np), (a.transpose(), a_np.T), (a[5:290, 7:650], a_np[5:290, 7:650])]:
        out = wp.zeros(ref.shape, dtype=float)
        wp.launch(scale2d, ref.shape, inputs=[view, out, 3.0])
        i, j = np.meshgrid(np.arange(ref.shape[0]), np.arange(ref.shape[1]), indexing="ij")
        np.testing.assert_allclose(out.numpy(), ref * 3.0 + i - j, rtol=1e-6, atol=1e-4)


def test_3d_stencil_dense_and_strided():
    rng = np.random.default_rng(4)
    u_np = rng.random((40, 50, 61)).astype(np.float32)
    ref = np.zeros_like(u_np)
    ref[1:-1, 1:-1, 1:-1] = (u_np[:-2, 1:-1, 1:-1] + u_np[2:, 1:-1, 1:-1] + u_np[1:-1, :-2, 1:-1]
                             + u_np[1:-1, 2:, 1:-1] + u_np[1:-1, 1:-1, :-2] + u_np[1:-1, 1:-1, 2:]
                             - 6.0 * u_np[1:-1, 1:-1, 1:-1])
    u = wp.array(u_np, dtype=float)
    out = wp.zeros(u_np.shape, dtype=float)
    wp.launch(stencil3d, (38, 48, 59), inputs=[u, out])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    # the same stencil on a strided output view
    big = wp.zeros((40, 50, 122), dtype=float)
    view = big[:, :, ::2]
    wp.launch(stencil3d, (38, 48, 59), inputs=[u, view])
    np.testing.assert_allclose(view.numpy()[:, :, :61], ref, rtol=1e-5, atol=1e-5)
    assert not big.numpy()[:, :, 1::2].any()


def test_flat_index_of_multidimensional_launch_and_odd_sizes():
    for dim in [(7, 11, 13, 17), (1000, 3), 4097, 100_003]:
        size = int(np.prod(dim))
        out = wp.full(size, -1, dtype=int)
        wp.launch(write_tid, dim, inputs=[out])
        np.testing.assert_array_equal(out.numpy(), np.arange(size))


def test_kernel_launched_with_fewer_dimensions_than_it_unpacks():
    # a 2-d kernel over a 1-d grid takes the general path (j is 0)
    out = wp.zeros((1, 5000), dtype=float)
    a = wp.ones((1, 5000), dtype=float)
    wp.launch(scale2d, (1, 5000), inputs=[a, out, 2.0])
    np.testing.assert_allclose(out.numpy()[0], 2.0 - np.arange(5000))


def test_thread_counts_give_the_same_results():
    rng = np.random.default_rng(5)
    x_np = rng.random(N).astype(np.float32)
    results = []
    for nt in (1, 2, 3, 8):
        with wp.config.override(num_threads=nt):
            y = wp.zeros(N, dtype=float)
            wp.launch(saxpy, N, inputs=[wp.array(x_np, dtype=float), y, 1.25])
            results.append(y.numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_concurrent_launches_from_python_threads():
    rng = np.random.default_rng(6)
    inputs = [rng.random(50_000).astype(np.float32) for _ in range(4)]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            x = wp.array(inputs[k], dtype=float)
            for it in range(40):
                y = wp.zeros(50_000, dtype=float)
                wp.launch(saxpy, 50_000, inputs=[x, y, float(k + it)])
                np.testing.assert_allclose(y.numpy(), (k + it) * inputs[k], rtol=1e-6)
                counter = wp.zeros(1, dtype=int)
                hist = wp.zeros(17, dtype=int)
                wp.launch(count_all, 20_000, inputs=[counter, hist])
                assert counter.numpy()[0] == 20_000
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_whole_launch_entry_runs_in_parallel_too():
    """The exported ``<sym>_cpu_forward(bounds, args, nthreads)`` (used by the JAX FFI) goes through the pool."""
    import ctypes

    from treadle._src.backends.args import cached_bounds as _bounds

    out = wp.zeros(N, dtype=int)
    wp.launch(write_tid, N, inputs=[out])  # loads the kernel
    out.zero_()
    inst = write_tid.get_instance(None)
    args = inst.args_type()
    args.out = out.__ctype__()
    inst.entry(ctypes.addressof(_bounds(N)), ctypes.addressof(args), 2)
    np.testing.assert_array_equal(out.numpy(), np.arange(N))


def _child_launch(q) -> None:  # pragma: no cover - runs in a forked child
    try:
        out = wp.zeros(N, dtype=int)
        wp.launch(write_tid, N, inputs=[out])
        q.put(bool((out.numpy() == np.arange(N)).all()))
    except BaseException as e:  # noqa: BLE001
        q.put(repr(e))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork()")
def test_launches_work_in_a_forked_child():
    out = wp.zeros(N, dtype=int)
    wp.launch(write_tid, N, inputs=[out])  # the parent's pool is running
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_launch, args=(q,))
    p.start()
    p.join()  # the child's exit is the event: its one small result is in the queue by then, or it crashed
    assert p.exitcode == 0, f"the forked child exited with status {p.exitcode}"
    assert q.get_nowait() is True


def test_idle_pool_wakes_up():
    """After the workers went to sleep, a launch still completes (and gives the right answer)."""
    import time

    rt = threadpool.get_cpu_runtime()
    out = wp.zeros(N, dtype=int)
    time.sleep(0.05 + threadpool.SPIN_NS / 1e9)
    wp.launch(write_tid, N, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.arange(N))
    assert rt.parallel is False or rt.workers() >= 1


@wp.func_native("volatile int here = 0; (void)here; where[tid] = (treadle::int64)(size_t)&here;")
def record_stack(where: wp.array(dtype=wp.int64), tid: int):
    ...


@wp.kernel
def heavy_few(n: int, out: wp.array(dtype=float), where: wp.array(dtype=wp.int64)):
    i = wp.tid()
    s = 0.0
    for k in range(n):
        s = s + wp.sin(float(k + i))
    out[i] = s
    record_stack(where, i)


def test_few_heavy_threads_run_in_parallel():
    """A launch below the serial threshold whose threads each do much work is spread over the pool after a probe."""
    m, n = 300, 20000
    out = wp.zeros(m, dtype=float)
    where = wp.zeros(m, dtype=wp.int64)
    wp.launch(heavy_few, m, inputs=[n, out, where])
    want = np.array([np.sin(np.arange(n, dtype=np.float64) + i).sum() for i in range(m)])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-3, atol=1e-2)  # every thread ran once (float32 sums)
    stacks = {int(a) >> 16 for a in where.numpy()}  # each OS thread has its own stack, megabytes apart
    assert len(stacks) >= 2, "all threads of the launch ran on one OS thread"


def test_few_cheap_threads_stay_on_the_caller():
    m = 300
    out = wp.zeros(m, dtype=float)
    where = wp.zeros(m, dtype=wp.int64)
    wp.launch(heavy_few, m, inputs=[1, out, where])
    np.testing.assert_allclose(out.numpy(), np.sin(np.arange(m, dtype=np.float64)), rtol=1e-5, atol=1e-6)
    assert len({int(a) >> 16 for a in where.numpy()}) == 1


@wp.kernel
def loop_with_float_atomic(n: int, total: wp.array(dtype=float)):
    for k in range(n):
        wp.atomic_add(total, 0, 1.0)


@wp.kernel
def tiled_copy(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(1, 8), offset=(i, 0))
    wp.tile_store(b, t, offset=(i, 0))


def _instance(kernel):
    return next(iter(kernel.instances.values()))


def test_only_loop_or_tile_kernels_are_probed():
    """Small launches are probed for long threads only where threads may be long and their order cannot matter."""
    out = wp.zeros(4, dtype=float)
    where = wp.zeros(4, dtype=wp.int64)
    wp.launch(heavy_few, 4, inputs=[2, out, where])
    wp.launch(write_tid, 4, inputs=[wp.zeros(4, dtype=int)])
    total = wp.zeros(1, dtype=float)
    wp.launch(loop_with_float_atomic, 4, inputs=[3, total])
    assert total.numpy()[0] == 12.0
    a = wp.array(np.arange(32, dtype=np.float32).reshape(4, 8))
    b = wp.zeros((4, 8), dtype=float)
    wp.launch_tiled(tiled_copy, dim=[4], inputs=[a, b], block_dim=8)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert _instance(heavy_few).heavy_threads()
    assert _instance(tiled_copy).heavy_threads()
    assert not _instance(write_tid).heavy_threads()
    assert not _instance(loop_with_float_atomic).heavy_threads()  # float atomics: small launches stay in order
