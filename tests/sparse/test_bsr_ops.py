"""Operations on BSR matrices against dense NumPy / SciPy references: products, sums, transposes, copies,
diagonals, expressions and operators, kernel-side lookups."""

from __future__ import annotations

import numpy as np
import pytest
from sparse_helpers import active_columns, block_type, dense, np_dtype, random_bsr

import treadle as wp
import treadle.sparse

pytest.importorskip("scipy.sparse")

#: the kernel-argument type of CSR float32 matrices (module level: kernels resolve annotations in module scope)
CSR_F32 = treadle.sparse.bsr_matrix_t(wp.float32)

SHAPES = [((1, 1), wp.float32), ((3, 3), wp.float64), ((1, 3), wp.float32), ((2, 3), wp.float64)]


def _tol(scalar):
    return 2e-4 if scalar == wp.float32 else 1e-11


def _vec(rng, n, length, scalar, device):
    v = rng.standard_normal((n, length)).astype(np_dtype(scalar))
    t = scalar if length == 1 else wp.types.vector(length, scalar)
    return wp.array(v[:, 0] if length == 1 else v, dtype=t, device=device), v.reshape(-1)


@pytest.mark.parametrize("shape,scalar", SHAPES)
def test_mv(device, shape, scalar):
    rng = np.random.default_rng(1)
    A, ref = random_bsr(rng, 5, 4, 25, shape, scalar, device)
    x, xn = _vec(rng, 4, shape[1], scalar, device)
    y, yn = _vec(rng, 5, shape[0], scalar, device)
    tol = _tol(scalar)
    wp.sparse.bsr_mv(A, x, y, alpha=-2.0, beta=0.5)
    np.testing.assert_allclose(y.numpy().reshape(-1), -2.0 * ref @ xn + 0.5 * yn, rtol=tol, atol=tol)
    z = A @ x
    np.testing.assert_allclose(z.numpy().reshape(-1), ref @ xn, rtol=tol, atol=tol)
    # transposed product, from the left operand of @ and through the flag
    w = y @ (A * 3.0)
    np.testing.assert_allclose(w.numpy().reshape(-1), 3.0 * ref.T @ y.numpy().reshape(-1), rtol=tol, atol=tol)
    t = wp.sparse.bsr_mv(A, y, transpose=True)
    np.testing.assert_allclose(t.numpy().reshape(-1), ref.T @ y.numpy().reshape(-1), rtol=tol, atol=tol)
    # beta = 0 never reads y (NaNs stay out)
    y.fill_(float("nan"))
    wp.sparse.bsr_mv(A, x, y, beta=0.0)
    assert np.isfinite(y.numpy()).all()


def test_mv_alias_flat_and_padded(device):
    rng = np.random.default_rng(2)
    A, ref = random_bsr(rng, 4, 4, 20, (2, 2), wp.float64, device)
    x = wp.array(rng.standard_normal((4, 2)), dtype=wp.vec2d, device=device)
    xn = x.numpy().reshape(-1).copy()
    wp.sparse.bsr_mv(A, x, x, alpha=1.0, beta=1.0)  # aliased operands
    np.testing.assert_allclose(x.numpy().reshape(-1), ref @ xn + xn)
    flat = wp.array(xn, dtype=wp.float64, device=device)  # a flat scalar vector of the full length
    np.testing.assert_allclose(wp.sparse.bsr_mv(A, flat).numpy().reshape(-1), ref @ xn)
    P = wp.sparse.bsr_zeros(4, 4, wp.mat22d, device=device, row_capacity=8)
    wp.sparse.bsr_assign(P, A, topology="padded")
    np.testing.assert_allclose(wp.sparse.bsr_mv(P, flat).numpy().reshape(-1), ref @ xn)


