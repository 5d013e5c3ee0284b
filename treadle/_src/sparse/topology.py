"""Building a sparse topology: entries ``(row, column, source)`` grouped by row, sorted and merged into blocks.

Every operation that creates a sparsity pattern (triplets, compression, sums, products, transposes, block
reshaping) reduces to the same steps, each a Treadle kernel:

1. **Group by row.** Entries arrive either already grouped (a product's row ``i`` comes from row ``i`` of its left
   operand, a compression from the matrix's own rows: the caller fills each row's segment), or as free triplets:
   ``_triplet_count`` counts the valid entries of each row (atomically) into ``counts``, an exclusive scan gives
   each row's segment, and ``_triplet_scatter`` moves every entry's ``(column, source index)`` into its row's
   segment. The order within a segment then depends on thread timing, which step 2 removes.
2. **Sort each row** (``_sort_rows``, one thread per row) by ``(column, source index)``: insertion sort for short
   rows, a merge sort through scratch arrays for long ones. Ties keep source order, so duplicates are later summed
   in the order of their sources whatever the thread count: results are reproducible.
3. **Count** the distinct valid columns of each row (same kernel), and scan the counts into the compact offsets.
4. **Emit** (``_emit_rows``): the column and the run of sorted entries (``run_beg``/``run_end``) of each distinct
   block ``u`` (numbered in compact order), and the storage slot its value goes to: ``u`` itself for a compact
   result, the next free slot of the row's capacity for a padded one (``-1``, with the status flag raised and the
   row left empty, when a row does not fit).

Values are computed afterwards by an operation-specific gather kernel over the runs (one thread per block, summing
its entries' contributions in sorted order). Those kernels are differentiable, so gradients flow from the matrix
values back to the triplet values or operands through a :class:`Tape`. Invalid entries (row or column out of
range, past a device-side count, pruned zero blocks) carry column ``-1`` or sit in the row bucket ``nrow`` and are
skipped.

Nothing here reads a count back to the host: launches over blocks are sized by the number of entries (an upper
bound) and check the device-side total ``uoff[nrow]``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import treadle as wp

from .matrix import BSR_STATUS_ROW_CAPACITY_EXCEEDED, no_tape

#: Rows with at most this many entries are insertion-sorted; longer ones are merge-sorted in runs of this length.
_INSERTION = 16


@wp.func
def _less(ca: int, sa: int, cb: int, sb: int) -> bool:
    if ca < cb:
        return True
    if ca == cb:
        return sa < sb
    return False


@wp.func
def _insertion(cols: wp.array(dtype=int), srcs: wp.array(dtype=int), s: int, e: int):
    for i in range(s + 1, e):
        c = cols[i]
        k = srcs[i]
        j = i - 1
        while j >= s:
            if not _less(c, k, cols[j], srcs[j]):
                break
            cols[j + 1] = cols[j]
            srcs[j + 1] = srcs[j]
            j = j - 1
        cols[j + 1] = c
        srcs[j + 1] = k


@wp.func
def _merge_pass(ac: wp.array(dtype=int), asr: wp.array(dtype=int), bc: wp.array(dtype=int),
                bsr: wp.array(dtype=int), s: int, e: int, width: int):
    # merge consecutive sorted runs of ``width`` entries of a[s:e] into b[s:e]
    lo = s
    while lo < e:
        mid = wp.min(lo + width, e)
        hi = wp.min(lo + 2 * width, e)
        i = lo
        j = mid
        o = lo
        while o < hi:
            take_left = False
            if i < mid:
                if j >= hi:
                    take_left = True
                elif not _less(ac[j], asr[j], ac[i], asr[i]):
                    take_left = True
            if take_left:
                bc[o] = ac[i]
                bsr[o] = asr[i]
                i = i + 1
            else:
                bc[o] = ac[j]
                bsr[o] = asr[j]
                j = j + 1
            o = o + 1
        lo = hi


@wp.kernel(enable_backward=False)
def _sort_rows(seg_beg: wp.array(dtype=int), seg_end: wp.array(dtype=int), has_end: int,
               cols: wp.array(dtype=int), srcs: wp.array(dtype=int), tmp_cols: wp.array(dtype=int),
               tmp_srcs: wp.array(dtype=int), row_nnz: wp.array(dtype=int)):
    r = wp.tid()
    s = seg_beg[r]
    e = 0
    if has_end != 0:
        e = seg_end[r]
    else:
        e = seg_beg[r + 1]
    n = e - s
    if n > _INSERTION:
        # sorted runs of _INSERTION entries, then merge passes alternating between the arrays and the scratch
        lo = s
        while lo < e:
            _insertion(cols, srcs, lo, wp.min(lo + _INSERTION, e))
            lo = lo + _INSERTION
        width = int(_INSERTION)
        in_tmp = False
        while width < n:
            if in_tmp:
                _merge_pass(tmp_cols, tmp_srcs, cols, srcs, s, e, width)
            else:
                _merge_pass(cols, srcs, tmp_cols, tmp_srcs, s, e, width)
            in_tmp = not in_tmp
            width = width * 2
        if in_tmp:
            for i in range(s, e):
                cols[i] = tmp_cols[i]
                srcs[i] = tmp_srcs[i]
    elif n > 1:
        _insertion(cols, srcs, s, e)
    count = 0
    prev = -1
    for i in range(s, e):
        c = cols[i]
        if c >= 0 and c != prev:
            count = count + 1
        prev = c
    row_nnz[r] = count


@wp.kernel(enable_backward=False)
def _emit_rows(seg_beg: wp.array(dtype=int), seg_end: wp.array(dtype=int), has_end: int,
               cols: wp.array(dtype=int), srcs: wp.array(dtype=int), uoff: wp.array(dtype=int), nrow: int,
               padded: int, dest_offsets: wp.array(dtype=int), dest_counts: wp.array(dtype=int),
               dest_columns: wp.array(dtype=int), status: wp.array(dtype=int),
               run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), slot: wp.array(dtype=int),
               want_blocks: int, entry_block: wp.array(dtype=int)):
    r = wp.tid()
    s = seg_beg[r]
    e = 0
    if has_end != 0:
        e = seg_end[r]
    else:
        e = seg_beg[r + 1]
    u0 = uoff[r]
    nr = uoff[r + 1] - u0
    fits = True
    base = u0
    if padded != 0:
        base = dest_offsets[r]
        if nr > dest_offsets[r + 1] - base:
            fits = False
            status[0] = BSR_STATUS_ROW_CAPACITY_EXCEEDED
            dest_counts[r] = 0
        else:
            dest_counts[r] = nr
    j = -1
    prev = -1
    for i in range(s, e):
        c = cols[i]
        if c < 0:
            if want_blocks != 0:
                entry_block[srcs[i]] = -1
            continue
        if c != prev:
            if j >= 0:
                run_end[u0 + j] = i
            j = j + 1
            run_beg[u0 + j] = i
            if fits:
                dest_columns[base + j] = c
                if padded != 0:
                    slot[u0 + j] = base + j
            else:
                slot[u0 + j] = -1
        prev = c
        if want_blocks != 0:
            entry_block[srcs[i]] = u0 + j
    if j >= 0:
        run_end[u0 + j] = e


@wp.kernel(enable_backward=False)
def _triplet_count(rows: wp.array(dtype=int), cols: wp.array(dtype=int), count: wp.array(dtype=int),
                   use_count: int, nrow: int, ncol: int, values: wp.array(dtype=Any), prune: int,
                   keys: wp.array(dtype=int), counts: wp.array(dtype=int)):
    i = wp.tid()
    r = rows[i]
    c = cols[i]
    ok = r >= 0 and r < nrow and c >= 0 and c < ncol
    if use_count != 0:
        if i >= count[0]:
            ok = False
    if ok and prune != 0:
        if values[i] == values.dtype(0.0):
            ok = False
    k = nrow
    if ok:
        k = r
        wp.atomic_add(counts, r, 1)
    keys[i] = k


@wp.kernel(enable_backward=False)
def _triplet_scatter(keys: wp.array(dtype=int), cols: wp.array(dtype=int), nrow: int, cursor: wp.array(dtype=int),
                     out_cols: wp.array(dtype=int), out_srcs: wp.array(dtype=int)):
    i = wp.tid()
    k = keys[i]
    if k < nrow:
        p = wp.atomic_add(cursor, k, 1)
        out_cols[p] = cols[i]
        out_srcs[p] = i


@wp.kernel(enable_backward=False)
def _fill(out: wp.array(dtype=int), value: int):
    out[wp.tid()] = value


@wp.kernel(enable_backward=False)
def _tail_zero(counts: wp.array(dtype=int), index: int):
    counts[index] = 0


def _dummy(device: Any, dtype: Any = int) -> Any:
    return wp.empty(1, dtype=dtype, device=device)


@dataclasses.dataclass
class Entries:
    """Entries grouped by row.

    Row ``r`` holds ``cols[p], srcs[p]`` for ``p`` in ``seg_beg[r]:seg_end[r]`` (``seg_beg[r + 1]`` when ``seg_end``
    is ``None``). ``capacity`` bounds the entry count; ``cols[p] < 0`` marks an entry to skip.
    """

    nrow: int
    cols: Any
    srcs: Any
    seg_beg: Any
    seg_end: Any
    capacity: int

    @property
    def device(self) -> Any:
        """Device of the entry arrays."""
        return self.cols.device


@dataclasses.dataclass
class Runs:
    """The distinct blocks of a coalesced topology, in compact order ``u``.

    ``run_beg[u]:run_end[u]`` are the positions of its entries in the sorted ``entries``; ``srcs[p]`` their source
    indices. ``uoff`` (``nrow + 1``) holds the compact offsets, ``uoff[nrow]`` the device-side block count;
    ``slot[u]`` the storage slot of block ``u`` in a padded destination (``None`` when slots are ``u``, the compact
    case). ``capacity`` bounds the block count (size the launches with it). ``entry_block`` maps each source index to
    its block (or -1) when it was asked for.
    """

    nrow: int
    run_beg: Any
    run_end: Any
    srcs: Any
    uoff: Any
    slot: Any
    capacity: int
    entry_block: Any = None


def _group_triplets(rows: Any, cols: Any, n: int, nrow: int, ncol: int, count: Any = None, values: Any = None,
                   prune: bool = False, out: tuple[Any, Any] | None = None) -> Entries:
    """Group ``n`` triplets by row (step 1).

    Triplets with a row or column out of range, at or past ``count[0]`` (when ``count`` is given), or with an
    all-zero block in ``values`` (when ``prune``) are dropped. ``out`` optionally gives the entry column and source
    arrays to fill (at least ``n`` entries each).
    """
    device = rows.device
    counts = wp.zeros(nrow + 2, dtype=int, device=device)
    keys = wp.empty(max(n, 1), dtype=int, device=device)
    vals = values if (prune and values is not None) else _dummy(device)
    if n > 0:
        wp.launch(_triplet_count, n, device=device,
                  inputs=[rows, cols, count if count is not None else _dummy(device), int(count is not None),
                          nrow, ncol, vals, int(prune and values is not None), keys, counts])
    starts = wp.empty(nrow + 2, dtype=int, device=device)
    wp.utils.array_scan(counts, starts, inclusive=False)
    if out is not None:
        out_cols, out_srcs = out
    else:
        out_cols = wp.empty(max(n, 1), dtype=int, device=device)
        out_srcs = wp.empty(max(n, 1), dtype=int, device=device)
    if n > 0:
        cursor = wp.clone(starts)
        wp.launch(_triplet_scatter, n, inputs=[keys, cols, nrow, cursor, out_cols, out_srcs], device=device)
    return Entries(nrow, out_cols, out_srcs, starts, None, n)


def _coalesce(entries: Entries, dest_offsets: Any = None, dest_counts: Any = None, dest_columns: Any = None,
             padded: bool = False, status: Any = None, compact_offsets: Any = None,
             want_blocks: bool = False, runs_out: tuple[Any, Any, Any] | None = None) -> Runs:
    """Sort and merge grouped entries into blocks (steps 2-4).

    For a compact result, the block offsets are written to ``compact_offsets`` (``nrow + 1`` ints, allocated when
    ``None``) and the block columns to ``dest_columns`` (capacity at least ``entries.capacity``). For a padded
    result, ``dest_offsets`` is the destination's capacity layout, ``dest_counts`` receives each row's active count
    and ``status`` the overflow flag. ``runs_out`` optionally gives the ``run_beg``, ``run_end`` and ``entry_block``
    arrays to fill (at least ``entries.capacity`` entries each).
    """
    device = entries.device
    nrow = entries.nrow
    cap = entries.capacity
    has_end = int(entries.seg_end is not None)
    seg_end = entries.seg_end if entries.seg_end is not None else _dummy(device)
    row_nnz = wp.empty(nrow + 1, dtype=int, device=device)
    wp.launch(_tail_zero, 1, inputs=[row_nnz, nrow], device=device)
    if nrow > 0:
        tmp_c = wp.empty(max(entries.cols.shape[0], 1), dtype=int, device=device)
        tmp_s = wp.empty(max(entries.srcs.shape[0], 1), dtype=int, device=device)
        wp.launch(_sort_rows, nrow, device=device,
                  inputs=[entries.seg_beg, seg_end, has_end, entries.cols, entries.srcs, tmp_c, tmp_s, row_nnz])
    uoff = compact_offsets if compact_offsets is not None and not padded else wp.empty(nrow + 1, dtype=int,
                                                                                         device=device)
    wp.utils.array_scan(row_nnz, uoff, inclusive=False)
    if runs_out is not None:
        run_beg, run_end, entry_block = runs_out
    else:
        run_beg = wp.empty(max(cap, 1), dtype=int, device=device)
        run_end = wp.empty(max(cap, 1), dtype=int, device=device)
        entry_block = wp.empty(max(cap, 1), dtype=int, device=device) if want_blocks else None
    slot = wp.empty(max(cap, 1), dtype=int, device=device) if padded else None
    if want_blocks:
        if cap > 0:
            wp.launch(_fill, cap, inputs=[entry_block, -1], device=device)
    if nrow > 0:
        d = _dummy(device)
        wp.launch(_emit_rows, nrow, device=device,
                  inputs=[entries.seg_beg, seg_end, has_end, entries.cols, entries.srcs, uoff, nrow, int(padded),
                          dest_offsets if padded else d, dest_counts if padded else d, dest_columns,
                          status if status is not None else d, run_beg, run_end, slot if slot is not None else d,
                          int(want_blocks), entry_block if entry_block is not None else d])
    return Runs(nrow, run_beg, run_end, entries.srcs, uoff, slot, cap, entry_block)


def group_triplets(*args: Any, **kwargs: Any) -> Entries:
    """Group triplets by row (see :func:`_group_triplets`); never recorded on a Tape."""
    with no_tape():
        return _group_triplets(*args, **kwargs)


def coalesce(*args: Any, **kwargs: Any) -> Runs:
    """Sort and merge grouped entries (see :func:`_coalesce`); never recorded on a Tape."""
    with no_tape():
        return _coalesce(*args, **kwargs)
