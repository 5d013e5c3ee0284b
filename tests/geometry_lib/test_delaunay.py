"""tri_tri_adjacency and find_triangle_neighbor_edge_index against a brute-force adjacency; delaunay_edge_flip gives a
triangulation whose circumcircles are empty (brute force over every point), equal to SciPy's Delaunay triangulation
on a convex point set, locally Delaunay with the boundary kept on a non-convex one; argument errors."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import treadle as wp
import treadle.geometry as geo


def brute_adjacency(tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    edges: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for t, tri in enumerate(tris.tolist()):
        for j in range(3):
            edges[tuple(sorted((tri[(j + 1) % 3], tri[(j + 2) % 3])))].append((t, j))
    nbr = np.full(tris.shape, -1, np.int32)
    nei = np.full(tris.shape, -1, np.int32)
    for users in edges.values():
        assert len(users) <= 2
        if len(users) == 2:
            (t, j), (s, k) = users
            nbr[t, j], nei[t, j], nbr[s, k], nei[s, k] = s, k, t, j
    return nbr, nei


def grid_mesh(n: int, rng: np.random.Generator, jitter: float = 0.3, flip_some: bool = True
              ) -> tuple[np.ndarray, np.ndarray]:
    """A jittered n x n grid of points, each square split along a random diagonal (counter-clockwise triangles)."""
    pts = np.array([[i, j] for j in range(n) for i in range(n)], np.float64)
    pts += rng.uniform(-jitter, jitter, pts.shape)
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            a, b, c, d = j * n + i, j * n + i + 1, (j + 1) * n + i, (j + 1) * n + i + 1
            tris += [[a, b, d], [a, d, c]] if (rng.random() < 0.5 or not flip_some) else [[a, b, c], [b, d, c]]
    return pts.astype(np.float32), np.array(tris, np.int32)


def signed_areas(pts: np.ndarray, tris: np.ndarray) -> np.ndarray:
    p = pts.astype(np.float64)[tris]
    e1, e2 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    return 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])


def in_circle(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """> 0 where the points d lie inside the circle through the counter-clockwise a, b, c (float64)."""
    rows = [np.concatenate([x - d, np.sum((x - d) ** 2, axis=-1, keepdims=True)], axis=-1) for x in (a, b, c)]
    return np.linalg.det(np.stack(rows, axis=-2))


def boundary_edges(tris: np.ndarray) -> set[tuple[int, int]]:
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    und, counts = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    return {tuple(e) for e in und[counts == 1].tolist()}


def test_adjacency_against_brute_force(device: str) -> None:
    rng = np.random.default_rng(2)
    _, tris = grid_mesh(9, rng)
    tris = tris[rng.permutation(len(tris))]
    flip = rng.random(len(tris)) < 0.3
    tris[flip] = tris[flip][:, ::-1]  # orientation need not be consistent
    idx = wp.array(tris, dtype=wp.int32)
    nbr, nei = geo.tri_tri_adjacency(idx)
    bn, be = brute_adjacency(tris)
    np.testing.assert_array_equal(nbr.numpy(), bn)
    np.testing.assert_array_equal(nei.numpy(), be)
    only = geo.tri_tri_adjacency(idx, vertex_count=81, return_neighbor_edge_indices=False)
    np.testing.assert_array_equal(only.numpy(), bn)
    empty_n, empty_e = geo.tri_tri_adjacency(wp.zeros((0, 3), dtype=wp.int32))
    assert empty_n.shape == (0, 3) and empty_e.shape == (0, 3)
    # a NumPy array is accepted too
    np.testing.assert_array_equal(geo.tri_tri_adjacency(tris, return_neighbor_edge_indices=False).numpy(), bn)


@wp.kernel
def edge_back(neighbors: wp.array2d(dtype=wp.int32), out: wp.array2d(dtype=wp.int32),
              self_edge: wp.array2d(dtype=wp.int32)):
    t, j = wp.tid()
    n = neighbors[t, j]
    r = -1
    s = -1
    if n >= 0:
        r = geo.find_triangle_neighbor_edge_index(neighbors, n, t)
        s = geo.find_triangle_neighbor_edge_index(neighbors, t, n)
    out[t, j] = r
    self_edge[t, j] = s


def test_find_triangle_neighbor_edge_index(device: str) -> None:
    rng = np.random.default_rng(5)
    _, tris = grid_mesh(7, rng)
    nbr, nei = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32))
    out = wp.zeros(nbr.shape, dtype=wp.int32)
    own = wp.zeros(nbr.shape, dtype=wp.int32)
    wp.launch(edge_back, dim=nbr.shape, inputs=[nbr, out, own])
    np.testing.assert_array_equal(out.numpy(), nei.numpy())
    n = nbr.numpy()
    expect = np.where(n >= 0, np.broadcast_to(np.arange(3), n.shape), -1)
    np.testing.assert_array_equal(own.numpy(), expect)


def random_flips(pts: np.ndarray, tris: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Flip ``count`` random interior edges whose quad is convex: a valid triangulation far from Delaunay."""
    tris = tris.copy()
    for _ in range(count):
        nbr, nei = brute_adjacency(tris)
        t, j = map(int, rng.integers(0, [len(tris), 3]))
        s = nbr[t, j]
        if s < 0:
            continue
        p, v1, v2 = tris[t, j], tris[t, (j + 1) % 3], tris[t, (j + 2) % 3]
        q = tris[s, nei[t, j]]
        new = np.array([[p, v1, q], [q, v2, p]])
        if (signed_areas(pts, new) > 1e-3).all():
            tris[t], tris[s] = new
    return tris


