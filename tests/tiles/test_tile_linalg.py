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


@wp.kernel(module="tile_mm_bf16")
def mm_bf16(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    ta = wp.tile_astype(wp.tile_load(a, shape=(5, 7)), wp.bfloat16)
    tb = wp.tile_astype(wp.tile_load(b, shape=(7, 3)), wp.bfloat16)
    out = wp.tile_zeros(shape=(5, 3), dtype=float)
    wp.tile_matmul(ta, tb, out)
    wp.tile_store(c, out)


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest even) and back."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def test_matmul_bfloat16_operands_and_refused_forms() -> None:
    """bfloat16 a and b accumulate into a float32 out; a bfloat16 out and tiles of vec2 are refused at the call."""
    rng = np.random.default_rng(8)
    a, b = rng.uniform(-1, 1, (5, 7)).astype(np.float32), rng.uniform(-1, 1, (7, 3)).astype(np.float32)
    c = wp.zeros((5, 3), dtype=float)
    wp.launch_tiled(mm_bf16, dim=[1], inputs=[wp.array(a), wp.array(b), c], block_dim=64)
    want = _bf16(a).astype(np.float64) @ _bf16(b).astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-5)

    @wp.kernel(module="tile_mm_bf16_out")
    def bf16_out(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        ta = wp.tile_astype(wp.tile_load(a, shape=(4, 4)), wp.bfloat16)
        wp.tile_store(c, wp.tile_astype(wp.tile_matmul(ta, ta), float))

    @wp.kernel(module="tile_mm_complex")
    def complex_out(a: wp.array2d(dtype=wp.vec2f)):
        ta = wp.tile_load(a, shape=(4, 4))
        wp.tile_store(a, wp.tile_matmul(ta, ta))

    z = wp.zeros((4, 4), dtype=float)
    with pytest.raises(CodegenTypeError, match=r"does not support a bfloat16 'out' tile") as info:
        wp.launch_tiled(bf16_out, dim=[1], inputs=[z, z], block_dim=64)
    assert "wp.tile_matmul(ta, ta)" in str(info.value)
    with pytest.raises(CodegenTypeError, match=r"does not support complex tiles"):
        wp.launch_tiled(complex_out, dim=[1], inputs=[wp.zeros((4, 4), dtype=wp.vec2f)], block_dim=64)


# ------------------------------------------------------------------------------------------------ Cholesky
def _chol_kernel(n: int, dtype: Any, fill: str) -> Any:
    @wp.kernel(module=f"tile_chol_{n}_{dtype.__name__}_{fill}")
    def chol(a: wp.array3d(dtype=dtype), out: wp.array3d(dtype=dtype), inplace: wp.array3d(dtype=dtype)):
        i, _lane = wp.tid()
        t = wp.tile_load(a[i], shape=(n, n))
        wp.tile_store(out[i], wp.tile_cholesky(t, fill_mode=fill))
        wp.tile_cholesky_inplace(t, fill)
        wp.tile_store(inplace[i], t)

    return chol


@pytest.mark.parametrize("n", [1, 5, 16])
@pytest.mark.parametrize("dtype", [wp.float32, wp.float64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("fill", ["lower", "upper"])
def test_cholesky_values(device: str, n: int, dtype: Any, fill: str) -> None:
    """The factor (and the in-place factor) match numpy.linalg.cholesky; the unread triangle may hold garbage."""
    rng = np.random.default_rng(n)
    a = _spd(n, rng)
    poisoned = a.copy()
    unread = np.tril(np.ones((n, n), bool), -1) if fill == "upper" else np.triu(np.ones((n, n), bool), 1)
    poisoned[:, unread] = np.nan
    out = wp.zeros((BATCH, n, n), dtype=dtype, device=device)
    inplace = wp.zeros((BATCH, n, n), dtype=dtype, device=device)
    wp.launch_tiled(_chol_kernel(n, dtype, fill), dim=[BATCH], inputs=[wp.array(poisoned, dtype=dtype, device=device),
                    out, inplace], block_dim=64, device=device)
    want = np.linalg.cholesky(a)
    want = want.transpose(0, 2, 1) if fill == "upper" else want
    tol = 1e-4 if dtype == wp.float32 else 1e-12
    assert np.allclose(out.numpy(), want, atol=tol)
    assert np.array_equal(out.numpy(), inplace.numpy())


@pytest.mark.parametrize("fill", ["lower", "upper"])
def test_cholesky_gradients_finite_differences(device: str, fill: str) -> None:
    """Gradients with respect to the read triangle of A match central differences; the other triangle gets none."""
    n = 4
    kern = _chol_kernel(n, wp.float64, fill)

    @wp.kernel(module=f"tile_chol_grad_{fill}")
    def chol_only(a: wp.array3d(dtype=wp.float64), out: wp.array3d(dtype=wp.float64)):
        i, _lane = wp.tid()
        wp.tile_store(out[i], wp.tile_cholesky(wp.tile_load(a[i], shape=(n, n)), fill_mode=fill))

    del kern
    rng = np.random.default_rng(6)
    a_np = _spd(n, rng)
    g = rng.uniform(-1, 1, (BATCH, n, n))

    def forward(xs: list[np.ndarray]) -> np.ndarray:
        out = wp.zeros((BATCH, n, n), dtype=wp.float64, device=device)
        wp.launch_tiled(chol_only, dim=[BATCH], inputs=[wp.array(xs[0], dtype=wp.float64, device=device), out],
                        block_dim=64, device=device)
        return out.numpy()

    a = wp.array(a_np, dtype=wp.float64, requires_grad=True, device=device)
    out = wp.zeros((BATCH, n, n), dtype=wp.float64, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(chol_only, dim=[BATCH], inputs=[a, out], block_dim=64, device=device)
    tape.backward(grads={out: wp.array(g, dtype=wp.float64, device=device)})
    grad = a.grad.numpy()
    read = np.triu(np.ones((n, n), bool)) if fill == "upper" else np.tril(np.ones((n, n), bool))
    assert np.all(grad[:, ~read] == 0.0)
    _fd_check(forward, [a_np], [grad], g, mask=[np.broadcast_to(read, a_np.shape)], samples=20)


def test_cholesky_inplace_is_not_differentiable() -> None:
    """Differentiating through the in-place factorization warns at the call that no gradient flows through it."""

    @wp.kernel(module="tile_chol_inplace_grad")
    def k(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        t = wp.tile_load(a, shape=(3, 3))
        wp.tile_cholesky_inplace(t)
        wp.tile_store(out, t)

    a = wp.array(np.eye(3, dtype=np.float32) * 4, requires_grad=True)
    out = wp.zeros((3, 3), dtype=float, requires_grad=True)
    wp.launch_tiled(k, dim=[1], inputs=[a, out], block_dim=64)
    assert np.allclose(out.numpy(), 2 * np.eye(3))
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(k, dim=[1], inputs=[a, out], block_dim=64)
    with pytest.warns(wp.DroppedGradientWarning, match=r"test_tile_linalg.py:\d+: 'tile_cholesky_inplace' has no "
                      "adjoint"):
        tape.backward(grads={out: wp.array(np.ones((3, 3), dtype=np.float32))})


def test_cholesky_rejects_bad_input() -> None:
    """A non-square tile, a float16 tile and an unknown fill mode are refused by name."""

    @wp.kernel(module="tile_chol_bad1")
    def not_square(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        wp.tile_store(out, wp.tile_cholesky(wp.tile_load(a, shape=(3, 4))))

    @wp.kernel(module="tile_chol_bad2")
    def bad_fill(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        wp.tile_store(out, wp.tile_cholesky(wp.tile_load(a, shape=(3, 3)), fill_mode="diagonal"))

    @wp.kernel(module="tile_chol_bad3")
    def half(a: wp.array2d(dtype=wp.float16), out: wp.array2d(dtype=wp.float16)):
        wp.tile_store(out, wp.tile_cholesky(wp.tile_load(a, shape=(3, 3))))

    z = wp.zeros((4, 4), dtype=float)
    with pytest.raises(CodegenTypeError, match="must be a square tile, got shape \\(3, 4\\)"):
        wp.launch_tiled(not_square, dim=[1], inputs=[z, z], block_dim=64)
    with pytest.raises(CodegenTypeError, match="fill_mode must be"):
        wp.launch_tiled(bad_fill, dim=[1], inputs=[z, z], block_dim=64)
    h = wp.zeros((4, 4), dtype=wp.float16)
    with pytest.raises(CodegenTypeError, match="must hold float32 or float64"):
        wp.launch_tiled(half, dim=[1], inputs=[h, h], block_dim=64)


# ------------------------------------------------------------------------------------------------ solves
def _solve_kernel(op: str, m: int, rhs_shape: tuple[int, ...], dtype: Any) -> Any:
    """A kernel computing op(M, y) out of place and in place; y is (B, M) for a 1-D or (B, M, R) for a 2-D rhs."""
    fn = getattr(wp, op)
    fn_inplace = getattr(wp, op + "_inplace")
    arr = wp.array2d if len(rhs_shape) == 1 else wp.array3d

    @wp.kernel(module=f"tile_{op}_{m}_{len(rhs_shape)}_{dtype.__name__}")
    def solve(mat: wp.array3d(dtype=dtype), y: arr(dtype=dtype), x: arr(dtype=dtype), x2: arr(dtype=dtype)):
        i, _lane = wp.tid()
        tm = wp.tile_load(mat[i], shape=(m, m))
        ty = wp.tile_load(y[i], shape=rhs_shape)
        wp.tile_store(x[i], fn(tm, ty))
        fn_inplace(tm, ty)
        wp.tile_store(x2[i], ty)

    return solve


def _solve_ref(op: str, mat: np.ndarray, y: np.ndarray) -> np.ndarray:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    out = []
    for mi, yi in zip(mat, y):
        if op == "tile_lower_solve":
            out.append(scipy_linalg.solve_triangular(mi, yi, lower=True))
        elif op == "tile_upper_solve":
            out.append(scipy_linalg.solve_triangular(mi, yi, lower=False))
        else:
            out.append(np.linalg.solve(mi @ mi.T, yi))
    return np.array(out)


def _solve_matrix(op: str, m: int, rng: np.random.Generator) -> np.ndarray:
    if op == "tile_cholesky_solve":
        return np.linalg.cholesky(_spd(m, rng))
    t = rng.uniform(-1, 1, (BATCH, m, m)) + np.eye(m) * 3
    return np.triu(t) if op == "tile_upper_solve" else np.tril(t)


OPS = ["tile_lower_solve", "tile_upper_solve", "tile_cholesky_solve"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("m,rhs", [(1, (1,)), (7, (7,)), (5, (5, 3)), (13, (13, 2))], ids=str)
@pytest.mark.parametrize("dtype", [wp.float32, wp.float64], ids=lambda t: t.__name__)
def test_solve_values(device: str, op: str, m: int, rhs: tuple[int, ...], dtype: Any) -> None:
    """Triangular and Cholesky solves (1-D and 2-D right-hand sides), out of place and in place, vs SciPy/NumPy."""
    rng = np.random.default_rng(m * len(rhs))
    mat = _solve_matrix(op, m, rng)
    y = rng.uniform(-1, 1, (BATCH, *rhs))
    x = wp.zeros((BATCH, *rhs), dtype=dtype, device=device)
    x2 = wp.zeros((BATCH, *rhs), dtype=dtype, device=device)
    wp.launch_tiled(_solve_kernel(op, m, rhs, dtype), dim=[BATCH], inputs=[wp.array(mat, dtype=dtype, device=device),
                    wp.array(y, dtype=dtype, device=device), x, x2], block_dim=64, device=device)
    want = _solve_ref(op, mat, y)
    tol = 1e-4 if dtype == wp.float32 else 1e-11
    assert np.allclose(x.numpy(), want, atol=tol, rtol=tol)
    assert np.array_equal(x.numpy(), x2.numpy())


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("m,rhs", [(4, (4,)), (3, (3, 2))], ids=str)
def test_solve_gradients_finite_differences(device: str, op: str, m: int, rhs: tuple[int, ...]) -> None:
    """Gradients with respect to the right-hand side and the matrix's read triangle match central differences."""
    fn = getattr(wp, op)
    arr = wp.array2d if len(rhs) == 1 else wp.array3d

    @wp.kernel(module=f"tile_{op}_grad_{len(rhs)}")
    def solve(mat: wp.array3d(dtype=wp.float64), y: arr(dtype=wp.float64), x: arr(dtype=wp.float64)):
        i, _lane = wp.tid()
        wp.tile_store(x[i], fn(wp.tile_load(mat[i], shape=(m, m)), wp.tile_load(y[i], shape=rhs)))

    rng = np.random.default_rng(7)
    mat_np = _solve_matrix(op, m, rng)
    y_np = rng.uniform(-1, 1, (BATCH, *rhs))
    g = rng.uniform(-1, 1, (BATCH, *rhs))

    def forward(xs: list[np.ndarray]) -> np.ndarray:
        x = wp.zeros((BATCH, *rhs), dtype=wp.float64, device=device)
        wp.launch_tiled(solve, dim=[BATCH], inputs=[wp.array(xs[0], dtype=wp.float64, device=device),
                        wp.array(xs[1], dtype=wp.float64, device=device), x], block_dim=64, device=device)
        return x.numpy()

    mat = wp.array(mat_np, dtype=wp.float64, requires_grad=True, device=device)
    y = wp.array(y_np, dtype=wp.float64, requires_grad=True, device=device)
    x = wp.zeros((BATCH, *rhs), dtype=wp.float64, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(solve, dim=[BATCH], inputs=[mat, y, x], block_dim=64, device=device)
    tape.backward(grads={x: wp.array(g, dtype=wp.float64, device=device)})
    read = np.triu(np.ones((m, m), bool)) if op == "tile_upper_solve" else np.tril(np.ones((m, m), bool))
    assert np.all(mat.grad.numpy()[:, ~read] == 0.0)
    _fd_check(forward, [mat_np, y_np], [mat.grad.numpy(), y.grad.numpy()], g,
              mask=[np.broadcast_to(read, mat_np.shape), np.ones(y_np.shape, bool)])


def test_solve_rejects_mismatched_shapes_and_dtypes() -> None:
    """A right-hand side whose length differs from the matrix, or of another dtype, is refused at the call."""

    @wp.kernel(module="tile_solve_bad1")
    def bad_len(mat: wp.array2d(dtype=float), y: wp.array(dtype=float)):
        t = wp.tile_lower_solve(wp.tile_load(mat, shape=(4, 4)), wp.tile_load(y, shape=3))
        wp.tile_store(y, t)

    @wp.kernel(module="tile_solve_bad2")
    def bad_dtype(mat: wp.array2d(dtype=float), y: wp.array(dtype=wp.float64)):
        t = wp.tile_upper_solve(wp.tile_load(mat, shape=(4, 4)), wp.tile_load(y, shape=4))
        wp.tile_store(y, t)

    m = wp.zeros((4, 4), dtype=float)
    with pytest.raises(CodegenTypeError, match=r"'y' has shape \(3,\), but the matrix has shape \(4, 4\)"):
        wp.launch_tiled(bad_len, dim=[1], inputs=[m, wp.zeros(4, dtype=float)], block_dim=64)
    with pytest.raises(CodegenTypeError, match="'z' holds float64 but the matrix holds float32"):
        wp.launch_tiled(bad_dtype, dim=[1], inputs=[m, wp.zeros(4, dtype=wp.float64)], block_dim=64)


def test_matmul_precision_argument() -> None:
    """precision='tf32' computes in float32 on the CPU; it is refused for other dtypes and unknown strings."""

    @wp.kernel(module="tile_mm_tf32")
    def tf32(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        ta = wp.tile_load(a, shape=(3, 3))
        wp.tile_store(c, wp.tile_matmul(ta, ta, precision="tf32"))

    @wp.kernel(module="tile_mm_tf32_bad")
    def tf32_double(a: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64)):
        ta = wp.tile_load(a, shape=(3, 3))
        wp.tile_store(c, wp.tile_matmul(ta, ta, precision="tf32"))

    @wp.kernel(module="tile_mm_prec_bad")
    def unknown(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        ta = wp.tile_load(a, shape=(3, 3))
        wp.tile_store(c, wp.tile_matmul(ta, ta, precision="fp8"))

    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    c = wp.zeros((3, 3), dtype=float)
    wp.launch_tiled(tf32, dim=[1], inputs=[wp.array(x), c], block_dim=64)
    assert np.allclose(c.numpy(), x @ x)
    d = wp.zeros((3, 3), dtype=wp.float64)
    with pytest.raises(TypeError, match="tf32"):
        wp.launch_tiled(tf32_double, dim=[1], inputs=[d, d], block_dim=64)
    with pytest.raises(CodegenTypeError, match="precision must be"):
        wp.launch_tiled(unknown, dim=[1], inputs=[c, c], block_dim=64)
