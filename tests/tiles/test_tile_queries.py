"""The tiled geometry queries against brute force: BVH boxes and rays, mesh AABBs, the older ``*_tiled`` names."""

from __future__ import annotations

import numpy as np
import pytest
from tile_error_check import assert_error_at_line

import treadle as wp


@wp.kernel
def bvh_hits(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
             start: wp.array(dtype=wp.vec3), direction: wp.array(dtype=wp.vec3),
             box_hits: wp.array2d(dtype=int), ray_hits: wp.array2d(dtype=int), steps: wp.array(dtype=int)):
    b, _ = wp.tid()
    query = wp.tile_bvh_query_aabb(bvh, lo[b], hi[b])
    n = 0
    while wp.tile_query_valid(query):
        bound = wp.untile(wp.tile_bvh_query_next(query))
        n += 1
        if bound >= 0:
            box_hits[b, bound] += 1
    steps[b] = n
    ray = wp.bvh_query_ray_tiled(bvh, start[b], direction[b])
    while wp.tile_query_valid(ray):
        t = wp.bvh_query_next_tiled(ray)
        if t[0] >= 0:
            ray_hits[b, t[0]] += 1


def _ray_box(o: np.ndarray, d: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    with np.errstate(divide="ignore", invalid="ignore"):
        t0, t1 = (lo - o) / d, (hi - o) / d
    near = np.nanmax(np.minimum(t0, t1))
    far = np.nanmin(np.maximum(t0, t1))
    return bool(far >= max(near, 0.0))


def test_bvh_box_and_ray_queries_match_brute_force():
    rng = np.random.default_rng(11)
    n, q = 37, 6
    centers = rng.uniform(0, 10, (n, 3))
    half = rng.uniform(0.2, 1.5, (n, 3))
    lowers, uppers = (centers - half).astype(np.float32), (centers + half).astype(np.float32)
    bvh = wp.Bvh(wp.array(lowers, dtype=wp.vec3), wp.array(uppers, dtype=wp.vec3))
    qc = rng.uniform(0, 10, (q, 3))
    qh = rng.uniform(0.5, 3, (q, 3))
    qlo, qhi = (qc - qh).astype(np.float32), (qc + qh).astype(np.float32)
    start = rng.uniform(-2, 12, (q, 3)).astype(np.float32)
    direction = (rng.uniform(0, 10, (q, 3)) - start).astype(np.float32)
    box_hits, ray_hits = wp.zeros((q, n), dtype=int), wp.zeros((q, n), dtype=int)
    steps = wp.zeros(q, dtype=int)
    wp.launch_tiled(bvh_hits, dim=q, inputs=[bvh.id, *(wp.array(x, dtype=wp.vec3) for x in (qlo, qhi, start, direction)),
                    box_hits, ray_hits, steps], block_dim=32)
    want_box = np.all((lowers[None] <= qhi[:, None]) & (uppers[None] >= qlo[:, None]), axis=2).astype(int)
    np.testing.assert_array_equal(box_hits.numpy(), want_box)
    np.testing.assert_array_equal(steps.numpy(), want_box.sum(axis=1) + 1)  # every hit, then one empty step
    want_ray = np.array([[_ray_box(start[i], direction[i], lowers[j], uppers[j]) for j in range(n)]
                         for i in range(q)]).astype(int)
    np.testing.assert_array_equal(ray_hits.numpy(), want_ray)


@wp.kernel
def mesh_hits(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), hits: wp.array2d(dtype=int),
              old_name_hits: wp.array2d(dtype=int)):
    b, _ = wp.tid()
    query = wp.tile_mesh_query_aabb(mesh, lo[b], hi[b])
    while wp.tile_query_valid(query):
        face = wp.untile(wp.tile_mesh_query_aabb_next(query))
        if face >= 0:
            hits[b, face] += 1
    again = wp.mesh_query_aabb_tiled(mesh, lo[b], hi[b])
    while wp.tile_query_valid(again):
        face = wp.untile(wp.mesh_query_aabb_next_tiled(again))
        if face >= 0:
            old_name_hits[b, face] += 1


def test_mesh_aabb_queries_match_brute_force():
    rng = np.random.default_rng(12)
    points = rng.uniform(0, 5, (40, 3)).astype(np.float32)
    faces = rng.integers(0, 40, (29, 3)).astype(np.int32)
    mesh = wp.Mesh(points=wp.array(points, dtype=wp.vec3), indices=wp.array(faces.ravel(), dtype=wp.int32))
    qc = rng.uniform(0, 5, (5, 3))
    qlo, qhi = (qc - 0.8).astype(np.float32), (qc + 0.8).astype(np.float32)
    hits, old = wp.zeros((5, 29), dtype=int), wp.zeros((5, 29), dtype=int)
    wp.launch_tiled(mesh_hits, dim=5, inputs=[mesh.id, wp.array(qlo, dtype=wp.vec3), wp.array(qhi, dtype=wp.vec3),
                    hits, old], block_dim=16)
    flo, fhi = points[faces].min(axis=1), points[faces].max(axis=1)
    want = np.all((flo[None] <= qhi[:, None]) & (fhi[None] >= qlo[:, None]), axis=2).astype(int)
    np.testing.assert_array_equal(hits.numpy(), want)
    np.testing.assert_array_equal(old.numpy(), want)


def next_of_plain_query(bvh: wp.uint64, out: wp.array(dtype=int)):
    q = wp.bvh_query_aabb(bvh, wp.vec3(0.0), wp.vec3(1.0))
    t = wp.tile_bvh_query_next(q)
    out[0] = t[0]


def bad_bounds(bvh: wp.uint64, out: wp.array(dtype=int)):
    q = wp.tile_bvh_query_aabb(bvh, 1.0, wp.vec3(1.0))
    out[0] = int(wp.tile_query_valid(q))


@pytest.mark.parametrize("fn, message, line_text", [
    (next_of_plain_query, r"expected one BvhQueryTiled, got \(BvhQuery\)", "tile_bvh_query_next(q)"),
    (bad_bounds, r"'low' must be a vec3, got float32", "tile_bvh_query_aabb"),
])
def test_query_errors_point_at_the_user_line(fn, message, line_text):
    assert_error_at_line(fn, message, line_text, [wp.uint64(0), wp.zeros(1, dtype=int)], "tile_query_err")
