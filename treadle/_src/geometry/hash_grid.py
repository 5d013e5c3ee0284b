"""``HashGrid``: a uniform grid of hashed cells for fixed-radius neighbour queries.

Build (all on the grid's device, in Treadle kernels except the sort):

1. ``_hash_keys``: the cell of each point, ``floor(p / cell_width)`` wrapped modulo (dim_x, dim_y, dim_z), flattened
   with x fastest (computed in float64, exactly as the native query computes its cell range).
2. ``_hash_sort_kernel``: a stable radix sort of the keys, packed with the point index into 64 bits (serial
   native code in one thread, ``hash_sort_serial``);
3. ``_hash_scatter``: the sorted point ids, sorted copies of the points (and groups), and each non-empty cell's
   [start, end) range. Only the cells touched by the previous build are cleared first (``_hash_clear``), so a
   rebuild costs O(points), not O(cells);
4. ``_hash_bounds_kernel``: the points' bounding box (queries far from every point skip periodic-image tests).

Every step is a kernel launch, so a build can be recorded in a graph and replayed.

The native side (``treadle/native/hashgrid.h``) reads a ``hash_grid_t`` descriptor whose address is :attr:`id`
(on a CUDA device, a device copy: ``descriptor.py``); the descriptor and every buffer it points to are owned by
this object.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..builtins import REGISTRY
from ..builtins.exports import exported_builtins
from ..lang.array import array
from ..lang.creation import copy, empty, zeros
from ..lang.kernel import func, kernel
from ..lang.launch import launch
from ..runtime.device import get_device
from ..runtime.graph import capturing, capturing_saveable
from ..types import scalars
from ..types.vector import vec3d, vec3f, vec3h, vec3i
from .descriptor import DescriptorMirror
from .host_build import HostSort, host_builds

_B = exported_builtins()
tid, floor = _B["tid"], _B["floor"]
_hash_sort, _hash_bounds = REGISTRY.builtins["_hash_sort"], REGISTRY.builtins["_hash_bounds"]

_VEC = {scalars.float16: vec3h, scalars.float32: vec3f, scalars.float64: vec3d}
_DTYPE_CODE = {scalars.float16: 0, scalars.float32: 1, scalars.float64: 2}
_MAX_CELLS = 2**31 - 1


class HashGridDesc(ctypes.Structure):
    """Mirror of ``treadle::hash_grid_t``."""

    _fields_ = [
        ("dim", ctypes.c_int32 * 3),
        ("num_points", ctypes.c_int32),
        ("cell_width", ctypes.c_double),
        ("inv_cell_width", ctypes.c_double),
        ("point_ids", ctypes.c_void_p),
        ("cell_ranges", ctypes.c_void_p),
        ("sorted_points", ctypes.c_void_p),
        ("stride", ctypes.c_int64),
        ("sorted_groups", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("lower", ctypes.c_double * 3),
        ("upper", ctypes.c_double * 3),
    ]


@func
def _wrapped_cell(x: scalars.float64, inv_w: scalars.float64, n: int, inv_n: scalars.float64) -> int:
    c = floor(x * inv_w)
    if not (c > scalars.float64(-1.0e9)):  # also catches NaN
        c = scalars.float64(-1.0e9)
    if c > scalars.float64(1.0e9):
        c = scalars.float64(1.0e9)
    # c mod n without an integer division (|c| <= 1e9 is exact in float64); rounding of c / n is fixed up below
    ci = int(c)
    m = ci - n * int(floor(c * inv_n))
    if m >= n:
        m = m - n
    if m < 0:
        m = m + n
    return m


@kernel(enable_backward=False)
def _hash_keys(points: array(dtype=Any), inv_w: scalars.float64, dims: vec3i, inv_dims: vec3d,
               packed: array(dtype=scalars.int64)):
    # sort key of point i: its cell (upper 32 bits) and i (lower 32 bits), so that one sort orders both
    i = tid()
    p = points[i]
    x = _wrapped_cell(scalars.float64(p[0]), inv_w, dims[0], inv_dims[0])
    y = _wrapped_cell(scalars.float64(p[1]), inv_w, dims[1], inv_dims[1])
    z = _wrapped_cell(scalars.float64(p[2]), inv_w, dims[2], inv_dims[2])
    key = (z * dims[1] + y) * dims[0] + x
    packed[i] = (scalars.int64(key) << scalars.int64(32)) | scalars.int64(i)


@kernel(enable_backward=False)
def _hash_clear(keys: array(dtype=int), cell_ranges: array(dtype=int)):
    k = keys[tid()]
    cell_ranges[2 * k] = 0
    cell_ranges[2 * k + 1] = 0


@func
def _key_of(packed: array(dtype=scalars.int64), i: int) -> int:
    return int(packed[i] >> scalars.int64(32))


@kernel(enable_backward=False)
def _hash_scatter(packed: array(dtype=scalars.int64), points: array(dtype=Any), sorted_keys: array(dtype=int),
                  point_ids: array(dtype=int), sorted_points: array(dtype=Any, ndim=2), cell_ranges: array(dtype=int)):
    i = tid()
    n = packed.shape[0]
    v = packed[i]
    k = int(v >> scalars.int64(32))
    src = int(v & scalars.int64(0xFFFFFFFF))
    sorted_keys[i] = k
    point_ids[i] = src
    p = points[src]
    sorted_points[0, i] = p[0]
    sorted_points[1, i] = p[1]
    sorted_points[2, i] = p[2]
    first = i == 0
    if not first:
        first = _key_of(packed, i - 1) != k
    if first:
        cell_ranges[2 * k] = i
    last = i == n - 1
    if not last:
        last = _key_of(packed, i + 1) != k
    if last:
        cell_ranges[2 * k + 1] = i + 1


@kernel(enable_backward=False)
def _hash_sort_kernel(packed: array(dtype=scalars.int64), scratch: array(dtype=scalars.int64), n: int, key_bits: int):
    _hash_sort(packed, scratch, n, key_bits)


@kernel(enable_backward=False)
def _hash_bounds_kernel(grid: scalars.uint64):
    _hash_bounds(grid)


@kernel(enable_backward=False)
def _hash_gather_groups(point_ids: array(dtype=int), groups: array(dtype=int), sorted_groups: array(dtype=int)):
    i = tid()
    sorted_groups[i] = groups[point_ids[i]]


def _flat_points(points: Any, vec: Any) -> Any:
    """A 1-d view (or contiguous copy) of a points array of any dimensionality."""
    if not isinstance(points, array):
        return array(np.asarray(points, dtype=vec._wp_scalar_type_._np_).reshape(-1, 3), dtype=vec)
    if points.ndim == 1:
        return points
    if not points.is_contiguous:
        points = points.contiguous()
    return points.reshape((points.size,))


class HashGrid:
    """A hash grid for neighbour queries among points (``hash_grid_query`` in kernels).

    Args:
        dim_x, dim_y, dim_z: number of cells along each axis; cell coordinates wrap around modulo these, so the
            grid covers unbounded space (points of aliased cells are candidates of each other).
        device: the device of the grid (and of the points it is built from).
        dtype: precision of the points: ``float16``, ``float32`` (default) or ``float64``.
    """

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device: Any = None, dtype: Any = None) -> None:
        dtype = scalars.float32 if dtype is None else scalars.scalar_from_python(dtype)
        if dtype not in _VEC:
            raise TypeError(f"HashGrid dtype must be float16, float32 or float64, got {getattr(dtype, '__name__', dtype)}")
        dims = (int(dim_x), int(dim_y), int(dim_z))
        if min(dims) <= 0:
            raise ValueError(f"HashGrid dimensions must be positive, got {dims}")
        if dims[0] * dims[1] * dims[2] > _MAX_CELLS:
            raise RuntimeError(f"HashGrid cell count exceeds supported limit ({dims[0]}x{dims[1]}x{dims[2]} > "
                               f"{_MAX_CELLS})")
        self.device = get_device(device)
        self.dtype = dtype
        self._dim_x, self._dim_y, self._dim_z = dims
        self._vec = _VEC[dtype]
        self._desc = HashGridDesc()
        self._desc.dim[:] = dims
        self._desc.dtype = _DTYPE_CODE[dtype]
        # where the device's kernels read it (a device allocation on CUDA); the bounds are written by device code
        self._mirror = DescriptorMirror(self._desc, self.device, device_fields=("lower", "upper"))
        self.id = self._mirror.id
        self.reserved = False
        self.groups: array | None = None
        self._capacity = 0
        self._group_capacity = 0
        self._num_cells = dims[0] * dims[1] * dims[2]
        self._cell_ranges: array | None = None
        self._sorted_keys: array | None = None
        self._sorted_groups: array | None = None
        self._prev_count = 0
        self._host_sort = HostSort()  # a CUDA grid's sort outside graph capture (host_build.py)

    # Buffers ----------------------------------------------------------------------------------------------------
    def reserve(self, num_points: int, with_groups: bool = False) -> None:
        """Allocate buffers for ``num_points`` points (builds also grow them as needed)."""
        n = max(int(num_points), 1)
        grow = self._cell_ranges is None or n > self._capacity or (with_groups and n > self._group_capacity)
        if grow and capturing():
            raise NotImplementedError("HashGrid.reserve() during graph capture is not supported: reserve before capture")
        self._grow(n, with_groups)

    def _grow(self, n: int, with_groups: bool) -> None:
        # (a build under graph capture may allocate: the buffers exist before the graph first runs)
        before = (self._cell_ranges is None, self._capacity)
        if self._cell_ranges is None:
            self._cell_ranges = zeros(2 * self._num_cells, dtype=scalars.int32, device=self.device)
            self._desc.cell_ranges = self._cell_ranges.ptr
        if n > self._capacity:
            self._packed = empty(n, dtype=scalars.int64, device=self.device)
            self._scratch = empty(n, dtype=scalars.int64, device=self.device)
            old_keys = self._sorted_keys
            self._sorted_keys = zeros(n, dtype=scalars.int32, device=self.device)
            if old_keys is not None and self._prev_count:
                # the previous build's cells must still be cleared by the next build
                copy(self._sorted_keys, old_keys, count=self._prev_count)
            self._point_ids = zeros(n, dtype=scalars.int32, device=self.device)
            # padded: the native filter reads whole batches of 32 (see hashgrid.h)
            self._sorted_points = zeros((3, n + 32), dtype=self.dtype, device=self.device)
            self._capacity = n
            self._desc.point_ids = self._point_ids.ptr
            self._desc.sorted_points = self._sorted_points.ptr
            self._desc.stride = n + 32
        if with_groups and n > self._group_capacity:
            self._sorted_groups = zeros(n, dtype=scalars.int32, device=self.device)
            self._group_capacity = n
        self.reserved = True
        self._desc.reserved = self._capacity
        if before != (self._cell_ranges is None, self._capacity):
            self._mirror.push("cell_ranges", "point_ids", "sorted_points", "stride", "reserved")

    # Build ------------------------------------------------------------------------------------------------------
    def build(self, points: Any, radius: float, groups: Any = None) -> None:
        """Bin ``points`` (an array of vec3 in the grid's precision) into cells of width ``radius``.

        Any query radius works; the build radius sets the cell size, and queries are fastest with radii up to it.
        ``groups`` (int32 per point) enables group-restricted queries (``hash_grid_query(id, p, r, group)``).
        A build is kernel launches only, so it can be captured in a graph (with the same point count each replay).
        """
        if capturing_saveable():
            raise NotImplementedError("HashGrid serialization is not yet supported: HashGrid.build() cannot be "
                                      "recorded in a saveable (apic=True) graph capture")
        radius = float(radius)
        if not radius > 0.0:
            raise ValueError(f"HashGrid.build() radius must be positive, got {radius}")
        if isinstance(points, array) and points.dtype is not self._vec:
            raise TypeError(f"HashGrid with dtype {self.dtype.__name__} expects points of type {self._vec.__name__}, "
                            f"got {getattr(points.dtype, '__name__', points.dtype)}")
        pts = _flat_points(points, self._vec)
        n = pts.shape[0]
        grp = None
        if groups is not None:
            grp = _flat_points_int(groups)
            if grp.shape[0] != n:
                raise ValueError(f"HashGrid.build(): {grp.shape[0]} groups for {n} points")
        self._grow(max(n, 1), grp is not None)
        desc, dev = self._desc, self.device
        # Clear the cells of the previous build: its keys are the first entries of sorted_keys (zeros before any
        # build). Clearing max(previous, current) entries also covers replays of a captured build, whose previous
        # run is the last replay (same count), not the build that ran at capture time.
        clear = max(self._prev_count, n)
        if clear:
            launch(_hash_clear, dim=clear, inputs=[self._sorted_keys, self._cell_ranges], device=dev,
                   record_tape=False)
        desc.cell_width = radius
        desc.inv_cell_width = 1.0 / radius
        desc.num_points = n
        desc.sorted_groups = self._sorted_groups.ptr if grp is not None else None
        self.groups = grp
        self._mirror.push("cell_width", "inv_cell_width", "num_points", "sorted_groups")
        self._points_ref = pts
        self._prev_count = n
        if n == 0:
            return
        packed = self._packed[:n] if self._capacity > n else self._packed
        dims = (self._dim_x, self._dim_y, self._dim_z)
        launch(_hash_keys, dim=n, inputs=[pts, 1.0 / radius, vec3i(*dims), vec3d(*(1.0 / d for d in dims)), packed],
               device=dev, record_tape=False)
        key_bits = max(1, (self._num_cells - 1).bit_length())
        on_host = host_builds(dev)
        if on_host:
            self._host_sort(_hash_sort_kernel, packed, n, key_bits)
        else:
            launch(_hash_sort_kernel, dim=1, inputs=[packed, self._scratch, n, key_bits], device=dev,
                   record_tape=False)
        launch(_hash_scatter, dim=n, inputs=[packed, pts, self._sorted_keys, self._point_ids, self._sorted_points,
                                             self._cell_ranges], device=dev, record_tape=False)
        if grp is not None:
            launch(_hash_gather_groups, dim=n, inputs=[self._point_ids, grp, self._sorted_groups], device=dev,
                   record_tape=False)
        if on_host:
            self._host_bounds(pts)
        else:
            launch(_hash_bounds_kernel, dim=1, inputs=[self.id], device=dev, record_tape=False)

    def _host_bounds(self, pts: array) -> None:
        """The points' bounding box computed on the host (as ``hash_grid_bounds_serial``: non-finite: unbounded)."""
        x = pts.numpy().reshape(-1, 3)  # min/max in the points' own precision: exact in float64 afterwards
        finite = np.isfinite(x).all(axis=0)
        lo = np.where(finite, x.min(axis=0).astype(np.float64), -1.0e308)
        hi = np.where(finite, x.max(axis=0).astype(np.float64), 1.0e308)
        for a in range(3):
            self._desc.lower[a], self._desc.upper[a] = float(lo[a]), float(hi[a])
        self._mirror.push("lower", "upper", device_written=True)

    def __del__(self) -> None:
        """Nothing native to release: the buffers are arrays owned by this object."""


def _flat_points_int(groups: Any) -> array:
    if not isinstance(groups, array):
        return array(np.asarray(groups, dtype=np.int32).reshape(-1), dtype=scalars.int32)
    if groups.ndim != 1:
        groups = groups.contiguous().reshape((groups.size,))
    return groups
