"""Launch arguments as every backend receives them: the launch grid, argument types, checks and ctypes packing.

A kernel argument becomes the bytes of its field in the kernel's ``Args`` struct (the layout of
``core/abi.py`` and ``compiler/instance.py``'s ``ctype_of``), the same for the CPU, CUDA and the interpreter's
checks: arrays pack their descriptor (``array.__ctype__()``), scalars convert with the reference's rules, vectors,
matrices and structs pass by value. :func:`make_packer` chooses the conversion once per parameter; each launch then
calls it per argument.

Arrays are recognised by the type layer's array protocol (``types/arrays.py``). Arguments that are not Treadle
arrays -- NumPy arrays are wrapped without a copy; torch tensors and ``__dlpack__`` objects -- go through the hooks
the interop layer registers with :func:`register_foreign_arrays` when it is imported (with ``treadle``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.abi import MAX_DIMS, ArrayDesc, LaunchBounds
from ..core.errors import LaunchError
from ..types import scalars
from ..types.arrays import array_class, is_array_object
from ..types.typesys import ArrayT, GenericComposite, contains_any, is_composite, is_struct, type_str


class _Foreign:
    """The interop layer's conversions of foreign arrays (``None`` until it registers them)."""

    #: ``(value, declared ArrayT, device, what) -> array | ArrayDesc | None`` (``None``: not array-like)
    coerce: Callable[[Any, Any, Any, str], Any] | None = None
    #: ``(value, declared ArrayT) -> ArrayT | None``: the concrete type of a foreign array for a generic parameter
    array_type: Callable[[Any, Any], Any] | None = None


FOREIGN = _Foreign()


def register_foreign_arrays(coerce: Callable[[Any, Any, Any, str], Any], array_type: Callable[[Any, Any], Any]) -> None:
    """Install the interop layer's conversions of foreign arrays (torch tensors, ``__dlpack__`` objects)."""
    FOREIGN.coerce = coerce
    FOREIGN.array_type = array_type


def launch_bounds(dim: Any) -> LaunchBounds:
    """The launch grid for ``dim`` (an int or a tuple of up to 4 ints)."""
    if isinstance(dim, (int, np.integer)):
        shape: tuple[int, ...] = (int(dim),)
    else:
        try:
            shape = tuple(operator.index(d) for d in dim)  # no silent truncation of 2.5 or parsing of "3"
        except TypeError:
            raise LaunchError(f"launch dim must be an int or a tuple of ints, got {dim!r}") from None
    if not 1 <= len(shape) <= MAX_DIMS:
        raise LaunchError(f"launch dim must have 1 to {MAX_DIMS} dimensions, got {len(shape)}")
    if any(s < 0 for s in shape):
        raise LaunchError(f"launch dim must not be negative, got {shape}")
    b = LaunchBounds()
    size = 1
    for i, s in enumerate(shape):
        b.shape[i] = s
        size *= s
    for i in range(len(shape), MAX_DIMS):
        b.shape[i] = 1
    b.ndim = len(shape)
    b.size = size
    return b


def value_type(v: Any, declared: Any) -> Any:
    """The kernel type of a launch argument (for generic kernels)."""
    if isinstance(declared, ArrayT):
        if is_array_object(v):
            return ArrayT(v.dtype, v.ndim, getattr(v, "_indexed_", False))
        if isinstance(v, np.ndarray):
            from ..types.scalars import scalar_from_numpy

            dt = scalar_from_numpy(v.dtype) if declared.dtype is Any else declared.dtype
            return ArrayT(dt, v.ndim if not is_composite(dt) else v.ndim - len(dt._shape_))
        # torch tensors / __dlpack__ objects passed straight to a generic kernel (the interop layer's hook)
        type_of = FOREIGN.array_type
        return (type_of(v, declared) if type_of is not None else None) or declared
    if isinstance(declared, GenericComposite):
        if declared.matches(type(v)):
            return type(v)
        raise LaunchError(f"a {type(v).__name__} argument does not match the generic parameter type {declared!r}")
    if declared is Any:
        if isinstance(v, bool):
            return scalars.bool
        if isinstance(v, int):
            return scalars.int32
        if isinstance(v, float):
            return scalars.float32
        if isinstance(v, scalars.scalar_base):
            return type(v)
        if is_composite(type(v)):
            return type(v)
        st = getattr(v, "_struct_type_", None)
        if st is not None:
            return st
        if is_array_object(v):
            return ArrayT(v.dtype, v.ndim, getattr(v, "_indexed_", False))
        raise LaunchError(f"cannot infer a kernel type for a {type(v).__name__} argument")
    return declared


