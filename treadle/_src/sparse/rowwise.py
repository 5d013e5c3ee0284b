"""Row-by-row sparse products on the CPU (Gustavson's algorithm), for ``bsr_mm`` results that need no gradient.

The rows of the product are cut into a few chunks (two per CPU thread), each with a marker and a position array as
long as a row of the result: a first pass counts each row's distinct columns (a column is new for row ``i`` when
its marker is not ``i``), a scan gives the offsets, and a second pass lists each row's columns, sorts them (short
lists, insertion sort), notes each column's slot, and accumulates every product ``x[i, k] y[k, j]`` (then
``beta z[i, j]``) into its slot, in the order of ``x``'s row and ``y``'s rows: results are reproducible. Nothing is
sorted but the distinct columns, and no entry list is materialised, which makes this several times faster than the
expand-sort-merge path of :mod:`.products` on a CPU; that path stays in use where gradients or a GPU need it.

(No ``from __future__ import annotations`` here: the kernels built in ``_fill_kernel`` annotate their parameters
with the factory's local block types, which string annotations could not see.)
"""

import functools
from typing import Any

import treadle as wp

from ..utils.common import SERIAL_THRESHOLD, num_threads
from .matrix import BsrMatrix, block_key, no_tape, read_int, row_end_args, scalar_of
from .products import _row_range, block_product
from .topology import _dummy


@wp.kernel(enable_backward=False)
def _count_rows(x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int), x_has: int,
                x_columns: wp.array(dtype=int), y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int),
                y_has: int, y_columns: wp.array(dtype=int), z_offsets: wp.array(dtype=int),
                z_counts: wp.array(dtype=int), z_has: int, z_columns: wp.array(dtype=int), use_z: int, nrow: int,
                ncol: int, chunk: int, nchunks: int, spread: int, marker: wp.array(dtype=int),
                row_nnz: wp.array(dtype=int)):
    t = wp.tid()
    if t % spread != 0:
        return
    c = t / spread
    if c >= nchunks:
        return
    base = c * ncol
    for i in range(c * chunk, wp.min((c + 1) * chunk, nrow)):
        n = 0
        xr = _row_range(x_offsets, x_counts, x_has, i)
        for a in range(xr[0], xr[1]):
            yr = _row_range(y_offsets, y_counts, y_has, x_columns[a])
            for b in range(yr[0], yr[1]):
                j = y_columns[b]
                if marker[base + j] != i:
                    marker[base + j] = i
                    n += 1
        if use_z != 0:
            zr = _row_range(z_offsets, z_counts, z_has, i)
            for b in range(zr[0], zr[1]):
                j = z_columns[b]
                if marker[base + j] != i:
                    marker[base + j] = i
                    n += 1
        row_nnz[i] = n
    if c == nchunks - 1:
        row_nnz[nrow] = 0


@functools.cache
def _fill_kernel(key: tuple[Any, ...], x_type: Any, y_type: Any, z_type: Any) -> Any:
    scalar = scalar_of(z_type)
    prod = block_product(x_type, y_type, z_type)

    @wp.kernel(enable_backward=False)
    def fill_rows(x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int), x_has: int,
                  x_columns: wp.array(dtype=int), x_values: wp.array(dtype=x_type), y_offsets: wp.array(dtype=int),
                  y_counts: wp.array(dtype=int), y_has: int, y_columns: wp.array(dtype=int),
                  y_values: wp.array(dtype=y_type), z_offsets: wp.array(dtype=int), z_counts: wp.array(dtype=int),
                  z_has: int, z_columns: wp.array(dtype=int), z_values: wp.array(dtype=z_type), use_z: int,
                  alpha: scalar, beta: scalar, nrow: int, ncol: int, chunk: int, nchunks: int, spread: int,
                  marker: wp.array(dtype=int), slot: wp.array(dtype=int), offsets: wp.array(dtype=int),
                  columns: wp.array(dtype=int), values: wp.array(dtype=z_type)):
        t = wp.tid()
        if t % spread != 0:
            return
        c = t / spread
        if c >= nchunks:
            return
        base = c * ncol
        for i in range(c * chunk, wp.min((c + 1) * chunk, nrow)):
            stamp = i
            beg = offsets[i]
            n = 0
            xr = _row_range(x_offsets, x_counts, x_has, i)
            for a in range(xr[0], xr[1]):
                yr = _row_range(y_offsets, y_counts, y_has, x_columns[a])
                for b in range(yr[0], yr[1]):
                    j = y_columns[b]
                    if marker[base + j] != stamp:
                        marker[base + j] = stamp
                        columns[beg + n] = j
                        n += 1
            if use_z != 0:
                zr = _row_range(z_offsets, z_counts, z_has, i)
                for b in range(zr[0], zr[1]):
                    j = z_columns[b]
                    if marker[base + j] != stamp:
                        marker[base + j] = stamp
                        columns[beg + n] = j
                        n += 1
            # sort the row's columns, note their slots, zero the blocks
            for p in range(beg + 1, beg + n):
                v = columns[p]
                q = p - 1
                while q >= beg:
                    if columns[q] <= v:
                        break
                    columns[q + 1] = columns[q]
                    q -= 1
                columns[q + 1] = v
            for p in range(beg, beg + n):
                slot[base + columns[p]] = p
                values[p] = z_type(0.0)
            for a in range(xr[0], xr[1]):
                yr = _row_range(y_offsets, y_counts, y_has, x_columns[a])
                xa = x_values[a]
                for b in range(yr[0], yr[1]):
                    p = slot[base + y_columns[b]]
                    values[p] = values[p] + alpha * prod(xa, y_values[b])
            if use_z != 0:
                zr = _row_range(z_offsets, z_counts, z_has, i)
                for b in range(zr[0], zr[1]):
                    p = slot[base + z_columns[b]]
                    values[p] = values[p] + beta * z_values[b]

    return fill_rows


