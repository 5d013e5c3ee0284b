"""``fem.Nanogrid``: counts against brute force, agreement with ``Grid3D`` on a box, lookups, rebuilds, errors."""

# no ``from __future__ import annotations``: the kernel below is annotated with a struct type of its closure

import itertools

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
import treadle.optim.linear as linear

from .forms import diffusion_mass, l2_error, neumann_rhs


def index_volume(ijk: np.ndarray, voxel_size: float = 1.0, translation=(0.0, 0.0, 0.0), **kw) -> wp.Volume:
    pts = wp.array(np.asarray(ijk, dtype=np.int32), dtype=wp.vec3i)
    return wp.Volume.allocate_by_voxels(pts, voxel_size=voxel_size, translation=translation, **kw)


def box_grid(n: int) -> fem.Nanogrid:
    """``n^3`` voxels of size ``1/n`` covering the unit cube."""
    ijk = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
    h = 1.0 / n
    return fem.Nanogrid(index_volume(ijk, h, (0.5 * h,) * 3))


def random_voxels(seed: int, n: int = 40, box: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.unique(rng.integers(-box // 2, box - box // 2, size=(n, 3)), axis=0)


def brute_counts(ijk: np.ndarray) -> tuple[int, int, int, int, int]:
    cells = {tuple(c) for c in ijk.tolist()}
    verts = {(i + a, j + b, k + c) for i, j, k in cells for a, b, c in itertools.product((0, 1), repeat=3)}
    faces: dict[tuple[int, int, int, int], int] = {}
    edges = set()
    for i, j, k in cells:
        for ax in range(3):
            for up in (0, 1):
                p = [i, j, k]
                p[ax] += up
                key = (ax, *p)
                faces[key] = faces.get(key, 0) + 1
            for a, b in itertools.product((0, 1), repeat=2):
                p = [i, j, k]
                p[(ax + 1) % 3] += a
                p[(ax + 2) % 3] += b
                edges.add((ax, *p))
    boundary = sum(1 for v in faces.values() if v == 1)
    return len(cells), len(verts), len(faces), boundary, len(edges)


@pytest.mark.parametrize("seed", [0, 1])
def test_counts_match_brute_force(seed: int) -> None:
    ijk = random_voxels(seed)
    geo = fem.Nanogrid(index_volume(ijk, 0.25))
    assert (geo.cell_count(), geo.vertex_count(), geo.side_count(), geo.boundary_side_count(),
            geo.edge_count()) == brute_counts(ijk)
    assert geo.vertex_grid.get_voxel_count() == geo.vertex_count()
    assert geo.face_grid.get_voxel_count() == geo.side_count()
    assert geo.edge_grid.get_voxel_count() == geo.edge_count()
    # cell c is the voxel the cell grid indexes as c
    np.testing.assert_array_equal(geo.cell_grid.get_voxels().numpy(), geo._cell_ijk_np)


@fem.integrand
def _one(s: fem.Sample):
    return 1.0


@fem.integrand
def _x_normal(s: fem.Sample, domain: fem.Domain, axis: int):
    return domain(s)[axis] * fem.normal(domain, s)[axis]


@fem.integrand
def _normal_component(s: fem.Sample, domain: fem.Domain, axis: int):
    return fem.normal(domain, s)[axis]


@fem.integrand
def _poly(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return x[0] * x[0] * x[1] + x[2] * x[2] * x[2]


def test_measures_and_divergence_theorem_on_a_sparse_set() -> None:
    ijk = random_voxels(3)
    h = 0.5
    geo = fem.Nanogrid(index_volume(ijk, h, (0.1, -0.2, 0.3)))
    vol = fem.integrate(_one, domain=fem.Cells(geo))
    assert vol == pytest.approx(len(ijk) * h**3, rel=1e-5)
    area = fem.integrate(_one, domain=fem.BoundarySides(geo))
    assert area == pytest.approx(brute_counts(ijk)[3] * h**2, rel=1e-5)
    for axis in range(3):
        # outward normals: the boundary integral of x_a n_a is the volume, that of n_a vanishes
        flux = fem.integrate(_x_normal, domain=fem.BoundarySides(geo), values={"axis": axis})
        assert flux == pytest.approx(vol, rel=1e-4)
        assert abs(fem.integrate(_normal_component, domain=fem.BoundarySides(geo), values={"axis": axis})) < 1e-5


def test_integrals_agree_with_grid3d_on_a_box() -> None:
    n = 3
    nano = box_grid(n)
    grid = fem.Grid3D(res=(n, n, n))
    for domain in (fem.Cells, fem.BoundarySides, fem.Sides):
        a = fem.integrate(_poly, domain=domain(nano), quadrature=fem.RegularQuadrature(domain(nano), 4))
        b = fem.integrate(_poly, domain=domain(grid), quadrature=fem.RegularQuadrature(domain(grid), 4))
        assert a == pytest.approx(b, rel=1e-5), domain.__name__
    # exact cell integral of x^2 y + z^3 over the unit cube
    assert fem.integrate(_poly, domain=fem.Cells(nano), quadrature=fem.RegularQuadrature(fem.Cells(nano), 4)) == \
        pytest.approx(1.0 / 6.0 + 0.25, rel=1e-5)


def _poisson_error(geo: fem.Geometry, degree: int, element_basis=None) -> float:
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=element_basis)
    test = fem.make_test(space)
    trial = fem.make_trial(space)
    order = 2 * degree + 2
    rhs = fem.integrate(neumann_rhs, quadrature=fem.RegularQuadrature(test.domain, order), fields={"v": test},
                        values={"c": 3 * np.pi**2 + 1.0})
    matrix = fem.integrate(diffusion_mass, fields={"u": trial, "v": test}, values={"a": 1.0, "b": 1.0})
    x = wp.zeros_like(rhs)
    linear.cg(matrix, rhs, x, tol=1.0e-8, maxiter=2000)
    u = space.make_field()
    u.dof_values = x
    return float(np.sqrt(fem.integrate(l2_error, quadrature=fem.RegularQuadrature(fem.Cells(geo), order),
                                       fields={"u": u})))


@pytest.mark.parametrize(("degree", "basis"), [(1, None), (2, None), (2, fem.ElementBasis.SERENDIPITY)])
def test_poisson_solution_matches_grid3d(degree: int, basis) -> None:
    n = 3
    nano = box_grid(n)
    grid = fem.Grid3D(res=(n, n, n))
    a = _poisson_error(nano, degree, basis)
    b = _poisson_error(grid, degree, basis)
    assert a == pytest.approx(b, rel=1e-3)
    assert a < 0.2


def test_node_counts_and_positions() -> None:
    ijk = random_voxels(5)
    geo = fem.Nanogrid(index_volume(ijk, 0.5))
    c, v, f, _, e = brute_counts(ijk)
    assert fem.make_polynomial_space(geo, degree=1).node_count() == v
    assert fem.make_polynomial_space(geo, degree=2).node_count() == v + e + f + c
    s2 = fem.make_polynomial_space(geo, degree=2, element_basis=fem.ElementBasis.SERENDIPITY)
    assert s2.node_count() == v + e
    # degree-1 nodes are the vertices, numbered by the vertex grid; a voxel's corner is half a voxel off its centre
    pos = fem.make_polynomial_space(geo, degree=1).node_positions().numpy()
    expected = (geo.vertex_grid.get_voxels().numpy() - 0.5) * 0.5
    np.testing.assert_allclose(pos, expected, atol=1e-6)


@fem.integrand
def _lookup(s: fem.Sample, domain: fem.Domain, x: wp.array(dtype=wp.vec3), cells: wp.array(dtype=int),
            coords: wp.array(dtype=wp.vec3)):
    q = fem.lookup(domain, x[s.qp_index])
    cells[s.qp_index] = q.element_index
    coords[s.qp_index] = q.element_coords


def test_lookup_of_world_positions() -> None:
    ijk = random_voxels(7)
    h = 0.5
    t = np.array([0.3, 0.0, -0.1])
    geo = fem.Nanogrid(index_volume(ijk, h, tuple(t)))
    rng = np.random.default_rng(1)
    voxels = geo.cell_grid.get_voxels().numpy()
    pick = rng.integers(0, len(voxels), 30)
    local = rng.uniform(0.05, 0.95, (30, 3))
    x = (voxels[pick] - 0.5 + local) * h + t
    far = np.array([[50.0, 50.0, 50.0]])
    xs = wp.array(np.concatenate([x, far]).astype(np.float32), dtype=wp.vec3)
    pic = fem.PicQuadrature(fem.Cells(geo), xs)
    cells = pic.particle_cells.numpy()
    np.testing.assert_array_equal(cells[:30], pick)
    np.testing.assert_allclose(pic.particle_coords.numpy()[:30], local, atol=1e-5)
    assert cells[30] == fem.NULL_ELEMENT_INDEX


def test_value_grid_cells_are_leaf_voxels() -> None:
    vol = wp.Volume.allocate(min=[0.0, 0.0, 0.0], max=[1.0, 1.0, 1.0], voxel_size=0.25, bg_value=0.0)
    geo = fem.Nanogrid(vol)
    assert geo.cell_count() == 512 * vol.get_tile_count()
    assert fem.integrate(_one, domain=fem.Cells(geo)) == pytest.approx(geo.cell_count() * 0.25**3, rel=1e-5)


def test_rotated_transform() -> None:
    c, s = np.cos(0.3), np.sin(0.3)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ np.diag([0.5, 0.25, 1.0])
    ijk = random_voxels(2)
    vol = wp.Volume.allocate_by_voxels(wp.array(ijk.astype(np.int32), dtype=wp.vec3i), transform=rot)
    geo = fem.Nanogrid(vol)
    v = fem.integrate(_one, domain=fem.Cells(geo))
    assert v == pytest.approx(len(ijk) * abs(np.linalg.det(rot)), rel=1e-5)
    for axis in range(3):
        flux = fem.integrate(_x_normal, domain=fem.BoundarySides(geo), values={"axis": axis})
        assert flux == pytest.approx(v, rel=1e-4)


def test_rebuild_refreshes_topology_and_spaces() -> None:
    status = wp.zeros(1, dtype=wp.uint32)
    vol = index_volume([[0, 0, 0]], rebuildable=True, max_active_voxels=8, max_leaf_nodes=4, max_lower_nodes=4,
                       max_upper_nodes=4)
    geo = fem.Nanogrid(vol, rebuildable=True)
    space = fem.make_polynomial_space(geo, degree=2)
    assert (geo.cell_count(), space.node_count()) == (1, 27)
    pts = wp.array(np.array([[0, 0, 0], [1, 0, 0], [5, 0, 0], [7, 7, 7]], dtype=np.int32), dtype=wp.vec3i)
    mask = wp.array(np.array([1, 1, 1, 0], dtype=np.int32), dtype=wp.int32)
    assert geo.rebuild(pts, status=status, point_mask=mask) is status
    assert int(status.numpy()[0]) == wp.Volume.REBUILD_SUCCESS
    ijk = np.array([[0, 0, 0], [1, 0, 0], [5, 0, 0]])
    assert (geo.cell_count(), geo.vertex_count(), geo.side_count(), geo.boundary_side_count()) == \
        brute_counts(ijk)[:4]
    space.topology.rebuild()
    fresh = fem.make_polynomial_space(fem.Nanogrid(index_volume(ijk)), degree=2)
    assert space.node_count() == fresh.node_count()
    assert fem.integrate(_one, domain=fem.BoundarySides(geo)) == pytest.approx(16.0)
    geo.rebuild_topology_from_cells()  # allowed in rebuildable mode


def test_errors() -> None:
    with pytest.raises(TypeError, match="wp.Volume"):
        fem.Nanogrid(np.zeros((2, 3)))
    empty = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0,
                                         point_mask=wp.zeros(1, dtype=wp.int32))
    with pytest.raises(ValueError, match="at least one active cell"):
        fem.Nanogrid(empty)
    fixed = index_volume([[0, 0, 0]])
    with pytest.raises(RuntimeError, match="rebuildable Volume"):
        fem.Nanogrid(fixed, rebuildable=True)
    geo = fem.Nanogrid(fixed)
    with pytest.raises(RuntimeError, match="rebuildable mode"):
        geo.rebuild(wp.array([[1, 0, 0]], dtype=wp.int32))
    with pytest.raises(RuntimeError, match="rebuildable mode"):
        geo.rebuild_topology_from_cells()


def _round_trip_kernel(geo: fem.Nanogrid):
    f = geo._funcs
    SideArg = geo.SideArg

    @wp.kernel
    def round_trip(arg: SideArg, sc: wp.vec3, err: wp.array(dtype=float)):
        side = wp.tid()
        x = f.side_position(arg, fem.make_free_sample(side, sc))
        cell_arg = f.side_to_cell_arg(arg)
        e = float(0.0)  # noqa: UP018 - a kernel variable (a literal would be a constant)
        for outer in range(2):
            cell = f.side_inner_cell_index(arg, side)
            cc = f.side_inner_cell_coords(arg, side, sc)
            if outer == 1:
                cell = f.side_outer_cell_index(arg, side)
                cc = f.side_outer_cell_coords(arg, side, sc)
            y = f.cell_position(cell_arg, fem.make_free_sample(cell, cc))
            back = f.side_from_cell_coords(arg, side, cell, cc)
            e = wp.max(e, wp.max(wp.length(x - y), wp.length(back - sc)))
        # the normal is a unit vector orthogonal to the side's tangents
        s = fem.make_free_sample(side, sc)
        n = f.side_normal(arg, s)
        F = f.side_deformation_gradient(arg, s)
        e = wp.max(e, wp.abs(wp.length(n) - 1.0))
        e = wp.max(e, wp.abs(n[0] * F[0, 0] + n[1] * F[1, 0] + n[2] * F[2, 0]))
        e = wp.max(e, wp.abs(n[0] * F[0, 1] + n[1] * F[1, 1] + n[2] * F[2, 1]))
        err[side] = e

    return round_trip


def test_side_coordinates_round_trip() -> None:
    geo = fem.Nanogrid(index_volume(random_voxels(4), 0.5, (0.1, 0.2, 0.3)))
    err = wp.zeros(geo.side_count(), dtype=float)
    wp.launch(_round_trip_kernel(geo), dim=geo.side_count(), inputs=[geo.side_arg_value(), wp.vec3(0.3, 0.7, 0.0),
                                                                       err])
    assert err.numpy().max() < 1e-5


def test_double_precision_volume() -> None:
    ijk = random_voxels(6)
    h = 1.0 / 3.0
    geo = fem.Nanogrid(index_volume(ijk, h), scalar_type=wp.float64)
    vol = fem.integrate(_one, domain=fem.Cells(geo), output_dtype=wp.float64)
    np.testing.assert_allclose(float(vol), len(ijk) * h**3, rtol=1e-13)


def test_lookup_next_to_the_grid_uses_the_closest_neighbour() -> None:
    geo = fem.Nanogrid(index_volume([[0, 0, 0], [2, 0, 0]]))
    xs = np.array([[-0.6, 0.0, 0.0], [0.9, 0.2, 0.0], [1.3, 0.0, 0.0], [-2.0, 0.0, 0.0]], dtype=np.float32)
    pic = fem.PicQuadrature(fem.Cells(geo), wp.array(xs, dtype=wp.vec3))
    cells = pic.particle_cells.numpy()
    coords = pic.particle_coords.numpy()
    # the voxel (-1, 0, 0) is no cell: cell 0 is its closest neighbour, with the point's own (outside) coordinates
    assert cells[0] == 0
    np.testing.assert_allclose(coords[0], [-0.1, 0.5, 0.5], atol=1e-6)
    assert cells[1] == 0 and coords[1][0] == pytest.approx(1.4)  # in voxel (1, 0, 0), closer to cell 0
    assert cells[2] == 1 and coords[2][0] == pytest.approx(-0.2)  # in voxel (1, 0, 0), closer to cell 1
    assert cells[3] == fem.NULL_ELEMENT_INDEX  # no cell among the 26 neighbours


@fem.integrand
def _far_lookups(s: fem.Sample, domain: fem.Domain, shift: wp.vec3, cells: wp.array2d(dtype=int)):
    x = domain(s) + shift
    cells[s.qp_index, 0] = fem.lookup(domain, x).element_index
    cells[s.qp_index, 1] = fem.lookup(domain, x, s).element_index  # searches as far as the guess
    cells[s.qp_index, 2] = fem.lookup(domain, x, 1.0).element_index  # searches within max_dist
    cells[s.qp_index, 3] = fem.lookup(domain, x, 4.0).element_index


def test_lookup_with_guess_or_max_dist() -> None:
    geo = fem.Nanogrid(index_volume([[0, 0, 0]], 0.5))
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=1)
    cells = wp.zeros((quadrature.total_point_count(), 4), dtype=int)
    fem.interpolate(_far_lookups, at=quadrature, values={"shift": wp.vec3(2.0, 0.0, 0.0), "cells": cells})
    np.testing.assert_array_equal(cells.numpy(), [[fem.NULL_ELEMENT_INDEX, 0, fem.NULL_ELEMENT_INDEX, 0]])


@wp.func
def _id_value(x: wp.vec3, n: wp.uint64):
    return float(n)


@fem.integrand
def _field_at(s: fem.Sample, f: fem.Field):
    return f(s)


def test_gen_volume_covers_the_box_and_implicit_fields_take_declared_types() -> None:
    from treadle.examples.fem.utils import gen_volume

    lo, hi = wp.vec3(-2.0, 0.0, 1.0), wp.vec3(3.0, 1.0, 4.0)
    vol = gen_volume(res=wp.vec3i(5, 2, 6), bounds_lo=lo, bounds_hi=hi)
    np.testing.assert_allclose(vol.get_voxel_size(), (1.0, 0.5, 0.5))
    geo = fem.Nanogrid(vol)
    assert geo.cell_count() == 60
    pos = fem.make_polynomial_space(geo, degree=1).node_positions().numpy()
    np.testing.assert_allclose(pos.min(axis=0), lo, atol=1e-6)
    np.testing.assert_allclose(pos.max(axis=0), hi, atol=1e-6)
    # a Python int for a uint64 parameter (a volume id, say) keeps its 64 bits
    field = fem.ImplicitField(domain=fem.Cells(geo), func=_id_value, values={"n": 2**40 + 1})
    total = fem.integrate(_field_at, domain=fem.Cells(geo), fields={"f": field})
    assert total == pytest.approx(60 * 0.25 * 2.0**40, rel=1e-5)
