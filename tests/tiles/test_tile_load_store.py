"""Tile loads, stores and atomic adds against NumPy: odd shapes, edges outside the array, float16/32/64.

Blocks tile an array of prime extents with tiles that do not divide them, so the last tiles of every row and column
hang over the edge: loads there read zeros and stores skip those elements, as the reference documents.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

TM, TN = 4, 3  # tile shape; the arrays are 13 x 7


def _make_copy(dtype):
    @wp.kernel(module=f"tiles_copy_{dtype.__name__}")
    def copy_scaled(a: wp.array2d(dtype=dtype), out: wp.array2d(dtype=dtype), sums: wp.array2d(dtype=dtype)):
        i, j, _ = wp.tid()
        t = wp.tile_load(a, shape=(TM, TN), offset=(i * TM, j * TN))
        wp.tile_store(out, t * dtype(2.0), offset=(i * TM, j * TN))
        sums[i, j] = wp.tile_sum(t)[0]

    return copy_scaled


copy_f16 = _make_copy(wp.float16)
copy_f32 = _make_copy(wp.float32)
copy_f64 = _make_copy(wp.float64)
COPY = {np.float16: copy_f16, np.float32: copy_f32, np.float64: copy_f64}


@pytest.mark.parametrize("np_dtype", [np.float16, np.float32, np.float64])
def test_load_store_with_edges(np_dtype):
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (13, 7)).astype(np_dtype)
    gm, gn = -(-13 // TM), -(-7 // TN)
    a = wp.array(A)
    out = wp.full((13, 7), 7.0, dtype=wp.dtype_from_numpy(np_dtype))
    sums = wp.zeros((gm, gn), dtype=wp.dtype_from_numpy(np_dtype))
    wp.launch_tiled(COPY[np_dtype], dim=[gm, gn], inputs=[a, out, sums], block_dim=32)
    np.testing.assert_array_equal(out.numpy(), (A * np_dtype(2)).astype(np_dtype))
    ref = np.array([[A[i * TM:(i + 1) * TM, j * TN:(j + 1) * TN].astype(np.float64).sum() for j in range(gn)]
                    for i in range(gm)])
    tol = 2e-2 if np_dtype == np.float16 else 1e-6
    np.testing.assert_allclose(sums.numpy().astype(np.float64), ref, rtol=tol, atol=tol)


@wp.kernel
def window_1d(a: wp.array(dtype=float), off: int, out: wp.array(dtype=float), first: wp.array(dtype=float)):
    i, _ = wp.tid()
    t = wp.tile_load(a, shape=5, offset=off + i * 5)
    wp.tile_store(out, t, offset=i * 5)
    first[i] = t[0]


@pytest.mark.parametrize("off", [-3, 0, 9])
def test_1d_windows_outside_the_array_read_zero(off):
    A = np.arange(1, 12, dtype=np.float32)  # 11 elements
    out = wp.zeros(15, dtype=float)
    first = wp.zeros(3, dtype=float)
    wp.launch_tiled(window_1d, dim=3, inputs=[wp.array(A), off, out, first], block_dim=16)
    padded = np.zeros(40, np.float32)
    padded[10:21] = A
    ref = padded[10 + off:10 + off + 15]
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(first.numpy(), ref[::5])


@wp.kernel
def single_element(a: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i, _ = wp.tid()
    t = wp.tile_load(a, shape=(1, 1, 1), offset=(i, 0, 0))
    wp.tile_store(out, t + t, offset=(i, 0, 0))


def test_three_dim_tiles_of_one_element():
    A = np.arange(2 * 2 * 3, dtype=np.float32).reshape(2, 2, 3) + 1
    out = wp.zeros((2, 2, 3), dtype=float)
    wp.launch_tiled(single_element, dim=2, inputs=[wp.array(A), out], block_dim=8)
    ref = np.zeros_like(A)
    ref[:, 0, 0] = 2 * A[:, 0, 0]
    np.testing.assert_array_equal(out.numpy(), ref)


@wp.kernel
def row_of_view(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, _ = wp.tid()
    t = wp.tile_load(a[i], shape=7)  # a sub-array of one row, as reference programs write it
    wp.tile_store(out[i], wp.tile_scan_inclusive(t))


def test_load_from_array_views():
    A = np.random.default_rng(2).uniform(size=(5, 7)).astype(np.float32)
    out = wp.zeros((5, 7), dtype=float)
    wp.launch_tiled(row_of_view, dim=5, inputs=[wp.array(A), out], block_dim=64)
    np.testing.assert_allclose(out.numpy(), np.cumsum(A, axis=1), rtol=1e-6)


@wp.kernel
def accumulate(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float), old: wp.array2d(dtype=float)):
    i, _ = wp.tid()
    t = wp.tile_load(src, shape=(2, 3), offset=(i, 1))
    prev = wp.tile_atomic_add(dst, t, offset=(0, 1))
    wp.tile_store(old, prev, offset=(2 * i, 0))


def test_atomic_add_of_overlapping_windows():
    S = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    dst = wp.zeros((2, 3), dtype=float)
    old = wp.zeros((4, 3), dtype=float)
    wp.launch_tiled(accumulate, dim=2, inputs=[wp.array(S), dst, old], block_dim=32)
    ref = np.zeros((2, 3), np.float32)
    for i in range(2):
        win = np.zeros((2, 3), np.float32)
        part = S[i:i + 2, 1:4]
        win[:part.shape[0], :part.shape[1]] = part
        ref[:, 1:] += win[:, :2]  # the window at column 1 of a 3-column array keeps its first 2 columns
    np.testing.assert_array_equal(dst.numpy(), ref)
    olds = old.numpy().reshape(2, 2, 3)
    assert np.all(olds[:, :, 2] == 0)  # outside the array: nothing added, old value 0
    assert sorted([olds[0, 0, 0], olds[1, 0, 0]]) == [0.0, S[0, 1]] or sorted([olds[0, 0, 0], olds[1, 0, 0]]) == [
        0.0, S[1, 1]]


@wp.kernel
def gather_scatter(a: wp.array2d(dtype=float), idx: wp.array(dtype=int), out: wp.array2d(dtype=float),
                   acc: wp.array2d(dtype=float)):
    _i, _ = wp.tid()
    ind = wp.tile_load(idx, shape=3)
    rows = wp.tile_load_indexed(a, indices=ind, shape=(3, 4), offset=(0, 1), axis=0)  # rows idx, columns 1..4
    wp.tile_store_indexed(out, ind, rows * 2.0, offset=(0, 0), axis=0)
    wp.tile_atomic_add_indexed(acc, wp.tile_arange(4, dtype=int), wp.tile_transpose(rows), axis=0)


def test_indexed_loads_stores_and_atomic_adds():
    A = np.arange(30, dtype=np.float32).reshape(5, 6)
    idx = np.array([4, 0, 7], dtype=np.int32)  # 7 is outside: reads zero, its store is skipped
    out = wp.zeros((5, 4), dtype=float)
    acc = wp.zeros((4, 3), dtype=float)
    wp.launch_tiled(gather_scatter, dim=1, inputs=[wp.array(A), wp.array(idx), out, acc], block_dim=8)
    rows = np.zeros((3, 4), np.float32)
    rows[0], rows[1] = A[4, 1:5], A[0, 1:5]
    ref = np.zeros((5, 4), np.float32)
    ref[4], ref[0] = 2 * rows[0], 2 * rows[1]
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(acc.numpy(), rows.T)
