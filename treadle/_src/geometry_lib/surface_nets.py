"""``IsoSurfaceNets``: surface nets with one vertex per sheet of the surface in each cell.

A cell's sheets are the connected pieces of its marching-cubes case (Treadle's case table: ambiguous faces keep
their diagonal corners below the threshold apart, consistently for the two cells sharing the face), so a cell the
surface passes through twice gets two vertices and the mesh stays manifold. A vertex sits at the mean of the points
where its sheet crosses the cell's edges (linear interpolation along each edge, differentiable). Every crossed grid
edge with four cells around it inside the grid gives one quad joining the four cells' vertices of the sheet through
it (wound counter-clockwise seen from the side of larger values), split into two triangles along its first diagonal
for the triangle topology. Edges on the grid's boundary have fewer cells and give no face, so a sheet whose crossed
edges all lie there has no vertex: every vertex belongs to a face.

Kernels: ``_sn_cases`` (per cell: its case), ``_sn_meta`` (per cell: number of vertices, their numbering among the
cell's sheets, and the quads of the three grid edges leaving the cell's first corner, from a per-case table away
from the grid's boundary), ``_sn_owners`` (per vertex: its cell and sheet),
``_sn_verts`` (positions; recorded on the tape) and ``_sn_faces`` (the quads' vertex indices).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

import treadle as wp

from ..geometry.marching_cubes import CORNERS, EDGES, case_tables
from ._common import exclusive_scan, field_arg, grid_bounds
from .iso_surface import IsoSurfaceBase

#: Sheets per cell at most (the case table never has more than four pieces).
MAX_SHEETS = 4
TOPOLOGIES = ("triangle", "quad")


def _root(parent: list[int], e: int) -> int:
    while parent[e] != e:
        e = parent[e]
    return e


@lru_cache(maxsize=1)
def sheet_tables() -> tuple[np.ndarray, np.ndarray]:
    """``(sheet_count[256], edge_sheet[256, 12])``: the pieces of each case and the piece of each crossed edge."""
    tri_edges, tri_counts = case_tables()
    counts = np.zeros(256, np.int32)
    edge_sheet = np.full((256, 12), -1, np.int32)
    for case in range(256):
        parent = list(range(12))
        tris = tri_edges[case, : 3 * tri_counts[case]].reshape(-1, 3)
        for a, b, c in tris:
            parent[_root(parent, b)] = _root(parent, a)
            parent[_root(parent, c)] = _root(parent, a)
        roots: list[int] = []
        for e in sorted({int(x) for x in tris.reshape(-1)}):
            r = _root(parent, e)
            if r not in roots:
                roots.append(r)
            edge_sheet[case, e] = roots.index(r)
        counts[case] = len(roots)
    if counts.max() > MAX_SHEETS:  # pragma: no cover - a property of the case table
        raise AssertionError("a case with more than four sheets")
    return counts, edge_sheet


def _corner_edge_table() -> np.ndarray:
    """Per cell corner and axis, the cell edge leaving the corner along the axis (-1 when it leaves the cell)."""
    out = np.full((8, 3), -1, np.int32)
    for e, (a, _) in enumerate(EDGES):
        out[a, e // 4] = e
    return out


def _quad_cells() -> np.ndarray:
    """Per axis and sign of the edge (0: its lower node is above the threshold), the four cells of its quad.

    Offsets (du, dv) of the cells from the edge's node minus one along the two other axes (u < v), in the order
    that makes the quad counter-clockwise seen from the side of larger values and starts where the reference's
    output does, so that both split quads along the same diagonal.
    """
    outward = {0: ((1, 0), (0, 0), (0, 1), (1, 1)), 1: ((0, 1), (0, 0), (1, 0), (1, 1)),
               2: ((1, 1), (1, 0), (0, 0), (0, 1))}
    out = np.zeros((3, 2, 4, 2), np.int32)
    for axis, cells in outward.items():
        out[axis, 0] = cells
        out[axis, 1] = cells[::-1]
    return out


@wp.func
def _edge_is_interior(i: int, j: int, k: int, e: int, dims: wp.vec3i, edge_geom: wp.array2d(dtype=wp.int32)) -> bool:
    # the grid edge of cell edge e has four cells around it when it is off the grid's boundary on both other axes
    node = wp.vec3i(i + edge_geom[e, 0], j + edge_geom[e, 1], k + edge_geom[e, 2])
    axis = edge_geom[e, 3]
    ok = True
    for a in range(3):
        if a != axis:
            if node[a] < 1 or node[a] > dims[a] - 2:
                ok = False
    return ok


@wp.func
def _has_quad(dims: wp.vec3i, node: wp.vec3i, axis: int) -> bool:
    # the grid edge from node along axis has four cells around it: off the boundary on both other axes
    ok = True
    for a in range(3):
        if a != axis:
            if node[a] < 1 or node[a] > dims[a] - 2:
                ok = False
    return ok


# meta, one int per cell: bits 0-2 its number of vertices, 4-5 the quads of the grid edges leaving its first corner
# (a node with quads is always some cell's first corner, so cells cover all of them), 8-11 which sheets are used (have
# an interior edge), from bit 12 three bits per sheet: its vertex's number within the cell.


def interior_meta() -> np.ndarray:
    """Per case, the meta of a cell away from the grid's boundary: every sheet used, numbered in order."""
    sheet_count, _ = sheet_tables()
    out = np.zeros(256, np.int32)
    for case in range(1, 255):
        n = int(sheet_count[case])
        quads = sum(1 for axis in range(3) if (case & 1) != (case >> (1 << axis) & 1))
        codes = sum(s << (12 + 3 * s) for s in range(n))
        out[case] = n | (quads << 4) | (((1 << n) - 1) << 8) | codes
    return out


