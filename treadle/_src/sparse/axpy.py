"""Sums of matrices: ``bsr_axpy`` (``y := alpha * x + beta * y``) and ``bsr_scale``.

The sum's topology is the union of the operands': row ``r`` lists ``x``'s blocks then ``y``'s, merged by
:mod:`.topology`, and one thread per block adds the scaled contributions. With ``topology="masked"`` only ``y``'s
blocks are updated, in place.
"""

from __future__ import annotations

from typing import Any, Literal

import treadle as wp

from .assemble import assemble
from .diag import scale
from .expressions import as_operand
from .gather import gather_pair
from .matrix import (
    BsrError,
    BsrMatrix,
    BsrTypeError,
    check_devices,
    check_topology,
    new_matrix,
    no_tape,
    overlaps,
    row_end_args,
    scalar_of,
    type_name,
)
from .topology import Entries, Runs, _dummy


@wp.kernel(enable_backward=False)
def _sum_counts(x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int), x_has: int,
                y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int), y_has: int, nrow: int,
                counts: wp.array(dtype=int)):
    r = wp.tid()
    if r >= nrow:
        counts[r] = 0
        return
    nx = x_offsets[r + 1] - x_offsets[r]
    if x_has != 0:
        nx = x_counts[r]
    ny = y_offsets[r + 1] - y_offsets[r]
    if y_has != 0:
        ny = y_counts[r]
    counts[r] = nx + ny


@wp.kernel(enable_backward=False)
def _sum_fill(x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int), x_has: int,
              x_columns: wp.array(dtype=int), y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int),
              y_has: int, y_columns: wp.array(dtype=int), seg_beg: wp.array(dtype=int), cols: wp.array(dtype=int),
              srcs: wp.array(dtype=int), a_slot: wp.array(dtype=int), b_slot: wp.array(dtype=int)):
    r = wp.tid()
    p = seg_beg[r]
    xb = x_offsets[r]
    xe = x_offsets[r + 1]
    if x_has != 0:
        xe = xb + x_counts[r]
    for k in range(xb, xe):
        cols[p] = x_columns[k]
        srcs[p] = p
        a_slot[p] = k
        b_slot[p] = -1
        p += 1
    yb = y_offsets[r]
    ye = y_offsets[r + 1]
    if y_has != 0:
        ye = yb + y_counts[r]
    for k in range(yb, ye):
        cols[p] = y_columns[k]
        srcs[p] = p
        a_slot[p] = -1
        b_slot[p] = k
        p += 1


@wp.kernel
def _masked_axpy(y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int), y_has: int,
                 y_columns: wp.array(dtype=int), x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int),
                 x_has: int, x_columns: wp.array(dtype=int), x: wp.array(dtype=Any), alpha: Any,
                 y_old: wp.array(dtype=Any), beta: Any, read_y: int, out: wp.array(dtype=Any)):
    r = wp.tid()
    yb = y_offsets[r]
    ye = y_offsets[r + 1]
    if y_has != 0:
        ye = yb + y_counts[r]
    xb = x_offsets[r]
    xe = x_offsets[r + 1]
    if x_has != 0:
        xe = xb + x_counts[r]
    for b in range(yb, ye):
        c = y_columns[b]
        acc = out.dtype(0.0)
        for k in range(xb, xe):
            if x_columns[k] == c:
                acc += x[k]
        if read_y != 0:
            out[b] = alpha * acc + beta * y_old[b]
        else:
            out[b] = alpha * acc


class bsr_axpy_work_arrays:  # noqa: N801 - the reference's name
    """Reusable temporary storage of :func:`bsr_axpy` (pass the same instance to successive sums)."""

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, device: Any) -> None:
        self._device = device
        self._arrays: dict[str, Any] = {}

    def _buffer(self, name: str, size: int, device: Any) -> Any:
        cur = self._arrays.get(name)
        if cur is None or cur.shape[0] < size or cur.device != device:
            cur = wp.empty(max(size, 1), dtype=int, device=device)
            self._arrays[name] = cur
        return cur


