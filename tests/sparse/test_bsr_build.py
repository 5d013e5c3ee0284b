"""Building BSR matrices: triplets (against SciPy's COO sums), compression, triplet maps, topologies, gradients."""

from __future__ import annotations

import numpy as np
import pytest
from sparse_helpers import active_columns, block_type, dense, dense_from_triplets, np_dtype, random_triplets

import treadle as wp

sps = pytest.importorskip("scipy.sparse")


def _arrays(rows, cols, vals, scalar, device):
    return (wp.array(rows, dtype=int, device=device), wp.array(cols, dtype=int, device=device),
            wp.array(vals.astype(np_dtype(scalar)), dtype=scalar, device=device))


@pytest.mark.parametrize("shape,scalar", [((1, 1), wp.float32), ((3, 3), wp.float64), ((2, 3), wp.float32),
                                          ((3, 1), wp.float64)])
def test_from_triplets_matches_scipy(device, shape, scalar):
    rng = np.random.default_rng(7)
    nrow, ncol = 9, 5  # rectangular, empty rows, many duplicates
    rows, cols, vals = random_triplets(rng, nrow, ncol, 120, shape, empty_rows=(2, 6))
    r, c, v = _arrays(rows, cols, vals, scalar, device)
    A = wp.sparse.bsr_zeros(nrow, ncol, block_type(shape, scalar), device=device)
    wp.sparse.bsr_set_from_triplets(A, r, c, v)
    ref = dense_from_triplets(nrow, ncol, shape, rows, cols, vals.astype(np_dtype(scalar)))
    tol = 1e-5 if scalar == wp.float32 else 1e-12
    np.testing.assert_allclose(dense(A), ref, rtol=tol, atol=tol)
    # compact, sorted, one block per distinct coordinate; nnz stays the triplet count until synced
    assert A.row_counts is None and A.nnz == len(rows)
    distinct = sps.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(nrow, ncol)).tocsr()
    distinct.sum_duplicates()
    assert A.nnz_sync() == distinct.nnz
    np.testing.assert_array_equal(A.offsets.numpy(), distinct.indptr)
    np.testing.assert_array_equal(A.columns.numpy()[:A.nnz], distinct.indices)
    assert active_columns(A)[2] == [] and active_columns(A)[6] == []
    assert A.shape == (nrow * shape[0], ncol * shape[1]) and A.block_shape == shape
    assert A.block_size == shape[0] * shape[1] and A.scalar_type == scalar


def test_three_d_scalar_values_and_uncompress_rows(device):
    rows = wp.array([1, 0, 1, 1], dtype=int, device=device)
    cols = wp.array([2, 0, 2, 0], dtype=int, device=device)
    vals = np.arange(4 * 6, dtype=np.float32).reshape(4, 2, 3)
    A = wp.sparse.bsr_from_triplets(2, 3, rows, cols, wp.array(vals, dtype=wp.float32, device=device))
    assert A.block_shape == (2, 3) and A.nnz == 4
    np.testing.assert_array_equal(A.offsets.numpy(), [0, 1, 3])
    np.testing.assert_array_equal(A.uncompress_rows().numpy(), [0, 1, 1, -1])  # the stale slot past nnz
    assert A.nnz_sync() == 3
    np.testing.assert_array_equal(A.uncompress_rows().numpy(), [0, 1, 1])
    np.testing.assert_allclose(A.values.numpy()[2], vals[0] + vals[2])
    np.testing.assert_allclose(A.scalar_values.numpy()[:3].sum(), vals.sum())


def test_prune_and_out_of_range_and_count(device):
    rows = wp.array([0, 1, 2, 5, 1, -1], dtype=int, device=device)
    cols = wp.array([0, 1, 2, 0, 9, 0], dtype=int, device=device)
    vals = wp.array([1.0, 0.0, 3.0, 4.0, 5.0, 6.0], dtype=float, device=device)
    A = wp.sparse.bsr_from_triplets(3, 3, rows, cols, vals)  # (1,1) is zero; (5,0), (1,9), (-1,0) out of range
    assert A.nnz_sync() == 2
    assert active_columns(A) == [[0], [], [2]]
    B = wp.sparse.bsr_from_triplets(3, 3, rows, cols, vals, prune_numerical_zeros=False)
    assert active_columns(B) == [[0], [1], [2]]
    C = wp.sparse.bsr_zeros(3, 3, float, device=device)
    wp.sparse.bsr_set_from_triplets(C, rows, cols, vals, count=wp.array([2], dtype=int, device=device),
                                    prune_numerical_zeros=False)
    assert active_columns(C) == [[0], [1], []]
    D = wp.sparse.bsr_zeros(3, 3, float, device=device)
    wp.sparse.bsr_set_from_triplets(D, rows, cols, values=None)  # topology only
    assert active_columns(D) == [[0], [1], [2]]
    E = wp.sparse.bsr_zeros(3, 3, float, device=device)
    wp.sparse.bsr_set_from_triplets(E, rows[:0], cols[:0], vals[:0])
    assert E.nnz == 0 and E.nnz_sync() == 0


