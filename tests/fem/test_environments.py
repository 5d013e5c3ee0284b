"""Geometries with several environments: numbering, lookups, fields, particles and partitions per environment."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem


@fem.integrand(kernel_options={"enable_backward": False})
def _cell_report(s: fem.Sample, domain: fem.Domain, env_out: wp.array(dtype=int), guess_out: wp.array(dtype=int),
                 env_lookup_out: wp.array(dtype=int)):
    pos = domain(s)
    env_out[s.qp_index] = fem.environment_index(domain, s)
    guess_out[s.qp_index] = fem.lookup(domain, pos, s).element_index
    env_lookup_out[s.qp_index] = fem.lookup(domain, pos, fem.environment_index(domain, s)).element_index


@fem.integrand(kernel_options={"enable_backward": False})
def _side_report(s: fem.Sample, domain: fem.Domain, env_out: wp.array(dtype=int), inner: wp.array(dtype=int),
                 outer: wp.array(dtype=int)):
    env_out[s.qp_index] = fem.environment_index(domain, s)
    inner[s.qp_index] = fem.to_inner_cell(domain, s).element_index
    outer[s.qp_index] = fem.to_outer_cell(domain, s).element_index


@fem.integrand
def _env_value(s: fem.Sample, domain: fem.Domain):
    return 1.0 + 10.0 * float(fem.environment_index(domain, s))


@fem.integrand
def _read(s: fem.Sample, f: fem.Field):
    return f(s)


@fem.integrand
def _lookup_without_env(s: fem.Sample, domain: fem.Domain):
    return float(fem.lookup(domain, domain(s)).element_index)


@fem.integrand
def _pic_env(s: fem.Sample, domain: fem.Domain, out: wp.array(dtype=int)):
    out[s.qp_index] = fem.environment_index(domain, s)
    return 0.0


def _one_point_per_cell(geo: fem.Geometry) -> fem.RegularQuadrature:
    return fem.RegularQuadrature(fem.Cells(geo), order=0)


def _cell_reports(geo: fem.Geometry) -> tuple[np.ndarray, ...]:
    n = geo.cell_count()
    outs = [wp.zeros(n, dtype=int) for _ in range(3)]
    fem.interpolate(_cell_report, at=_one_point_per_cell(geo),
                    values={"env_out": outs[0], "guess_out": outs[1], "env_lookup_out": outs[2]})
    return tuple(o.numpy() for o in outs)


def test_grid_environments_number_cells_sides_and_nodes_one_after_the_other() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2, 3), env_count=3)
    base = fem.Grid2D(res=wp.vec2i(2, 3))
    assert geo.environment_count() == 3 and "_env3" in geo.name
    assert geo.cell_count() == 3 * base.cell_count() and geo.side_count() == 3 * base.side_count()
    assert geo.vertex_count() == 3 * base.vertex_count()
    assert geo.boundary_side_count() == 3 * base.boundary_side_count()
    env, guess, by_env = _cell_reports(geo)
    cells = np.arange(geo.cell_count())
    np.testing.assert_array_equal(env, cells // base.cell_count())
    np.testing.assert_array_equal(guess, cells)  # the environments overlap: lookups stay in the sample's
    np.testing.assert_array_equal(by_env, cells)
    # sides: environment from the side number, neighbouring cells in the same environment
    q = fem.RegularQuadrature(fem.Sides(geo), order=0)
    n = geo.side_count()
    outs = [wp.zeros(n, dtype=int) for _ in range(3)]
    fem.interpolate(_side_report, at=q, values={"env_out": outs[0], "inner": outs[1], "outer": outs[2]})
    side_env = np.arange(n) // base.side_count()
    np.testing.assert_array_equal(outs[0].numpy(), side_env)
    assert np.all(outs[1].numpy() // base.cell_count() == side_env)
    assert np.all(outs[2].numpy() // base.cell_count() == side_env)
    # continuous spaces: each environment owns one contiguous range of nodes
    for kwargs in ({"degree": 1}, {"degree": 2}, {"degree": 2, "element_basis": fem.ElementBasis.SERENDIPITY}):
        space = fem.make_polynomial_space(geo, **kwargs)
        one = fem.make_polynomial_space(base, **kwargs)
        assert space.node_count() == 3 * one.node_count()
        table = space.topology.element_node_indices().numpy()
        per_env = table.reshape(3, -1)
        shift = np.broadcast_to(np.arange(3)[:, None] * one.node_count(), per_env.shape)
        np.testing.assert_array_equal(per_env - per_env[:1], shift)


def test_lookup_needs_an_environment() -> None:
    geo = fem.Grid3D(res=wp.vec3i(1), env_count=2)
    with pytest.raises(wp.WarpCodegenError, match=r"Couldn't find function overload.*cell_lookup"):
        fem.interpolate(_lookup_without_env, at=_one_point_per_cell(geo))


def test_fields_and_particles_per_environment() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2), env_count=2)
    source = fem.make_polynomial_space(geo, degree=0, discontinuous=True).make_field()
    fem.interpolate(_env_value, dest=source)
    np.testing.assert_allclose(source.dof_values.numpy(), np.repeat([1.0, 11.0], 4))
    # a nonconforming field looks each sample up in its own environment
    nc = fem.NonconformingField(fem.Cells(geo), source, background=-1.0)
    out = wp.zeros(geo.cell_count(), dtype=float)
    fem.interpolate(_read, dest=out, at=_one_point_per_cell(geo), fields={"f": nc})
    np.testing.assert_allclose(out.numpy(), np.repeat([1.0, 11.0], 4))
    with pytest.raises(ValueError, match="matching environment counts"):
        fem.NonconformingField(fem.Cells(fem.Grid2D(res=wp.vec2i(2), env_count=3)), source)
    # particles at the same position in two environments land in two cells
    pos = wp.array([[0.2, 0.7], [0.2, 0.7]], dtype=wp.vec2)
    pic = fem.PicQuadrature(fem.Cells(geo), pos, env_indices=wp.array([1, 0], dtype=int))
    assert pic.active_cell_count() == 2
    envs = wp.zeros(2, dtype=int)
    fem.interpolate(_pic_env, at=pic, values={"out": envs})
    np.testing.assert_array_equal(envs.numpy(), [1, 0])
    with pytest.raises(ValueError, match="environment indices"):
        fem.PicQuadrature(fem.Cells(geo), pos)
    with pytest.raises(ValueError, match="one entry per particle position"):
        fem.PicQuadrature(fem.Cells(geo), pos, env_indices=wp.array([0], dtype=int))
    with pytest.raises(ValueError, match="integer dtype"):
        fem.PicQuadrature(fem.Cells(geo), pos, env_indices=wp.array([0.0, 1.0], dtype=float))


def _two_triangles(env: list[int], env_count: int | None) -> fem.Trimesh2D:
    pos = wp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=wp.vec2)
    tris = wp.array([[0, 1, 2], [1, 3, 2]], dtype=int)
    return fem.Trimesh2D(tris, pos, build_bvh=True, cell_env=wp.array(env, dtype=wp.int32), env_count=env_count)


def test_meshes_with_cell_environments() -> None:
    geo = _two_triangles([1, 0], 3)
    assert geo.environment_count() == 3 and "_env3" in geo.name
    env, guess, by_env = _cell_reports(geo)
    np.testing.assert_array_equal(env, [1, 0])
    np.testing.assert_array_equal(guess, [0, 1])
    np.testing.assert_array_equal(by_env, [0, 1])
    # environment 2 has no cell: nothing is found there
    pic = fem.PicQuadrature(fem.Cells(geo), wp.array([[0.2, 0.2]], dtype=wp.vec2), env_indices=wp.array([2]))
    assert pic.active_cell_count() == 0
    with pytest.raises(ValueError, match="Environment count must be provided"):
        _two_triangles([0, 0], None)
    with pytest.raises(ValueError, match="one entry per cell"):
        _two_triangles([0, 0, 0], 1)
    with pytest.raises(ValueError, match=r"\[0, env_count=2\)"):
        _two_triangles([0, 2], 2)


def test_environment_first_partitions() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2), env_count=2)
    space = fem.make_polynomial_space(geo, degree=0, discontinuous=True)
    whole = fem.make_space_partition(space_topology=space.topology, environment_first=True)
    np.testing.assert_array_equal(whole.env_offsets.numpy(), [0, 4, 8])
    capped = fem.make_space_partition(space_topology=space.topology, environment_first=True, max_node_count=6)
    assert capped.node_count() == 6
    np.testing.assert_array_equal(capped.env_offsets.numpy(), [0, 4, 6])
    mask = np.zeros(8, dtype=np.int32)
    mask[[1, 6]] = 1
    part = fem.ExplicitGeometryPartition(geo, wp.array(mask, dtype=int))
    with pytest.raises(ValueError, match="with_halo=True"):
        fem.make_space_partition(space_topology=space.topology, geometry_partition=part, environment_first=True)
    p = fem.make_space_partition(space_topology=space.topology, geometry_partition=part, environment_first=True,
                                 with_halo=False, max_node_count=5)
    assert p.node_count() == 5  # a capacity larger than the nodes found
    np.testing.assert_array_equal(p.space_node_indices().numpy()[:2], [1, 6])
    np.testing.assert_array_equal(p.env_offsets.numpy(), [0, 1, 2])
    # the halo holds the nodes of the cells across the partition's frontier sides (2 neighbours per corner cell)
    halo = fem.make_space_partition(space_topology=space.topology, geometry_partition=part, with_halo=True)
    assert halo.node_count() == 2 + 4
