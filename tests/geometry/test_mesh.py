"""Mesh queries against brute force: closest and furthest points, the four sign methods, rays, boxes and spheres,
the older output-argument forms, groups, refit, accessors and degenerate faces."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

# ----------------------------------------------------------------------------------------------------------------
# Meshes and brute force
# ----------------------------------------------------------------------------------------------------------------


def blob_mesh(nlat: int = 14, nlon: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A closed, outward-oriented, star-shaped surface (a bumpy UV sphere)."""
    th = np.linspace(0, np.pi, nlat + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, nlon, endpoint=False)
    T, P = np.meshgrid(th, ph, indexing="ij")
    dirs = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], -1).reshape(-1, 3)
    dirs = np.concatenate([[[0, 0, 1]], dirs, [[0, 0, -1]]])
    rng = np.random.default_rng(seed)
    radius = 1.0 + 0.15 * np.sin(3 * dirs[:, 0]) * np.cos(2 * dirs[:, 1]) + 0.02 * rng.random(len(dirs))
    pts = (dirs * radius[:, None]).astype(np.float32)
    ring = lambda i, j: 1 + i * nlon + (j % nlon)  # noqa: E731
    tris = []
    south = len(pts) - 1
    for j in range(nlon):
        tris.append([0, ring(0, j), ring(0, j + 1)])
        tris.append([south, ring(nlat - 2, j + 1), ring(nlat - 2, j)])
        for i in range(nlat - 2):
            a, b, c, d = ring(i, j), ring(i + 1, j), ring(i + 1, j + 1), ring(i, j + 1)
            tris += [[a, b, c], [a, c, d]]
    tris = np.array(tris, np.int32)
    v = pts[tris].astype(np.float64)
    if np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])).sum() < 0:
        tris = tris[:, ::-1].copy()
    return pts, tris


