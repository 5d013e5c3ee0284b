"""tile_scatter_add and tile_scatter_masked against NumPy: 1-d and 2-d tiles, has_value, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest
from tile_error_check import assert_error_at_line

import treadle as wp


@wp.kernel
def histogram(data: wp.array2d(dtype=float), bins_out: wp.array2d(dtype=float), grid_out: wp.array3d(dtype=float)):
    b, _ = wp.tid()
    bins = wp.tile_zeros(shape=5, dtype=float, storage="shared")
    grid = wp.tile_full(shape=(3, 7), value=0.5, dtype=float)
    for i in range(data.shape[1]):
        x = data[b, i]
        wp.tile_scatter_add(bins, int(x * 5.0), x * x, x > 0.1)
        wp.tile_scatter_add(grid, i % 3, i % 7, x, True, atomic=False)
        wp.tile_scatter_masked(grid, (i * 2) % 3, (i * 5) % 7, 2.0 * x, i % 4 == 0)
    wp.tile_scatter_add(bins, 99, 1.0, True)  # outside the tile: nothing is touched
    wp.tile_store(bins_out[b], bins)
    wp.tile_store(grid_out[b], grid)


def _reference(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bins = np.zeros((data.shape[0], 5))
    grid = np.full((data.shape[0], 3, 7), 0.5)
    for b in range(data.shape[0]):
        for i, x in enumerate(data[b].astype(np.float64)):
            if x > 0.1:
                bins[b, int(np.float32(x) * np.float32(5.0))] += x * x
            grid[b, i % 3, i % 7] += x
            if i % 4 == 0:
                grid[b, (i * 2) % 3, (i * 5) % 7] = 2.0 * x
    return bins, grid


def test_scatter_values_and_gradients():
    rng = np.random.default_rng(2)
    # inside the bins, away from their edges and the 0.1 threshold, so that finite differences see smooth functions
    data = (rng.integers(0, 5, size=(2, 23)) + rng.uniform(0.2, 0.8, size=(2, 23))) / 5
    data = np.where(np.abs(data - 0.1) < 0.02, data + 0.03, data).astype(np.float32)
    d = wp.array(data, requires_grad=True)
    bins = wp.zeros((2, 5), dtype=float, requires_grad=True)
    grid = wp.zeros((2, 3, 7), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(histogram, dim=2, inputs=[d, bins, grid], block_dim=16)
    want_bins, want_grid = _reference(data)
    np.testing.assert_allclose(bins.numpy(), want_bins, rtol=1e-5)
    np.testing.assert_allclose(grid.numpy(), want_grid, rtol=1e-5)

    gb = rng.standard_normal((2, 5)).astype(np.float32)
    gg = rng.standard_normal((2, 3, 7)).astype(np.float32)
    tape.backward(grads={bins: wp.array(gb), grid: wp.array(gg)})

    def loss(x: np.ndarray) -> float:
        b, g = _reference(x)
        return float(np.sum(b * gb) + np.sum(g * gg))

    eps = 1e-3
    fd = np.zeros(data.shape)
    for idx in np.ndindex(*data.shape):
        xp, xm = data.astype(np.float64), data.astype(np.float64)
        xp[idx] += eps
        xm[idx] -= eps
        fd[idx] = (loss(xp) - loss(xm)) / (2 * eps)
    np.testing.assert_allclose(d.grad.numpy(), fd, rtol=1e-3, atol=1e-3)


def wrong_value_type(a: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=4, dtype=float)
    wp.tile_scatter_add(t, 1, int(a[0]), True)
    wp.tile_store(a, t)


def missing_index(a: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_masked(t, 1, 2.0, True)
    wp.tile_store(a, t[0])


def runtime_atomic(a: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=4, dtype=float)
    wp.tile_scatter_add(t, 1, 2.0, True, a[0] > 0.0)
    wp.tile_store(a, t)


def not_a_variable(a: wp.array(dtype=float)):
    wp.tile_scatter_add(wp.tile_zeros(shape=4, dtype=float), 1, 2.0, True)


@pytest.mark.parametrize("fn, message, line_text", [
    (wrong_value_type, r"'value' type must match the tile's dtype float32, got int32", "int(a[0])"),
    (missing_index, r"on a 2-d tile takes 2 index\(es\), then value and has_value", "tile_scatter_masked"),
    (runtime_atomic, r"'atomic' must be a compile-time constant", "a[0] > 0.0"),
    (not_a_variable, r"must be a tile variable \(it is updated in place\)", "tile_scatter_add"),
])
def test_scatter_errors_point_at_the_user_line(fn, message, line_text):
    assert_error_at_line(fn, message, line_text, [wp.zeros(4, dtype=float)], "tile_scatter_err")
