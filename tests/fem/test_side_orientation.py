"""Side parametrisation of grids (tangents whose normal is the outward side normal), surface-mesh side normals,
and the environment offsets of whole-space partitions."""

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem

wp.init()


@fem.integrand
def _side_frame(s: fem.Sample, domain: fem.Domain, out: wp.array(dtype=float)):
    F = fem.deformation_gradient(domain, s)
    n = fem.normal(domain, s)
    m = fem.Geometry._element_normal(F)
    e = wp.length(m - n)
    wp.atomic_max(out, 0, e)
    return 0.0


@fem.integrand
def _side_positions(s: fem.Sample, domain: fem.Domain, out: wp.array(dtype=wp.vec3)):
    x = domain(s)
    v = wp.vec3()
    for k in range(type(x).length):
        v[k] = x[k]
    out[s.qp_index] = v
    return 0.0


@pytest.mark.parametrize("geo", [fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.5, 1.0)),
                                 fem.Grid3D(res=wp.vec3i(2, 3, 2))])
def test_grid_side_tangents_give_outward_normals(geo: fem.Geometry) -> None:
    sides = fem.Sides(geo)
    q = fem.RegularQuadrature(sides, order=1)
    err = wp.zeros(1, dtype=float)
    fem.integrate(_side_frame, quadrature=q, values={"out": err})
    assert err.numpy()[0] < 1e-5


def test_grid2d_boundary_side_positions_cover_the_boundary() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2, 2))
    q = fem.RegularQuadrature(fem.BoundarySides(geo), order=3)
    out = wp.zeros(q.total_point_count(), dtype=wp.vec3)
    fem.interpolate(_side_positions, at=q, values={"out": out})
    x = out.numpy()[:, :2]
    on_boundary = np.isclose(np.min(np.abs(np.concatenate([x, 1.0 - x], axis=1)), axis=1), 0.0, atol=1e-6)
    assert on_boundary.all()
    # every quadrature point is distinct: each side's points are mapped exactly once
    assert len(np.unique(np.round(x, 5), axis=0)) == len(x)


def test_surface_mesh_sides_publish_no_hyperplane_normal() -> None:
    pos = wp.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32), dtype=wp.vec3)
    tri = wp.array(np.array([[0, 1, 2]], dtype=np.int32), dtype=int)
    assert fem.Trimesh3D(tri_vertex_indices=tri, positions=pos).side_normal is None
    pos2 = wp.array(np.array([[0, 0], [1, 0], [0, 1]], dtype=np.float32), dtype=wp.vec2)
    assert fem.Trimesh2D(tri_vertex_indices=tri, positions=pos2).side_normal is not None


def test_whole_partition_env_offsets_put_unused_nodes_last() -> None:
    pos = wp.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 2, 0]], dtype=np.float32), dtype=wp.vec3)
    geo = fem.Trimesh3D(tri_vertex_indices=wp.array(np.array([[0, 1, 2]], dtype=np.int32), dtype=int), positions=pos)
    space = fem.make_polynomial_space(geo, degree=1)
    part = fem.make_space_partition(space_topology=space.topology, environment_first=True)
    np.testing.assert_array_equal(part.env_offsets.numpy(), [0, 3])
    np.testing.assert_array_equal(part.space_node_indices().numpy(), [0, 1, 2, 3])
