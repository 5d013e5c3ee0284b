"""``runlength_encode``: runs of equal consecutive values, block-parallel in Treadle kernels.

``_block_heads`` counts the runs that start in each block (a run starts where a value differs from the one before
it); ``_scan_totals`` (from ``reduce``) turns the counts into each block's first run index; ``_block_runs`` writes
each run's value and start, and ``_run_lengths`` the differences of consecutive starts.
"""

from __future__ import annotations

from typing import Any

import treadle as wp

from ..runtime.graph import capturing
from .common import (
    UtilsTypeError,
    UtilsValueError,
    block_span,
    blocks,
    check_array,
    check_count,
    check_same_device,
    type_name,
)
from .reduce import _scan_totals


@wp.kernel(enable_backward=False)
def _block_heads(v: wp.array(dtype=int), n: int, block: int, spread: int, nblocks: int,
                 heads: wp.array(dtype=int)):
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    b = span[0]
    start = span[1]
    end = span[2]
    c = 0
    for i in range(start, end):
        if i == 0:
            c = c + 1
        elif v[i] != v[i - 1]:
            c = c + 1
    heads[b] = c


@wp.kernel(enable_backward=False)
def _block_runs(v: wp.array(dtype=int), n: int, block: int, spread: int, nblocks: int, first: wp.array(dtype=int),
                run_values: wp.array(dtype=int), starts: wp.array(dtype=int)):
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    b = span[0]
    start = span[1]
    end = span[2]
    r = first[b]
    for i in range(start, end):
        head = i == 0
        if not head:
            head = v[i] != v[i - 1]
        if head:
            run_values[r] = v[i]
            starts[r] = i
            r = r + 1
    if b == nblocks - 1:
        starts[r] = n


@wp.kernel(enable_backward=False)
def _run_lengths(starts: wp.array(dtype=int), first: wp.array(dtype=int), nblocks: int,
                 run_lengths: wp.array(dtype=int), run_count: wp.array(dtype=int)):
    r = wp.tid()
    total = first[nblocks]
    if r < total:
        run_lengths[r] = starts[r + 1] - starts[r]
    if r == 0:
        run_count[0] = total


@wp.kernel(enable_backward=False)
def _total_runs(first: wp.array(dtype=int), heads: wp.array(dtype=int), nblocks: int):
    first[nblocks] = first[nblocks - 1] + heads[nblocks - 1]


def runlength_encode(values: Any, run_values: Any, run_lengths: Any, run_count: Any = None,
                     value_count: int | None = None) -> Any:
    """Run-length encode ``values``: ``[1, 1, 1, 2, 2, 3]`` gives values ``[1, 2, 3]`` and lengths ``[3, 2, 1]``.

    Args:
        values: ``int32`` values (1-D, any stride).
        run_values: ``int32`` output, at least ``value_count`` long: the value of each run.
        run_lengths: ``int32`` output, at least ``value_count`` long: the length of each run.
        run_count: optional ``int32`` array whose first element receives the number of runs (without a host
            synchronization).
        value_count: encode only the first ``value_count`` values (default: all).

    Returns:
        The number of runs (an ``int``) when ``run_count`` is ``None``, else ``run_count``.

    Raises:
        UtilsTypeError: a dtype other than ``int32``.
        UtilsValueError: different devices, outputs shorter than ``value_count``, a negative ``value_count`` or one
            larger than ``values``.
        NotImplementedError: ``run_count`` is ``None`` during a graph capture (the count could not be replayed).

    """
    for name, a in (("values", values), ("run_values", run_values), ("run_lengths", run_lengths)):
        check_array(name, a)
    if run_count is not None:
        check_array("run_count", run_count)
    check_same_device(values=values, run_values=run_values, run_lengths=run_lengths, run_count=run_count)
    if values.dtype != wp.int32:
        raise UtilsTypeError(f"values must be int32, got {type_name(values.dtype)}")
    if run_values.dtype != values.dtype:
        raise UtilsTypeError(f"values and run_values data types do not match ({type_name(values.dtype)} vs "
                             f"{type_name(run_values.dtype)})")
    if run_lengths.dtype != wp.int32:
        raise UtilsTypeError(f"run_lengths array must be of type int32, got {type_name(run_lengths.dtype)}")
    if run_count is not None and run_count.dtype != wp.int32:
        raise UtilsTypeError(f"run_count array must be of type int32, got {type_name(run_count.dtype)}")
    for name, a in (("values", values), ("run_values", run_values), ("run_lengths", run_lengths)):
        if a.ndim != 1:
            raise UtilsValueError(f"{name} must be one-dimensional, got {a.ndim} dimensions")
    if value_count is None:
        n = values.shape[0]
    else:
        try:
            n = check_count("value_count", value_count)
        except ValueError as e:
            raise UtilsValueError(str(e)) from None
        if n > values.shape[0]:
            raise UtilsValueError(f"value_count ({n}) exceeds the size of values ({values.shape[0]})")
    if run_values.shape[0] < n or run_lengths.shape[0] < n:
        raise UtilsValueError(f"run_values and run_lengths must hold at least value_count ({n}) elements, got "
                              f"{run_values.shape[0]} and {run_lengths.shape[0]}")
    if run_count is not None and run_count.size < 1:
        raise UtilsValueError("run_count must hold at least one element")
    if run_count is None and n > 0 and capturing():
        raise NotImplementedError("runlength_encode() returns the run count to the host, which a graph capture "
                                  "cannot replay; pass run_count= (a 1-element int32 array) while capturing")
    device = values.device
    count = run_count if run_count is not None else wp.empty(1, dtype=wp.int32, device=device)
    if n == 0:
        count.zero_()
        return run_count if run_count is not None else 0
    v = values[:n]
    plan = blocks(n, min_block=65536)
    heads = wp.empty(plan.nblocks, dtype=int, device=device)
    first = wp.zeros(plan.nblocks + 1, dtype=int, device=device)
    starts = wp.empty(n + 1, dtype=int, device=device)
    zero = wp.zeros(1, dtype=int, device=device)
    shape = [n, plan.block, plan.spread, plan.nblocks]
    wp.launch(_block_heads, plan.dim, inputs=[v, *shape, heads], device=device)
    wp.copy(first, heads, count=plan.nblocks)
    wp.launch(_scan_totals, 1, inputs=[first, plan.nblocks, zero], device=device)
    wp.launch(_total_runs, 1, inputs=[first, heads, plan.nblocks], device=device)
    wp.launch(_block_runs, plan.dim, inputs=[v, *shape, first, run_values, starts], device=device)
    wp.launch(_run_lengths, n, inputs=[starts, first, plan.nblocks, run_lengths, count], device=device)
    if run_count is not None:
        return run_count
    return int(count.numpy()[0])
