"""Shared parts of ``treadle.geometry``: argument checks, a prefix sum and a hash set, built from Treadle kernels.

The prefix sum runs in two kernel passes over contiguous blocks (per-block totals, then each block's running sum from
its offset); only the few block totals are summed on the host. :func:`unique_ids` numbers distinct int64 keys with a hash
table (open addressing, linear probing, keys inserted with ``atomic_cas``) in which each slot also records the
smallest item index that inserted its key; numbering the keys in the order of those first items makes the result
independent of the order in which the threads ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

#: Blocks of at least this many elements per prefix-sum thread (fewer threads than this many elements).
SCAN_BLOCK = 2048


# ------------------------------------------------------------------------------------------------ arguments
def vec3_arg(value: Any, name: str, default: tuple[float, float, float]) -> np.ndarray:
    """``value`` (a vec3, tuple or None) as three float32 values; a clear error when it is not three numbers."""
    if value is None:
        return np.asarray(default, np.float32)
    try:
        out = np.asarray([float(x) for x in value], np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a vec3 or a tuple of three floats, got {value!r}") from None
    if out.shape != (3,):
        raise ValueError(f"{name} must have three components, got {len(out)}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite, got {tuple(out.tolist())}")
    return out


def grid_bounds(nx: int, ny: int, nz: int, lower: Any, upper: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(lower, spacing) of a grid of nodes; ``upper`` defaults to the node indices' upper corner."""
    lo = vec3_arg(lower, f"{where}: lower", (0.0, 0.0, 0.0))
    hi = vec3_arg(upper, f"{where}: upper", (float(nx - 1), float(ny - 1), float(nz - 1)))
    return lo, (hi - lo) / np.array([nx - 1, ny - 1, nz - 1], np.float32)


