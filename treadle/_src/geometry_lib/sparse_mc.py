"""Sparse marching cubes: a Lipschitz octree finds the cells near the surface, marching cubes runs on those only.

``lipschitz_octree`` refines a cube top-down: a cell survives when the field at its centre is within
``lipschitz_bound`` times its half-diagonal of the threshold, the only cells through which a field with that
Lipschitz bound can reach the level set. The field is a batched callable (points in, values out), evaluated once
per level on all surviving cells' centres.

``sparse_marching_cubes_from_cells`` runs marching cubes on a list of cells with their corner values. Vertices are
shared between neighbouring cells by hashing each crossed grid edge's code (its lower node's subscript relative to
the cells' minimum, packed with the edge's axis into an int64, 4 x 4 x 4 blocks of nodes in the low bits so that
neighbouring edges share cache lines of the table; only crossed edges are listed, after a prefix sum of
their count per cell); a vertex is numbered, and computed from the corner values of, the first (cell, edge) that
holds its edge, so the output is the same for every thread schedule and its
gradient reaches exactly one of the agreeing corner values. The case table, the interpolation and the arithmetic of
the positions are those of the dense ``IsoSurfaceMarchingCubes``, so the two agree on the same cells bit for bit.

``sparse_marching_cubes`` chains both on a grid given like the dense extractor's: the octree over the grid's cells
(a power-of-two cube of them; leaves past the grid are culled), the field evaluated once at each distinct corner of
the surviving leaves, and the extraction on those leaves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import treadle as wp

from ..geometry.marching_cubes import CORNERS, EDGES, case_tables
from ..runtime.recording import suspend_tapes
from ._common import NODE_BITS, exclusive_scan, grid_bounds, grid_dims, node_key, unique_ids, vec3_arg
from .iso_surface import API_CORNERS, API_TO_CORNER


# ------------------------------------------------------------------------------------------------ octree
@wp.kernel(enable_backward=False)
def _oct_centres(nodes: wp.array(dtype=wp.vec3i), width: float, origin: wp.vec3, spacing: wp.vec3,
                 points: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    n = nodes[i]
    c = wp.vec3(float(n[0]), float(n[1]), float(n[2])) + wp.vec3(0.5 * width, 0.5 * width, 0.5 * width)
    points[i] = origin + wp.cw_mul(c, spacing)


@wp.kernel(enable_backward=False)
def _oct_keep(nodes: wp.array(dtype=wp.vec3i), values: wp.array(dtype=float), threshold: float, reach: float,
              limit: wp.vec3i, keep: wp.array(dtype=wp.int32)):
    i = wp.tid()
    k = 0
    if wp.abs(values[i] - threshold) <= reach:
        n = nodes[i]
        if n[0] < limit[0] and n[1] < limit[1] and n[2] < limit[2]:
            k = 1
    keep[i] = k


@wp.kernel(enable_backward=False)
def _oct_split(nodes: wp.array(dtype=wp.vec3i), keep: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
               half: int, children: wp.array(dtype=wp.vec3i)):
    i = wp.tid()
    if keep[i] != 0:
        n = nodes[i]
        base = 8 * offsets[i]
        for c in range(8):
            children[base + c] = n + wp.vec3i((c & 1) * half, ((c >> 1) & 1) * half, ((c >> 2) & 1) * half)


@wp.kernel(enable_backward=False)
def _oct_compact(nodes: wp.array(dtype=wp.vec3i), keep: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
                 out: wp.array(dtype=wp.vec3i)):
    i = wp.tid()
    if keep[i] != 0:
        out[offsets[i]] = nodes[i]


def _evaluate(field: Callable[..., Any], points: Any, where: str) -> Any:
    """``field(points)`` as a float32 array of one value per point (a clear error for anything else)."""
    values = field(points)
    n = points.shape[0]
    if not isinstance(values, wp.array):
        try:
            values = wp.array(np.asarray(values, np.float32).reshape(-1), dtype=wp.float32, device=points.device)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: field(points) must return an array of float32 values, got "
                            f"{type(values).__name__}") from None
    if values.dtype is not wp.float32 or values.ndim != 1 or values.shape[0] != n:
        raise ValueError(f"{where}: field(points) must return a float32 array of shape ({n},) for {n} points, got "
                         f"shape {tuple(values.shape)} of {getattr(values.dtype, '__name__', values.dtype)}")
    return values


def _field_callable(field: Any, where: str) -> Callable[..., Any]:
    if isinstance(field, (wp.Function, wp.Kernel)) or not callable(field):
        what = "a single-point @wp.func" if isinstance(field, wp.Function) else type(field).__name__
        raise TypeError(f"{where}: field must be a batched callable, points (array of vec3) -> values (array of "
                        f"float32), got {what}; wrap a point function in a kernel launched over the points")
    return field


def _refine(field: Callable[..., Any], levels: int, origin: np.ndarray, spacing: np.ndarray, threshold: float,
            bound: float, limit: tuple[int, int, int], device: Any, where: str) -> tuple[Any, int, int]:
    """The leaves of an octree of ``2**levels`` cells per side that pass the Lipschitz test.

    Returns the leaves (at the last level, only those inside ``limit``), the number of field evaluations and the
    number of passing leaves culled by ``limit``.
    """
    nodes = wp.zeros(1, dtype=wp.vec3i, device=device)
    width = 1 << levels
    evaluations = culled = 0
    big = (2**31 - 1,) * 3
    with suspend_tapes():  # cell selection is discrete: nothing of it belongs on a tape
        while True:
            n = nodes.shape[0]
            points = wp.empty(n, dtype=wp.vec3, device=device)
            wp.launch(_oct_centres, dim=n, inputs=[nodes, float(width), wp.vec3(*origin.tolist()),
                                                   wp.vec3(*spacing.tolist()), points], device=device)
            values = _evaluate(field, points, where)
            evaluations += n
            reach = bound * 0.5 * width * float(np.linalg.norm(spacing.astype(np.float64)))
            keep = wp.empty(n, dtype=wp.int32, device=device)
            wp.launch(_oct_keep, dim=n, inputs=[nodes, values, float(threshold), float(reach),
                                                wp.vec3i(*(big if width > 1 else limit)), keep], device=device)
            offsets, kept = exclusive_scan(keep)
            if width == 1:
                out = wp.empty(kept, dtype=wp.vec3i, device=device)
                if kept:
                    wp.launch(_oct_compact, dim=n, inputs=[nodes, keep, offsets, out], device=device)
                if limit != big:
                    near = wp.empty(n, dtype=wp.int32, device=device)
                    wp.launch(_oct_keep, dim=n, inputs=[nodes, values, float(threshold), float(reach),
                                                        wp.vec3i(*big), near], device=device)
                    culled = int(near.numpy().sum()) - kept
                return out, evaluations, culled
            if kept == 0:
                return wp.empty(0, dtype=wp.vec3i, device=device), evaluations, 0
            width //= 2
            children = wp.empty(8 * kept, dtype=wp.vec3i, device=device)
            wp.launch(_oct_split, dim=n, inputs=[nodes, keep, offsets, width, children], device=device)
            nodes = children


def lipschitz_octree(field: Callable[..., Any], origin: Any, root_width: float, max_depth: int,
                     threshold: float = 0.0, lipschitz_bound: float = 1.0, device: Any = None) -> tuple[Any, float]:
    """The finest cells of an octree that may meet the ``threshold`` level set of a Lipschitz field.

    Starting from the cube ``[origin, origin + root_width]``, each cell of width ``h`` centred at ``c`` is kept
    (and split, until ``max_depth``) when ``|field(c) - threshold| <= lipschitz_bound * sqrt(3) / 2 * h``; a field
    whose values change at most ``lipschitz_bound`` per unit length cannot reach the threshold inside any other
    cell. Not differentiable: selecting cells is a discrete search, and a recording ``wp.Tape`` ignores it.

    Args:
        field: batched callable, ``field(points: array of vec3) -> array of float32`` (one value per point).
        origin: the minimum corner of the root cube.
        root_width: the side of the root cube.
        max_depth: the number of refinements; leaves have width ``root_width / 2**max_depth``.
        threshold: the iso-value.
        lipschitz_bound: an upper bound on the field's Lipschitz constant (1 for a signed distance).
        device: where to run (default: the default device).

    Returns:
        ``(cells, cell_width)``: the leaves' integer minimum corners (array of vec3i; leaf ``(i, j, k)`` covers
        ``origin + cell_width * [(i, j, k), (i + 1, j + 1, k + 1)]``) and their width. ``cells`` is empty when no
        leaf can reach the level set.
    """
    where = "lipschitz_octree"
    field = _field_callable(field, where)
    org = vec3_arg(origin, f"{where}: origin", (0.0, 0.0, 0.0))
    if not math.isfinite(float(root_width)) or float(root_width) <= 0.0:
        raise ValueError(f"{where}: root_width must be positive, got {root_width}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) or not 0 <= int(max_depth) <= 30:
        raise ValueError(f"{where}: max_depth must be an int in [0, 30], got {max_depth!r}")
    if not float(lipschitz_bound) >= 0.0:
        raise ValueError(f"{where}: lipschitz_bound must be non-negative, got {lipschitz_bound}")
    cell_width = float(root_width) / (1 << int(max_depth))
    dev = wp.get_device(device)
    spacing = np.full(3, cell_width, np.float32)
    big = (2**31 - 1,) * 3
    cells, _, _ = _refine(field, int(max_depth), org, spacing, float(threshold), float(lipschitz_bound), big, dev,
                          where)
    return cells, cell_width


# ------------------------------------------------------------------------------------------------ extraction
@wp.kernel(enable_backward=False)
def _smc_cells(cells: wp.array(dtype=wp.vec3i), values: wp.array2d(dtype=float), threshold: float,
               corner_slot: wp.array(dtype=wp.int32), tri_counts: wp.array(dtype=wp.int32),
               edge_geom: wp.array2d(dtype=wp.int32), cases: wp.array(dtype=wp.int32),
               tri_per_cell: wp.array(dtype=wp.int32), edges_per_cell: wp.array(dtype=wp.int32)):
    n = wp.tid()
    case = 0
    for c in range(8):
        if values[n, corner_slot[c]] < threshold:
            case = case | (1 << c)
    cases[n] = case
    tri_per_cell[n] = tri_counts[case]
    crossed = 0
    for e in range(12):
        if ((case >> edge_geom[e, 4]) & 1) != ((case >> edge_geom[e, 5]) & 1):
            crossed += 1
    edges_per_cell[n] = crossed


@wp.kernel(enable_backward=False)
def _smc_keys(cells: wp.array(dtype=wp.vec3i), cases: wp.array(dtype=wp.int32), edge_offsets: wp.array(dtype=wp.int32),
              edge_geom: wp.array2d(dtype=wp.int32), cmin: wp.vec3i, keys: wp.array(dtype=wp.int64),
              items: wp.array(dtype=wp.int32)):
    # one entry per crossed (cell, edge), in cell order then edge order: the grid edge's code and 12 cell + edge
    n = wp.tid()
    case = cases[n]
    cell = cells[n] - cmin
    k = edge_offsets[n]
    for e in range(12):
        if ((case >> edge_geom[e, 4]) & 1) != ((case >> edge_geom[e, 5]) & 1):
            keys[k] = node_key(cell[0] + edge_geom[e, 0], cell[1] + edge_geom[e, 1], cell[2] + edge_geom[e, 2],
                               edge_geom[e, 3])
            items[k] = 12 * n + e
            k += 1


@wp.kernel
def _smc_verts(cells: wp.array(dtype=wp.vec3i), values: wp.array2d(dtype=float), threshold: float,
               corner_slot: wp.array(dtype=wp.int32), edge_geom: wp.array2d(dtype=wp.int32),
               items: wp.array(dtype=wp.int32), first_item: wp.array(dtype=wp.int32), origin: wp.vec3,
               spacing: wp.vec3, verts: wp.array(dtype=wp.vec3)):
    v = wp.tid()
    item = items[first_item[v]]
    n = item // 12
    e = item - 12 * n
    axis = edge_geom[e, 3]
    f0 = values[n, corner_slot[edge_geom[e, 4]]]
    f1 = values[n, corner_slot[edge_geom[e, 5]]]
    t = (threshold - f0) / (f1 - f0)
    c = cells[n]
    p = wp.vec3(float(c[0] + edge_geom[e, 0]), float(c[1] + edge_geom[e, 1]), float(c[2] + edge_geom[e, 2]))
    p[axis] = p[axis] + t
    verts[v] = origin + wp.vec3(p[0] * spacing[0], p[1] * spacing[1], p[2] * spacing[2])


@wp.kernel(enable_backward=False)
def _smc_tris(cases: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
              edge_offsets: wp.array(dtype=wp.int32), tri_edges: wp.array2d(dtype=wp.int32),
              tri_counts: wp.array(dtype=wp.int32), edge_geom: wp.array2d(dtype=wp.int32),
              ids: wp.array(dtype=wp.int32), indices: wp.array(dtype=wp.int32)):
    n = wp.tid()
    case = cases[n]
    first = offsets[n]
    # the vertex of crossed edge e is entry edge_offsets[n] + (the cell's crossed edges before e)
    crossed = 0
    for e in range(12):
        if ((case >> edge_geom[e, 4]) & 1) != ((case >> edge_geom[e, 5]) & 1):
            crossed = crossed | (1 << e)
    base = edge_offsets[n]
    for t in range(tri_counts[case]):
        for c in range(3):
            e = tri_edges[case, 3 * t + c]
            before = 0
            for b in range(e):
                before += (crossed >> b) & 1
            indices[3 * (first + t) + c] = ids[base + before]


def _edge_geometry() -> np.ndarray:
    """Per cell edge: its lower corner's offset (3), its axis, its two corners (Treadle numbering)."""
    return np.array([(*CORNERS[a], e // 4, a, b) for e, (a, b) in enumerate(EDGES)], np.int32)


def _corner_slots() -> np.ndarray:
    """Per Treadle corner index, its column in the documented corner order."""
    slots = np.empty(8, np.int32)
    for r, c in enumerate(API_TO_CORNER):
        slots[c] = r
    return slots


def extract_cells(cells: Any, values: Any, origin: np.ndarray, spacing: np.ndarray, threshold: float,
                  device: Any) -> tuple[Any, Any]:
    """Marching cubes on ``cells`` (vec3i) with corner ``values`` ((N, 8) float32, documented corner order)."""
    n = cells.shape[0]
    verts_grad = bool(values.requires_grad)
    if n == 0:
        return (wp.zeros(0, dtype=wp.vec3, device=device, requires_grad=verts_grad),
                wp.empty(0, dtype=wp.int32, device=device))
    sub = cells.numpy()
    cmin = sub.min(axis=0).astype(np.int64)
    extent = sub.max(axis=0).astype(np.int64) - cmin + 2  # corner subscripts span [cmin, cmax + 1]
    if extent.max() > 2**NODE_BITS:
        raise ValueError(f"sparse_marching_cubes_from_cells: the cells' subscripts span {tuple(extent - 1)} cells, "
                         f"more than the {2**NODE_BITS - 1} per axis that a 64-bit grid-edge code packs")
    tri_edges_np, tri_counts_np = case_tables()
    tri_edges = wp.array(tri_edges_np, dtype=wp.int32, device=device)
    tri_counts = wp.array(tri_counts_np, dtype=wp.int32, device=device)
    edge_geom = wp.array(_edge_geometry(), dtype=wp.int32, device=device)
    corner_slot = wp.array(_corner_slots(), dtype=wp.int32, device=device)
    cases = wp.empty(n, dtype=wp.int32, device=device)
    tri_per_cell = wp.empty(n, dtype=wp.int32, device=device)
    edges_per_cell = wp.empty(n, dtype=wp.int32, device=device)
    wp.launch(_smc_cells, dim=n, inputs=[cells, values, float(threshold), corner_slot, tri_counts, edge_geom, cases,
                                         tri_per_cell, edges_per_cell], device=device, record_tape=False)
    # hash only the crossed edges: far fewer than 12 per cell
    edge_offsets, num_crossed = exclusive_scan(edges_per_cell)
    keys = wp.empty(num_crossed, dtype=wp.int64, device=device)
    items = wp.empty(num_crossed, dtype=wp.int32, device=device)
    if num_crossed:
        wp.launch(_smc_keys, dim=n, inputs=[cells, cases, edge_offsets, edge_geom, wp.vec3i(*cmin.tolist()),
                                            keys, items], device=device,
                  record_tape=False)
    ids, first_item, num_verts = unique_ids(keys)
    verts = wp.zeros(num_verts, dtype=wp.vec3, device=device, requires_grad=verts_grad)
    if num_verts:
        wp.launch(_smc_verts, dim=num_verts, inputs=[cells, values, float(threshold), corner_slot, edge_geom, items,
                                                     first_item, wp.vec3(*origin.tolist()),
                                                     wp.vec3(*spacing.tolist()), verts], device=device)
    offsets, num_tris = exclusive_scan(tri_per_cell)
    indices = wp.empty(3 * num_tris, dtype=wp.int32, device=device)
    if num_tris:
        wp.launch(_smc_tris, dim=n, inputs=[cases, offsets, edge_offsets, tri_edges, tri_counts, edge_geom, ids,
                                            indices], device=device, record_tape=False)
    return verts, indices


def _cells_arg(cells: Any, device: Any, where: str) -> Any:
    if isinstance(cells, wp.array):
        if cells.dtype is wp.vec3i and cells.ndim == 1:
            return cells if cells.device == device else cells.to(device)
        if cells.dtype is wp.int32 and cells.ndim == 2 and cells.shape[1] == 3:
            return wp.array(cells.numpy(), dtype=wp.vec3i, device=device)
        raise TypeError(f"{where}: cells must be an array of vec3i or an (N, 3) int32 array, got "
                        f"shape {tuple(cells.shape)} of {getattr(cells.dtype, '__name__', cells.dtype)}")
    try:
        sub = np.asarray(cells)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: cells must be an (N, 3) array of integer subscripts") from None
    if sub.size == 0:
        sub = sub.reshape(0, 3)
    if sub.ndim != 2 or sub.shape[1] != 3 or not (np.issubdtype(sub.dtype, np.integer) or sub.dtype == bool):
        raise TypeError(f"{where}: cells must be an (N, 3) array of integer subscripts, got shape {sub.shape} of "
                        f"{sub.dtype}")
    if sub.size and (sub.min() < -(2**31) or sub.max() >= 2**31 - 1):
        raise ValueError(f"{where}: cell subscripts must fit in int32")
    return wp.array(sub.astype(np.int32), dtype=wp.vec3i, device=device)


def _values_arg(values: Any, n: int, device: Any, where: str) -> Any:
    if isinstance(values, wp.array):
        if values.dtype is not wp.float32:
            raise TypeError(f"{where}: corner_values must be float32, got "
                            f"{getattr(values.dtype, '__name__', values.dtype)}")
        arr = values if values.device == device else values.to(device)
    else:
        try:
            arr = wp.array(np.asarray(values, np.float32), dtype=wp.float32, device=device)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: corner_values must be an (N, 8) array of floats") from None
    if n == 0 and arr.size == 0:
        return wp.zeros((0, 8), dtype=wp.float32, device=device, requires_grad=bool(arr.requires_grad))
    if arr.ndim != 2 or tuple(arr.shape) != (n, 8):
        raise ValueError(f"{where}: corner_values must have shape ({n}, 8) for {n} cells, got {tuple(arr.shape)}")
    return arr


def sparse_marching_cubes_from_cells(cells: Any, corner_values: Any, origin: Any = (0.0, 0.0, 0.0),
                                     cell_width: float = 1.0, threshold: float = 0.0, device: Any = None
                                     ) -> tuple[Any, Any]:
    """Marching cubes on a given list of cells with the field's values at their corners.

    Neighbouring cells share the vertices of their common edges, so the mesh is watertight wherever the surface
    stays inside the cells. Cells should be distinct (a repeated cell repeats its triangles). Gradients flow from
    the vertices to ``corner_values`` under a ``wp.Tape``, through one (the first) of the entries that agree on a
    shared corner.

    Args:
        cells: the cells' integer minimum corners: an array of vec3i, an (N, 3) int32 array, or anything NumPy can
            turn into (N, 3) integers. Cell ``(i, j, k)`` covers ``origin + cell_width * [(i, j, k),
            (i + 1, j + 1, k + 1)]``; subscripts may be negative and need not be contiguous.
        corner_values: (N, 8) float32 values at each cell's corners, in the order of
            ``IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS``; values of a shared corner should agree.
        origin: the position of subscript (0, 0, 0).
        cell_width: the side of a cell.
        threshold: the iso-value.
        device: where to run (default: that of ``corner_values`` or ``cells`` if an array, else the default).

    Returns:
        ``(verts, indices)``: vec3 positions and a flat int32 array of three vertex indices per triangle.

    Raises:
        ValueError: ``cell_width`` is not positive, the shapes disagree, or the subscripts span too many cells to
            pack an edge into 64 bits.
        TypeError: ``cells`` or ``corner_values`` have the wrong type.
    """
    where = "sparse_marching_cubes_from_cells"
    dev = wp.get_device(device) if device is not None else (
        corner_values.device if isinstance(corner_values, wp.array) else
        cells.device if isinstance(cells, wp.array) else wp.get_device())
    if not math.isfinite(float(cell_width)) or float(cell_width) <= 0.0:
        raise ValueError(f"{where}: cell_width must be positive, got {cell_width}")
    org = vec3_arg(origin, f"{where}: origin", (0.0, 0.0, 0.0))
    cell_arr = _cells_arg(cells, dev, where)
    vals = _values_arg(corner_values, cell_arr.shape[0], dev, where)
    spacing = np.full(3, float(cell_width), np.float32)
    return extract_cells(cell_arr, vals, org, spacing, float(threshold), dev)


@wp.kernel(enable_backward=False)
def _corner_keys(cells: wp.array(dtype=wp.vec3i), offsets: wp.array(dtype=wp.vec3i), keys: wp.array(dtype=wp.int64)):
    n, r = wp.tid()
    p = cells[n] + offsets[r]
    keys[8 * n + r] = node_key(p[0], p[1], p[2], 0)


@wp.kernel(enable_backward=False)
def _corner_points(cells: wp.array(dtype=wp.vec3i), offsets: wp.array(dtype=wp.vec3i),
                   first_item: wp.array(dtype=wp.int32), lower: wp.vec3, spacing: wp.vec3,
                   points: wp.array(dtype=wp.vec3)):
    u = wp.tid()
    item = first_item[u]
    n = item // 8
    p = cells[n] + offsets[item - 8 * n]
    points[u] = lower + wp.vec3(float(p[0]) * spacing[0], float(p[1]) * spacing[1], float(p[2]) * spacing[2])


@wp.kernel
def _gather_corners(values: wp.array(dtype=float), ids: wp.array(dtype=wp.int32), out: wp.array2d(dtype=float)):
    n, r = wp.tid()
    out[n, r] = values[ids[8 * n + r]]


def sparse_marching_cubes(field: Callable[..., Any], nx: int, ny: int, nz: int, *, lower: Any = None,
                          upper: Any = None, threshold: float = 0.0, lipschitz_bound: float = 1.0,
                          device: Any = None, return_stats: bool = False) -> tuple[Any, ...]:
    """The iso-surface of an implicit function on a grid, evaluated only near the surface.

    The grid is given as for ``IsoSurfaceMarchingCubes.extract`` (``nx, ny, nz`` nodes over ``[lower, upper]``,
    possibly anisotropic) and the result is the same surface, but the field is evaluated only at the centres of the
    octree cells that :func:`lipschitz_octree`'s test keeps and at the corners of the surviving grid cells, a cost
    that grows with the surface's area rather than the grid's volume. Parts of the level set outside ``[lower,
    upper]`` are not extracted. Gradients flow from the vertices to the values ``field`` returns for the corners
    (allocate them with ``requires_grad=True``) under a ``wp.Tape``; the cell selection is not recorded.

    Args:
        field: batched callable, ``field(points: array of vec3) -> array of float32`` with one value per point;
            a signed distance or any field whose values change at most ``lipschitz_bound`` per unit length.
        nx: grid nodes along x.
        ny: grid nodes along y.
        nz: grid nodes along z.
        lower: position of node (0, 0, 0) (default: the origin).
        upper: position of node (nx - 1, ny - 1, nz - 1) (default: node indices).
        threshold: the iso-value.
        lipschitz_bound: an upper bound on the field's Lipschitz constant (larger: a wider band of cells).
        device: where to run (default: the default device).
        return_stats: also return a dict: ``leaf_cells`` (surviving grid cells), ``unique_corners`` (their distinct
            corners), ``field_evaluations`` (points given to ``field``), ``resolution`` (cells per side of the
            octree's cube), ``requested_ncells`` (the grid's cells per axis), ``culled_cells`` (surviving leaves
            outside the grid).

    Returns:
        ``(verts, indices)``, or ``(verts, indices, stats)`` with ``return_stats``.

    Raises:
        ValueError: a grid axis has fewer than 2 nodes or ``lipschitz_bound`` is negative.
        TypeError: ``field`` is not a batched callable (a bare ``@wp.func`` must be wrapped in a kernel).
    """
    where = "sparse_marching_cubes"
    field = _field_callable(field, where)
    nx, ny, nz = grid_dims(nx, ny, nz, where)
    if not float(lipschitz_bound) >= 0.0:
        raise ValueError(f"{where}: lipschitz_bound must be non-negative, got {lipschitz_bound}")
    dev = wp.get_device(device)
    lo, spacing = grid_bounds(nx, ny, nz, lower, upper, where)
    ncells = (nx - 1, ny - 1, nz - 1)
    resolution = 1 << max(0, max(ncells) - 1).bit_length()
    levels = resolution.bit_length() - 1
    leaves, evaluations, culled = _refine(field, levels, lo, spacing, float(threshold), float(lipschitz_bound),
                                          ncells, dev, where)
    n = leaves.shape[0]
    unique = 0
    if n:
        offsets = wp.array(np.asarray(API_CORNERS, np.int32), dtype=wp.vec3i, device=dev)
        keys = wp.empty(8 * n, dtype=wp.int64, device=dev)
        wp.launch(_corner_keys, dim=(n, 8), inputs=[leaves, offsets, keys], device=dev,
                  record_tape=False)
        ids, first_item, unique = unique_ids(keys)
        points = wp.empty(unique, dtype=wp.vec3, device=dev)
        wp.launch(_corner_points, dim=unique, inputs=[leaves, offsets, first_item, wp.vec3(*lo.tolist()),
                                                      wp.vec3(*spacing.tolist()), points], device=dev,
                  record_tape=False)
        values = _evaluate(field, points, where)
        evaluations += unique
        corner_values = wp.zeros((n, 8), dtype=wp.float32, device=dev, requires_grad=values.requires_grad)
        wp.launch(_gather_corners, dim=(n, 8), inputs=[values, ids, corner_values], device=dev)
    else:
        corner_values = wp.zeros((0, 8), dtype=wp.float32, device=dev)
    verts, indices = extract_cells(leaves, corner_values, lo, spacing, float(threshold), dev)
    if not return_stats:
        return verts, indices
    stats = {"leaf_cells": n, "unique_corners": unique, "field_evaluations": evaluations, "resolution": resolution,
             "requested_ncells": ncells, "culled_cells": culled}
    return verts, indices, stats
