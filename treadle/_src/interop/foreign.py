"""Foreign arrays passed straight to ``wp.launch``: torch tensors, ``__dlpack__`` and CUDA Array Interface objects.

The launch packer (``backends/args.py``) calls :func:`coerce_foreign_array` for an array argument that is neither a
Treadle array nor a NumPy-protocol object, and :func:`foreign_array_type` for the element type of such an argument
to a generic kernel; this module registers both with it when imported (``import treadle`` does).
"""

from __future__ import annotations

from typing import Any

from ..backends.args import register_foreign_arrays
from ..core.abi import ArrayDesc
from ..core.errors import LaunchError
from ..types.typesys import contains_any
from .common import InteropError

_torch_fast: dict[Any, int] = {}  # (torch dtype, Treadle dtype) -> item size for the direct path, 0: use from_torch


def torch_descriptor(v: Any, t: Any, what: str) -> Any:
    """An ``ArrayDesc`` for tensor ``v`` as array type ``t`` (data only); the common scalar case costs ~1 us."""
    key = (v.dtype, t.dtype)
    itemsize = _torch_fast.get(key)
    if itemsize is None:
        from .torch import _scalar_info

        try:
            src, size = _scalar_info(v.dtype)
        except InteropError:
            size, src = 0, None
        itemsize = size if src is not None and (t.dtype is src or contains_any(t.dtype)) else 0
        _torch_fast[key] = itemsize
    if itemsize and v.dim() == t.ndim:
        desc = ArrayDesc()
        desc.data = v.data_ptr()
        for i, (n, st) in enumerate(zip(v.shape, v.stride())):
            desc.shape[i] = n
            desc.strides[i] = st * itemsize
        desc.ndim = t.ndim
        return desc
    from .torch import from_torch  # vector/matrix element types, 0-d tensors, type mismatches (with the error)

    dtype = None if contains_any(t.dtype) else t.dtype
    try:
        desc = from_torch(v, dtype=dtype, requires_grad=False, return_ctype=True)
    except InteropError as e:
        raise LaunchError(f"{what}: {e}") from None
    if desc.ndim != t.ndim:
        raise LaunchError(f"{what} expects a {t.ndim}-d array, got a tensor of shape {tuple(v.shape)}")
    return desc


def coerce_foreign_array(v: Any, t: Any, device: Any, what: str) -> Any:
    """A foreign array passed straight to ``wp.launch`` as kernel argument of array type ``t``, without copying.

    Called by the launch packer only when ``v`` is neither a Treadle array nor a NumPy-protocol object. Returns:

    - an ``ArrayDesc`` (ready to pack) for a ``torch.Tensor`` (data only: gradients are mapped by ``from_torch``)
      or for a descriptor from ``from_torch(..., return_ctype=True)`` (used as is; keep its tensor alive);
    - a Treadle array view for any other object implementing ``__dlpack__`` (JAX, CuPy, Paddle ...);
    - ``None`` when ``v`` is not array-like (the caller reports the type error).

    Raises:
        LaunchError: the data does not fit ``t`` (dimensions, element type) or lives on another device.
    """
    if type(v).__module__.startswith("torch") and hasattr(v, "data_ptr"):
        if device is not None and not (v.is_cpu and device.is_cpu):
            from .torch import device_from_torch

            if device_from_torch(v.device) != device:
                raise LaunchError(f"{what} is a tensor on device '{v.device}' but the launch is on '{device}'")
        return torch_descriptor(v, t, what)
    if isinstance(v, ArrayDesc):
        if v.ndim != t.ndim:
            raise LaunchError(f"{what} expects a {t.ndim}-d array, got a descriptor with {v.ndim} dimension(s)")
        return v
    if hasattr(v, "__dlpack__"):
        from .dlpack import from_dlpack

        try:
            return from_dlpack(v, dtype=None if contains_any(t.dtype) else t.dtype)
        except InteropError as e:
            raise LaunchError(f"{what}: {e}") from None
    if hasattr(v, "__cuda_array_interface__"):  # Numba device arrays and other CUDA-only producers
        from .cuda_interface import from_cuda_array_interface

        try:
            return from_cuda_array_interface(v, dtype=None if contains_any(t.dtype) else t.dtype)
        except InteropError as e:
            raise LaunchError(f"{what}: {e}") from None
    return None


def foreign_array_type(v: Any, declared: Any) -> Any:
    """The concrete array type of a foreign array for a generic (``Any`` dtype) parameter, or ``None``."""
    from ..types.typesys import ArrayT

    if not contains_any(declared.dtype):
        return declared
    if type(v).__module__.startswith("torch") and hasattr(v, "data_ptr"):
        from .torch import dtype_from_torch

        return ArrayT(dtype_from_torch(v.dtype), declared.ndim)
    if hasattr(v, "__dlpack__"):
        from .dlpack import from_dlpack

        a = from_dlpack(v)
        return ArrayT(a.dtype, declared.ndim)
    if hasattr(v, "__cuda_array_interface__"):
        from .cuda_interface import from_cuda_array_interface

        return ArrayT(from_cuda_array_interface(v).dtype, declared.ndim)
    return None


register_foreign_arrays(coerce_foreign_array, foreign_array_type)

__all__ = ["coerce_foreign_array", "foreign_array_type"]
