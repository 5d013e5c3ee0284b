"""Stable key-value sorts built from Treadle kernels: ``radix_sort_pairs`` and ``segmented_sort_pairs``.

``radix_sort_pairs`` is a parallel least-significant-digit radix sort, 8 bits a pass. Keys are first mapped to
unsigned integers of the same width whose order is the keys' order (``_digit``): signed integers flip the sign bit;
floats flip the sign bit of non-negative values and every bit of negative ones, so ``-NaN < -inf < ... < -0.0 <
+0.0 < ... < +inf < +NaN`` (the order of the reference). Each pass:

1. ``_block_hist``: every block of the keys counts its digits (one kernel thread per block, blocks in parallel);
2. ``_scan_hist``: an exclusive scan of the digit-major table of counts gives each (digit, block) its first output
   position, so equal digits keep their order (stability); a digit shared by every key skips the pass;
3. ``_block_scatter``: every block writes its pairs to those positions, in order.

Passes alternate between the first and second halves of the arrays (the reference's ``2 * count`` storage), and a
final copy brings the result back into the first half when needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
    flat,
)

RADIX_BITS = 8
RADIX = 1 << RADIX_BITS

#: key dtype -> (unsigned view dtype, key kind: 0 unsigned, 1 signed, 2 float)
_KEY_KINDS = {
    wp.uint32: (wp.uint32, 0),
    wp.int32: (wp.uint32, 1),
    wp.float32: (wp.uint32, 2),
    wp.uint64: (wp.uint64, 0),
    wp.int64: (wp.uint64, 1),
    wp.float64: (wp.uint64, 2),
}
_VALUE_VIEWS = {4: wp.uint32, 8: wp.uint64}

# Segments at least this long are sorted with the parallel sort; shorter ones by one kernel thread each.
_BIG_SEGMENT = 1 << 15
_INSERTION_MAX = 32


@wp.func
def _ordered(k: wp.uint32, kind: int) -> wp.uint32:
    # the unsigned integer whose order is the key's order (kind 0 unsigned, 1 signed, 2 floating point)
    if kind == 1:
        return k ^ wp.uint32(0x80000000)
    if kind == 2:
        if (k & wp.uint32(0x80000000)) != wp.uint32(0):
            return ~k
        return k ^ wp.uint32(0x80000000)
    return k


@wp.func
def _ordered(k: wp.uint64, kind: int) -> wp.uint64:  # noqa: F811 - overload by key width
    if kind == 1:
        return k ^ wp.uint64(0x8000000000000000)
    if kind == 2:
        if (k & wp.uint64(0x8000000000000000)) != wp.uint64(0):
            return ~k
        return k ^ wp.uint64(0x8000000000000000)
    return k


@wp.func
def _digit(k: wp.uint32, kind: int, shift: int, mask: int) -> int:
    return int((_ordered(k, kind) >> wp.uint32(shift)) & wp.uint32(mask))


@wp.func
def _digit(k: wp.uint64, kind: int, shift: int, mask: int) -> int:  # noqa: F811 - overload by key width
    return int((_ordered(k, kind) >> wp.uint64(shift)) & wp.uint64(mask))


@wp.kernel(enable_backward=False)
def _block_hist(keys: wp.array(dtype=Any), n: int, block: int, spread: int, nblocks: int, shift: int, mask: int,
                kind: int, hist: wp.array(dtype=int)):
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    b = span[0]
    counts = wp.zeros(256, dtype=int)
    start = span[1]
    end = span[2]
    for i in range(start, end):
        d = _digit(keys[i], kind, shift, mask)
        counts[d] = counts[d] + 1
    for d in range(256):
        hist[d * nblocks + b] = counts[d]


@wp.kernel(enable_backward=False)
def _scan_hist(hist: wp.array(dtype=int), m: int, n: int, trivial: wp.array(dtype=int)):
    s = 0
    triv = 0
    for i in range(m):
        c = hist[i]
        if c == n:
            triv = 1
        hist[i] = s
        s = s + c
    trivial[0] = triv


@wp.kernel(enable_backward=False)
def _block_scatter(keys: wp.array(dtype=Any), vals: wp.array(dtype=Any), n: int, block: int, spread: int,
                   nblocks: int, shift: int, mask: int, kind: int, hist: wp.array(dtype=int),
                   keys_out: wp.array(dtype=Any), vals_out: wp.array(dtype=Any)):
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    b = span[0]
    offs = wp.zeros(256, dtype=int)
    for d in range(256):
        offs[d] = hist[d * nblocks + b]
    start = span[1]
    end = span[2]
    for i in range(start, end):
        k = keys[i]
        d = _digit(k, kind, shift, mask)
        o = offs[d]
        keys_out[o] = k
        vals_out[o] = vals[i]
        offs[d] = o + 1


@wp.kernel(enable_backward=False)
def _segment_sort(keys: wp.array(dtype=wp.uint32), vals: wp.array(dtype=wp.uint32), count: int,
                  starts: wp.array(dtype=int), ends: wp.array(dtype=int), has_ends: int, kind: int, big: int):
    # one segment per thread: insertion sort when short, else a serial LSD radix sort through the scratch half
    sg = wp.tid()
    s = starts[sg]
    e = 0
    if has_ends != 0:
        e = ends[sg]
    else:
        e = starts[sg + 1]
    n = e - s
    if n < 2 or n >= big:
        return
    if n <= 32:
        for i in range(s + 1, e):
            k = keys[i]
            v = vals[i]
            ok = _ordered(k, kind)
            j = i - 1
            while j >= s and _ordered(keys[j], kind) > ok:
                keys[j + 1] = keys[j]
                vals[j + 1] = vals[j]
                j = j - 1
            keys[j + 1] = k
            vals[j + 1] = v
        return
    counts = wp.zeros(256, dtype=int)
    src = s
    dst = count + s
    for p in range(4):
        shift = p * 8
        for d in range(256):
            counts[d] = 0
        for i in range(src, src + n):
            d = _digit(keys[i], kind, shift, 255)
            counts[d] = counts[d] + 1
        trivial = 0
        total = 0
        for d in range(256):
            c = counts[d]
            if c == n:
                trivial = 1
            counts[d] = total
            total = total + c
        if trivial == 0:
            for i in range(src, src + n):
                k = keys[i]
                d = _digit(k, kind, shift, 255)
                o = dst + counts[d]
                keys[o] = k
                vals[o] = vals[i]
                counts[d] = counts[d] + 1
            tmp = src
            src = dst
            dst = tmp
    if src != s:
        for i in range(n):
            keys[s + i] = keys[src + i]
            vals[s + i] = vals[src + i]


def _key_view(name: str, keys: Any, allowed: dict[Any, tuple[Any, int]]) -> tuple[Any, Any, int]:
    spec = allowed.get(keys.dtype)
    if spec is None:
        names = ", ".join(getattr(t, "__name__", str(t)) for t in allowed)
        raise UtilsTypeError(f"{name} has unsupported data type {getattr(keys.dtype, '__name__', keys.dtype)}; "
                             f"supported: {names}")
    return spec[0], spec[1], wp.types.type_size_in_bytes(keys.dtype) * 8


def _radix_passes(ka: Any, kb: Any, va: Any, vb: Any, n: int, kind: int, begin_bit: int, end_bit: int) -> None:
    """Sort ``ka``/``va`` (length ``n``) by bits [begin_bit, end_bit) of the ordered keys, ``kb``/``vb`` scratch."""
    if n < 2 or begin_bit >= end_bit:
        return
    device = ka.device
    plan = blocks(n)
    hist = wp.empty(RADIX * plan.nblocks, dtype=int, device=device)
    trivial = wp.zeros(1, dtype=int, device=device)
    check_trivial = not capturing()
    first_k, first_v = ka, va
    for shift in range(begin_bit, end_bit, RADIX_BITS):
        mask = (1 << min(RADIX_BITS, end_bit - shift)) - 1
        common = [n, plan.block, plan.spread, plan.nblocks, shift, mask, kind]
        wp.launch(_block_hist, plan.dim, inputs=[ka, *common, hist], device=device)
        wp.launch(_scan_hist, 1, inputs=[hist, RADIX * plan.nblocks, n, trivial], device=device)
        if check_trivial and int(trivial.numpy()[0]):
            continue  # every key has the same digit here: the order does not change
        wp.launch(_block_scatter, plan.dim, inputs=[ka, va, *common, hist, kb, vb], device=device)
        ka, kb, va, vb = kb, ka, vb, va
    if ka.ptr != first_k.ptr:
        wp.copy(first_k, ka)
        wp.copy(first_v, va)


def radix_sort_pairs(keys: Any, values: Any, count: int, begin_bit: int = 0, end_bit: int | None = None) -> None:
    """Sort the first ``count`` key-value pairs by key, in place, with a stable radix sort.

    ``keys`` and ``values`` must hold at least ``2 * count`` elements: elements ``count`` to ``2 * count`` are
    scratch space and are overwritten. Floating-point keys sort as ``-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf <
    +NaN`` (NaNs by their sign bit).

    Args:
        keys: keys to sort: ``int32``, ``uint32``, ``float32``, ``int64``, ``uint64`` or ``float64``; one-dimensional
            or contiguous.
        values: values moved with their keys; elements of 4 or 8 bytes (any type).
        count: number of pairs to sort.
        begin_bit: least significant bit of the (order-mapped) key to sort by.
        end_bit: bit after the most significant one to sort by (default: the key width).

    Raises:
        UtilsTypeError: unsupported key or value type (also a ``TypeError`` and ``RuntimeError``).
        UtilsValueError: arrays on different devices, too short, or strided and multi-dimensional, or a bad bit
            range (also a ``ValueError`` and ``RuntimeError``).

    """
    check_array("keys", keys)
    check_array("values", values)
    check_same_device(keys=keys, values=values)
    count = check_count("count", count)
    key_view, kind, width = _key_view("keys", keys, _KEY_KINDS)
    value_view = _VALUE_VIEWS.get(wp.types.type_size_in_bytes(values.dtype))
    if value_view is None:
        raise UtilsTypeError(f"values must have elements of 4 or 8 bytes, got {getattr(values.dtype, '__name__', '')}"
                             f" ({wp.types.type_size_in_bytes(values.dtype)} bytes)")
    end = width if end_bit is None else int(end_bit)
    begin = int(begin_bit)
    if not 0 <= begin <= end <= width:
        raise UtilsValueError(f"begin_bit={begin}, end_bit={end} must satisfy 0 <= begin_bit <= end_bit <= {width}")
    k, v = flat("keys", keys), flat("values", values)
    if k.shape[0] < 2 * count or v.shape[0] < 2 * count:
        raise UtilsValueError(f"keys and values must hold at least 2*count = {2 * count} elements (scratch space), "
                              f"got {k.shape[0]} and {v.shape[0]}")
    if count < 2:
        return
    k, v = k.view(key_view), v.view(value_view)
    _radix_passes(k[:count], k[count:2 * count], v[:count], v[count:2 * count], count, kind, begin, end)


_SEG_KEYS = {wp.int32: (wp.uint32, 1), wp.float32: (wp.uint32, 2)}


def _check_segments(starts: Any, ends: Any, count: int) -> None:
    s = starts.numpy().astype(np.int64)
    e = s[1:] if ends is None else ends.numpy().astype(np.int64)
    s = s[:-1] if ends is None else s
    bad = np.flatnonzero((s < 0) | (s > e) | (e > count))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"Invalid segment range at index {i}: [{s[i]}, {e[i]}) for count {count}; segments must "
                         f"satisfy 0 <= start <= end <= count")


def segmented_sort_pairs(keys: Any, values: Any, count: int, segment_start_indices: Any,
                         segment_end_indices: Any = None) -> None:
    """Sort key-value pairs within each segment, in place, stably, in ascending key order.

    Segments are half-open ranges ``[start, end)`` of the first ``count`` elements: consecutive entries of
    ``segment_start_indices`` (N entries, N - 1 segments), or matching entries of ``segment_start_indices`` and
    ``segment_end_indices``. Elements outside every segment are not changed. ``keys`` and ``values`` must hold at
    least ``2 * count`` elements; elements ``count`` to ``2 * count`` are scratch space. Segments must not overlap.

    Args:
        keys: ``int32`` or ``float32`` keys (contiguous); floats order as in :func:`radix_sort_pairs`.
        values: ``int32`` values (contiguous).
        count: number of elements the segments cover.
        segment_start_indices: ``int32`` start of each segment (1-D).
        segment_end_indices: ``int32`` end of each segment (1-D, as long as the starts), or ``None``.

    Raises:
        TypeError: ``count`` is not an integer.
        ValueError: ``count`` is negative, or a segment range is invalid (checked on the host for CPU arrays).
        UtilsTypeError: unsupported dtypes.
        UtilsValueError: different devices, arrays too short, not contiguous, or segment arrays not 1-D or of
            different lengths.

    """
    for name, a in (("keys", keys), ("values", values), ("segment_start_indices", segment_start_indices)):
        check_array(name, a)
    if segment_end_indices is not None:
        check_array("segment_end_indices", segment_end_indices)
    check_same_device(keys=keys, values=values, segment_start_indices=segment_start_indices,
                      segment_end_indices=segment_end_indices)
    count = check_count("count", count)
    key_view, kind, _ = _key_view("keys", keys, _SEG_KEYS)
    if values.dtype != wp.int32:
        raise UtilsTypeError(f"values must be int32, got {getattr(values.dtype, '__name__', values.dtype)}")
    for name, a in (("keys", keys), ("values", values)):
        if not a.is_contiguous:
            raise UtilsValueError(f"segmented_sort_pairs() requires a contiguous {name} array")
    segs = [("segment_start_indices", segment_start_indices)]
    if segment_end_indices is not None:
        segs.append(("segment_end_indices", segment_end_indices))
    for name, a in segs:
        if a.ndim != 1:
            raise UtilsValueError(f"{name} must be one-dimensional, got {a.ndim} dimensions")
        if a.dtype != wp.int32:
            raise UtilsTypeError(f"{name} must be int32, got {getattr(a.dtype, '__name__', a.dtype)}")
    if segment_end_indices is not None and segment_end_indices.shape[0] != segment_start_indices.shape[0]:
        raise UtilsValueError(f"segment_start_indices and segment_end_indices must have the same length "
                              f"({segment_start_indices.shape[0]} vs {segment_end_indices.shape[0]})")
    k, v = keys.flatten(), values.flatten()
    if k.shape[0] < 2 * count or v.shape[0] < 2 * count:
        raise UtilsValueError(f"keys and values must hold at least 2*count = {2 * count} elements (scratch space), "
                              f"got {k.shape[0]} and {v.shape[0]}")
    nseg = segment_start_indices.shape[0] - (1 if segment_end_indices is None else 0)
    if nseg <= 0 or count == 0:
        return
    host = keys.device.is_cpu and not capturing()
    if host:
        _check_segments(segment_start_indices, segment_end_indices, count)
    k, v = k.view(key_view), v.view(wp.uint32)
    ends = segment_end_indices if segment_end_indices is not None else segment_start_indices
    big = _BIG_SEGMENT if host else 2**31 - 1
    wp.launch(_segment_sort, nseg, device=keys.device,
              inputs=[k, v, count, segment_start_indices, ends, int(segment_end_indices is not None), kind, big])
    if host:
        s = segment_start_indices.numpy()
        e = s[1:] if segment_end_indices is None else segment_end_indices.numpy()
        s = s[:nseg]
        for i in np.flatnonzero((e - s) >= big):
            a, b = int(s[i]), int(e[i])
            _radix_passes(k[a:b], k[count + a:count + b], v[a:b], v[count + a:count + b], b - a, kind, 0, 32)
