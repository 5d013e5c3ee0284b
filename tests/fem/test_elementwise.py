"""The element-wise assembly kernels (one thread per cell, basis cached per quadrature point) against the generic
kernels (one thread per element and node pair), and the in-place Dirichlet projection against the general one."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
import treadle.sparse as sp
from treadle._src.fem import dirichlet_kernels, integrate_cells

from .forms import make_geometry


@fem.integrand
def coef_diffusion(s: fem.Sample, u: fem.Field, v: fem.Field, k: fem.Field):
    return (1.0 + k(s) * k(s)) * wp.dot(fem.grad(u, s), fem.grad(v, s)) + 0.5 * u(s) * v(s)


@fem.integrand
def elasticity(s: fem.Sample, u: fem.Field, v: fem.Field, lam: float):
    return 2.0 * wp.ddot(fem.D(u, s), fem.D(v, s)) + lam * fem.div(u, s) * fem.div(v, s) + 0.1 * wp.dot(u(s), v(s))


@fem.integrand
def div_pressure(s: fem.Sample, u: fem.Field, q: fem.Field):
    return fem.div(u, s) * q(s)


@fem.integrand
def vector_load(s: fem.Sample, domain: fem.Domain, v: fem.Field, k: fem.Field):
    x = domain(s)
    return wp.dot(v(s), x) * k(s) + fem.div(v, s)


@fem.integrand
def scalar_load(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return x[0] * v(s) + wp.dot(fem.grad(v, s), x)


@fem.integrand
def node_weighted(s: fem.Sample, u: fem.Field, v: fem.Field):
    # a node-wise operator: the per-point cache does not provide it
    return fem.node_inner_weight(u, s) * v(s) + float(fem.node_index(v, s)) * 0.0


@fem.integrand
def displacement(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec2(0.1 * x[1] * x[1], -0.05 * x[0] * x[1])


def _both(monkeypatch: pytest.MonkeyPatch, run):  # noqa: ANN001, ANN202 - test helper
    fast = run()
    monkeypatch.setattr(integrate_cells, "ENABLED", False)
    generic = run()
    monkeypatch.setattr(integrate_cells, "ENABLED", True)
    return fast, generic


def _to_dense(m: sp.BsrMatrix) -> np.ndarray:
    bs = tuple(m.block_shape)
    out = np.zeros((m.nrow * bs[0], m.ncol * bs[1]))
    offs, cols = m.offsets.numpy(), m.columns.numpy()
    vals = m.values.numpy().reshape(-1, *bs)
    for r in range(m.nrow):
        for k in range(offs[r], offs[r + 1]):
            c = cols[k]
            out[r * bs[0]:(r + 1) * bs[0], c * bs[1]:(c + 1) * bs[1]] += vals[k]
    return out


def _kinds(itg: fem.Integrand) -> set[str]:
    return {key[0] for key, k in itg.cached_kernels.items() if k}


@pytest.mark.parametrize("kind,degree", [("grid3d", 2), ("tet", 1), ("quad", 2), ("tri", 3)])
def test_scalar_forms_match_generic(monkeypatch: pytest.MonkeyPatch, kind: str, degree: int) -> None:
    geo = make_geometry(kind, 2)
    space = fem.make_polynomial_space(geo, degree=degree)
    k = space.make_field()
    k.dof_values = wp.array(np.linspace(-1.0, 1.0, space.node_count()).astype(np.float32))

    def run():  # noqa: ANN202
        u, v = fem.make_trial(space), fem.make_test(space)
        A = fem.integrate(coef_diffusion, fields={"u": u, "v": v, "k": k}, output_dtype=wp.float64)
        b = fem.integrate(scalar_load, fields={"v": v}, output_dtype=wp.float64)
        return _to_dense(A), b.numpy()

    (A1, b1), (A0, b0) = _both(monkeypatch, run)
    assert {"bilinear_cells", "bilinear"} <= _kinds(coef_diffusion)
    assert {"linear_cells", "linear"} <= _kinds(scalar_load)
    assert np.abs(A0).max() > 0.1 and np.abs(b0).max() > 1e-3
    np.testing.assert_allclose(A1, A0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b1, b0, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["grid2d", "tri"])
def test_vector_and_mixed_forms_match_generic(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    geo = make_geometry(kind, 3)
    vspace = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec2)
    pspace = fem.make_polynomial_space(geo, degree=1)
    k = pspace.make_field()
    k.dof_values = wp.array(np.cos(np.arange(pspace.node_count())).astype(np.float32))

    def run():  # noqa: ANN202
        u, v = fem.make_trial(vspace), fem.make_test(vspace)
        A = fem.integrate(elasticity, fields={"u": u, "v": v}, values={"lam": 3.0}, output_dtype=wp.float64)
        B = fem.integrate(div_pressure, fields={"u": u, "q": fem.make_test(pspace)}, output_dtype=wp.float64)
        f = fem.integrate(vector_load, fields={"v": v, "k": k}, output_dtype=wp.float64)
        return _to_dense(A), _to_dense(B), f.numpy()

    fast, generic = _both(monkeypatch, run)
    assert "bilinear_cells" in _kinds(elasticity) and "bilinear_cells" in _kinds(div_pressure)
    assert "linear_cells" in _kinds(vector_load)
    for a, b in zip(fast, generic):
        assert np.abs(b).max() > 1e-3
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_deformed_geometry_matches_generic(monkeypatch: pytest.MonkeyPatch) -> None:
    base = fem.Grid2D(res=wp.vec2i(3))
    disp = fem.make_polynomial_space(base, degree=2, dtype=wp.vec2).make_field()
    fem.interpolate(displacement, dest=disp)
    geo = disp.make_deformed_geometry()
    space = fem.make_polynomial_space(geo, degree=2)
    k = space.make_field()
    k.dof_values = wp.array(np.linspace(0.0, 2.0, space.node_count()).astype(np.float32))

    def run():  # noqa: ANN202
        A = fem.integrate(coef_diffusion, fields={"u": fem.make_trial(space), "v": fem.make_test(space), "k": k},
                          output_dtype=wp.float64)
        return _to_dense(A)

    A1, A0 = _both(monkeypatch, run)
    np.testing.assert_allclose(A1, A0, rtol=1e-9, atol=1e-12)
    # and it is a stiffness: constants are in its kernel up to the mass term
    ones = np.ones(A1.shape[0])
    np.testing.assert_allclose((A1 @ ones).sum(), 0.5 * fem.integrate(area, quadrature=fem.RegularQuadrature(fem.Cells(geo), order=6)),
                               rtol=1e-5)


@fem.integrand
def area(s: fem.Sample, domain: fem.Domain):
    return 1.0


def test_unsupported_operator_keeps_generic_kernel() -> None:
    geo = make_geometry("grid2d", 2)
    space = fem.make_polynomial_space(geo, degree=1)
    A = fem.integrate(node_weighted, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
                      output_dtype=wp.float64)
    assert "bilinear" in _kinds(node_weighted) and "bilinear_cells" not in _kinds(node_weighted)
    from .forms import diffusion_mass

    # for a scalar space the node weight is the basis function itself: the mass matrix
    M = fem.integrate(diffusion_mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
                      values={"a": 0.0, "b": 1.0}, output_dtype=wp.float64)
    np.testing.assert_allclose(_to_dense(A), _to_dense(M), rtol=1e-9, atol=1e-12)


def _poisson(n: int, fixed: bool) -> tuple[sp.BsrMatrix, wp.array, sp.BsrMatrix, wp.array | None]:
    from .forms import diffusion_mass

    geo = fem.Grid2D(res=wp.vec2i(n))
    space = fem.make_polynomial_space(geo, degree=2)
    A = fem.integrate(diffusion_mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
                      values={"a": 1.0, "b": 0.0})
    b = fem.integrate(scalar_load, fields={"v": fem.make_test(space)})
    sides = fem.BoundarySides(geo)
    P = fem.integrate(diffusion_mass, fields={"u": fem.make_trial(space, domain=sides),
                                              "v": fem.make_test(space, domain=sides)},
                      values={"a": 0.0, "b": 1.0}, assembly="nodal")
    u0 = wp.array(np.linspace(0.0, 1.0, space.node_count()).astype(np.float32)) if fixed else None
    return A, b, P, u0


@pytest.mark.parametrize("fixed", [False, True])
def test_diagonal_projection_matches_general(monkeypatch: pytest.MonkeyPatch, fixed: bool) -> None:
    A1, b1, P1, u1 = _poisson(3, fixed)
    fem.project_linear_system(A1, b1, P1, u1)
    A0, b0, P0, u0 = _poisson(3, fixed)
    monkeypatch.setattr(dirichlet_kernels, "project_with_diagonal_projector", lambda A, P: False)
    fem.project_linear_system(A0, b0, P0, u0)
    d1, d0 = _to_dense(A1), _to_dense(A0)
    np.testing.assert_allclose(d1, d0, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b1.numpy(), b0.numpy(), rtol=1e-6, atol=1e-7)
    # constrained rows are identity rows
    diag = _to_dense(P1).diagonal()
    rows = np.nonzero(diag > 0.5)[0]
    assert len(rows) > 0
    np.testing.assert_allclose(d1[rows][:, rows], np.eye(len(rows)), atol=1e-7)


def test_non_diagonal_projector_uses_general_projection() -> None:
    n = 4
    A = sp.bsr_from_triplets(n, n, wp.array([0, 1, 2, 3, 0], dtype=int), wp.array([0, 1, 2, 3, 1], dtype=int),
                             wp.array([2.0, 2.0, 2.0, 2.0, -1.0], dtype=wp.float32))
    # a projector onto (e0 + e1) / sqrt(2): not diagonal
    P = sp.bsr_from_triplets(n, n, wp.array([0, 0, 1, 1], dtype=int), wp.array([0, 1, 0, 1], dtype=int),
                             wp.array([0.5, 0.5, 0.5, 0.5], dtype=wp.float32))
    assert not dirichlet_kernels.project_with_diagonal_projector(A, P)
    dense_a, dense_p = _to_dense(A), _to_dense(P)
    fem.project_system_matrix(A, P)
    c = np.eye(n) - dense_p
    np.testing.assert_allclose(_to_dense(A), c @ dense_a @ c + dense_p, atol=1e-6)


@pytest.mark.parametrize("block", [1, 2])
@pytest.mark.parametrize("prune", [True, False])
def test_row_assembly_matches_triplets(block: int, prune: bool) -> None:
    from treadle._src.fem.assemble_rows import assemble_rows

    rng = np.random.default_rng(3)
    n_elem, mt, mr, n_rows, n_cols = 40, 4, 3, 25, 30
    tnodes = rng.integers(-1, n_rows, n_elem * mt).astype(np.int32)
    rnodes = rng.integers(-1, n_cols, n_elem * mr).astype(np.int32)
    shape = (n_elem * mt * mr,) if block == 1 else (n_elem * mt * mr, block, block)
    vals = rng.standard_normal(shape).astype(np.float32)
    vals[rng.random(n_elem * mt * mr) < 0.3] = 0.0  # zero blocks, pruned or kept
    block_t = wp.float32 if block == 1 else wp.types.matrix(shape=(block, block), dtype=wp.float32)
    wvals = wp.array(vals, dtype=block_t)
    A = sp.bsr_zeros(n_rows, n_cols, block_type=block_t)
    assemble_rows(A, n_rows, wp.array(tnodes), wp.array(rnodes), wvals, mt, mr, prune)
    d, i, j = np.meshgrid(np.arange(n_elem), np.arange(mt), np.arange(mr), indexing="ij")
    rows = tnodes[d * mt + i].reshape(-1)
    cols = rnodes[d * mr + j].reshape(-1)
    ok = (rows >= 0) & (cols >= 0)
    rows, cols = np.where(ok, rows, -1), np.where(ok, cols, -1)
    B = sp.bsr_zeros(n_rows, n_cols, block_type=block_t)
    sp.bsr_set_from_triplets(B, wp.array(rows.astype(np.int32)), wp.array(cols.astype(np.int32)), wvals,
                             prune_numerical_zeros=prune)
    assert A.nnz == B.nnz_sync()
    np.testing.assert_array_equal(A.offsets.numpy()[:n_rows + 1], B.offsets.numpy()[:n_rows + 1])
    np.testing.assert_array_equal(A.columns.numpy()[:A.nnz], B.columns.numpy()[:A.nnz])
    np.testing.assert_array_equal(A.values.numpy()[:A.nnz], B.values.numpy()[:A.nnz])


@pytest.mark.parametrize("vector", [False, True])
def test_embedded_surface_matches_generic(monkeypatch: pytest.MonkeyPatch, vector: bool) -> None:
    from treadle._src.fem.utils import grid_to_tris

    from .forms import diffusion_mass, lattice

    xy = lattice(3, 2)
    pos = np.concatenate([xy, (0.3 * xy[:, :1] + 0.2 * xy[:, 1:] ** 2)], axis=1).astype(np.float32)
    geo = fem.Trimesh3D(wp.array(grid_to_tris(3, 3), dtype=int), wp.array(pos, dtype=wp.vec3))
    space = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec3 if vector else float)

    def run():  # noqa: ANN202
        A = fem.integrate(diffusion_mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
                          values={"a": 1.0, "b": 0.5}, output_dtype=wp.float64)
        return _to_dense(A)

    A1, A0 = _both(monkeypatch, run)
    assert "bilinear_cells" in _kinds(diffusion_mass)
    assert np.abs(A0).max() > 0.1
    np.testing.assert_allclose(A1, A0, rtol=1e-9, atol=1e-12)
