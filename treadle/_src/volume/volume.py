"""``Volume``: a sparse voxel grid in NanoVDB's layout, sampled in kernels through its ``id``.

The grid lives in one byte array on the volume's device; :attr:`Volume.id` is the address of its first byte (the
NanoVDB ``GridData``), which the ``volume_*`` builtins read (``treadle/native/volume.h``). Every way of making a
volume validates the grid once (``nanovdb.parse_grid``), so kernels never follow a bad offset.

Topology queries (``get_voxels``, ``get_tiles``, counts) and building from points run on the host with NumPy (for a
CUDA volume the points are copied to the host and the grid is uploaded); sampling, lookups and stores run in
kernels on the volume's device.
"""

from __future__ import annotations

import ctypes
import io
import os
import struct
import typing
import weakref
from typing import Any, NamedTuple

import numpy as np

from ..lang.array import array
from ..lang.creation import copy
from ..runtime.device import get_device
from ..types import scalars
from ..types.matrix import mat33f
from ..types.vector import vec3d, vec3f, vec3i, vec4d, vec4f
from . import build as B
from . import nanovdb as nv

_DTYPES: dict[int, Any] = {nv.FLOAT: scalars.float32, nv.DOUBLE: scalars.float64, nv.INT32: scalars.int32,
                           nv.INT64: scalars.int64, nv.UINT32: scalars.uint32, nv.VEC3F: vec3f, nv.VEC3D: vec3d,
                           nv.VEC4F: vec4f, nv.VEC4D: vec4d}
_CODES = {t: c for c, t in _DTYPES.items()}
_LIVE: weakref.WeakValueDictionary[tuple[str, int], Volume] = weakref.WeakValueDictionary()


def _grid_code_of(bg_value: Any) -> int:
    """The grid type made by ``bg_value`` (``None``: an index grid)."""
    if bg_value is None:
        return nv.INDEX
    t = type(bg_value)
    if t in _CODES:
        return _CODES[t]
    if isinstance(bg_value, bool):
        raise TypeError("bool volumes are not supported; use an int or float background value")
    if isinstance(bg_value, (int, np.integer)):
        return nv.INT32
    if isinstance(bg_value, (float, np.floating)):
        return nv.FLOAT
    if isinstance(bg_value, scalars.scalar_base):
        code = _CODES.get(type(bg_value))
        if code is None:
            raise TypeError(f"unsupported volume type {type(bg_value).__name__}; supported: "
                            + ", ".join(t.__name__ for t in _CODES))
        return code
    n = np.asarray(bg_value).size
    if n in (3, 4):
        return nv.VEC3F if n == 3 else nv.VEC4F
    raise TypeError(f"unsupported volume background value {bg_value!r}: use None (index grid), an int, a float, a "
                    "scalar type instance (wp.float64(0.0) ...), or a 3- or 4-component vector")


def _bg_array(code: int, bg_value: Any) -> np.ndarray | None:
    if code in nv.INDEX_TYPES:
        return None
    lay = nv.LAYOUTS[code]
    raw = getattr(bg_value, "value", bg_value)
    return np.asarray(raw, dtype=lay.numpy_value).reshape(lay.components)


def _voxel_size3(voxel_size: Any) -> np.ndarray:
    items = voxel_size if isinstance(voxel_size, (list, tuple, np.ndarray)) else [voxel_size]
    if isinstance(voxel_size, (str, bytes)) or not all(
            isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
            for x in np.asarray(items, dtype=object).reshape(-1)):
        raise TypeError(f"voxel_size must be a number or a sequence of 3 numbers, got {voxel_size!r}")
    v = np.asarray(items, dtype=np.float64).reshape(-1)
    if v.size == 1:
        v = np.repeat(v, 3)
    if v.size != 3:
        raise ValueError(f"voxel_size must be a scalar or 3 values, got {voxel_size!r}")
    if not (np.isfinite(v).all() and (v > 0).all()):
        raise ValueError(f"voxel_size must be finite and positive, got {voxel_size!r}")
    return v


