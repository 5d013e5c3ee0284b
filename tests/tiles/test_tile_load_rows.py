"""Tile loads and stores by rows: windows inside the array, hanging over its edges, and sources whose last axis is
dense or strided (transposed and stepped views), float16/32/64, against NumPy; a product of loaded tiles with its
gradient; tiles read from a local while it is being reassigned.

A load of a window whose rows are contiguous in the array copies each row in one loop (and fills no zeros first when
the window lies inside the array); the other layouts go element by element. Both must give the same values.
"""

# No `from __future__ import annotations`: kernel annotations name the closure's dtype, evaluated at definition.
import numpy as np
import pytest

import treadle as wp

TM, TN = 5, 7  # odd tile shape


def _window(A: np.ndarray, r0: int, c0: int, m: int, n: int) -> np.ndarray:
    """The (m, n) window of A at (r0, c0), zeros outside A."""
    out = np.zeros((m, n), dtype=A.dtype)
    for i in range(m):
        for j in range(n):
            r, c = r0 + i, c0 + j
            if 0 <= r < A.shape[0] and 0 <= c < A.shape[1]:
                out[i, j] = A[r, c]
    return out


def _make(dtype):
    @wp.kernel(module=f"tiles_rows_{dtype.__name__}")
    def copy_window(a: wp.array2d(dtype=dtype), out: wp.array3d(dtype=dtype), r0: int, c0: int):
        i, _ = wp.tid()
        t = wp.tile_load(a, shape=(TM, TN), offset=(r0 + i, c0 - i))
        wp.tile_store(out[i], t)

    @wp.kernel(module=f"tiles_rows_{dtype.__name__}")
    def store_window(t_src: wp.array2d(dtype=dtype), out: wp.array2d(dtype=dtype), r0: int, c0: int):
        _i, _ = wp.tid()
        t = wp.tile_load(t_src, shape=(TM, TN))
        wp.tile_store(out, t, offset=(r0, c0))

    return copy_window, store_window


KERNELS = {np.float16: _make(wp.float16), np.float32: _make(wp.float32), np.float64: _make(wp.float64)}
DTYPES = [np.float16, np.float32, np.float64]
# window origins: inside, over the right/bottom edges, before the start, wholly outside
ORIGINS = [(0, 0), (3, 2), (9, 8), (-2, -3), (-4, 12), (20, 0), (0, -7)]


def _sources(np_dtype):
    """Arrays of 13 x 11 elements: dense, transposed (last stride 13 elements), stepped along both axes."""
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 1, (13, 11)).astype(np_dtype)
    dense = wp.array(base)
    big = wp.array(rng.uniform(-1, 1, (11, 13)).astype(np_dtype))
    transposed = big.transpose()  # shape (13, 11), strided last axis
    wide = wp.array(rng.uniform(-1, 1, (26, 33)).astype(np_dtype))
    stepped = wide[::2, ::3]  # (13, 11), strides of 2 rows and 3 elements
    rows = wp.array(rng.uniform(-1, 1, (13, 20)).astype(np_dtype))[:, 4:15]  # dense rows, longer row stride
    return {"dense": dense, "transposed": transposed, "stepped": stepped, "rows": rows}


@pytest.mark.parametrize("np_dtype", DTYPES)
@pytest.mark.parametrize("kind", ["dense", "transposed", "stepped", "rows"])
def test_loads_match_numpy_windows(np_dtype, kind):
    copy_window, _ = KERNELS[np_dtype]
    src = _sources(np_dtype)[kind]
    A = src.numpy()
    assert A.shape == (13, 11)
    nb = 3
    for r0, c0 in ORIGINS:
        out = wp.full((nb, TM, TN), 9.0, dtype=wp.dtype_from_numpy(np_dtype))
        wp.launch_tiled(copy_window, dim=nb, inputs=[src, out, r0, c0], block_dim=32)
        got = out.numpy()
        for i in range(nb):
            np.testing.assert_array_equal(got[i], _window(A, r0 + i, c0 - i, TM, TN), err_msg=f"{kind} {r0},{c0}")


