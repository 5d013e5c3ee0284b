"""Paddle interop: ``from_paddle`` / ``to_paddle`` through DLPack, dtype, device and stream maps.

``paddle`` is imported only when one of these functions is called. Paddle's ``stop_gradient`` is the opposite of
``requires_grad``.
"""

from __future__ import annotations

import functools
from typing import Any

from ..lang import array as _arr
from ..runtime import device as _device
from ..types import scalars
from .common import InteropError, external_stream, require_scalar_map
from .dlpack import export_array, from_dlpack


def _paddle() -> Any:
    import paddle

    return paddle


_NAMES = (
    ("bool", scalars.bool),
    ("int8", scalars.int8),
    ("uint8", scalars.uint8),
    ("int16", scalars.int16),
    ("int32", scalars.int32),
    ("int64", scalars.int64),
    ("float16", scalars.float16),
    ("float32", scalars.float32),
    ("float64", scalars.float64),
    ("bfloat16", scalars.bfloat16),
)


@functools.cache
def _maps() -> tuple[dict[Any, Any], dict[Any, Any]]:
    paddle = _paddle()
    frm = {getattr(paddle, name): t for name, t in _NAMES if hasattr(paddle, name)}
    to = {t: p for p, t in frm.items()}
    # Paddle has no unsigned types wider than 8 bits: map to the signed type of the same width (as the reference).
    for u, i in ((scalars.uint16, scalars.int16), (scalars.uint32, scalars.int32), (scalars.uint64, scalars.int64)):
        if i in to:
            to[u] = to[i]
    return to, frm


def dtype_to_paddle(warp_dtype: Any) -> Any:
    """The ``paddle`` dtype for a Treadle scalar type (``uint16/32/64`` map to the signed type of the same width).

    Raises:
        TypeError: the type has no Paddle equivalent.
    """
    return require_scalar_map(_maps()[0], scalars.scalar_from_python(warp_dtype), "Treadle type", "Paddle")


def dtype_from_paddle(paddle_dtype: Any) -> Any:
    """The Treadle scalar type for a Paddle dtype (complex types are not supported).

    Raises:
        TypeError: the type has no Treadle equivalent.
    """
    return require_scalar_map(_maps()[1], paddle_dtype, "Paddle type", "Treadle")


def device_from_paddle(paddle_device: Any) -> Any:
    """The Treadle device for a Paddle place (``CPUPlace``, ``CUDAPlace``, ``CUDAPinnedPlace``) or string.

    Strings: ``"cpu"``, ``"gpu"``, ``"gpu:N"`` (``"cuda:N"`` is accepted too).

    Raises:
        RuntimeError: the place has no Treadle equivalent.
    """
    if isinstance(paddle_device, str):
        name = paddle_device.strip().lower()
        if name == "cpu" or name.startswith("gpu_pinned") or name.startswith("cuda_pinned"):
            return _device.get_device("cpu")
        kind, _, index = name.partition(":")
        if kind in ("gpu", "cuda"):
            if not index:
                index = str(_paddle().device.get_device().partition(":")[2] or 0)
            return _device.get_device(f"cuda:{int(index)}")
        raise InteropError(f"Unsupported Paddle device {paddle_device!r}: Treadle works with CPU and GPU places")
    place = paddle_device
    if getattr(place, "is_cpu_place", lambda: False)() or getattr(place, "is_cuda_pinned_place", lambda: False)():
        return _device.get_device("cpu")
    if getattr(place, "is_gpu_place", lambda: False)():
        return _device.get_device(f"cuda:{place.gpu_device_id()}")
    text = str(place).lower()  # e.g. "Place(gpu:0)", "Place(cpu)"
    if text.startswith("place(") and text.endswith(")"):
        return device_from_paddle(text[6:-1])
    raise InteropError(f"Unsupported Paddle device {paddle_device!r}: Treadle works with CPU and GPU places")


def device_to_paddle(warp_device: Any) -> str:
    """The Paddle device string (``"cpu"``, ``"gpu:0"``) for a Treadle device or identifier.

    Raises:
        RuntimeError: the device has no Paddle equivalent.
    """
    dev = _device.get_device(warp_device)
    if dev.is_cpu:
        return "cpu"
    if dev.is_cuda:
        return f"gpu:{dev.ordinal}"
    raise InteropError(f"Treadle device {dev} has no Paddle equivalent")