@pytest.mark.parametrize("shape,scalar", SHAPES)
def test_mm(device, shape, scalar):
    rng = np.random.default_rng(3)
    x, xr = random_bsr(rng, 4, 3, 10, shape, scalar, device)
    y, yr = random_bsr(rng, 3, 5, 10, shape[::-1], scalar, device)
    zshape = (shape[0], shape[0])
    z, zr = random_bsr(rng, 4, 5, 8, zshape, scalar, device)
    tol = _tol(scalar) * 10
    work = wp.sparse.bsr_mm_work_arrays()
    for alpha, beta in ((1.0, 0.0), (-1.0, 2.0), (0.5, -1.0)):
        ref = alpha * xr @ yr + beta * zr
        wp.sparse.bsr_mm(x, y, z, alpha=alpha, beta=beta, work_arrays=work)
        np.testing.assert_allclose(dense(z), ref, rtol=tol, atol=tol)
        zr = ref
    # a second product with the stored topology
    wp.sparse.bsr_mm(x, y, z, alpha=2.0, beta=0.0, work_arrays=work, reuse_topology=True)
    np.testing.assert_allclose(dense(z), 2.0 * xr @ yr, rtol=tol, atol=tol)
    # columns of every row sorted and distinct
    for cols in active_columns(z):
        assert cols == sorted(set(cols))
    P = x @ y
    np.testing.assert_allclose(dense(P), xr @ yr, rtol=tol, atol=tol)
    assert P.dtype == block_type(zshape, scalar) or wp.types.types_equal(P.dtype, block_type(zshape, scalar))


def test_mm_aliasing_masked_padded(device):
    rng = np.random.default_rng(4)
    A, ar = random_bsr(rng, 4, 4, 12, (2, 2), wp.float64, device)
    B, br = random_bsr(rng, 4, 4, 12, (2, 2), wp.float64, device)
    ref = 2.0 * ar @ br - br
    wp.sparse.bsr_mm(A, B, B, alpha=2.0, beta=-1.0)  # z aliases y
    np.testing.assert_allclose(dense(B), ref, atol=1e-11)
    ref = ar @ ar
    wp.sparse.bsr_mm(A, A, A)  # all three alias
    np.testing.assert_allclose(dense(A), ref, atol=1e-11)
    C, cr = random_bsr(rng, 4, 4, 12, (2, 2), wp.float64, device)
    D = wp.sparse.bsr_diag(rows_of_blocks=4, block_type=wp.mat22d, device=device)
    wp.sparse.bsr_mm(C, C, D, topology="masked")
    prod = cr @ cr
    mask = np.kron(np.eye(4), np.ones((2, 2)))
    np.testing.assert_allclose(dense(D), prod * mask, atol=1e-11)
    E = wp.sparse.bsr_zeros(4, 4, wp.mat22d, device=device, row_capacity=4)
    wp.sparse.bsr_mm(C, C, E, topology="padded")
    np.testing.assert_allclose(dense(E), prod, atol=1e-11)
    F = wp.sparse.bsr_zeros(4, 4, wp.mat22d, device=device, row_capacity=1)
    wp.sparse.bsr_mm(C, C, F, topology="padded")
    assert F.status_sync() == wp.sparse.BSR_STATUS_ROW_CAPACITY_EXCEEDED


def test_mm_max_new_nnz(device, capfd):
    ones = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=device)
    r = wp.array([0, 0, 1, 1], dtype=int, device=device)
    c = wp.array([0, 1, 0, 1], dtype=int, device=device)
    A = wp.sparse.bsr_from_triplets(2, 2, r, c, ones)
    C = wp.sparse.bsr_zeros(2, 2, float, device=device)
    wp.sparse.bsr_mm(A, A, C, max_new_nnz=4)
    assert C.nnz_sync() == 4
    capfd.readouterr()
    wp.sparse.bsr_mm(A, A, C, max_new_nnz=2)
    wp.synchronize()
    assert C.nnz_sync() == 2
    assert "max_new_nnz" in capfd.readouterr().out


