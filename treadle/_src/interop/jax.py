"""JAX interop: ``from_jax`` / ``to_jax`` through DLPack, dtype and device maps.

``jax`` is imported only when one of these functions is called.

JAX arrays are immutable, and JAX may share one buffer between several arrays or reuse it once it believes nobody
reads it. A Treadle array made by :func:`from_jax` is a zero-copy view of such a buffer: **treat it as read-only**.
Writing through it is not supported: the change may or may not be seen by JAX, and may show up in other arrays that
share the buffer. To hand results to JAX, write them into a Treadle array and convert it with :func:`to_jax` (or
launch kernels through ``jax_kernel``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..lang import array as _arr
from ..runtime import device as _device
from ..types import scalars
from .common import InteropError, require_scalar_map
from .dlpack import from_dlpack


def _jax() -> Any:
    import jax

    return jax


@functools.cache
def _to_jax_table() -> dict[Any, Any]:
    import jax.numpy as jnp

    s = scalars
    return {
        s.bool: jnp.bool_,
        s.int8: jnp.int8,
        s.uint8: jnp.uint8,
        s.int16: jnp.int16,
        s.uint16: jnp.uint16,
        s.int32: jnp.int32,
        s.uint32: jnp.uint32,
        s.int64: jnp.int64,
        s.uint64: jnp.uint64,
        s.float16: jnp.float16,
        s.float32: jnp.float32,
        s.float64: jnp.float64,
        s.bfloat16: jnp.bfloat16,
    }


def dtype_to_jax(warp_dtype: Any) -> Any:
    """The JAX scalar type (``jnp.float32`` ...) for a Treadle scalar type.

    Raises:
        TypeError: the type has no JAX equivalent.
    """
    return require_scalar_map(_to_jax_table(), scalars.scalar_from_python(warp_dtype), "Treadle type", "JAX")


def dtype_from_jax(jax_dtype: Any) -> Any:
    """The Treadle scalar type for a JAX dtype (``jnp.float32``, ``np.dtype('int8')``, ``x.dtype`` ...).

    Raises:
        TypeError: the type has no Treadle equivalent (``bfloat16``, complex, float8 ...).
    """
    try:
        key = np.dtype(jax_dtype)
    except TypeError:
        key = None
    found = scalars.scalar_from_numpy(key) if key is not None else None
    if found is None:
        raise InteropError(
            f"Cannot convert JAX type {jax_dtype!r} to a Treadle type; supported: bool, (u)int8..64, float16/32/64"
        )
    return found


def device_from_jax(jax_device: Any) -> Any:
    """The Treadle device for a ``jax.Device``: ``cpu``, or ``cuda:N`` with ``N`` its process-local GPU ordinal.

    Raises:
        RuntimeError: the device is neither a CPU nor a GPU, or it belongs to another process.
    """
    platform = getattr(jax_device, "platform", None)
    if platform == "cpu":
        return _device.get_device("cpu")
    if platform in ("gpu", "cuda"):
        jax = _jax()
        if jax_device.process_index != jax.process_index():
            raise InteropError(f"JAX device {jax_device} belongs to another process")
        return _device.get_device(f"cuda:{jax_device.local_hardware_id}")
    raise InteropError(f"Unsupported JAX device {jax_device!r}: Treadle works with CPU and CUDA devices")


def device_to_jax(warp_device: Any) -> Any:
    """The ``jax.Device`` of this process for a Treadle device (a CUDA device maps by process-local ordinal).

    Raises:
        RuntimeError: JAX has no matching device in this process.
    """
    jax = _jax()
    dev = _device.get_device(warp_device)
    if dev.is_cpu:
        try:
            return jax.local_devices(backend="cpu")[0]
        except RuntimeError as e:
            raise InteropError(f"JAX has no CPU device: {e}") from None
    try:
        gpus = jax.local_devices(backend="gpu")
    except RuntimeError:
        gpus = []
    for d in gpus:
        if d.local_hardware_id == dev.ordinal:
            return d
    raise InteropError(f"JAX has no device matching Treadle device {dev} in this process")


def from_jax(jax_array: Any, dtype: Any = None) -> Any:
    """A Treadle array viewing the memory of a JAX array (no copy).

    The result must be treated as read-only (see the module notes): JAX arrays are immutable.
    ``dtype`` is the element type (``None``: the JAX scalar type; a vector/matrix type consumes trailing
    dimensions). The JAX buffer stays alive as long as the Treadle array exists.

    Raises:
        InteropError: unsupported type or device (sharded arrays spanning several devices cannot be viewed).
    """
    if not hasattr(jax_array, "__dlpack__"):
        raise TypeError(f"from_jax() expects a jax.Array, got {type(jax_array).__name__}")
    return from_dlpack(jax_array, dtype=dtype)


def to_jax(warp_array: Any) -> Any:
    """A JAX array sharing the memory of Treadle array ``warp_array`` (zero-copy where JAX allows it).

    JAX imports only compact (transposed at most) layouts: a strided view is copied to a contiguous array first.
    The JAX array keeps the Treadle memory alive. Vector/matrix elements become trailing dimensions. Do not
    modify the Treadle array afterwards while JAX may read it (JAX assumes its arrays never change).
    """
    jax = _jax()
    if not _arr.is_array(warp_array):
        raise TypeError(f"to_jax() expects a Treadle array, got {type(warp_array).__name__}")
    src = warp_array if warp_array.is_contiguous else warp_array.contiguous()
    return jax.dlpack.from_dlpack(src)


__all__ = ["device_from_jax", "device_to_jax", "dtype_from_jax", "dtype_to_jax", "from_jax", "to_jax"]
