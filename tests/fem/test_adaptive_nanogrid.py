"""``fem.AdaptiveNanogrid`` and its builders: T-junction topology, exactness of linear fields, refinement after a
field, grading, errors."""

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem

from .test_nanogrid import _one, _round_trip_kernel, _x_normal, brute_counts, index_volume


def t_junction() -> fem.AdaptiveNanogrid:
    """A 2x2x2 block of fine cells (size 1/2) next to one coarse cell (size 1) along +x.

    The coarse level also has the voxel the fine block fills: the finer cells replace it.
    """
    fine = [[i, j, k] for i in range(2) for j in range(2) for k in range(2)]
    return fem.adaptive_nanogrid_from_hierarchy([index_volume(fine, 0.5), index_volume([[1, 0, 0], [0, 0, 0]], 1.0)])


def test_t_junction_topology() -> None:
    geo = t_junction()
    np.testing.assert_array_equal(geo.cell_level.numpy(), [0] * 8 + [1])
    # vertices: 27 of the block, 4 more on the far face of the coarse cell (its near corners are block corners)
    # sides: the block's 36 faces (4 of them shared with the coarse cell) and the coarse cell's 5 other faces
    assert (geo.cell_count(), geo.vertex_count(), geo.side_count(), geo.boundary_side_count()) == (9, 31, 41, 25)
    # stacked: every cell's own faces and edges (the coarse cell's face beside the block counts too)
    assert (geo.stacked_face_count(), geo.stacked_edge_count()) == (36 + 6, 54 + 12)
    assert fem.integrate(_one, domain=fem.Cells(geo)) == pytest.approx(2.0)
    assert fem.integrate(_one, domain=fem.BoundarySides(geo)) == pytest.approx(10.0)
    assert fem.integrate(_one, domain=fem.Sides(geo)) == pytest.approx(14.0)
    for axis in range(3):
        assert fem.integrate(_x_normal, domain=fem.BoundarySides(geo), values={"axis": axis}) == pytest.approx(2.0)
    # nodes of a T-junction are shared at common corners only
    assert fem.make_polynomial_space(geo, degree=1).node_count() == 31
    assert fem.make_polynomial_space(geo, degree=2).node_count() == 125 + 27 - 4
    assert fem.make_polynomial_space(geo, degree=0, discontinuous=True).node_count() == 9
    err = wp.zeros(geo.side_count(), dtype=float)
    wp.launch(_round_trip_kernel(geo), dim=geo.side_count(), inputs=[geo.side_arg_value(), wp.vec3(0.3, 0.7, 0.0),
                                                                       err])
    assert err.numpy().max() < 1e-5


@wp.func
def _affine(x: wp.vec3):
    return 1.0 + 2.0 * x[0] - x[1] + 0.5 * x[2]


@fem.integrand
def _affine_at(s: fem.Sample, domain: fem.Domain):
    return _affine(domain(s))


@fem.integrand
def _error_at(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    e = u(s) - _affine(domain(s))
    return e * e


@fem.integrand
def _jump2(s: fem.Sample, u: fem.Field):
    j = fem.jump(u, s)
    return j * j


def test_affine_fields_are_exact_across_t_junctions() -> None:
    geo = t_junction()
    for degree in (1, 2):
        space = fem.make_polynomial_space(geo, degree=degree)
        u = space.make_field()
        fem.interpolate(_affine_at, dest=u)
        assert fem.integrate(_error_at, domain=fem.Cells(geo), fields={"u": u}) < 1e-10
        assert fem.integrate(_jump2, domain=fem.Sides(geo), fields={"u": u}) < 1e-10
    rng = np.random.default_rng(0)
    x = rng.uniform([-0.2, -0.2, -0.2], [1.7, 0.7, 0.7], (40, 3))
    pic = fem.PicQuadrature(fem.Cells(geo), wp.array(x.astype(np.float32), dtype=wp.vec3))
    cells = pic.particle_cells.numpy()
    coarse = x[:, 0] > 0.75
    assert np.all(cells[coarse] == 8) and np.all(cells[~coarse] < 8)


def test_uniform_levels_match_a_nanogrid() -> None:
    ijk = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]])
    coarse = fem.Nanogrid(index_volume(ijk, 1.0))
    fine_origin = index_volume(ijk * 2, 0.5, translation=(-0.25, -0.25, -0.25))
    adaptive = fem.AdaptiveNanogrid(fine_origin, wp.full(len(ijk), 1, dtype=int), level_count=2)
    for g in (coarse, adaptive):
        assert (g.cell_count(), g.vertex_count(), g.side_count(), g.boundary_side_count()) == brute_counts(ijk)[:4]
    for domain in (fem.Cells, fem.BoundarySides):
        a = fem.integrate(_affine_at, domain=domain(adaptive))
        b = fem.integrate(_affine_at, domain=domain(coarse))
        assert a == pytest.approx(b, rel=1e-5)