@pytest.mark.parametrize("shape,scalar", SHAPES[:3])
def test_axpy(device, shape, scalar):
    rng = np.random.default_rng(5)
    x, xr = random_bsr(rng, 5, 4, 12, shape, scalar, device)
    y, yr = random_bsr(rng, 5, 4, 12, shape, scalar, device)
    tol = _tol(scalar)
    work = wp.sparse.bsr_axpy_work_arrays()
    for alpha, beta in ((-1.0, 2.0), (0.0, -1.0), (1.0, 0.0)):
        ref = alpha * xr + beta * yr
        wp.sparse.bsr_axpy(x, y, alpha, beta, work_arrays=work)
        np.testing.assert_allclose(dense(y), ref, rtol=tol, atol=tol)
        yr = ref
    # aliasing and the operators
    y += y * 2.0
    np.testing.assert_allclose(dense(y), 3.0 * yr, rtol=tol, atol=tol)
    s = x + y
    np.testing.assert_allclose(dense(s), xr + 3.0 * yr, rtol=tol, atol=tol)
    d = x - 2.0 * y
    np.testing.assert_allclose(dense(d), xr - 6.0 * yr, rtol=tol, atol=tol)
    y -= x
    np.testing.assert_allclose(dense(y), 3.0 * yr - xr, rtol=tol, atol=tol)


def test_axpy_masked_padded(device):
    x = wp.sparse.bsr_from_triplets(2, 3, wp.array([0, 1, 1], dtype=int, device=device),
                                    wp.array([1, 0, 2], dtype=int, device=device),
                                    wp.array([5.0, 7.0, 11.0], dtype=float, device=device))
    y = wp.sparse.bsr_zeros(2, 3, float, device=device, row_capacity=3)
    wp.sparse.bsr_set_from_triplets(y, wp.array([0, 0, 1, 1], dtype=int, device=device),
                                    wp.array([0, 2, 1, 2], dtype=int, device=device),
                                    wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=device), topology="padded")
    wp.sparse.bsr_axpy(x, y, alpha=2.0, beta=3.0, topology="padded")
    np.testing.assert_allclose(dense(y), [[3, 10, 6], [14, 9, 34]])
    m = wp.sparse.bsr_from_triplets(2, 3, wp.array([0], dtype=int, device=device),
                                    wp.array([1], dtype=int, device=device),
                                    wp.array([1.0], dtype=float, device=device))
    wp.sparse.bsr_axpy(x, m, topology="masked")
    np.testing.assert_allclose(dense(m), [[0, 6, 0], [0, 0, 0]])  # x's other blocks are not in m


