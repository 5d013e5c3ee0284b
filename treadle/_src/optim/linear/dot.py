"""Dot products for the iterative solvers, one per subproblem of a batched system: :class:`TiledDot`.

The scalar degrees of freedom of each subproblem (``batch_offsets[i]:batch_offsets[i + 1]``; one subproblem
covering everything when there are no offsets) are cut into tiles of ``tile_size`` that never straddle two
subproblems. A first kernel sums each tile (in float64, in element order, tiles in parallel), a second sums each
subproblem's tiles in order: the result does not depend on the thread count. Vectors of vectors are read as flat
arrays of scalars. ``_create_segmented_tiled_dot_kernels`` gives the tile-planning kernel and the two reduction
kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

from ...utils.common import MIN_CHUNK, SERIAL_THRESHOLD

#: Scalar degrees of freedom per tile.
TILE_SIZE = 2048


@wp.kernel(enable_backward=False)
def _tile_partials(a: wp.array(dtype=Any), b: wp.array(dtype=Any), tile_start: wp.array(dtype=int),
                   tile_end: wp.array(dtype=int), ntiles: int, spread: int, out: wp.array(dtype=wp.float64)):
    t = wp.tid()
    if t % spread != 0:
        return
    k = t / spread
    if k >= ntiles:
        return
    s = wp.float64(0.0)
    for i in range(tile_start[k], tile_end[k]):
        s += wp.float64(a[i]) * wp.float64(b[i])
    out[k] = s


@wp.kernel(enable_backward=False)
def _segment_sums(partials: wp.array(dtype=wp.float64), seg_tiles: wp.array(dtype=int),
                  out: wp.array(dtype=wp.float64)):
    g = wp.tid()
    s = wp.float64(0.0)
    for k in range(seg_tiles[g], seg_tiles[g + 1]):
        s += partials[k]
    out[g] = s


def _create_segmented_tiled_dot_kernels(tile_size: int) -> tuple[Any, Any, Any]:
    """The kernels of a segmented dot product: ``(plan_offsets, tile_partials, segment_sums)``.

    Tiles hold ``tile_size`` scalars. ``plan_offsets(offsets, out)`` writes, for segment bounds ``offsets``, the index of each segment's first tile
    (each segment takes ``max(1, ceil(length / tile_size))`` tiles); ``tile_partials`` sums the products of each tile
    and ``segment_sums`` the tiles of each segment.
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
    """A contiguous 1-d array of vectors or scalars seen as a flat array of its scalars."""
    if a.ndim != 1:
        raise ValueError(f"expected a one-dimensional array, got shape {a.shape}")
    if not wp.types.type_is_vector(a.dtype):
        return a
    if not a.is_contiguous:
        raise ValueError("the solvers need contiguous vectors")
    length = int(a.dtype._length_)
    return wp.array(ptr=a.ptr, shape=(a.shape[0] * length,), dtype=wp.types.type_scalar_type(a.dtype),
                    device=a.device)


class TiledDot:
    """Per-subproblem dot products of vectors of ``length`` scalars (see the module description).

    Args:
        length: number of scalar degrees of freedom of the vectors.
        dtype: scalar type of the vectors.
        device: device of the vectors.
        batch_offsets: int32 array of ``B + 1`` subproblem bounds in scalar degrees of freedom (degrees of freedom
            past the last bound are ignored), or ``None`` for one subproblem covering everything.
        max_batch_length: accepted for compatibility (the tiles are planned from the offsets).
        tile_size: scalar degrees of freedom per tile.
    """

    def __init__(self, length: int, dtype: Any, device: Any = None, batch_offsets: Any = None,
                 max_batch_length: int | None = None, tile_size: int = TILE_SIZE) -> None:
        self.length = int(length)
        self.dtype = dtype
        self.device = wp.get_device(device)
        self.tile_size = int(tile_size)
        self.max_batch_length = max_batch_length
        if batch_offsets is None:
            bounds = np.array([0, self.length], dtype=np.int64)
        else:
            bounds = batch_offsets.numpy().astype(np.int64)
        bounds = np.clip(bounds, 0, self.length)
        self.batch_count = len(bounds) - 1
        starts, ends, seg = [], [], [0]
        for i in range(self.batch_count):
            lo, hi = int(bounds[i]), int(max(bounds[i + 1], bounds[i]))
            cuts = list(range(lo, hi, self.tile_size)) or [lo]
            for c in cuts:
                starts.append(c)
                ends.append(min(c + self.tile_size, hi))
            seg.append(len(starts))
        self.ntiles = len(starts)
        d = self.device
        self._tile_start = wp.array(np.array(starts, dtype=np.int32), dtype=int, device=d)
        self._tile_end = wp.array(np.array(ends, dtype=np.int32), dtype=int, device=d)
        self._seg_tiles = wp.array(np.array(seg, dtype=np.int32), dtype=int, device=d)
        self._partials = wp.empty(max(self.ntiles, 1), dtype=wp.float64, device=d)
        self._result = wp.zeros(max(self.batch_count, 1), dtype=wp.float64, device=d)
        self._spread = 1
        if self.ntiles > 1 and self.ntiles < SERIAL_THRESHOLD:
            self._spread = max(MIN_CHUNK, -(-SERIAL_THRESHOLD // self.ntiles))
        #: tile bounds of each level of the reduction (the first level's segments are the subproblems)
        self.segmented_offsets = [self._seg_tiles]

    def compute(self, a: Any, b: Any, out: Any = None) -> Any:
        """The dot product of ``a`` and ``b`` for every subproblem, written to ``out`` and returned.

        ``out`` is a float64 array of ``B`` entries, the object's own result array when ``None`` (see :meth:`col`).
        """
        out = self._result if out is None else out
        fa, fb = flat_scalars(a), flat_scalars(b)
        if self.batch_count == 0:
            return out
        wp.launch(_tile_partials, self.ntiles * self._spread, device=self.device,
                  inputs=[fa, fb, self._tile_start, self._tile_end, self.ntiles, self._spread, self._partials])
        wp.launch(_segment_sums, self.batch_count, inputs=[self._partials, self._seg_tiles, out], device=self.device)
        return out

    def col(self) -> Any:
        """The results of the last :meth:`compute` without an ``out`` array (one float64 per subproblem)."""
        return self._result
