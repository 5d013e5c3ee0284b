"""Array creation functions.

``zeros``, ``ones``, ``full``, ``empty`` (and their ``*_like`` forms), ``clone``, ``copy``, ``from_numpy``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..core.errors import CopyTypeError
from ..runtime import graph as _graph
from ..types import scalars
from ..types.arrays import (
    dtype_from_numpy,
    dtype_to_numpy,
    is_composite_type,
    is_struct_type,
    normalize_dtype,
    to_numpy,
    type_name,
    types_equal,
)
from .array import (
    array,
    before_copy,
    check_copy_counts,
    check_copy_range,
    copy_array,
    is_array,
    noncontiguous_copy_error,
    record_copy,
)

__all__ = [
    "clone",
    "copy",
    "dtype_from_numpy",
    "dtype_to_numpy",
    "empty",
    "empty_like",
    "from_numpy",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def _shape_arg(shape: Any, kwargs: dict[str, Any]) -> Any:
    if "n" in kwargs:  # legacy spelling of a 1-D shape
        n = kwargs.pop("n")
        shape = n if shape is None else shape
    # ``ndim=`` is accepted as the reference's creation functions forward it to ``array``; the shape decides, and a
    # number of dimensions that contradicts it is an error rather than ignored.
    ndim = kwargs.pop("ndim", None)
    if kwargs:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(kwargs)}")
    shape = (0,) * (1 if ndim is None else builtins.int(ndim)) if shape is None else shape
    if ndim is not None:
        dims = 1 if isinstance(shape, (builtins.int, np.integer)) else len(shape)
        if dims != ndim:
            raise ValueError(f"ndim={ndim} does not match shape {shape!r} ({dims} dimension(s)); pass one or make "
                             "them agree")
    return shape


def empty(
    shape: Any = None,
    dtype: Any = float,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array of ``shape`` with uninitialized contents (its gradient, if any, is zeroed).

    ``strides=`` (byte strides, one per dimension) allocates that layout: enough memory for the farthest element
    (``itemsize + sum((n - 1) * stride)``), e.g. a transposed or padded array.
    """
    strides = kwargs.pop("strides", None)
    shape = _shape_arg(shape, kwargs)
    return array(
        shape=shape, dtype=dtype, device=device, requires_grad=requires_grad, pinned=pinned, retain_grad=retain_grad,
        strides=strides,
    )


def zeros(
    shape: Any = None,
    dtype: Any = float,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array of ``shape`` filled with zeros."""
    a = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kwargs)
    a._zero()  # (not recorded in a graph capture: a new array is initialised at once)
    return a


def ones(
    shape: Any = None,
    dtype: Any = float,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array of ``shape`` filled with ones (every component of vector/matrix elements is 1)."""
    a = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kwargs)
    a._fill(1)
    return a


def _dtype_of_value(value: Any) -> Any:
    """The element type ``full()`` infers from a fill value."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return scalars.bool
    if isinstance(value, scalars.scalar_base):
        return type(value)
    if isinstance(value, np.generic):  # before int/float: np.float64 is a float subclass
        return dtype_from_numpy(value.dtype)
    if isinstance(value, builtins.int):
        return scalars.int32
    if isinstance(value, builtins.float):
        return scalars.float32
    if is_composite_type(type(value)):
        return type(value)
    st = getattr(value, "_struct_type_", None)
    if st is not None and is_struct_type(st):
        return st
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = to_numpy(value)
        scalar = scalars.scalar_from_numpy(arr.dtype)
        if scalar is None:
            raise ValueError(f"Failed to convert {arr.dtype} to a Treadle data type; pass dtype=...")
        if arr.ndim == 1:
            from ..types.vector import vector

            return vector(arr.shape[0], scalar)
        if arr.ndim == 2:
            from ..types.matrix import matrix

            return matrix(arr.shape, scalar)
        raise ValueError("Values with more than two dimensions are not supported; pass a vector or matrix value")
    raise ValueError(f"Invalid value type for an array: {type(value).__name__}; pass dtype=... explicitly")


def full(
    shape: Any = None,
    value: Any = 0,
    dtype: Any = Any,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array of ``shape`` with every element set to ``value``.

    Without ``dtype`` the type follows the value: ``float`` -> float32, ``int`` -> int32, ``bool`` -> bool,
    a vector/matrix/struct instance -> its type, a list -> a vector (1-D) or matrix (2-D) of the NumPy-inferred
    scalar type.
    """
    if dtype is Any:
        dtype = _dtype_of_value(value)
    a = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kwargs)
    a._fill(value)
    return a


def _like(src: array, device: Any, requires_grad: bool | None, pinned: bool | None) -> dict[str, Any]:
    if not is_array(src):
        raise TypeError(f"expected an array, got {type(src).__name__}")
    return {
        "shape": src.shape,
        "dtype": src.dtype,
        "device": src.device if device is None else device,
        "requires_grad": src.requires_grad if requires_grad is None else requires_grad,
        "pinned": src.pinned if pinned is None else pinned,
    }


