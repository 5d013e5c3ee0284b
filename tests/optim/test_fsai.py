"""The FSAI preconditioner against NumPy references: factor rows solved densely on their supports, the exact inverse
Cholesky factor for full supports, CG convergence, block matrices, refits on a kept pattern, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.optim.linear as lin
import treadle.sparse as sparse

sps = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")


def _poisson(n: int) -> sps.csr_matrix:
    t = sps.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sps.kron(sps.eye(n), t) + sps.kron(t, sps.eye(n))).tocsr()


def _random_spd(rng: np.random.Generator, n: int, density: float) -> sps.csr_matrix:
    """A random sparse SPD matrix with a varied diagonal (so equilibration matters)."""
    B = sps.random(n, n, density=density, random_state=np.random.RandomState(int(rng.integers(1 << 30))))
    A = B @ B.T + sps.diags(rng.uniform(0.5, 5.0, n))
    s = sps.diags(rng.uniform(0.3, 3.0, n))
    return (s @ A @ s).tocsr()


def _bsr(A: sps.csr_matrix, block: int = 1, dtype=wp.float64) -> sparse.BsrMatrix:
    B = sps.bsr_matrix(A, blocksize=(block, block))
    B.sort_indices()
    bt = dtype if block == 1 else wp.types.matrix((block, block), dtype)
    rows = np.repeat(np.arange(B.shape[0] // block), np.diff(B.indptr)).astype(np.int32)
    vals = B.data if block > 1 else B.data.reshape(-1)
    M = sparse.bsr_zeros(B.shape[0] // block, B.shape[1] // block, bt)
    sparse.bsr_set_from_triplets(M, wp.array(rows, dtype=int), wp.array(B.indices.astype(np.int32), dtype=int),
                                 wp.array(vals, dtype=dtype), prune_numerical_zeros=False)
    return M


def _csr(m: sparse.BsrMatrix) -> sps.csr_matrix:
    nnz = int(m.offsets.numpy()[m.nrow])
    return sps.csr_matrix((m.values.numpy()[:nnz].astype(np.float64), m.columns.numpy()[:nnz],
                           m.offsets.numpy()[: m.nrow + 1]), shape=m.shape)


def _dense_fsai(A: np.ndarray, G: sps.csr_matrix) -> np.ndarray:
    """The FSAI factor on the supports of ``G``: each row solves ``A[S, S] y = e_i``, scaled to ``y / sqrt(y_i)``."""
    out = np.zeros(A.shape)
    for i in range(A.shape[0]):
        S = G[i].indices
        e = (S == i).astype(np.float64)
        y = np.linalg.solve(A[np.ix_(S, S)], e)
        out[i, S] = y / np.sqrt(y[S == i])
    return out


@pytest.mark.parametrize("max_row_size, step", [(4, 1), (8, 1), (8, 3), (20, 2)])
def test_factor_rows_solve_their_local_systems(max_row_size, step):
    rng = np.random.default_rng(3)
    A = _random_spd(rng, 60, 0.06)
    P = lin.FSAI(_bsr(A), max_row_size=max_row_size, kap_tolerance=0.0, max_step_size=step)
    G = _csr(P.G)
    assert sps.triu(G, 1).nnz == 0, "the factor must be lower-triangular"
    assert np.all(np.diff(G.indptr) <= max_row_size)
    assert np.all(G.diagonal() > 0)
    np.testing.assert_allclose(G.toarray(), _dense_fsai(A.toarray(), G), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose((G @ A @ G.T).diagonal(), 1.0, rtol=1e-10)
    np.testing.assert_allclose(_csr(P.GT).toarray(), G.T.toarray(), rtol=0, atol=0)
    assert P.truncated_rows == 0


def test_supports_follow_the_largest_scaled_residual():
    # a tridiagonal matrix: row i's only candidate below it with a nonzero residual is i - 1, then i - 2, ...
    n = 10
    A = sps.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()
    P = lin.FSAI(_bsr(A), max_row_size=3, kap_tolerance=0.0)
    G = _csr(P.G)
    for i in range(n):
        assert list(G[i].indices) == list(range(max(0, i - 2), i + 1))


def test_full_supports_give_the_inverse_cholesky_factor():
    rng = np.random.default_rng(5)
    n = 12
    Q = rng.standard_normal((n, n))
    A = Q @ Q.T + n * np.eye(n)
    P = lin.FSAI(_bsr(sps.csr_matrix(A)), max_row_size=n, kap_tolerance=0.0)
    G = _csr(P.G).toarray()
    np.testing.assert_allclose(G.T @ G, np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    L = np.linalg.cholesky(A)
    np.testing.assert_allclose(G, np.linalg.inv(L), rtol=1e-9, atol=1e-12)


def test_one_entry_is_scaled_jacobi_and_tolerance_limits_growth():
    A = _random_spd(np.random.default_rng(1), 40, 0.1)
    G = _csr(lin.FSAI(_bsr(A), max_row_size=1).G)
    np.testing.assert_allclose(G.toarray(), np.diag(1.0 / np.sqrt(A.diagonal())), rtol=1e-12)
    sizes = [lin.FSAI(_bsr(A), max_row_size=16, kap_tolerance=tol).G.nnz for tol in (0.0, 0.05, 0.5)]
    assert sizes[0] >= sizes[1] >= sizes[2] and sizes[0] > sizes[2]


def test_cg_with_fsai_converges_faster_than_jacobi():
    A = _poisson(16)
    M = _bsr(A)
    b_np = np.random.default_rng(0).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b_np)
    iters = {}
    for name, pre in (("diag", lin.preconditioner(M, "diag")), ("fsai", lin.preconditioner(M, "fsai")),
                      ("fsai16", lin.FSAI(M, max_row_size=16, kap_tolerance=0.0))):
        x = wp.zeros(A.shape[0], dtype=wp.float64)
        it, _, _ = lin.cg(M, wp.array(b_np, dtype=wp.float64), x, tol=1e-10, maxiter=2000, M=pre)
        np.testing.assert_allclose(x.numpy(), ref, rtol=1e-7, atol=1e-8)
        iters[name] = it
    assert isinstance(lin.preconditioner(M, "fsai"), lin.FSAI)
    assert iters["fsai16"] < iters["fsai"] < iters["diag"], iters


def test_block_matrix_reads_its_scalar_entries():
    A = _random_spd(np.random.default_rng(7), 48, 0.08)
    scalar = lin.FSAI(_bsr(A), max_row_size=6, kap_tolerance=0.0)
    block = lin.FSAI(_bsr(A, block=3), max_row_size=6, kap_tolerance=0.0)
    np.testing.assert_allclose(_csr(block.G).toarray(), _csr(scalar.G).toarray(), rtol=1e-12, atol=1e-14)
    # the operator applies G^T G to vectors of blocks too
    xb = np.random.default_rng(2).standard_normal(48)
    y = wp.zeros(16, dtype=wp.vec3d)
    z = wp.zeros(16, dtype=wp.vec3d)
    block.matvec(wp.array(xb.reshape(16, 3), dtype=wp.vec3d), y, z, 2.0, 0.0)
    G = _csr(scalar.G)
    np.testing.assert_allclose(z.numpy().reshape(-1), 2.0 * (G.T @ (G @ xb)), rtol=1e-10)


@pytest.mark.parametrize("scalar, factor, rtol", [(wp.float32, None, 1e-4), (wp.float16, None, 2e-2),
                                                   (wp.float64, wp.float32, 1e-6)])
def test_narrow_types_and_factor_storage(scalar, factor, rtol):
    A = _poisson(8)
    P = lin.FSAI(_bsr(A, dtype=scalar), factor_dtype=factor)
    ref = lin.FSAI(_bsr(A))
    assert P.G.scalar_type == (factor or scalar)
    np.testing.assert_allclose(_csr(P.G).toarray(), _csr(ref.G).toarray(), rtol=rtol, atol=rtol)
    x = np.ones(A.shape[0])
    y = wp.zeros(A.shape[0], dtype=scalar)
    z = wp.array(np.full(A.shape[0], 1.0), dtype=scalar)
    P.matvec(wp.array(x, dtype=scalar), z, y, 1.0, 0.5)
    G = _csr(ref.G)
    np.testing.assert_allclose(y.numpy(), G.T @ (G @ x) + 0.5, rtol=10 * rtol, atol=10 * rtol)


def test_low_pivot_floor_truncates_rows():
    # nearly dependent neighbours: a high floor rejects the second support entry of every coupled row
    n = 6
    A = sps.diags([-0.999, 1.0, -0.999], [-1, 0, 1], shape=(n, n)).tocsr() + sps.eye(n) * 1.0
    loose = lin.FSAI(_bsr(A), max_row_size=4, kap_tolerance=0.0)
    tight = lin.FSAI(_bsr(A), max_row_size=4, kap_tolerance=0.0, pivot_floor=0.9)
    assert loose.truncated_rows == 0 and tight.truncated_rows == n - 1
    np.testing.assert_allclose(_csr(tight.G).toarray(), np.diag(1.0 / np.sqrt(A.diagonal())), rtol=1e-12)


def test_update_refits_on_the_kept_pattern():
    A = _random_spd(np.random.default_rng(11), 50, 0.08)
    M = _bsr(A)
    P = lin.FSAI(M, max_row_size=8, kap_tolerance=0.0, reuse_pattern=True)
    G0 = _csr(P.G)
    gptr, gtptr = P.G.values.ptr, P.GT.values.ptr
    # new values on the same topology: each row refit densely on its old support
    A2 = (A + sps.diags(np.linspace(1.0, 3.0, 50))).tocsr()
    M2 = _bsr(A2)
    assert P.update(M2) is P
    G1 = _csr(P.G)
    assert (G1.indices == G0.indices).all() and P.G.values.ptr == gptr and P.GT.values.ptr == gtptr
    np.testing.assert_allclose(G1.toarray(), _dense_fsai(A2.toarray(), G0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_csr(P.GT).toarray(), G1.T.toarray(), rtol=0, atol=0)
    assert list(P.update_status.numpy()) == [0, 0, 0, 0] and P.source is M2
    # scaling the source in place: update() without arguments reads it again
    sparse.bsr_scale(M2, 4.0)
    P.update()
    np.testing.assert_allclose(_csr(P.G).toarray(), G1.toarray() / 2.0, rtol=1e-12)


def test_rejected_updates_keep_the_factors():
    A = _poisson(6)
    M = _bsr(A)
    P = lin.FSAI(M, reuse_pattern=True)
    before = _csr(P.G).toarray()
    # a negative diagonal coefficient: rejected, nothing changes
    bad = A.tolil()
    bad[7, 7] = -1.0
    with pytest.raises(ValueError, match="invalid diagonal"):
        P.update(_bsr(bad.tocsr()))
    np.testing.assert_array_equal(_csr(P.G).toarray(), before)
    assert P.update_status.numpy()[1] == 1 and P.source is M
    # another topology of the same size
    other = A.tolil()
    other[0, 1] = 0.0
    other[0, 5] = 0.5
    other[5, 0] = 0.5
    other = other.tocsr()
    other.eliminate_zeros()
    with pytest.raises(ValueError, match="topology changed"):
        P.update(_bsr(other))
    np.testing.assert_array_equal(_csr(P.G).toarray(), before)
    # with regularize_refit a pivot below the floor is raised to it, and a failed row becomes its scaled diagonal
    R = lin.FSAI(M, reuse_pattern=True, regularize_refit=True)
    weak = A.tolil()
    weak[3, 3] = 1.0e-30  # row 3's equilibrated local system is no longer positive-definite
    R.update(_bsr(weak.tocsr()))
    st = R.update_status.numpy()
    assert st[3] >= 1 and st[0] == st[1] == 0
    assert np.isfinite(_csr(R.G).toarray()).all()
    broken = A.tolil()
    broken[3, 2] = np.nan  # a nonfinite pivot in every row whose support holds columns 2 and 3
    broken[2, 3] = np.nan
    R.update(_bsr(broken.tocsr()))
    assert R.update_status.numpy()[2] >= 1
    G = _csr(R.G).toarray()
    np.testing.assert_allclose(G[3], np.eye(36)[3] / 2.0)


def test_bad_input():
    A = _poisson(4)
    M = _bsr(A)
    with pytest.raises(TypeError, match="BsrMatrix"):
        lin.FSAI(wp.zeros((16, 16), dtype=wp.float64))
    rect = sparse.bsr_zeros(4, 3, wp.float64)
    with pytest.raises(ValueError, match="square"):
        lin.FSAI(rect)
    with pytest.raises(ValueError, match="blocks must be square"):
        lin.FSAI(sparse.bsr_zeros(4, 4, wp.types.matrix((2, 3), wp.float64)))
    for kw, msg in (({"max_row_size": 0}, "max_row_size"), ({"max_row_size": 65}, "max_row_size"),
                    ({"max_step_size": 0}, "max_step_size"), ({"kap_tolerance": 1.0}, "kap_tolerance"),
                    ({"pivot_floor": 0.0}, "pivot_floor"), ({"factor_dtype": wp.float16}, "factor_dtype")):
        with pytest.raises(ValueError, match=msg):
            lin.FSAI(M, **kw)
    with pytest.raises(ValueError, match="requires reuse_pattern"):
        lin.FSAI(M, defer_pattern=True)
    with pytest.raises(NotImplementedError, match="defer_pattern"):
        lin.FSAI(M, reuse_pattern=True, defer_pattern=True)
    missing = A.tolil()
    missing[2, 2] = 0.0
    missing = missing.tocsr()
    missing.eliminate_zeros()
    with pytest.raises(ValueError, match="scalar row 2 is missing, nonpositive or nonfinite"):
        lin.FSAI(_bsr(missing))
    with pytest.raises(ValueError, match="reuse_pattern"):
        lin.FSAI(M).update()
    padded = sparse.bsr_zeros(16, 16, wp.float64, topology="padded", row_capacity=6)
    sparse.bsr_assign(padded, M, topology="padded")
    with pytest.raises(ValueError, match="compact"):
        lin.FSAI(padded, reuse_pattern=True)
    with pytest.raises(ValueError, match="16 float64 scalars"):
        lin.FSAI(M).matvec(wp.zeros(15, dtype=wp.float64), wp.zeros(16, dtype=wp.float64),
                           wp.zeros(16, dtype=wp.float64), 1.0, 0.0)


def test_update_and_solve_under_graph_capture():
    A = _poisson(5)
    M = _bsr(A)
    P = lin.FSAI(M, max_row_size=6, reuse_pattern=True)
    b = wp.array(np.ones(A.shape[0]), dtype=wp.float64)
    x = wp.zeros_like(b)
    state = lin.cg(M, b, x, tol=1e-10, maxiter=60, M=P, check_every=0, run=False)
    P.update()
    state()  # load the kernels
    with wp.ScopedCapture(device="cpu") as capture:
        P.update()
        it, r2, a2 = state()
    for s in (1.0, 3.0):
        M.values.assign(_bsr(A * s).values)
        x.zero_()
        wp.capture_launch(capture.graph)
        assert list(P.update_status.numpy()) == [0, 0, 0, 0]
        assert 0 < int(it.numpy()[0]) <= 60 and r2.numpy()[0] <= a2.numpy()[0]
        np.testing.assert_allclose((A * s) @ x.numpy(), 1.0, atol=1e-8)
        np.testing.assert_allclose(_csr(P.G).toarray(), _dense_fsai((A * s).toarray(), _csr(P.G)), rtol=1e-10)


_COMPARE = """
import sys, numpy as np, importlib
impl = sys.argv[1]
wp = importlib.import_module(impl)
wps = importlib.import_module(impl + ".sparse")
L = importlib.import_module(impl + ".optim.linear")
data = np.load(sys.argv[2])
out = {}
for mat in ("random", "grid"):
    n = int(data[mat + "_n"])
    M = wps.bsr_from_triplets(n, n, wp.array(data[mat + "_rows"]), wp.array(data[mat + "_cols"]),
                              wp.array(data[mat + "_vals"], dtype=wp.float64))
    for name, kw in (("default", {}), ("wide", dict(max_row_size=16, kap_tolerance=0.0)),
                     ("steps", dict(max_row_size=12, max_step_size=3, kap_tolerance=0.0)),
                     ("floor", dict(max_row_size=16, kap_tolerance=0.0, pivot_floor=0.85)),
                     ("floor_steps", dict(max_row_size=16, max_step_size=4, pivot_floor=0.95))):
        P = L.FSAI(M, **kw)
        nnz = int(P.G.offsets.numpy()[n])
        key = mat + "_" + name
        out[key + "_offsets"] = P.G.offsets.numpy()[: n + 1]
        out[key + "_columns"] = P.G.columns.numpy()[:nnz]
        out[key + "_values"] = P.G.values.numpy()[:nnz]
        out[key + "_truncated"] = np.array(P.truncated_rows)
