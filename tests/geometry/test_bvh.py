"""Bvh queries against brute force: boxes, rays (with max_dist), spheres, capsules, groups, refit and rebuild."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def query_all(bvh: wp.uint64, kind: int, a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3),
              radius: wp.array(dtype=float), max_dist: float, root: int, hits: wp.array(dtype=wp.uint8, ndim=2)):
    t = wp.tid()
    q = wp.bvh_query_aabb(bvh, a[t], b[t], root)
    if kind == 1:
        q = wp.bvh_query_ray(bvh, a[t], b[t], root)
    elif kind == 2:
        q = wp.bvh_query_sphere(bvh, a[t], radius[t], root)
    elif kind == 3:
        q = wp.bvh_query_capsule(bvh, a[t], b[t], radius[t], root)
    item = 0
    while wp.bvh_query_next(q, item, max_dist):
        hits[t, item] = hits[t, item] + wp.uint8(1)


@wp.kernel
def group_roots(bvh: wp.uint64, groups: wp.array(dtype=int), roots: wp.array(dtype=int)):
    t = wp.tid()
    roots[t] = wp.bvh_get_group_root(bvh, groups[t])


def random_boxes(n: int, seed: int, size: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.random((n, 3)).astype(np.float32)
    e = (rng.random((n, 3)) * size).astype(np.float32)
    e[: n // 10] = 0.0  # some point-like boxes
    return c - e, c + e


def run(bvh: wp.Bvh, n: int, kind: int, a: np.ndarray, b: np.ndarray, radius: np.ndarray | None = None,
        max_dist: float = np.inf, root: int = -1, device: str = "cpu") -> np.ndarray:
    m = len(a)
    hits = wp.zeros((m, max(n, 1)), dtype=wp.uint8, device=device)
    r = radius if radius is not None else np.zeros(m, np.float32)
    wp.launch(query_all, dim=m, inputs=[bvh.id, kind, wp.array(a, dtype=wp.vec3, device=device),
                                         wp.array(b, dtype=wp.vec3, device=device),
                                         wp.array(r, dtype=float, device=device), float(max_dist), root, hits],
              device=device)
    h = hits.numpy()[:, :n]
    assert h.max(initial=0) <= 1, "an item was reported twice"
    return h.astype(bool)


def ray_box_brute(lo: np.ndarray, hi: np.ndarray, o: np.ndarray, d: np.ndarray, pad: float = 0.0) -> np.ndarray:
    """Entry parameter of each ray into each (padded) box, inf on a miss (float64 slabs)."""
    o = o[:, None, :].astype(np.float64)
    d = d[:, None, :].astype(np.float64)
    lo = lo[None].astype(np.float64) - pad
    hi = hi[None].astype(np.float64) + pad
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = (lo - o) / d
        t1 = (hi - o) / d
    tmin = np.where(d == 0, np.where((o >= lo) & (o <= hi), -np.inf, np.inf), np.minimum(t0, t1))
    tmax = np.where(d == 0, np.where((o >= lo) & (o <= hi), np.inf, -np.inf), np.maximum(t0, t1))
    enter = np.maximum(tmin.max(-1), 0.0)
    leave = tmax.min(-1)
    return np.where(enter <= leave, enter, np.inf)


def margin_ok(value: np.ndarray, got: np.ndarray, expected: np.ndarray, eps: float = 1e-5) -> None:
    """got == expected wherever the brute-force quantity is not within eps of its threshold."""
    clear = np.abs(value) > eps
    np.testing.assert_array_equal(got[clear], expected[clear])


@pytest.mark.parametrize("constructor, leaf_size", [("sah", 1), ("median", 1), ("sah", 5), ("lbvh", 3), ("lbvh", 1)])
def test_box_ray_sphere_capsule_queries(device: str, constructor: str, leaf_size: int) -> None:
    n, m = 1500, 200
    lo, hi = random_boxes(n, 1)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device),
                 constructor=constructor, leaf_size=leaf_size)
    rng = np.random.default_rng(2)
    qc = rng.random((m, 3)).astype(np.float32)
    qe = (rng.random((m, 3)) * 0.15).astype(np.float32)

    # boxes (closed intervals: touching counts)
    got = run(bvh, n, 0, qc - qe, qc + qe, device=device)
    expected = (lo[None] <= (qc + qe)[:, None]).all(-1) & (hi[None] >= (qc - qe)[:, None]).all(-1)
    np.testing.assert_array_equal(got, expected)

    # rays, some axis-aligned (zero direction components), with and without max_dist
    o = (rng.random((m, 3)) * 1.4 - 0.2).astype(np.float32)
    d = rng.normal(size=(m, 3)).astype(np.float32)
    d[:40, 1:] = 0.0
    d[40:60, 0] = 0.0
    t_enter = ray_box_brute(lo, hi, o, d)
    for max_dist in (np.inf, 0.3):
        got = run(bvh, n, 1, o, d, max_dist=max_dist, device=device)
        margin_ok(t_enter - max_dist if np.isfinite(max_dist) else np.ones_like(t_enter), got,
                  np.isfinite(t_enter) & (t_enter <= max_dist))

    # spheres: exact squared distance to the box
    r = (rng.random(m) * 0.1).astype(np.float32)
    r[:10] = -1.0  # clamped to 0
    gap = np.maximum(np.maximum(lo[None] - qc[:, None], qc[:, None] - hi[None]), 0.0)
    dist = np.sqrt((gap.astype(np.float64) ** 2).sum(-1))
    got = run(bvh, n, 2, qc, qc, radius=r, device=device)
    margin_ok(dist - np.maximum(r, 0)[:, None], got, dist <= np.maximum(r, 0)[:, None])

    # capsules: the segment o -> o + d against boxes grown by r (max_dist = 1 sweeps the segment)
    seg = (d * 0.2).astype(np.float32)
    t_cap = np.stack([ray_box_brute(lo, hi, o[i:i + 1], seg[i:i + 1], pad=float(max(r[i], 0)))[0] for i in range(m)])
    got = run(bvh, n, 3, o, seg, radius=r, max_dist=1.0, device=device)
    margin_ok(np.where(np.isfinite(t_cap), t_cap - 1.0, 1.0), got, t_cap <= 1.0)


def test_refit_and_rebuild_follow_moved_boxes(device: str) -> None:
    n = 400
    lo, hi = random_boxes(n, 3)
    lows = wp.array(lo, dtype=wp.vec3, device=device)
    highs = wp.array(hi, dtype=wp.vec3, device=device)
    bvh = wp.Bvh(lows, highs)
    shift = np.array([0.5, -0.25, 2.0], np.float32)
    lows.assign(lo + shift)
    highs.assign(hi + shift)
    q_lo = np.array([[0.2, -0.2, 2.1]], np.float32)
    q_hi = np.array([[0.9, 0.4, 2.6]], np.float32)
    expected = ((lo + shift)[None] <= q_hi[:, None]).all(-1) & ((hi + shift)[None] >= q_lo[:, None]).all(-1)
    assert not run(bvh, n, 0, q_lo, q_hi, device=device).any()  # not refitted yet: the old bounds
    bvh.refit()
    np.testing.assert_array_equal(run(bvh, n, 0, q_lo, q_hi, device=device), expected)
    bvh.rebuild("median")
    np.testing.assert_array_equal(run(bvh, n, 0, q_lo, q_hi, device=device), expected)


def test_groups_restrict_traversal(device: str) -> None:
    n = 600
    lo, hi = random_boxes(n, 4, size=0.2)
    groups = np.random.default_rng(5).integers(0, 4, n).astype(np.int32) * 7 - 3  # ids -3, 4, 11, 18
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device),
                 groups=wp.array(groups, dtype=int, device=device), leaf_size=2)
    ids = np.array([-3, 4, 11, 18, 5, -100], np.int32)
    roots = wp.zeros(len(ids), dtype=int, device=device)
    wp.launch(group_roots, dim=len(ids), inputs=[bvh.id, wp.array(ids, dtype=int, device=device), roots],
              device=device)
    roots = roots.numpy()
    assert (roots[:4] >= 0).all() and (roots[4:] == -1).all()
    everything = (np.zeros((1, 3), np.float32) - 1, np.ones((1, 3), np.float32) * 2)
    for g, root in zip(ids[:4], roots[:4]):
        got = run(bvh, n, 0, *everything, root=int(root), device=device)[0]
        np.testing.assert_array_equal(got, groups == g)
    assert run(bvh, n, 0, *everything, root=-1, device=device).all()


def test_degenerate_inputs(device: str) -> None:
    empty = wp.zeros(0, dtype=wp.vec3, device=device)
    bvh = wp.Bvh(empty, empty)
    assert not run(bvh, 0, 0, np.zeros((2, 3), np.float32) - 1, np.ones((2, 3), np.float32), device=device).any()
    bvh.refit()
    # coincident boxes: every one is found
    same = np.zeros((50, 3), np.float32)
    bvh = wp.Bvh(wp.array(same, dtype=wp.vec3, device=device), wp.array(same + 1, dtype=wp.vec3, device=device))
    assert run(bvh, 50, 0, np.full((1, 3), 0.5, np.float32), np.full((1, 3), 0.5, np.float32), device=device).all()
    assert run(bvh, 50, 1, np.full((1, 3), -1.0, np.float32), np.ones((1, 3), np.float32), device=device).all()
    # inverted (empty) query box finds nothing
    assert not run(bvh, 50, 0, np.ones((1, 3), np.float32), np.zeros((1, 3), np.float32) - 1, device=device).any()


def test_argument_errors(device: str) -> None:
    lo = wp.zeros(3, dtype=wp.vec3, device=device)
    with pytest.raises(ValueError, match="Unknown BVH constructor"):
        wp.Bvh(lo, lo, constructor="foo")
    with pytest.raises(ValueError, match="leaf_size"):
        wp.Bvh(lo, lo, leaf_size=0)
    with pytest.raises(RuntimeError, match="same number"):
        wp.Bvh(lo, wp.zeros(2, dtype=wp.vec3, device=device))


@wp.kernel
def for_loop_counts(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                    out: wp.array(dtype=int)):
    t = wp.tid()
    n = 0
    for item in wp.bvh_query_aabb(bvh, lo[t], hi[t]):
        n += item * 0 + 1
    out[t] = n


def test_for_loop_over_a_query(device: str) -> None:
    lo, hi = random_boxes(300, 6)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device))
    q_lo, q_hi = lo[:50] - 0.05, hi[:50] + 0.05
    out = wp.zeros(50, dtype=int, device=device)
    wp.launch(for_loop_counts, dim=50, inputs=[bvh.id, wp.array(q_lo, dtype=wp.vec3, device=device),
                                               wp.array(q_hi, dtype=wp.vec3, device=device), out], device=device)
    np.testing.assert_array_equal(out.numpy(), run(bvh, 300, 0, q_lo, q_hi, device=device).sum(1))


def _tree_depth_and_leaves(bvh: wp.Bvh) -> tuple[int, list[int]]:
    """Walk the native node table from the root: (depth, slots of every leaf), checking child bounds nest."""
    nodes = bvh._tree.nodes.numpy()
    ints = nodes.view(np.int32)
    num = bvh._tree.desc.num_nodes
    slots: list[int] = []
    depth, stack = 0, [(0, 1)]
    while stack:
        k, lvl = stack.pop()
        assert 0 <= k < num
        depth = max(depth, lvl)
        a, b = int(ints[k, 3]), int(ints[k, 7])
        if b < 0:
            slots.extend(range(a, a - b))
            continue
        for c in (a, b):
            assert (nodes[c, :3] >= nodes[k, :3]).all() and (nodes[c, 4:7] <= nodes[k, 4:7]).all()
            stack.append((c, lvl + 1))
    return depth, slots


@pytest.mark.parametrize("n", [2, 3, 17, 1000])
def test_lbvh_structure_matches_brute_force(device: str, n: int) -> None:
    lo, hi = random_boxes(n, 11)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device),
                 constructor="lbvh")
    assert bvh._tree.desc.num_nodes == 2 * n - 1
    depth, slots = _tree_depth_and_leaves(bvh)
    assert sorted(slots) == list(range(n)) and depth < 64
    items = bvh._tree.items.numpy()[:n]
    assert sorted(items.tolist()) == list(range(n))
    # the root box is the union of all boxes
    root = bvh._tree.nodes.numpy()[0]
    np.testing.assert_array_equal(root[:3], lo.min(0))
    np.testing.assert_array_equal(root[4:7], hi.max(0))


def test_lbvh_clustered_and_coincident_items(device: str) -> None:
    # many identical Morton codes (a tight cluster plus exact duplicates): the index tie-break keeps the tree valid
    rng = np.random.default_rng(4)
    lo = np.concatenate([rng.random((300, 3)) * 1e-6, np.zeros((200, 3)), rng.random((100, 3))]).astype(np.float32)
    hi = lo + 0.01
    n = len(lo)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device),
                 constructor="lbvh")
    depth, slots = _tree_depth_and_leaves(bvh)
    assert sorted(slots) == list(range(n)) and depth < 64
    q_lo, q_hi = np.full((1, 3), 0.005, np.float32), np.full((1, 3), 0.006, np.float32)
    expected = (lo[None] <= q_hi[:, None]).all(-1) & (hi[None] >= q_lo[:, None]).all(-1)
    np.testing.assert_array_equal(run(bvh, n, 0, q_lo, q_hi, device=device), expected)


def test_lbvh_refit_and_rebuild(device: str) -> None:
    n = 500
    lo, hi = random_boxes(n, 12)
    lows, highs = wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device)
    bvh = wp.Bvh(lows, highs, constructor="lbvh")
    rng = np.random.default_rng(13)
    q_lo = rng.random((100, 3)).astype(np.float32)
    q_hi = q_lo + 0.1
    for step in range(3):
        lo2 = lo + rng.normal(scale=0.05, size=lo.shape).astype(np.float32)
        hi2 = lo2 + (hi - lo)
        lows.assign(lo2)
        highs.assign(hi2)
        if step == 2:
            bvh.rebuild("lbvh")
        else:
            bvh.refit()
        expected = (lo2[None] <= q_hi[:, None]).all(-1) & (hi2[None] >= q_lo[:, None]).all(-1)
        np.testing.assert_array_equal(run(bvh, n, 0, q_lo, q_hi, device=device), expected)
    bvh.rebuild("sah")  # back to the native builder and its refit
    bvh.refit()
    np.testing.assert_array_equal(run(bvh, n, 0, q_lo, q_hi, device=device), expected)
