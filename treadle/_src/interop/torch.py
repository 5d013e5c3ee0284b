"""PyTorch interop: zero-copy ``from_torch`` / ``to_torch`` with gradient buffers mapped both ways.

``torch`` is imported only when one of these functions is called.

- :func:`from_torch` reads the tensor's pointer, shape and strides directly (no DLPack round trip, so it costs a few
  microseconds and never synchronises) and keeps the tensor alive for as long as the array exists. With
  ``requires_grad`` the tensor's ``.grad`` becomes the array's ``.grad`` (allocated with zeros first if missing), so a
  Treadle backward pass writes straight into the buffer PyTorch's optimisers read.
- :func:`to_torch` goes through DLPack (the tensor keeps the array alive); the array's gradient becomes the
  tensor's ``.grad``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ..core import abi
from ..lang import array as _arr
from ..runtime import device as _device
from ..types import scalars
from .common import (
    InteropError,
    external_stream,
    fit_layout,
    require_scalar_map,
    scalar_size,
    stream_handle,
    wrap_memory,
)
from .dlpack import export_array


@functools.cache
def _torch() -> Any:
    import torch

    return torch


@functools.cache
def _maps() -> tuple[dict[Any, Any], dict[Any, Any]]:
    """``(to_torch, from_torch)`` dtype tables, built on first use."""
    torch = _torch()
    s = scalars
    to = {
        s.bool: torch.bool,
        s.int8: torch.int8,
        s.uint8: torch.uint8,
        s.int16: torch.int16,
        s.int32: torch.int32,
        s.int64: torch.int64,
        # PyTorch's unsigned 16-64-bit types support few operations: map to the signed type of the same width,
        # as the reference does.
        s.uint16: torch.int16,
        s.uint32: torch.int32,
        s.uint64: torch.int64,
        s.float16: torch.float16,
        s.float32: torch.float32,
        s.float64: torch.float64,
        s.bfloat16: torch.bfloat16,
    }
    frm = {v: k for k, v in to.items() if k not in (s.uint16, s.uint32, s.uint64)}
    for name, t in (("uint16", s.uint16), ("uint32", s.uint32), ("uint64", s.uint64)):
        tt = getattr(torch, name, None)  # present in PyTorch >= 2.3
        if tt is not None:
            frm[tt] = t
    return to, frm


@functools.cache
def _scalar_info(torch_dtype: Any) -> tuple[Any, int]:
    """``(Treadle scalar type, item size)`` of a ``torch.dtype`` (cached: this is on the ``from_torch`` hot path)."""
    t = dtype_from_torch(torch_dtype)
    return t, scalar_size(t)


def dtype_to_torch(warp_dtype: Any) -> Any:
    """The ``torch.dtype`` for a Treadle scalar type.

    ``uint16``, ``uint32`` and ``uint64`` map to the signed PyTorch type of the same width (as in the reference).

    Raises:
        TypeError: the type has no PyTorch equivalent (vector types: use their scalar type).
    """
    return require_scalar_map(_maps()[0], scalars.scalar_from_python(warp_dtype), "Treadle type", "PyTorch")


def dtype_from_torch(torch_dtype: Any) -> Any:
    """The Treadle scalar type for a ``torch.dtype``.

    ``torch.uint16/uint32/uint64`` map to Treadle's unsigned types; complex types are not supported.

    Raises:
        TypeError: the type has no Treadle equivalent.
    """
    return require_scalar_map(_maps()[1], torch_dtype, "PyTorch type", "Treadle")


def device_from_torch(torch_device: Any) -> Any:
    """The Treadle device for a ``torch.device`` or device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``).

    Raises:
        RuntimeError: the device has no Treadle equivalent (MPS, XPU, meta, or CUDA without a Treadle CUDA device).
    """
    if torch_device == "cpu":
        return _device.get_device("cpu")
    torch = _torch()
    d = torch_device if isinstance(torch_device, torch.device) else torch.device(torch_device)
    if d.type == "cpu":
        return _device.get_device("cpu")
    if d.type == "cuda":
        if not _device.is_cuda_available():
            raise _device.DeviceUnavailableError(
                f"Unsupported Torch device {d}: Treadle found no CUDA device on this machine"
            )
        index = d.index if d.index is not None else torch.cuda.current_device()
        return _device.get_device(f"cuda:{index}")
    raise InteropError(f"Unsupported Torch device {d}: Treadle works with 'cpu' and 'cuda' tensors")


def device_to_torch(warp_device: Any) -> str:
    """The PyTorch device string (``"cpu"``, ``"cuda:0"``) for a Treadle device or identifier.

    Raises:
        RuntimeError: the device has no PyTorch equivalent.
    """
    dev = _device.get_device(warp_device)
    if dev.is_cpu:
        return "cpu"
    if dev.is_cuda:
        return f"cuda:{dev.ordinal}"
    raise InteropError(f"Treadle device {dev} has no PyTorch equivalent")


def stream_from_torch(stream_or_device: Any = None) -> Any:
    """A Treadle stream wrapping a PyTorch CUDA stream (or the current PyTorch stream of a device).

    Raises:
        RuntimeError: the device is not a CUDA device, or PyTorch has no CUDA support.
    """
    torch = _torch()
    handle = getattr(stream_or_device, "cuda_stream", None)
    if handle is not None:  # a torch.cuda.Stream / ExternalStream
        return external_stream(device_from_torch(stream_or_device.device), int(handle))
    if stream_or_device is not None:
        d = stream_or_device if isinstance(stream_or_device, torch.device) else torch.device(stream_or_device)
        if d.type != "cuda":
            raise InteropError(f"stream_from_torch(): Torch device {d} is not a CUDA device and has no stream")
    if not torch.cuda.is_available():
        raise InteropError("stream_from_torch(): PyTorch has no CUDA device (torch.cuda.is_available() is False)")
    s = torch.cuda.current_stream(stream_or_device)
    return external_stream(device_from_torch(s.device), int(s.cuda_stream))


def stream_to_torch(stream_or_device: Any = None) -> Any:
    """A ``torch.cuda.ExternalStream`` for a Treadle stream (or the current stream of a Treadle device).

    Raises:
        RuntimeError: the device is not a CUDA device (the CPU has no streams).
    """
    torch = _torch()
    if getattr(stream_or_device, "cuda_stream", None) is not None:
        stream = stream_or_device
    else:
        stream = _device.get_device(stream_or_device).stream  # raises on the CPU
    return torch.cuda.ExternalStream(stream_handle(stream), device=device_to_torch(stream.device))


def _torch_grad(t: Any) -> Any:
    """The tensor's ``.grad``, allocated with zeros (same strides) and attached when missing."""
    torch = _torch()
    if t.is_leaf:
        g = t.grad
    else:  # reading .grad of a non-leaf tensor warns; it is None unless retain_grad() was called
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = t.grad
    if g is None:
        if t.is_contiguous():
            g = torch.zeros_like(t)
        else:  # same strides as the data: Treadle indexes both buffers with one set of strides
            g = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device).zero_()
        t.grad = g
    return g


