"""Iterative linear solvers against SciPy / NumPy references: SPD and non-symmetric systems, BSR, dense and diagonal
operators, preconditioners, batches, restarts, device-side loops, reusable states and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.optim.linear as lin
import treadle.sparse as sparse

sps = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")


def _poisson(n: int) -> sps.csr_matrix:
    """The 2-D 5-point Laplacian of an n x n grid."""
    t = sps.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sps.kron(sps.eye(n), t) + sps.kron(t, sps.eye(n))).tocsr()


def _nonsymmetric(n: int) -> sps.csr_matrix:
    """A convection-diffusion matrix: diagonally dominant, not symmetric."""
    A = _poisson(n).tolil()
    for i in range(n * n - 1):
        A[i, i + 1] += -0.4
    return A.tocsr()


def _bsr(A: sps.csr_matrix, block: int, dtype, device) -> sparse.BsrMatrix:
    B = sps.bsr_matrix(A, blocksize=(block, block))
    bt = dtype if block == 1 else wp.types.matrix((block, block), dtype)
    rows = np.repeat(np.arange(B.shape[0] // block), np.diff(B.indptr)).astype(np.int32)
    vals = B.data if block > 1 else B.data.reshape(-1)
    M = sparse.bsr_zeros(B.shape[0] // block, B.shape[1] // block, bt, device=device)
    sparse.bsr_set_from_triplets(M, wp.array(rows, dtype=int, device=device),
                                 wp.array(B.indices.astype(np.int32), dtype=int, device=device),
                                 wp.array(vals, dtype=dtype, device=device), prune_numerical_zeros=False)
    return M


def _vector(v: np.ndarray, block: int, dtype, device):
    if block == 1:
        return wp.array(v, dtype=dtype, device=device)
    return wp.array(v.reshape(-1, block), dtype=wp.types.vector(block, dtype), device=device)


@pytest.mark.parametrize("solver", ["cg", "cr"])
@pytest.mark.parametrize("block,dtype", [(1, wp.float64), (2, wp.float32)])
def test_spd_solvers_match_scipy(device, solver, block, dtype):
    A = _poisson(8)
    rng = np.random.default_rng(0)
    b = rng.standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    M = _bsr(A, block, dtype, device)
    bw, x = _vector(b, block, dtype, device), _vector(np.zeros_like(b), block, dtype, device)
    tol = 1e-5 if dtype == wp.float32 else 1e-10
    for precond in (None, "diag", "block_jacobi_direct"):
        x.zero_()
        P = None if precond is None else lin.preconditioner(M, precond)
        niter, err, atol = getattr(lin, solver)(M, bw, x, tol=tol, maxiter=500, M=P)
        assert 0 < niter < 500 and err <= atol
        np.testing.assert_allclose(x.numpy().reshape(-1), ref, rtol=50 * tol, atol=50 * tol * np.abs(ref).max())
    # scipy's own cg needs about as many iterations
    if solver == "cg" and dtype == wp.float64:
        its = []
        spla.cg(A, b, rtol=tol, atol=0.0, maxiter=500, callback=lambda _: its.append(1))
        x.zero_()
        niter, _, _ = lin.cg(M, bw, x, tol=tol, maxiter=500, check_every=1)
        assert abs(niter - len(its)) <= 2


@pytest.mark.parametrize("solver", ["bicgstab", "gmres"])
@pytest.mark.parametrize("left", [False, True])
def test_nonsymmetric_solvers_match_scipy(device, solver, left):
    A = _nonsymmetric(7)
    rng = np.random.default_rng(1)
    b = rng.standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    M = _bsr(A, 1, wp.float64, device)
    bw, x = wp.array(b, dtype=wp.float64, device=device), wp.zeros(len(b), dtype=wp.float64, device=device)
    for precond in (None, lin.preconditioner(M, "diag")):
        x.zero_()
        kwargs = {"restart": 20} if solver == "gmres" else {}
        niter, err, atol = getattr(lin, solver)(M, bw, x, tol=1e-10, maxiter=400, M=precond,
                                                 is_left_preconditioner=left, **kwargs)
        assert err <= atol
        np.testing.assert_allclose(x.numpy(), ref, rtol=1e-7, atol=1e-7)
        true = np.linalg.norm(b - A @ x.numpy())
        assert true <= 4 * atol


def test_dense_and_diagonal_operators(device):
    rng = np.random.default_rng(2)
    C = rng.standard_normal((12, 12))
    A = C @ C.T + 12 * np.eye(12)
    b = rng.standard_normal(12)
    Aw = wp.array(A, dtype=wp.float64, device=device)
    x = wp.zeros(12, dtype=wp.float64, device=device)
    for solver in (lin.cg, lin.cr, lin.bicgstab, lin.gmres):
        x.zero_()
        _, err, atol = solver(Aw, wp.array(b, dtype=wp.float64, device=device), x, tol=1e-12)
        assert err <= atol
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(A, b), rtol=1e-8)
    d = wp.array(np.arange(1.0, 7.0).reshape(3, 2), dtype=wp.vec2d, device=device)  # a diagonal of vectors
    op = lin.aslinearoperator(d)
    assert op.shape == (3,) and op.dtype == wp.vec2d and op.scalar_type == wp.float64
    xv = wp.zeros(3, dtype=wp.vec2d, device=device)
    lin.cg(op, wp.array(np.ones((3, 2)), dtype=wp.vec2d, device=device), xv, tol=1e-12)
    np.testing.assert_allclose(xv.numpy().reshape(-1), 1.0 / np.arange(1.0, 7.0))


def test_custom_operator_and_callback(device):
    diag = np.linspace(1.0, 4.0, 10)
    dw = wp.array(diag, dtype=wp.float64, device=device)
    inner = lin.aslinearoperator(dw)

    def matvec(x, y, z, alpha, beta):
        inner.matvec(x, y, z, alpha, beta)

    op = lin.LinearOperator((10, 10), wp.float64, device, matvec)
    calls = []
    x = wp.zeros(10, dtype=wp.float64, device=device)
    niter, err, atol = lin.cg(op, wp.ones(10, dtype=wp.float64, device=device), x, tol=1e-12, check_every=2,
                              callback=lambda i, e, a: calls.append(i))
    assert calls[0] == 0 and calls[-1] == niter and all(i % 2 == 0 for i in calls)
    np.testing.assert_allclose(x.numpy(), 1.0 / diag)


def test_preconditioners(device):
    rng = np.random.default_rng(3)
    # an SPD block-diagonal-dominant 3x3-block matrix
    blocks = rng.standard_normal((6, 3, 3))
    spd = blocks @ blocks.transpose(0, 2, 1) + 3 * np.eye(3)
    A = sps.block_diag(list(spd)).tocsr() + 0.1 * _poisson(3).toarray().repeat(2, 0).repeat(2, 1)[:18, :18]
    A = sps.csr_matrix((A + A.T) / 2)
    M = _bsr(sps.csr_matrix(A), 3, wp.float64, device)
    x = wp.array(rng.standard_normal((6, 3)), dtype=wp.vec3d, device=device)
    Dinv = np.linalg.inv(np.asarray(A.todense())[np.kron(np.eye(6), np.ones((3, 3))) > 0].reshape(6, 3, 3))
    for ptype in ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile"):
        P = lin.preconditioner(M, ptype)
        z = wp.zeros_like(x)
        P.matvec(x, z, z, 1.0, 0.0)
        ref = np.einsum("bij,bj->bi", Dinv, x.numpy())
        np.testing.assert_allclose(z.numpy(), ref, rtol=1e-8, atol=1e-10)
    for ptype, f in (("diag", lambda a: 1 / a), ("diag_abs", lambda a: 1 / np.abs(a))):
        P = lin.preconditioner(M, ptype)
        z = wp.zeros_like(x)
        P.matvec(x, z, z, 2.0, 0.0)
        np.testing.assert_allclose(z.numpy().reshape(-1), 2 * f(A.diagonal()) * x.numpy().reshape(-1))
    assert lin.preconditioner(M, "id") is None
    # a singular block becomes the identity (direct), a non-SPD one too (sequential)
    S = sparse.bsr_diag(wp.array([np.zeros((3, 3)), -np.eye(3)], dtype=wp.mat33d, device=device))
    xs = wp.array(np.ones((2, 3)), dtype=wp.vec3d, device=device)
    for ptype, second in (("block_jacobi_direct", -1.0), ("block_jacobi_sequential", 1.0)):
        z = wp.zeros_like(xs)
        lin.preconditioner(S, ptype).matvec(xs, z, z, 1.0, 0.0)
        np.testing.assert_allclose(z.numpy(), [[1, 1, 1], [second] * 3])
    with pytest.raises(ValueError, match="Unsupported preconditioner"):
        lin.preconditioner(M, "ilu")


def test_batched_systems(device):
    rng = np.random.default_rng(4)
    sizes = [5, 9, 7]
    n = sum(sizes) + 2  # two inactive trailing unknowns
    A = np.zeros((n, n))
    b = rng.standard_normal(n)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    for i, s in enumerate(sizes):
        C = rng.standard_normal((s, s))
        A[off[i]:off[i + 1], off[i]:off[i + 1]] = C @ C.T + s * np.eye(s)
    A[-2:, -2:] = np.eye(2)
    offsets = wp.array(off, dtype=int, device=device)
    op = lin.aslinearoperator(wp.array(A, dtype=wp.float64, device=device), batch_offsets=offsets,
                              max_batch_length=max(sizes))
    assert op.batch_count == 3 and op.max_batch_length == 9
    for solver in (lin.cg, lin.cr, lin.bicgstab, lin.gmres):
        x0 = np.zeros(n)
        x0[-2:] = [5.0, 6.0]
        x = wp.array(x0, dtype=wp.float64, device=device)
        _, err, atol = solver(op, wp.array(b, dtype=wp.float64, device=device), x, tol=1e-10, maxiter=200)
        assert err <= atol
        xs = x.numpy()
        for i in range(3):
            sl = slice(off[i], off[i + 1])
            np.testing.assert_allclose(A[sl, sl] @ xs[sl], b[sl], atol=1e-8 * np.linalg.norm(b[sl]) * 10)
        np.testing.assert_array_equal(xs[-2:], [5.0, 6.0])  # inactive unknowns untouched


def test_restart_device_loop_and_state_reuse(device):
    A = _poisson(6)
    M = _bsr(A, 1, wp.float64, device)
    b = wp.array(np.ones(A.shape[0]), dtype=wp.float64, device=device)
    x = wp.zeros_like(b)
    iters = []
    niter, err, atol = lin.cg(M, b, x, tol=1e-10, maxiter=200, restart=4, check_every=1,
                              callback=lambda i, e, a: iters.append(i))
    assert err <= atol and niter % 4 == 0 and all(i % 4 == 0 for i in iters)
    assert np.linalg.norm(A @ x.numpy() - 1.0) <= atol * 1.001  # a restart reports the true residual
    x.zero_()
    it, r2, a2 = lin.cg(M, b, x, tol=1e-10, maxiter=200, check_every=0)
    assert isinstance(it, wp.array) and int(it.numpy()[0]) > 0 and r2.numpy()[0] <= a2.numpy()[0]
    state = lin.gmres(M, b, x, tol=1e-10, restart=10, run=False)
    assert isinstance(state, lin.GMRES) and isinstance(state, lin.LinearSolverState)
    x.zero_()
    _, err, atol = state()
    b2 = wp.array(np.linspace(0.0, 1.0, A.shape[0]), dtype=wp.float64, device=device)
    x2 = wp.zeros_like(b2)
    _, err2, atol2 = state(b=b2, x=x2)
    assert err <= atol and err2 <= atol2
    np.testing.assert_allclose(A @ x2.numpy(), b2.numpy(), atol=1e-8)
    cg_state = lin.cg(M, b, x, run=False)
    x.zero_()
    cg_state(M=lin.preconditioner(M))  # a preconditioner given later
    np.testing.assert_allclose(A @ x.numpy(), 1.0, atol=1e-8)


def test_bad_input(device):
    A = wp.array(np.ones((3, 4)), dtype=wp.float64, device=device)
    b3 = wp.zeros(3, dtype=wp.float64, device=device)
    with pytest.raises(ValueError, match="must be square"):
        lin.cg(A, b3, wp.zeros(4, dtype=wp.float64, device=device))
    S = wp.array(np.eye(3), dtype=wp.float64, device=device)
    with pytest.raises(ValueError, match="has 4 scalar entries"):
        lin.cg(S, wp.zeros(4, dtype=wp.float64, device=device), b3)
    with pytest.raises(ValueError, match="float32 values but the matrix float64"):
        lin.cg(S, wp.zeros(3, dtype=wp.float32, device=device), wp.zeros(3, dtype=wp.float32, device=device))
    with pytest.raises(TypeError, match="restart"):
        lin.cg(S, b3, wp.zeros_like(b3), restart=1.5)
    with pytest.raises(ValueError, match="restart must be positive"):
        lin.cr(S, b3, wp.zeros_like(b3), restart=0)
    with pytest.raises(TypeError, match="cannot make a linear operator"):
        lin.cg(np.eye(3), b3, wp.zeros_like(b3))
    with pytest.raises(ValueError, match="requires batch_offsets"):
        lin.aslinearoperator(S, max_batch_length=3)
    state = lin.bicgstab(S, b3, wp.zeros_like(b3), run=False)
    with pytest.raises(ValueError, match="without a preconditioner"):
        state(M=lin.preconditioner(S))
    cg_state = lin.cg(S, b3, wp.zeros_like(b3), run=False)
    with pytest.raises(ValueError, match="batch_offsets"):
        cg_state(A=lin.aslinearoperator(S, batch_offsets=wp.array([0, 3], dtype=int, device=device)))
    with pytest.raises(TypeError, match="cannot be instantiated"):
        lin.LinearSolverState(S, b3, wp.zeros_like(b3))


def test_device_loop_under_graph_capture():
    A = _poisson(5)
    M = _bsr(A, 1, wp.float64, "cpu")
    b = wp.array(np.ones(A.shape[0]), dtype=wp.float64)
    x = wp.zeros_like(b)
    state = lin.cg(M, b, x, tol=1e-10, maxiter=60, check_every=0, run=False)
    state()  # load the kernels
    with wp.ScopedCapture(device="cpu") as capture:
        it, r2, a2 = state()
    for rhs in (1.0, 3.0):
        b.fill_(rhs)
        x.zero_()
        wp.capture_launch(capture.graph)
        assert 0 < int(it.numpy()[0]) <= 60 and r2.numpy()[0] <= a2.numpy()[0]
        np.testing.assert_allclose(A @ x.numpy(), rhs, atol=1e-8)
