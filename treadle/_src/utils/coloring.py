"""Graph colouring for parallel solvers: ``graph_coloring_assign``, ``_balance`` and ``_get_groups``.

The graph arrives as an edge list; the host builds its adjacency in CSR form (NumPy) and the colouring itself runs
in single-thread Treadle kernels (the algorithms are sequential by nature):

- ``MCS`` (maximum cardinality search, ``_mcs``): repeatedly take the node with the most already coloured
  neighbours (bucket lists by that count) and give it the smallest colour none of them has. On chordal graphs this
  uses the fewest colours possible, and it stays close on meshes.
- ``GREEDY`` (``_greedy``): nodes in order of decreasing degree, each the smallest colour free among its neighbours.
- balancing (``_balance``): move nodes from the largest colour group into smaller groups whose colour none of their
  neighbours has, until the largest/smallest size ratio reaches the target, nothing can move, or the move budget
  is spent.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

import treadle as wp

from .common import UtilsTypeError, UtilsValueError, type_name


class GraphColoringAlgorithm(enum.IntEnum):
    """Graph colouring algorithm of :func:`graph_coloring_assign`."""

    #: Maximum cardinality search: fewer colours, slightly slower.
    MCS = 0
    #: Greedy colouring in order of decreasing degree.
    GREEDY = 1


@wp.kernel(enable_backward=False)
def _mcs(offsets: wp.array(dtype=int), adj: wp.array(dtype=int), n: int, colors: wp.array(dtype=int),
         weight: wp.array(dtype=int), nxt: wp.array(dtype=int), prv: wp.array(dtype=int),
         head: wp.array(dtype=int), visited: wp.array(dtype=int), used: wp.array(dtype=int),
         result: wp.array(dtype=int)):
    # bucket w holds the unvisited nodes with w visited neighbours, as a doubly linked list
    for v in range(n):
        weight[v] = 0
        visited[v] = 0
        prv[v] = v - 1
        nxt[v] = v + 1
        used[v] = -1
    if n > 0:
        nxt[n - 1] = -1
    head[0] = 0
    maxw = 0
    ncolors = 0
    for step in range(n):
        while head[maxw] == -1:
            maxw = maxw - 1
        v = head[maxw]
        h = nxt[v]
        head[maxw] = h
        if h != -1:
            prv[h] = -1
        visited[v] = 1
        for e in range(offsets[v], offsets[v + 1]):
            u = adj[e]
            if visited[u] != 0 and u != v:
                used[colors[u]] = step
        c = 0
        while used[c] == step:
            c = c + 1
        colors[v] = c
        if c + 1 > ncolors:
            ncolors = c + 1
        for e in range(offsets[v], offsets[v + 1]):
            u = adj[e]
            if visited[u] == 0:
                w = weight[u]
                p = prv[u]
                q = nxt[u]
                if p != -1:
                    nxt[p] = q
                else:
                    head[w] = q
                if q != -1:
                    prv[q] = p
                w = w + 1
                weight[u] = w
                q = head[w]
                nxt[u] = q
                prv[u] = -1
                if q != -1:
                    prv[q] = u
                head[w] = u
                if w > maxw:
                    maxw = w
    result[0] = ncolors


@wp.kernel(enable_backward=False)
def _greedy(offsets: wp.array(dtype=int), adj: wp.array(dtype=int), order: wp.array(dtype=int), n: int,
            colors: wp.array(dtype=int), used: wp.array(dtype=int), result: wp.array(dtype=int)):
    for v in range(n):
        colors[v] = -1
        used[v] = -1
    ncolors = 0
    for k in range(n):
        v = order[k]
        for e in range(offsets[v], offsets[v + 1]):
            cu = colors[adj[e]]
            if cu >= 0:
                used[cu] = k
        c = 0
        while used[c] == k:
            c = c + 1
        colors[v] = c
        if c + 1 > ncolors:
            ncolors = c + 1
    result[0] = ncolors


@wp.func
def _can_take(offsets: wp.array(dtype=int), adj: wp.array(dtype=int), colors: wp.array(dtype=int), v: int,
              c: int) -> bool:
    for e in range(offsets[v], offsets[v + 1]):
        u = adj[e]
        if u != v and colors[u] == c:
            return False
    return True


@wp.kernel(enable_backward=False)
def _balance(offsets: wp.array(dtype=int), adj: wp.array(dtype=int), n: int, colors: wp.array(dtype=int),
             ncolors: int, target: float, max_moves: int, sizes: wp.array(dtype=int), tried: wp.array(dtype=int),
             result: wp.array(dtype=int)):
    for c in range(ncolors):
        sizes[c] = 0
    for v in range(n):
        sizes[colors[v]] = sizes[colors[v]] + 1
    moves = 0
    limited = 0
    cursor = 0
    done = 0
    while done == 0:
        big = 0
        small = 0
        for c in range(ncolors):
            if sizes[c] > sizes[big]:
                big = c
            if sizes[c] < sizes[small]:
                small = c
        if float(sizes[big]) <= target * float(sizes[small]):
            done = 1
        elif moves >= max_moves:
            limited = 1
            done = 1
        else:
            # try the smaller groups in order of size; move the first node of the largest one that fits
            for c in range(ncolors):
                tried[c] = 0
            moved = 0
            attempts = 0
            while moved == 0 and attempts < ncolors:
                attempts = attempts + 1
                dst = -1
                for c in range(ncolors):
                    if tried[c] == 0 and c != big and sizes[c] + 1 < sizes[big]:
                        if dst == -1:
                            dst = c
                        elif sizes[c] < sizes[dst]:
                            dst = c
                if dst == -1:
                    attempts = ncolors
                else:
                    tried[dst] = 1
                    for k in range(n):
                        v = (cursor + k) % n
                        if colors[v] == big:
                            if _can_take(offsets, adj, colors, v, dst):
                                colors[v] = dst
                                sizes[big] = sizes[big] - 1
                                sizes[dst] = sizes[dst] + 1
                                cursor = (v + 1) % n
                                moved = 1
                                break
            if moved == 0:
                done = 1
            else:
                moves = moves + 1
    lo = sizes[0]
    hi = sizes[0]
    for c in range(ncolors):
        lo = wp.min(lo, sizes[c])
        hi = wp.max(hi, sizes[c])
    result[0] = hi
    result[1] = lo
    result[2] = limited


def _check_graph(edges: Any, node_colors: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate the arguments and build the CSR adjacency ``(offsets, adjacency, node_count)`` on the host."""
    for name, a in (("edges", edges), ("node_colors", node_colors)):
        if not isinstance(a, wp.array):
            raise UtilsTypeError(f"{name} must be a treadle array, got {type(a).__name__}")
        if not a.device.is_cpu:
            raise UtilsValueError(f"{name} must be a CPU array, got one on device {a.device}")
        if a.dtype != wp.int32:
            raise UtilsTypeError(f"{name} must have dtype int32, got {type_name(a.dtype)}")
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise UtilsValueError(f"edges must have shape (edge_count, 2), got {tuple(edges.shape)}")
    if node_colors.ndim != 1:
        raise UtilsValueError(f"node_colors must be one-dimensional, got shape {tuple(node_colors.shape)}")
    n = node_colors.shape[0]
    e = edges.numpy().astype(np.int64)
    if e.size and (e.min() < 0 or e.max() >= n):
        raise UtilsValueError(f"edges reference node {int(e.max()) if e.max() >= n else int(e.min())}, outside "
                              f"[0, {n}) (node_colors has {n} entries)")
    src = np.concatenate([e[:, 0], e[:, 1]])
    dst = np.concatenate([e[:, 1], e[:, 0]])
    order = np.argsort(src, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
    return offsets, dst[order].astype(np.int32), n


def graph_coloring_assign(edges: Any, node_colors: Any,
                          algorithm: GraphColoringAlgorithm = GraphColoringAlgorithm.MCS) -> int:
    """Colour the nodes of an undirected graph so that no edge joins two nodes of the same colour.

    Args:
        edges: ``int32`` CPU array of shape ``(edge_count, 2)``; row ``[i, j]`` is an edge between nodes i and j
            (self-loops are ignored).
        node_colors: ``int32`` CPU array of shape ``(node_count,)`` that receives each node's colour, from 0.
        algorithm: :attr:`GraphColoringAlgorithm.MCS` (default) or :attr:`GraphColoringAlgorithm.GREEDY`.

    Returns:
        The number of colours used.

    Raises:
        UtilsTypeError: arrays that are not ``int32``.
        UtilsValueError: arrays not on the CPU, of the wrong shape, or edges naming nodes outside ``node_colors``.
        ValueError: an unknown algorithm.

    """
    offsets, adj, n = _check_graph(edges, node_colors)
    algo = GraphColoringAlgorithm(int(algorithm))
    if n == 0:
        return 0
    off_a, adj_a = wp.array(offsets, device="cpu"), wp.array(adj if adj.size else np.zeros(1, np.int32))
    result = wp.zeros(1, dtype=int, device="cpu")
    used = wp.empty(n + 1, dtype=int, device="cpu")
    if node_colors.is_contiguous:
        colors = node_colors
    else:
        colors = wp.empty(n, dtype=int, device="cpu")
    if algo == GraphColoringAlgorithm.MCS:
        scratch = [wp.empty(n, dtype=int, device="cpu") for _ in range(4)]
        head = wp.full(int(np.diff(offsets).max(initial=0)) + 2, -1, dtype=int, device="cpu")
        wp.launch(_mcs, 1, device="cpu", inputs=[off_a, adj_a, n, colors, scratch[0], scratch[1], scratch[2], head,
                                                 scratch[3], used, result])
    else:
        order = np.argsort(-np.diff(offsets), kind="stable").astype(np.int32)
        wp.launch(_greedy, 1, device="cpu", inputs=[off_a, adj_a, wp.array(order), n, colors, used, result])
    if colors is not node_colors:
        wp.copy(node_colors, colors)
    return int(result.numpy()[0])


def graph_coloring_balance(edges: Any, node_colors: Any, color_count: int, target_max_min_ratio: float, *,
                           max_iterations: int | None = None) -> float:
    """Even out the sizes of the colour groups of a valid colouring, keeping it valid.

    Nodes move from the largest group to smaller groups whose colour none of their neighbours has, until the ratio
    of the largest to the smallest group is at most ``target_max_min_ratio``, no node can move, or
    ``max_iterations`` nodes have moved (then a warning says so).

    Args:
        edges: ``int32`` CPU array of shape ``(edge_count, 2)``.
        node_colors: ``int32`` CPU array of colours in ``[0, color_count)``, changed in place.
        color_count: the number of colours (as returned by :func:`graph_coloring_assign`).
        target_max_min_ratio: the largest/smallest group size ratio to reach.
        max_iterations: the most nodes to recolour (default: the number of nodes); non-negative, 32-bit.

    Returns:
        The largest/smallest group size ratio reached (``inf`` when a group is empty).

    Raises:
        UtilsTypeError: arrays that are not ``int32``.
        UtilsValueError: arrays not on the CPU or of the wrong shape, colours outside ``[0, color_count)``, or a bad
            ``max_iterations``.

    """
    offsets, adj, n = _check_graph(edges, node_colors)
    color_count = int(color_count)
    if n == 0 or color_count <= 0:
        return 1.0
    colors_np = node_colors.numpy()
    if colors_np.min() < 0 or colors_np.max() >= color_count:
        raise UtilsValueError(f"node_colors must lie in [0, color_count={color_count}), found "
                              f"{int(colors_np.min())}..{int(colors_np.max())}")
    limit = n if max_iterations is None else int(max_iterations)
    if limit < 0 or limit > 2**31 - 1:
        raise UtilsValueError(f"max_iterations must be a non-negative 32-bit integer, got {max_iterations}")
    colors = node_colors if node_colors.is_contiguous else wp.array(colors_np, device="cpu")
    result = wp.zeros(3, dtype=int, device="cpu")
    wp.launch(_balance, 1, device="cpu",
              inputs=[wp.array(offsets), wp.array(adj if adj.size else np.zeros(1, np.int32)), n, colors,
                      color_count, float(target_max_min_ratio), limit, wp.empty(color_count, dtype=int, device="cpu"),
                      wp.empty(color_count, dtype=int, device="cpu"), result])
    if colors is not node_colors:
        wp.copy(node_colors, colors)
    hi, lo, limited = (int(x) for x in result.numpy())
    if limited:
        warnings.warn(f"graph_coloring_balance() stopped after max_iterations={limit} recolourings before reaching "
                      f"the target ratio {target_max_min_ratio}", stacklevel=2)
    return float("inf") if lo == 0 else hi / lo


def graph_coloring_get_groups(node_colors: Any, color_count: int, return_wp_array: bool = True,
                              device: Any = "cpu") -> tuple[Any, ...]:
    """Split a colouring into groups: for each colour, the ascending ids of the nodes that have it.

    Args:
        node_colors: ``int32`` CPU array of colours.
        color_count: the number of colours (groups returned).
        return_wp_array: return Treadle arrays (default) instead of NumPy arrays.
        device: device of the returned Treadle arrays.

    Returns:
        A tuple of ``color_count`` ``int32`` arrays.

    Raises:
        UtilsTypeError: ``node_colors`` not an ``int32`` array.
        UtilsValueError: ``node_colors`` not 1-D on the CPU.

    """
    if not isinstance(node_colors, wp.array):
        raise UtilsTypeError(f"node_colors must be a treadle array, got {type(node_colors).__name__}")
    if node_colors.dtype != wp.int32:
        raise UtilsTypeError(f"node_colors must have dtype int32, got {type_name(node_colors.dtype)}")
    if node_colors.ndim != 1 or not node_colors.device.is_cpu:
        raise UtilsValueError("node_colors must be a one-dimensional CPU array")
    colors = node_colors.numpy()
    order = np.argsort(colors, kind="stable").astype(np.int32)
    bounds = np.searchsorted(colors[order], np.arange(int(color_count) + 1))
    groups = tuple(order[bounds[c]:bounds[c + 1]] for c in range(int(color_count)))
    if return_wp_array:
        return tuple(wp.array(g, dtype=wp.int32, device=device) for g in groups)
    return groups