def bsr_axpy(x: Any, y: BsrMatrix | None = None, alpha: float = 1.0, beta: float = 1.0,
             work_arrays: bsr_axpy_work_arrays | None = None,
             topology: Literal["compact", "masked", "padded"] | None = None) -> BsrMatrix:
    """Sparse matrix sum ``y := alpha * x + beta * y``; return ``y``.

    The result's topology is the union of both operands' (compact and padded forms). ``x`` and ``y`` may be the same
    matrix.

    Args:
        x: read-only operand (a matrix or matrix expression; its scale is folded into ``alpha``).
        y: the result, updated in place; allocated (and taken as zero) when ``None``.
        alpha: factor of ``x``; when 0, ``x``'s values are not read.
        beta: factor of ``y``; when 0, ``y``'s values are not read.
        work_arrays: a :class:`bsr_axpy_work_arrays` whose storage is reused between calls.
        topology: ``"compact"`` (default), ``"masked"`` (keep ``y``'s blocks: ``x``'s blocks elsewhere are dropped)
            or ``"padded"`` (write the union into ``y``'s row capacity).

    Returns:
        ``y``.
    """
    fn = "bsr_axpy"
    xm, xs = as_operand(x, fn, "x")
    alpha = alpha * xs
    topology = check_topology("compact" if topology is None else topology, ("compact", "masked", "padded"), fn)
    if y is None:
        y = new_matrix(xm.nrow, xm.ncol, xm.values.dtype, xm.device, requires_grad=xm.requires_grad)
        beta = 0.0
        if topology != "compact":
            raise BsrError(f"{fn}(): topology={topology!r} needs an existing y")
    if not isinstance(y, BsrMatrix):
        raise BsrTypeError(f"{fn}(): y must be a BsrMatrix, got {type(y).__name__}")
    if (xm.nrow, xm.ncol) != (y.nrow, y.ncol):
        raise BsrError(f"Matrices must have the same number of rows and columns, got {xm.nrow} x {xm.ncol} and "
                       f"{y.nrow} x {y.ncol} blocks")
    if not wp.types.types_equal(xm.values.dtype, y.values.dtype):
        raise BsrError(f"Matrices must have the same block type, got ({xm.block_shape}, "
                       f"{type_name(scalar_of(xm.values.dtype))}) and ({y.block_shape}, "
                       f"{type_name(scalar_of(y.values.dtype))})")
    device = check_devices(fn, x=xm.values, y=y.values)
    scalar = scalar_of(y.values.dtype)
    read_y = float(beta) != 0.0
    xc, xh = row_end_args(xm)
    yc, yh = row_end_args(y)
    d = _dummy(device)
    xc, yc = (xc if xh else d), (yc if yh else d)

    if topology == "masked":
        out = y.values
        if overlaps(y.values, xm.values):
            out = wp.empty_like(y.values)
        if y.nrow > 0:
            wp.launch(_masked_axpy, y.nrow, device=device,
                      inputs=[y.offsets, yc, yh, y.columns, xm.offsets, xc, xh, xm.columns, xm.values, scalar(alpha),
                              y.values, scalar(beta), int(read_y), out])
        y.values = out
        return y

    if xm is y and topology == "compact":
        # same topology: a scaling
        scale(y, float(alpha) + float(beta))
        return y

    wa = work_arrays if work_arrays is not None else bsr_axpy_work_arrays()
    nrow = y.nrow
    counts = wa._buffer("counts", nrow + 1, device)
    seg_beg = wa._buffer("seg_beg", nrow + 1, device)
    with no_tape():
        wp.launch(_sum_counts, nrow + 1, inputs=[xm.offsets, xc, xh, y.offsets, yc, yh, nrow, counts],
                  device=device)
        wp.utils.array_scan(counts[:nrow + 1], seg_beg[:nrow + 1], inclusive=False)
    cap = int(xm.nnz) + int(y.nnz)
    cols = wa._buffer("cols", cap, device)
    srcs = wa._buffer("srcs", cap, device)
    a_slot = wa._buffer("a", cap, device)
    b_slot = wa._buffer("b", cap, device)
    if nrow > 0:
        with no_tape():
            wp.launch(_sum_fill, nrow, device=device,
                      inputs=[xm.offsets, xc, xh, xm.columns, y.offsets, yc, yh, y.columns, seg_beg, cols, srcs,
                              a_slot, b_slot])
    entries = Entries(nrow, cols, srcs, seg_beg, None, cap)
    x_vals, y_vals = xm.values, y.values

    def values_fn(runs: Runs, out_values: Any) -> None:
        gather_pair(runs, a_slot, b_slot, x_vals, alpha, y_vals, beta, out_values)

    assemble(y, entries, topology, values_fn,
             sources=[xm.values, xm.columns, xm.offsets, xm.row_counts, y.values, y.columns, y.offsets, y.row_counts],
             requires_grad=xm.requires_grad or y.requires_grad, fn=fn)
    return y


def bsr_scale(x: Any, alpha: float) -> BsrMatrix:
    """Scale a matrix in place, ``x := alpha * x``; return ``x``.

    For a matrix expression (``s * A``), ``A`` is scaled by ``alpha * s`` and returned.

    Args:
        x: the matrix.
        alpha: the factor (0 zeroes the values but keeps the topology).
    """
    mat, s = as_operand(x, "bsr_scale", "x")
    scale(mat, float(alpha) * float(s))
    return mat
