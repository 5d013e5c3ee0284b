"""Block values of a coalesced topology: differentiable gather kernels, one thread per destination block.

Each kernel sums, in the sorted order of :mod:`.topology`, the contributions of the entries of one block's run and
stores the total in the block's slot. They are recorded on an active :class:`Tape` like any launch, so gradients
reach the sources (triplet values, operand matrices) through their adjoints. Kernels that depend on the block shape
(transposes, products) are built per block type and cached.
"""

import functools
from typing import Any

import treadle as wp

from .matrix import BsrMatrix, block_shape_of, row_end_args, scalar_of
from .topology import Runs, _dummy, run_slot


@wp.kernel
def _gather(run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), srcs: wp.array(dtype=int),
            uoff: wp.array(dtype=int), nrow: int, slot: wp.array(dtype=int), use_slot: int,
            src: wp.array(dtype=Any), alpha: Any, out: wp.array(dtype=Any)):
    u = wp.tid()
    s = run_slot(u, uoff, nrow, slot, use_slot)
    if s < 0:
        return
    acc = out.dtype(0.0)
    for p in range(run_beg[u], run_end[u]):
        acc += out.dtype(src[srcs[p]])
    out[s] = alpha * acc


@wp.kernel
def _gather_scaled_pair(run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), srcs: wp.array(dtype=int),
                        uoff: wp.array(dtype=int), nrow: int, slot: wp.array(dtype=int), use_slot: int,
                        a_slot: wp.array(dtype=int), b_slot: wp.array(dtype=int), a: wp.array(dtype=Any),
                        alpha: Any, b: wp.array(dtype=Any), beta: Any, read_a: int, read_b: int,
                        out: wp.array(dtype=Any)):
    # sums of alpha * a[a_slot[k]] (entries with a_slot >= 0) and beta * b[b_slot[k]] (the others); an operand
    # whose factor is zero is not read (it may hold NaNs)
    u = wp.tid()
    s = run_slot(u, uoff, nrow, slot, use_slot)
    if s < 0:
        return
    acc_a = out.dtype(0.0)
    acc_b = out.dtype(0.0)
    for p in range(run_beg[u], run_end[u]):
        k = srcs[p]
        ia = a_slot[k]
        if ia >= 0:
            if read_a != 0:
                acc_a += out.dtype(a[ia])
        elif read_b != 0:
            acc_b += out.dtype(b[b_slot[k]])
    out[s] = alpha * acc_a + beta * acc_b


@wp.kernel
def _cast_slots(src: wp.array(dtype=Any), alpha: Any, out: wp.array(dtype=Any)):
    b = wp.tid()
    out[b] = alpha * out.dtype(src[b])


@wp.kernel
def _scale_slots(values: wp.array(dtype=Any), alpha: Any):
    b = wp.tid()
    values[b] = alpha * values[b]


@wp.kernel
def _masked_assign(dest_offsets: wp.array(dtype=int), dest_counts: wp.array(dtype=int), dest_has_counts: int,
                   dest_columns: wp.array(dtype=int), src_offsets: wp.array(dtype=int),
                   src_counts: wp.array(dtype=int), src_has_counts: int, src_columns: wp.array(dtype=int),
                   src_values: wp.array(dtype=Any), alpha: Any, dest_values: wp.array(dtype=Any)):
    # every active block of dest becomes alpha times the sum of the src blocks at the same place (zero if none)
    r = wp.tid()
    db = dest_offsets[r]
    de = dest_offsets[r + 1]
    if dest_has_counts != 0:
        de = db + dest_counts[r]
    sb = src_offsets[r]
    se = src_offsets[r + 1]
    if src_has_counts != 0:
        se = sb + src_counts[r]
    for b in range(db, de):
        c = dest_columns[b]
        acc = dest_values.dtype(0.0)
        for k in range(sb, se):
            if src_columns[k] == c:
                acc += dest_values.dtype(src_values[k])
        dest_values[b] = alpha * acc


