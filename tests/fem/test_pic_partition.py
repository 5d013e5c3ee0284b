"""Particles restricted to the cells they occupy: ``PicQuadrature.fill_element_mask`` and a domain switched to a
partition; projector normalization of matrices with empty rows (no particle near a boundary)."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
import treadle.sparse as sparse


@fem.integrand
def _weighted_x(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    return domain(s)[0] * v(s)


@fem.integrand
def _one(s: fem.Sample):
    return 1.0


def test_mask_and_partition_domain() -> None:
    geo = fem.Grid3D(res=(4, 4, 4))
    rng = np.random.default_rng(0)
    x = rng.uniform(0.02, 0.48, (50, 3))  # particles in the lower octant: cells 0..1 along each axis
    pos = wp.array(x.astype(np.float32), dtype=wp.vec3)
    measures = wp.full(50, 0.01, dtype=float)
    pic = fem.PicQuadrature(fem.Cells(geo), pos, measures)
    mask = wp.zeros(geo.cell_count(), dtype=int)
    pic.fill_element_mask(mask)
    h = 0.25
    ijk = np.floor(x / h).astype(int)
    occupied = np.zeros(geo.cell_count(), dtype=int)
    occupied[(ijk[:, 0] * 4 + ijk[:, 1]) * 4 + ijk[:, 2]] = 1
    np.testing.assert_array_equal(mask.numpy(), occupied)

    space = fem.make_polynomial_space(geo, degree=1)
    whole = fem.integrate(_weighted_x, quadrature=pic, fields={"v": fem.make_test(space)}).numpy()
    part = fem.ExplicitGeometryPartition(geo, mask)
    pic.domain = fem.Cells(part)
    assert pic.domain.element_count() == int(occupied.sum())
    assert fem.integrate(_one, quadrature=pic) == pytest.approx(0.5, rel=1e-5)
    space_part = fem.make_space_partition(space.topology, geometry_partition=part, with_halo=False)
    test = fem.make_test(space, space_partition=space_part, domain=pic.domain)
    local = fem.integrate(_weighted_x, quadrature=pic, fields={"v": test}).numpy()
    nodes = space_part.space_node_indices().numpy()
    np.testing.assert_allclose(local, whole[nodes], rtol=1e-5, atol=1e-7)
    assert np.abs(whole).sum() == pytest.approx(np.abs(local).sum(), rel=1e-5)
    with pytest.raises(ValueError, match="same geometry"):
        pic.domain = fem.Cells(fem.Grid3D(res=(2, 2, 2)))


def test_normalize_projector_with_empty_rows() -> None:
    empty = sparse.bsr_zeros(5, 5, block_type=wp.mat33)
    fem.normalize_dirichlet_projector(empty)  # no block to read
    assert empty.nnz == 0
    p = sparse.bsr_from_triplets(4, 4, wp.array([1, 3], dtype=int), wp.array([1, 3], dtype=int),
                                 wp.array([2.0, 0.5], dtype=float))
    fem.normalize_dirichlet_projector(p)
    dense = np.zeros((4, 4))
    offsets, columns, values = p.offsets.numpy(), p.columns.numpy(), p.values.numpy()
    for r in range(4):
        for k in range(offsets[r], offsets[r + 1]):
            dense[r, columns[k]] = values[k]
    np.testing.assert_allclose(dense, np.diag([0.0, 1.0, 0.0, 1.0]))