def _transform(voxel_size: Any, transform: Any) -> np.ndarray:
    if transform is not None:
        if voxel_size is not None:
            raise ValueError("pass either voxel_size or transform, not both")
        m = np.asarray(transform, dtype=np.float64).reshape(3, 3)
        if not np.isfinite(m).all() or abs(np.linalg.det(m)) < 1e-300:
            raise ValueError("transform must be a finite, invertible 3x3 matrix")
        return m
    if voxel_size is None:
        raise ValueError("a voxel_size (or a transform) is required")
    return np.diag(_voxel_size3(voxel_size))


def _points(points: Any, what: str, mask: Any = None) -> tuple[np.ndarray, bool]:
    """Points as NumPy (N, 3) and whether they are integer (index space) coordinates."""
    if isinstance(points, array):
        dt = points.dtype
        host = points.numpy()
        if dt is vec3i or dt is scalars.int32:
            integer = True
        elif dt is vec3f or dt is scalars.float32 or dt is vec3d or dt is scalars.float64:
            integer = False
        else:
            raise RuntimeError(f"{what} must be an array of vec3i / int32 (index space) or vec3f / float32 (world "
                               f"space) points, got dtype {getattr(dt, '__name__', dt)}")
    else:
        host = np.asarray(points)
        integer = np.issubdtype(host.dtype, np.integer)
        if not (integer or np.issubdtype(host.dtype, np.floating)):
            raise RuntimeError(f"{what} must hold integer or float coordinates, got dtype {host.dtype}")
    if host.size % 3 or (host.ndim == 2 and host.shape[1] != 3) or host.ndim > 2:
        raise RuntimeError(f"{what} must be N points of 3 coordinates (vec3 array or N x 3), got shape {host.shape}")
    host = host.reshape(-1, 3)
    if mask is not None:
        m = (mask.numpy() if isinstance(mask, array) else np.asarray(mask)).reshape(-1)
        if m.shape[0] != host.shape[0]:
            raise RuntimeError(f"point_mask has {m.shape[0]} entries for {host.shape[0]} points")
        host = host[m != 0]
    return host, integer