def empty_like(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    """An uninitialized array with the shape and dtype of ``src`` (same device and ``requires_grad`` by default)."""
    return empty(**_like(src, device, requires_grad, pinned), retain_grad=retain_grad)


def zeros_like(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    """A zero array with the shape and dtype of ``src``."""
    return zeros(**_like(src, device, requires_grad, pinned), retain_grad=retain_grad)


def ones_like(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    """An array of ones with the shape and dtype of ``src``."""
    return ones(**_like(src, device, requires_grad, pinned), retain_grad=retain_grad)


def full_like(
    src: array,
    value: Any,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    """An array with the shape and dtype of ``src`` filled with ``value``."""
    return full(value=value, **_like(src, device, requires_grad, pinned), retain_grad=retain_grad)


def clone(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    """A contiguous copy of ``src`` (its gradient is copied too when both have one)."""
    out = empty_like(src, device, requires_grad, pinned, retain_grad)
    if _copy_indexed(out, src):
        return out
    copy_array(out, src if src.device.allocator.host_accessible else src.contiguous())
    if out.grad is not None and src.grad is not None:
        copy_array(out.grad, src.grad)
    record_copy(out, src)
    return out


def _copy_indexed(dest: array, src: array) -> bool:
    """Copy whole arrays from or to indexed arrays as a kernel (``wp.map`` of unary plus).

    A recording tape then differentiates the copy through the index tables like any launch. Returns False when
    neither array is indexed.
    """
    if not (getattr(dest, "_indexed_", False) or getattr(src, "_indexed_", False)):
        return False
    from ..builtins import REGISTRY
    from ..builtins.registry import NoMatch
    from .map import map as map_

    if dest.shape != src.shape or dest.device != src.device:
        copy_array(dest, src)  # raises the usual shape error, or copies through the host
        return True
    try:
        REGISTRY.builtins["pos"].resolve([src.dtype])
    except NoMatch:  # structs and other non-numeric elements: a plain (non-differentiable) copy
        copy_array(dest, src)
        return True
    if src.size:
        map_(REGISTRY.builtins["pos"], src, out=dest)  # type: ignore[arg-type]
    return True


def copy(
    dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0, stream: Any = None
) -> None:
    """Copy elements from ``src`` to ``dest`` (recorded on an active ``wp.Tape`` when both have gradients).

    With no offsets and count, arrays of equal shape are copied element by element (any strides). Otherwise
    both arrays are treated as flat (they must be contiguous, or both 1-D, where offsets count logical elements of
    strided views) and ``count`` elements (default: the rest of
    ``src``) are copied from element ``src_offset`` to element ``dest_offset``.

    Raises:
        TypeError: the dtypes differ.
        ValueError: the ranges are out of bounds, or strided arrays would need a flat copy.
    """
    check_copy_counts(dest_offset, src_offset, count)
    if not (count or dest_offset or src_offset) and _copy_indexed(dest, src):
        return
    if ((count or dest_offset or src_offset or dest.shape != src.shape) and is_array(dest) and is_array(src)
            and dest.ndim == 1 and src.ndim == 1 and not (dest.is_contiguous and src.is_contiguous)
            and not getattr(dest, "_indexed_", False) and not getattr(src, "_indexed_", False)):
        # 1-d strided views: offsets and count are logical elements (count: by default the rest of src)
        n = count if count else src.size - src_offset
        check_copy_range(dest, src, dest_offset, src_offset, n)
        d, s = dest[dest_offset:dest_offset + n], src[src_offset:src_offset + n]
        before_copy(dest)
        if not (_graph.STATE.count and _graph.record_op(lambda: copy_array(d, s), dest, src)):
            copy_array(d, s)
        record_copy(dest, src, dest_offset, src_offset, n)
        return
    before_copy(dest)
    if _graph.STATE.count and is_array(dest) and is_array(src) and _graph.record_op(
            lambda: copy_array(dest, src, dest_offset, src_offset, count), dest, src):
        _check_copy(dest, src, dest_offset, src_offset, count)  # errors at capture time, as when run
    else:
        copy_array(dest, src, dest_offset, src_offset, count)
    record_copy(dest, src, dest_offset, src_offset, count)


def _check_copy(dest: array, src: array, dest_offset: int, src_offset: int, count: int) -> None:
    """The argument errors ``copy_array`` would raise (for a copy recorded in a graph capture, not run yet)."""
    if not types_equal(dest.dtype, src.dtype):
        raise CopyTypeError(f"Incompatible array data types: destination dtype={type_name(dest.dtype)}, source "
                            f"dtype={type_name(src.dtype)}")
    if count == 0 and dest_offset == 0 and src_offset == 0 and dest.shape == src.shape:
        return
    if not (dest.is_contiguous and src.is_contiguous):
        raise noncontiguous_copy_error(dest, src)
    check_copy_range(dest, src, dest_offset, src_offset, count if count else src.size - src_offset)


def from_numpy(
    arr: np.ndarray,
    dtype: Any = None,
    shape: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    retain_grad: bool = False,
) -> array:
    """A new array with a copy of ``arr``.

    Without ``dtype``, a 1-D array gives scalars, a 2-D array vectors of its last dimension, and an array of
    3 or more dimensions matrices of its last two dimensions (as in the reference).
    """
    arr = np.asarray(arr)
    if dtype is None:
        scalar = dtype_from_numpy(arr.dtype)
        if arr.ndim >= 3:
            from ..types.matrix import matrix

            dtype = matrix(arr.shape[-2:], scalar)
        elif arr.ndim == 2:
            from ..types.vector import vector

            dtype = vector(arr.shape[-1], scalar)
        else:
            dtype = scalar
    else:
        dtype = normalize_dtype(dtype)
    return array(
        data=arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad, retain_grad=retain_grad
    )


# Inside kernels, wp.zeros(shape, dtype) makes a thread-private local array (see compiler/lower_call.py).
zeros._treadle_local_array_ = True  # type: ignore[attr-defined]
