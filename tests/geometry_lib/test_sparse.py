"""Lipschitz octree and sparse marching cubes: no cell the surface crosses is pruned (brute force over every leaf),
the sparse surface equals the dense one on the same grid bit for bit, cells given explicitly, gradients against
finite differences, argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from geomlib_shapes import assert_closed_oriented, grid, sphere_points

import treadle as wp
import treadle.geometry as geo

CORNERS = np.array(geo.IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS)


class SphereSdf:
    """A batched sphere SDF that counts its evaluations; radius in an array (differentiable)."""

    def __init__(self, center: tuple[float, float, float], radius: float, requires_grad: bool = False) -> None:
        self.center = wp.vec3(*center)
        self.radius = wp.array([radius], dtype=float, requires_grad=requires_grad)
        self.requires_grad = requires_grad
        self.calls: list[int] = []

    def __call__(self, points: wp.array) -> wp.array:
        self.calls.append(points.shape[0])
        out = wp.zeros(points.shape[0], dtype=float, requires_grad=self.requires_grad)
        wp.launch(sphere_points, dim=points.shape[0], inputs=[points, self.center, self.radius, out])
        return out


def dense_field(dims: tuple[int, int, int], lower: np.ndarray, spacing: np.ndarray, center: np.ndarray,
                radius: float) -> np.ndarray:
    """The sphere SDF at the grid nodes: node positions rounded as the extractors round them (float32, no fused
    multiply-add), values from the same kernel as :class:`SphereSdf`."""
    idx = np.stack(np.meshgrid(*[np.arange(n) for n in dims], indexing="ij"), -1).astype(np.float32)
    pts = (lower.astype(np.float32) + idx * spacing.astype(np.float32)).reshape(-1, 3)
    return SphereSdf(tuple(center), radius)(wp.array(pts, dtype=wp.vec3)).numpy().reshape(dims)


def crossed_cells(f: np.ndarray, thr: float = 0.0) -> set[tuple[int, int, int]]:
    below = f < thr
    out = set()
    for cell in np.ndindex(tuple(np.array(f.shape) - 1)):
        s = {bool(below[tuple(np.array(cell) + c)]) for c in CORNERS}
        if len(s) == 2:
            out.add(cell)
    return out


def test_octree_keeps_every_crossed_cell(device: str) -> None:
    center, radius = np.array([0.13, -0.21, 0.07]), 0.55
    sdf = SphereSdf(tuple(center), radius)
    origin, width, depth = np.array([-1.0, -1.0, -1.0]), 2.0, 5
    cells, cell_width = geo.lipschitz_octree(sdf, tuple(origin), width, depth)
    assert cells.dtype == wp.vec3i and cell_width == width / 2**depth
    got = {tuple(c) for c in cells.numpy().tolist()}
    assert len(got) == cells.shape[0]  # no duplicates
    # brute force: every leaf whose corners straddle the surface is kept
    n = 2**depth + 1
    f = dense_field((n, n, n), origin.astype(np.float32), np.full(3, cell_width, np.float32), center, radius)
    crossed = crossed_cells(f)
    assert crossed <= got
    # brute force over all leaves: a leaf is kept exactly when it passes the test at its own centre (an ancestor
    # that fails it is farther from the level set than its half-diagonal, so all its leaves fail it too)
    idx = np.stack(np.meshgrid(*[np.arange(2**depth)] * 3, indexing="ij"), -1).reshape(-1, 3)
    centres = origin + (idx + 0.5) * cell_width
    d = np.abs(np.linalg.norm(centres - center, axis=1) - radius)
    reach = np.sqrt(3.0) / 2.0 * cell_width
    kept = np.array([tuple(c) in got for c in idx.tolist()])
    clear = np.abs(d - reach) > 1e-5  # away from float32 rounding of the test
    np.testing.assert_array_equal(kept[clear], (d <= reach)[clear])
    # the band is thin: kept leaves are a small multiple of the crossed ones
    assert len(got) < 3 * len(crossed)
    # evaluations: one batch per level, the root first
    assert sdf.calls[0] == 1 and len(sdf.calls) == depth + 1


def test_octree_misses_and_bounds(device: str) -> None:
    sdf = SphereSdf((5.0, 5.0, 5.0), 0.5)
    cells, w = geo.lipschitz_octree(sdf, (-1, -1, -1), 2.0, 4)
    assert cells.shape == (0,) and w == 0.125
    # a larger Lipschitz bound keeps a superset
    sdf = SphereSdf((0.0, 0.0, 0.0), 0.5)
    a, _ = geo.lipschitz_octree(sdf, (-1, -1, -1), 2.0, 4)
    b, _ = geo.lipschitz_octree(sdf, (-1, -1, -1), 2.0, 4, lipschitz_bound=2.0)
    sa, sb = {tuple(c) for c in a.numpy().tolist()}, {tuple(c) for c in b.numpy().tolist()}
    assert sa < sb
    # depth 0: the root alone
    c0, w0 = geo.lipschitz_octree(sdf, (-1, -1, -1), 2.0, 0)
    assert c0.numpy().tolist() == [[0, 0, 0]] and w0 == 2.0


@pytest.mark.parametrize("dims,lo,hi,radius", [((24, 30, 17), (-1, -1, -1), (1, 1.2, 0.9), 1.1),
                                               ((33, 33, 33), (-1, -1, -1), (1, 1, 1), 0.61)])
def test_sparse_equals_dense(dims: tuple[int, int, int], lo: tuple, hi: tuple, radius: float, device: str) -> None:
    center = np.array([0.05, -0.03, 0.02])
    sdf = SphereSdf(tuple(center), radius)
    verts, indices, stats = geo.sparse_marching_cubes(sdf, *dims, lower=lo, upper=hi, return_stats=True)
    lower = np.array(lo, np.float32)
    spacing = (np.array(hi, np.float32) - lower) / (np.array(dims, np.float32) - 1)
    f = dense_field(dims, lower, spacing, center, radius)
    dv, di = geo.IsoSurfaceMarchingCubes.extract(wp.array(f, dtype=float), 0.0, lower=lo, upper=hi)
    sv, dvn = verts.numpy(), dv.numpy()
    assert sv.shape == dvn.shape
    where = {tuple(p): k for k, p in enumerate(dvn.tolist())}
    remap = np.array([where[tuple(p)] for p in sv.tolist()])  # every sparse vertex is a dense one, bit for bit
    st = np.sort(remap[indices.numpy().reshape(-1, 3)], axis=1)
    dt = np.sort(di.numpy().reshape(-1, 3), axis=1)
    assert sorted(map(tuple, st.tolist())) == sorted(map(tuple, dt.tolist()))
    if radius < 0.9:  # inside the grid: closed
        assert_closed_oriented(sv, indices.numpy().reshape(-1, 3))
    ncells = tuple(n - 1 for n in dims)
    assert stats["requested_ncells"] == ncells and stats["resolution"] == 32
    assert stats["field_evaluations"] == sum(sdf.calls) and stats["unique_corners"] == sdf.calls[-1]
    assert stats["leaf_cells"] >= len(crossed_cells(f)) and stats["leaf_cells"] < np.prod(ncells) / 4
    assert stats["culled_cells"] >= 0
    two, three = geo.sparse_marching_cubes(sdf, *dims, lower=lo, upper=hi)
    np.testing.assert_array_equal(two.numpy(), sv)
    np.testing.assert_array_equal(three.numpy(), indices.numpy())


def test_from_cells_on_a_cell_subset(device: str) -> None:
    # the crossed cells of a dense field, shuffled, with negative subscripts: the same surface as the dense grid
    dims, lower, spacing = grid(21)
    center = np.array([0.1, 0.0, -0.1])
    f = dense_field(dims, lower, spacing, center, 0.6)
    cells = np.array(sorted(crossed_cells(f)), np.int32)
    rng = np.random.default_rng(0)
    cells = cells[rng.permutation(len(cells))]
    values = np.array([[f[tuple(c + o)] for o in CORNERS] for c in cells], np.float32)
    shift = np.array([-30, 5, -7], np.int32)
    h = float(spacing[0])
    origin = lower - shift * spacing
    verts, indices = geo.sparse_marching_cubes_from_cells(cells + shift, values, origin=tuple(origin), cell_width=h)
    dv, di = geo.IsoSurfaceMarchingCubes.extract(wp.array(f, dtype=float), 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))
    assert verts.shape == dv.shape and indices.shape == di.shape
    np.testing.assert_allclose(np.sort(verts.numpy(), axis=0), np.sort(dv.numpy(), axis=0), atol=2e-6)
    assert_closed_oriented(verts.numpy(), indices.numpy().reshape(-1, 3))
    # the same cells as wp arrays of vec3i and of (N, 3) int32 give the same output
    for c in (wp.array(cells + shift, dtype=wp.vec3i), wp.array(cells + shift, dtype=wp.int32)):
        v2, i2 = geo.sparse_marching_cubes_from_cells(c, wp.array(values, dtype=float), origin=tuple(origin),
                                                      cell_width=h)
        np.testing.assert_array_equal(v2.numpy(), verts.numpy())
        np.testing.assert_array_equal(i2.numpy(), indices.numpy())
    # the output does not depend on the threads' schedule
    for _ in range(3):
        v3, i3 = geo.sparse_marching_cubes_from_cells(cells + shift, values, origin=tuple(origin), cell_width=h)
        np.testing.assert_array_equal(v3.numpy(), verts.numpy())
        np.testing.assert_array_equal(i3.numpy(), indices.numpy())
    empty_v, empty_i = geo.sparse_marching_cubes_from_cells(np.zeros((0, 3), np.int32), np.zeros((0, 8)))
    assert empty_v.shape == (0,) and empty_i.shape == (0,)


@wp.kernel
def weighted_sum(verts: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.dot(verts[i], w[i]))


def test_from_cells_gradient(device: str) -> None:
    rng = np.random.default_rng(3)
    cells = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 1]], np.int32)
    values = rng.uniform(-1.0, 1.0, (4, 8)).astype(np.float32)
    values[np.abs(values) < 0.1] = 0.5
    cv = wp.array(values, dtype=float, requires_grad=True)
    v0, _ = geo.sparse_marching_cubes_from_cells(cells, values, cell_width=0.5)
    w = wp.array(rng.normal(size=(v0.shape[0], 3)).astype(np.float32), dtype=wp.vec3)
    with wp.Tape() as tape:
        verts, _ = geo.sparse_marching_cubes_from_cells(cells, cv, cell_width=0.5)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        wp.launch(weighted_sum, dim=verts.shape[0], inputs=[verts, w, loss])
    tape.backward(loss)
    grad = cv.grad.numpy()

    def loss_of(vals: np.ndarray) -> float:
        vv, _ = geo.sparse_marching_cubes_from_cells(cells, vals, cell_width=0.5)
        return float(np.sum(vv.numpy().astype(np.float64) * w.numpy()))

    eps = 1e-3
    for n, c in np.ndindex(4, 8):
        vp, vm = values.copy(), values.copy()
        vp[n, c] += eps
        vm[n, c] -= eps
        fd = (loss_of(vp) - loss_of(vm)) / (2 * eps)
        assert abs(fd - grad[n, c]) < 1e-2 * max(1.0, abs(fd)), (n, c, fd, grad[n, c])
    # shared corners (cells 0 and 1 share four): the gradient reaches exactly one entry of each shared corner
    assert np.count_nonzero(grad) > 0


@wp.kernel
def total_area(verts: wp.array(dtype=wp.vec3), tris: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    a = verts[tris[3 * t]]
    b = verts[tris[3 * t + 1]]
    c = verts[tris[3 * t + 2]]
    wp.atomic_add(out, 0, 0.5 * wp.length(wp.cross(b - a, c - a)))


def test_sparse_gradient_through_the_field(device: str) -> None:
    # d(area)/d(radius) of a sphere is 8 pi r; the tape goes through the field's own kernel
    r = 0.5
    sdf = SphereSdf((0.0, 0.0, 0.0), r, requires_grad=True)
    with wp.Tape() as tape:
        verts, indices = geo.sparse_marching_cubes(sdf, 64, 64, 64, lower=(-1, -1, -1), upper=(1, 1, 1))
        area = wp.zeros(1, dtype=float, requires_grad=True)
        wp.launch(total_area, dim=indices.shape[0] // 3, inputs=[verts, indices, area])
    np.testing.assert_allclose(area.numpy()[0], 4 * np.pi * r**2, rtol=5e-3)
    tape.backward(area)
    np.testing.assert_allclose(sdf.radius.grad.numpy()[0], 8 * np.pi * r, rtol=5e-3)


def test_bad_arguments(device: str) -> None:
    sdf = SphereSdf((0.0, 0.0, 0.0), 0.5)

    @wp.func
    def point_sdf(p: wp.vec3) -> float:
        return wp.length(p) - 0.5

    with pytest.raises(TypeError, match="batched"):
        geo.sparse_marching_cubes(point_sdf, 8, 8, 8)
    with pytest.raises(TypeError, match="batched"):
        geo.lipschitz_octree(3.0, (0, 0, 0), 1.0, 3)
    with pytest.raises(ValueError, match="at least 2"):
        geo.sparse_marching_cubes(sdf, 8, 1, 8)
    with pytest.raises(ValueError, match="lipschitz_bound"):
        geo.sparse_marching_cubes(sdf, 8, 8, 8, lipschitz_bound=-1.0)
    with pytest.raises(ValueError, match="root_width"):
        geo.lipschitz_octree(sdf, (0, 0, 0), 0.0, 3)
    with pytest.raises(ValueError, match="max_depth"):
        geo.lipschitz_octree(sdf, (0, 0, 0), 1.0, -1)
    with pytest.raises(ValueError, match="shape"):
        geo.lipschitz_octree(lambda p: wp.zeros(p.shape[0] + 1, dtype=float), (0, 0, 0), 1.0, 2)
    with pytest.raises(ValueError, match="float32"):
        geo.lipschitz_octree(lambda p: wp.zeros(p.shape[0], dtype=wp.float64), (0, 0, 0), 1.0, 2)
    cells = np.zeros((2, 3), np.int32)
    with pytest.raises(ValueError, match="cell_width"):
        geo.sparse_marching_cubes_from_cells(cells, np.zeros((2, 8)), cell_width=0.0)
    with pytest.raises(ValueError, match=r"shape \(2, 8\)"):
        geo.sparse_marching_cubes_from_cells(cells, np.zeros((3, 8)))
    with pytest.raises(TypeError, match="cells"):
        geo.sparse_marching_cubes_from_cells(np.zeros((2, 4), np.int32), np.zeros((2, 8)))
    with pytest.raises(TypeError, match="cells"):
        geo.sparse_marching_cubes_from_cells(wp.zeros(2, dtype=wp.vec3), np.zeros((2, 8)))
    with pytest.raises(TypeError, match="float32"):
        geo.sparse_marching_cubes_from_cells(cells, wp.zeros((2, 8), dtype=wp.float64))
    far = np.array([[0, 0, 0], [2**31 - 10, 2**31 - 10, 2**31 - 10], [-(2**31) + 5, 0, 0]], np.int64)
    with pytest.raises(ValueError, match="64-bit"):
        geo.sparse_marching_cubes_from_cells(far, np.ones((3, 8)))