def test_duplicates_sum_in_input_order(device):
    # many duplicates of one coordinate (a long row takes the merge-sort path): the sum is the sequential one
    rng = np.random.default_rng(3)
    n = 500
    vals = rng.standard_normal(n).astype(np.float32)
    rows = np.zeros(n, dtype=np.int32)
    cols = (np.arange(n) % 7).astype(np.int32)
    A = wp.sparse.bsr_from_triplets(1, 7, wp.array(rows, dtype=int, device=device),
                                    wp.array(cols, dtype=int, device=device),
                                    wp.array(vals, dtype=wp.float32, device=device))
    A.nnz_sync()
    got = A.values.numpy()[:7]
    for c in range(7):
        s = np.float32(0.0)
        for v in vals[cols == c]:
            s = np.float32(s + v)
        assert got[c] == s


@pytest.mark.parametrize("chunks", [0, 1, 3])
def test_grouping_strategies_agree(chunks):
    # the atomic scatter (GPUs) and the chunked counting sort (CPU) build the same matrix
    from treadle._src.sparse.topology import _group_triplets, coalesce

    rng = np.random.default_rng(11)
    rows, cols, _ = random_triplets(rng, 40, 30, 3000, (1, 1))
    r, c = wp.array(rows, dtype=int), wp.array(cols, dtype=int)
    e = _group_triplets(r, c, len(rows), 40, 30, chunks=chunks)
    offsets = wp.empty(41, dtype=int)
    columns = wp.empty(len(rows), dtype=int)
    runs = coalesce(e, dest_columns=columns, compact_offsets=offsets)
    ref = sps.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(40, 30)).tocsr()
    np.testing.assert_array_equal(offsets.numpy(), ref.indptr)
    np.testing.assert_array_equal(columns.numpy()[:ref.nnz], ref.indices)
    # every block's run lists its triplets in input order
    srcs = runs.srcs.numpy()
    for u in range(ref.nnz):
        run = srcs[runs.run_beg.numpy()[u]:runs.run_end.numpy()[u]]
        assert (np.diff(run) > 0).all()


def test_masked_and_padded_triplets(device):
    rows = wp.array([0, 0, 1, 1, 1], dtype=int, device=device)
    cols = wp.array([0, 2, 1, 2, 1], dtype=int, device=device)
    vals = wp.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=float, device=device)
    padded = wp.sparse.bsr_zeros(2, 3, float, device=device, row_capacity=3)
    assert padded.nnz == 6 and padded.row_counts is not None
    wp.sparse.bsr_set_from_triplets(padded, rows, cols, vals, topology="padded")
    np.testing.assert_array_equal(padded.offsets.numpy(), [0, 3, 6])
    np.testing.assert_array_equal(padded.row_counts.numpy(), [2, 2])
    assert active_columns(padded) == [[0, 2], [1, 2]]
    np.testing.assert_allclose(dense(padded), [[1, 0, 2], [0, 8, 4]])
    assert padded.status_sync() == wp.sparse.BSR_STATUS_SUCCESS
    small = wp.sparse.bsr_zeros(2, 3, float, device=device, row_capacity=1)
    wp.sparse.bsr_set_from_triplets(small, rows, cols, vals, topology="padded")
    assert small.status_sync() == wp.sparse.BSR_STATUS_ROW_CAPACITY_EXCEEDED
    assert small.status_message() == "row capacity exceeded"
    np.testing.assert_array_equal(small.row_counts.numpy(), [0, 0])  # rows that do not fit are left empty
    small.clear_status()
    assert small.status_sync() == wp.sparse.BSR_STATUS_SUCCESS
    masked = wp.sparse.bsr_diag(wp.array([9.0, 9.0], dtype=float, device=device), rows_of_blocks=2,
                                cols_of_blocks=3)
    wp.sparse.bsr_set_from_triplets(masked, rows, cols, vals, topology="masked")
    np.testing.assert_allclose(dense(masked), [[1, 0, 0], [0, 8, 0]])  # only the existing diagonal blocks


