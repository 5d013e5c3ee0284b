"""Copies (with casts and block reshaping) and transposes.

``bsr_assign``, ``bsr_copy``, ``bsr_set_transpose``, ``bsr_transposed``.

A copy with the same block shape keeps the source topology (compact: the arrays are copied; padded: each row goes
into the destination's capacity). A copy to another block shape, where each dimension of the new block shape is a
multiple or a divisor of the old one, emits one triplet per piece (a source block is cut into several blocks, or
lands inside a larger one) and assembles them like any triplets. A transpose emits ``(column, row)`` triplets of
the active blocks and assembles them with transposed blocks.
"""

from __future__ import annotations

from typing import Any, Literal

import treadle as wp

from .assemble import assemble
from .expressions import BsrExpression, as_linear, as_operand
from .gather import cast_slots, gather, gather_transposed, masked_assign, runs_args
from .matrix import (
    BsrError,
    BsrMatrix,
    BsrTypeError,
    check_devices,
    check_topology,
    make_block_type,
    new_matrix,
    no_tape,
    reserve,
    scalar_of,
    scalar_view,
    transposed_block_type,
)
from .topology import Runs, _dummy, group_triplets, run_slot
from .triplets import row_entries


@wp.kernel(enable_backward=False)
def _reshape_triplets(rows: wp.array(dtype=int), columns: wp.array(dtype=int), nslot: int, sr: int, sc: int,
                      dr: int, dc: int, nsub_c: int, nsub: int, out_rows: wp.array(dtype=int),
                      out_cols: wp.array(dtype=int)):
    # entry e = slot * nsub + q: piece q of source slot `slot`, in destination block coordinates
    e = wp.tid()
    b = e / nsub
    q = e - b * nsub
    r = rows[b]
    if r < 0:
        out_rows[e] = -1
        out_cols[e] = -1
        return
    qr = q / nsub_c
    qc = q - qr * nsub_c
    out_rows[e] = (r * sr + qr * dr) / dr
    out_cols[e] = (columns[b] * sc + qc * dc) / dc


@wp.kernel
def _gather_reshaped(run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), srcs: wp.array(dtype=int),
                     uoff: wp.array(dtype=int), nrow: int, slot: wp.array(dtype=int), use_slot: int,
                     rows: wp.array(dtype=int), columns: wp.array(dtype=int), dest_rows: wp.array(dtype=int),
                     dest_cols: wp.array(dtype=int), nsub: int, src: wp.array3d(dtype=Any), alpha: Any,
                     out: wp.array3d(dtype=Any)):
    u = wp.tid()
    s = run_slot(u, uoff, nrow, slot, use_slot)
    if s < 0:
        return
    sr = src.shape[1]
    sc = src.shape[2]
    dr = out.shape[1]
    dc = out.shape[2]
    p0 = run_beg[u]
    e0 = srcs[p0]
    r0 = dest_rows[e0] * dr
    c0 = dest_cols[e0] * dc
    for i in range(dr):
        for j in range(dc):
            out[s, i, j] = out.dtype(0.0)
    for p in range(p0, run_end[u]):
        e = srcs[p]
        b = e / nsub
        gr = rows[b] * sr
        gc = columns[b] * sc
        i0 = wp.max(gr, r0)
        i1 = wp.min(gr + sr, r0 + dr)
        j0 = wp.max(gc, c0)
        j1 = wp.min(gc + sc, c0 + dc)
        for gi in range(i0, i1):
            for gj in range(j0, j1):
                out[s, gi - r0, gj - c0] += alpha * out.dtype(src[b, gi - gr, gj - gc])


def _reshape_factors(src_shape: tuple[int, int], dst_shape: tuple[int, int], total: tuple[int, int]) -> None:
    for s, d in zip(src_shape, dst_shape):
        if not (s % d == 0 or d % s == 0):
            raise BsrError(f"Incompatible dest and src block shapes: {dst_shape} and {src_shape} (each dimension of "
                           "one must divide the other)")
    for t, d in zip(total, dst_shape):
        if t % d != 0:
            raise BsrError(f"The requested block shape {tuple(dst_shape)} does not evenly divide the source matrix "
                           f"of total size {tuple(total)}")