class RowwisePlan:
    """The chunking of a row-wise product, its scratch arrays and its offsets (kept for ``reuse_topology``)."""

    def __init__(self, nrow: int, ncol: int, device: Any) -> None:
        self.nrow, self.ncol = nrow, ncol
        self.chunks = max(1, min(2 * num_threads(), nrow))
        self.chunk = -(-max(nrow, 1) // self.chunks)
        self.chunks = -(-max(nrow, 1) // self.chunk)
        self.spread = max(1, -(-SERIAL_THRESHOLD // self.chunks)) if self.chunks > 1 else 1
        self.marker = wp.empty(self.chunks * max(ncol, 1), dtype=int, device=device)
        self.slot = wp.empty(self.chunks * max(ncol, 1), dtype=int, device=device)
        self.offsets: Any = None
        self.nnz = 0

    def args(self) -> list[Any]:
        """Chunking arguments of the kernels."""
        return [self.nrow, self.ncol, self.chunk, self.chunks, self.spread]


def rowwise_product(x: BsrMatrix, y: BsrMatrix, z: BsrMatrix, alpha: float, beta: float,
                    plan: "RowwisePlan | None") -> "RowwisePlan":
    """``z := alpha x y + beta z`` (compact) by rows; ``plan`` from an earlier call skips the counting pass."""
    device = x.device
    nrow, ncol = x.nrow, y.ncol
    use_z = float(beta) != 0.0
    d = _dummy(device)
    xc, xh = row_end_args(x)
    yc, yh = row_end_args(y)
    zc, zh = row_end_args(z)
    xc, yc, zc = (xc if xh else d), (yc if yh else d), (zc if zh else d)
    operands = [x.offsets, xc, xh, x.columns, y.offsets, yc, yh, y.columns, z.offsets, zc, zh, z.columns]
    if plan is None or (plan.nrow, plan.ncol) != (nrow, ncol) or plan.offsets is None:
        plan = RowwisePlan(nrow, ncol, device)
        row_nnz = wp.empty(nrow + 1, dtype=int, device=device)
        offsets = wp.empty(nrow + 1, dtype=int, device=device)
        with no_tape():
            plan.marker.fill_(-1)
            wp.launch(_count_rows, plan.chunks * plan.spread, device=device,
                      inputs=[*operands, int(use_z), *plan.args(), plan.marker, row_nnz])
            wp.utils.array_scan(row_nnz, offsets, inclusive=False)
        plan.offsets = offsets
        plan.nnz = read_int(offsets, nrow, "bsr_mm() (sizing the product)")
    xt, yt, zt = x.values.dtype, y.values.dtype, z.values.dtype
    kernel = _fill_kernel((block_key(xt), block_key(yt), block_key(zt)), xt, yt, zt)
    columns = wp.empty(max(plan.nnz, 1), dtype=int, device=device)
    values = wp.empty(max(plan.nnz, 1), dtype=zt, device=device)
    scalar = scalar_of(zt)
    with no_tape():
        plan.marker.fill_(-1)
        wp.launch(kernel, plan.chunks * plan.spread, device=device,
                  inputs=[x.offsets, xc, xh, x.columns, x.values, y.offsets, yc, yh, y.columns, y.values, z.offsets,
                          zc, zh, z.columns, z.values, int(use_z), scalar(alpha), scalar(beta), *plan.args(),
                          plan.marker, plan.slot, plan.offsets, columns, values])
    offsets = wp.clone(plan.offsets)
    z.offsets, z.columns, z.values = offsets, columns, values
    z.row_counts = None
    z.ncol = ncol
    z.nnz = plan.nnz
    return plan
