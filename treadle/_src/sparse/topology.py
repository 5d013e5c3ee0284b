"""Building a sparse topology: entries ``(row, column, source)`` grouped by row, sorted and merged into blocks.

Every operation that creates a sparsity pattern (triplets, compression, sums, products, transposes, block
reshaping) reduces to the same steps, each a Treadle kernel:

1. **Group by row.** Entries arrive either already grouped (a product's row ``i`` comes from row ``i`` of its left
   operand, a compression from the matrix's own rows: the caller fills each row's segment), or as free triplets,
   grouped by a counting sort: on the CPU, each of a few chunks of triplets counts its rows in a histogram of its
   own (``_chunk_count``), the histograms become each chunk's first position in each row (``_chunk_totals``, a scan,
   ``_chunk_positions``), and each chunk moves its triplets there in order (``_chunk_scatter``): no atomics, and each
   row lists its triplets in input order. On GPUs, ``_triplet_count`` counts with atomics and ``_triplet_scatter``
   moves every entry to a slot taken by an atomic increment, in an order that depends on thread timing (step 2 sorts
   it out).
2. **Sort each row** (``_sort_rows``, one thread per row) by ``(column, source index)``: insertion sort for short
   rows, a merge sort through the second pair of arrays for long ones, the result in ``sorted_*``. Ties keep source
   order, so duplicates are later summed in the order of their sources whatever the thread count: results are
   reproducible. The same pass counts the distinct valid columns of the row and packs them (with the position of each
   one's first entry) at the front of the row's segment of the entry arrays.
3. **Scan** the counts into the compact offsets.
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

from ..utils.common import SERIAL_THRESHOLD, num_threads
from .matrix import BSR_STATUS_ROW_CAPACITY_EXCEEDED, no_tape

#: Rows with at most this many entries are insertion-sorted; longer ones are merge-sorted in runs of this length.
_INSERTION = 16


@wp.func
def run_slot(u: int, uoff: wp.array(dtype=int), nrow: int, slot: wp.array(dtype=int), use_slot: int) -> int:
    """The output block of distinct entry ``u`` (through ``slot`` when ``use_slot``); -1 when there is none."""
    if u >= uoff[nrow]:
        return -1
    if use_slot != 0:
        return slot[u]
    return u


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
               cols: wp.array(dtype=int), srcs: wp.array(dtype=int), sorted_cols: wp.array(dtype=int),
               sorted_srcs: wp.array(dtype=int), row_nnz: wp.array(dtype=int)):
    # Sort row r's entries by (column, source) into sorted_cols / sorted_srcs, then compact its distinct valid
    # columns to the front of the segment in cols, with the position of each one's first entry in srcs.
    r = wp.tid()
    s = seg_beg[r]
    e = 0
    if has_end != 0:
        e = seg_end[r]
    else:
        e = seg_beg[r + 1]
    n = e - s
    if n <= _INSERTION:
        for i in range(s, e):
            sorted_cols[i] = cols[i]
            sorted_srcs[i] = srcs[i]
        _insertion(sorted_cols, sorted_srcs, s, e)
    else:
        # sorted runs of _INSERTION entries, then merge passes alternating between the arrays, ending in sorted_*
        lo = s
        while lo < e:
            _insertion(cols, srcs, lo, wp.min(lo + _INSERTION, e))
            lo = lo + _INSERTION
        width = int(_INSERTION)
        in_sorted = False
        while width < n:
            if in_sorted:
                _merge_pass(sorted_cols, sorted_srcs, cols, srcs, s, e, width)
            else:
                _merge_pass(cols, srcs, sorted_cols, sorted_srcs, s, e, width)
            in_sorted = not in_sorted
            width = width * 2
        if not in_sorted:
            for i in range(s, e):
                sorted_cols[i] = cols[i]
                sorted_srcs[i] = srcs[i]
    count = 0
    prev = -1
    for i in range(s, e):
        c = sorted_cols[i]
        if c >= 0 and c != prev:
            cols[s + count] = c
            srcs[s + count] = i
            count += 1
        prev = c
    row_nnz[r] = count


@wp.kernel(enable_backward=False)
def _emit_rows(seg_beg: wp.array(dtype=int), seg_end: wp.array(dtype=int), has_end: int,
               cols: wp.array(dtype=int), srcs: wp.array(dtype=int), uoff: wp.array(dtype=int), nrow: int,
               padded: int, dest_offsets: wp.array(dtype=int), dest_counts: wp.array(dtype=int),
               dest_columns: wp.array(dtype=int), status: wp.array(dtype=int),
               run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), slot: wp.array(dtype=int),
               want_blocks: int, sorted_srcs: wp.array(dtype=int), entry_block: wp.array(dtype=int)):
    # copy row r's distinct columns and run bounds (compacted by _sort_rows) to their places
    r = wp.tid()
    s = seg_beg[r]
    e = 0
    if has_end != 0:
        e = seg_end[r]
    else:
        e = seg_beg[r + 1]
    u0 = uoff[r]
    nr = uoff[r + 1] - u0
    base = u0
    fits = True
    if padded != 0:
        base = dest_offsets[r]
        if nr > dest_offsets[r + 1] - base:
            fits = False
            status[0] = BSR_STATUS_ROW_CAPACITY_EXCEEDED
            dest_counts[r] = 0
        else:
            dest_counts[r] = nr
    for j in range(nr):
        beg = srcs[s + j]
        end = e
        if j + 1 < nr:
            end = srcs[s + j + 1]
        run_beg[u0 + j] = beg
        run_end[u0 + j] = end
        if fits:
            dest_columns[base + j] = cols[s + j]
        if padded != 0:
            slot[u0 + j] = wp.where(fits, base + j, -1)
        if want_blocks != 0:
            for p in range(beg, end):
                entry_block[sorted_srcs[p]] = u0 + j


@wp.kernel(enable_backward=False)
def _triplet_count(rows: wp.array(dtype=int), cols: wp.array(dtype=int), count: wp.array(dtype=int),
                   use_count: int, nrow: int, ncol: int, values: wp.array(dtype=Any), prune: int,
                   keys: wp.array(dtype=int), counts: wp.array(dtype=int)):
    i = wp.tid()
    k = _triplet_key(rows, cols, count, use_count, nrow, ncol, values, prune, i)
    if k < nrow:
        wp.atomic_add(counts, k, 1)
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


@wp.func
def _triplet_key(rows: wp.array(dtype=int), cols: wp.array(dtype=int), count: wp.array(dtype=int), use_count: int,
                 nrow: int, ncol: int, values: wp.array(dtype=Any), prune: int, i: int) -> int:
    # the row bucket of triplet i: its row, or nrow when it is dropped
    r = rows[i]
    c = cols[i]
    ok = r >= 0 and r < nrow and c >= 0 and c < ncol
    if use_count != 0:
        if i >= count[0]:
            ok = False
    if ok and prune != 0:
        if values[i] == values.dtype(0.0):
            ok = False
    if ok:
        return r
    return nrow


@wp.kernel(enable_backward=False)
def _chunk_count(rows: wp.array(dtype=int), cols: wp.array(dtype=int), count: wp.array(dtype=int),
                 use_count: int, nrow: int, ncol: int, values: wp.array(dtype=Any), prune: int, n: int,
                 chunk: int, nchunks: int, spread: int, keys: wp.array(dtype=int), hist: wp.array(dtype=int)):
    # chunk c counts its triplets per row into its own histogram hist[c * (nrow + 1) + row]
    t = wp.tid()
    if t % spread != 0:
        return
    c = t / spread
    if c >= nchunks:
        return
    base = c * (nrow + 1)
    for i in range(c * chunk, wp.min((c + 1) * chunk, n)):
        k = _triplet_key(rows, cols, count, use_count, nrow, ncol, values, prune, i)
        keys[i] = k
        if k < nrow:
            hist[base + k] = hist[base + k] + 1


@wp.kernel(enable_backward=False)
def _chunk_totals(hist: wp.array(dtype=int), nchunks: int, nrow: int, totals: wp.array(dtype=int)):
    r = wp.tid()
    s = 0
    if r < nrow:
        for c in range(nchunks):
            s += hist[c * (nrow + 1) + r]
    totals[r] = s


@wp.kernel(enable_backward=False)
def _chunk_positions(hist: wp.array(dtype=int), starts: wp.array(dtype=int), nchunks: int, nrow: int):
    # each chunk's first position in row r: the row's start plus the counts of the chunks before it
    r = wp.tid()
    acc = starts[r]
    for c in range(nchunks):
        h = hist[c * (nrow + 1) + r]
        hist[c * (nrow + 1) + r] = acc
        acc += h


@wp.kernel(enable_backward=False)
def _chunk_scatter(keys: wp.array(dtype=int), cols: wp.array(dtype=int), n: int, chunk: int, nchunks: int,
                   spread: int, nrow: int, hist: wp.array(dtype=int), out_cols: wp.array(dtype=int),
                   out_srcs: wp.array(dtype=int)):
    t = wp.tid()
    if t % spread != 0:
        return
    c = t / spread
    if c >= nchunks:
        return
    base = c * (nrow + 1)
    for i in range(c * chunk, wp.min((c + 1) * chunk, n)):
        k = keys[i]
        if k < nrow:
            p = hist[base + k]
            hist[base + k] = p + 1
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


def _chunks(n: int, nrow: int, device: Any) -> int:
    """Chunks of the counting sort by row: two per CPU thread (0: the atomic scatter, for GPUs)."""
    if device.is_cuda:
        return 0
    if n < 65536:
        return 1
    # each chunk keeps a histogram of nrow + 1 counts: keep them all within a few times the triplets' size
    return max(1, min(2 * num_threads(), (4 * n) // max(nrow + 1, 1)))


def _group_triplets(rows: Any, cols: Any, n: int, nrow: int, ncol: int, count: Any = None, values: Any = None,
                    prune: bool = False, out: tuple[Any, Any] | None = None, chunks: int | None = None) -> Entries:
    """Group ``n`` triplets by row (step 1).

    Triplets with a row or column out of range, at or past ``count[0]`` (when ``count`` is given), or with an
    all-zero block in ``values`` (when ``prune``) are dropped. ``out`` optionally gives the entry column and source
    arrays to fill (at least ``n`` entries each). On the CPU the triplets are cut into a few chunks, each counting
    its rows in a histogram of its own and then moving its triplets, in order, to its part of each row: no atomic
    operations (whose memory fences would serialise the scattered stores), and each row lists its triplets in
    input order. On GPUs every triplet takes its slot with an atomic increment (``chunks=0``).
    """
    device = rows.device
    if chunks is None:
        chunks = _chunks(n, nrow, device)
    keys = wp.empty(max(n, 1), dtype=int, device=device)
    vals = values if (prune and values is not None) else _dummy(device)
    prune_flag = int(prune and values is not None)
    count_arg = count if count is not None else _dummy(device)
    if out is not None:
        out_cols, out_srcs = out
    else:
        out_cols = wp.empty(max(n, 1), dtype=int, device=device)
        out_srcs = wp.empty(max(n, 1), dtype=int, device=device)
    starts = wp.empty(nrow + 2, dtype=int, device=device)
    if chunks > 0 and n > 0:
        length = -(-n // chunks)
        spread = max(1, -(-SERIAL_THRESHOLD // chunks)) if chunks > 1 else 1
        hist = wp.empty(chunks * (nrow + 1), dtype=int, device=device)
        hist.zero_()  # zero_() rather than zeros(): recorded in a graph capture, so every replay starts from zero
        wp.launch(_chunk_count, chunks * spread, device=device,
                  inputs=[rows, cols, count_arg, int(count is not None), nrow, ncol, vals, prune_flag, n, length,
                          chunks, spread, keys, hist])
        totals = wp.empty(nrow + 2, dtype=int, device=device)
        wp.launch(_chunk_totals, nrow + 2, inputs=[hist, chunks, nrow, totals], device=device)
        wp.utils.array_scan(totals, starts, inclusive=False)
        wp.launch(_chunk_positions, nrow, inputs=[hist, starts, chunks, nrow], device=device)
        wp.launch(_chunk_scatter, chunks * spread, device=device,
                  inputs=[keys, cols, n, length, chunks, spread, nrow, hist, out_cols, out_srcs])
        return Entries(nrow, out_cols, out_srcs, starts, None, n)
    counts = wp.empty(nrow + 2, dtype=int, device=device)
    counts.zero_()
    if n > 0:
        wp.launch(_triplet_count, n, device=device,
                  inputs=[rows, cols, count_arg, int(count is not None), nrow, ncol, vals, prune_flag, keys, counts])
    wp.utils.array_scan(counts, starts, inclusive=False)
    if n > 0:
        cursor = wp.clone(starts)
        wp.launch(_triplet_scatter, n, inputs=[keys, cols, nrow, cursor, out_cols, out_srcs], device=device)
    return Entries(nrow, out_cols, out_srcs, starts, None, n)


def _coalesce(entries: Entries, dest_offsets: Any = None, dest_counts: Any = None, dest_columns: Any = None,
             padded: bool = False, status: Any = None, compact_offsets: Any = None,
             want_blocks: bool = False, runs_out: tuple[Any, Any, Any] | None = None,
             sorted_out: tuple[Any, Any] | None = None) -> Runs:
    """Sort and merge grouped entries into blocks (steps 2-4).

    For a compact result, the block offsets are written to ``compact_offsets`` (``nrow + 1`` ints, allocated when
    ``None``) and the block columns to ``dest_columns`` (capacity at least ``entries.capacity``). For a padded
    result, ``dest_offsets`` is the destination's capacity layout, ``dest_counts`` receives each row's active count
    and ``status`` the overflow flag. ``runs_out`` optionally gives the ``run_beg``, ``run_end`` and ``entry_block``
    arrays to fill (at least ``entries.capacity`` entries each), ``sorted_out`` the arrays receiving the sorted
    entries (as long as the entry arrays). The entry arrays themselves are used as scratch.
    """
    device = entries.device
    nrow = entries.nrow
    cap = entries.capacity
    has_end = int(entries.seg_end is not None)
    seg_end = entries.seg_end if entries.seg_end is not None else _dummy(device)
    row_nnz = wp.empty(nrow + 1, dtype=int, device=device)
    wp.launch(_tail_zero, 1, inputs=[row_nnz, nrow], device=device)
    if sorted_out is not None:
        sorted_c, sorted_s = sorted_out
    else:
        sorted_c = wp.empty(max(entries.cols.shape[0], 1), dtype=int, device=device)
        sorted_s = wp.empty(max(entries.srcs.shape[0], 1), dtype=int, device=device)
    if nrow > 0:
        wp.launch(_sort_rows, nrow, device=device,
                  inputs=[entries.seg_beg, seg_end, has_end, entries.cols, entries.srcs, sorted_c, sorted_s,
                          row_nnz])
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
                          int(want_blocks), sorted_s, entry_block if entry_block is not None else d])
    return Runs(nrow, run_beg, run_end, sorted_s, uoff, slot, cap, entry_block)


def group_triplets(*args: Any, **kwargs: Any) -> Entries:
    """Group triplets by row (see :func:`_group_triplets`); never recorded on a Tape."""
    with no_tape():
        return _group_triplets(*args, **kwargs)


def coalesce(*args: Any, **kwargs: Any) -> Runs:
    """Sort and merge grouped entries (see :func:`_coalesce`); never recorded on a Tape."""
    with no_tape():
        return _coalesce(*args, **kwargs)
