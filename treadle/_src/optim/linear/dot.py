"""Tiles of the solvers' vectors and their dot products, one per subproblem: :class:`TiledDot`.

The scalar degrees of freedom of each subproblem (``batch_offsets[i]:batch_offsets[i + 1]``; one subproblem covering
everything when there are no offsets) are cut into tiles that never straddle two subproblems. Every vector kernel
of the solvers runs one thread per tile: the tile's coefficients (``alpha``, ``beta``... of its subproblem) are read
once, and the element loop then vectorizes (a coefficient read from an array at every element would not: the
compiler cannot prove that the stores do not change it). Dot products sum each tile's products in float64 with
compensated (Neumaier) summation, in element order, then each subproblem's tiles in order: results do not depend on
the thread count, and are nearly those of an exact sum of the products, which keeps the Krylov recurrences of
ill-conditioned systems on track. Vectors of vectors are read as flat arrays of scalars. Degrees of freedom past the last bound belong to no
tile and are never touched.

``_create_segmented_tiled_dot_kernels`` gives the tile-planning kernel and the two reduction kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

from ...utils.common import SERIAL_THRESHOLD

#: Tile sizes are powers of two between these bounds, chosen so that a vector has about ``_TILES`` tiles.
_MIN_TILE = 64
_MAX_TILE = 4096
_TILES = 4096


@wp.func
def tile_index(t: int, spread: int, ntiles: int) -> int:
    """The tile of launch thread ``t`` (-1 for the padding threads of a spread launch)."""
    if t % spread != 0:
        return -1
    k = t / spread
    if k >= ntiles:
        return -1
    return k


@wp.func
def add_compensated(acc: wp.vec2d, v: wp.float64) -> wp.vec2d:
    """``acc + v`` in compensated (Neumaier) summation: ``acc[0]`` the running sum, ``acc[1]`` its rounding error."""
    s = acc[0]
    t = s + v
    err = wp.where(wp.abs(s) >= wp.abs(v), (s - t) + v, (v - t) + s)
    return wp.vec2d(t, acc[1] + err)


@wp.kernel(enable_backward=False)
def _tile_partials(a: wp.array(dtype=Any), b: wp.array(dtype=Any), tile_start: wp.array(dtype=int),
                   tile_end: wp.array(dtype=int), ntiles: int, spread: int, out: wp.array(dtype=wp.float64)):
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    acc = wp.vec2d(0.0, 0.0)
    for i in range(tile_start[k], tile_end[k]):
        acc = add_compensated(acc, wp.float64(a[i]) * wp.float64(b[i]))
    out[k] = acc[0] + acc[1]


@wp.kernel(enable_backward=False)
def _segment_sums(partials: wp.array(dtype=wp.float64), seg_tiles: wp.array(dtype=int),
                  out: wp.array(dtype=wp.float64), copy: wp.array(dtype=wp.float64), has_copy: int):
    g = wp.tid()
    acc = wp.vec2d(0.0, 0.0)
    for k in range(seg_tiles[g], seg_tiles[g + 1]):
        acc = add_compensated(acc, partials[k])
    s = acc[0] + acc[1]
    out[g] = s
    if has_copy != 0:
        copy[g] = s


def _create_segmented_tiled_dot_kernels(tile_size: int) -> tuple[Any, Any, Any]:
    """The kernels of a segmented dot product: ``(plan_offsets, tile_partials, segment_sums)``.

    Tiles hold ``tile_size`` scalars. ``plan_offsets(offsets, out)`` writes, for segment bounds ``offsets``, the index
    of each segment's first tile (a segment takes ``max(1, ceil(length / tile_size))`` tiles); ``tile_partials`` sums
    the products of each tile and ``segment_sums`` the tiles of each segment.
    """
    tile_size = int(tile_size)

    @wp.kernel(enable_backward=False)
    def plan_offsets(offsets: wp.array(dtype=int), out: wp.array(dtype=int)):
        if wp.tid() != 0:
            return
        n = offsets.shape[0]
        total = wp.int64(0)
        out[0] = 0
        for i in range(n - 1):
            length = wp.int64(wp.max(offsets[i + 1] - offsets[i], 0))
            tiles = (length + wp.int64(tile_size - 1)) / wp.int64(tile_size)
            total += wp.max(tiles, wp.int64(1))
            out[i + 1] = int(total)

    return plan_offsets, _tile_partials, _segment_sums


def flat_scalars(a: Any) -> Any:
    """A contiguous 1-d array of vectors or scalars seen as a flat array of its scalars (a view)."""
    if a.ndim != 1:
        raise ValueError(f"expected a one-dimensional array, got shape {a.shape}")
    if not wp.types.type_is_vector(a.dtype):
        return a
    if not a.is_contiguous:
        raise ValueError("the solvers need contiguous vectors")
    return a.view(wp.types.type_scalar_type(a.dtype)).flatten()


def default_tile_size(n: int) -> int:
    """A power-of-two tile size giving a vector of ``n`` scalars about ``_TILES`` tiles."""
    t = _MIN_TILE
    while t < _MAX_TILE and t * _TILES < n:
        t *= 2
    return t


class TiledDot:
    """The tiles of the solvers' vectors and per-subproblem dot products (see the module description).

    Args:
        length: number of scalar degrees of freedom of the vectors.
        dtype: scalar type of the vectors.
        device: device of the vectors.
        batch_offsets: int32 array of ``B + 1`` subproblem bounds in scalar degrees of freedom (degrees of freedom
            past the last bound are ignored), or ``None`` for one subproblem covering everything. Read once, here.
        max_batch_length: accepted for compatibility (the tiles are planned from the offsets).
        tile_size: scalar degrees of freedom per tile (default: from ``length``).
    """

    def __init__(self, length: int, dtype: Any, device: Any = None, batch_offsets: Any = None,
                 max_batch_length: int | None = None, tile_size: int | None = None) -> None:
        self.length = int(length)
        self.dtype = dtype
        self.device = wp.get_device(device)
        self.tile_size = int(tile_size) if tile_size else default_tile_size(self.length)
        self.max_batch_length = max_batch_length
        if batch_offsets is None:
            bounds = np.array([0, self.length], dtype=np.int64)
        else:
            bounds = batch_offsets.numpy().astype(np.int64)
        bounds = np.clip(bounds, 0, self.length)
        self.batch_count = len(bounds) - 1
        starts, ends, batch, seg = [], [], [], [0]
        for i in range(self.batch_count):
            lo, hi = int(bounds[i]), int(max(bounds[i + 1], bounds[i]))
            cuts = list(range(lo, hi, self.tile_size)) or [lo]
            for c in cuts:
                starts.append(c)
                ends.append(min(c + self.tile_size, hi))
                batch.append(i)
            seg.append(len(starts))
        self.ntiles = len(starts)
        d = self.device
        self.tile_start = wp.array(np.array(starts, dtype=np.int32), dtype=int, device=d)
        self.tile_end = wp.array(np.array(ends, dtype=np.int32), dtype=int, device=d)
        self.tile_batch = wp.array(np.array(batch, dtype=np.int32), dtype=int, device=d)
        self.seg_tiles = wp.array(np.array(seg, dtype=np.int32), dtype=int, device=d)
        self.partials = wp.empty(max(self.ntiles, 1), dtype=wp.float64, device=d)
        self.partials2 = wp.empty(max(self.ntiles, 1), dtype=wp.float64, device=d)
        self._result = wp.zeros(max(self.batch_count, 1), dtype=wp.float64, device=d)
        # few tiles: pad the launch with idle threads so that it still runs on the pool (launches of fewer than
        # SERIAL_THRESHOLD threads run on the calling thread)
        self.spread = 1
        if 1 < self.ntiles < SERIAL_THRESHOLD:
            self.spread = -(-SERIAL_THRESHOLD // self.ntiles)
        #: first tile of each subproblem (the bounds of the reduction's second level)
        self.segmented_offsets = [self.seg_tiles]

    @property
    def launch_dim(self) -> int:
        """Threads of a launch over the tiles (padded so that the tiles spread over the CPU threads)."""
        return self.ntiles * self.spread

    def tile_args(self) -> list[Any]:
        """The trailing arguments of a tile kernel: tile bounds, subproblem of each tile, count, spread."""
        return [self.tile_start, self.tile_end, self.tile_batch, self.ntiles, self.spread]

    def sum_partials(self, partials: Any, out: Any, copy: Any = None) -> None:
        """``out[g]`` (and ``copy[g]``) = the sum of subproblem ``g``'s tile partials."""
        if self.batch_count > 0:
            wp.launch(_segment_sums, self.batch_count, device=self.device,
                      inputs=[partials, self.seg_tiles, out, copy if copy is not None else out, int(copy is not None)])

    def compute(self, a: Any, b: Any, out: Any = None, copy: Any = None) -> Any:
        """The dot product of ``a`` and ``b`` for every subproblem, written to ``out`` and returned.

        ``out`` is a float64 array of ``B`` entries, the object's own result array when ``None`` (see :meth:`col`);
        ``copy``, when given, receives the same values.
        """
        out = self._result if out is None else out
        fa, fb = flat_scalars(a), flat_scalars(b)
        if self.batch_count == 0 or self.ntiles == 0:
            return out
        wp.launch(_tile_partials, self.launch_dim, device=self.device,
                  inputs=[fa, fb, self.tile_start, self.tile_end, self.ntiles, self.spread, self.partials])
        self.sum_partials(self.partials, out, copy)
        return out

    def col(self) -> Any:
        """The results of the last :meth:`compute` without an ``out`` array (one float64 per subproblem)."""
        return self._result
