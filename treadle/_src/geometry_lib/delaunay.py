"""Triangle adjacency and Delaunay edge flips for 2-d triangle meshes.

``tri_tri_adjacency`` lists every triangle edge under its smaller vertex index (a prefix sum over per-vertex counts,
then one pass filling the lists); each edge then finds its partner, the other entry of its list with the same
larger vertex, in a list of a few entries. An edge with no partner is on the boundary; one with several is a
non-manifold edge, which is refused.

``delaunay_edge_flip`` is Lawson's algorithm in parallel passes. Each pass rebuilds the adjacency, finds the
interior edges whose opposite vertex lies strictly inside the other triangle's circumcircle (an exact-enough test in
float64 with a relative error bound, so that co-circular quads never flip back and forth) and whose flip keeps both
new triangles above the area thresholds, and flips an independent set of them: each candidate claims its two
triangles with ``atomic_min`` of its edge number and flips when it holds both. The smallest candidate always holds
both, so every pass with candidates flips at least one edge, and the result does not depend on thread timing.
Boundary edges have one triangle and are never flipped, so the boundary is kept.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import treadle as wp

from ._common import exclusive_scan

#: Claim value of an unclaimed triangle.
UNCLAIMED = 2**31 - 1


@wp.func
def _edge_ends(tris: wp.array2d(dtype=wp.int32), t: int, j: int) -> wp.vec2i:
    # the edge opposite local vertex j, smaller vertex index first
    a = tris[t, (j + 1) % 3]
    b = tris[t, (j + 2) % 3]
    return wp.vec2i(wp.min(a, b), wp.max(a, b))


@wp.kernel(enable_backward=False)
def _adj_count(tris: wp.array2d(dtype=wp.int32), counts: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    wp.atomic_add(counts, _edge_ends(tris, t, j)[0], 1)


@wp.kernel(enable_backward=False)
def _adj_fill(tris: wp.array2d(dtype=wp.int32), cursor: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32),
              ends: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    e = _edge_ends(tris, t, j)
    slot = wp.atomic_add(cursor, e[0], 1)
    items[slot] = 3 * t + j
    ends[slot] = e[1]


@wp.kernel(enable_backward=False)
def _adj_pairs(tris: wp.array2d(dtype=wp.int32), starts: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32),
               ends: wp.array(dtype=wp.int32), neighbors: wp.array2d(dtype=wp.int32), neighbor_edges: wp.array2d(dtype=wp.int32),
               bad: wp.array(dtype=wp.int32)):
    # the half-edges listed under an edge's smaller vertex are few (with their larger vertex beside them, so the scan
    # reads contiguous memory): find the other one with the same ends
    t, j = wp.tid()
    item = 3 * t + j
    e = _edge_ends(tris, t, j)
    other = -1
    found = 0
    for k in range(starts[e[0]], starts[e[0] + 1]):
        if ends[k] == e[1]:
            it = items[k]
            if it != item:
                other = it
                found += 1
    if found > 1:
        wp.atomic_min(bad, 0, item)
    if other >= 0:
        neighbors[t, j] = other // 3
        neighbor_edges[t, j] = other % 3
    else:
        neighbors[t, j] = -1
        neighbor_edges[t, j] = -1


@wp.func
def find_triangle_neighbor_edge_index(triangle_neighbors: wp.array2d(dtype=wp.int32), triangle: wp.int32,
                                      neighbor: wp.int32) -> wp.int32:
    """The local edge of ``triangle`` that it shares with ``neighbor``, or -1 when they are not adjacent.

    That is the ``j`` with ``triangle_neighbors[triangle, j] == neighbor``; with the arguments swapped it gives the
    entry :func:`tri_tri_adjacency` returns in ``neighbor_edge_indices``, without keeping that array.

    Args:
        triangle_neighbors: the (num_tris, 3) adjacency from :func:`tri_tri_adjacency`.
        triangle: the triangle searched.
        neighbor: the triangle looked for among its neighbours.

    Returns:
        The local edge index (0, 1 or 2), or -1.
    """
    for j in range(3):
        if triangle_neighbors[triangle, j] == neighbor:
            return j
    return -1


def _indices_arg(indices: Any, where: str) -> Any:
    if not isinstance(indices, wp.array):
        try:
            arr = np.asarray(indices)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: indices must be a (num_tris, 3) int32 array") from None
        if arr.ndim != 2 or arr.shape[1:] != (3,) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{where}: indices must be a (num_tris, 3) array of triangle vertex indices, got "
                             f"shape {arr.shape} of {arr.dtype}")
        return wp.array(arr.astype(np.int32), dtype=wp.int32)
    if indices.ndim != 2 or indices.shape[1] != 3:
        raise ValueError(f"{where}: indices must be a (num_tris, 3) array of triangle vertex indices, got shape "
                         f"{tuple(indices.shape)}")
    if indices.dtype is not wp.int32:
        raise TypeError(f"{where}: indices must have dtype int32, got "
                        f"{getattr(indices.dtype, '__name__', indices.dtype)}")
    return indices


def _check_range(tris: Any, vertex_count: int | None, where: str) -> int:
    host = tris.numpy()
    if vertex_count is None:
        return int(host.max()) + 1 if host.size else 0
    if isinstance(vertex_count, bool) or not isinstance(vertex_count, (int, np.integer)) or vertex_count < 0:
        raise ValueError(f"{where}: vertex_count must be a non-negative int, got {vertex_count!r}")
    if host.size and (host.min() < 0 or host.max() >= vertex_count):
        t = int(np.argwhere((host < 0) | (host >= vertex_count))[0, 0])
        raise ValueError(f"{where}: triangle {t} has vertex indices {host[t].tolist()} outside [0, {vertex_count})")
    return int(vertex_count)


def _adjacency(tris: Any, vertex_count: int, where: str) -> tuple[Any, Any]:
    n = tris.shape[0]
    dev = tris.device
    neighbors = wp.empty((n, 3), dtype=wp.int32, device=dev)
    edges = wp.empty((n, 3), dtype=wp.int32, device=dev)
    if n == 0:
        return neighbors, edges
    # the half-edges grouped by their edge's smaller vertex (CSR), so that partners meet in short lists
    counts = wp.zeros(vertex_count + 1, dtype=wp.int32, device=dev)
    wp.launch(_adj_count, dim=(n, 3), inputs=[tris, counts], device=dev, record_tape=False)
    starts, _ = exclusive_scan(counts)
    cursor = wp.clone(starts)
    items = wp.empty(3 * n, dtype=wp.int32, device=dev)
    ends = wp.empty(3 * n, dtype=wp.int32, device=dev)
    wp.launch(_adj_fill, dim=(n, 3), inputs=[tris, cursor, items, ends], device=dev, record_tape=False)
    bad = wp.full(1, UNCLAIMED, dtype=wp.int32, device=dev)
    wp.launch(_adj_pairs, dim=(n, 3), inputs=[tris, starts, items, ends, neighbors, edges, bad], device=dev,
              record_tape=False)
    item = int(bad.numpy()[0])
    if item != UNCLAIMED:
        t, j = divmod(item, 3)
        row = tris.numpy()[t].tolist()
        a, b = row[(j + 1) % 3], row[(j + 2) % 3]
        host = tris.numpy()
        users = sorted({int(x) for x in np.argwhere(np.isin(host, [a, b]).sum(axis=1) == 2)[:, 0]})
        raise ValueError(f"{where}: the mesh is not edge-manifold: edge ({a}, {b}) belongs to more than two "
                         f"triangles ({users[:8]}{' ...' if len(users) > 8 else ''})")
    return neighbors, edges


def tri_tri_adjacency(indices: Any, vertex_count: int | None = None, return_neighbor_edge_indices: bool = True
                      ) -> Any:
    """Triangle-to-triangle adjacency of an edge-manifold triangle mesh (boundaries allowed).

    Triangles need not be consistently oriented. An edge shared by more than two triangles raises ``ValueError``.

    Args:
        indices: (num_tris, 3) int32 vertex indices.
        vertex_count: the number of vertices (checked against the indices); ``None``: one more than the largest.
        return_neighbor_edge_indices: also return, for each neighbour, the local index of the shared edge in it.

    Returns:
        ``triangle_neighbors`` ((num_tris, 3) int32: the triangle across the edge opposite local vertex ``j``, i.e.
        the edge from local vertex ``(j + 1) % 3`` to ``(j + 2) % 3``, or -1 on the boundary), and with
        ``return_neighbor_edge_indices`` also ``neighbor_edge_indices`` ((num_tris, 3) int32: that edge's local
        index in the neighbour, -1 on the boundary), as a tuple.
    """
    where = "tri_tri_adjacency"
    tris = _indices_arg(indices, where)
    count = _check_range(tris, vertex_count, where)
    neighbors, edges = _adjacency(tris, count, where)
    return (neighbors, edges) if return_neighbor_edge_indices else neighbors


# ------------------------------------------------------------------------------------------------ edge flips
@wp.func
def _area(a: wp.vec2, b: wp.vec2, c: wp.vec2) -> float:
    return 0.5 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


@wp.func
def _in_circle(a: wp.vec2, b: wp.vec2, c: wp.vec2, d: wp.vec2) -> bool:
    # d strictly inside the circle through a, b, c (counter-clockwise), beyond the rounding error of the determinant
    ax = wp.float64(a[0]) - wp.float64(d[0])
    ay = wp.float64(a[1]) - wp.float64(d[1])
    bx = wp.float64(b[0]) - wp.float64(d[0])
    by = wp.float64(b[1]) - wp.float64(d[1])
    cx = wp.float64(c[0]) - wp.float64(d[0])
    cy = wp.float64(c[1]) - wp.float64(d[1])
    a2 = ax * ax + ay * ay
    b2 = bx * bx + by * by
    c2 = cx * cx + cy * cy
    det = a2 * (bx * cy - by * cx) - b2 * (ax * cy - ay * cx) + c2 * (ax * by - ay * bx)
    scale = (a2 * (wp.abs(bx * cy) + wp.abs(by * cx)) + b2 * (wp.abs(ax * cy) + wp.abs(ay * cx))
             + c2 * (wp.abs(ax * by) + wp.abs(ay * bx)))
    return det > wp.float64(1.0e-12) * scale


@wp.func
def _flip_ok(pos: wp.array(dtype=wp.vec2), p: int, v1: int, v2: int, q: int, eps: float) -> bool:
    return _area(pos[p], pos[v1], pos[q]) > eps and _area(pos[q], pos[v2], pos[p]) > eps


@wp.kernel(enable_backward=False)
def _flip_claims(pos: wp.array(dtype=wp.vec2), ref: wp.array(dtype=wp.vec2), use_ref: int, tris: wp.array2d(dtype=wp.int32),
                 neighbors: wp.array2d(dtype=wp.int32), neighbor_edges: wp.array2d(dtype=wp.int32), eps: float,
                 ref_eps: float, candidate: wp.array2d(dtype=wp.int32), claims: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    n = neighbors[t, j]
    ok = False
    if n > t:
        p = tris[t, j]
        v1 = tris[t, (j + 1) % 3]
        v2 = tris[t, (j + 2) % 3]
        q = tris[n, neighbor_edges[t, j]]
        if p != q:
            if _in_circle(pos[p], pos[v1], pos[v2], pos[q]) and _flip_ok(pos, p, v1, v2, q, eps):
                ok = True
                if use_ref != 0:
                    ok = _flip_ok(ref, p, v1, v2, q, ref_eps)
    if ok:
        code = 3 * t + j
        candidate[t, j] = 1
        wp.atomic_min(claims, t, code)
        wp.atomic_min(claims, n, code)
    else:
        candidate[t, j] = 0


@wp.kernel(enable_backward=False)
def _flip_apply(tris: wp.array2d(dtype=wp.int32), neighbors: wp.array2d(dtype=wp.int32),
                neighbor_edges: wp.array2d(dtype=wp.int32), candidate: wp.array2d(dtype=wp.int32),
                claims: wp.array(dtype=wp.int32), flips: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    if candidate[t, j] == 0:
        return
    code = 3 * t + j
    n = neighbors[t, j]
    if claims[t] != code or claims[n] != code:
        return
    p = tris[t, j]
    v1 = tris[t, (j + 1) % 3]
    v2 = tris[t, (j + 2) % 3]
    q = tris[n, neighbor_edges[t, j]]
    # (p, v1, v2) + (q, v2, v1) -> (p, v1, q) + (q, v2, p): the quad's other diagonal, both still counter-clockwise
    tris[t, 0] = p
    tris[t, 1] = v1
    tris[t, 2] = q
    tris[n, 0] = q
    tris[n, 1] = v2
    tris[n, 2] = p
    wp.atomic_add(flips, 0, 1)


def _positions_arg(positions: Any, name: str, where: str, device: Any) -> Any:
    if isinstance(positions, wp.array):
        if positions.dtype is not wp.vec2 or positions.ndim != 1:
            raise TypeError(f"{where}: {name} must be a 1-d array of vec2 (float32), got a {positions.ndim}-d array "
                            f"of {getattr(positions.dtype, '__name__', positions.dtype)}")
        return positions if positions.device == device else positions.to(device)
    try:
        arr = np.asarray(positions, np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: {name} must be an array of vec2") from None
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{where}: {name} must have shape (vertex_count, 2), got {arr.shape}")
    return wp.array(arr, dtype=wp.vec2, device=device)


def _epsilon_arg(value: float, name: str, where: str) -> float:
    v = float(value)
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{where}: {name} must be a finite, non-negative number, got {value}")
    return v


def delaunay_edge_flip(positions: Any, indices: Any, ref_positions: Any = None, max_passes: int = 1000,
                       area_epsilon: float = 0.0, ref_area_epsilon: float = 1e-10) -> Any:
    """Flip interior edges that are not locally Delaunay until none is left or ``max_passes`` passes ran.

    ``indices`` is updated in place (a NumPy array too); ``positions`` are not changed. Each pass flips a set of
    edges no two of which share a triangle. The boundary edges are never flipped. When no flip is left, every
    interior edge is locally Delaunay, so the result is the Delaunay triangulation of the points constrained to the
    mesh's boundary (the plain Delaunay triangulation for a convex boundary and points in general position).

    Args:
        positions: (vertex_count,) vec2 vertex positions.
        indices: (num_tris, 3) int32 triangles, counter-clockwise (positive signed area); modified in place.
        ref_positions: optional (vertex_count,) vec2 reference positions: a flip is refused when it would make a
            triangle of area at most ``ref_area_epsilon`` there (for meshes deformed from a reference).
        max_passes: the most parallel passes (at least 1).
        area_epsilon: the smallest signed area a triangle made by a flip may have (finite, non-negative).
        ref_area_epsilon: the same bound for ``ref_positions``.

    Returns:
        A (1,) int32 array on the mesh's device with the number of edges flipped.

    Raises:
        ValueError: bad shapes or bounds, vertex indices out of range, or an edge with more than two triangles.
        TypeError: positions that are not vec2 or indices that are not int32.
    """
    where = "delaunay_edge_flip"
    host_out = indices if isinstance(indices, np.ndarray) else None
    tris = _indices_arg(indices, where)
    dev = tris.device
    pos = _positions_arg(positions, "positions", where, dev)
    ref = _positions_arg(ref_positions, "ref_positions", where, dev) if ref_positions is not None else pos
    if ref.shape[0] != pos.shape[0]:
        raise ValueError(f"{where}: ref_positions has {ref.shape[0]} vertices, positions {pos.shape[0]}")
    if isinstance(max_passes, bool) or not isinstance(max_passes, (int, np.integer)) or max_passes < 1:
        raise ValueError(f"{where}: max_passes must be at least 1, got {max_passes!r}")
    eps = _epsilon_arg(area_epsilon, "area_epsilon", where)
    ref_eps = _epsilon_arg(ref_area_epsilon, "ref_area_epsilon", where)
    count = _check_range(tris, pos.shape[0], where)
    n = tris.shape[0]
    flips = wp.zeros(1, dtype=wp.int32, device=dev)
    if n == 0:
        return flips
    candidate = wp.empty((n, 3), dtype=wp.int32, device=dev)
    claims = wp.empty(n, dtype=wp.int32, device=dev)
    done = 0
    for _ in range(int(max_passes)):
        neighbors, edges = _adjacency(tris, count, where)
        claims.fill_(UNCLAIMED)
        wp.launch(_flip_claims, dim=(n, 3), inputs=[pos, ref, int(ref_positions is not None), tris, neighbors, edges,
                                                    eps, ref_eps, candidate, claims], device=dev, record_tape=False)
        wp.launch(_flip_apply, dim=(n, 3), inputs=[tris, neighbors, edges, candidate, claims, flips], device=dev,
                  record_tape=False)
        total = int(flips.numpy()[0])
        if total == done:
            break
        done = total
    if host_out is not None:
        host_out[...] = tris.numpy()
    return flips