@pytest.mark.parametrize("np_dtype", DTYPES)
@pytest.mark.parametrize("kind", ["dense", "transposed", "stepped", "rows"])
def test_stores_skip_what_lies_outside(np_dtype, kind):
    _, store_window = KERNELS[np_dtype]
    T = np.random.default_rng(4).uniform(-1, 1, (TM, TN)).astype(np_dtype)
    for r0, c0 in ORIGINS:
        dst = _sources(np_dtype)[kind]
        want = dst.numpy().copy()
        for i in range(TM):
            for j in range(TN):
                r, c = r0 + i, c0 + j
                if 0 <= r < 13 and 0 <= c < 11:
                    want[r, c] = T[i, j]
        wp.launch_tiled(store_window, dim=1, inputs=[wp.array(T), dst, r0, c0], block_dim=32)
        np.testing.assert_array_equal(dst.numpy(), want, err_msg=f"{kind} {r0},{c0}")


M, K, N = 7, 9, 5


def _make_mm(dtype):
    @wp.kernel(module=f"tiles_rows_mm_{dtype.__name__}")
    def mm(a: wp.array3d(dtype=dtype), b: wp.array3d(dtype=dtype), c: wp.array3d(dtype=dtype)):
        i, _ = wp.tid()
        wp.tile_store(c[i], wp.tile_matmul(wp.tile_load(a[i], shape=(M, K)), wp.tile_load(b[i], shape=(K, N))))

    return mm


MM = {np.float16: _make_mm(wp.float16), np.float32: _make_mm(wp.float32), np.float64: _make_mm(wp.float64)}


@pytest.mark.parametrize("np_dtype", DTYPES)
@pytest.mark.parametrize("layout", ["dense", "strided"])
def test_batched_product_of_loaded_tiles(np_dtype, layout):
    rng = np.random.default_rng(5)
    nb = 6
    A = rng.uniform(-1, 1, (nb, M, K))
    B = rng.uniform(-1, 1, (nb, K, N))
    if layout == "dense":
        a, b = wp.array(A.astype(np_dtype)), wp.array(B.astype(np_dtype))
    else:  # transposed storage: the tiles' rows are strided in memory
        a = wp.array(np.ascontiguousarray(A.transpose(0, 2, 1)).astype(np_dtype)).transpose((0, 2, 1))
        b = wp.array(np.ascontiguousarray(B.transpose(0, 2, 1)).astype(np_dtype)).transpose((0, 2, 1))
    c = wp.zeros((nb, M, N), dtype=wp.dtype_from_numpy(np_dtype))
    wp.launch_tiled(MM[np_dtype], dim=nb, inputs=[a, b, c], block_dim=64)
    want = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
    tol = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}[np_dtype]
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=tol, atol=tol)


def test_product_gradient_through_row_loads_and_stores():
    rng = np.random.default_rng(6)
    nb = 3
    A = rng.uniform(-1, 1, (nb, M, K))
    B = rng.uniform(-1, 1, (nb, K, N))
    W = rng.uniform(-1, 1, (nb, M, N))
    a = wp.array(A, dtype=wp.float64, requires_grad=True)
    b = wp.array(B, dtype=wp.float64, requires_grad=True)
    c = wp.zeros((nb, M, N), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(MM[np.float64], dim=nb, inputs=[a, b, c], block_dim=64)
    tape.backward(grads={c: wp.array(W, dtype=wp.float64)})
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), W @ B.transpose(0, 2, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), A.transpose(0, 2, 1) @ W, rtol=1e-12, atol=1e-12)


@wp.kernel
def reassigned(a: wp.array2d(dtype=float), out: wp.array3d(dtype=float)):
    _i, _ = wp.tid()
    t = wp.tile_load(a, shape=(4, 4))
    u = t
    for k in range(3):
        prev = t
        t = t * 2.0 + u
        wp.tile_store(out[k], prev + t)
    u = t * 0.0
    wp.tile_store(out[3], t - u)


def test_tile_values_read_from_locals_keep_their_value():
    """Values read from a tile local stay what they were when the local is assigned again afterwards."""
    A = np.random.default_rng(7).uniform(-1, 1, (4, 4)).astype(np.float32)
    out = wp.zeros((4, 4, 4), dtype=float)
    wp.launch_tiled(reassigned, dim=1, inputs=[wp.array(A), out], block_dim=16)
    t, u = A.astype(np.float64), A.astype(np.float64)
    want = []
    for _ in range(3):
        prev = t
        t = t * 2.0 + u
        want.append(prev + t)
    want.append(t)
    np.testing.assert_allclose(out.numpy(), np.array(want), rtol=1e-6)
