"""Geometries: cell, side and boundary counts, and side quantities checked by the divergence theorem
(``int_dOmega x . n = dim |Omega|``, ``int_dOmega n = 0``, ``int_dOmega 1 = |dOmega|``) and by jumps of continuous
fields across interior sides."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem

from .forms import lattice, make_geometry


@fem.integrand
def boundary_moments(s: fem.Sample, domain: fem.Domain, which: int):
    x = domain(s)
    n = fem.normal(domain, s)
    if which == 0:
        return wp.dot(x, n)
    if which == 1:
        return n[0] + 2.0 * n[1]
    return 1.0


@fem.integrand
def jump_norm(s: fem.Sample, u: fem.Field):
    j = fem.jump(u, s)
    return j * j


@fem.integrand
def side_position_check(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    # a linear field seen from both sides equals the affine function of the side's position
    x = domain(s)
    e = fem.average(u, s) - (x[0] + 2.0 * x[1])
    return e * e


KINDS = ["grid2d", "tri", "quad", "grid3d", "tet", "hex"]


@pytest.mark.parametrize("kind", KINDS)
def test_divergence_theorem_on_boundary(kind: str) -> None:
    geo = make_geometry(kind, 2)
    dim = geo.dimension
    bd = fem.BoundarySides(geo)
    q = fem.RegularQuadrature(bd, 2)
    flux = fem.integrate(boundary_moments, quadrature=q, values={"which": 0})
    net = fem.integrate(boundary_moments, quadrature=q, values={"which": 1})
    area = fem.integrate(boundary_moments, quadrature=q, values={"which": 2})
    assert flux == pytest.approx(dim, rel=1e-5)
    assert net == pytest.approx(0.0, abs=1e-5)
    assert area == pytest.approx(2 * dim, rel=1e-5)


@pytest.mark.parametrize("kind", ["tri", "hex"])
def test_continuous_fields_do_not_jump(kind: str) -> None:
    geo = make_geometry(kind, 2)
    space = fem.make_polynomial_space(geo, degree=1)
    u = space.make_field()
    pos = space.node_positions().numpy()
    u.dof_values = wp.array((pos[:, 0] + 2.0 * pos[:, 1]).astype(np.float32))
    sides = fem.Sides(geo)
    assert fem.integrate(jump_norm, domain=sides, fields={"u": u}) < 1e-10
    assert fem.integrate(side_position_check, domain=sides, fields={"u": u}) < 1e-10
    # a discontinuous field does jump
    d = fem.make_polynomial_space(geo, degree=0).make_field()
    d.dof_values = wp.array(np.arange(geo.cell_count(), dtype=np.float32))
    assert fem.integrate(jump_norm, domain=sides, fields={"u": d}) > 0.1


def test_counts() -> None:
    g2 = fem.Grid2D(res=wp.vec2i(3, 2))
    assert (g2.cell_count(), g2.vertex_count(), g2.side_count(), g2.boundary_side_count()) == (6, 12, 17, 10)
    g3 = fem.Grid3D(res=wp.vec3i(2, 3, 4))
    assert g3.cell_count() == 24 and g3.vertex_count() == 60
    assert g3.side_count() == 3 * 3 * 4 + 2 * 4 * 4 + 2 * 3 * 5 and g3.boundary_side_count() == 2 * (12 + 8 + 6)
    for kind, cells, sides, boundary in [("tri", 8, 16, 8), ("quad", 4, 12, 8), ("tet", 40, 104, 48),
                                         ("hex", 8, 36, 24)]:
        geo = make_geometry(kind, 2)
        assert (geo.cell_count(), geo.side_count(), geo.boundary_side_count()) == (cells, sides, boundary), kind


@fem.integrand
def lookup_value(s: fem.Sample, domain: fem.Domain, u: fem.Field, pts: wp.array(dtype=wp.vec2),
                 out: wp.array(dtype=float)):
    i = s.qp_index
    out[i] = u(fem.lookup(domain, pts[i]))
    return 0.0


def test_lookup_on_grid_and_mesh() -> None:
    rng = np.random.default_rng(0)
    pts = rng.uniform(0.02, 0.98, size=(20, 2)).astype(np.float32)
    for geo in (fem.Grid2D(res=wp.vec2i(3)), make_geometry("tri", 3)):
        space = fem.make_polynomial_space(geo, degree=1)
        u = space.make_field()
        pos = space.node_positions().numpy()
        u.dof_values = wp.array((pos[:, 0] + 2.0 * pos[:, 1]).astype(np.float32))
        out = wp.zeros(len(pts), dtype=float)
        fem.interpolate(lookup_value, dim=len(pts), fields={"u": u},
                        values={"pts": wp.array(pts, dtype=wp.vec2), "out": out})
        np.testing.assert_allclose(out.numpy(), pts[:, 0] + 2.0 * pts[:, 1], atol=1e-5)


def test_mesh_with_inverted_cells_keeps_outward_normals() -> None:
    tris = fem.utils.grid_to_tris(2, 2)[:, ::-1].copy()  # clockwise triangles
    geo = fem.Trimesh2D(wp.array(tris, dtype=int), wp.array(lattice(2, 2), dtype=wp.vec2))
    q = fem.RegularQuadrature(fem.BoundarySides(geo), 2)
    assert fem.integrate(boundary_moments, quadrature=q, values={"which": 0}) == pytest.approx(2.0, rel=1e-5)


@wp.func
def shear(x: wp.vec2):
    return wp.vec2(0.5 * x[1], 0.25 * x[0])


@wp.func
def shear_grad(x: wp.vec2):
    return wp.mat22(0.0, 0.5, 0.25, 0.0)


@fem.integrand
def one(s: fem.Sample, domain: fem.Domain):
    return 1.0


def test_deformed_geometry() -> None:
    base = fem.Grid2D(res=wp.vec2i(2))
    # an affine displacement: areas scale by det(I + A) = 1 - 0.125
    disp = fem.ImplicitField(fem.Cells(base), shear, grad_func=shear_grad)
    geo = disp.make_deformed_geometry(relative=True)
    assert fem.integrate(one, domain=fem.Cells(geo)) == pytest.approx(0.875, rel=1e-5)
    q = fem.RegularQuadrature(fem.BoundarySides(geo), 2)
    assert fem.integrate(boundary_moments, quadrature=q, values={"which": 0}) == pytest.approx(2 * 0.875, rel=1e-5)
    assert fem.integrate(boundary_moments, quadrature=q, values={"which": 1}) == pytest.approx(0.0, abs=1e-5)
    # the same motion as a discrete displacement field
    space = fem.make_polynomial_space(base, degree=1, dtype=wp.vec2)
    u = space.make_field()
    fem.interpolate(disp, dest=u)
    geo2 = u.make_deformed_geometry()
    assert fem.integrate(one, domain=fem.Cells(geo2)) == pytest.approx(0.875, rel=1e-5)


@wp.func
def stretch_x(x: wp.vec3):
    return wp.vec3(x[0], 0.0, 0.5 * x[0])


@wp.func
def stretch_x_grad(x: wp.vec3):
    return wp.mat33(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0)


def test_deformed_embedded_surface() -> None:
    # the unit square as a triangle surface in 3D, displaced by (x, 0, x/2): a flat rectangle of sides
    # sqrt(2^2 + 0.5^2) and 1
    tris = fem.utils.grid_to_tris(2, 2)
    pos = np.concatenate([lattice(2, 2), np.zeros((9, 1))], axis=1)
    base = fem.Trimesh3D(wp.array(tris, dtype=int), wp.array(pos, dtype=wp.vec3))
    space = fem.make_polynomial_space(base, degree=1, dtype=wp.vec3)
    u = space.make_field()
    fem.interpolate(fem.ImplicitField(fem.Cells(base), stretch_x, grad_func=stretch_x_grad), dest=u)
    geo = u.make_deformed_geometry(relative=True)
    long_side = float(np.hypot(2.0, 0.5))
    assert fem.integrate(one, domain=fem.Cells(geo)) == pytest.approx(long_side, rel=1e-5)
    q = fem.RegularQuadrature(fem.BoundarySides(geo), 2)
    assert fem.integrate(one, quadrature=q) == pytest.approx(2.0 * long_side + 2.0, rel=1e-5)


@fem.integrand
def _filtered_lookup(s: fem.Sample, domain: fem.Domain, filt: wp.array(dtype=int), out: wp.array(dtype=int)):
    sf = fem.lookup(domain, domain(s), 10.0, filt, 1)
    out[s.element_index] = sf.element_index


@pytest.mark.parametrize("kind", ["grid2d", "tri"])
def test_filtered_lookup_finds_the_closest_selected_cell(kind: str) -> None:
    geo = make_geometry(kind, 3)
    n = geo.cell_count()
    filt = np.zeros(n, dtype=np.int32)
    filt[n // 2] = 1
    out = wp.zeros(n, dtype=int)
    fem.interpolate(_filtered_lookup, at=fem.RegularQuadrature(fem.Cells(geo), 0),
                    values={"filt": wp.array(filt), "out": out})
    np.testing.assert_array_equal(out.numpy(), np.full(n, n // 2))


def test_edge_counts_and_reference_prototypes() -> None:
    n = 3
    assert fem.Grid3D(res=wp.vec3i(n)).edge_count() == 3 * n * (n + 1) ** 2
    assert make_geometry("hex", n).edge_count() == 3 * n * (n + 1) ** 2
    # five tetrahedra per cube: the cube edges plus one diagonal per face
    tet = make_geometry("tet", n)
    assert tet.cell_count() == 5 * n**3
    faces = 3 * n * n * (n + 1)
    assert tet.edge_count() == 3 * n * (n + 1) ** 2 + faces
    assert fem.Element.TRIANGLE.prototype.measure() == pytest.approx(0.5)
    assert fem.Element.TETRAHEDRON.prototype.measure() == pytest.approx(1.0 / 6.0)
    coords, weights = fem.Element.SQUARE.prototype.instantiate_quadrature(3)
    assert len(coords) == 4 and sum(weights) == pytest.approx(1.0)


@fem.integrand
def side_coords_error(s: fem.Sample, domain: fem.Domain):
    c = fem.element_coordinates(domain, s.element_index, domain(s))
    d = c - s.element_coords
    return wp.dot(d, d)


@fem.integrand
def side_coords_norm(s: fem.Sample, domain: fem.Domain):
    return wp.dot(s.element_coords, s.element_coords)


@pytest.mark.parametrize("kind", ["grid2d", "grid3d", "tri", "quad", "tet", "hex"])
def test_element_coordinates_on_sides(kind: str) -> None:
    from .forms import make_geometry

    geo = make_geometry(kind, 2)
    q = fem.RegularQuadrature(fem.Sides(geo), order=2)
    assert fem.integrate(side_coords_norm, quadrature=q) > 0.01
    assert fem.integrate(side_coords_error, quadrature=q) < 1e-10


@fem.integrand
def measure_from_gradient_error(s: fem.Sample, domain: fem.Domain, ref: float):
    F = fem.deformation_gradient(domain, s)
    e = fem.Geometry._element_measure(F) * ref - fem.measure(domain, s)
    return e * e


@fem.integrand
def normal_from_gradient_error(s: fem.Sample, domain: fem.Domain):
    d = fem.Geometry._element_normal(fem.deformation_gradient(domain, s)) - fem.normal(domain, s)
    return wp.dot(d, d)


@pytest.mark.parametrize("kind,cell_ref,side_ref", [("grid2d", 1.0, 1.0), ("tri", 0.5, 1.0), ("quad", 1.0, 1.0),
                                                    ("grid3d", 1.0, 1.0), ("tet", 1.0 / 6.0, 0.5),
                                                    ("hex", 1.0, 1.0)])
def test_element_measure_and_normal_from_deformation_gradient(kind: str, cell_ref: float, side_ref: float) -> None:
    from .forms import make_geometry

    geo = make_geometry(kind, 2)
    cells = fem.RegularQuadrature(fem.Cells(geo), order=1)
    sides = fem.RegularQuadrature(fem.Sides(geo), order=1)
    assert fem.integrate(measure_from_gradient_error, quadrature=cells, values={"ref": cell_ref}) < 1e-10
    assert fem.integrate(measure_from_gradient_error, quadrature=sides, values={"ref": side_ref}) < 1e-10
    if not kind.startswith("grid"):
        # mesh sides are parametrised so that the normal completes the deformation gradient (grid sides are not)
        assert fem.integrate(normal_from_gradient_error, quadrature=sides) < 1e-10
    # a wrong reference measure is seen
    assert fem.integrate(measure_from_gradient_error, quadrature=cells, values={"ref": 2.0 * cell_ref}) > 1e-6


@pytest.mark.parametrize("kind", ["tet", "hex"])
def test_deformed_volume_mesh_boundary_area(kind: str) -> None:
    # a discrete displacement scaling x by 2: the unit cube's boundary area becomes 2 * (1 + 2 + 2) = 10
    base = make_geometry(kind, 2)
    u = fem.make_polynomial_space(base, degree=1, dtype=wp.vec3).make_field()
    pos = base.positions.numpy()
    disp = np.zeros_like(pos)
    disp[:, 0] = pos[:, 0]
    u.dof_values = wp.array(disp, dtype=wp.vec3)
    geo = u.make_deformed_geometry(relative=True)
    assert fem.integrate(one, domain=fem.BoundarySides(geo)) == pytest.approx(10.0, rel=1e-5)
    assert fem.integrate(one, domain=fem.Cells(geo)) == pytest.approx(2.0, rel=1e-5)
