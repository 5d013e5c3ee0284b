"""Writing a coalesced topology into a destination matrix under a topology policy.

``compact``: the destination takes new offsets, columns and values (``row_counts`` becomes ``None``); arrays it
already has are reused when they are large enough and no source aliases them. ``padded``: each row is written into
the destination's existing capacity (``offsets`` unchanged, ``row_counts`` set); a row that does not fit is left
empty and the status flag :data:`BSR_STATUS_ROW_CAPACITY_EXCEEDED` is raised. ``masked``: the destination keeps its
active topology; its blocks take the values of the result at the same places (zero elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import treadle as wp

from ..runtime.graph import capturing
from .gather import masked_assign
from .matrix import BsrError, BsrMatrix, new_matrix, overlaps
from .topology import Entries, Runs, coalesce

ValuesFn = Callable[[Runs, Any], None]


def _aliased(dest: BsrMatrix, sources: Sequence[Any]) -> bool:
    mine = [dest.offsets, dest.row_counts, dest.columns, dest.values]
    return any(overlaps(a, s) for a in mine if a is not None for s in sources if s is not None)


def assemble(dest: BsrMatrix, entries: Entries, topology: str, values_fn: ValuesFn | None,
             sources: Sequence[Any] = (), requires_grad: bool = False, want_blocks: bool = False,
             runs_out: tuple[Any, Any, Any] | None = None, sorted_out: tuple[Any, Any] | None = None,
             fn: str = "") -> Runs:
    """Coalesce ``entries`` into ``dest`` under ``topology`` and compute its values with ``values_fn(runs, out)``.

    Args:
        dest: destination matrix (its ``nrow`` must be the entries' row count).
        entries: entries grouped by row.
        topology: ``"compact"``, ``"padded"`` or ``"masked"``.
        values_fn: writes the block values into ``out`` from the runs (``None``: values left uninitialised).
        sources: arrays the values are read from (so that they are never overwritten before they are read).
        requires_grad: whether the values array of the result needs a gradient.
        want_blocks: also map every source index to its block (``Runs.entry_block``).
        runs_out: arrays to write the runs into (see :func:`.topology.coalesce`).
        sorted_out: arrays to write the sorted entries into (see :func:`.topology.coalesce`).
        fn: the public function's name, for error messages.

    Returns:
        The runs of the coalesced topology (block numbering of the compact result).
    """
    device = entries.device
    if topology == "masked":
        tmp = new_matrix(dest.nrow, dest.ncol, dest.values.dtype, device, requires_grad=requires_grad)
        runs = assemble(tmp, entries, "compact", values_fn, (), requires_grad, want_blocks, runs_out, sorted_out,
                        fn)
        if values_fn is not None:
            masked_assign(dest, tmp)
        return runs
    if topology == "padded":
        if dest.row_counts is None:
            raise BsrError(f"{fn}(): topology='padded' needs a destination with row capacity (make it with "
                           "bsr_zeros(..., row_capacity=...))")
        if dest.offsets.shape[0] < dest.nrow + 1:
            raise BsrError(f"{fn}(): the destination's offsets hold {dest.offsets.shape[0]} entries for "
                           f"{dest.nrow} rows")
        aliased = _aliased(dest, sources)
        rg = requires_grad or dest.values.requires_grad
        columns = wp.empty_like(dest.columns) if aliased else dest.columns
        values = dest.values
        if aliased or (rg and not values.requires_grad):
            values = wp.empty(dest.values.shape[0], dtype=dest.values.dtype, device=device, requires_grad=rg)
        counts = wp.empty_like(dest.row_counts) if aliased else dest.row_counts
        runs = coalesce(entries, dest_offsets=dest.offsets, dest_counts=counts, dest_columns=columns, padded=True,
                        status=dest._ensure_status(), want_blocks=want_blocks, runs_out=runs_out,
                        sorted_out=sorted_out)
        if values_fn is not None:
            values_fn(runs, values)
        dest.columns, dest.values, dest.row_counts = columns, values, counts
        _note_capture(dest)
        return runs
    # compact
    cap = entries.capacity
    aliased = _aliased(dest, sources)
    rg = requires_grad or (dest.values is not None and dest.values.requires_grad)
    offsets = dest.offsets
    if aliased or offsets is None or offsets.shape[0] < dest.nrow + 1:
        offsets = wp.empty(dest.nrow + 1, dtype=int, device=device)
    columns = dest.columns
    if aliased or columns is None or columns.shape[0] < cap:
        columns = wp.empty(cap, dtype=int, device=device)
    values = dest.values
    if aliased or values.shape[0] < cap or (rg and not values.requires_grad):
        values = wp.empty(cap, dtype=dest.values.dtype, device=device, requires_grad=rg)
    runs = coalesce(entries, dest_columns=columns, compact_offsets=offsets, want_blocks=want_blocks,
                    runs_out=runs_out, sorted_out=sorted_out)
    if values_fn is not None:
        values_fn(runs, values)
    dest.offsets, dest.columns, dest.values = offsets, columns, values
    dest.row_counts = None
    dest.nnz = cap
    _note_capture(dest)
    return runs


def _note_capture(dest: BsrMatrix) -> None:
    if capturing():
        dest._recorded_topology = True
