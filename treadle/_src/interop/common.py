"""Pieces shared by every interop module: the error class, layout fitting, external streams.

Foreign arrays arrive as a scalar type, a shape and byte strides. :func:`fit_layout` turns that into the
Treadle element type, outer shape and byte strides of a zero-copy view, consuming trailing dimensions for
vector/matrix element types (``dtype=wp.vec3`` on an ``(N, 3)`` tensor gives an ``(N,)`` array of ``vec3``).
"""

from __future__ import annotations

from typing import Any

from ..core.errors import TreadleError
from ..lang import array as _arr


class InteropError(TreadleError, TypeError, RuntimeError, BufferError):
    """Data cannot be exchanged with another library: unsupported type, layout or device.

    It derives from ``TypeError``, ``RuntimeError`` and ``BufferError``: the reference raises ``RuntimeError`` for
    these cases, the DLPack standard asks producers for ``BufferError``, and type mismatches are type errors, so
    code catching any of them keeps working.
    """


def scalar_size(t: Any) -> int:
    """Size in bytes of one value of the scalar type ``t``."""
    return int(t._np_.itemsize)


def _integer_family() -> dict[Any, int]:
    from ..types import scalars as s

    return {s.bool: 1, s.int8: 1, s.uint8: 1, s.int16: 2, s.uint16: 2, s.int32: 4, s.uint32: 4, s.int64: 8,
            s.uint64: 8}


_INT_WIDTH: dict[Any, int] = {}


def same_width_integers(a: Any, b: Any) -> bool:
    """Whether scalar types ``a`` and ``b`` may view each other's memory.

    True for integers of one width and either signedness (``int64`` data viewed as ``uint64``), and for ``bool``
    with ``int8`` / ``uint8`` (one byte per value).
    """
    if not _INT_WIDTH:
        _INT_WIDTH.update(_integer_family())
    wa, wb = _INT_WIDTH.get(a), _INT_WIDTH.get(b)
    return wa is not None and wa == wb


def fit_layout(
    src: Any, shape: tuple[int, ...], strides: tuple[int, ...], dtype: Any, what: str
) -> tuple[Any, tuple[int, ...], tuple[int, ...]]:
    """Element type, outer shape and byte strides of a Treadle view of foreign data.

    Args:
        src: the Treadle scalar type of the foreign values.
        shape: the foreign shape (any number of dimensions; 0-d data becomes a 1-element array).
        strides: the foreign strides in bytes, one per dimension.
        dtype: the requested element type (``None``: ``src``). A vector/matrix type consumes the trailing
            dimensions, which must equal its shape and be contiguous; its scalar type must be ``src`` or an
            integer type of the same width (signed/unsigned, and ``bool`` as ``int8`` / ``uint8``).
        what: how to name the source in error messages (``"PyTorch tensor"``).

    Raises:
        InteropError: the requested type does not fit the data, or a stride is negative.
    """
    if any(s < 0 for s, n in zip(strides, shape) if n > 1):
        raise InteropError(
            f"Cannot wrap a {what} with negative strides {strides} without copying; make a contiguous copy first"
        )
    target = src if dtype is None else _arr.normalize_dtype(dtype)
    if _arr.is_struct_type(target):
        raise InteropError(
            f"Cannot view a {what} as an array of struct {_arr.type_name(target)}: only scalar, vector and matrix "
            "types can alias foreign data"
        )
    if target is Any:
        target = src
    scalar = target._wp_scalar_type_
    if scalar is not src and not same_width_integers(scalar, src):
        raise InteropError(
            f"Cannot convert a {what} of {src.__name__} values to an array of {_arr.type_name(target)}: the scalar "
            f"types differ; pass dtype=None (or a vector/matrix type of {src.__name__}), or convert the data first"
        )
    ishape = _arr.inner_shape(target)
    k = len(ishape)
    if k:
        if tuple(shape[len(shape) - k :]) != ishape or len(shape) < k:
            raise InteropError(
                f"Cannot convert a {what} of shape {tuple(shape)} to an array of {_arr.type_name(target)}: the "
                f"trailing dimensions must be {ishape}"
            )
        expected = _arr.contiguous_strides(ishape, scalar_size(src))
        inner = tuple(strides[len(strides) - k :])
        if any(s != e for s, e, n in zip(inner, expected, ishape) if n > 1):
            raise InteropError(
                f"Cannot convert a {what} of shape {tuple(shape)} and byte strides {tuple(strides)} to an array of "
                f"{_arr.type_name(target)}: the trailing {k} dimension(s) must be contiguous; make a contiguous "
                "copy first"
            )
        shape, strides = shape[: len(shape) - k], strides[: len(strides) - k]
    if len(shape) == 0:
        shape, strides = (1,), (_arr.elem_size(target),)
    if len(shape) > _arr.MAX_DIMS:
        raise InteropError(
            f"Cannot convert a {what} with {len(shape)} outer dimensions: Treadle arrays have at most "
            f"{_arr.MAX_DIMS} dimensions"
        )
    return target, tuple(int(n) for n in shape), tuple(int(s) for s in strides)


def wrap_memory(
    ptr: int, dtype: Any, shape: tuple[int, ...], strides: tuple[int, ...], device: Any, owner: Any
) -> Any:
    """A Treadle array over foreign memory (no copy) that keeps ``owner`` alive as long as it (or a view) exists.

    Same result as ``array(ptr=ptr, dtype=..., shape=..., strides=..., device=...)`` plus the owner, without that
    constructor's re-validation: callers pass a checked layout (from :func:`fit_layout`, non-negative strides,
    1 to 4 dimensions). This is the hot path of ``from_torch``, where the constructor's checks would triple the cost.
    """
    a = _arr.array.__new__(_arr.array)
    a._reset_fields()
    a._set_layout(dtype, shape, strides, ptr or None)
    if 0 in shape:
        a.capacity = 0
    else:
        a.capacity = sum((n - 1) * s for n, s in zip(shape, strides)) + _arr.elem_size(dtype)
    a.device = device
    a._owner = owner  # the array's keep-alive slot (views reference their base array, which holds the owner)
    return a


def external_stream(device: Any, handle: int) -> Any:
    """A Treadle stream object wrapping the foreign CUDA stream ``handle`` on ``device``.

    Raises:
        InteropError: ``device`` is not a CUDA device.
    """
    if not getattr(device, "is_cuda", False):
        raise InteropError(f"Device {device} is not a CUDA device: streams exist only on CUDA devices")
    from ..runtime.cuda_stream import Stream

    return Stream(device, cuda_stream=handle)


def stream_handle(stream: Any) -> int:
    """The raw ``cudaStream_t`` of a Treadle stream (its ``cuda_stream`` attribute)."""
    handle = getattr(stream, "cuda_stream", None)
    if handle is None:
        raise InteropError(f"Expected a Treadle CUDA stream, got {type(stream).__name__}")
    return int(handle)


def require_scalar_map(table: dict[Any, Any], key: Any, what: str, lib: str) -> Any:
    """``table[key]`` or an :class:`InteropError` naming the supported types."""
    try:
        return table[key]
    except (KeyError, TypeError):
        pass
    names = ", ".join(sorted({str(getattr(v, "__name__", v)) for v in table.values()}))
    shown = _arr.type_name(key) if isinstance(key, type) else repr(key)
    raise InteropError(f"Cannot convert {what} {shown} to a {lib} type; supported: {names}")




__all__ = [
    "InteropError",
    "external_stream",
    "fit_layout",
    "require_scalar_map",
    "same_width_integers",
    "scalar_size",
    "stream_handle",
    "wrap_memory",
]