def grid_dims(nx: Any, ny: Any, nz: Any, where: str) -> tuple[int, int, int]:
    """Node counts as ints, each at least 2."""
    dims = []
    for axis, n in zip("xyz", (nx, ny, nz)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{where}: n{axis} must be an int, got {type(n).__name__}")
        dims.append(int(n))
    if min(dims) < 2:
        raise ValueError(f"{where}: the grid needs at least 2 nodes on every axis, got {tuple(dims)}")
    return dims[0], dims[1], dims[2]


def field_arg(field: Any, where: str) -> Any:
    """A 3-d float32 array of node values (the reference's checks: ValueError for the shape, TypeError for dtype)."""
    if not isinstance(field, wp.array) or field.ndim != 3:
        raise ValueError(f"{where}: field must be a 3-d array, got {_describe(field)}")
    if field.dtype is not wp.float32:
        raise TypeError(f"{where}: field must have dtype float32, got {getattr(field.dtype, '__name__', field.dtype)}")
    if min(field.shape) < 2:
        raise ValueError(f"{where}: the field needs at least 2 nodes on every axis, got shape {tuple(field.shape)}")
    return field


def _describe(x: Any) -> str:
    if isinstance(x, wp.array):
        return f"a {x.ndim}-d array of {getattr(x.dtype, '__name__', x.dtype)}"
    return type(x).__name__


def device_arg(device: Any, *arrays: Any) -> Any:
    """The device to run on: the given one, else that of the first array given, else the default device."""
    if device is not None:
        return wp.get_device(device)
    for a in arrays:
        if isinstance(a, wp.array):
            return a.device
    return wp.get_device()


def next_pow2(n: int) -> int:
    """The smallest power of two >= max(n, 1)."""
    return 1 << max(0, int(n) - 1).bit_length()


# ------------------------------------------------------------------------------------------------ prefix sum
@wp.kernel(enable_backward=False)
def _scan_block_sums(counts: wp.array(dtype=wp.int32), shift: int, mask: int, block: int,
                     sums: wp.array(dtype=wp.int32)):
    b = wp.tid()
    n = counts.shape[0]
    start = b * block
    end = wp.min(start + block, n)
    s = 0
    for i in range(start, end):
        s += (counts[i] >> shift) & mask
    sums[b] = s


@wp.kernel(enable_backward=False)
def _scan_block_apply(counts: wp.array(dtype=wp.int32), shift: int, mask: int, block: int,
                      starts: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    b = wp.tid()
    n = counts.shape[0]
    start = b * block
    end = wp.min(start + block, n)
    s = starts[b]
    for i in range(start, end):
        out[i] = s
        s += (counts[i] >> shift) & mask


def exclusive_scan(counts: Any, shift: int = 0, mask: int = -1) -> tuple[Any, int]:
    """``(offsets, total)``: the exclusive prefix sum of an int32 array (any shape, row-major) and its total.

    With ``shift`` / ``mask``, the sum of the bit field ``(count >> shift) & mask`` of each entry (several counts
    packed in one array).
    """
    flat = counts.reshape((counts.size,)) if counts.ndim != 1 else counts
    n = flat.shape[0]
    dev = counts.device
    out = wp.empty(n, dtype=wp.int32, device=dev)
    if n == 0:
        return out.reshape(tuple(counts.shape)), 0
    threads = max(1, min(256, n // SCAN_BLOCK))
    block = -(-n // threads)
    threads = -(-n // block)
    sums = wp.empty(threads, dtype=wp.int32, device=dev)
    wp.launch(_scan_block_sums, dim=threads, inputs=[flat, shift, mask, block, sums], device=dev, record_tape=False)
    s = sums.numpy().astype(np.int64)
    total = int(s.sum())
    if total >= 2**31:
        raise ValueError(f"the output would need {total} entries, more than an int32 index can address")
    starts = wp.array((np.cumsum(s) - s).astype(np.int32), dtype=wp.int32, device=dev)
    wp.launch(_scan_block_apply, dim=threads, inputs=[flat, shift, mask, block, starts, out], device=dev,
              record_tape=False)
    return out.reshape(tuple(counts.shape)), total


# ------------------------------------------------------------------------------------------------ hash set
#: Bits per axis of a node subscript in :func:`node_key` (subscripts in [0, 2**20)).
NODE_BITS = 20
#: Low bits of a :func:`node_key` that :func:`hash_slot` keeps in place: a 4 x 4 x 4 block of nodes and an axis.
LOCAL_BITS = 8


@wp.func
def node_key(x: int, y: int, z: int, axis: int) -> wp.int64:
    """A key for node (x, y, z) (each in [0, 2**20)) and an axis tag (0..3).

    4 x 4 x 4 blocks of nodes share its high bits, so that nodes near each other land in the same few cache lines of
    the hash table.
    """
    block = (wp.int64(x >> 2) << wp.int64(36)) | (wp.int64(y >> 2) << wp.int64(18)) | wp.int64(z >> 2)
    local = ((x & 3) << 6) | ((y & 3) << 4) | ((z & 3) << 2) | axis
    return (block << wp.int64(8)) | wp.int64(local)


@wp.func
def hash_slot(key: wp.int64, mask: wp.int32) -> wp.int32:
    """The home slot of ``key`` in a table of ``mask + 1`` slots (at least 256).

    The key's high bits are mixed by a 64-bit finaliser, its low :data:`LOCAL_BITS` kept, so that a block of
    neighbouring keys fills a run of neighbouring slots.
    """
    h = wp.uint64(key >> wp.int64(8))
    h = (h ^ (h >> wp.uint64(33))) * wp.uint64(0xFF51AFD7ED558CCD)
    h = (h ^ (h >> wp.uint64(33))) * wp.uint64(0xC4CEB9FE1A85EC53)
    h = h ^ (h >> wp.uint64(33))
    h = (h << wp.uint64(8)) | wp.uint64(key & wp.int64(255))
    return wp.int32(h & wp.uint64(mask))


@wp.kernel(enable_backward=False)
def _hash_clear(table: wp.array(dtype=wp.int64)):
    s = wp.tid()
    table[2 * s] = wp.int64(-1)
    table[2 * s + 1] = wp.int64(9223372036854775807)


@wp.kernel(enable_backward=False)
def _hash_insert(keys: wp.array(dtype=wp.int64), table: wp.array(dtype=wp.int64), slots: wp.array(dtype=wp.int32)):
    # slot s holds its key at 2 s and the smallest item holding it at 2 s + 1: one cache line for both
    i = wp.tid()
    key = keys[i]
    if key < wp.int64(0):
        slots[i] = -1
        return
    mask = table.shape[0] // 2 - 1
    s = hash_slot(key, mask)
    while True:
        old = wp.atomic_cas(table, 2 * s, wp.int64(-1), key)
        if old == wp.int64(-1) or old == key:
            break
        s = (s + 1) & mask
    wp.atomic_min(table, 2 * s + 1, wp.int64(i))
    slots[i] = s


@wp.kernel(enable_backward=False)
def _first_flags(slots: wp.array(dtype=wp.int32), table: wp.array(dtype=wp.int64), flags: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = slots[i]
    f = 0
    if s >= 0:
        if table[2 * s + 1] == wp.int64(i):
            f = 1
    flags[i] = f


@wp.kernel(enable_backward=False)
def _first_ids(slots: wp.array(dtype=wp.int32), flags: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
               table: wp.array(dtype=wp.int64), first_item: wp.array(dtype=wp.int32)):
    # the first item of each key replaces the slot's first-item entry by the key's number
    i = wp.tid()
    if flags[i] != 0:
        table[2 * slots[i] + 1] = wp.int64(offsets[i])
        first_item[offsets[i]] = i


@wp.kernel(enable_backward=False)
def _item_ids(slots: wp.array(dtype=wp.int32), table: wp.array(dtype=wp.int64), ids: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = slots[i]
    v = -1
    if s >= 0:
        v = wp.int32(table[2 * s + 1])
    ids[i] = v


def unique_ids(keys: Any) -> tuple[Any, Any, int]:
    """Number the distinct non-negative keys of an int64 array in the order of their first occurrence.

    Returns:
        ``(ids, first_item, count)``: per item its key's number (-1 for a negative key), per number the first item
        holding it, and the number of distinct keys.
    """
    n = keys.shape[0]
    dev = keys.device
    ids = wp.empty(n, dtype=wp.int32, device=dev)
    if n == 0:
        return ids, wp.empty(0, dtype=wp.int32, device=dev), 0
    table = wp.empty(2 * max(256, next_pow2(2 * n)), dtype=wp.int64, device=dev)
    wp.launch(_hash_clear, dim=table.shape[0] // 2, inputs=[table], device=dev, record_tape=False)
    slots = wp.empty(n, dtype=wp.int32, device=dev)
    wp.launch(_hash_insert, dim=n, inputs=[keys, table, slots], device=dev, record_tape=False)
    flags = wp.empty(n, dtype=wp.int32, device=dev)
    wp.launch(_first_flags, dim=n, inputs=[slots, table, flags], device=dev, record_tape=False)
    offsets, total = exclusive_scan(flags)
    first_item = wp.empty(total, dtype=wp.int32, device=dev)
    wp.launch(_first_ids, dim=n, inputs=[slots, flags, offsets, table, first_item], device=dev, record_tape=False)
    wp.launch(_item_ids, dim=n, inputs=[slots, table, ids], device=dev, record_tape=False)
    return ids, first_item, total
