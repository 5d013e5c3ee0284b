"""closest_point_edge_edge and intersect_tri_tri against NumPy references."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def edge_edge(p: wp.array(dtype=wp.vec3, ndim=2), eps: float, out: wp.array(dtype=wp.vec3)):
    t = wp.tid()
    out[t] = wp.closest_point_edge_edge(p[t, 0], p[t, 1], p[t, 2], p[t, 3], eps)


@wp.kernel
def tri_tri(v: wp.array(dtype=wp.vec3, ndim=2), vd: wp.array(dtype=wp.vec3d, ndim=2), out: wp.array(dtype=int, ndim=2)):
    t = wp.tid()
    out[t, 0] = wp.intersect_tri_tri(v[t, 0], v[t, 1], v[t, 2], v[t, 3], v[t, 4], v[t, 5])
    out[t, 1] = wp.intersect_tri_tri(vd[t, 0], vd[t, 1], vd[t, 2], vd[t, 3], vd[t, 4], vd[t, 5])


def test_closest_point_edge_edge(device: str) -> None:
    rng = np.random.default_rng(0)
    p = rng.normal(size=(500, 4, 3)).astype(np.float32)
    p[:20, 1] = p[:20, 0]  # degenerate first edge
    p[20:40, 3] = p[20:40, 2] + (p[20:40, 1] - p[20:40, 0])  # parallel edges
    out = wp.zeros(500, dtype=wp.vec3, device=device)
    wp.launch(edge_edge, dim=500, inputs=[wp.array(p, dtype=wp.vec3, device=device), 1e-6, out], device=device)
    s, t, d = out.numpy().T
    assert ((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)).all()
    x1 = p[:, 0] + s[:, None] * (p[:, 1] - p[:, 0])
    x2 = p[:, 2] + t[:, None] * (p[:, 3] - p[:, 2])
    np.testing.assert_allclose(d, np.linalg.norm(x1 - x2, axis=1), rtol=1e-4, atol=1e-5)
    assert (s[:20] == 0).all()
    # brute force: the minimum over a fine grid of parameters is never below the reported distance
    g = np.linspace(0, 1, 201)
    a = p[:, 0, None] + g[None, :, None] * (p[:, 1] - p[:, 0])[:, None]
    b = p[:, 2, None] + g[None, :, None] * (p[:, 3] - p[:, 2])[:, None]
    brute = np.linalg.norm(a[:, :, None] - b[:, None, :], axis=-1).min(axis=(1, 2))
    assert (d <= brute + 1e-5).all()
    assert (brute - d < 0.02 * (1 + brute)).all()


def _tri_tri_reference(v: np.ndarray) -> bool:
    """Intersect if an edge of one triangle crosses the other (float64), or (coplanar) a vertex lies inside."""
    a, b = v[:3].astype(np.float64), v[3:].astype(np.float64)

    def seg_hits(tri: np.ndarray, p: np.ndarray, q: np.ndarray) -> bool:
        e1, e2, d = tri[1] - tri[0], tri[2] - tri[0], q - p
        h = np.cross(d, e2)
        det = e1 @ h
        if abs(det) < 1e-12:
            return False
        s = p - tri[0]
        u = (s @ h) / det
        qv = np.cross(s, e1)
        w = (d @ qv) / det
        t = (e2 @ qv) / det
        return u >= 0 and w >= 0 and u + w <= 1 and 0 <= t <= 1

    for tri, other in ((a, b), (b, a)):
        for i in range(3):
            if seg_hits(tri, other[i], other[(i + 1) % 3]):
                return True
    return False


def test_intersect_tri_tri(device: str) -> None:
    rng = np.random.default_rng(1)
    m = 600
    v = rng.normal(size=(m, 6, 3)).astype(np.float32) * 0.6
    v[:, 3:] += rng.normal(size=(m, 1, 3)).astype(np.float32) * 0.8
    # coplanar cases: both in z = 0, overlapping, nested and disjoint
    cop = np.zeros((3, 6, 3), np.float32)
    cop[0, :3, :2] = [[0, 0], [1, 0], [0, 1]]
    cop[0, 3:, :2] = [[0.2, 0.2], [0.3, 0.2], [0.2, 0.3]]  # nested
    cop[1, :3, :2] = [[0, 0], [1, 0], [0, 1]]
    cop[1, 3:, :2] = [[0.4, -0.5], [0.6, 1.0], [2.0, 0.5]]  # edges cross
    cop[2, :3, :2] = [[0, 0], [1, 0], [0, 1]]
    cop[2, 3:, :2] = [[2.2, 0.2], [2.3, 0.2], [2.2, 0.3]]  # apart
    v = np.concatenate([v, cop])
    out = wp.zeros((len(v), 2), dtype=int, device=device)
    wp.launch(tri_tri, dim=len(v), inputs=[wp.array(v, dtype=wp.vec3, device=device),
                                           wp.array(v.astype(np.float64), dtype=wp.vec3d, device=device), out],
              device=device)
    o = out.numpy()
    ref = np.array([_tri_tri_reference(x) for x in v[:m]])
    np.testing.assert_array_equal(o[:m, 1].astype(bool), ref)
    assert (o[:m, 0] == o[:m, 1]).mean() > 0.99
    assert o[m:, 1].tolist() == [1, 1, 0] and o[m:, 0].tolist() == [1, 1, 0]


@wp.kernel
def _cpee_weighted(p1: wp.array(dtype=wp.vec3), q1: wp.array(dtype=wp.vec3), p2: wp.array(dtype=wp.vec3),
                   q2: wp.array(dtype=wp.vec3), w: wp.vec3, out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = wp.dot(wp.closest_point_edge_edge(p1[t], q1[t], p2[t], q2[t], 1e-5), w)


def _cpee_grads(ends: list[np.ndarray], w: Any) -> list[np.ndarray]:
    arrs = [wp.array(a, dtype=wp.vec3, requires_grad=True) for a in ends]
    out = wp.zeros(len(ends[0]), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_cpee_weighted, len(ends[0]), inputs=[*arrs, w, out])
    tape.backward(grads={out: wp.ones(len(ends[0]), dtype=float)})
    return [a.grad.numpy().astype(np.float64) for a in arrs]


def _cpee_fd(ends: list[np.ndarray], w: Any, h: float = 1e-3) -> list[np.ndarray]:
    def value(arrays: list[np.ndarray]) -> np.ndarray:
        out = wp.zeros(len(arrays[0]), dtype=float)
        wp.launch(_cpee_weighted, len(arrays[0]), inputs=[*[wp.array(a, dtype=wp.vec3) for a in arrays], w, out])
        return out.numpy().astype(np.float64)

    grads = []
    for i in range(4):
        g = np.zeros_like(ends[i])
        for axis in range(3):
            plus, minus = [a.copy() for a in ends], [a.copy() for a in ends]
            plus[i][:, axis] += h
            minus[i][:, axis] -= h
            g[:, axis] = (value(plus) - value(minus)) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.parametrize("component", [0, 1, 2])
def test_closest_point_edge_edge_gradients_match_finite_differences(component: int) -> None:
    rng = np.random.default_rng(11 + component)
    n = 300
    ends = [rng.standard_normal((n, 3)) for _ in range(4)]
    ends[3][: n // 3] = ends[2][: n // 3] + 1e-4 * rng.standard_normal((n // 3, 3))  # a third: the second edge a point
    w = wp.vec3(*[1.0 if i == component else 0.0 for i in range(3)])
    analytic, fd = _cpee_grads(ends, w), _cpee_fd(ends, w)
    err = np.max([np.abs(a - f).max(axis=1) / (1.0 + np.abs(f).max(axis=1)) for a, f in zip(analytic, fd)], axis=0)
    # finite differences straddle a branch change (a clamp) for a few samples: everywhere else they agree
    assert np.mean(err < 5e-3) > 0.97, np.sort(err)[-10:]
    assert np.median(err) < 1e-3
