"""Host values for Python-scope builtin calls: their kernel types, and conversion to and from NumPy.

``wp.sin(1.0)`` types its argument as a kernel would (``float`` -> ``float32``), evaluates the builtin's NumPy host
implementation in that precision, and converts the result back (a Python number, or a vector/matrix instance).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import scalars
from .typesys import is_composite, is_struct, scalar_of


def host_type_of(value: Any) -> Any:
    """The kernel type of a host value."""
    if isinstance(value, builtins.bool) or isinstance(value, np.bool_):
        return scalars.bool
    if isinstance(value, scalars.scalar_base):
        return type(value)
    if isinstance(value, np.generic):
        t = scalars.scalar_from_numpy(value.dtype)
        if t is not None:
            return t
    if isinstance(value, builtins.int):
        if -(2**31) <= value < 2**31:
            return scalars.int32
        if 0 <= value < 2**32:
            return scalars.uint32
        return scalars.int64 if value < 2**63 else scalars.uint64
    if isinstance(value, builtins.float):
        return scalars.float32
    t = type(value)
    if is_composite(t):
        return t
    st = getattr(value, "_struct_type_", None)
    if st is not None and is_struct(st):
        return st
    if isinstance(value, type):
        return value
    raise TypeError(f"a value of Python type '{type(value).__name__}' cannot be passed to a Treadle builtin")


def to_numpy(value: Any, t: Any) -> Any:
    """A NumPy scalar or array holding ``value`` in the precision of type ``t``."""
    if isinstance(value, type):
        return value
    if is_composite(t):
        if hasattr(value, "__array__"):
            arr = np.asarray(value.__array__(), dtype=scalar_of(t)._np_)
        else:
            arr = np.array(value, dtype=scalar_of(t)._np_)
        return arr.reshape(t._shape_)
    if isinstance(value, scalars.scalar_base):
        value = value.value
    np_t = t._np_ if hasattr(t, "_np_") else None
    if np_t is None:
        return value
    return np_t.type(value)


def from_numpy_result(result: Any, t: Any) -> Any:
    """Convert a NumPy result to the host representation of type ``t``."""
    if t is None:
        return None
    if is_composite(t):
        arr = np.asarray(result, dtype=scalar_of(t)._np_).reshape(-1)
        return t(*arr.tolist()) if t._length_ > 1 else t(arr[0])
    if t is scalars.bool:
        return builtins.bool(result)
    if scalars.is_int_type(t):
        v = builtins.int(np.asarray(result).astype(t._np_))
        # Unsigned results keep their type (as the reference returns wp.uint32 states), so they round-trip.
        return t(v) if not t._is_signed_ else v
    if scalars.is_float_type(t):
        return builtins.float(np.asarray(result).astype(t._np_))
    return result