def closest_dist_brute(pts: np.ndarray, tris: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Distance from each query point to the mesh (float64; plane projection or nearest edge)."""
    a, b, c = (pts[tris[:, k]].astype(np.float64)[None] for k in range(3))
    p = q.astype(np.float64)[:, None]
    n = np.cross(b - a, c - a)
    nn = (n * n).sum(-1)
    h = ((p - a) * n).sum(-1) / nn
    proj = p - h[..., None] * n
    inside = np.ones(h.shape, bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(v - u, proj - u) * n).sum(-1) >= 0
    best = np.where(inside, np.abs(h) * np.sqrt(nn), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        e = v - u
        s = np.clip(((p - u) * e).sum(-1) / (e * e).sum(-1), 0, 1)
        best = np.minimum(best, np.linalg.norm(p - (u + s[..., None] * e), axis=-1))
    return best.min(-1)


def ray_brute(pts: np.ndarray, tris: np.ndarray, o: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Parameter t of every ray/triangle hit (inf for misses), float64 Moller-Trumbore: shape (rays, faces)."""
    a, b, c = (pts[tris[:, k]].astype(np.float64)[None] for k in range(3))
    o = o.astype(np.float64)[:, None]
    d = np.broadcast_to(d.astype(np.float64)[:, None], o.shape[:1] + a.shape[1:])
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = (e1 * pv).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tv = o - a
        u = (tv * pv).sum(-1) * inv
        qv = np.cross(tv, e1)
        v = (d * qv).sum(-1) * inv
        t = (e2 * qv).sum(-1) * inv
    ok = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    return np.where(ok, t, np.inf)


def inside_brute(pts: np.ndarray, tris: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Star-shaped around the origin: inside iff closer to it than the surface along the same direction."""
    d = q / np.linalg.norm(q, axis=-1, keepdims=True)
    surface = ray_brute(pts, tris, np.zeros_like(q), d).min(-1)
    return np.linalg.norm(q, axis=-1) < surface


def make_mesh(device: str, **kw: object) -> tuple[wp.Mesh, np.ndarray, np.ndarray]:
    pts, tris = blob_mesh()
    mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3, device=device), wp.array(tris.reshape(-1), dtype=int, device=device),
                   **kw)
    return mesh, pts, tris


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------


@wp.kernel
def point_queries(mesh: wp.uint64, q: wp.array(dtype=wp.vec3), max_dist: float, min_dist: float, dist: wp.array(dtype=float, ndim=2),
                  sign: wp.array(dtype=float, ndim=2), found: wp.array(dtype=int, ndim=2)):
    t = wp.tid()
    p = q[t]
    # the newer forms' extra arguments sit where the older forms have outputs, so they are passed as variables
    n_sample = 3
    scale = 0.1
    accuracy = 2.0
    threshold = 0.5
    for k in range(6):
        r = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        if k == 1:
            r = wp.mesh_query_point(mesh, p, max_dist)
        elif k == 2:
            r = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
        elif k == 3:
            r = wp.mesh_query_point_sign_parity(mesh, p, max_dist, n_sample, scale)
        elif k == 4:
            r = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist, accuracy, threshold)
        elif k == 5:
            r = wp.mesh_query_furthest_point_no_sign(mesh, p, min_dist)
        found[t, k] = int(r.result)
        if r.result:
            dist[t, k] = wp.length(wp.mesh_eval_position(mesh, r.face, r.u, r.v) - p)
            sign[t, k] = r.sign


@wp.kernel
def old_forms(mesh: wp.uint64, q: wp.array(dtype=wp.vec3), out: wp.array(dtype=float, ndim=2)):
    t = wp.tid()
    p = q[t]
    inside = 0.0
    face = 0
    u = 0.0
    v = 0.0
    if wp.mesh_query_point(mesh, p, 1.0e6, inside, face, u, v):
        out[t, 0] = inside * wp.length(wp.mesh_eval_position(mesh, face, u, v) - p)
    if wp.mesh_query_point_no_sign(mesh, p, 1.0e6, face, u, v):
        out[t, 1] = wp.length(wp.mesh_eval_position(mesh, face, u, v) - p)
    if wp.mesh_query_point_sign_normal(mesh, p, 1.0e6, inside, face, u, v):
        out[t, 2] = inside
    if wp.mesh_query_point_sign_winding_number(mesh, p, 1.0e6, inside, face, u, v):
        out[t, 3] = inside
    if wp.mesh_query_furthest_point_no_sign(mesh, p, 0.0, face, u, v):
        out[t, 4] = wp.length(wp.mesh_eval_position(mesh, face, u, v) - p)
    tt = 0.0
    s = 0.0
    n = wp.vec3()
    if wp.mesh_query_ray(mesh, p, wp.vec3(0.0, 0.0, 1.0), 1.0e6, tt, u, v, s, n, face):
        out[t, 5] = tt


@wp.kernel
def ray_queries(mesh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3), max_t: float,
                out: wp.array(dtype=float, ndim=2), faces: wp.array(dtype=int, ndim=2)):
    t = wp.tid()
    h = wp.mesh_query_ray(mesh, o[t], d[t], max_t)
    faces[t, 0] = -1
    if h.result:
        faces[t, 0] = h.face
        out[t, 0] = h.t
        out[t, 1] = h.sign
        out[t, 2] = wp.length(wp.mesh_eval_position(mesh, h.face, h.u, h.v) - (o[t] + h.t * d[t]))
        out[t, 3] = wp.length(h.normal - wp.mesh_eval_face_normal(mesh, h.face))
    faces[t, 1] = int(wp.mesh_query_ray_anyhit(mesh, o[t], d[t], max_t))
    faces[t, 2] = wp.mesh_query_ray_count_intersections(mesh, o[t], d[t])


@wp.kernel
def region_queries(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                   radius: wp.array(dtype=float), hits: wp.array(dtype=wp.uint8, ndim=3)):
    t = wp.tid()
    q = wp.mesh_query_aabb(mesh, lo[t], hi[t])
    f = 0
    while wp.mesh_query_aabb_next(q, f):
        hits[0, t, f] = hits[0, t, f] + wp.uint8(1)
    c = 0.5 * (lo[t] + hi[t])
    s = wp.mesh_query_sphere(mesh, c, radius[t])
    while wp.mesh_query_next(s, f):
        hits[1, t, f] = hits[1, t, f] + wp.uint8(1)
    b = wp.bvh_query_aabb(wp.mesh_get_bvh(mesh), lo[t], hi[t])
    while wp.bvh_query_next(b, f):
        hits[2, t, f] = hits[2, t, f] + wp.uint8(1)


@wp.kernel
def accessors(mesh: wp.uint64, out: wp.array(dtype=wp.vec3), idx: wp.array(dtype=int)):
    i = wp.tid()
    m = wp.mesh_get(mesh)
    out[4 * i + 0] = wp.mesh_get_point(mesh, i) - m.points[m.indices[i]]
    out[4 * i + 1] = wp.mesh_get_velocity(mesh, i)
    out[4 * i + 2] = wp.mesh_eval_velocity(mesh, i // 3, 0.25, 0.5)
    out[4 * i + 3] = m.velocities[wp.mesh_get_index(mesh, i)]
    idx[i] = wp.mesh_get_index(mesh, i)


# ----------------------------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------------------------


def run_points(mesh: wp.Mesh, q: np.ndarray, max_dist: float, device: str, min_dist: float = 0.0
               ) -> tuple[np.ndarray, ...]:
    m = len(q)
    dist = wp.zeros((m, 6), dtype=float, device=device)
    sign = wp.zeros((m, 6), dtype=float, device=device)
    found = wp.zeros((m, 6), dtype=int, device=device)
    wp.launch(point_queries, dim=m, inputs=[mesh.id, wp.array(q, dtype=wp.vec3, device=device), max_dist, min_dist,
                                            dist, sign, found], device=device)
    return dist.numpy(), sign.numpy(), found.numpy().astype(bool)


def test_closest_point_and_signs_match_brute_force(device: str) -> None:
    mesh, pts, tris = make_mesh(device, support_winding_number=True)
    rng = np.random.default_rng(1)
    q = (rng.normal(size=(400, 3)) * 0.7).astype(np.float32)
    q[:20] *= 4.0  # far away
    dist, sign, found = run_points(mesh, q, 1.0e6, device)
    assert found.all()
    ref = closest_dist_brute(pts, tris, q)
    for k in range(5):
        np.testing.assert_allclose(dist[:, k], ref, atol=2e-5, err_msg=f"query {k}")
    assert (sign[:, 0] == 0).all() and (sign[:, 5] == 0).all()
    inside = inside_brute(pts, tris, q)
    clear = ref > 1e-3
    for k in (1, 2, 3, 4):
        np.testing.assert_array_equal(sign[clear, k] < 0, inside[clear], err_msg=f"sign method {k}")
    # furthest point: the farthest vertex
    far = np.linalg.norm(pts[None].astype(np.float64) - q[:, None], axis=-1).max(-1)
    np.testing.assert_allclose(dist[:, 5], far, rtol=1e-5)


def test_max_dist_limits(device: str) -> None:
    mesh, pts, tris = make_mesh(device)
    q = np.array([[0.0, 0.0, 3.0], [0.0, 0.0, 0.2], [2.5, 0.0, 0.0]], np.float32)
    ref = closest_dist_brute(pts, tris, q)
    dist, sign, found = run_points(mesh, q, 1.5, device)
    np.testing.assert_array_equal(found[:, 0], ref < 1.5)
    assert (sign[~found[:, 1], 1] == 0).all()
    # furthest with min_dist beyond every vertex: nothing
    far = np.linalg.norm(pts[None] - q[:, None], axis=-1).max(-1)
    _, _, found = run_points(mesh, q, 1.5, device, min_dist=float(far.max()) + 0.1)
    assert not found[:, 5].any()


def test_older_output_argument_forms(device: str) -> None:
    mesh, pts, tris = make_mesh(device, support_winding_number=True)
    q = np.array([[0.1, 0.2, 0.3], [1.5, 0.0, 0.2], [0.0, -0.3, -2.0]], np.float32)
    out = wp.zeros((3, 6), dtype=float, device=device)
    wp.launch(old_forms, dim=3, inputs=[mesh.id, wp.array(q, dtype=wp.vec3, device=device), out], device=device)
    o = out.numpy()
    ref = closest_dist_brute(pts, tris, q)
    inside = inside_brute(pts, tris, q)
    np.testing.assert_allclose(np.abs(o[:, 0]), ref, atol=2e-5)
    np.testing.assert_array_equal(o[:, 0] < 0, inside)
    np.testing.assert_allclose(o[:, 1], ref, atol=2e-5)
    np.testing.assert_array_equal(o[:, 2] < 0, inside)
    np.testing.assert_array_equal(o[:, 3] < 0, inside)
    np.testing.assert_allclose(o[:, 4], np.linalg.norm(pts[None] - q[:, None], axis=-1).max(-1), rtol=1e-5)
    t = ray_brute(pts, tris, q, np.tile([0.0, 0.0, 1.0], (3, 1))).min(-1)
    np.testing.assert_allclose(o[:, 5], np.where(np.isfinite(t), t, 0.0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_rays_match_brute_force(device: str, constructor: str) -> None:
    mesh, pts, tris = make_mesh(device, bvh_constructor=constructor, bvh_leaf_size=1)
    rng = np.random.default_rng(2)
    m = 300
    o = (rng.normal(size=(m, 3)) * 1.2).astype(np.float32)
    d = rng.normal(size=(m, 3)).astype(np.float32)
    d[:30] = [1.0, 0.0, 0.0]
    out = wp.zeros((m, 4), dtype=float, device=device)
    faces = wp.zeros((m, 3), dtype=int, device=device)
    max_t = 2.0
    wp.launch(ray_queries, dim=m, inputs=[mesh.id, wp.array(o, dtype=wp.vec3, device=device),
                                          wp.array(d, dtype=wp.vec3, device=device), max_t, out, faces],
              device=device)
    out, faces = out.numpy(), faces.numpy()
    t_all = ray_brute(pts, tris, o, d)
    t_ref = t_all.min(-1)
    hit = t_ref < max_t
    clear = np.abs(t_ref - max_t) > 1e-4
    np.testing.assert_array_equal((faces[:, 0] >= 0)[clear], hit[clear])
    np.testing.assert_array_equal(faces[clear, 1].astype(bool), hit[clear])
    both = hit & (faces[:, 0] >= 0)
    np.testing.assert_allclose(out[both, 0], t_ref[both], rtol=1e-4, atol=1e-5)
    assert (out[both, 2] < 1e-4).all() and (out[both, 3] < 1e-5).all()
    normals = np.cross(*(pts[tris[faces[both, 0], k]] - pts[tris[faces[both, 0], 0]] for k in (1, 2)))
    np.testing.assert_array_equal(out[both, 1], np.where((normals * d[both]).sum(-1) < 0, 1.0, -1.0))
    # counts: every crossing with t >= 0 (rays through shared edges aside)
    np.testing.assert_array_equal(faces[:, 2], np.isfinite(t_all).sum(-1))


def test_box_and_sphere_queries(device: str) -> None:
    mesh, pts, tris = make_mesh(device)
    rng = np.random.default_rng(3)
    m, nf = 100, len(tris)
    c = (rng.normal(size=(m, 3)) * 0.8).astype(np.float32)
    e = (rng.random((m, 3)) * 0.3).astype(np.float32)
    r = (rng.random(m) * 0.4).astype(np.float32)
    hits = wp.zeros((3, m, nf), dtype=wp.uint8, device=device)
    wp.launch(region_queries, dim=m, inputs=[mesh.id, wp.array(c - e, dtype=wp.vec3, device=device),
                                             wp.array(c + e, dtype=wp.vec3, device=device),
                                             wp.array(r, dtype=float, device=device), hits], device=device)
    h = hits.numpy()
    assert h.max() <= 1
    v = pts[tris]
    flo, fhi = v.min(1), v.max(1)
    box = (flo[None] <= (c + e)[:, None]).all(-1) & (fhi[None] >= (c - e)[:, None]).all(-1)
    np.testing.assert_array_equal(h[0].astype(bool), box)
    np.testing.assert_array_equal(h[2].astype(bool), box)
    d = np.stack([closest_dist_brute(pts, tris[f:f + 1], c) for f in range(nf)], -1)
    clear = np.abs(d - r[:, None]) > 1e-5
    np.testing.assert_array_equal(h[1].astype(bool)[clear], (d <= r[:, None])[clear])


def test_refit_accessors_and_velocities(device: str) -> None:
    pts, tris = blob_mesh(6, 8)
    vel = np.random.default_rng(4).normal(size=pts.shape).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3, device=device)
    mesh = wp.Mesh(points, wp.array(tris.reshape(-1), dtype=int, device=device),
                   velocities=wp.array(vel, dtype=wp.vec3, device=device))
    n = tris.size
    out = wp.zeros(4 * n, dtype=wp.vec3, device=device)
    idx = wp.zeros(n, dtype=int, device=device)
    wp.launch(accessors, dim=n, inputs=[mesh.id, out, idx], device=device)
    o = out.numpy().reshape(n, 4, 3)
    flat = tris.reshape(-1)
    np.testing.assert_array_equal(idx.numpy(), flat)
    assert np.abs(o[:, 0]).max() == 0.0
    np.testing.assert_allclose(o[:, 1], vel[flat], rtol=1e-6)
    np.testing.assert_allclose(o[:, 3], vel[flat], rtol=1e-6)
    f = np.arange(n) // 3
    expect = 0.25 * vel[tris[f, 0]] + 0.5 * vel[tris[f, 1]] + 0.25 * vel[tris[f, 2]]
    np.testing.assert_allclose(o[:, 2], expect, rtol=1e-5, atol=1e-6)

    # move the points in place: queries see the move after refit()
    q = np.array([[0.0, 0.0, 3.0]], np.float32)
    points.assign(pts + np.array([0.0, 0.0, 2.0], np.float32))
    mesh.refit()
    dist, _, _ = run_points(mesh, q, 1.0e6, device)
    np.testing.assert_allclose(dist[0, 0], closest_dist_brute(pts + [0, 0, 2.0], tris, q)[0], atol=2e-5)
    with pytest.raises(RuntimeError):
        mesh.points = wp.zeros(3, dtype=wp.vec3, device=device)


def test_degenerate_faces_and_points_on_faces(device: str) -> None:
    # a unit square made of two triangles, plus a zero-area sliver and a point-like face close to the query
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 0.1], [0.5, 0.5, 0.1], [0.6, 0.6, 0.1]],
                   np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 4, 4]], np.int32)
    mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3, device=device), wp.array(tris.reshape(-1), dtype=int, device=device))
    q = np.array([[0.5, 0.5, 0.12], [0.25, 0.75, 0.0], [1.0, 1.0, 0.0]], np.float32)
    dist, _, found = run_points(mesh, q, 1.0e6, device)
    assert found[:, 0].all()
    np.testing.assert_allclose(dist[:, 0], [0.12, 0.0, 0.0], atol=1e-6)  # the degenerate faces are skipped


def test_grouped_mesh_rays(device: str) -> None:
    # two parallel squares, one per group: a ray from below hits the lower one unless restricted to group 1
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]] * 2, np.float32)
    pts[4:, 2] = 1.0
    tris = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]], np.int32)
    mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3, device=device), wp.array(tris.reshape(-1), dtype=int, device=device),
                   groups=wp.array([0, 0, 1, 1], dtype=int, device=device), bvh_leaf_size=1)

    @wp.kernel
    def grouped(mesh: wp.uint64, out: wp.array(dtype=float)):
        g = wp.tid()
        root = wp.mesh_get_group_root(mesh, g)
        h = wp.mesh_query_ray(mesh, wp.vec3(0.3, 0.6, -1.0), wp.vec3(0.0, 0.0, 1.0), 10.0, root)
        out[g] = h.t

    out = wp.zeros(2, dtype=float, device=device)
    wp.launch(grouped, dim=2, inputs=[mesh.id, out], device=device)
    np.testing.assert_allclose(out.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_axis_parallel_rays_starting_on_box_faces(device: str, constructor: str) -> None:
    # A flat square (a box with zero thickness in z) hit straight down by rays whose origin lies exactly on one of
    # the box's x or y faces: the slabs they run parallel to must not reject them.
    pts = np.array([[0, 0, 0], [3, 0, 0], [3, 3, 0], [0, 3, 0]], np.float32)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3, device=device),
                   indices=wp.array([0, 1, 2, 0, 2, 3], dtype=int, device=device), bvh_constructor=constructor)
    o = np.array([[3, 1.5, 2], [0, 1.5, 2], [1.5, 3, 2], [1.5, 0, 2], [0, 0, 2], [3, 3, 2], [1, 1, 2],
                  [3.001, 1.5, 2], [1.5, -0.001, 2]], np.float32)
    d = np.tile(np.array([0, 0, -1], np.float32), (len(o), 1))
    out = wp.zeros((len(o), 4), dtype=float, device=device)
    faces = wp.zeros((len(o), 3), dtype=int, device=device)
    wp.launch(ray_queries, dim=len(o), inputs=[mesh.id, wp.array(o, dtype=wp.vec3, device=device),
                                                wp.array(d, dtype=wp.vec3, device=device), 10.0, out, faces],
              device=device)
    f, t = faces.numpy(), out.numpy()[:, 0]
    hit = np.arange(len(o)) < 7
    np.testing.assert_array_equal(f[:, 0] >= 0, hit)
    np.testing.assert_array_equal(f[:, 1] == 1, hit)
    assert (f[hit, 2] >= 1).all() and (f[~hit, 2] == 0).all()
    np.testing.assert_allclose(t[hit], 2.0, rtol=0, atol=1e-6)


@wp.kernel
def _eval_loss(mesh: wp.uint64, uv: wp.array(dtype=wp.vec2), out: wp.array(dtype=float)):
    i = wp.tid()
    p = wp.mesh_eval_position(mesh, 1, uv[i][0], uv[i][1])
    v = wp.mesh_eval_velocity(mesh, 0, uv[i][0], uv[i][1])
    out[i] = wp.dot(p, wp.vec3(1.0, 2.0, 3.0)) + wp.dot(v, wp.vec3(0.5, 0.0, 1.0))


def test_mesh_eval_gradients_in_barycentric_coordinates():
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    vels = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1]], np.float32)
    mesh = wp.Mesh(points=wp.array(points, dtype=wp.vec3), indices=wp.array([0, 1, 2, 0, 1, 3], dtype=int),
                   velocities=wp.array(vels, dtype=wp.vec3))
    uv = wp.array(np.array([[0.2, 0.3], [0.6, 0.1]], np.float32), dtype=wp.vec2, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_eval_loss, 2, inputs=[mesh.id, uv, out])
    tape.backward(grads={out: wp.ones(2, dtype=float)})
    w, wv = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, 1.0])
    du = (points[0] - points[3]) @ w + (vels[0] - vels[2]) @ wv  # face 1 is (0, 1, 3), face 0 is (0, 1, 2)
    dv = (points[1] - points[3]) @ w + (vels[1] - vels[2]) @ wv
    np.testing.assert_allclose(uv.grad.numpy(), [[du, dv], [du, dv]])