def test_per_row_capacity_and_set_zero(device):
    cap = wp.array([1, 0, 3], dtype=int, device=device)
    A = wp.sparse.bsr_zeros(3, 4, float, device=device, row_capacity=cap)
    np.testing.assert_array_equal(A.offsets.numpy(), [0, 1, 1, 4])
    assert A.nnz == 4
    wp.sparse.bsr_set_from_triplets(A, wp.array([0, 2, 2], dtype=int, device=device),
                                    wp.array([0, 3, 1], dtype=int, device=device),
                                    wp.array([1.0, 2.0, 3.0], dtype=float, device=device), topology="padded")
    assert active_columns(A) == [[0], [], [1, 3]]
    wp.sparse.bsr_set_zero(A, topology="padded")
    np.testing.assert_array_equal(A.row_counts.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(A.offsets.numpy(), [0, 1, 1, 4])
    wp.sparse.bsr_set_zero(A, topology="padded", row_capacity=wp.array([0, 2, 1], dtype=int, device=device))
    assert A.nnz_sync() == 3
    wp.sparse.bsr_set_zero(A, rows_of_blocks=5, cols_of_blocks=2)
    assert (A.nrow, A.ncol, A.nnz) == (5, 2, 0) and A.row_counts is None
    np.testing.assert_array_equal(A.offsets.numpy(), np.zeros(6))
    B = wp.sparse.bsr_from_triplets(2, 2, wp.array([0, 1], dtype=int, device=device),
                                    wp.array([1, 0], dtype=int, device=device),
                                    wp.array([3.0, 4.0], dtype=float, device=device))
    wp.sparse.bsr_set_zero(B, topology="masked")
    assert active_columns(B) == [[1], [0]] and not dense(B).any()


def test_notify_nnz_changed(device):
    A = wp.sparse.bsr_zeros(3, 4, float, device=device)
    A.notify_nnz_changed(10)
    assert A.nnz == 10 and A.columns.shape[0] >= 10 and A.values.shape[0] >= 10
    assert A.nnz_sync() == 0
    A.offsets.assign(wp.array([0, 2, 3, 6], dtype=int, device=device))
    A.notify_nnz_changed()
    assert A.nnz == 6


def test_compress(device):
    A = wp.sparse.bsr_zeros(2, 3, float, device=device, row_capacity=wp.array([4, 3], dtype=int, device=device))
    A.row_counts = wp.array([4, 3], dtype=int, device=device)
    A.columns = wp.array([2, 0, 2, 1, 1, 2, 1], dtype=int, device=device)
    A.values = wp.array([5.0, 2.0, -1.0, 3.0, 4.0, 8.0, -4.0], dtype=float, device=device)
    wp.sparse.bsr_compress(A, topology="padded")
    # zero input blocks are pruned before summing: (1, 1) = 4 - 4 stays as an explicit zero block
    np.testing.assert_array_equal(A.row_counts.numpy(), [3, 2])
    assert active_columns(A) == [[0, 1, 2], [1, 2]]
    np.testing.assert_allclose(dense(A), [[2, 3, 4], [0, 0, 8]])
    B = wp.sparse.bsr_zeros(1, 3, float, device=device)
    B.nnz = 4
    B.offsets = wp.array([0, 4], dtype=int, device=device)
    B.columns = wp.array([1, 0, 1, 7], dtype=int, device=device)  # 7: out of range, ignored
    B.values = wp.array([1.0, 2.0, 3.0, 9.0], dtype=float, device=device)
    wp.sparse.bsr_compress(B, prune_numerical_zeros=False)
    assert B.row_counts is None and B.nnz_sync() == 2
    np.testing.assert_allclose(dense(B), [[2, 4, 0]])


def test_triplet_map(device):
    rng = np.random.default_rng(5)
    rows, cols, vals = random_triplets(rng, 6, 6, 60, (2, 2))
    r, c, v = _arrays(rows, cols, vals, wp.float64, device)
    A = wp.sparse.bsr_zeros(6, 6, wp.mat22d, device=device)
    m = wp.sparse.bsr_set_from_triplets(A, r, c, v, prune_numerical_zeros=False, build_mapping=True)
    assert isinstance(m, wp.sparse.BsrTripletMap) and m.capacity >= 60
    vals2 = rng.standard_normal(vals.shape)
    ref = dense_from_triplets(6, 6, (2, 2), rows, cols, vals2)
    for reduction in ("gather", "atomic"):
        wp.sparse.bsr_set_from_mapped_values(A, m, wp.array(vals2, dtype=wp.float64, device=device),
                                             reduction=reduction)
        np.testing.assert_allclose(dense(A), ref, atol=1e-12)
    m.validate(A)
    other = wp.sparse.bsr_zeros(6, 6, wp.mat22d, device=device)
    with pytest.raises(ValueError, match="topology changed"):
        wp.sparse.bsr_set_from_mapped_values(other, m, wp.array(vals2, dtype=wp.float64, device=device))
    m2 = wp.sparse.bsr_set_from_triplets(A, r, c, v, prune_numerical_zeros=False, build_mapping=m)
    assert m2 is m
    with pytest.raises(ValueError, match="build_mapping"):
        wp.sparse.bsr_set_from_triplets(A, r, c, v, build_mapping=True)  # pruning


def test_triplet_gradients(device):
    rows = wp.array([1, 0, 0, 1], dtype=int, device=device)
    cols = wp.array([0, 1, 0, 0], dtype=int, device=device)
    vals = wp.array(np.arange(4 * 9, dtype=np.float32).reshape(4, 3, 3), dtype=wp.mat33, device=device,
                    requires_grad=True)
    with wp.Tape() as tape:
        A = wp.sparse.bsr_from_triplets(2, 2, rows, cols, vals)
    assert A.nnz_sync() == 3 and A.requires_grad
    # blocks: (0,0) <- triplet 2, (0,1) <- triplet 1, (1,0) <- triplets 0 and 3
    A.values.grad[2:3].fill_(1.0)
    tape.backward()
    g = vals.grad.numpy()
    assert g[0].sum() == 9 and g[3].sum() == 9 and g[1].sum() == 0 and g[2].sum() == 0
    tape.zero()
    A.values.grad.zero_()
    A.values.grad[0:1].fill_(2.0)
    tape.backward()
    assert vals.grad.numpy()[2].sum() == 18 and vals.grad.numpy()[[0, 1, 3]].sum() == 0


def test_compress_gradient(device):
    vals = wp.array([1.0, 2.0, 3.0, 0.0], dtype=float, device=device, requires_grad=True)
    A = wp.sparse.bsr_zeros(1, 3, float, device=device)
    A.nnz = 4
    A.offsets = wp.array([0, 4], dtype=int, device=device)
    A.columns = wp.array([1, 0, 1, 2], dtype=int, device=device)
    A.values = vals
    with wp.Tape() as tape:
        wp.sparse.bsr_compress(A)
    assert A.nnz_sync() == 2
    A.values.grad[1:2].fill_(1.0)  # block (0, 1) = vals[0] + vals[2]
    tape.backward()
    np.testing.assert_array_equal(vals.grad.numpy(), [1.0, 0.0, 1.0, 0.0])


def test_graph_capture_replays_assembly_and_product():
    # a captured assembly and product rebuild the matrix from the triplet values each replay
    rows = wp.array([0, 1, 1, 2, 0], dtype=int)
    cols = wp.array([0, 1, 1, 2, 2], dtype=int)
    vals = wp.zeros(5, dtype=float)
    A = wp.sparse.bsr_zeros(3, 3, float)
    x = wp.array([1.0, 2.0, 3.0], dtype=float)
    y = wp.zeros(3, dtype=float)
    wp.sparse.bsr_set_from_triplets(A, rows, cols, vals, prune_numerical_zeros=False)  # load the kernels
    wp.sparse.bsr_mv(A, x, y)
    with wp.ScopedCapture(device="cpu") as capture:
        wp.sparse.bsr_set_from_triplets(A, rows, cols, vals, prune_numerical_zeros=False)
        wp.sparse.bsr_mv(A, x, y)
        with pytest.raises(NotImplementedError, match="topology update"):
            A.nnz_sync()
    for scale in (1.0, 2.0):
        vals.assign(np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32) * scale)
        wp.capture_launch(capture.graph)
        np.testing.assert_allclose(dense(A), scale * np.array([[1, 0, 5], [0, 5, 0], [0, 0, 4]]))
        np.testing.assert_allclose(y.numpy(), scale * np.array([16.0, 10.0, 12.0]))
