"""``PicQuadrature``: particles as quadrature points, against sums over the particles."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem


@fem.integrand
def one(s: fem.Sample, domain: fem.Domain):
    return 1.0


@fem.integrand
def field_value(s: fem.Sample, u: fem.Field):
    return u(s)


@fem.integrand
def particle_index_sum(s: fem.Sample, domain: fem.Domain, tag: wp.array(dtype=float)):
    return tag[s.qp_index]


def _setup(n: int, seed: int):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0.0, 1.0, size=(n, 2))
    geo = fem.Grid2D(res=wp.vec2i(4))
    return geo, pts


def test_measures_weight_particles() -> None:
    geo, pts = _setup(50, 0)
    meas = np.random.default_rng(1).uniform(0.1, 1.0, size=50)
    pic = fem.PicQuadrature(fem.Cells(geo), wp.array(pts, dtype=wp.vec2), measures=wp.array(meas, dtype=float))
    assert pic.total_point_count() == 50
    assert fem.integrate(one, quadrature=pic) == pytest.approx(meas.sum(), rel=1e-5)
    # a linear field: the particle-weighted sum of its values
    space = fem.make_polynomial_space(geo, degree=1)
    u = space.make_field()
    nodes = space.node_positions().numpy()
    u.dof_values = wp.array((nodes[:, 0] + 2.0 * nodes[:, 1]).astype(np.float32))
    ref = float(np.sum(meas * (pts[:, 0] + 2.0 * pts[:, 1])))
    assert fem.integrate(field_value, quadrature=pic, fields={"u": u}) == pytest.approx(ref, rel=1e-5)
    # qp_index is the particle's index in the input arrays
    tag = np.arange(50, dtype=np.float32)
    got = fem.integrate(particle_index_sum, quadrature=pic, values={"tag": wp.array(tag)})
    assert got == pytest.approx(float(np.sum(tag * meas)), rel=1e-5)
    cells = np.minimum((pts * 4).astype(int), 3)
    assert len(np.unique(cells[:, 0] * 4 + cells[:, 1])) == pic.active_cell_count()


def test_cells_and_coordinates_without_measures() -> None:
    geo, _ = _setup(0, 0)
    cells = wp.array(np.array([0, 0, 5, 5, 5], dtype=np.int32))
    coords = wp.array(np.full((5, 3), 0.5, dtype=np.float32), dtype=fem.Coords)
    pic = fem.PicQuadrature(fem.Cells(geo), (cells, coords))
    # no measures: each cell's measure shared by its particles, so a constant integrates to the occupied area
    assert fem.integrate(one, quadrature=pic) == pytest.approx(2.0 / 16.0, rel=1e-5)
    assert pic.max_points_per_element() == 3


def test_side_domain_is_rejected() -> None:
    geo, pts = _setup(4, 0)
    with pytest.raises(TypeError, match="cell domain"):
        fem.PicQuadrature(fem.BoundarySides(geo), wp.array(pts, dtype=wp.vec2))


@fem.integrand
def cell_number(s: fem.Sample):
    return float(s.element_index)


def test_particles_spanning_several_cells() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2))
    cells = wp.array([[3, 1], [2, 3], [0, -1]], dtype=int)
    coords = wp.array(np.full((3, 2, 3), 0.25, dtype=np.float32), dtype=fem.Coords)
    frac = wp.array([[0.5, 0.5], [0.25, 0.75], [1.0, 0.0]], dtype=float)
    pic = fem.PicQuadrature(fem.Cells(geo), (cells, coords, frac))
    assert pic.total_point_count() == 3 and pic.evaluation_point_count() == 6
    assert pic.max_points_per_element() == 2 and pic.active_cell_count() == 4
    # entries grouped by cell, in input order; the unused slot (-1) is dropped
    np.testing.assert_array_equal(pic.cell_particle_offsets.numpy(), [0, 1, 2, 3, 5])
    np.testing.assert_array_equal(pic.cell_particle_indices.numpy()[:5], [2, 0, 1, 0, 1])
    # weight: fraction / particles sharing the cell (no measures)
    np.testing.assert_allclose(pic._cell_particle_fraction.numpy()[:5], [1.0, 0.5, 0.25, 0.25, 0.375])
    ref = 0.25 * (1.0 * 0 + 0.5 * 1 + 0.25 * 2 + (0.25 + 0.375) * 3)  # cells of area 1/4
    assert fem.integrate(cell_number, quadrature=pic) == pytest.approx(ref, rel=1e-6)
    with pytest.raises(ValueError, match="same 1d or 2d shape"):
        fem.PicQuadrature(fem.Cells(geo), (cells, wp.zeros(3, dtype=fem.Coords)))
    with pytest.raises(ValueError, match="fractions"):
        fem.PicQuadrature(fem.Cells(geo), (cells, coords, wp.zeros(3, dtype=float)))


def test_particle_coordinates_and_weights_are_differentiable() -> None:
    geo = fem.Grid2D(res=wp.vec2i(4), bounds_hi=wp.vec2(2.0, 1.0))  # cells of 0.5 x 0.25
    pts = wp.array([[0.3, 0.3], [1.6, 0.1]], dtype=wp.vec2, requires_grad=True)
    meas = wp.array([0.2, 0.4], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        pic = fem.PicQuadrature(fem.Cells(geo), pts, measures=meas, requires_grad=True)
    arg = pic.arg_value()
    np.testing.assert_allclose(arg.cell_particle_fraction.numpy()[:2], np.array([0.2, 0.4]) / 0.125, rtol=1e-6)
    arg.cell_particle_coords.grad.fill_(1.0)
    arg.cell_particle_fraction.grad.fill_(1.0)
    tape.backward()
    # coords = (x - cell origin) / cell size, fraction = measure / cell area
    np.testing.assert_allclose(pts.grad.numpy(), np.tile([1.0 / 0.5, 1.0 / 0.25], (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(meas.grad.numpy(), [8.0, 8.0], rtol=1e-6)