@wp.func
def _constant(x: wp.vec3, c: float):
    return c


@wp.func
def _slab(x: wp.vec3, c: float):
    return c * x[0]


@pytest.mark.parametrize(("c", "per_level"), [(0.2, [256, 0, 0]), (0.5, [0, 32, 0]), (0.7, [0, 0, 4])])
def test_refinement_levels_from_a_field(c: float, per_level: list[int]) -> None:
    vol = index_volume([[i, 0, 0] for i in range(4)], 1.0)
    field = fem.ImplicitField(domain=fem.Cells(fem.Nanogrid(vol)), func=_constant, values={"c": c})
    geo = fem.adaptive_nanogrid_from_field(vol, 3, refinement_field=field)
    np.testing.assert_array_equal(np.bincount(geo.cell_level.numpy(), minlength=3), per_level)
    assert fem.integrate(_one, domain=fem.Cells(geo)) == pytest.approx(4.0)


def test_negative_field_carves_cells() -> None:
    vol = index_volume([[i, 0, 0] for i in range(4)], 1.0)
    base = fem.Cells(fem.Nanogrid(vol))
    # r = -x/5: positive for x < 0 only, i.e. half of the first voxel, at the finest level
    geo = fem.adaptive_nanogrid_from_field(vol, 3, fem.ImplicitField(base, func=_slab, values={"c": -0.2}))
    assert geo.cell_count() == 32 and fem.integrate(_one, domain=fem.Cells(geo)) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="no cell"):
        fem.adaptive_nanogrid_from_field(vol, 2, fem.ImplicitField(base, func=_constant, values={"c": -1.0}))


@pytest.mark.parametrize("grading", ["face", "vertex"])
def test_grading(grading: str) -> None:
    # a level-2 cell (4 fine voxels wide) next to a single fine cell: 2 levels apart across a face
    empty = index_volume([[0, 0, 0]], 0.5, point_mask=wp.zeros(1, dtype=wp.int32))
    grids = [index_volume([[4, 0, 0]], 0.25), empty, index_volume([[0, 0, 0]], 1.0)]
    raw = fem.adaptive_nanogrid_from_hierarchy(grids)
    graded = fem.adaptive_nanogrid_from_hierarchy(grids, grading=grading)
    assert raw.cell_count() == 2
    assert fem.integrate(_one, domain=fem.Cells(graded)) == pytest.approx(1.0 + 0.25**3)
    levels = graded.cell_level.numpy()
    np.testing.assert_array_equal(np.bincount(levels, minlength=3), [1, 8, 0])  # the coarse cell split once
    # across every interior side, levels differ by at most one
    inner, outer = graded._face_cells_np[:, 0], graded._face_cells_np[:, 1]
    assert np.abs(levels[inner] - levels[outer]).max() <= 1


def test_errors() -> None:
    vol = index_volume([[0, 0, 0], [1, 0, 0]], 1.0)
    with pytest.raises(ValueError, match="shape"):
        fem.AdaptiveNanogrid(vol, wp.zeros(3, dtype=int), level_count=1)
    with pytest.raises(ValueError, match="multiple of"):
        fem.AdaptiveNanogrid(vol, wp.full(2, 1, dtype=int), level_count=2)
    with pytest.raises(ValueError, match="level_count"):
        fem.AdaptiveNanogrid(vol, wp.full(2, 1, dtype=int), level_count=1)
    value = wp.Volume.allocate(min=[0.0, 0.0, 0.0], max=[1.0, 1.0, 1.0], voxel_size=0.5, bg_value=0.0)
    with pytest.raises(TypeError, match="index"):
        fem.AdaptiveNanogrid(value, wp.zeros(value.get_voxel_count(), dtype=int), level_count=1)
