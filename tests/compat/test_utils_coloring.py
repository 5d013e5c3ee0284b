"""Graph colouring: ``graph_coloring_assign``, ``graph_coloring_balance``, ``graph_coloring_get_groups``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import treadle as wp

ALGOS = list(wp.utils.GraphColoringAlgorithm)


def grid_edges(n: int) -> np.ndarray:
    idx = np.arange(n * n).reshape(n, n)
    return np.concatenate([
        np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
        np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1),
        np.stack([idx[:-1, :-1].ravel(), idx[1:, 1:].ravel()], 1),  # triangulated: cliques of 3
    ]).astype(np.int32)


def assert_valid(edges: np.ndarray, colors: np.ndarray, ncolors: int) -> None:
    keep = edges[:, 0] != edges[:, 1]
    assert (colors[edges[keep, 0]] != colors[edges[keep, 1]]).all()
    assert colors.min() >= 0 and colors.max() < ncolors
    assert len(np.unique(colors)) == ncolors


def color(edges: np.ndarray, n: int, algo: wp.utils.GraphColoringAlgorithm) -> tuple[int, np.ndarray, wp.array]:
    colors = wp.empty(n, dtype=wp.int32, device="cpu")
    count = wp.utils.graph_coloring_assign(wp.array(edges.reshape(-1, 2), dtype=wp.int32, device="cpu"), colors,
                                           algo)
    return count, colors.numpy(), colors


@pytest.mark.parametrize("algo", ALGOS, ids=lambda a: a.name)
def test_colourings_are_valid(algo: wp.utils.GraphColoringAlgorithm) -> None:
    rng = np.random.default_rng(int(algo))
    cases = [
        (grid_edges(60), 3600),
        (rng.integers(0, 2000, (8000, 2)).astype(np.int32), 2000),  # random, with duplicates and self-loops
        (np.zeros((0, 2), np.int32), 5),  # no edges: one colour
        (np.array([[0, 1], [1, 2]], np.int32), 6),  # isolated nodes
    ]
    for edges, n in cases:
        count, colors, _ = color(edges, n, algo)
        assert_valid(edges, colors, count)


def test_mcs_is_optimal_on_chordal_graphs() -> None:
    path = np.stack([np.arange(99), np.arange(1, 100)], 1).astype(np.int32)
    assert color(path, 100, wp.utils.GraphColoringAlgorithm.MCS)[0] == 2
    k6 = np.array([(i, j) for i in range(6) for j in range(i + 1, 6)], np.int32)
    assert color(k6, 6, wp.utils.GraphColoringAlgorithm.MCS)[0] == 6
    # a triangulated grid holds triangles (3 colours are needed) and 3 suffice
    assert color(grid_edges(30), 900, wp.utils.GraphColoringAlgorithm.MCS)[0] == 3


def test_balance_keeps_colouring_valid_and_reaches_ratio() -> None:
    edges = grid_edges(50)
    for algo in ALGOS:
        count, colors, arr = color(edges, 2500, algo)
        ratio = wp.utils.graph_coloring_balance(wp.array(edges, device="cpu"), arr, count, 1.05)
        balanced = arr.numpy()
        assert_valid(edges, balanced, count)
        sizes = np.bincount(balanced, minlength=count)
        assert ratio == pytest.approx(sizes.max() / sizes.min())
        assert ratio <= max(1.05, np.bincount(colors).max() / np.bincount(colors).min())


def test_balance_moves_nodes_out_of_a_large_group() -> None:
    # a star: the centre needs its own colour; leaves all share one. With 3 colours and leaves in colour 0,
    # balancing splits the leaves between colours 0 and 2.
    n = 31
    edges = np.stack([np.zeros(n - 1), np.arange(1, n)], 1).astype(np.int32)
    colors = wp.array(np.array([1] + [0] * (n - 1), np.int32), device="cpu")
    ratio = wp.utils.graph_coloring_balance(wp.array(edges, device="cpu"), colors, 3, 1.0)
    sizes = np.bincount(colors.numpy(), minlength=3)
    assert sizes[1] == 1 and abs(int(sizes[0]) - int(sizes[2])) <= 1
    assert ratio == pytest.approx(sizes.max() / sizes.min())
    assert_valid(edges, colors.numpy(), 3)


def test_balance_iteration_limit_warns() -> None:
    edges = grid_edges(20)
    count, colors, arr = color(edges, 400, wp.utils.GraphColoringAlgorithm.GREEDY)
    before = arr.numpy().copy()
    with pytest.warns(UserWarning, match="max_iterations=0"):
        wp.utils.graph_coloring_balance(wp.array(edges, device="cpu"), arr, count, 1.0, max_iterations=0)
    np.testing.assert_array_equal(arr.numpy(), before)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wp.utils.graph_coloring_balance(wp.array(edges, device="cpu"), arr, count, 100.0)  # already met: no warning


def test_get_groups() -> None:
    colors = wp.array(np.array([2, 0, 2, 1, 0, 2], np.int32), device="cpu")
    groups = wp.utils.graph_coloring_get_groups(colors, 3, return_wp_array=False)
    assert [g.tolist() for g in groups] == [[1, 4], [3], [0, 2, 5]]
    assert all(g.dtype == np.int32 for g in groups)
    arrays = wp.utils.graph_coloring_get_groups(colors, 4)
    assert [a.numpy().tolist() for a in arrays] == [[1, 4], [3], [0, 2, 5], []]
    assert all(isinstance(a, wp.array) and a.dtype == wp.int32 for a in arrays)


def test_bad_inputs() -> None:
    colors = wp.empty(4, dtype=wp.int32, device="cpu")
    with pytest.raises(TypeError, match="int32"):
        wp.utils.graph_coloring_assign(wp.array([[0, 1]], dtype=wp.int64), colors)
    with pytest.raises(ValueError, match="shape \\(edge_count, 2\\)"):
        wp.utils.graph_coloring_assign(wp.array([0, 1], dtype=wp.int32), colors)
    with pytest.raises(ValueError, match="outside"):
        wp.utils.graph_coloring_assign(wp.array([[0, 4]], dtype=wp.int32), colors)
    with pytest.raises(ValueError):
        wp.utils.graph_coloring_assign(wp.array([[0, 1]], dtype=wp.int32), colors, 7)
    bad = wp.array(np.array([0, 1, 5, 0], np.int32), device="cpu")
    with pytest.raises(ValueError, match="color_count=2"):
        wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32), bad, 2, 1.1)
    with pytest.raises(ValueError, match="max_iterations"):
        wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32), colors.fill_(0) or colors, 1, 1.1,
                                        max_iterations=-1)
    with pytest.raises(TypeError, match="int32"):
        wp.utils.graph_coloring_get_groups(wp.zeros(3, dtype=float), 2)
    if wp.is_cuda_available():
        with pytest.raises(ValueError, match="CPU"):
            wp.utils.graph_coloring_assign(wp.array([[0, 1]], dtype=wp.int32, device="cuda:0"), colors)
