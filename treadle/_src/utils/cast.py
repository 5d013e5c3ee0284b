"""``array_cast``: element-wise type conversion in a Treadle kernel (one kernel per target type, made on first use)."""

from __future__ import annotations

import functools
from typing import Any

import treadle as wp

from .common import UtilsValueError, check_array, check_count, check_same_device, components, scalar_type


@functools.cache
def _cast_kernel(dst: Any) -> Any:
    @wp.kernel(enable_backward=False, module="unique")
    def _cast(src: wp.array(dtype=Any), out: wp.array(dtype=Any)):
        i = wp.tid()
        out[i] = dst(src[i])

    return _cast


def _flat(name: str, a: Any) -> Any:
    if a.ndim == 1:
        return a
    if not a.is_contiguous:
        raise UtilsValueError(f"{name} must be contiguous to be cast element by element, got a strided "
                              f"{a.ndim}-D array")
    return a.flatten()


def _scalars(name: str, a: Any) -> Any:
    """``a`` as a 1-D array of its scalar components."""
    f = _flat(name, a)
    if components(f.dtype) == 1:
        return f
    if not f.is_contiguous:
        raise UtilsValueError(f"{name} must be contiguous to be cast component by component")
    return f.view(scalar_type(f.dtype)).flatten()


def array_cast(in_array: Any, out_array: Any, count: int | None = None) -> None:
    """Convert the elements of ``in_array`` to the data type of ``out_array``, as the kernel constructor would.

    Arrays of the same number of dimensions (more than one) must have the same shape. Element types with a different
    number of components (``vec3`` to ``float64``) are cast component by component over the flattened arrays. Arrays
    of the same data type are copied.

    Args:
        in_array: the array to convert.
        out_array: the converted values (same device).
        count: convert only the first ``count`` elements (components, when the element shapes differ); 1-D arrays
            only.

    Raises:
        UtilsValueError: different devices, different shapes of multi-dimensional arrays, a partial cast of
            multi-dimensional arrays, or ``count`` beyond either array.

    """
    check_array("in_array", in_array)
    check_array("out_array", out_array)
    check_same_device(in_array=in_array, out_array=out_array)
    multi = in_array.ndim > 1 or out_array.ndim > 1
    if count is not None and multi:
        raise UtilsValueError("Partial cast is not supported for arrays with more than one dimension")
    if in_array.ndim == out_array.ndim and multi and tuple(in_array.shape) != tuple(out_array.shape):
        raise UtilsValueError(f"Array shapes do not match ({tuple(in_array.shape)} vs {tuple(out_array.shape)})")
    n = None if count is None else check_count("count", count)
    same_shape = getattr(in_array.dtype, "_shape_", None) == getattr(out_array.dtype, "_shape_", None)
    if same_shape:
        src, dst = _flat("in_array", in_array), _flat("out_array", out_array)
    else:
        src, dst = _scalars("in_array", in_array), _scalars("out_array", out_array)
    total = src.shape[0] if n is None else n
    if total > src.shape[0] or total > dst.shape[0]:
        raise UtilsValueError(f"Cast count ({total}) exceeds the input size ({src.shape[0]}) or output size "
                              f"({dst.shape[0]})")
    if total == 0:
        return
    # slice only for a partial cast: indexed arrays (whole) cannot be sliced
    if total < src.shape[0]:
        src = src[:total]
    if total < dst.shape[0]:
        dst = dst[:total]
    if src.dtype == dst.dtype:
        wp.copy(dst, src)
        return
    wp.launch(_cast_kernel(dst.dtype), total, inputs=[src, dst], device=src.device)
