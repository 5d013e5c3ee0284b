"""Kernels on the GPU against NumPy (float64 references) and against the CPU backend; autodiff; device-side reports.

Skipped entirely without a CUDA device (``tests/gpu/conftest.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.struct
class Params:
    scale: float
    offset: wp.vec3


@wp.kernel(module="gpu_suite")
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel(module="gpu_suite")
def laplacian(u: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    n0, n1, n2 = u.shape[0], u.shape[1], u.shape[2]
    if i > 0 and j > 0 and k > 0 and i < n0 - 1 and j < n1 - 1 and k < n2 - 1:
        out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1]
                        + u[i, j, k + 1] - 6.0 * u[i, j, k])


@wp.kernel(module="gpu_suite")
def transform(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33), p: Params, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = m[i] @ v[i] * p.scale + p.offset


@wp.kernel(module="gpu_suite")
def atomics(x: wp.array(dtype=float), keys: wp.array(dtype=wp.int32), total: wp.array(dtype=wp.float64),
            bins: wp.array(dtype=wp.int32), mx: wp.array(dtype=wp.int32), mn: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, wp.float64(x[i]))
    wp.atomic_add(bins, keys[i] % 16, 1)
    wp.atomic_max(mx, 0, keys[i])
    wp.atomic_min(mn, 0, x[i])


@wp.kernel(module="gpu_suite")
def random_draws(seed: int, out: wp.array(dtype=float), outi: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i] = wp.randf(s) + wp.randn(s)
    outi[i] = wp.randi(s)


@wp.kernel(module="gpu_suite")
def loops(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    acc = wp.float32(0.0)
    j = wp.int32(0)
    while j < n:
        j += 1
        if j % 3 == 0:
            continue
        acc += x[i] * float(j)
        if acc > 1.0e6:
            break
    out[i] = acc


@wp.kernel(module="gpu_suite")
def half_ops(x: wp.array(dtype=wp.float16), out: wp.array(dtype=wp.float16)):
    i = wp.tid()
    out[i] = x[i] * wp.float16(2.0) + wp.float16(1.0)


@wp.kernel(module="gpu_suite")
def loss_loop(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.float32(0.0)
    for j in range(n):
        s = s + wp.sin(x[i] * float(j + 1)) * 0.5 + s * 0.01
    y[i] = s


@wp.kernel(module="gpu_suite")
def sum_squares(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i] * wp.sin(x[i]))


@wp.kernel(module="gpu_suite_checked", module_options={"mode": "debug"})
def out_of_bounds(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i + 1]


def _cpu_and_gpu(kernel, dim, make, outputs, dev, **tol):
    """Run ``kernel`` on the CPU and on ``dev`` with the same inputs; compare the ``outputs`` positions."""
    cpu = make("cpu")
    wp.launch(kernel, dim, inputs=cpu, device="cpu")
    gpu = make(dev)
    wp.launch(kernel, dim, inputs=gpu, device=dev)
    for i in outputs:
        np.testing.assert_allclose(gpu[i].numpy().astype(np.float64), cpu[i].numpy().astype(np.float64), **tol)
    return cpu, gpu


def test_saxpy_against_numpy(dev):
    n = 1_000_003
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    yd = wp.array(y, device=dev)
    wp.launch(saxpy, n, inputs=[1.5, wp.array(x, device=dev), yd])
    np.testing.assert_allclose(yd.numpy(), 1.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)


def test_3d_stencil_against_numpy(dev):
    u = np.random.default_rng(1).standard_normal((40, 50, 60)).astype(np.float32)
    out = wp.zeros(u.shape, dtype=float, device=dev)
    wp.launch(laplacian, u.shape, inputs=[wp.array(u, device=dev), out])
    u64 = u.astype(np.float64)
    ref = np.zeros_like(u64)
    ref[1:-1, 1:-1, 1:-1] = (u64[:-2, 1:-1, 1:-1] + u64[2:, 1:-1, 1:-1] + u64[1:-1, :-2, 1:-1] + u64[1:-1, 2:, 1:-1]
                             + u64[1:-1, 1:-1, :-2] + u64[1:-1, 1:-1, 2:] - 6 * u64[1:-1, 1:-1, 1:-1])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_vectors_matrices_structs(dev):
    n = 10_007
    rng = np.random.default_rng(2)
    v = rng.standard_normal((n, 3)).astype(np.float32)
    m = rng.standard_normal((n, 3, 3)).astype(np.float32)
    p = Params()
    p.scale, p.offset = 2.0, wp.vec3(1.0, 2.0, 3.0)
    out = wp.zeros(n, dtype=wp.vec3, device=dev)
    wp.launch(transform, n, inputs=[wp.array(v, dtype=wp.vec3, device=dev), wp.array(m, dtype=wp.mat33, device=dev),
                                    p, out])
    ref = np.einsum("nij,nj->ni", m.astype(np.float64), v) * 2.0 + [1.0, 2.0, 3.0]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_atomics_against_numpy(dev):
    n = 1 << 20
    rng = np.random.default_rng(3)
    x = rng.random(n).astype(np.float32)
    keys = rng.integers(0, 1000, n).astype(np.int32)
    total = wp.zeros(1, dtype=wp.float64, device=dev)
    bins = wp.zeros(16, dtype=wp.int32, device=dev)
    mx = wp.zeros(1, dtype=wp.int32, device=dev)
    mn = wp.full(1, 10.0, dtype=float, device=dev)
    wp.launch(atomics, n, inputs=[wp.array(x, device=dev), wp.array(keys, device=dev), total, bins, mx, mn])
    np.testing.assert_allclose(total.numpy()[0], x.astype(np.float64).sum(), rtol=1e-9)
    assert bins.numpy().tolist() == np.bincount(keys % 16, minlength=16).tolist()
    assert mx.numpy()[0] == keys.max() and mn.numpy()[0] == x.min()


def test_random_numbers_match_the_cpu(dev):
    n = 100_000
    _cpu_and_gpu(random_draws, n, lambda d: [42, wp.zeros(n, dtype=float, device=d),
                                             wp.zeros(n, dtype=wp.int32, device=d)], [1, 2], dev, rtol=1e-5,
                 atol=1e-5)


def test_loops_and_half_precision_match_the_cpu(dev):
    n = 100_003
    x = np.random.default_rng(4).random(n).astype(np.float32)
    _cpu_and_gpu(loops, n, lambda d: [wp.array(x, device=d), 37, wp.zeros(n, dtype=float, device=d)], [2], dev,
                 rtol=1e-5)
    h = np.random.default_rng(5).random(n).astype(np.float16)
    _cpu_and_gpu(half_ops, n, lambda d: [wp.array(h, dtype=wp.float16, device=d),
                                         wp.zeros(n, dtype=wp.float16, device=d)], [1], dev, rtol=0, atol=0)


def test_tape_gradient_against_the_analytic_one(dev):
    x0 = np.linspace(-1.0, 2.5, 4097).astype(np.float32)
    x = wp.array(x0, device=dev, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sum_squares, len(x0), inputs=[x, loss])
    tape.backward(loss)
    x64 = x0.astype(np.float64)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x64 * np.sin(x64) + x64 * x64 * np.cos(x64), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.needs_device
def test_backward_through_a_loop_matches_the_cpu_and_overflow_is_reported(dev):
    n, iters = 10_000, 40
    x0 = np.random.default_rng(6).random(n).astype(np.float32)
    grads = []
    for d in ("cpu", dev):
        x = wp.array(x0, device=d, requires_grad=True)
        y = wp.zeros(n, dtype=float, device=d, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(loss_loop, n, inputs=[x, iters, y], device=d)
        tape.backward(grads={y: wp.ones(n, dtype=float, device=d)})
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-3, atol=1e-3)
    # far more iterations than the default checkpoint capacity: an error, never a silent wrong gradient
    x = wp.array(x0, device=dev, requires_grad=True)
    y = wp.zeros(n, dtype=float, device=dev, requires_grad=True)
    with pytest.raises(wp.LaunchError, match="cuda_ckpt_bytes"):
        wp.launch(loss_loop, n, inputs=[x, 5000, y], adj_inputs=[x.grad, None, wp.ones(n, dtype=float, device=dev)],
                  adjoint=True)


@pytest.mark.needs_device
def test_checked_mode_reports_the_python_line(dev):
    a = wp.zeros(64, dtype=float, device=dev)
    with pytest.raises(wp.CheckedModeError, match=r"test_gpu_kernels.py:\d+.*index 64"):
        wp.launch(out_of_bounds, 64, inputs=[a])


def test_recorded_launch_and_launch_bounds(dev):
    x = wp.array(np.ones(1000, np.float32), device=dev)
    y = wp.zeros(1000, dtype=float, device=dev)
    cmd = wp.launch(saxpy, 1000, inputs=[2.0, x, y], record_cmd=True)
    for _ in range(3):
        cmd.launch()
    assert np.all(y.numpy() == 6.0)
    wp.launch(saxpy, 1000, inputs=[1.0, x, y], block_dim=64, max_blocks=3)
    assert np.all(y.numpy() == 7.0)