def _layout(t: Any, dtype: Any) -> tuple[Any, Any, tuple[int, ...], tuple[int, ...]]:
    src, itemsize = _scalar_info(t.dtype)
    dev = _device.get_device("cpu") if t.is_cpu else device_from_torch(t.device)
    shape = tuple(t.shape)
    strides = tuple(s * itemsize for s in t.stride())
    if dtype is None and 0 < len(shape) <= _arr.MAX_DIMS:
        return dev, src, shape, strides  # torch strides are never negative: nothing to check
    wdtype, shape, strides = fit_layout(src, shape, strides, dtype, "PyTorch tensor")
    return dev, wdtype, shape, strides


def from_torch(
    t: Any,
    dtype: Any = None,
    requires_grad: bool | None = None,
    grad: Any = None,
    return_ctype: bool = False,
    retain_grad: bool = False,
) -> Any:
    """A Treadle array sharing the memory of PyTorch tensor ``t`` (no copy).

    Args:
        t: the tensor (CPU or CUDA). Scalar types keep its shape and strides; a vector/matrix ``dtype`` consumes
            the trailing dimensions, which must be contiguous (``dtype=wp.vec3`` on ``(N, 3)`` gives ``N`` vectors).
        dtype: the element type (``None``: the tensor's scalar type).
        requires_grad: map the tensor's gradient (default: ``t.requires_grad``); ``t.grad`` is allocated with zeros
            when missing, so the array's ``.grad`` and ``t.grad`` share memory.
        grad: a gradient to attach instead (a tensor or a Treadle array).
        return_ctype: return the low-level array descriptor instead of an array (faster; it does not keep ``t``
            alive, so keep a reference to the tensor while the descriptor is used).
        retain_grad: passed to the array (keep gradients after a backward pass instead of zeroing them).

    Raises:
        InteropError: unsupported tensor type or device, or a ``dtype`` that does not fit the tensor.
    """
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch() expects a torch.Tensor, got {type(t).__name__}")
    dev, wdtype, shape, strides = _layout(t, dtype)
    if requires_grad is None:
        requires_grad = bool(t.requires_grad)
    g: Any = None
    if grad is not None:
        g = grad if isinstance(grad, _arr.array) else from_torch(grad, dtype=dtype, requires_grad=False)
    elif requires_grad:
        g = from_torch(_torch_grad(t), dtype=dtype, requires_grad=False)
    ptr = t.data_ptr()
    if return_ctype:
        if g is not None and g.strides != strides and g.size:
            raise InteropError(f"The gradient has strides {g.strides} but the tensor has strides {strides}")
        desc = abi.ArrayDesc()
        desc.data = ptr
        desc.grad = (g.ptr or 0) if g is not None else 0
        for i, (n, s) in enumerate(zip(shape, strides)):
            desc.shape[i] = n
            desc.strides[i] = s
        desc.ndim = len(shape)
        return desc
    result = wrap_memory(ptr, wdtype, shape, strides, dev, owner=t)  # the tensor lives as long as the array
    if g is not None:
        result.grad = g
    if retain_grad:
        result.retain_grad = True  # after the gradient: retain_grad needs one
    return result