def stream_from_paddle(stream_or_device: Any = None) -> Any:
    """A Treadle stream wrapping a Paddle CUDA stream (or the current Paddle stream of a device).

    Raises:
        RuntimeError: the device is not a CUDA device.
    """
    paddle = _paddle()
    handle = getattr(stream_or_device, "cuda_stream", None)
    if handle is not None:
        place = getattr(stream_or_device, "place", None) or getattr(stream_or_device, "device", None)
        dev = device_from_paddle(place) if place is not None else _device.get_device("cuda")
        return external_stream(dev, int(handle))
    if stream_or_device is not None and device_from_paddle(stream_or_device).is_cpu:
        raise InteropError(f"stream_from_paddle(): Paddle device {stream_or_device!r} is not a CUDA device")
    if not paddle.device.is_compiled_with_cuda():
        raise InteropError("stream_from_paddle(): this Paddle build has no CUDA support")
    s = paddle.device.current_stream(stream_or_device)
    dev = device_from_paddle(getattr(s, "place", None) or paddle.device.get_device())
    return external_stream(dev, int(s.cuda_stream))


def _set_paddle_grad(t: Any, g: Any) -> Any:
    """Attach gradient tensor ``g`` to ``t``; returns the tensor Paddle now holds as ``t.grad`` (``None``: refused).

    Paddle 2.x offers ``_set_grad_ivar`` (in 3.x for parameters only); 3.x accepts ``t.grad = g`` and keeps its own
    buffer, which stays the same between reads and is where backward passes accumulate.
    """
    setter = getattr(t, "_set_grad_ivar", None)
    if setter is not None:
        try:
            setter(g)
            return g
        except TypeError:
            pass
    try:
        t.grad = g
    except (AttributeError, TypeError, ValueError):
        return None
    return t.grad


def from_paddle(
    t: Any,
    dtype: Any = None,
    requires_grad: bool | None = None,
    grad: Any = None,
    return_ctype: bool = False,
    retain_grad: bool = False,
) -> Any:
    """A Treadle array sharing the memory of Paddle tensor ``t`` (no copy).

    Args:
        t: the tensor.
        dtype: the element type (``None``: the tensor's type; vector/matrix types consume trailing dimensions).
        requires_grad: map the tensor's gradient (default: ``not t.stop_gradient``); when the tensor has none, a
            zero gradient is allocated and attached to it where Paddle allows (else only to the array).
        grad: a gradient to attach instead (a Paddle tensor or a Treadle array).
        return_ctype: return the low-level array descriptor (keep ``t`` alive while it is used).
        retain_grad: passed to the array.
    """
    paddle = _paddle()
    if not isinstance(t, paddle.Tensor):
        raise TypeError(f"from_paddle() expects a paddle.Tensor, got {type(t).__name__}")
    result = from_dlpack(paddle.utils.dlpack.to_dlpack(t), dtype=dtype)
    if requires_grad is None:
        requires_grad = not t.stop_gradient
    if grad is not None:
        result.grad = grad if isinstance(grad, _arr.array) else from_paddle(grad, dtype=dtype, requires_grad=False)
    elif requires_grad:
        g = t.grad
        if g is None:
            g = _set_paddle_grad(t, paddle.zeros_like(t))
        if g is not None:
            result.grad = from_paddle(g, dtype=dtype, requires_grad=False)
        else:
            result.requires_grad = True
    if retain_grad:
        result.retain_grad = True  # after the gradient: retain_grad needs one
    return result.__ctype__() if return_ctype else result


def to_paddle(a: Any, requires_grad: bool | None = None) -> Any:
    """A Paddle tensor sharing the memory of Treadle array ``a`` (no copy; the tensor keeps ``a`` alive).

    With ``requires_grad`` (default: ``a.requires_grad``) the tensor gets ``stop_gradient=False`` and, where Paddle
    allows, the array's gradient as its ``.grad``: both then share one buffer (Paddle's own, when it insists on
    one: the array's ``grad`` is re-pointed at it, keeping its values).
    """
    paddle = _paddle()
    if not _arr.is_array(a):
        raise TypeError(f"to_paddle() expects a Treadle array, got {type(a).__name__}")
    t = paddle.utils.dlpack.from_dlpack(export_array(a, stream=None))
    if requires_grad is None:
        requires_grad = a.requires_grad
    if requires_grad:
        t.stop_gradient = False
        if a.grad is not None:
            g = _set_paddle_grad(t, to_paddle(a.grad, requires_grad=False))
            if g is not None and int(g.data_ptr()) != a.grad.ptr:
                # Paddle keeps a buffer of its own for t.grad (a copy of the array's gradient): the array's gradient
                # becomes a view of that buffer, so that Tape.backward() writes where Paddle's optimizers read.
                a.grad = from_paddle(g, dtype=a.dtype, requires_grad=False)
    return t


__all__ = [
    "device_from_paddle",
    "device_to_paddle",
    "dtype_from_paddle",
    "dtype_to_paddle",
    "from_paddle",
    "stream_from_paddle",
    "to_paddle",
]
