"""Nedelec (first kind) and Raviart-Thomas spaces: exact reproduction of the lowest-order fields on every cell kind
(which also checks the orientation signs across cells of unstructured meshes), ``div``/``curl`` against the analytic
values, first-order convergence of interpolation, the Piola-mapped mass matrix against NumPy, nodal assembly, and
errors."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem

from .forms import make_geometry

N1 = fem.ElementBasis.NEDELEC_FIRST_KIND
RT = fem.ElementBasis.RAVIART_THOMAS
W3 = wp.constant(wp.vec3(0.5, -1.0, 0.25))


# lowest-order fields: a + b x (Raviart-Thomas), a + b (-y, x) and a + w x x (Nedelec)
@wp.func
def rt_field(x: wp.vec2):
    return wp.vec2(1.0 + 0.5 * x[0], 2.0 + 0.5 * x[1])


@wp.func
def rt_field(x: wp.vec3):  # noqa: F811 - overload
    return wp.vec3(1.0, 2.0, 3.0) + 0.5 * x


@wp.func
def n1_field(x: wp.vec2):
    return wp.vec2(1.0 - 0.75 * x[1], 2.0 + 0.75 * x[0])


@wp.func
def n1_field(x: wp.vec3):  # noqa: F811 - overload
    return wp.vec3(1.0, 2.0, 3.0) + wp.cross(W3, x)


@wp.func
def smooth_field(x: wp.vec2):
    return wp.vec2(wp.sin(3.0 * x[1]), wp.cos(2.0 * x[0] + x[1]))


@wp.func
def smooth_field(x: wp.vec3):  # noqa: F811 - overload
    return wp.vec3(wp.sin(3.0 * x[1]), wp.cos(2.0 * x[0] + x[2]), x[0] * x[1])


@fem.integrand
def rt_target(s: fem.Sample, domain: fem.Domain):
    return rt_field(domain(s))


@fem.integrand
def n1_target(s: fem.Sample, domain: fem.Domain):
    return n1_field(domain(s))


@fem.integrand
def smooth_target(s: fem.Sample, domain: fem.Domain):
    return smooth_field(domain(s))


@fem.integrand
def rt_error(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    d = u(s) - rt_field(domain(s))
    return wp.dot(d, d)


@fem.integrand
def n1_error(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    d = u(s) - n1_field(domain(s))
    return wp.dot(d, d)


@fem.integrand
def smooth_error(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    d = u(s) - smooth_field(domain(s))
    return wp.dot(d, d)


@fem.integrand
def divergence(s: fem.Sample, u: fem.Field):
    return fem.div(u, s)


@fem.integrand
def curl_of(s: fem.Sample, u: fem.Field):
    return fem.curl(u, s)


@fem.integrand
def mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s))


KINDS = ["grid2d", "tri", "quad", "grid3d", "tet", "hex"]


@pytest.mark.parametrize("kind", KINDS)
def test_raviart_thomas_reproduces_lowest_order_fields(kind: str) -> None:
    geo = make_geometry(kind, 3)
    space = fem.make_polynomial_space(geo, degree=1, element_basis=RT)
    assert space.dtype._length_ == geo.dimension and space.dof_dtype == wp.float32
    u = space.make_field()
    fem.interpolate(rt_target, dest=u)
    cells = fem.Cells(geo)
    err = fem.integrate(rt_error, fields={"u": u}, quadrature=fem.RegularQuadrature(cells, order=4))
    assert err < 1e-9
    # div(a + b x) = dim * b over the unit square / cube
    assert fem.integrate(divergence, fields={"u": u}, domain=cells) == pytest.approx(0.5 * geo.dimension, rel=1e-4)


@pytest.mark.parametrize("kind", KINDS)
def test_nedelec_reproduces_lowest_order_fields(kind: str) -> None:
    geo = make_geometry(kind, 3)
    space = fem.make_polynomial_space(geo, degree=1, element_basis=N1)
    u = space.make_field()
    fem.interpolate(n1_target, dest=u)
    cells = fem.Cells(geo)
    err = fem.integrate(n1_error, fields={"u": u}, quadrature=fem.RegularQuadrature(cells, order=4))
    assert err < 1e-9
    assert fem.integrate(divergence, fields={"u": u}, domain=cells) == pytest.approx(0.0, abs=1e-5)
    # fem.curl is the skew part of the gradient: half the curl, 0.75 in 2D and w in 3D
    c = fem.integrate(curl_of, fields={"u": u}, domain=cells)
    np.testing.assert_allclose(np.asarray(c), 0.75 if geo.dimension == 2 else [0.5, -1.0, 0.25], atol=1e-5)


@pytest.mark.parametrize("kind,basis", [("tri", RT), ("tri", N1), ("tet", RT), ("tet", N1)])
def test_interpolation_converges_at_first_order(kind: str, basis: fem.ElementBasis) -> None:
    errs = []
    for n in (4, 8):
        geo = make_geometry(kind, n)
        u = fem.make_polynomial_space(geo, degree=1, element_basis=basis).make_field()
        fem.interpolate(smooth_target, dest=u)
        q = fem.RegularQuadrature(fem.Cells(geo), order=4)
        errs.append(np.sqrt(fem.integrate(smooth_error, fields={"u": u}, quadrature=q)))
    rate = np.log2(errs[0] / errs[1])
    assert 0.8 < rate < 1.4, errs


def _one_triangle() -> tuple[fem.Trimesh2D, np.ndarray]:
    pos = np.array([[0.1, 0.2], [1.3, 0.4], [0.5, 1.1]], dtype=np.float32)
    return fem.Trimesh2D(wp.array(np.array([[0, 1, 2]]), dtype=int), wp.array(pos, dtype=wp.vec2)), pos


@pytest.mark.parametrize("basis", [RT, N1])
def test_mass_matrix_matches_numpy_piola_map(basis: fem.ElementBasis) -> None:
    geo, pos = _one_triangle()
    space = fem.make_polynomial_space(geo, degree=1, element_basis=basis)
    u, v = fem.make_trial(space), fem.make_test(space)
    m = fem.integrate(mass, fields={"u": u, "v": v}, quadrature=fem.RegularQuadrature(fem.Cells(geo), order=2))
    got = np.zeros((3, 3))
    off, cols, vals = m.offsets.numpy(), m.columns.numpy(), m.values.numpy().reshape(-1)
    for r in range(3):
        for j in range(off[r], off[r + 1]):
            got[r, cols[j]] = vals[j]
    # NumPy: F = [p1 - p0, p2 - p0], values M phi with M = F^-T (Nedelec) or F / det F (Raviart-Thomas)
    shape = space.basis.shape
    F = np.stack([pos[1] - pos[0], pos[2] - pos[0]], axis=1).astype(np.float64)
    M = np.linalg.inv(F).T if basis == N1 else F / abs(np.linalg.det(F))
    signs = space.topology.element_node_signs().numpy()[0]
    nodes = space.topology.element_node_indices().numpy()[0]
    pts = np.array([[1 / 6, 1 / 6], [2 / 3, 1 / 6], [1 / 6, 2 / 3]])  # degree-2 exact rule on the triangle
    want = np.zeros((3, 3))
    for x in pts:
        vals_k = [signs[k] * (M @ shape.evaluate(x, k)) for k in range(3)]
        for a in range(3):
            for b in range(3):
                want[nodes[a], nodes[b]] += vals_k[a] @ vals_k[b] * abs(np.linalg.det(F)) / 6.0
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_nodal_assembly_stores_one_block_per_node() -> None:
    geo = make_geometry("grid3d", 2)
    space = fem.make_polynomial_space(geo, degree=1, element_basis=RT)
    m = fem.integrate(mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)}, assembly="nodal")
    n = space.node_count()
    assert m.values.shape[0] == n and m.nnz == n
    # one node per face, weight 1/6 of the cell: the faces' unit-flux functions give 1 / (6 h) per cell
    h = 0.5
    d = m.values.numpy().reshape(-1)
    assert np.all(d > 0) and d.max() == pytest.approx(2 / (6 * h), rel=1e-5)
    assert d.min() == pytest.approx(1 / (6 * h), rel=1e-5)


def test_bad_arguments_raise() -> None:
    geo = make_geometry("tri", 2)
    with pytest.raises(NotImplementedError, match="degree 1 only"):
        fem.make_polynomial_space(geo, degree=2, element_basis=N1)
    with pytest.raises(ValueError, match="vectors of length 2"):
        fem.make_polynomial_space(geo, degree=1, element_basis=RT, dtype=wp.vec3)
    with pytest.raises(ValueError, match="no dof_mapper"):
        fem.make_polynomial_space(make_geometry("grid3d", 2), degree=1, element_basis=N1,
                                  dof_mapper=fem.SymmetricTensorMapper(wp.mat33))
