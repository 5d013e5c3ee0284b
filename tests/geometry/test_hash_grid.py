"""HashGrid against brute-force neighbour search (counts and ids), degenerate inputs, precisions and groups."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def neighbour_counts(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), queries: wp.array(dtype=wp.vec3), r: float,
                     counts: wp.array(dtype=int), id_sums: wp.array(dtype=wp.int64)):
    t = wp.tid()
    p = queries[t]
    q = wp.hash_grid_query(grid, p, r)
    index = 0
    n = 0
    s = wp.int64(0)
    while wp.hash_grid_query_next(q, index):
        if wp.length(p - pts[index]) <= r:
            n += 1
            s += wp.int64(index) * wp.int64(index) + wp.int64(1)
    counts[t] = n
    id_sums[t] = s


@wp.kernel
def sorted_order(grid: wp.uint64, out: wp.array(dtype=int)):
    t = wp.tid()
    out[t] = wp.hash_grid_point_id(grid, t)


@wp.kernel
def grouped_counts(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), groups: wp.array(dtype=int), r: float,
                   counts: wp.array(dtype=int)):
    t = wp.tid()
    p = pts[t]
    q = wp.hash_grid_query(grid, p, r, groups[t])
    index = 0
    n = 0
    while wp.hash_grid_query_next(q, index):
        if wp.length(p - pts[index]) <= r:
            n += 1
    counts[t] = n


@wp.func
def periodic_delta(d: float, period: float) -> float:
    return d - period * wp.floor(d / period + 0.5)


@wp.kernel
def periodic_counts(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float, period: float,
                    counts: wp.array(dtype=int)):
    t = wp.tid()
    p = pts[t]
    q = wp.hash_grid_query(grid, p, r)
    index = 0
    n = 0
    while wp.hash_grid_query_next(q, index):
        d = pts[index] - p
        e = wp.vec3(periodic_delta(d[0], period), periodic_delta(d[1], period), periodic_delta(d[2], period))
        if wp.length(e) <= r:
            n += 1
    counts[t] = n


@wp.kernel
def counts_any(grid: wp.uint64, pts: wp.array(dtype=Any), r: Any, counts: wp.array(dtype=int)):
    t = wp.tid()
    p = pts[t]
    q = wp.hash_grid_query(grid, p, r)
    index = 0
    n = 0
    while wp.hash_grid_query_next(q, index):
        if wp.length(p - pts[index]) <= r:
            n += 1
    counts[t] = n


def brute(points: np.ndarray, queries: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray]:
    d = np.linalg.norm(queries[:, None, :].astype(np.float64) - points[None].astype(np.float64), axis=-1)
    # the kernel's own test runs in float32: count exactly what it would accept
    d32 = np.linalg.norm((queries[:, None, :] - points[None]).astype(np.float32), axis=-1)
    near = d32 <= np.float32(r)
    ids = np.arange(len(points), dtype=np.int64)
    return near.sum(1), (near * (ids * ids + 1)).sum(1)


def run_counts(grid: wp.HashGrid, pts: wp.array, queries: np.ndarray, r: float, device: str) -> tuple[Any, Any]:
    q = wp.array(queries, dtype=wp.vec3, device=device)
    counts = wp.zeros(len(queries), dtype=int, device=device)
    sums = wp.zeros(len(queries), dtype=wp.int64, device=device)
    wp.launch(neighbour_counts, dim=len(queries), inputs=[grid.id, pts, q, r, counts, sums], device=device)
    return counts.numpy(), sums.numpy()


@pytest.mark.parametrize("build_r, query_r", [(0.1, 0.1), (0.1, 0.05), (0.1, 0.27), (0.03, 0.1)])
def test_random_points_match_brute_force(device: str, build_r: float, query_r: float) -> None:
    rng = np.random.default_rng(7)
    points = (rng.random((1500, 3)) * 1.2 - 0.3).astype(np.float32)
    queries = np.concatenate([points[:300], (rng.random((200, 3)) * 1.6 - 0.5).astype(np.float32)])
    pts = wp.array(points, dtype=wp.vec3, device=device)
    grid = wp.HashGrid(8, 16, 12, device=device)  # small dims: many aliased cells
    grid.build(pts, build_r)
    counts, sums = run_counts(grid, pts, queries, query_r, device)
    ref_counts, ref_sums = brute(points, queries, query_r)
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_array_equal(sums, ref_sums)


def test_rebuild_with_fewer_and_more_points(device: str) -> None:
    rng = np.random.default_rng(3)
    grid = wp.HashGrid(16, 16, 16, device=device)
    for n in (2000, 50, 3000, 1):
        points = rng.random((n, 3)).astype(np.float32)
        pts = wp.array(points, dtype=wp.vec3, device=device)
        grid.build(pts, 0.08)
        counts, sums = run_counts(grid, pts, points, 0.08, device)
        ref_counts, ref_sums = brute(points, points, 0.08)
        np.testing.assert_array_equal(counts, ref_counts)
        np.testing.assert_array_equal(sums, ref_sums)


def test_point_ids_are_a_cell_sorted_permutation(device: str) -> None:
    rng = np.random.default_rng(5)
    points = rng.random((500, 3)).astype(np.float32)
    grid = wp.HashGrid(4, 4, 4, device=device)
    out = wp.zeros(600, dtype=int, device=device)
    wp.launch(sorted_order, dim=600, inputs=[grid.id, out], device=device)
    assert (out.numpy() == -1).all()  # never built or reserved
    grid.build(wp.array(points, dtype=wp.vec3, device=device), 0.25)
    wp.launch(sorted_order, dim=600, inputs=[grid.id, out], device=device)
    ids = out.numpy()
    assert sorted(ids[:500]) == list(range(500))
    assert (ids[500:] == -1).all()
    cells = np.floor(points[ids[:500]] / 0.25).astype(int) % 4
    keys = (cells[:, 2] * 4 + cells[:, 1]) * 4 + cells[:, 0]
    assert (np.diff(keys) >= 0).all()


def test_empty_coincident_and_far_points(device: str) -> None:
    grid = wp.HashGrid(8, 8, 8, device=device)
    empty = wp.zeros(0, dtype=wp.vec3, device=device)
    grid.build(empty, 1.0)
    counts, _ = run_counts(grid, empty, np.zeros((3, 3), np.float32), 1.0, device)
    assert (counts == 0).all()

    same = np.zeros((40, 3), np.float32) + 0.5
    pts = wp.array(same, dtype=wp.vec3, device=device)
    grid.build(pts, 0.1)
    counts, _ = run_counts(grid, pts, same[:2], 0.0, device)
    assert (counts == 40).all()  # distance 0 <= radius 0

    far = np.array([[1e7, -1e7, 3.0], [1e7, -1e7, 3.05], [np.inf, 0, 0], [-5e8, 2e9, 1.0]], np.float32)
    pts = wp.array(far, dtype=wp.vec3, device=device)
    grid.build(pts, 0.1)
    counts, _ = run_counts(grid, pts, far[:2], 0.1, device)
    assert counts.tolist() == [2, 2]


def test_periodic_domain_sees_aliased_cells(device: str) -> None:
    # a 4-cell period of width 1: points at -0.3 and 3.9 are 0.2 apart through the boundary
    grid = wp.HashGrid(4, 4, 4, device=device)
    rng = np.random.default_rng(11)
    points = (rng.random((400, 3)) * 4.0).astype(np.float32)
    points[:2] = [[-0.3, 0.0, 0.0], [3.9, 0.0, 0.0]]
    pts = wp.array(points, dtype=wp.vec3, device=device)
    grid.build(pts, 1.0)
    counts = wp.zeros(len(points), dtype=int, device=device)
    wp.launch(periodic_counts, dim=len(points), inputs=[grid.id, pts, 0.5, 4.0, counts], device=device)
    d = points[:, None] - points[None]
    d -= 4.0 * np.floor(d / 4.0 + 0.5)
    ref = (np.linalg.norm(d, axis=-1) <= 0.5).sum(1)
    np.testing.assert_array_equal(counts.numpy(), ref)
    assert counts.numpy()[0] >= 2


def test_groups_restrict_candidates(device: str) -> None:
    rng = np.random.default_rng(2)
    points = rng.random((800, 3)).astype(np.float32)
    groups = rng.integers(-2, 3, 800).astype(np.int32)
    pts = wp.array(points, dtype=wp.vec3, device=device)
    g = wp.array(groups, dtype=int, device=device)
    grid = wp.HashGrid(16, 16, 16, device=device)
    grid.reserve(800, with_groups=True)
    grid.build(pts, 0.1, groups=g)
    counts = wp.zeros(800, dtype=int, device=device)
    wp.launch(grouped_counts, dim=800, inputs=[grid.id, pts, g, 0.1, counts], device=device)
    near = np.linalg.norm(points[:, None] - points[None], axis=-1) <= 0.1
    ref = (near & (groups[:, None] == groups[None])).sum(1)
    np.testing.assert_array_equal(counts.numpy(), ref)
    # the ungrouped query still sees every group
    all_counts, _ = run_counts(grid, pts, points, 0.1, device)
    np.testing.assert_array_equal(all_counts, near.sum(1))


@pytest.mark.parametrize("dtype", [wp.float16, wp.float32, wp.float64])
def test_precisions(device: str, dtype: Any) -> None:
    vec = {wp.float16: wp.vec3h, wp.float32: wp.vec3, wp.float64: wp.vec3d}[dtype]
    points = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0.1, 0.1, 0], [10, 10, 10]], np.float64)
    pts = wp.array(points, dtype=vec, device=device)
    grid = wp.HashGrid(32, 32, 32, device=device, dtype=dtype)
    grid.build(pts, 0.2)
    counts = wp.zeros(5, dtype=int, device=device)
    wp.launch(counts_any, dim=5, inputs=[grid.id, pts, dtype(0.2), counts], device=device)
    assert counts.numpy().tolist() == [4, 4, 4, 4, 1]
    assert wp.HashGridQuery[dtype] is {wp.float16: wp.HashGridQueryH, wp.float32: wp.HashGridQuery,
                                        wp.float64: wp.HashGridQueryD}[dtype]


def test_strided_and_multidimensional_points(device: str) -> None:
    rng = np.random.default_rng(4)
    points = rng.random((512, 3)).astype(np.float32)
    ref_counts, ref_sums = brute(points, points, 0.12)
    buf = wp.zeros(1024, dtype=wp.vec3, device=device)
    strided = buf[::2]
    strided.assign(points)
    nd = wp.array(points.reshape(64, 2, 4, 3), dtype=wp.vec3, device=device)
    flat = wp.array(points, dtype=wp.vec3, device=device)
    for src in (strided, nd):
        grid = wp.HashGrid(16, 16, 16, device=device)
        grid.build(src, 0.12)
        counts, sums = run_counts(grid, flat, points, 0.12, device)
        np.testing.assert_array_equal(counts, ref_counts)
        np.testing.assert_array_equal(sums, ref_sums)


def test_errors(device: str) -> None:
    with pytest.raises(TypeError):
        wp.HashGrid(8, 8, 8, device=device, dtype=wp.int32)
    with pytest.raises(RuntimeError, match="cell count"):
        wp.HashGrid(2000, 2000, 2000, device=device)
    grid = wp.HashGrid(8, 8, 8, device=device)
    pts = wp.zeros(4, dtype=wp.vec3, device=device)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError):
            grid.build(pts, bad)
    with pytest.raises(TypeError):
        grid.build(wp.zeros(4, dtype=wp.vec3d, device=device), 1.0)


@pytest.mark.parametrize("query_r", [0.1, 0.2, 0.1 * np.sqrt(2.0)])
def test_lattice_neighbours_at_exactly_the_radius(device: str, query_r: float) -> None:
    # points on cell boundaries, neighbours at exactly the query radius: the hardest case for cell ranges
    g = (np.arange(-4, 5) * 0.1).astype(np.float32)
    points = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    pts = wp.array(points, dtype=wp.vec3, device=device)
    grid = wp.HashGrid(16, 16, 16, device=device)
    grid.build(pts, 0.1)
    counts, sums = run_counts(grid, pts, points, float(np.float32(query_r)), device)
    ref_counts, ref_sums = brute(points, points, float(np.float32(query_r)))
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_array_equal(sums, ref_sums)


@wp.kernel
def shift_points(src: wp.array(dtype=wp.vec3), offset: wp.array(dtype=wp.vec3), dst: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    dst[i] = src[i] + offset[i]


def test_build_is_replayed_by_graph_capture(device: str) -> None:
    rng = np.random.default_rng(9)
    base = rng.random((300, 3)).astype(np.float32)
    src = wp.array(base, dtype=wp.vec3, device=device)
    offset = wp.zeros(300, dtype=wp.vec3, device=device)
    pts = wp.zeros(300, dtype=wp.vec3, device=device)
    queries = wp.array(base, dtype=wp.vec3, device=device)
    counts = wp.zeros(300, dtype=int, device=device)
    sums = wp.zeros(300, dtype=wp.int64, device=device)
    grid = wp.HashGrid(8, 8, 8, device=device)
    with wp.ScopedCapture(device=device) as capture:  # the first build allocates while capturing
        wp.launch(shift_points, dim=300, inputs=[src, offset, pts], device=device)
        grid.build(pts, 0.1)
        wp.launch(neighbour_counts, dim=300, inputs=[grid.id, pts, queries, 0.1, counts, sums], device=device)
    for shift in (0.0, 0.37):
        moved = base + np.float32(shift) * np.arange(300, dtype=np.float32)[:, None] / 300
        offset.assign(moved - base)
        wp.capture_launch(capture.graph)
        ref_counts, _ = brute(moved, base, 0.1)
        np.testing.assert_array_equal(counts.numpy(), ref_counts)
    with pytest.raises(NotImplementedError, match="reserve before capture"):
        with wp.ScopedCapture(device=device):
            grid.reserve(10_000)