def _assign_reshaped(dest: BsrMatrix, src: BsrMatrix, alpha: float, topology: str, structure_only: bool) -> None:
    sr, sc = src.block_shape
    dr, dc = dest.block_shape
    nsub_r = max(1, sr // dr)
    nsub_c = max(1, sc // dc)
    nsub = nsub_r * nsub_c
    nslot = int(src.nnz)
    device = src.device
    n = nslot * nsub
    rows = src.uncompress_rows()
    columns = src.columns
    out_rows = wp.empty(max(n, 1), dtype=int, device=device)
    out_cols = wp.empty(max(n, 1), dtype=int, device=device)
    if n > 0:
        with no_tape():
            wp.launch(_reshape_triplets, n, inputs=[rows, columns, nslot, sr, sc, dr, dc, nsub_c, nsub, out_rows,
                                                    out_cols], device=device)
    entries = group_triplets(out_rows, out_cols, n, dest.nrow, dest.ncol)
    src_values = scalar_view(src.values)
    scalar = scalar_of(dest.values.dtype)

    def values_fn(runs: Runs, out_values: Any) -> None:
        if runs.capacity == 0:
            return
        wp.launch(_gather_reshaped, runs.capacity, device=device,
                  inputs=[*runs_args(runs), rows, columns, out_rows, out_cols, nsub, src_values, scalar(alpha),
                          scalar_view(out_values)])

    assemble(dest, entries, topology, None if structure_only else values_fn,
             sources=[src.values, src.columns, src.offsets], requires_grad=src.requires_grad, fn="bsr_assign")


def _copy_compact(dest: BsrMatrix, src: BsrMatrix, alpha: float, structure_only: bool) -> None:
    """Same block shape, compact source, compact result: copy the arrays (casting the values)."""
    n = int(src.nnz)
    device = src.device
    offsets = wp.empty(src.nrow + 1, dtype=int, device=device)
    wp.copy(offsets, src.offsets, count=src.nrow + 1)
    columns = wp.empty(max(n, 0), dtype=int, device=device)
    if n > 0:
        wp.copy(columns, src.columns, count=n)
    values = wp.empty(n, dtype=dest.values.dtype, device=device, requires_grad=src.requires_grad)
    if not structure_only and n > 0:
        if alpha == 1.0 and wp.types.types_equal(values.dtype, src.values.dtype):
            wp.copy(values, src.values, count=n)
        else:
            cast_slots(src.values, values, n, alpha)
    dest.offsets, dest.columns, dest.values = offsets, columns, values
    dest.row_counts = None
    dest.nnz = n


def assign(dest: BsrMatrix, src: BsrMatrix, alpha: float = 1.0, structure_only: bool = False,
           topology: str = "compact", fn: str = "bsr_assign") -> None:
    """``dest := alpha * src`` (see :func:`bsr_assign`), ``src`` a matrix."""
    check_devices(fn, dest=dest.offsets, src=src.offsets)
    same_shape = dest.block_shape == src.block_shape
    if not same_shape:
        sr, sc = src.block_shape
        _reshape_factors(src.block_shape, dest.block_shape, (src.nrow * sr, src.ncol * sc))
        dr, dc = dest.block_shape
        nrow, ncol = src.nrow * sr // dr, src.ncol * sc // dc
    else:
        nrow, ncol = src.nrow, src.ncol
    if topology in ("masked", "padded"):
        if (dest.nrow, dest.ncol) != (nrow, ncol):
            raise BsrError(f"{fn}(): topology={topology!r} keeps the destination's size ({dest.nrow} x {dest.ncol} "
                           f"blocks), but the source is {nrow} x {ncol} blocks")
    else:
        dest.nrow, dest.ncol = nrow, ncol
    if not same_shape:
        _assign_reshaped(dest, src, alpha, topology, structure_only)
        return
    if topology == "masked":
        if not structure_only:
            masked_assign(dest, src, alpha)
        return
    if topology == "compact" and src.row_counts is None:
        _copy_compact(dest, src, alpha, structure_only)
        return
    entries = row_entries(src, prune=False)
    vals = src.values

    def values_fn(runs: Runs, out_values: Any) -> None:
        gather(runs, vals, out_values, alpha)

    assemble(dest, entries, topology, None if structure_only else values_fn,
             sources=[src.values, src.columns, src.offsets, src.row_counts], requires_grad=src.requires_grad, fn=fn)


def bsr_assign(dest: BsrMatrix, src: Any, structure_only: bool = False,
               topology: Literal["compact", "masked", "padded"] | None = None) -> None:
    """Copy ``src`` (a matrix or a scaled/transposed matrix expression) into ``dest``.

    ``dest`` may have another scalar type (the values are converted) or another block shape, as long as each
    dimension of one block shape divides the other's and the new shape divides the whole matrix.

    Args:
        dest: the destination.
        src: the source.
        structure_only: copy the topology only; the values are allocated but left uninitialised.
        topology: ``"compact"`` (default: rebuild ``dest``), ``"masked"`` (keep ``dest``'s blocks; each takes the
            source's value at its place, zero where the source has none) or ``"padded"`` (write the source's rows
            into ``dest``'s row capacity; see :meth:`BsrMatrix.status_sync`).
    """
    fn = "bsr_assign"
    if not isinstance(dest, BsrMatrix):
        raise BsrTypeError(f"{fn}(): dest must be a BsrMatrix, got {type(dest).__name__}")
    topology = check_topology("compact" if topology is None else topology, ("compact", "masked", "padded"), fn)
    mat, alpha = as_operand(src, fn, "src")
    assign(dest, mat, alpha, structure_only, topology, fn)


@wp.kernel(enable_backward=False)
def _copy_capacity_layout(src_offsets: wp.array(dtype=int), dest_offsets: wp.array(dtype=int)):
    r = wp.tid()
    dest_offsets[r] = src_offsets[r]


@wp.kernel(enable_backward=False)
def _reshaped_capacity(src_offsets: wp.array(dtype=int), src_nrow: int, sr: int, dr: int, col_split: int,
                       nrow: int, counts: wp.array(dtype=int)):
    # capacity of destination row r: the capacity of the source rows it covers, times the column split
    r = wp.tid()
    if r >= nrow:
        counts[r] = 0
        return
    g0 = r * dr
    g1 = g0 + dr
    s0 = g0 / sr
    s1 = wp.min((g1 + sr - 1) / sr, src_nrow)
    c = 0
    for s in range(s0, s1):
        c += src_offsets[s + 1] - src_offsets[s]
    counts[r] = c * col_split


def bsr_copy(A: Any, scalar_type: Any = None, block_shape: tuple[int, int] | None = None,
             structure_only: bool = False, topology: Literal["compact", "padded"] = "compact") -> BsrMatrix:
    """A copy of ``A`` (a matrix or matrix expression), optionally with another scalar type or block shape.

    Args:
        A: the matrix to copy.
        scalar_type: scalar type of the copy (default: ``A``'s).
        block_shape: block shape of the copy (default: ``A``'s); each dimension must be a multiple or a divisor of
            ``A``'s. 1x1 blocks make a CSR matrix (scalar blocks).
        structure_only: copy the topology only (values uninitialised).
        topology: ``"compact"`` (pack the rows) or ``"padded"`` (keep ``A``'s row capacity, reshaped along with the
            blocks).
    """
    fn = "bsr_copy"
    topology = check_topology(topology, ("compact", "padded"), fn)
    mat, alpha = as_operand(A, fn, "A")
    scalar = scalar_of(mat.values.dtype) if scalar_type is None else scalar_type
    if scalar is float:
        scalar = wp.float32
    shape = mat.block_shape if block_shape is None else (int(block_shape[0]), int(block_shape[1]))
    if shape == mat.block_shape and scalar is scalar_of(mat.values.dtype):
        bt = mat.values.dtype
    else:
        bt = make_block_type(shape, scalar)
    if shape != mat.block_shape:
        sr, sc = mat.block_shape
        _reshape_factors(mat.block_shape, shape, (mat.nrow * sr, mat.ncol * sc))
    sr, sc = mat.block_shape
    nrow, ncol = mat.nrow * sr // shape[0], mat.ncol * sc // shape[1]
    dest = new_matrix(nrow, ncol, bt, mat.device, requires_grad=mat.requires_grad)
    if topology == "padded":
        if mat.row_counts is None:
            topology = "compact"
        else:
            device = mat.device
            if shape == mat.block_shape:
                with no_tape():
                    wp.launch(_copy_capacity_layout, nrow + 1, inputs=[mat.offsets, dest.offsets], device=device)
                cap = int(mat.nnz)
            else:
                counts = wp.empty(nrow + 1, dtype=int, device=device)
                with no_tape():
                    wp.launch(_reshaped_capacity, nrow + 1, device=device,
                              inputs=[mat.offsets, mat.nrow, sr, shape[0], max(1, sc // shape[1]), nrow, counts])
                    wp.utils.array_scan(counts, dest.offsets, inclusive=False)
                cap = int(mat.nnz) * max(1, sr // shape[0]) * max(1, sc // shape[1])
            dest.row_counts = wp.zeros(nrow, dtype=int, device=device)
            dest._ensure_status()
            reserve(dest, cap)
            dest.nnz = cap
    assign(dest, mat, alpha, structure_only, topology, fn)
    return dest


def set_transpose(dest: BsrMatrix, src: BsrMatrix, alpha: float, topology: str, fn: str) -> None:
    """``dest := alpha * src^T``."""
    check_devices(fn, dest=dest.offsets, src=src.offsets)
    r, c = src.block_shape
    if dest.block_shape != (c, r):
        raise BsrError(f"Destination block shape must be {(c, r)}, got {dest.block_shape}")
    if topology in ("masked", "padded"):
        if (dest.nrow, dest.ncol) != (src.ncol, src.nrow):
            raise BsrError(f"{fn}(): topology={topology!r} keeps the destination's size ({dest.nrow} x {dest.ncol} "
                           f"blocks); the transpose is {src.ncol} x {src.nrow} blocks")
    else:
        dest.nrow, dest.ncol = src.ncol, src.nrow
    n = int(src.nnz)
    rows = src.uncompress_rows()
    entries = group_triplets(src.columns, rows, n, dest.nrow, dest.ncol) if n > 0 else group_triplets(
        _dummy(src.device), _dummy(src.device), 0, dest.nrow, dest.ncol)
    vals = src.values

    def values_fn(runs: Runs, out_values: Any) -> None:
        gather_transposed(runs, vals, out_values, alpha)

    assemble(dest, entries, topology, values_fn, sources=[src.values, src.columns, src.offsets, src.row_counts],
             requires_grad=src.requires_grad, fn=fn)


def bsr_set_transpose(dest: BsrMatrix, src: Any,
                      topology: Literal["compact", "masked", "padded"] | None = None) -> None:
    """Set ``dest`` to the transpose of ``src`` (a matrix or matrix expression).

    Args:
        dest: the destination; its blocks must have the transposed shape of ``src``'s.
        src: the matrix to transpose.
        topology: ``"compact"`` (default), ``"masked"`` (keep ``dest``'s blocks) or ``"padded"`` (write into
            ``dest``'s row capacity).
    """
    fn = "bsr_set_transpose"
    if not isinstance(dest, BsrMatrix):
        raise BsrTypeError(f"{fn}(): dest must be a BsrMatrix, got {type(dest).__name__}")
    topology = check_topology("compact" if topology is None else topology, ("compact", "masked", "padded"), fn)
    mat, alpha = as_operand(src, fn, "src")
    set_transpose(dest, mat, alpha, topology, fn)


def transposed(mat: BsrMatrix, alpha: Any = 1.0) -> BsrMatrix:
    """A new compact matrix holding ``alpha * mat^T``."""
    dest = new_matrix(mat.ncol, mat.nrow, transposed_block_type(mat.values.dtype), mat.device,
                      requires_grad=mat.requires_grad)
    set_transpose(dest, mat, alpha, "compact", "bsr_transposed")
    return dest


def bsr_transposed(A: Any) -> BsrMatrix:
    """A new matrix holding the transpose of ``A`` (a matrix or matrix expression)."""
    mat, alpha, is_transposed = as_linear(A, "bsr_transposed", "A")
    if is_transposed:  # the transpose of a transpose
        return bsr_copy(BsrExpression(mat, alpha))
    return transposed(mat, alpha)