def test_flips_reach_the_delaunay_triangulation(device: str) -> None:
    scipy_spatial = pytest.importorskip("scipy.spatial")
    rng = np.random.default_rng(11)
    pts = rng.random((150, 2)).astype(np.float32)
    start = scipy_spatial.Delaunay(pts.astype(np.float64)).simplices.astype(np.int32)
    start[signed_areas(pts, start) < 0] = start[signed_areas(pts, start) < 0][:, ::-1]
    bad = random_flips(pts, start, 400, rng)
    assert {tuple(sorted(t)) for t in bad.tolist()} != {tuple(sorted(t)) for t in start.tolist()}
    idx = wp.array(bad, dtype=wp.int32)
    flips = geo.delaunay_edge_flip(wp.array(pts, dtype=wp.vec2), idx)
    assert flips.shape == (1,) and flips.dtype == wp.int32 and flips.numpy()[0] > 0
    out = idx.numpy()
    assert (signed_areas(pts, out) > 0).all()  # counter-clockwise, nothing inverted
    assert boundary_edges(out) == boundary_edges(bad)
    # empty circumcircles, by brute force over every point
    p = pts.astype(np.float64)
    det = in_circle(p[out[:, 0]][:, None], p[out[:, 1]][:, None], p[out[:, 2]][:, None], p[None, :, :])
    mine = np.zeros_like(det, bool)
    mine[np.arange(len(out))[:, None], out] = True
    assert (det[~mine] < 1e-9).all()
    assert {tuple(sorted(t)) for t in out.tolist()} == {tuple(sorted(t)) for t in start.tolist()}
    # done: another call flips nothing and changes nothing
    again = geo.delaunay_edge_flip(wp.array(pts, dtype=wp.vec2), idx)
    assert again.numpy()[0] == 0 and np.array_equal(idx.numpy(), out)


def test_non_convex_boundary_is_kept(device: str) -> None:
    rng = np.random.default_rng(3)
    pts, tris = grid_mesh(12, rng, jitter=0.35)
    tris = tris[signed_areas(pts, tris) > 0]  # drop the few jitter inverted: holes make the boundary non-convex
    start = tris.copy()
    flips = geo.delaunay_edge_flip(pts, tris)  # NumPy arrays: indices updated in place
    assert flips.numpy()[0] > 0 and not np.array_equal(tris, start)
    assert boundary_edges(tris) == boundary_edges(start)
    assert (signed_areas(pts, tris) > 0).all()
    nbr, nei = brute_adjacency(tris)
    t, j = np.nonzero(nbr >= 0)
    p = pts.astype(np.float64)
    opp = tris[nbr[t, j], nei[t, j]]
    det = in_circle(p[tris[t, j]], p[tris[t, (j + 1) % 3]], p[tris[t, (j + 2) % 3]], p[opp])
    assert (det < 1e-9).all()  # every interior edge locally Delaunay