@functools.cache
def _transposed_gather_kernel(key: tuple[Any, ...], src_type: Any, out_type: Any) -> Any:
    scalar_blocks = not wp.types.type_is_matrix(src_type)

    @wp.kernel
    def gather_transposed(run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), srcs: wp.array(dtype=int),
                          uoff: wp.array(dtype=int), nrow: int, slot: wp.array(dtype=int), use_slot: int,
                          src: wp.array(dtype=src_type), alpha: Any, out: wp.array(dtype=out_type)):
        u = wp.tid()
        s = run_slot(u, uoff, nrow, slot, use_slot)
        if s < 0:
            return
        acc = out_type(0.0)
        for p in range(run_beg[u], run_end[u]):
            if wp.static(scalar_blocks):
                acc += out_type(src[srcs[p]])
            else:
                acc += out_type(wp.transpose(src[srcs[p]]))
        out[s] = alpha * acc

    return gather_transposed


def _key(t: Any) -> tuple[Any, ...]:
    return (block_shape_of(t), scalar_of(t), wp.types.type_is_matrix(t))


def transposed_gather_kernel(src_type: Any, out_type: Any) -> Any:
    """The gather kernel summing transposed source blocks (cached per pair of block types)."""
    return _transposed_gather_kernel((_key(src_type), _key(out_type)), src_type, out_type)


def runs_args(runs: Runs) -> list[Any]:
    """The leading kernel arguments describing ``runs``."""
    slot = runs.slot if runs.slot is not None else _dummy(runs.run_beg.device)
    return [runs.run_beg, runs.run_end, runs.srcs, runs.uoff, runs.nrow, slot, int(runs.slot is not None)]


def gather(runs: Runs, src: Any, out: Any, alpha: Any = 1.0) -> None:
    """``out[slot(u)] = alpha * sum(src[srcs[p]] for p in run u)`` for every block ``u`` (casting to ``out``'s type)."""
    if runs.capacity == 0:
        return
    scalar = scalar_of(out.dtype)
    wp.launch(_gather, runs.capacity, inputs=[*runs_args(runs), src, scalar(alpha), out], device=out.device)


def gather_transposed(runs: Runs, src: Any, out: Any, alpha: Any = 1.0) -> None:
    """As :func:`gather`, with every source block transposed."""
    if runs.capacity == 0:
        return
    scalar = scalar_of(out.dtype)
    kernel = transposed_gather_kernel(src.dtype, out.dtype)
    wp.launch(kernel, runs.capacity, inputs=[*runs_args(runs), src, scalar(alpha), out], device=out.device)


def gather_pair(runs: Runs, a_slot: Any, b_slot: Any, a: Any, alpha: Any, b: Any, beta: Any, out: Any) -> None:
    """Blocks summing ``alpha * a[a_slot[k]]`` and ``beta * b[b_slot[k]]`` over their entries ``k``.

    An operand with a zero factor is not read.
    """
    if runs.capacity == 0:
        return
    scalar = scalar_of(out.dtype)
    wp.launch(_gather_scaled_pair, runs.capacity, device=out.device,
              inputs=[*runs_args(runs), a_slot, b_slot, a, scalar(alpha), b, scalar(beta), int(float(alpha) != 0.0),
                      int(float(beta) != 0.0), out])


def cast_slots(src: Any, out: Any, count: int, alpha: Any = 1.0) -> None:
    """``out[b] = alpha * src[b]`` for the first ``count`` slots (cast to ``out``'s block type)."""
    if count <= 0:
        return
    scalar = scalar_of(out.dtype)
    wp.launch(_cast_slots, count, inputs=[src, scalar(alpha), out], device=out.device)


def scale_slots(values: Any, count: int, alpha: Any) -> None:
    """``values[b] *= alpha`` for the first ``count`` slots."""
    if count <= 0:
        return
    scalar = scalar_of(values.dtype)
    wp.launch(_scale_slots, count, inputs=[values, scalar(alpha)], device=values.device)


def masked_assign(dest: BsrMatrix, src: BsrMatrix, alpha: Any = 1.0) -> None:
    """Set every active block of ``dest`` to ``alpha`` times the sum of ``src``'s blocks at the same place."""
    if dest.nrow == 0:
        return
    scalar = scalar_of(dest.values.dtype)
    dc, dh = row_end_args(dest)
    sc, sh = row_end_args(src)
    d = _dummy(dest.device)
    wp.launch(_masked_assign, dest.nrow, device=dest.device,
              inputs=[dest.offsets, dc if dh else d, dh, dest.columns, src.offsets, sc if sh else d, sh, src.columns,
                      src.values, scalar(alpha), dest.values])