@pytest.mark.parametrize("shape,scalar", SHAPES)
def test_transpose(device, shape, scalar):
    rng = np.random.default_rng(6)
    A, ref = random_bsr(rng, 4, 5, 12, shape, scalar, device)
    tol = _tol(scalar)
    T = wp.sparse.bsr_transposed(A)
    assert T.block_shape == shape[::-1] and (T.nrow, T.ncol) == (5, 4)
    np.testing.assert_allclose(dense(T), ref.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(dense((2.0 * A).transpose().eval()), 2.0 * ref.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(dense(A.transpose()), ref.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(dense(wp.sparse.bsr_transposed((-A).transpose())), -ref, rtol=tol, atol=tol)
    # masked transpose keeps the destination's blocks
    M = wp.sparse.bsr_copy(T)
    wp.sparse.bsr_set_transpose(M, 3.0 * A, topology="masked")
    np.testing.assert_allclose(dense(M), 3.0 * ref.T, rtol=tol, atol=tol)


@pytest.mark.parametrize("new_shape", [(2, 2), (1, 1), (4, 4), (8, 8), (4, 1), (2, 4)])
def test_copy_reshape(device, new_shape):
    rng = np.random.default_rng(8)
    A, ref = random_bsr(rng, 4, 8, 20, (4, 2), wp.float64, device)
    B = wp.sparse.bsr_copy(A, block_shape=new_shape)
    assert B.block_shape == new_shape
    np.testing.assert_allclose(dense(B), ref)
    if new_shape == (1, 1):
        assert B.dtype == wp.float64  # 1x1 blocks make a CSR matrix


def test_copy_cast_assign_and_padded(device):
    rng = np.random.default_rng(9)
    A, ref = random_bsr(rng, 5, 5, 15, (2, 2), wp.float32, device)
    B = wp.sparse.bsr_copy(A, scalar_type=wp.float64)
    assert B.scalar_type == wp.float64
    np.testing.assert_allclose(dense(B), ref, rtol=1e-6)
    C = wp.sparse.bsr_zeros(5, 5, wp.mat22d, device=device)
    wp.sparse.bsr_assign(C, 2.0 * A)
    np.testing.assert_allclose(dense(C), 2.0 * ref, rtol=1e-6)
    S = wp.sparse.bsr_copy(A, structure_only=True)
    assert active_columns(S) == active_columns(A)
    P = wp.sparse.bsr_zeros(5, 5, wp.mat22, device=device, row_capacity=5)
    wp.sparse.bsr_assign(P, A, topology="padded")
    Q = wp.sparse.bsr_copy(P, topology="padded")
    np.testing.assert_array_equal(Q.offsets.numpy(), P.offsets.numpy())
    np.testing.assert_allclose(dense(Q), ref)
    R = wp.sparse.bsr_copy(P)  # compact copy of a padded matrix
    assert R.row_counts is None
    np.testing.assert_allclose(dense(R), ref)
    # masked assign: the coarse block diagonal of a finer matrix
    D = wp.sparse.bsr_diag(rows_of_blocks=5, block_type=wp.mat22, device=device)
    wp.sparse.bsr_assign(D, A, topology="masked")
    np.testing.assert_allclose(dense(D), ref * np.kron(np.eye(5), np.ones((2, 2))), rtol=1e-6)


def test_diag_identity_scale(device):
    d = wp.array(np.arange(1.0, 5.0), dtype=wp.float64, device=device)
    D = wp.sparse.bsr_diag(d)
    np.testing.assert_allclose(dense(D), np.diag(np.arange(1.0, 5.0)))
    np.testing.assert_allclose(wp.sparse.bsr_get_diag(D).numpy(), np.arange(1.0, 5.0))
    np.testing.assert_allclose(wp.sparse.bsr_get_diag(2.0 * D).numpy(), 2 * np.arange(1.0, 5.0))
    R = wp.sparse.bsr_diag(wp.mat22(1.0, 2.0, 3.0, 4.0), rows_of_blocks=3, cols_of_blocks=4)
    assert (R.nrow, R.ncol, R.nnz) == (3, 4, 3)
    np.testing.assert_allclose(dense(R), np.kron(np.eye(3, 4), [[1, 2], [3, 4]]))
    I3 = wp.sparse.bsr_identity(3, wp.mat33d, device=device)
    np.testing.assert_allclose(dense(I3), np.eye(9))
    Ic = wp.sparse.bsr_identity(4, wp.float32, device=device)
    np.testing.assert_allclose(dense(Ic), np.eye(4))
    wp.sparse.bsr_set_identity(Ic, rows_of_blocks=2)
    np.testing.assert_allclose(dense(Ic), np.eye(2))
    wp.sparse.bsr_set_diag(Ic, 5.0, rows_of_blocks=3)
    np.testing.assert_allclose(dense(Ic), 5 * np.eye(3))
    wp.sparse.bsr_scale(Ic, 0.5)
    np.testing.assert_allclose(dense(Ic), 2.5 * np.eye(3))
    Ic *= 2.0
    np.testing.assert_allclose(dense(Ic), 5 * np.eye(3))
    wp.sparse.bsr_scale(Ic, 0.0)
    assert Ic.nnz == 3 and not dense(Ic).any()
    out = wp.full(3, value=7.0, dtype=wp.float32, device=device)
    rng = np.random.default_rng(10)
    A, ref = random_bsr(rng, 3, 3, 6, (1, 1), wp.float32, device)
    wp.sparse.bsr_get_diag(A, out=out)
    np.testing.assert_allclose(out.numpy(), np.diag(ref), rtol=1e-6)


def test_expressions():
    rng = np.random.default_rng(12)
    A, ref = random_bsr(rng, 3, 4, 8, (2, 2), wp.float64)
    e = -(A / 4.0) * 2.0
    assert isinstance(e, wp.sparse.BsrExpression) and not isinstance(e, wp.sparse.BsrMatrix)
    assert e.shape == A.shape and e.nrow == 3 and e.dtype == A.dtype
    np.testing.assert_allclose(dense(e.eval()), -0.5 * ref)
    t = e.transpose()
    assert t.shape == (8, 6) and t.block_shape == (2, 2) and (t.nrow, t.ncol) == (4, 3)
    np.testing.assert_allclose(dense(t.eval()), -0.5 * ref.T)
    B = A @ t  # expression operands fold into the product
    np.testing.assert_allclose(dense(B), ref @ (-0.5 * ref.T), atol=1e-12)
    C = wp.sparse.bsr_copy(A)
    C @= wp.sparse.bsr_identity(4, wp.mat22d)
    np.testing.assert_allclose(dense(C), ref)


def test_kernel_struct_and_lookups(device):
    A = wp.sparse.bsr_from_triplets(3, 4, wp.array([0, 0, 2, 1], dtype=int, device=device),
                                    wp.array([1, 3, 0, 2], dtype=int, device=device),
                                    wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=device))
    A.nnz_sync()
    assert wp.sparse.bsr_matrix_t(float) is CSR_F32

    @wp.kernel
    def lookup(M: CSR_F32, rows: wp.array(dtype=int), cols: wp.array(dtype=int), out: wp.array(dtype=float),
               row_of: wp.array(dtype=int)):
        i = wp.tid()
        b = wp.sparse.bsr_block_index(rows[i], cols[i], M.offsets, M.columns)
        if b >= 0:
            out[i] = M.values[b]
        else:
            out[i] = -1.0
        row_of[i] = wp.sparse.bsr_row_index(M.offsets, M.nrow, i)

    rows = wp.array([0, 0, 1, 2, 2, -1], dtype=int, device=device)
    cols = wp.array([3, 0, 2, 0, 3, 0], dtype=int, device=device)
    out = wp.zeros(6, dtype=float, device=device)
    row_of = wp.zeros(6, dtype=int, device=device)
    wp.launch(lookup, 6, inputs=[A, rows, cols, out, row_of], device=device)
    np.testing.assert_array_equal(out.numpy(), [2.0, -1.0, 4.0, 3.0, -1.0, -1.0])
    np.testing.assert_array_equal(row_of.numpy(), [0, 0, 1, 2, -1, -1])

    P = wp.sparse.bsr_zeros(3, 4, float, device=device, row_capacity=2)
    wp.sparse.bsr_assign(P, A, topology="padded")

    @wp.kernel
    def lookup_padded(offsets: wp.array(dtype=int), columns: wp.array(dtype=int), counts: wp.array(dtype=int),
                      out: wp.array(dtype=int), row_of: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = wp.sparse.bsr_block_index(2, 0, offsets, columns, counts)
        row_of[i] = wp.sparse.bsr_row_index(offsets, 3, i, counts)

    o2 = wp.zeros(6, dtype=int, device=device)
    r2 = wp.zeros(6, dtype=int, device=device)
    wp.launch(lookup_padded, 6, inputs=[P.offsets, P.columns, P.row_counts, o2, r2], device=device)
    assert o2.numpy()[0] == 4
    np.testing.assert_array_equal(r2.numpy(), [0, 0, 1, -1, 2, -1])


def test_mm_paths_agree_and_gradient(device):
    # without gradients a CPU product runs row by row; with them, it expands, sorts and merges entries
    rng = np.random.default_rng(13)
    x, xr = random_bsr(rng, 6, 5, 20, (2, 2), wp.float64, device)
    y, yr = random_bsr(rng, 5, 4, 15, (2, 2), wp.float64, device)
    fast = wp.sparse.bsr_mm(x, y)
    xg = wp.sparse.bsr_copy(x)
    xg.values.requires_grad = True
    with wp.Tape() as tape:
        slow = wp.sparse.bsr_mm(xg, y)
    assert slow.requires_grad
    np.testing.assert_allclose(dense(fast), xr @ yr, atol=1e-12)
    np.testing.assert_allclose(dense(slow), xr @ yr, atol=1e-12)
    assert active_columns(fast) == active_columns(slow)
    # d(sum of all blocks of x @ y)/dx[i, k] = sum over y's row k
    slow.values.grad.fill_(1.0)
    tape.backward()
    g = xg.values.grad.numpy()
    rows = xg.uncompress_rows().numpy()
    cols = xg.columns.numpy()[:len(rows)]
    ysum = yr.reshape(5, 2, 4, 2).sum(axis=(2, 3))  # per y block row, per row inside the block
    for b in range(xg.nnz_sync()):
        k = cols[b]
        np.testing.assert_allclose(g[b], np.broadcast_to(ysum[k], (2, 2)), atol=1e-12)
