"""Tile linear algebra in kernels: ``tile_matmul`` (both forms), ``tile_cholesky``, the triangular and Cholesky
solves and their in-place forms.

Values against NumPy/SciPy in float64, gradients through ``wp.Tape`` against the NumPy formulas and central finite
differences, odd sizes (1, primes), 1-D and 2-D right-hand sides, and the bad-input errors at the user's line.
"""

# No `from __future__ import annotations`: kernels built in factories name the dtype, a closure variable, in their
# annotations, which must be evaluated when the kernel is defined.
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenTypeError

BATCH = 3


def _spd(n: int, rng: np.random.Generator, batch: int = BATCH) -> np.ndarray:
    x = rng.uniform(-1, 1, (batch, n, n))
    return x @ x.transpose(0, 2, 1) + n * np.eye(n)


def _fd_check(forward: Callable[[list[np.ndarray]], np.ndarray], inputs: list[np.ndarray], grads: list[np.ndarray],
              g_out: np.ndarray, mask: list[np.ndarray] | None = None, samples: int = 12, eps: float = 1e-6,
              seed: int = 0) -> None:
    """Central differences of sum(g_out * forward(inputs)) at random entries of each input vs the given grads."""
    rng = np.random.default_rng(seed)
    for k, (x, g) in enumerate(zip(inputs, grads)):
        flat = np.flatnonzero(mask[k]) if mask is not None else np.arange(x.size)
        for idx in rng.choice(flat, size=min(samples, flat.size), replace=False):
            xp = [v.copy() for v in inputs]
            xm = [v.copy() for v in inputs]
            xp[k].flat[idx] += eps
            xm[k].flat[idx] -= eps
            fd = (np.sum(g_out * forward(xp)) - np.sum(g_out * forward(xm))) / (2 * eps)
            assert abs(g.flat[idx] - fd) <= 1e-6 * (1 + abs(fd)), (k, np.unravel_index(idx, x.shape), g.flat[idx], fd)


# ------------------------------------------------------------------------------------------------ tile_matmul
def _mm_kernel(m: int, k: int, n: int, dtype: Any) -> Any:
    @wp.kernel(module=f"tile_mm_{m}_{k}_{n}_{dtype.__name__}")
    def mm(a: wp.array3d(dtype=dtype), b: wp.array3d(dtype=dtype), c: wp.array3d(dtype=dtype)):
        i, _lane = wp.tid()
        ta = wp.tile_load(a[i], shape=(m, k))
        tb = wp.tile_load(b[i], shape=(k, n))
        wp.tile_store(c[i], wp.tile_matmul(ta, tb))

    return mm


@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (13, 17, 29), (64, 64, 64)], ids=str)
@pytest.mark.parametrize("dtype", [wp.float16, wp.float32, wp.float64], ids=lambda t: t.__name__)
def test_matmul_values(device: str, shape: tuple[int, int, int], dtype: Any) -> None:
    """c = a @ b per block, against the float64 product of the same values."""
    m, k, n = shape
    np_t = wp.types.warp_type_to_np_dtype[dtype] if hasattr(wp.types, "warp_type_to_np_dtype") else None
    np_t = np_t or {wp.float16: np.float16, wp.float32: np.float32, wp.float64: np.float64}[dtype]
    rng = np.random.default_rng(m + k + n)
    a = rng.uniform(-1, 1, (BATCH, m, k)).astype(np_t)
    b = rng.uniform(-1, 1, (BATCH, k, n)).astype(np_t)
    c = wp.zeros((BATCH, m, n), dtype=dtype, device=device)
    wp.launch_tiled(_mm_kernel(m, k, n, dtype), dim=[BATCH], inputs=[wp.array(a, device=device),
                    wp.array(b, device=device), c], block_dim=64, device=device)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = {wp.float16: 2e-2 * k, wp.float32: 1e-5 * k, wp.float64: 1e-12 * k}[dtype]
    assert np.max(np.abs(c.numpy().astype(np.float64) - want)) <= tol