def _to_index(pts: np.ndarray, integer: bool, mat: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """Index-space voxel coordinates of points (world points round to the nearest voxel centre)."""
    if integer:
        return pts.astype(np.int32)
    ijk = (pts.astype(np.float64) - translation) @ np.linalg.inv(mat).T
    if not np.isfinite(ijk).all() or np.abs(ijk).max(initial=0.0) > 2**30:
        raise ValueError("world points out of the representable index range (or not finite)")
    return np.floor(ijk + 0.5).astype(np.int32)


class _Capacity(NamedTuple):
    kind: str | None
    voxels: int
    leaves: int
    lowers: int
    uppers: int


class Volume:
    """A sparse volume (a NanoVDB grid) on a device.

    Args:
        data: a ``uint8`` array holding one or more NanoVDB grids (uncompressed, no file header).
        copy: copy ``data`` (``True``) or use its memory (the array must then outlive the volume).
    """

    #: Sampling modes of ``volume_sample*``: nearest voxel, trilinear.
    CLOSEST = 0
    LINEAR = 1

    #: Status flags of :meth:`rebuild`.
    REBUILD_SUCCESS = 0
    REBUILD_LEAF_CAPACITY_EXCEEDED = 1
    REBUILD_LOWER_CAPACITY_EXCEEDED = 2
    REBUILD_UPPER_CAPACITY_EXCEEDED = 4
    REBUILD_VOXEL_CAPACITY_EXCEEDED = 8
    REBUILD_INVALID_INPUT = 16

    class GridInfo(NamedTuple):
        """Grid metadata."""

        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: Any
        transform_matrix: Any

    class FeatureArrayInfo(NamedTuple):
        """Metadata of a supplemental (blind-data) array."""

        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    class ActiveStats(NamedTuple):
        """Counts of the current topology."""

        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class RebuildInfo(NamedTuple):
        """What a rebuildable volume rebuilds from and the capacities it reserved."""

        kind: str | None
        max_voxel_count: int
        max_leaf_node_count: int
        max_lower_node_count: int
        max_upper_node_count: int

    def __init__(self, data: array, copy: bool = True) -> None:
        if not isinstance(data, array) or data.dtype not in (scalars.uint8, scalars.int8):
            raise TypeError(f"Volume(data) expects a uint8 array of NanoVDB grid bytes, got "
                            f"{type(data).__name__}{'' if not isinstance(data, array) else ' of ' + data.dtype.__name__}")
        if data.ndim != 1 or not data.is_contiguous:
            raise TypeError("Volume(data) expects a contiguous 1-d byte array")
        host = data.numpy().view(np.uint8)
        grids = nv.parse_grids(host, "Volume data")
        nbytes = sum(g.size for g in grids)
        self._setup(data if not copy else _copy_bytes(data, nbytes), 0, None)

    # -- construction --------------------------------------------------------------------------------------------
    @classmethod
    def _from_bytes(cls, buf: np.ndarray, device: Any = None, capacity: _Capacity | None = None,
                    reserve: int = 0) -> Volume:
        dev = get_device(device)
        data = np.zeros(max(len(buf), reserve), dtype=np.uint8)
        data[:len(buf)] = buf
        vol = cls.__new__(cls)
        vol._setup(array(data, dtype=scalars.uint8, device=dev), 0, capacity)
        return vol

    def _setup(self, buf: array, offset: int, capacity: _Capacity | None) -> None:
        self._buf = buf
        self._offset = offset
        self.device = buf.device
        self.id = int(buf.ptr) + offset
        self._capacity = capacity
        self._refresh()
        _LIVE[(str(self.device), self.id)] = self

    def _host_bytes(self) -> np.ndarray:
        """The buffer as host bytes (a view on the CPU, a copy from other devices)."""
        return self._buf.numpy().view(np.uint8)

    def _refresh(self) -> None:
        self._grid = nv.parse_grid(self._host_bytes(), self._offset, "Volume")

    @classmethod
    def load_from_nvdb(cls, file_or_buffer: Any, device: Any = None) -> Volume:
        """A volume from a ``.nvdb`` file: a path, a binary file object or bytes (raw, zip- or Blosc-compressed).

        All grids of the file are loaded into one buffer; this volume is the first, :meth:`load_next_grid` gives
        the others.
        """
        if isinstance(file_or_buffer, (str, os.PathLike)):
            source = os.fspath(file_or_buffer)
            try:
                with open(source, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise OSError(f"cannot read NanoVDB file {source}: {e.strerror or e}") from None
        elif isinstance(file_or_buffer, (bytes, bytearray, memoryview)):
            source, data = "NanoVDB buffer", bytes(file_or_buffer)
        elif hasattr(file_or_buffer, "read"):
            source = str(getattr(file_or_buffer, "name", "NanoVDB stream"))
            data = file_or_buffer.read()
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"{source}: the file object must be opened in binary mode")
        elif isinstance(file_or_buffer, np.ndarray):
            source, data = "NanoVDB buffer", file_or_buffer.tobytes()
        else:
            raise TypeError(f"load_from_nvdb expects a path, a binary file object or bytes, got "
                            f"{type(file_or_buffer).__name__}")
        return cls._from_bytes(nv.read_file_bytes(data, source), device)

    @classmethod
    def load_from_address(cls, grid_ptr: int, buffer_size: int = 0, device: Any = None) -> Volume:
        """A volume using the NanoVDB grid already in memory at ``grid_ptr`` (not copied, not owned)."""
        if not grid_ptr:
            raise RuntimeError("load_from_address: null grid pointer")
        dev = get_device(device)
        key = (str(dev), int(grid_ptr))
        if key in _LIVE:
            raise RuntimeError(f"a Volume already exists for the grid at address {int(grid_ptr):#x}")
        size = int(buffer_size)
        if size <= 0:
            head = array(ptr=int(grid_ptr), dtype=scalars.uint8, shape=(nv.GRID_SIZE,), device=dev).numpy()
            size, = struct.unpack_from("<Q", head, nv.OFF_GRID_SIZE)
            if size < nv.GRID_SIZE or size > 2**40:
                raise RuntimeError(f"load_from_address: no NanoVDB grid at {int(grid_ptr):#x} (grid size {size})")
        view = array(ptr=int(grid_ptr), dtype=scalars.uint8, shape=(size,), device=dev)
        nv.parse_grids(view.numpy().view(np.uint8), f"grid at {int(grid_ptr):#x}")
        vol = cls.__new__(cls)
        vol._setup(view, 0, None)
        return vol

    @classmethod
    def load_from_numpy(cls, ndarray: np.ndarray, min_world: Any = (0.0, 0.0, 0.0), voxel_size: Any = 1.0,
                        bg_value: Any = 0.0, device: Any = None) -> Volume:
        """A dense volume from a NumPy array ``(X, Y, Z)`` (scalars) or ``(X, Y, Z, 3)`` (vec3f).

        Voxel ``(i, j, k)`` holds ``ndarray[i, j, k]`` and sits at ``min_world + voxel_size * (i, j, k)``; the
        leaves covering the array are fully active, voxels beyond the array hold ``bg_value``. An ``int``
        ``bg_value`` makes an int32 volume, other scalars a float32 one.
        """
        a = np.asarray(ndarray)
        if a.ndim == 4 and a.shape[3] == 3:
            code = nv.VEC3F
        elif a.ndim == 3:
            code = nv.INT32 if isinstance(bg_value, (int, np.integer)) and not isinstance(bg_value, bool) else nv.FLOAT
        else:
            raise RuntimeError(f"load_from_numpy expects a 3-d array or a 4-d array with 3 components, got shape "
                               f"{a.shape}")
        if code == nv.VEC3F:
            bg = np.asarray(getattr(bg_value, "value", bg_value), dtype=np.float32).reshape(-1)
            bg = np.repeat(bg, 3) if bg.size == 1 else bg
        else:
            bg = np.asarray(bg_value, dtype=nv.LAYOUTS[code].numpy_value).reshape(1)
        lay = nv.LAYOUTS[code]
        dims = np.array(a.shape[:3])
        nl = (dims + 7) // 8
        grid = np.stack(np.meshgrid(*(np.arange(n) * 8 for n in nl), indexing="ij"), -1).reshape(-1, 3)
        origins = grid.astype(np.int32)
        padded = np.empty((*(nl * 8), lay.components), dtype=lay.numpy_value)
        padded[...] = bg.reshape(lay.components)
        padded[:dims[0], :dims[1], :dims[2]] = a.reshape(*dims, lay.components)
        blocks = padded.reshape(nl[0], 8, nl[1], 8, nl[2], 8, lay.components).transpose(0, 2, 4, 1, 3, 5, 6)
        values = blocks.reshape(len(origins), 512, lay.components)
        mat = np.diag(_voxel_size3(voxel_size))
        buf = B.build_grid(code, origins, B.full_masks(len(origins)), values, bg, mat,
                           np.asarray(min_world, dtype=np.float64).reshape(3))
        return cls._from_bytes(buf, device)

    @classmethod
    def allocate(cls, min: Any, max: Any, voxel_size: Any, bg_value: Any = 0.0,
                 translation: Any = (0.0, 0.0, 0.0), points_in_world_space: bool = False,
                 device: Any = None) -> Volume:
        """A volume whose tiles (8^3 leaves, all voxels active) cover the voxels ``[min, max]`` (inclusive).

        With ``points_in_world_space`` the corners are world positions (converted with ``voxel_size`` and
        ``translation``).
        """
        mat = np.diag(_voxel_size3(voxel_size))
        t = np.asarray(translation, dtype=np.float64).reshape(3)
        lo = np.asarray(min, dtype=np.float64).reshape(1, 3)
        hi = np.asarray(max, dtype=np.float64).reshape(1, 3)
        if points_in_world_space:
            lo_i, hi_i = _to_index(lo, False, mat, t)[0], _to_index(hi, False, mat, t)[0]
        else:
            lo_i, hi_i = lo.astype(np.int64)[0], hi.astype(np.int64)[0]
        lo_i, hi_i = np.minimum(lo_i, hi_i), np.maximum(lo_i, hi_i)
        axes = [np.arange(int(a) & ~7, int(b) + 1, 8) for a, b in zip(lo_i, hi_i)]
        pts = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3).astype(np.int32)
        return cls._by_tiles(pts, True, mat, t, bg_value, device, None)

    @classmethod
    def allocate_by_tiles(cls, tile_points: Any, voxel_size: Any = None, bg_value: Any = 0.0,
                          translation: Any = (0.0, 0.0, 0.0), device: Any = None, transform: Any = None,
                          rebuildable: bool = False, max_tiles: int | None = None,
                          max_lower_nodes: int | None = None, max_upper_nodes: int | None = None,
                          status: Any = None, point_mask: Any = None) -> Volume:
        """A volume with an active 8^3 tile around each point of ``tile_points``.

        Integer points (``vec3i`` / N x 3 ``int32``) are index coordinates; float points (``vec3f`` / N x 3
        ``float32``) world positions. ``bg_value`` sets the value type (``None``: an index grid) and the value of
        every voxel. With ``rebuildable`` (or any ``max_*``), storage for that many nodes is reserved and
        :meth:`rebuild` can change the topology in place.
        """
        mat = _transform(voxel_size, transform)
        t = np.asarray(translation, dtype=np.float64).reshape(3)
        pts, integer = _points(tile_points, "tile_points", point_mask)
        cap = None
        if rebuildable or any(x is not None for x in (max_tiles, max_lower_nodes, max_upper_nodes)):
            cap = _Capacity("tiles", 0, *(_positive(x, n) for x, n in (
                (max_tiles, "max_tiles"), (max_lower_nodes, "max_lower_nodes"), (max_upper_nodes, "max_upper_nodes"))))
        vol = cls._by_tiles(_to_index(pts, integer, mat, t), True, mat, t, bg_value, device, cap, status)
        return vol

    @classmethod
    def _by_tiles(cls, ijk: np.ndarray, integer: bool, mat: np.ndarray, t: np.ndarray, bg_value: Any, device: Any,
                  cap: _Capacity | None, status: Any = None) -> Volume:
        code = _grid_code_of(bg_value)
        origins = B.leaf_origins_of(ijk)
        bg = _bg_array(code, bg_value)
        buf = B.build_grid(code, origins, B.full_masks(len(origins)), None, bg, mat, t)
        return cls._with_capacity(buf, code, cap, device, status)

    @classmethod
    def allocate_by_voxels(cls, voxel_points: Any, voxel_size: Any = None, translation: Any = (0.0, 0.0, 0.0),
                           device: Any = None, transform: Any = None, rebuildable: bool = False,
                           max_active_voxels: int | None = None, max_leaf_nodes: int | None = None,
                           max_lower_nodes: int | None = None, max_upper_nodes: int | None = None,
                           status: Any = None, point_mask: Any = None) -> Volume:
        """An index volume (``OnIndex`` grid) with one active voxel per distinct point of ``voxel_points``.

        Each active voxel gets an index in ``[0, get_voxel_count())`` (``volume_lookup_index``), in the order of
        :meth:`get_voxels`, so that kernels can keep per-voxel data in their own arrays.
        """
        mat = _transform(voxel_size, transform)
        t = np.asarray(translation, dtype=np.float64).reshape(3)
        pts, integer = _points(voxel_points, "voxel_points", point_mask)
        cap = None
        if rebuildable or any(x is not None for x in (max_active_voxels, max_leaf_nodes, max_lower_nodes,
                                                        max_upper_nodes)):
            cap = _Capacity("voxels", *(_positive(x, n) for x, n in (
                (max_active_voxels, "max_active_voxels"), (max_leaf_nodes, "max_leaf_nodes"),
                (max_lower_nodes, "max_lower_nodes"), (max_upper_nodes, "max_upper_nodes"))))
        origins, masks = B.voxel_topology(_to_index(pts, integer, mat, t))
        buf = B.build_grid(nv.ONINDEX, origins, masks, None, None, mat, t)
        return cls._with_capacity(buf, nv.ONINDEX, cap, device, status)

    @classmethod
    def _with_capacity(cls, buf: np.ndarray, code: int, cap: _Capacity | None, device: Any,
                       status: Any) -> Volume:
        g = nv.parse_grid(buf, 0, "Volume")
        if cap is None:
            return cls._from_bytes(buf, device)
        leaves, lowers, uppers = g.node_counts
        voxels = g.active_voxels
        # unspecified capacities: those of the first build (voxels: at least one leaf per voxel is possible)
        c = _Capacity(cap.kind, cap.voxels or voxels, cap.leaves or leaves or 1, cap.lowers or lowers or 1,
                      cap.uppers or uppers or 1)
        if cap.kind == "voxels" and not cap.leaves:
            c = c._replace(leaves=max(c.voxels, leaves, 1))
        flags = cls._fits(g, c)
        if flags:  # the first topology does not fit the capacity: start empty (status says why)
            bg = None if g.layout.is_index else g.background()
            buf = B.build_grid(code, np.zeros((0, 3), np.int32), np.zeros((0, 8), np.uint64), None, bg, g.mat,
                               g.translation)
        vol = cls._from_bytes(buf, device, c, _capacity_bytes(code, c))
        vol._write_status(status, flags)
        return vol

    # -- rebuild ----------------------------------------------------------------------------------------------------
    @property
    def is_rebuildable(self) -> bool:
        """Whether this volume reserved storage for :meth:`rebuild`."""
        return self._capacity is not None

    def get_rebuild_info(self) -> Volume.RebuildInfo:
        """The rebuild input kind (``"tiles"``, ``"voxels"`` or ``None``) and the reserved capacities."""
        c = self._capacity
        if c is None:
            return Volume.RebuildInfo(None, 0, 0, 0, 0)
        return Volume.RebuildInfo(c.kind, c.voxels if c.kind == "voxels" else c.leaves * 512, c.leaves, c.lowers,
                                  c.uppers)

    def get_active_stats(self) -> Volume.ActiveStats:
        """Active voxel and node counts of the current topology."""
        g = self._grid
        return Volume.ActiveStats(g.active_voxels, *g.node_counts)

    @staticmethod
    def _fits(g: nv.Grid, c: _Capacity) -> int:
        flags = 0
        if g.node_counts[0] > c.leaves:
            flags |= Volume.REBUILD_LEAF_CAPACITY_EXCEEDED
        if g.node_counts[1] > c.lowers:
            flags |= Volume.REBUILD_LOWER_CAPACITY_EXCEEDED
        if g.node_counts[2] > c.uppers:
            flags |= Volume.REBUILD_UPPER_CAPACITY_EXCEEDED
        if c.kind == "voxels" and g.active_voxels > c.voxels:
            flags |= Volume.REBUILD_VOXEL_CAPACITY_EXCEEDED
        return flags

    @staticmethod
    def _write_status(status: Any, flags: int) -> None:
        if status is None:
            return
        if not isinstance(status, array) or status.dtype is not scalars.uint32 or status.size != 1:
            raise RuntimeError("status must be a one-element uint32 array")
        status.fill_(flags)

    def rebuild(self, points: Any, status: Any = None, point_mask: Any = None) -> Any:
        """Rebuild the topology in place (same :attr:`id`) from tile or voxel points, within the reserved capacity.

        Values of a rebuilt value grid are reset to the background. When the new topology does not fit, the
        volume is left unchanged and ``status`` receives the ``REBUILD_*_CAPACITY_EXCEEDED`` flags.
        """
        c = self._capacity
        if c is None:
            raise RuntimeError("this volume is not rebuildable: allocate it with rebuildable=True or with capacities")
        try:
            pts, integer = _points(points, "points", point_mask)
        except RuntimeError:
            self._write_status(status, Volume.REBUILD_INVALID_INPUT)
            raise
        g = self._grid
        ijk = _to_index(pts, integer, g.mat, g.translation)
        if c.kind == "voxels":
            origins, masks = B.voxel_topology(ijk)
        else:
            origins = B.leaf_origins_of(ijk)
            masks = B.full_masks(len(origins))
        bg = None if g.layout.is_index else g.background()
        buf = B.build_grid(g.layout.code, origins, masks, None, bg, g.mat, g.translation, g.grid_class, g.name)
        new = nv.parse_grid(buf, 0, "Volume")
        flags = self._fits(new, c)
        if flags == 0:
            dst = array(ptr=self.id, dtype=scalars.uint8, shape=(len(buf),), device=self.device)
            dst.assign(buf)
            self._refresh()
        self._write_status(status, flags)
        return status

    # -- metadata --------------------------------------------------------------------------------------------------
    @property
    def dtype(self) -> Any:
        """The value type (``None`` for index grids)."""
        return _DTYPES.get(self._grid.layout.code)

    @property
    def is_index(self) -> bool:
        """Whether this is an index grid (voxels map to positions in external arrays)."""
        return self._grid.layout.is_index

    def array(self) -> array:
        """The grid's bytes as a ``uint8`` array on the volume's device (from :attr:`id` on)."""
        return self._buf[self._offset:self._offset + self._grid.size]

    def get_grid_info(self) -> Volume.GridInfo:
        """Name, size, position in the buffer, type name and the index-to-world transform."""
        g = self._grid
        return Volume.GridInfo(g.name, g.size, g.grid_index, g.grid_count, g.layout.name,
                               vec3f(*g.translation.tolist()), mat33f(*g.mat.reshape(-1).tolist()))

    def get_voxel_size(self) -> tuple[float, float, float]:
        """The world-space extent of one voxel (the transform applied to (1, 1, 1))."""
        v = self._grid.voxel_size
        return (float(v[0]), float(v[1]), float(v[2]))

    def get_voxel_count(self) -> int:
        """The number of voxels with an index (index grids) or of active voxels (value grids).

        A rebuildable index volume counts the voxels it reserved, so that per-voxel arrays sized by it hold any
        rebuilt topology; ``volume_voxel_count`` in kernels counts the indices of the current topology.
        """
        g = self._grid
        if not g.layout.is_index:
            return g.active_voxels
        return self.get_rebuild_info().max_voxel_count if self._capacity is not None else g.voxel_count()

    def get_tile_count(self) -> int:
        """Number of tiles (8^3 leaf nodes)."""
        return self._grid.node_counts[0]

    def _out(self, out: Any, data: np.ndarray, what: str) -> array:
        if out is None:  # an N x 3 int32 array, as the reference returns (``ijk[i, 0]`` in kernels)
            return array(np.ascontiguousarray(data, dtype=np.int32).reshape(-1, 3), dtype=scalars.int32,
                         device=self.device)
        if not isinstance(out, array) or out.device != self.device or not out.is_contiguous:
            raise RuntimeError(f"out must be a contiguous array on {self.device}")
        if (out.dtype is vec3i and out.ndim == 1) or (out.dtype is scalars.int32 and out.ndim == 2
                                                       and out.shape[1] == 3):
            if out.shape[0] == len(data):
                out.assign(data)
                return out
            if out.shape[0] > len(data):  # the rows beyond the count are left as they are
                out[:len(data)].assign(data)
                return out
        raise RuntimeError(f"out must hold {len(data)} vec3i (or {len(data)} x 3 int32) {what}, got "
                           f"{out.shape} {getattr(out.dtype, '__name__', out.dtype)}")

    def get_tiles(self, out: Any = None) -> array:
        """The origins of the tiles (leaves), one row of 3 int32 each (an N x 3 array), in storage order."""
        return self._out(out, self._grid.leaf_origins(), "tile coordinates")

    def get_voxels(self, out: Any = None) -> array:
        """The coordinates of the indexed voxels (an N x 3 int32 array), in index order.

        Index grids: the active voxels (``OnIndex``) or all tile voxels (``Index``); value grids: the active voxels.
        """
        g = self._grid
        masks = g.leaf_masks() if g.layout.code != nv.INDEX else B.full_masks(g.node_counts[0])
        return self._out(out, B.active_coords(g.leaf_origins(), masks), "voxel coordinates")

    # -- blind data ------------------------------------------------------------------------------------------------
    def get_feature_array_count(self) -> int:
        """Number of supplemental (blind-data) arrays stored with the grid."""
        return len(self._grid.blind)

    def get_feature_array_info(self, feature_index: int) -> Volume.FeatureArrayInfo:
        """Name, address, value size and count, and type of a supplemental array."""
        b = self._blind(feature_index)
        return Volume.FeatureArrayInfo(b.name, self.id + b.offset, b.value_size, b.value_count,
                                       nv.type_name(b.data_type))

    def _blind(self, i: int) -> nv.BlindData:
        blind = self._grid.blind
        if not 0 <= int(i) < len(blind):
            raise IndexError(f"feature index {i} out of range: the grid has {len(blind)} feature array(s)")
        return blind[int(i)]

    def feature_array(self, feature_index: int, dtype: Any = None) -> array:
        """A supplemental array as an array view on the volume's device (``dtype`` from its metadata if omitted)."""
        b = self._blind(feature_index)
        if dtype is None:
            dtype = _DTYPES.get(b.data_type)
            if dtype is None:
                dtype = {1: scalars.uint8, 2: scalars.uint16, 4: scalars.uint32, 8: scalars.uint64}.get(b.value_size)
            if dtype is None:
                raise TypeError(f"feature array {feature_index} has type {nv.type_name(b.data_type)} of "
                                f"{b.value_size} bytes; pass dtype=")
        size = ctypes.sizeof(dtype._type_) if hasattr(dtype, "_type_") else ctypes.sizeof(dtype)
        nbytes = b.value_count * b.value_size
        if nbytes % size:
            raise TypeError(f"feature array {feature_index} holds {nbytes} bytes, not a multiple of "
                            f"{getattr(dtype, '__name__', dtype)} ({size} bytes)")
        view = array(ptr=self.id + b.offset, dtype=dtype, shape=(nbytes // size,), device=self.device)
        view._owner = self
        return view

    # -- grids of one buffer ---------------------------------------------------------------------------------------
    def load_next_grid(self) -> Volume | None:
        """The next grid of this volume's buffer (a multi-grid file), or ``None``."""
        g = self._grid
        nxt = self._offset + g.size
        if g.grid_index + 1 >= g.grid_count or nxt + nv.GRID_SIZE > self._buf.size:
            return None
        vol = Volume.__new__(Volume)
        vol._setup(self._buf, nxt, None)
        return vol

    def save_to_nvdb(self, path: Any, codec: typing.Literal["none", "zip", "blosc"] = "none") -> None:
        """Write this volume's grids to a ``.nvdb`` file (``codec``: ``"none"``, ``"zip"`` or ``"blosc"``).

        A volume loaded from a multi-grid file writes all of its grids; only the first of them can be saved.
        """
        if self._offset:
            raise RuntimeError("save_to_nvdb is supported for the first grid of a buffer only (it writes every grid "
                               "of the buffer): save the volume the others were loaded from")
        host = self._host_bytes()
        grids = [nv.parse_grid(host, 0, "Volume")]
        while grids[-1].grid_index + 1 < grids[-1].grid_count and grids[-1].start + grids[-1].size < len(host):
            grids.append(nv.parse_grid(host, grids[-1].start + grids[-1].size, "Volume"))
        pieces = list(nv.file_bytes(grids, codec))
        if isinstance(path, (str, os.PathLike)):
            with open(path, "wb") as f:
                for p in pieces:
                    f.write(p)
        elif isinstance(path, io.IOBase) or hasattr(path, "write"):
            for p in pieces:
                path.write(p)
        else:
            raise TypeError(f"save_to_nvdb expects a path or a binary file object, got {type(path).__name__}")

    def __del__(self) -> None:
        # the grid buffer is an array owned by this object (nothing else to release); tolerates a volume that was
        # never initialised (Volume.__new__ only)
        self.__dict__.pop("_buf", None)

    def __repr__(self) -> str:
        g = self._grid
        return (f"Volume({g.layout.name}, {g.node_counts[0]} tiles, {g.active_voxels} active voxels, "
                f"device={self.device})")



def _positive(x: int | None, name: str) -> int:
    if x is None:
        return 0
    v = int(x)
    if v <= 0 or v >= 2**32:
        raise ValueError(f"{name} must be a positive integer that fits in uint32, got {x}")
    return v


def _capacity_bytes(code: int, c: _Capacity) -> int:
    lay = nv.LAYOUTS[code]
    return (nv.GRID_SIZE + nv.TREE_SIZE + lay.root_size + c.uppers * (lay.tile_size + lay.upper_size)
            + c.lowers * lay.lower_size + c.leaves * lay.leaf_size)


def _copy_bytes(data: array, nbytes: int) -> array:
    out = array(np.zeros(nbytes, dtype=np.uint8), dtype=scalars.uint8, device=data.device)
    copy(out, data, count=nbytes)
    return out
