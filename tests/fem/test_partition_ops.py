"""Integrands on partitioned domains: element_partition_index, partition_lookup, nodal quadrature point indices."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
from treadle._src.fem.operator import element_partition_index, node_partition_index


@fem.integrand(kernel_options={"enable_backward": False})
def _report(s: fem.Sample, domain: fem.Domain, part_index: wp.array(dtype=int), found: wp.array(dtype=int)):
    part_index[s.element_index] = element_partition_index(domain, s.element_index)
    # the top-right corner is shared with cell 8, outside the partition (where a plain lookup goes): the partition
    # lookup keeps to the partition's cells, taking the first that holds the point
    corner = domain(fem.make_free_sample(s.element_index, fem.Coords(1.0, 1.0, 0.0)))
    found[s.element_index] = fem.partition_lookup(domain, corner).element_index
    return 0.0


@fem.integrand(kernel_options={"enable_backward": False})
def _node_value(s: fem.Sample, f: fem.Field, values: wp.array(dtype=float), seen: wp.array(dtype=int)):
    seen[s.qp_index] = 1
    return values[node_partition_index(f, s.qp_index)]


def test_partition_index_and_lookup() -> None:
    geo = fem.Grid2D(res=wp.vec2i(3))
    cells = [4, 5, 7]
    mask = np.zeros(9, dtype=np.int32)
    mask[cells] = 1
    part = fem.ExplicitGeometryPartition(geo, wp.array(mask, dtype=int))
    part_index = wp.full(9, -2, dtype=int)
    found = wp.full(9, -2, dtype=int)
    fem.interpolate(_report, at=fem.RegularQuadrature(fem.Cells(part), order=0),
                    values={"part_index": part_index, "found": found})
    np.testing.assert_array_equal(part_index.numpy()[cells], [0, 1, 2])
    np.testing.assert_array_equal(found.numpy()[cells], cells)
    # on the whole geometry: the geometry's own numbering
    whole = wp.full(9, -2, dtype=int)
    fem.interpolate(_report, at=fem.RegularQuadrature(fem.Cells(geo), order=0),
                    values={"part_index": whole, "found": wp.zeros(9, dtype=int)})
    np.testing.assert_array_equal(whole.numpy(), np.arange(9))


def test_nodal_quadrature_points_are_space_nodes() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2))
    space = fem.make_polynomial_space(geo, degree=1)
    part = fem.LinearGeometryPartition(geo, 2, 4)  # cell 2 alone
    space_part = fem.make_space_partition(space_topology=space.topology, geometry_partition=part, with_halo=False)
    assert space_part.node_count() == 4  # all of the cell's nodes, shared ones included
    field = fem.make_discrete_field(space, space_partition=space_part)
    quadrature = fem.NodalQuadrature(fem.Cells(part), space)
    assert quadrature.total_point_count() == space.node_count()
    seen = wp.zeros(space.node_count(), dtype=int)
    values = wp.array(np.arange(1.0, 5.0, dtype=np.float32))
    got = fem.integrate(_node_value, quadrature=quadrature, fields={"f": field}, values={"values": values,
                                                                                         "seen": seen})
    # the cell's four corners, each with nodal weight 1/4 of the cell area 1/4
    assert got == pytest.approx(np.sum(np.arange(1.0, 5.0)) / 16.0, rel=1e-6)
    np.testing.assert_array_equal(np.nonzero(seen.numpy())[0], np.sort(space_part.space_node_indices().numpy()))
