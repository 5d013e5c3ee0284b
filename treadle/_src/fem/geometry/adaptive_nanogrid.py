"""``AdaptiveNanogrid``: a sparse voxel grid whose cells have several sizes (levels).

A cell of level ``l`` covers ``2**l`` finest voxels along each axis; the cell grid (an index volume in the finest
voxels' index space) holds one voxel per cell, at the cell's lowest finest voxel, and ``cell_level[c]`` is the level
of the cell of index ``c``. Cells must not overlap.

Where a coarse cell meets finer ones (a T-junction), the sides are the finer cells' faces: each has the fine cell
and the coarse cell as neighbours, and a point of it has coordinates in both. A boundary face partly covered by
finer neighbours is split into the largest aligned squares that are entirely on the boundary. Vertices are the
distinct cell corners, so polynomial spaces are continuous across faces of equal cells and, at T-junctions, share
only the nodes at common corners (the side integrals of ``jump`` and ``average`` see the difference).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

from .geometry import Geometry
from .nanogrid import Nanogrid, _pack
from .nanogrid_funcs import nanogrid_funcs


class AdaptiveNanogrid(Nanogrid):
    """A sparse grid of hexahedral cells of several levels (see the module documentation).

    Args:
        cell_grid: an index volume with one voxel per cell, at the cell's lowest finest voxel.
        cell_level: level of each cell (an integer array, in the cell grid's index order); 0 is the finest.
        level_count: number of levels (cell levels are below it).
        temporary_store: accepted for compatibility.
        scalar_type: precision of positions (``wp.float32`` or ``wp.float64``).
        cell_env: only ``None`` (a single environment) is supported.
        env_offsets: only ``None`` is supported.

    The helpers :func:`adaptive_nanogrid_from_hierarchy` and :func:`adaptive_nanogrid_from_field` build one.
    """

    def __init__(self, cell_grid: Any, cell_level: Any, level_count: int, temporary_store: Any = None,
                 scalar_type: Any = wp.float32, cell_env: Any = None, env_offsets: Any = None) -> None:
        Geometry.__init__(self, scalar_type)
        if not isinstance(cell_grid, wp.Volume) or not cell_grid.is_index:
            raise TypeError(f"AdaptiveNanogrid expects an index wp.Volume, got {type(cell_grid).__name__}")
        if cell_env is not None or env_offsets is not None:
            raise NotImplementedError("AdaptiveNanogrid: multiple environments are not supported")
        levels = (cell_level.numpy() if hasattr(cell_level, "numpy") else np.asarray(cell_level)).astype(np.int64)
        n = cell_grid.get_voxel_count()
        level_count = int(level_count)
        if levels.shape != (n,):
            raise ValueError(f"AdaptiveNanogrid: cell_level has shape {levels.shape} for {n} cells")
        if level_count < 1 or (n and (levels.min() < 0 or levels.max() >= level_count)):
            raise ValueError(f"AdaptiveNanogrid: cell levels must lie in [0, level_count={level_count})")
        ijk = cell_grid.get_voxels().numpy().astype(np.int64)
        if np.any(ijk % (np.int64(1) << levels)[:, None]):
            raise ValueError("AdaptiveNanogrid: a cell of level l must start at a multiple of 2**l")
        self.level_count = level_count
        self._levels_np = levels
        self._source = cell_grid
        self._rebuildable = False
        self._funcs = nanogrid_funcs(scalar_type, adaptive=True)
        self.device = cell_grid.device
        self._build_topology()

    @property
    def cell_level(self) -> Any:
        """Level of each cell (an ``int`` array on the grid's device)."""
        return self._array("cell_level", self._levels_np, int, self.device)

    def _cell_sizes(self) -> np.ndarray:
        return np.int64(1) << self._levels_np

    def edge_count(self) -> int:
        """Not available on adaptive grids (see :meth:`stacked_edge_count`)."""
        raise NotImplementedError("AdaptiveNanogrid.edge_count: use stacked_edge_count")

    def _stacked(self, edges: bool) -> int:
        ijk, h = self._cell_ijk_np, self._cell_sizes()
        eye = np.eye(3, dtype=np.int64)
        rows = []
        for a in range(3):
            b, c = eye[(a + 1) % 3], eye[(a + 2) % 3]
            offsets = (0 * b, b, c, b + c) if edges else (0 * b, eye[a])
            for off in offsets:
                rows.append(np.concatenate([ijk + h[:, None] * off, np.full((len(h), 1), a), h[:, None]], axis=1))
        return int(np.unique(np.concatenate(rows), axis=0).shape[0])

    def stacked_face_count(self) -> int:
        """Number of distinct cell faces, each counted at its cell's level (a coarse face beside finer cells too)."""
        return self._stacked(False)

    def stacked_edge_count(self) -> int:
        """Number of distinct cell edges, each counted at its cell's level."""
        return self._stacked(True)

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """The grid's cell argument, with the cell levels."""
        super().fill_cell_arg(arg, device)
        arg.cell_level = self._array("cell_level", self._levels_np, int, device)
        arg.level_count = self.level_count

    def _faces(self, ijk: np.ndarray) -> tuple[np.ndarray, ...]:
        levels = self._levels_np
        eye = np.eye(3, dtype=np.int64)
        # every cell face, cut into finest-voxel faces: (axis, lattice point, cell, whether the cell is below)
        rec_axis, rec_p, rec_cell, rec_below = [], [], [], []
        for lvl in np.unique(levels):
            cells = np.nonzero(levels == lvl)[0]
            h = 1 << int(lvl)
            g = np.arange(h)
            uv = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)  # (h*h, 2)
            for a in range(3):
                b, c = (a + 1) % 3, (a + 2) % 3
                off = uv[:, 0:1] * eye[b] + uv[:, 1:2] * eye[c]  # (h*h, 3)
                for hi in (0, 1):
                    p = (ijk[cells][:, None, :] + hi * h * eye[a] + off[None]).reshape(-1, 3)
                    rec_p.append(p)
                    rec_axis.append(np.full(len(p), a))
                    rec_cell.append(np.repeat(cells, len(off)))
                    rec_below.append(np.full(len(p), hi == 1))
        axis, p = np.concatenate(rec_axis), np.concatenate(rec_p)
        cell, is_below = np.concatenate(rec_cell), np.concatenate(rec_below)
        _, gid, = np.unique((_pack(p) << 2) | axis, return_inverse=True)
        ng = int(gid.max()) + 1
        below = np.full(ng, -1, dtype=np.int64)
        above = np.full(ng, -1, dtype=np.int64)
        below[gid[is_below]] = cell[is_below]
        above[gid[~is_below]] = cell[~is_below]
        first = np.zeros(ng, dtype=np.int64)
        first[gid] = np.arange(len(gid))
        g_axis, g_p = axis[first], p[first]
        both = (below >= 0) & (above >= 0)
        lone = np.where(below >= 0, below, above)
        g_level = np.where(both, np.minimum(levels[np.maximum(below, 0)], levels[np.maximum(above, 0)]), 0)
        # boundary pieces: the largest aligned square, within the cell's face, entirely on the boundary
        bnd = np.nonzero(~both)[0]
        for k in range(1, int(levels.max(initial=0)) + 1):
            blk = _aligned(g_p[bnd], g_axis[bnd], k)
            _, inv, counts = np.unique(np.concatenate([((_pack(blk) << 2) | g_axis[bnd])[:, None], lone[bnd, None]],
                                                      axis=1), axis=0, return_inverse=True, return_counts=True)
            full = (counts[inv.reshape(-1)] == 4**k) & (levels[lone[bnd]] >= k)
            g_level[bnd[full]] = k
        sp = _aligned(g_p, g_axis, g_level)
        key = np.stack([(_pack(sp) << 2) | g_axis, below, above], axis=1)
        _, first_side = np.unique(key, axis=0, return_index=True)
        return g_axis[first_side], sp[first_side], below[first_side], above[first_side], g_level[first_side]


def _aligned(p: np.ndarray, axis: np.ndarray, k: Any) -> np.ndarray:
    """``p`` rounded down to multiples of ``2**k`` along the two axes of the faces normal to ``axis``."""
    out = p.copy()
    rows = np.arange(len(p))
    k = np.broadcast_to(np.asarray(k, dtype=np.int64), (len(p),))
    for d in (1, 2):
        col = (axis + d) % 3
        out[rows, col] = (p[rows, col] >> k) << k
    return out
