"""Row-wise assembly of element matrices into a BSR matrix, without sorting triplets.

The element-wise bilinear kernel writes, per element ``d``, its test nodes ``tnodes[d * MT + i]``, its trial nodes
``rnodes[d * MR + j]`` (``-1`` for absent nodes) and its blocks ``vals[(d * MT + i) * MR + j]``. Each matrix row is
a test node; its columns are the trial nodes of the elements around it. So:

1. the (element, local node) slots of each test node are listed (a count, a scan, a fill) and sorted per row (a
   handful of slots per node), so that sums run in slot order whatever the thread count;
2. one thread per row inserts the trial nodes of its elements into a sorted, duplicate-free list (in a scratch row
   as long as its candidate count), skipping zero blocks when zeros are pruned, as the triplet path does;
3. the rows' lengths are scanned into the offsets, and one thread per row copies its columns and sums its blocks,
   finding each block's column by binary search (no atomics: a row is one thread's).

The result is the matrix :func:`treadle.sparse.bsr_set_from_triplets` builds from the same triplets (the same
pattern; the same sums, in slot order).
"""

import typing
from typing import Any

import treadle as wp

_Mat = wp.types.matrix(shape=(typing.Any, typing.Any), dtype=wp.Float)


@wp.func
def _is_zero(b: wp.Float):
    return b == type(b)(0.0)


@wp.func
def _is_zero(b: _Mat):  # noqa: F811 - overload
    return wp.ddot(b, b) == type(b[0, 0])(0.0)


@wp.func
def _lower_bound(a: wp.array(dtype=int), base: int, m: int, c: int) -> int:
    """The first position ``k`` in ``[0, m)`` with ``a[base + k] >= c`` (``m`` when none): ``a`` is sorted there."""
    lo = 0
    hi = m
    while lo < hi:
        mid = (lo + hi) // 2
        if a[base + mid] < c:
            lo = mid + 1
        else:
            hi = mid
    return lo


@wp.kernel
def _count_slots(tnodes: wp.array(dtype=int), counts: wp.array(dtype=int)):
    e = wp.tid()
    r = tnodes[e]
    if r >= 0:
        wp.atomic_add(counts, r, 1)


@wp.kernel
def _fill_slots(tnodes: wp.array(dtype=int), starts: wp.array(dtype=int), fill: wp.array(dtype=int),
                slots: wp.array(dtype=int)):
    e = wp.tid()
    r = tnodes[e]
    if r >= 0:
        p = wp.atomic_add(fill, r, 1)
        slots[starts[r] + p] = e


@wp.kernel
def _row_columns(starts: wp.array(dtype=int), slots: wp.array(dtype=int), rnodes: wp.array(dtype=int),
                 vals: wp.array(dtype=Any), mt: int, mr: int, prune: int, scratch: wp.array(dtype=int),
                 lengths: wp.array(dtype=int)):
    r = wp.tid()
    beg = starts[r]
    end = starts[r + 1]
    # insertion sort of the row's slots (a few per node)
    for a in range(beg + 1, end):
        e = slots[a]
        b = a
        while b > beg and slots[b - 1] > e:
            slots[b] = slots[b - 1]
            b -= 1
        slots[b] = e
    base = beg * mr
    m = 0
    for a in range(beg, end):
        e = slots[a]
        d = e // mt
        for j in range(mr):
            c = rnodes[d * mr + j]
            if c < 0:
                continue
            if prune != 0:
                if _is_zero(vals[e * mr + j]):
                    continue
            lo = _lower_bound(scratch, base, m, c)
            if lo < m and scratch[base + lo] == c:
                continue
            k = m
            while k > lo:
                scratch[base + k] = scratch[base + k - 1]
                k -= 1
            scratch[base + lo] = c
            m += 1
    lengths[r] = m


@wp.kernel
def _row_values(starts: wp.array(dtype=int), slots: wp.array(dtype=int), rnodes: wp.array(dtype=int),
                vals: wp.array(dtype=Any), mt: int, mr: int, scratch: wp.array(dtype=int),
                offsets: wp.array(dtype=int), columns: wp.array(dtype=int), values: wp.array(dtype=Any)):
    r = wp.tid()
    beg = starts[r]
    end = starts[r + 1]
    base = beg * mr
    out = offsets[r]
    m = offsets[r + 1] - out
    for k in range(m):
        columns[out + k] = scratch[base + k]
    for a in range(beg, end):
        e = slots[a]
        d = e // mt
        for j in range(mr):
            c = rnodes[d * mr + j]
            if c < 0:
                continue
            lo = _lower_bound(scratch, base, m, c)
            # a pruned (zero) block has no column: nothing to add
            if lo < m and scratch[base + lo] == c:
                values[out + lo] = values[out + lo] + vals[e * mr + j]


def assemble_rows(dest: Any, n_rows: int, tnodes: Any, rnodes: Any, vals: Any, mt: int, mr: int,
                  prune: bool) -> None:
    """Make ``dest`` (``n_rows`` rows) the sum of the element blocks (see the module documentation)."""
    device = vals.device
    n_slots = tnodes.shape[0]
    counts = wp.zeros(n_rows + 1, dtype=int, device=device)
    wp.launch(_count_slots, dim=n_slots, inputs=[tnodes, counts], device=device)
    starts = wp.empty(n_rows + 1, dtype=int, device=device)
    wp.utils.array_scan(counts, starts, inclusive=False)
    total = int(starts.numpy()[n_rows]) if n_rows > 0 else 0
    slots = wp.empty(max(total, 1), dtype=int, device=device)
    fill = wp.zeros(n_rows + 1, dtype=int, device=device)
    wp.launch(_fill_slots, dim=n_slots, inputs=[tnodes, starts, fill, slots], device=device)
    scratch = wp.empty(max(total * mr, 1), dtype=int, device=device)
    lengths = wp.zeros(n_rows + 1, dtype=int, device=device)
    wp.launch(_row_columns, dim=n_rows, inputs=[starts, slots, rnodes, vals, mt, mr, 1 if prune else 0, scratch,
                                                lengths], device=device)
    offsets = wp.empty(n_rows + 1, dtype=int, device=device)
    wp.utils.array_scan(lengths, offsets, inclusive=False)
    nnz = int(offsets.numpy()[n_rows]) if n_rows > 0 else 0
    columns = wp.empty(max(nnz, 1), dtype=int, device=device)
    values = wp.zeros(max(nnz, 1), dtype=vals.dtype, device=device)
    wp.launch(_row_values, dim=n_rows, inputs=[starts, slots, rnodes, vals, mt, mr, scratch, offsets, columns,
                                               values], device=device)
    dest.offsets, dest.columns, dest.values = offsets, columns, values
    dest.row_counts = None
    dest.nnz = nnz