def test_matmul_gradients(device: str) -> None:
    """adj_a = g @ b^T and adj_b = a^T @ g through the tape, and central differences agree (float64)."""
    m, k, n = 5, 7, 3
    kern = _mm_kernel(m, k, n, wp.float64)
    rng = np.random.default_rng(2)
    a_np = rng.uniform(-1, 1, (BATCH, m, k))
    b_np = rng.uniform(-1, 1, (BATCH, k, n))
    g = rng.uniform(-1, 1, (BATCH, m, n))

    def forward(xs: list[np.ndarray]) -> np.ndarray:
        c = wp.zeros((BATCH, m, n), dtype=wp.float64, device=device)
        wp.launch_tiled(kern, dim=[BATCH], inputs=[wp.array(xs[0], device=device), wp.array(xs[1], device=device),
                        c], block_dim=64, device=device)
        return c.numpy()

    a = wp.array(a_np, dtype=wp.float64, requires_grad=True, device=device)
    b = wp.array(b_np, dtype=wp.float64, requires_grad=True, device=device)
    c = wp.zeros((BATCH, m, n), dtype=wp.float64, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(kern, dim=[BATCH], inputs=[a, b, c], block_dim=64, device=device)
    tape.backward(grads={c: wp.array(g, dtype=wp.float64, device=device)})
    assert np.allclose(a.grad.numpy(), g @ b_np.transpose(0, 2, 1), atol=1e-12)
    assert np.allclose(b.grad.numpy(), a_np.transpose(0, 2, 1) @ g, atol=1e-12)
    _fd_check(forward, [a_np, b_np], [a.grad.numpy(), b.grad.numpy()], g)


@wp.kernel(module="tile_mm_acc")
def mm_accumulate(a: wp.array3d(dtype=wp.float16), b: wp.array3d(dtype=float), c_in: wp.array3d(dtype=wp.float64),
                  c_out: wp.array3d(dtype=wp.float64), alpha: wp.float64, beta: wp.float64):
    i, _lane = wp.tid()
    ta = wp.tile_load(a[i], shape=(6, 9))
    tb = wp.tile_load(b[i], shape=(9, 4))
    out = wp.tile_load(c_in[i], shape=(6, 4))
    wp.tile_matmul(ta, tb, out, alpha, beta)
    wp.tile_matmul(ta, tb, out, alpha=alpha, beta=beta)
    wp.tile_store(c_out[i], out)


@wp.kernel(module="tile_mm_acc")
def mm_accumulate64(a: wp.array3d(dtype=wp.float64), b: wp.array3d(dtype=wp.float64),
                    c_in: wp.array3d(dtype=wp.float64), c_out: wp.array3d(dtype=wp.float64), beta: wp.float64):
    i, _lane = wp.tid()
    ta = wp.tile_load(a[i], shape=(6, 9))
    tb = wp.tile_load(b[i], shape=(9, 4))
    out = wp.tile_load(c_in[i], shape=(6, 4))
    wp.tile_matmul(ta, tb, out, alpha=1.5, beta=beta)
    wp.tile_store(c_out[i], out)


def test_matmul_accumulate_mixed_dtypes(device: str) -> None:
    """out = alpha * a @ b + beta * out twice, with float16 a, float32 b and a float64 accumulator."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (BATCH, 6, 9)).astype(np.float16)
    b = rng.uniform(-1, 1, (BATCH, 9, 4)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (BATCH, 6, 4))
    out = wp.zeros((BATCH, 6, 4), dtype=wp.float64, device=device)
    wp.launch_tiled(mm_accumulate, dim=[BATCH], inputs=[wp.array(a, device=device), wp.array(b, device=device),
                    wp.array(c0, device=device), out, 2.0, 0.5], block_dim=64, device=device)
    ab = a.astype(np.float64) @ b.astype(np.float64)
    want = 2.0 * ab + 0.5 * (2.0 * ab + 0.5 * c0)
    assert np.allclose(out.numpy(), want, atol=1e-5)


def test_matmul_accumulate_beta_zero_does_not_read_out(device: str) -> None:
    """With beta == 0 the previous contents (NaN here) are not read, and they receive no gradient."""
    rng = np.random.default_rng(4)
    a = wp.array(rng.uniform(-1, 1, (BATCH, 6, 9)), dtype=wp.float64, requires_grad=True, device=device)
    b = wp.array(rng.uniform(-1, 1, (BATCH, 9, 4)), dtype=wp.float64, requires_grad=True, device=device)
    c_in = wp.array(np.full((BATCH, 6, 4), np.nan), dtype=wp.float64, requires_grad=True, device=device)
    c_out = wp.zeros((BATCH, 6, 4), dtype=wp.float64, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mm_accumulate64, dim=[BATCH], inputs=[a, b, c_in, c_out, 0.0], block_dim=64, device=device)
    assert np.allclose(c_out.numpy(), 1.5 * a.numpy() @ b.numpy())
    tape.backward(grads={c_out: wp.array(np.ones((BATCH, 6, 4)), dtype=wp.float64, device=device)})
    assert np.all(c_in.grad.numpy() == 0.0)


def test_matmul_accumulate_gradients(device: str) -> None:
    """Gradients of the accumulate form reach a, b (times alpha) and the old out (times beta)."""
    rng = np.random.default_rng(5)
    a_np, b_np, c_np = rng.uniform(-1, 1, (BATCH, 6, 9)), rng.uniform(-1, 1, (BATCH, 9, 4)), rng.uniform(
        -1, 1, (BATCH, 6, 4))
    g = rng.uniform(-1, 1, (BATCH, 6, 4))

    def forward(xs: list[np.ndarray]) -> np.ndarray:
        out = wp.zeros((BATCH, 6, 4), dtype=wp.float64, device=device)
        wp.launch_tiled(mm_accumulate64, dim=[BATCH], inputs=[*(wp.array(x, dtype=wp.float64, device=device)
                        for x in xs), out, 0.25], block_dim=64, device=device)
        return out.numpy()

    arrs = [wp.array(x, dtype=wp.float64, requires_grad=True, device=device) for x in (a_np, b_np, c_np)]
    out = wp.zeros((BATCH, 6, 4), dtype=wp.float64, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mm_accumulate64, dim=[BATCH], inputs=[*arrs, out, 0.25], block_dim=64, device=device)
    tape.backward(grads={out: wp.array(g, dtype=wp.float64, device=device)})
    assert np.allclose(arrs[0].grad.numpy(), 1.5 * g @ b_np.transpose(0, 2, 1))
    assert np.allclose(arrs[2].grad.numpy(), 0.25 * g)
    _fd_check(forward, [a_np, b_np, c_np], [x.grad.numpy() for x in arrs], g)


def test_matmul_shape_mismatch_is_reported_at_the_call() -> None:
    """Inner extents that differ are a compile error pointing at the tile_matmul call."""

    @wp.kernel(module="tile_mm_bad")
    def bad(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        ta = wp.tile_load(a, shape=(4, 3))
        tb = wp.tile_load(b, shape=(4, 4))
        wp.tile_store(c, wp.tile_matmul(ta, tb))

    z = wp.zeros((4, 4), dtype=float)
    with pytest.raises(CodegenTypeError, match=r"inner extents differ") as info:
        wp.launch_tiled(bad, dim=[1], inputs=[z, z, z], block_dim=64)
    assert "test_tile_linalg.py" in str(info.value)
    assert "wp.tile_matmul(ta, tb)" in str(info.value)


def test_matmul_rejects_non_tiles_and_wrong_out() -> None:
    """A non-tile operand and an out of the wrong shape are refused by name."""

    @wp.kernel(module="tile_mm_bad2")
    def not_tile(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        ta = wp.tile_load(a, shape=(4, 4))
        wp.tile_store(c, wp.tile_matmul(ta, 2.0))

    @wp.kernel(module="tile_mm_bad3")
    def wrong_out(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        ta = wp.tile_load(a, shape=(4, 4))
        out = wp.tile_zeros(shape=(4, 3), dtype=float)
        wp.tile_matmul(ta, ta, out)
        wp.tile_store(c, out)

    z = wp.zeros((4, 4), dtype=float)
    with pytest.raises(CodegenTypeError, match=r"'b' must be a tile"):
        wp.launch_tiled(not_tile, dim=[1], inputs=[z, z], block_dim=64)
    with pytest.raises(CodegenTypeError, match=r"out has shape \(4, 3\), but a @ b has shape \(4, 4\)"):
        wp.launch_tiled(wrong_out, dim=[1], inputs=[z, z], block_dim=64)