def to_torch(a: Any, requires_grad: bool | None = None) -> Any:
    """A PyTorch tensor sharing the memory of Treadle array ``a`` (no copy).

    Vector/matrix elements become trailing dimensions. The tensor keeps the array alive. With ``requires_grad``
    (default: ``a.requires_grad``) the tensor requires grad and, if ``a`` has a gradient, ``tensor.grad`` shares
    it; clone the tensor if PyTorch must keep values that Treadle may later overwrite.

    Raises:
        InteropError: struct elements, or strides that are not whole elements.
    """
    torch = _torch()
    if not _arr.is_array(a):
        raise TypeError(f"to_torch() expects a Treadle array, got {type(a).__name__}")
    stream = None
    if a.device.is_cuda:  # DLPack's handshake: the exporter orders its pending work before PyTorch's stream
        handle = torch.cuda.current_stream(device_to_torch(a.device)).cuda_stream
        stream = handle or 1  # 0 is the legacy default stream, which DLPack spells 1
    t = torch.utils.dlpack.from_dlpack(export_array(a, stream=stream))
    if requires_grad is None:
        requires_grad = a.requires_grad
    if requires_grad:
        t.requires_grad_(True)  # PyTorch refuses this for integer tensors, as the reference does
        if a.grad is not None:
            t.grad = to_torch(a.grad, requires_grad=False)
    return t


__all__ = [
    "device_from_torch",
    "device_to_torch",
    "dtype_from_torch",
    "dtype_to_torch",
    "from_torch",
    "stream_from_torch",
    "stream_to_torch",
    "to_torch",
]
