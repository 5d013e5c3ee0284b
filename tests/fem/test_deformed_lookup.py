"""Lookups in deformed geometries: cells and reference coordinates of world positions, with and without a BVH."""

from __future__ import annotations

import numpy as np

import treadle as wp
import treadle.fem as fem


@fem.integrand
def _affine_map(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec2(2.0 * x[0] + 0.5 * x[1] + 1.0, x[1] * 1.5 - 0.25 * x[0])


def _deformed(build_bvh: bool):
    geo = fem.Grid2D(res=wp.vec2i(3, 2))
    space = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec2)
    field = space.make_field()
    fem.interpolate(_affine_map, dest=field)
    deformed = field.make_deformed_geometry(relative=False)
    if build_bvh:
        deformed.build_bvh()
    return geo, deformed


def test_lookup_inverts_the_deformation() -> None:
    rng = np.random.default_rng(7)
    ref = rng.uniform(0.02, 0.98, size=(20, 2))
    a = np.array([[2.0, 0.5], [-0.25, 1.5]])
    world = ref @ a.T + np.array([1.0, 0.0])
    expected_cell = np.minimum((ref[:, 0] * 3).astype(int), 2) * 2 + np.minimum((ref[:, 1] * 2).astype(int), 1)
    expected_coords = np.stack([ref[:, 0] * 3 - np.floor(ref[:, 0] * 3), ref[:, 1] * 2 - np.floor(ref[:, 1] * 2)], 1)
    for bvh in (False, True):
        _, deformed = _deformed(bvh)
        # particles located by world position: their cells and coordinates, read back per cell
        pic = fem.PicQuadrature(fem.Cells(deformed), wp.array(world, dtype=wp.vec2))
        got_cells = np.empty(20, dtype=int)
        got_coords = np.empty((20, 2))
        offsets = pic.cell_particle_offsets.numpy()
        idx = pic.cell_particle_indices.numpy()
        co = pic._cell_particle_coords.numpy()
        for c in range(len(offsets) - 1):
            for j in range(offsets[c], offsets[c + 1]):
                got_cells[idx[j]] = c
                got_coords[idx[j]] = co[j, :2]
        np.testing.assert_array_equal(got_cells, expected_cell)
        np.testing.assert_allclose(got_coords, expected_coords, atol=1e-5)
    assert deformed.supports_cell_lookup()
    np.testing.assert_array_equal(deformed.cell_bvh_groups().numpy(), np.zeros(6))