# refits on the kept supports: new values, and values whose pivots fall below the floor (regularised)
n = int(data["random_n"])
def matrix(vals):
    return wps.bsr_from_triplets(n, n, wp.array(data["random_rows"]), wp.array(data["random_cols"]),
                                 wp.array(vals, dtype=wp.float64), prune_numerical_zeros=False)
for name, kw, vals in (("refit", {}, data["refit_vals"]),
                       ("regularized", dict(regularize_refit=True, pivot_floor=0.6), data["weak_vals"])):
    P = L.FSAI(matrix(data["random_vals"]), max_row_size=12, reuse_pattern=True, **kw)
    P.update(matrix(vals))
    out[name + "_values"] = P.G.values.numpy()[: int(P.G.offsets.numpy()[n])]
    out[name + "_status"] = P.update_status.numpy()
np.savez(sys.argv[3], **out)
"""


def test_factors_match_the_reference_when_installed(tmp_path):
    """The same supports, truncations and values as warp-lang's FSAI (in a subprocess; skipped without it)."""
    import importlib.util
    import os
    import subprocess
    import sys
    from pathlib import Path

    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang is not installed")
    probe = subprocess.run([sys.executable, "-c", "import warp.optim.linear as L; print(hasattr(L, 'FSAI'))"],
                           capture_output=True, text=True, cwd=tmp_path)
    if probe.stdout.strip() != "True":
        pytest.skip("the installed warp-lang has no FSAI")
    data = {}
    # a random matrix, and a grid Laplacian (whose residuals tie, so the order of the sums decides the supports)
    for mat, A in (("random", _random_spd(np.random.default_rng(4), 80, 0.05)), ("grid", _poisson(9))):
        A.sort_indices()
        coo = A.tocoo()
        data.update({f"{mat}_n": A.shape[0], f"{mat}_rows": coo.row.astype(np.int32),
                     f"{mat}_cols": coo.col.astype(np.int32), f"{mat}_vals": coo.data})
    # the random matrix's triplets with other values (same topology): a shifted diagonal, and a stronger
    # off-diagonal coupling whose local pivots fall below a floor of 0.6
    A = _random_spd(np.random.default_rng(4), 80, 0.05)
    A.sort_indices()
    coo = A.tocoo()
    diag = coo.row == coo.col
    data["refit_vals"] = coo.data + diag * np.linspace(0.5, 2.0, coo.data.shape[0])
    data["weak_vals"] = coo.data * np.where(diag, 1.0, 2.5)
    np.savez(tmp_path / "A.npz", **data)
    (tmp_path / "compare.py").write_text(_COMPARE)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    for impl in ("warp", "treadle"):
        r = subprocess.run([sys.executable, "compare.py", impl, "A.npz", f"{impl}.npz"], capture_output=True,
                           text=True, cwd=tmp_path, env=env if impl == "treadle" else None, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    ref, ours = np.load(tmp_path / "warp.npz"), np.load(tmp_path / "treadle.npz")
    assert sum(int(ref[k]) > 0 for k in ref.files if k.endswith("_truncated")) >= 2  # the pivot floor is exercised
    assert int(ref["regularized_status"][3]) > 0  # and the refits' regularisation
    for key in ref.files:
        if key.endswith("_values"):
            np.testing.assert_allclose(ours[key], ref[key], rtol=1e-12, atol=1e-14)
        else:
            np.testing.assert_array_equal(ours[key], ref[key])
