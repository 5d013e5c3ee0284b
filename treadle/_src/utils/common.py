"""Shared pieces of the array utilities: argument errors, argument checks, and block-parallel launch shapes.

Block-parallel kernels here give each kernel thread one contiguous block of elements, processed in order (so that
sorts stay stable and scans need one pass per block). A CPU launch runs on the pool only from
``SERIAL_THRESHOLD`` threads on, cut into chunks of at least ``MIN_CHUNK`` threads, so a launch over ``nblocks``
blocks uses ``nblocks * spread`` threads of which only every ``spread``-th works: each chunk the pool hands out then
holds about one block, and the blocks spread over the workers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import treadle as wp

from ..core.errors import TreadleError
from ..runtime.threadpool import MIN_CHUNK, SERIAL_THRESHOLD, num_threads


class UtilsTypeError(TreadleError, TypeError, RuntimeError):
    """An array utility was given an array of an unsupported data type.

    Also a ``RuntimeError``, as the reference raises for these cases.
    """


class UtilsValueError(TreadleError, ValueError, RuntimeError):
    """An array utility was given arrays of the wrong size, shape or layout, or on different devices.

    Also a ``RuntimeError``, as the reference raises for most of these cases.
    """


def type_name(dtype: Any) -> str:
    """Short name of a Treadle dtype (``float32``, ``vec3f``)."""
    return getattr(dtype, "__name__", str(dtype))


def check_array(name: str, a: Any) -> None:
    if not isinstance(a, wp.array):
        raise UtilsTypeError(f"{name} must be a treadle array, got {type(a).__name__}")


def check_same_device(**arrays: Any) -> None:
    """Raise if the given arrays are not all on one device."""
    items = [(k, v) for k, v in arrays.items() if v is not None]
    first_name, first = items[0]
    for name, a in items[1:]:
        if a.device != first.device:
            raise UtilsValueError(
                f"{first_name} is on device {first.device} but {name} is on device {a.device}; all arrays must be "
                "on the same device (copy one with .to(device))"
            )


def check_count(name: str, count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, (int,)) and not hasattr(count, "__index__"):
        raise TypeError(f"{name} must be an integer, got {type(count).__name__}")
    value = int(count.__index__()) if hasattr(count, "__index__") else int(count)
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    if value > 2**31 - 1:
        raise ValueError(f"{name} must fit a signed 32-bit integer, got {value}")
    return value


def flat(name: str, a: Any) -> Any:
    """A 1-D view of ``a``: itself when 1-D (any stride), its flattening when contiguous."""
    if a.ndim == 1:
        return a
    if not a.is_contiguous:
        raise UtilsValueError(f"{name} must be one-dimensional or contiguous, got a strided {a.ndim}-D array")
    return a.flatten()


@dataclasses.dataclass(frozen=True)
class Blocks:
    """How ``n`` elements are cut into blocks for a block-parallel launch."""

    n: int
    nblocks: int
    block: int
    spread: int

    @property
    def dim(self) -> int:
        """Threads of the launch (``nblocks * spread``)."""
        return self.nblocks * self.spread


def blocks(n: int, min_block: int = 16384, max_blocks: int = 64) -> Blocks:
    """Cut ``n`` elements into at most ``max_blocks`` blocks of at least ``min_block`` elements (one if ``n`` is 0)."""
    nblocks = max(1, min(max_blocks, n // max(1, min_block)))
    if num_threads() <= 1:
        nblocks = 1 if n < min_block * 4 else nblocks
    block = max(1, -(-n // nblocks))
    nblocks = max(1, -(-n // block))
    spread = 1
    if nblocks > 1:
        spread = max(MIN_CHUNK, -(-SERIAL_THRESHOLD // nblocks))
    return Blocks(n, nblocks, block, spread)


@wp.func
def block_span(t: int, n: int, block: int, spread: int, nblocks: int) -> wp.vec3i:
    """``(block, start, end)`` of the block kernel thread ``t`` processes (see :func:`blocks`).

    The block is -1 for the threads that have none: all but every ``spread``-th, and those past the last block.
    """
    if t % spread != 0:
        return wp.vec3i(-1, 0, 0)
    b = t / spread
    if b >= nblocks:
        return wp.vec3i(-1, 0, 0)
    start = b * block
    return wp.vec3i(b, start, wp.min(start + block, n))


def view2d(a: Any) -> Any:
    """A 2-D scalar view ``(len(a), components)`` of a 1-D array of scalars, vectors or matrices (any stride).

    The view does not own memory: the caller keeps ``a`` alive while it is used.
    """
    scalar = scalar_type(a.dtype)
    comps = components(a.dtype)
    size = wp.types.type_size_in_bytes(scalar)
    return wp.array(
        ptr=a.ptr, shape=(a.shape[0], comps), strides=(a.strides[0], size), dtype=scalar, device=a.device
    )


def components(dtype: Any) -> int:
    """Number of scalar components of a dtype (1 for scalars)."""
    shape = getattr(dtype, "_shape_", None)
    if shape is None:
        return 1
    total = 1
    for s in shape:
        total *= int(s)
    return total


def scalar_type(dtype: Any) -> Any:
    """The scalar type of a scalar, vector or matrix dtype."""
    return getattr(dtype, "_wp_scalar_type_", dtype)