@wp.kernel(enable_backward=False)
def _sn_cases(field: wp.array3d(dtype=float), threshold: float, cases: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    case = 0
    for c in range(8):
        if field[i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1)] < threshold:
            case = case | (1 << c)
    cases[i, j, k] = case


@wp.kernel(enable_backward=False)
def _sn_meta(cases: wp.array3d(dtype=wp.int32), interior: wp.array(dtype=wp.int32),
             edge_sheet: wp.array2d(dtype=wp.int32), edge_geom: wp.array2d(dtype=wp.int32),
             meta: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    case = cases[i, j, k]
    nx = cases.shape[0]
    ny = cases.shape[1]
    nz = cases.shape[2]
    if i >= 1 and j >= 1 and k >= 1 and i < nx - 1 and j < ny - 1 and k < nz - 1:
        meta[i, j, k] = interior[case]  # all twelve edges have four cells around them (0 for cells not crossed)
    elif case == 0 or case == 255:
        meta[i, j, k] = 0
    else:
        dims = wp.vec3i(nx + 1, ny + 1, nz + 1)
        used = 0
        for e in range(12):
            s = edge_sheet[case, e]
            if s >= 0:
                if _edge_is_interior(i, j, k, e, dims, edge_geom):
                    used = used | (1 << s)
        m = used << 8
        n = 0
        for s in range(4):
            if (used >> s) & 1 != 0:
                m = m | (n << (12 + 3 * s))
                n += 1
        quads = 0
        for axis in range(3):
            if (case & 1) != ((case >> (1 << axis)) & 1) and _has_quad(dims, wp.vec3i(i, j, k), axis):
                quads += 1
        meta[i, j, k] = m | n | (quads << 4)


@wp.kernel(enable_backward=False)
def _sn_owners(meta: wp.array3d(dtype=wp.int32), offsets: wp.array3d(dtype=wp.int32),
               owner_cell: wp.array(dtype=wp.vec3i), owner_sheet: wp.array(dtype=wp.int32)):
    i, j, k = wp.tid()
    m = meta[i, j, k]
    if m & 7 != 0:
        first = offsets[i, j, k]
        for s in range(4):
            if (m >> (8 + s)) & 1 != 0:
                code = (m >> (12 + 3 * s)) & 7
                owner_cell[first + code] = wp.vec3i(i, j, k)
                owner_sheet[first + code] = s


@wp.kernel
def _sn_verts(field: wp.array3d(dtype=float), threshold: float, lower: wp.vec3, spacing: wp.vec3,
              cases: wp.array3d(dtype=wp.int32), edge_sheet: wp.array2d(dtype=wp.int32),
              edge_geom: wp.array2d(dtype=wp.int32), owner_cell: wp.array(dtype=wp.vec3i),
              owner_sheet: wp.array(dtype=wp.int32), verts: wp.array(dtype=wp.vec3)):
    v = wp.tid()
    cell = owner_cell[v]
    sheet = owner_sheet[v]
    case = cases[cell[0], cell[1], cell[2]]
    total = wp.vec3(0.0, 0.0, 0.0)
    n = 0.0
    for e in range(12):
        if edge_sheet[case, e] == sheet:
            a = cell + wp.vec3i(edge_geom[e, 0], edge_geom[e, 1], edge_geom[e, 2])
            axis = edge_geom[e, 3]
            b = a
            b[axis] = b[axis] + 1
            f0 = field[a[0], a[1], a[2]]
            f1 = field[b[0], b[1], b[2]]
            t = (threshold - f0) / (f1 - f0)
            p = wp.vec3(float(a[0]), float(a[1]), float(a[2]))
            p[axis] = p[axis] + t
            total = total + p
            n = n + 1.0
    m = total / n
    verts[v] = lower + wp.cw_mul(m, spacing)


@wp.kernel(enable_backward=False)
def _sn_faces(dims: wp.vec3i, meta: wp.array3d(dtype=wp.int32), face_offsets: wp.array3d(dtype=wp.int32),
              cases: wp.array3d(dtype=wp.int32), vert_offsets: wp.array3d(dtype=wp.int32),
              edge_sheet: wp.array2d(dtype=wp.int32),
              corner_edge: wp.array2d(dtype=wp.int32), quad_cells: wp.array4d(dtype=wp.int32), quads: int,
              indices: wp.array(dtype=wp.int32)):
    i, j, k = wp.tid()
    if (meta[i, j, k] >> 4) & 3 == 0:
        return  # no quad leaves this cell's first corner
    node = wp.vec3i(i, j, k)
    f = face_offsets[i, j, k]
    case0 = cases[i, j, k]
    below = case0 & 1
    for axis in range(3):
        if below != ((case0 >> (1 << axis)) & 1) and _has_quad(dims, node, axis):
            u = 0
            w = 1
            if axis == 0:
                u = 1
                w = 2
            if axis == 1:
                w = 2
            q = wp.vec4i(0, 0, 0, 0)
            for c in range(4):
                cell = node
                cell[u] = cell[u] - 1 + quad_cells[axis, below, c, 0]
                cell[w] = cell[w] - 1 + quad_cells[axis, below, c, 1]
                off = node - cell
                e = corner_edge[off[0] + 2 * off[1] + 4 * off[2], axis]
                s = edge_sheet[cases[cell[0], cell[1], cell[2]], e]
                code = (meta[cell[0], cell[1], cell[2]] >> (12 + 3 * s)) & 7
                q[c] = vert_offsets[cell[0], cell[1], cell[2]] + code
            if quads != 0:
                for c in range(4):
                    indices[4 * f + c] = q[c]
            else:
                indices[6 * f + 0] = q[0]
                indices[6 * f + 1] = q[1]
                indices[6 * f + 2] = q[2]
                indices[6 * f + 3] = q[0]
                indices[6 * f + 4] = q[2]
                indices[6 * f + 5] = q[3]
            f += 1


def _edge_geometry() -> np.ndarray:
    return np.array([(*CORNERS[a], e // 4) for e, (a, _) in enumerate(EDGES)], np.int32)


def extract_nets(field: Any, threshold: float, lower: Any, upper: Any, topology: str, where: str
                 ) -> tuple[Any, Any]:
    """``(verts, indices)`` of the surface net of ``field`` (see the module docstring)."""
    field_arg(field, where)
    if topology not in TOPOLOGIES:
        raise ValueError(f"{where}: topology must be 'triangle' or 'quad', got {topology!r}")
    nx, ny, nz = field.shape
    lo, spacing = grid_bounds(nx, ny, nz, lower, upper, where)
    dev = field.device
    thr = float(threshold)
    _, edge_sheet_np = sheet_tables()
    edge_sheet = wp.array(edge_sheet_np, dtype=wp.int32, device=dev)
    edge_geom = wp.array(_edge_geometry(), dtype=wp.int32, device=dev)
    cdim = (nx - 1, ny - 1, nz - 1)
    cases = wp.empty(cdim, dtype=wp.int32, device=dev)
    meta = wp.empty(cdim, dtype=wp.int32, device=dev)
    wp.launch(_sn_cases, dim=cdim, inputs=[field, thr, cases], device=dev, record_tape=False)
    wp.launch(_sn_meta, dim=cdim, inputs=[cases, wp.array(interior_meta(), dtype=wp.int32, device=dev), edge_sheet,
                                          edge_geom, meta], device=dev, record_tape=False)
    vert_offsets, num_verts = exclusive_scan(meta, shift=0, mask=7)
    owner_cell = wp.empty(num_verts, dtype=wp.vec3i, device=dev)
    owner_sheet = wp.empty(num_verts, dtype=wp.int32, device=dev)
    verts = wp.zeros(num_verts, dtype=wp.vec3, device=dev, requires_grad=field.requires_grad)
    per_face = 4 if topology == "quad" else 6
    if num_verts == 0:
        return verts, wp.empty(0, dtype=wp.int32, device=dev)
    wp.launch(_sn_owners, dim=cdim, inputs=[meta, vert_offsets, owner_cell, owner_sheet], device=dev,
              record_tape=False)
    wp.launch(_sn_verts, dim=num_verts, inputs=[field, thr, wp.vec3(*lo.tolist()), wp.vec3(*spacing.tolist()),
                                                cases, edge_sheet, edge_geom, owner_cell, owner_sheet, verts],
              device=dev)
    face_offsets, num_faces = exclusive_scan(meta, shift=4, mask=3)
    indices = wp.empty(per_face * num_faces, dtype=wp.int32, device=dev)
    if num_faces:
        wp.launch(_sn_faces, dim=cdim,
                  inputs=[wp.vec3i(nx, ny, nz), meta, face_offsets, cases, vert_offsets, edge_sheet,
                          wp.array(_corner_edge_table(), dtype=wp.int32, device=dev),
                          wp.array(_quad_cells(), dtype=wp.int32, device=dev), int(topology == "quad"), indices],
                  device=dev, record_tape=False)
    return verts, indices


class IsoSurfaceNets(IsoSurfaceBase):
    """Surface nets: one vertex per sheet of the surface in each cell it crosses, quads across crossed edges.

    The vertex of a sheet is the mean of the points where the sheet crosses the cell's edges, which gives better
    shaped faces than marching cubes' on the same grid (no slivers where the surface passes near a grid node).
    A surface inside the grid gives a closed mesh (every edge shared by two faces); one that leaves the grid gives
    an open mesh that stops up to half a cell short of the grid's boundary. Faces are wound counter-clockwise seen
    from the side of larger values. Gradients flow from the vertex positions to the field under a ``wp.Tape``.

    Args:
        nx: grid nodes along x.
        ny: grid nodes along y.
        nz: grid nodes along z.
        lower: position of node (0, 0, 0) (default: the origin).
        upper: position of node (nx - 1, ny - 1, nz - 1) (default: node indices).
        topology: ``"triangle"`` (three indices per face) or ``"quad"`` (four).

    Attributes:
        topology: the face type :meth:`surface` produces.
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower: Any = None, upper: Any = None,
                 topology: str = "triangle") -> None:
        if topology not in TOPOLOGIES:
            raise ValueError(f"IsoSurfaceNets: topology must be 'triangle' or 'quad', got {topology!r}")
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.topology = topology

    def surface(self, field: Any, threshold: float) -> None:
        """Extract the ``threshold`` iso-surface of ``field`` (shape (nx, ny, nz)) into ``verts`` / ``indices``.

        Args:
            field: float32 array of shape (nx, ny, nz).
            threshold: the iso-value.
        """
        self._check_field_shape(field)
        self.verts, self.indices = type(self).extract(field, threshold, lower=self.lower, upper=self.upper,
                                                      topology=self.topology)

    @classmethod
    def extract(cls, field: Any, threshold: float = 0.0, *, lower: Any = None, upper: Any = None,
                topology: str = "triangle") -> tuple[Any, Any]:
        """``(verts, indices)``: the surface net of the ``threshold`` iso-surface of ``field``.

        Args:
            field: 3-d float32 array of node values; its shape sets the grid.
            threshold: the iso-value.
            lower: position of node (0, 0, 0) (default: the origin).
            upper: position of the last node (default: its indices).
            topology: ``"triangle"`` or ``"quad"``.

        Returns:
            vec3 vertex positions and a flat int32 array of 3 (triangles) or 4 (quads) vertex indices per face.

        Raises:
            ValueError: ``field`` is not a 3-d array, has fewer than two nodes on an axis, or ``topology`` is
                neither face type.
            TypeError: ``field`` is not float32.
        """
        return extract_nets(field, threshold, lower, upper, topology, f"{cls.__name__}.extract")