def pack_arg(name: str, t: Any, v: Any, device: Any, kernel: Any) -> Any:
    """Convert one Python argument to its ctypes value, with a clear error if it does not fit."""
    if isinstance(t, ArrayT):
        if v is None:
            return ArrayDesc()
        if not is_array_object(v):
            if isinstance(v, np.ndarray) or hasattr(v, "__array_interface__"):
                v = _wrap_numpy(v, t, name, kernel)
            else:
                # The interop layer's hook (slow path only): torch tensors and from_torch(..., return_ctype=True)
                # descriptors come back as a packed ArrayDesc, other __dlpack__ objects as a zero-copy array view.
                coerce = FOREIGN.coerce
                foreign = (coerce(v, t, device, f"kernel '{kernel.key}' argument '{name}'")
                           if coerce is not None else None)
                if foreign is None:
                    raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects an array, got "
                                      f"{type(v).__name__}")
                if not is_array_object(foreign):
                    return foreign  # an ArrayDesc, already checked
                v = foreign
        if v.ndim != t.ndim:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects a {t.ndim}-d array, got a "
                              f"{v.ndim}-d array of shape {v.shape}")
        if not contains_any(t.dtype) and v.dtype != t.dtype:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects an array of {type_str(t.dtype)}, "
                              f"got an array of {type_str(v.dtype)}")
        if device is not None and v.device != device:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' is on device '{v.device}' but the launch "
                              f"is on '{device}'; move it with arr.to('{device}')")
        return v.__ctype__()
    if scalars.is_scalar_type(t):
        if isinstance(v, scalars.scalar_base):
            v = v.value
        elif isinstance(v, np.generic):
            v = v.item()
        if t is scalars.bool:
            return bool(v)
        if scalars.is_int_type(t):
            if isinstance(v, float) or not isinstance(v, (int, bool)):
                raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)}, got "
                                  f"{type(v).__name__} {v!r}")
            return int(v)
        if not isinstance(v, (int, float)):
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)}, got "
                              f"{type(v).__name__}")
        if t is scalars.float16:
            return int(np.float16(v).view(np.uint16))
        return float(v)
    if is_composite(t):
        if isinstance(v, t):
            return v
        if v is not None and (np.ndim(v) == 0 if isinstance(v, (np.generic, np.ndarray)) else
                              isinstance(v, (int, float, bool, scalars.scalar_base))):
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)} but got a single value "
                              f"of type {type(v).__name__} ({v!r}); pass a {type_str(t)} (e.g. "
                              f"{type_str(t)}(...)) or a sequence of its components")
        try:
            return t(*v) if not isinstance(v, np.ndarray) else t(v)
        except Exception:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)}, got "
                              f"{type(v).__name__} {v!r}") from None
    if is_struct(t):
        st = getattr(v, "_struct_type_", None)
        if st is not t:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects a {type_str(t)} struct, got "
                              f"{type(v).__name__}")
        return v.__ctype__()
    raise LaunchError(f"kernel '{kernel.key}' argument '{name}' has an unsupported type {type_str(t)}")


def _wrap_numpy(v: Any, t: ArrayT, name: str, kernel: Any) -> Any:

    try:
        return array_class()(v, dtype=t.dtype if not contains_any(t.dtype) else None, copy=False)
    except Exception as e:
        raise LaunchError(f"kernel '{kernel.key}' argument '{name}': cannot use this NumPy array as "
                          f"{t}: {e}") from None


def make_packer(name: str, t: Any, kernel: Any) -> Any:
    """A function ``(value, device) -> ctypes value`` specialised for one parameter type (chosen once)."""
    if isinstance(t, ArrayT):
        array = array_class()
        want_dtype = None if contains_any(t.dtype) else t.dtype
        ndim = t.ndim

        def pack_array(v: Any, device: Any) -> Any:
            if type(v) is array or isinstance(v, array):
                if v.ndim == ndim and (want_dtype is None or v.dtype == want_dtype) and v.device is device:
                    return v.__ctype__()
            return pack_arg(name, t, v, device, kernel)

        return pack_array
    if t is scalars.float32 or t is scalars.float64:

        def pack_float(v: Any, device: Any) -> Any:
            if type(v) is float:
                return v
            return pack_arg(name, t, v, device, kernel)

        return pack_float
    if t is scalars.int32 or t is scalars.int64 or t is scalars.uint32 or t is scalars.uint64:

        def pack_int(v: Any, device: Any) -> Any:
            if type(v) is int:
                return v
            return pack_arg(name, t, v, device, kernel)

        return pack_int
    return lambda v, device: pack_arg(name, t, v, device, kernel)


_bounds_cache: dict[Any, LaunchBounds] = {}


def cached_bounds(dim: Any) -> LaunchBounds:
    """:func:`launch_bounds` of ``dim``, remembered for int and tuple grids (one object per grid: no repacking)."""
    b = _bounds_cache.get(dim) if type(dim) is int or type(dim) is tuple else None
    if b is None:
        b = launch_bounds(dim)
        if (type(dim) is int or type(dim) is tuple) and len(_bounds_cache) < 4096:
            _bounds_cache[dim] = b
    return b


