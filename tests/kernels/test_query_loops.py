"""``for index in wp.hash_grid_query(...)`` loops (the iterator form of query/next pairs)."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

pytestmark = pytest.mark.skipif(not hasattr(wp, "HashGrid"), reason="geometry not available")


@wp.kernel
def count_neighbours(grid: wp.uint64, points: wp.array(dtype=wp.vec3), r: float, counts: wp.array(dtype=int)):
    i = wp.tid()
    p = points[i]
    n = 0
    for index in wp.hash_grid_query(grid, p, r):
        if wp.length(points[index] - p) <= r:
            n += 1
    counts[i] = n


def test_for_loop_over_hash_grid_query(device):
    pts = np.random.default_rng(0).random((400, 3)).astype(np.float32)
    grid = wp.HashGrid(16, 16, 16, device=device)
    p = wp.array(pts, dtype=wp.vec3, device=device)
    grid.build(p, 0.1)
    c = wp.zeros(400, dtype=int, device=device)
    wp.launch(count_neighbours, dim=400, inputs=[grid.id, p, 0.1, c], device=device)
    d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    np.testing.assert_array_equal(c.numpy(), (d <= 0.1).sum(1))
