"""Helpers of the sparse-matrix tests: random triplets, dense and SciPy references."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp


def block_type(shape: tuple[int, int], scalar: Any) -> Any:
    """The block type the tests use for a block shape: the scalar itself for 1x1."""
    if tuple(shape) == (1, 1):
        return scalar
    return wp.types.matrix(shape=shape, dtype=scalar)


def np_dtype(scalar: Any) -> Any:
    return np.float64 if scalar == wp.float64 else np.float32


def random_triplets(rng: np.random.Generator, nrow: int, ncol: int, n: int, shape: tuple[int, int],
                    empty_rows: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` random triplets (with duplicates), none in ``empty_rows``."""
    rows = rng.integers(0, nrow, n).astype(np.int32)
    for r in empty_rows:
        rows[rows == r] = (r + 1) % nrow
    cols = rng.integers(0, ncol, n).astype(np.int32)
    vals = rng.standard_normal((n, *shape))
    return rows, cols, vals


def dense_from_triplets(nrow: int, ncol: int, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray,
                        vals: np.ndarray) -> np.ndarray:
    """The dense matrix of summed triplets (a float64 reference, via SciPy's COO sum of duplicates)."""
    sp = pytest.importorskip("scipy.sparse")
    r, c = shape
    bi, bj = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    rr = (rows[:, None, None] * r + bi[None]).ravel()
    cc = (cols[:, None, None] * c + bj[None]).ravel()
    vv = np.asarray(vals, dtype=np.float64).reshape(len(rows), r, c).ravel()
    return sp.coo_matrix((vv, (rr, cc)), shape=(nrow * r, ncol * c)).toarray()


def dense(m: Any) -> np.ndarray:
    """A matrix (or expression) as a dense float64 array, from its stored active blocks."""
    if not isinstance(m, wp.sparse.BsrMatrix):
        m = m.eval()
    r, c = m.block_shape
    out = np.zeros((m.nrow * r, m.ncol * c))
    offsets = m.offsets.numpy()
    counts = None if m.row_counts is None else m.row_counts.numpy()
    cols = m.columns.numpy()
    vals = m.values.numpy().reshape(-1, r, c) if m.values.shape[0] else np.zeros((0, r, c))
    for row in range(m.nrow):
        beg = offsets[row]
        end = offsets[row + 1] if counts is None else beg + counts[row]
        for b in range(beg, end):
            out[row * r:(row + 1) * r, cols[b] * c:(cols[b] + 1) * c] += vals[b]
    return out


def active_columns(m: Any) -> list[list[int]]:
    """The active columns of each row, in storage order."""
    offsets = m.offsets.numpy()
    counts = None if m.row_counts is None else m.row_counts.numpy()
    cols = m.columns.numpy()
    out = []
    for row in range(m.nrow):
        beg = offsets[row]
        end = offsets[row + 1] if counts is None else beg + counts[row]
        out.append([int(c) for c in cols[beg:end]])
    return out


def random_bsr(rng: np.random.Generator, nrow: int, ncol: int, n: int, shape: tuple[int, int], scalar: Any,
               device: Any = "cpu") -> tuple[Any, np.ndarray]:
    """A random compact matrix and its dense reference."""
    rows, cols, vals = random_triplets(rng, nrow, ncol, n, shape)
    vals = vals.astype(np_dtype(scalar))
    A = wp.sparse.bsr_zeros(nrow, ncol, block_type(shape, scalar), device=device)
    wp.sparse.bsr_set_from_triplets(A, wp.array(rows, dtype=int, device=device),
                                    wp.array(cols, dtype=int, device=device),
                                    wp.array(vals, dtype=scalar, device=device))
    return A, dense_from_triplets(nrow, ncol, shape, rows, cols, vals)
