"""``Nanogrid``: a sparse hexahedral grid whose cells are the voxels of a :class:`treadle.Volume`.

Cell ``c`` is the voxel of index ``c`` in the cell grid (an index volume: ``volume_lookup_index`` gives a voxel's
cell), spanning that voxel's extent in world space. The vertices are the distinct corners of the cells, numbered by
the *vertex grid*, an index volume with one voxel per vertex (a vertex's voxel is the lattice point at the cell
corner, see :mod:`.nanogrid_funcs`). The sides are the distinct cell faces, numbered by the *face grid*, an index
volume whose voxel ``(i, j, k + a * 2**20)`` is the face normal to axis ``a`` at lattice point ``(i, j, k)``.

The topology (vertices of each cell, cells of each face) is built on the host with NumPy when the grid is made and
after each :meth:`Nanogrid.rebuild`; kernels read it from arrays on the volume's device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

from ..element import Element
from ..space.shape.base import reference_vertex_coords
from .geometry import Geometry, mat_type, vec_type
from .nanogrid_funcs import FLIP_BIT, LEVEL_SHIFT, nanogrid_funcs

#: Offset of a face's axis in the third coordinate of its face-grid voxel.
FACE_AXIS_SHIFT = 20
_CORNERS = reference_vertex_coords(Element.CUBE).astype(np.int64)  # (8, 3), in the cube's vertex order


def _index_volume_data(volume: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The cells of a volume: coordinates, index-to-world matrix, translation and whether it is an index grid.

    The cells of an index grid are numbered by its voxel indices.
    """
    g = volume._grid  # the parsed grid: float64 transform, leaf layout
    mat = np.array(g.mat, dtype=np.float64).reshape(3, 3)
    t = np.array(g.translation, dtype=np.float64).reshape(3)
    if volume.is_index:
        return volume.get_voxels().numpy().astype(np.int64), mat, t, True
    # value grids: every voxel of every leaf is a cell
    n = g.node_counts[0]
    origins = g.leaf_origins().astype(np.int64)
    local = np.stack(np.meshgrid(np.arange(8), np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 3)
    return (origins[:, None, :] + local[None]).reshape(n * 512, 3), mat, t, False


def _pack(ijk: np.ndarray) -> np.ndarray:
    """A sortable int64 key of lattice coordinates (each within +-2**19), with two bits to spare."""
    o = np.int64(1 << 19)
    q = ijk.astype(np.int64) + o
    return (q[..., 0] << 40) | (q[..., 1] << 20) | q[..., 2]


def _find(sorted_keys: np.ndarray, order: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index (``order[...]``) of each key in ``sorted_keys``, ``-1`` where absent."""
    if sorted_keys.size == 0:
        return np.full(keys.shape, -1, dtype=np.int64)
    pos = np.clip(np.searchsorted(sorted_keys, keys), 0, sorted_keys.size - 1)
    return np.where(sorted_keys[pos] == keys, order[pos], -1)


def _index_grid(points: np.ndarray, mat: np.ndarray, translation: np.ndarray, device: Any) -> Any:
    pts = wp.array(np.ascontiguousarray(points, dtype=np.int32), dtype=wp.vec3i, device=device)
    return wp.Volume.allocate_by_voxels(pts, transform=mat, translation=translation, device=device)


class Nanogrid(Geometry):
    """A sparse grid of hexahedral cells: the voxels of a NanoVDB volume.

    Args:
        grid: the volume. With an index grid (``wp.Volume.allocate_by_voxels``...), the cells are its indexed
            voxels, cell ``c`` being the voxel that ``volume_lookup_index`` maps to ``c``; with a value grid, every
            voxel of its leaves is a cell (numbered through an index grid built for the purpose).
        temporary_store: accepted for compatibility (the topology is built on the host).
        scalar_type: precision of positions (``wp.float32`` or ``wp.float64``).
        cell_env: only ``None`` (a single environment) is supported.
        env_offsets: only ``None`` is supported.
        rebuildable: allow :meth:`rebuild` (the volume must then be rebuildable).

    Attributes:
        cell_grid: the index volume numbering the cells.
        vertex_grid: the index volume numbering the vertices.
        face_grid: the index volume numbering the sides.

    """

    dimension = 3

    def __init__(self, grid: Any, temporary_store: Any = None, scalar_type: Any = wp.float32, cell_env: Any = None,
                 env_offsets: Any = None, rebuildable: bool = False) -> None:
        super().__init__(scalar_type)
        if not isinstance(grid, wp.Volume):
            raise TypeError(f"Nanogrid expects a wp.Volume, got {type(grid).__name__}")
        if cell_env is not None or env_offsets is not None:
            raise NotImplementedError("Nanogrid: multiple environments are not supported")
        if rebuildable and not grid.is_rebuildable:
            raise RuntimeError("Nanogrid(rebuildable=True) and rebuild() require a rebuildable Volume: allocate it "
                               "with wp.Volume.allocate_by_voxels(..., rebuildable=True) or with capacities")
        self._source = grid
        self._rebuildable = bool(rebuildable)
        self._funcs = nanogrid_funcs(scalar_type)
        self.device = grid.device
        self._build_topology()

    # ---------------------------------------------------------------------------------------- topology
    def rebuild_topology_from_cells(self) -> None:
        """Rebuild the vertices and faces from the cells of the current cell grid (after it was rebuilt).

        Space topologies made on this grid are not refreshed: call their own ``rebuild()``.
        """
        if not self._rebuildable:
            raise RuntimeError("this Nanogrid was not constructed in rebuildable mode (rebuildable=True)")
        self._build_topology()

    def _build_topology(self) -> None:
        ijk, mat, t, is_index = _index_volume_data(self._source)
        if ijk.shape[0] == 0:
            raise ValueError("Nanogrid requires at least one active cell (the volume has no voxels)")
        self.cell_grid = self._source if is_index else _index_grid(ijk, mat, t, self.device)
        self._mat, self._translation = mat, t
        self._cell_ijk_np = ijk
        self._build_vertices(ijk, mat, t)
        self._build_faces(ijk, mat, t)
        self._arrays: dict[str, Any] = {}
        self._invalidate_args()
        for cached in ("_side_cells", "_whole_partition", "_edge_data"):  # host tables other modules keep on the geometry
            self.__dict__.pop(cached, None)

    def _cell_sizes(self) -> np.ndarray:
        """Edge length of each cell in lattice units (ones: every cell is a voxel)."""
        return np.ones(self._cell_ijk_np.shape[0], dtype=np.int64)

    def _build_vertices(self, ijk: np.ndarray, mat: np.ndarray, t: np.ndarray) -> None:
        corners = (ijk[:, None, :] + self._cell_sizes()[:, None, None] * _CORNERS[None]).reshape(-1, 3)
        keys = _pack(corners)
        uniq, inverse = np.unique(keys, return_inverse=True)
        first = np.zeros(uniq.size, dtype=np.int64)
        first[inverse] = np.arange(keys.size)
        # the vertex grid: one voxel per vertex at its lattice point (world position of the corner)
        self.vertex_grid = _index_grid(corners[first], mat, t - mat @ np.full(3, 0.5), self.device)
        vox = self.vertex_grid.get_voxels().numpy()
        vkeys = _pack(vox)
        order = np.argsort(vkeys)
        self._cell_vertices_np = _find(vkeys[order], order, keys).reshape(-1, 8)
        self._vertex_ijk_np = vox.astype(np.int64)

    def _faces(self, ijk: np.ndarray) -> tuple[np.ndarray, ...]:
        """The sides, in any order: axis, lattice point, cell below and above (``-1``: none) and level."""
        ckeys = _pack(ijk)
        corder = np.argsort(ckeys)
        eye = np.eye(3, dtype=np.int64)
        faces = np.concatenate([np.concatenate([ijk, ijk + eye[a]]) for a in range(3)])
        axes = np.repeat(np.arange(3), 2 * ijk.shape[0])
        _, first = np.unique((_pack(faces) << 2) | axes, return_index=True)
        axis, p = axes[first], faces[first]
        below = _find(ckeys[corder], corder, _pack(p - eye[axis]))
        above = _find(ckeys[corder], corder, _pack(p))
        return axis, p, below, above, np.zeros_like(axis)

    def _build_faces(self, ijk: np.ndarray, mat: np.ndarray, t: np.ndarray) -> None:
        axis, p, below, above, level = self._faces(ijk)
        # the face grid numbers the sides
        enc = p.copy()
        enc[:, 2] += axis << FACE_AXIS_SHIFT
        self.face_grid = _index_grid(enc, mat, t - mat @ np.full(3, 0.5), self.device)
        fvox = self.face_grid.get_voxels().numpy().astype(np.int64)
        faxis = (fvox[:, 2] + (1 << (FACE_AXIS_SHIFT - 1))) >> FACE_AXIS_SHIFT
        fp = fvox.copy()
        fp[:, 2] -= faxis << FACE_AXIS_SHIFT
        keys = (_pack(p) << 2) | axis
        order = np.argsort(keys)
        at = _find(keys[order], order, (_pack(fp) << 2) | faxis)
        below, above = below[at], above[at]
        flip = below < 0
        inner = np.where(flip, above, below)
        outer = np.where(above < 0, below, above)
        self._face_ijk_np = fp
        self._face_flags_np = faxis + np.where(flip, FLIP_BIT, 0) + (level[at] << LEVEL_SHIFT)
        self._face_cells_np = np.stack([inner, outer], axis=1)
        self._boundary_np = np.nonzero(inner == outer)[0]

    def rebuild(self, points: Any, point_envs: Any = None, *, status: Any = None, point_mask: Any = None) -> Any:
        """Rebuild the cell grid from voxel points (``wp.Volume.rebuild``), then the vertices and faces.

        Args:
            points: the active voxels: ``vec3i`` index coordinates or ``vec3f`` world positions.
            point_envs: only ``None`` is supported (a single environment).
            status: a one-element ``uint32`` array receiving the volume's ``REBUILD_*`` flags.
            point_mask: optional ``int32`` array: points with a zero entry are ignored.

        Returns:
            ``status``.

        Space topologies made on this grid are not refreshed: call their own ``rebuild()``.
        """
        if not self._rebuildable:
            raise RuntimeError("this Nanogrid was not constructed in rebuildable mode (rebuildable=True)")
        if point_envs is not None:
            raise NotImplementedError("Nanogrid.rebuild: multiple environments are not supported")
        self._source.rebuild(points, status=status, point_mask=point_mask)
        self._build_topology()
        return status

    # ---------------------------------------------------------------------------------------- description
    def reference_cell(self) -> Element:
        """Cubes."""
        return Element.CUBE

    def reference_side(self) -> Element:
        """Squares."""
        return Element.SQUARE

    def cell_count(self) -> int:
        """Number of cells (indexed voxels)."""
        return int(self._cell_ijk_np.shape[0])

    def vertex_count(self) -> int:
        """Number of distinct cell corners."""
        return int(self._vertex_ijk_np.shape[0])

    def side_count(self) -> int:
        """Number of distinct cell faces."""
        return int(self._face_ijk_np.shape[0])

    def edge_count(self) -> int:
        """Number of distinct cell edges."""
        return int(self._edges()[0].shape[0])

    @property
    def edge_grid(self) -> Any:
        """The index volume numbering the edges (built on first use).

        Its voxel ``(i, j, k + a * 2**20)`` is the edge along axis ``a`` from lattice point ``(i, j, k)``.
        """
        grid = self._edges()[1]
        if grid is None:
            enc = self._edges()[0]
            grid = _index_grid(enc, self._mat, self._translation - self._mat @ np.full(3, 0.5), self.device)
            self.__dict__["_edge_data"] = (enc, grid)
        return grid

    def _edges(self) -> tuple[np.ndarray, Any]:
        data = self.__dict__.get("_edge_data")
        if data is None:
            ijk = self._cell_ijk_np
            eye = np.eye(3, dtype=np.int64)
            parts = []
            for a in range(3):
                b, c = eye[(a + 1) % 3], eye[(a + 2) % 3]
                for off in (0 * b, b, c, b + c):
                    e = ijk + off
                    e[:, 2] += a << FACE_AXIS_SHIFT
                    parts.append(e)
            data = self.__dict__["_edge_data"] = (np.unique(np.concatenate(parts), axis=0), None)
        return data

    def boundary_side_count(self) -> int:
        """Number of faces with a single cell."""
        return int(self._boundary_np.shape[0])

    def environment_count(self) -> int:
        """One environment."""
        return 1

    @property
    def transform(self) -> Any:
        """The index-to-world matrix of the cell grid."""
        return mat_type(3, 3, self.scalar_type)(*self._mat.reshape(-1).tolist())

    @property
    def cell_env(self) -> Any:
        """``None``: a single environment."""
        return None

    @property
    def env_offsets(self) -> Any:
        """``None``: a single environment."""
        return None

    # ---------------------------------------------------------------------------------------- kernel arguments
    def _array(self, name: str, data: np.ndarray, dtype: Any, device: Any) -> Any:
        key = f"{name}:{device}"
        a = self._arrays.get(key)
        if a is None:
            a = self._arrays[key] = wp.array(np.ascontiguousarray(data, dtype=np.int32), dtype=dtype, device=device)
        return a

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """The cell grid, cell coordinates and the lattice-to-world map."""
        S = self.scalar_type
        if str(device) != str(self.cell_grid.device):
            raise RuntimeError(f"Nanogrid: the volume lives on {self.cell_grid.device}, kernels run on {device}")
        arg.cell_grid = self.cell_grid.id
        arg.cell_ijk = self._array("cell_ijk", self._cell_ijk_np, wp.vec3i, device)
        arg.transform = mat_type(3, 3, S)(*self._mat.reshape(-1).tolist())
        arg.inv_transform = mat_type(3, 3, S)(*np.linalg.inv(self._mat).reshape(-1).tolist())
        arg.origin = vec_type(3, S)(*(self._translation - self._mat @ np.full(3, 0.5)).tolist())
        arg.cell_volume = S(abs(float(np.linalg.det(self._mat))))

    def fill_side_arg(self, arg: Any, device: Any) -> None:
        """The cell argument and the face tables."""
        arg.cell_arg = self.cell_arg_value(device)
        arg.face_ijk = self._array("face_ijk", self._face_ijk_np, wp.vec3i, device)
        arg.face_flags = self._array("face_flags", self._face_flags_np, int, device)
        arg.face_cells = self._array("face_cells", self._face_cells_np, wp.vec2i, device)

    def fill_side_index_arg(self, arg: Any, device: Any) -> None:
        """The boundary faces."""
        arg.boundary_faces = self._array("boundary", self._boundary_np, int, device)

    # ---------------------------------------------------------------------------------------- host tables
    def cell_vertex_table(self) -> np.ndarray:
        """Vertices of each cell, ``(cell_count, 8)``, in the reference cube's vertex order."""
        return self._cell_vertices_np

    def vertex_positions(self) -> np.ndarray:
        """World positions of the vertices, ``(vertex_count, 3)``, in vertex order."""
        lattice = self._vertex_ijk_np.astype(np.float64) - 0.5
        return lattice @ self._mat.T + self._translation
