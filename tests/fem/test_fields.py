"""Implicit, uniform and non-conforming fields, interpolation at quadrature points, partitions, restrictions,
Dirichlet projection and temporaries."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
import treadle.sparse as sp

from .forms import make_geometry


@wp.func
def plane(x: wp.vec2, a: float):
    return a * x[0] + x[1]


@fem.integrand
def value_of(s: fem.Sample, f: fem.Field):
    return f(s)


@fem.integrand
def product(s: fem.Sample, f: fem.Field, g: fem.Field):
    return f(s) * g(s)


@fem.integrand
def mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


def test_implicit_uniform_and_nonconforming_fields() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2))
    cells = fem.Cells(geo)
    imp = fem.ImplicitField(cells, plane, values={"a": 3.0})
    assert imp.dtype == wp.float32
    # int_0^1 int_0^1 (3x + y) = 2
    assert fem.integrate(value_of, domain=cells, fields={"f": imp}) == pytest.approx(2.0, rel=1e-6)
    uni = fem.UniformField(cells, 2.0)
    assert fem.integrate(product, domain=cells, fields={"f": imp, "g": uni}) == pytest.approx(4.0, rel=1e-6)
    # a field of a finer triangle mesh seen on the grid through lookups
    tri = make_geometry("tri", 4)
    space = fem.make_polynomial_space(tri, degree=1)
    u = space.make_field()
    fem.interpolate(fem.ImplicitField(fem.Cells(tri), plane, values={"a": 3.0}), dest=u)
    nc = fem.NonconformingField(cells, u)
    assert fem.integrate(value_of, domain=cells, fields={"f": nc}) == pytest.approx(2.0, rel=1e-4)
    with pytest.raises(TypeError, match="must be a DiscreteField"):
        fem.NonconformingField(cells, imp)
    with pytest.raises(Exception, match="parameters after the position"):
        fem.ImplicitField(cells, plane, values={"b": 1.0})


def test_interpolation_at_quadrature_points() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2))
    q = fem.RegularQuadrature(fem.Cells(geo), 2)
    imp = fem.ImplicitField(fem.Cells(geo), plane, values={"a": 1.0})
    out = wp.zeros(q.total_point_count(), dtype=float)
    fem.interpolate(value_of, at=q, dest=out, fields={"f": imp})
    # points in element order: cell c at (i, j) = (c // 2, c % 2), local points of the rule
    pts = q.points
    expect = []
    for c in range(4):
        i, j = divmod(c, 2)
        for p in pts:
            x, y = (i + p[0]) / 2, (j + p[1]) / 2
            expect.append(x + y)
    np.testing.assert_allclose(out.numpy(), expect, atol=1e-6)


def test_partitions_cover_the_geometry() -> None:
    geo = make_geometry("tri", 3)
    space = fem.make_polynomial_space(geo, degree=1)
    mask = np.zeros(geo.cell_count(), dtype=np.int32)
    mask[: geo.cell_count() // 2] = 1
    parts = [fem.ExplicitGeometryPartition(geo, wp.array(mask, dtype=int)),
             fem.ExplicitGeometryPartition(geo, wp.array(1 - mask, dtype=int))]
    assert sum(p.cell_count() for p in parts) == geo.cell_count()
    assert parts[0].frontier_side_count() == parts[1].frontier_side_count() > 0
    assert sum(p.boundary_side_count() for p in parts) == geo.boundary_side_count()
    one = fem.UniformField(fem.Cells(geo), 1.0)
    areas = [fem.integrate(value_of, domain=fem.Cells(p), fields={"f": one}) for p in parts]
    assert sum(areas) == pytest.approx(1.0, rel=1e-6)
    lin = [fem.LinearGeometryPartition(geo, r, 3) for r in range(3)]
    assert [p.cell_count() for p in lin] == [6, 6, 6]
    sparts = [fem.make_space_partition(space.topology, p) for p in parts]
    assert sum(p.owned_node_count() for p in sparts) == space.node_count()
    assert all(p.node_count() >= p.owned_node_count() for p in sparts)
    # a linear form over a partition fills only that partition's rows
    test = fem.make_test(space, space_partition=sparts[0], domain=fem.Cells(parts[0]))
    r = fem.integrate(product, fields={"f": one, "g": test})
    assert r.shape[0] == sparts[0].node_count()
    assert r.numpy().sum() == pytest.approx(areas[0], rel=1e-5)
    restr = fem.make_space_restriction(space_partition=sparts[0], domain=fem.Cells(parts[0]))
    # the restriction holds the nodes the partition's cells touch: the partition without its halo (the nodes of the
    # cells across the frontier)
    no_halo = fem.make_space_partition(space.topology, parts[0], with_halo=False)
    assert restr.node_count() == no_halo.node_count() < sparts[0].node_count()


def test_dirichlet_projection_against_numpy() -> None:
    geo = fem.Grid2D(res=wp.vec2i(3))
    space = fem.make_polynomial_space(geo, degree=1)
    a = fem.integrate(mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)})
    bd = fem.BoundarySides(geo)
    p = fem.integrate(mass, fields={"u": fem.make_trial(space, domain=bd), "v": fem.make_test(space, domain=bd)},
                      assembly="nodal")
    n = space.node_count()
    rng = np.random.default_rng(0)
    b = rng.normal(size=n).astype(np.float32)
    fixed = rng.normal(size=n).astype(np.float32)
    A = _dense(a)
    P = _dense(p)
    on_boundary = np.abs(np.diag(P)) > 0
    pos = space.node_positions().numpy()
    assert np.array_equal(on_boundary, (np.abs(pos - 0.5).max(axis=1) > 0.49))
    w = np.where(on_boundary, np.diag(P), 1.0)
    Pn = P / w[:, None]
    u0 = fixed / w
    rhs = wp.array(b)
    fem.project_linear_system(a, rhs, p, wp.array(fixed))
    eye = np.eye(n)
    np.testing.assert_allclose(_dense(a), (eye - Pn) @ A @ (eye - Pn) + Pn, atol=1e-5)
    np.testing.assert_allclose(rhs.numpy(), (eye - Pn) @ (b - A @ u0) + Pn @ u0, atol=1e-4)


def _dense(m: sp.BsrMatrix) -> np.ndarray:
    out = np.zeros((m.nrow, m.ncol))
    off, cols, vals = m.offsets.numpy(), m.columns.numpy(), m.values.numpy()
    for r in range(m.nrow):
        for k in range(off[r], off[r + 1]):
            out[r, cols[k]] = vals[k]
    return out


def test_temporary_store_reuses_buffers() -> None:
    store = fem.TemporaryStore()
    a = fem.borrow_temporary(store, shape=(4, 5), dtype=float)
    assert a.shape == (4, 5) and store.borrowed_count == 1
    ptr = a.ptr
    a.release()
    assert store.borrowed_count == 0
    b = fem.borrow_temporary(store, shape=12, dtype=float)
    assert b.ptr == ptr and b.shape == (12,)
    del b
    gc.collect()
    assert store.borrowed_count == 0
    c = fem.borrow_temporary_like(wp.zeros(3, dtype=wp.vec3), store)
    assert c.dtype == wp.vec3 and c.shape == (3,)
    fem.set_default_temporary_store(store)
    try:
        d = fem.borrow_temporary(None, shape=2, dtype=int)
        assert store.borrowed_count == 2
        d.release()
    finally:
        fem.set_default_temporary_store(None)
    store.clear()
    with pytest.raises(TypeError, match="TemporaryStore"):
        fem.set_default_temporary_store(object())


@fem.integrand
def _element_number(s: fem.Sample):
    return float(s.element_index)


@pytest.mark.parametrize("mode", ["weighted_average", "mean", "sum", "max", "min", "first"])
def test_interpolate_reductions_at_shared_nodes(mode: str) -> None:
    # a discontinuous (per-element) value at the vertices of a 2x2 grid: each reduction over the adjacent cells
    geo = fem.Grid2D(res=wp.vec2i(2))
    f = fem.make_polynomial_space(geo, degree=1).make_field()
    fem.interpolate(_element_number, dest=f, reduction=mode)
    ops = {"weighted_average": np.mean, "mean": np.mean, "sum": np.sum, "max": np.max, "min": np.min, "first": np.min}
    expected = []
    for ix in range(3):
        for iy in range(3):
            cells = [i * 2 + j for i in (ix - 1, ix) if 0 <= i < 2 for j in (iy - 1, iy) if 0 <= j < 2]
            expected.append(ops[mode](cells))
    np.testing.assert_allclose(f.dof_values.numpy(), expected, atol=1e-6)


def test_interpolate_rejects_unknown_reduction() -> None:
    f = fem.make_polynomial_space(fem.Grid2D(res=wp.vec2i(2)), degree=1).make_field()
    with pytest.raises(ValueError, match="reduction must be one of"):
        fem.interpolate(_element_number, dest=f, reduction="median")


@fem.integrand
def _field_value(s: fem.Sample, f: fem.Field):
    return f(s)


def test_nonconforming_field_background_outside_its_geometry() -> None:
    # a field of ones on a small grid sitting on the top edge of a larger one: seen from the larger grid's boundary,
    # only the side midpoints (one-point rule) inside the small grid's span read the field, the others the background
    g1 = fem.Grid2D(bounds_hi=wp.vec2(1.0, 0.5), res=wp.vec2i(8))
    g2 = fem.Grid2D(bounds_lo=wp.vec2(0.33, 0.5), bounds_hi=wp.vec2(0.67, 0.83), res=wp.vec2i(8))
    f = fem.make_polynomial_space(g2, degree=1).make_field()
    f.dof_values.fill_(1.0)
    b = fem.BoundarySides(g1)
    q = fem.RegularQuadrature(b, order=1)
    # midpoints 0.4375 and 0.5625 are inside [0.33, 0.67]; 0.3125 and 0.6875 are not
    assert fem.integrate(_field_value, quadrature=q, fields={"f": fem.NonconformingField(b, f)}) == \
        pytest.approx(0.25, rel=1e-5)
    total = 3.0  # boundary length
    got = fem.integrate(_field_value, quadrature=q, fields={"f": fem.NonconformingField(b, f, background=2.0)})
    assert got == pytest.approx(0.25 + 2.0 * (total - 0.25), rel=1e-5)


@fem.integrand
def _tensor_div_dot(s: fem.Sample, tau: fem.Field, v: fem.Field):
    return wp.dot(fem.div(tau, s), v(s))


@fem.integrand
def _tensor_grad_part(s: fem.Sample, tau: fem.Field, v: fem.Field):
    return wp.ddot(wp.transpose(tau(s)), fem.grad(v, s))


@fem.integrand
def _tensor_flux(s: fem.Sample, domain: fem.Domain, tau: fem.Field, v: fem.Field):
    return wp.dot(tau(s) * v(s), fem.normal(domain, s))


def test_tensor_divergence_contracts_the_first_index() -> None:
    # int div(tau) . v + int tau^T : grad(v) = int (tau v) . n, with div(tau)_j = sum_i d tau_ij / dx_i
    rng = np.random.default_rng(5)
    geo = fem.Grid2D(res=wp.vec2i(4))
    tau = fem.make_polynomial_space(geo, degree=2, dtype=wp.mat22).make_field()
    tau.dof_values = wp.array(rng.random((tau.dof_values.shape[0], 2, 2)).astype(np.float32), dtype=wp.mat22)
    v = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec2).make_field()
    v.dof_values = wp.array(rng.random((v.dof_values.shape[0], 2)).astype(np.float32), dtype=wp.vec2)
    qc = fem.RegularQuadrature(fem.Cells(geo), order=3)
    qb = fem.RegularQuadrature(fem.BoundarySides(geo), order=3)
    lhs = fem.integrate(_tensor_div_dot, quadrature=qc, fields={"tau": tau, "v": v}) + \
        fem.integrate(_tensor_grad_part, quadrature=qc, fields={"tau": tau, "v": v})
    rhs = fem.integrate(_tensor_flux, quadrature=qb, fields={"tau": tau.trace(), "v": v.trace()})
    assert lhs == pytest.approx(rhs, rel=1e-4, abs=1e-5)