def test_one_pass_flips_an_independent_set(device: str) -> None:
    rng = np.random.default_rng(8)
    pts, tris = grid_mesh(10, rng, jitter=0.2, flip_some=True)
    tris = tris[signed_areas(pts, tris) > 0]
    idx = wp.array(tris, dtype=wp.int32)
    flips = int(geo.delaunay_edge_flip(wp.array(pts, dtype=wp.vec2), idx, max_passes=1).numpy()[0])
    changed = np.nonzero((idx.numpy() != tris).any(axis=1))[0]
    assert flips > 0 and len(changed) == 2 * flips  # each flip rewrites two triangles, no triangle twice


def test_area_thresholds_and_reference_positions(device: str) -> None:
    # a convex quad whose diagonal is not Delaunay: flipped unless a new triangle would be too small
    pts = np.array([[0.0, 0.0], [2.0, 0.0], [2.2, 1.0], [0.0, 0.2]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    out = tris.copy()
    assert geo.delaunay_edge_flip(pts, out).numpy()[0] == 1
    assert {tuple(sorted(t)) for t in out.tolist()} == {(0, 1, 3), (1, 2, 3)}
    out = tris.copy()
    assert geo.delaunay_edge_flip(pts, out, area_epsilon=0.5).numpy()[0] == 0  # new areas 0.2 and ~0.97
    np.testing.assert_array_equal(out, tris)
    # in the reference positions the flip would make a degenerate triangle: refused
    ref = pts.copy()
    ref[3] = [0.0, 0.0]
    out = tris.copy()
    assert geo.delaunay_edge_flip(pts, out, ref_positions=ref).numpy()[0] == 0
    # a co-circular square is left alone (no flipping back and forth)
    sq = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)
    out = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    assert geo.delaunay_edge_flip(sq, out).numpy()[0] == 0


def test_bad_arguments(device: str) -> None:
    tris = wp.array(np.array([[0, 1, 2], [0, 2, 3]], np.int32), dtype=wp.int32)
    pos = wp.array(np.zeros((4, 2), np.float32), dtype=wp.vec2)
    with pytest.raises(ValueError, match=r"\(num_tris, 3\)"):
        geo.tri_tri_adjacency(wp.array(np.arange(6, dtype=np.int32), dtype=wp.int32))
    with pytest.raises(TypeError, match="int32"):
        geo.tri_tri_adjacency(wp.array(np.zeros((2, 3), np.int64), dtype=wp.int64))
    with pytest.raises(ValueError, match="outside"):
        geo.tri_tri_adjacency(tris, vertex_count=3)
    with pytest.raises(ValueError, match="outside"):
        geo.tri_tri_adjacency(wp.array(np.array([[0, 1, -1]], np.int32), dtype=wp.int32), vertex_count=4)
    fan = wp.array(np.array([[0, 1, 2], [0, 2, 3], [2, 0, 4]], np.int32), dtype=wp.int32)
    with pytest.raises(ValueError, match=r"edge-manifold: edge \(2, 0\)|edge-manifold: edge \(0, 2\)"):
        geo.tri_tri_adjacency(fan)
    with pytest.raises(ValueError, match="edge-manifold"):
        geo.delaunay_edge_flip(wp.array(np.random.default_rng(0).random((5, 2)).astype(np.float32), dtype=wp.vec2),
                               fan)
    with pytest.raises(TypeError, match="vec2"):
        geo.delaunay_edge_flip(wp.array(np.zeros((4, 2)), dtype=wp.vec2d), tris)
    with pytest.raises(TypeError, match="vec2"):
        geo.delaunay_edge_flip(wp.array(np.zeros((4, 3), np.float32), dtype=wp.vec3), tris)
    with pytest.raises(ValueError, match="max_passes"):
        geo.delaunay_edge_flip(pos, tris, max_passes=0)
    with pytest.raises(ValueError, match="area_epsilon"):
        geo.delaunay_edge_flip(pos, tris, area_epsilon=-1.0)
    with pytest.raises(ValueError, match="ref_area_epsilon"):
        geo.delaunay_edge_flip(pos, tris, ref_area_epsilon=float("nan"))
    with pytest.raises(ValueError, match="ref_positions has 3"):
        geo.delaunay_edge_flip(pos, tris, ref_positions=np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="outside"):
        geo.delaunay_edge_flip(pos[:3], tris)
