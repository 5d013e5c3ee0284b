"""Type predicates and helpers used by the compiler and the public ``treadle.types`` module.

Two families, as in the reference's ``warp.types``:

- ``type_is_*(t)`` take a **type** (``type_is_vector(wp.vec3)``).
- ``is_*(x)`` take a **value** in the reference (``is_vector(wp.vec3(1, 2, 3))``). Here they accept a value *or* a
  type, so the compiler can ask ``is_vector(t)`` too: every value the reference answers for gives the same answer,
  and a type gives the answer of its ``type_is_*`` twin.

``bool`` is not a scalar for ``is_scalar``/``type_is_scalar`` (it is a value type), as in the reference. Python's
``int``/``float``/``bool`` annotations stand for ``int32``/``float32``/``bool`` everywhere.
"""

from __future__ import annotations

import builtins
import ctypes
import typing
from typing import Any

from ..core import abi
from . import scalars
from .matrix import mat_base, matrix
from .quat import quat_base, quaternion, transform_base, transformation
from .struct import Struct, StructInstance, is_array_like
from .vector import composite_base, vector

__all__ = [
    "dtype_from_numpy",
    "dtype_to_numpy",
    "is_array",
    "is_composite",
    "is_float",
    "is_int",
    "is_matrix",
    "is_quaternion",
    "is_scalar",
    "is_struct",
    "is_tile",
    "is_transformation",
    "is_value",
    "is_vector",
    "matrix",
    "normalize_type",
    "quaternion",
    "scalar_type_of",
    "transformation",
    "type_ctype",
    "type_is_array",
    "type_is_composite",
    "type_is_float",
    "type_is_int",
    "type_is_matrix",
    "type_is_quaternion",
    "type_is_scalar",
    "type_is_struct",
    "type_is_tile",
    "type_is_transformation",
    "type_is_value",
    "type_is_vector",
    "type_length",
    "type_repr",
    "type_scalar_type",
    "type_size",
    "type_size_in_bytes",
    "types_equal",
    "vector",
]


def normalize_type(t: Any) -> Any:
    """Python ``int``/``float``/``bool`` -> ``int32``/``float32``/``bool``; other types unchanged."""
    return scalars.scalar_from_python(t)


def _composite_class(x: Any) -> Any:
    if isinstance(x, type):
        return x if issubclass(x, composite_base) else None
    return type(x) if isinstance(x, composite_base) else None


def _array_parts(t: Any) -> tuple[Any, Any] | None:
    """``(ndim, dtype)`` of an array annotation, array or compiler ``ArrayT``; ``None`` otherwise."""
    if isinstance(t, type):
        return None
    from .typesys import ArrayT

    if isinstance(t, ArrayT) or is_array_like(t):
        return t.ndim, t.dtype
    return None


# -- predicates on types -------------------------------------------------------------------------------------------


def type_is_int(t: Any) -> builtins.bool:
    """True for integer scalar types (``int8`` ... ``uint64``, Python ``int``); ``bool`` excluded."""
    return t is builtins.int or scalars.is_int_type(t)


def type_is_float(t: Any) -> builtins.bool:
    """True for floating-point scalar types (``float16``/``float32``/``float64``, Python ``float``)."""
    return t is builtins.float or scalars.is_float_type(t)


def type_is_scalar(t: Any) -> builtins.bool:
    """True for numeric scalar types (integers and floats; ``bool`` excluded, as in the reference)."""
    return type_is_int(t) or type_is_float(t)


def type_is_vector(t: Any) -> builtins.bool:
    """True for vector types (not quaternions or transforms)."""
    return isinstance(t, type) and issubclass(t, composite_base) and t._wp_generic_type_str_ == "vec_t"


def type_is_matrix(t: Any) -> builtins.bool:
    """True for matrix types."""
    return isinstance(t, type) and issubclass(t, mat_base)


def type_is_quaternion(t: Any) -> builtins.bool:
    """True for quaternion types."""
    return isinstance(t, type) and issubclass(t, quat_base)


def type_is_transformation(t: Any) -> builtins.bool:
    """True for transform types."""
    return isinstance(t, type) and issubclass(t, transform_base)


def type_is_composite(t: Any) -> builtins.bool:
    """True for vector, matrix, quaternion and transform types."""
    return isinstance(t, type) and issubclass(t, composite_base)


def type_is_value(t: Any) -> builtins.bool:
    """True for value types: scalars (``bool`` included) and composites."""
    return type_is_scalar(t) or t is builtins.bool or t is scalars.bool or type_is_composite(t)


def type_is_struct(t: Any) -> builtins.bool:
    """True for ``@struct`` types."""
    return isinstance(t, Struct)


def type_is_array(t: Any) -> builtins.bool:
    """True for array types (array annotations, arrays, and the compiler's array types)."""
    return _array_parts(t) is not None


def type_is_tile(t: Any) -> builtins.bool:
    """True for tile types (``wp.tile[float, 4, 4]``, the compiler's tile types)."""
    from .typesys import TileT

    return isinstance(t, TileT)


# -- predicates on values (or types) ---------------------------------------------------------------------------------


def is_int(x: Any) -> builtins.bool:
    """True for integer values (Python ``int``, Treadle integer scalars) and integer types; ``bool`` excluded."""
    if isinstance(x, type):
        return type_is_int(x)
    if isinstance(x, scalars.scalar_base):
        return type_is_int(type(x))
    return isinstance(x, builtins.int) and not isinstance(x, builtins.bool)


def is_float(x: Any) -> builtins.bool:
    """True for float values (Python ``float``, Treadle float scalars) and float types."""
    if isinstance(x, type):
        return type_is_float(x)
    if isinstance(x, scalars.scalar_base):
        return type_is_float(type(x))
    return isinstance(x, builtins.float)


def is_scalar(x: Any) -> builtins.bool:
    """True for numeric scalar values and types (``bool`` excluded)."""
    return is_int(x) or is_float(x)


def is_vector(x: Any) -> builtins.bool:
    """True for vectors (values or types); quaternions and transforms are not vectors."""
    return type_is_vector(_composite_class(x))


def is_matrix(x: Any) -> builtins.bool:
    """True for matrices (values or types)."""
    return type_is_matrix(_composite_class(x))


def is_quaternion(x: Any) -> builtins.bool:
    """True for quaternions (values or types)."""
    return type_is_quaternion(_composite_class(x))


def is_transformation(x: Any) -> builtins.bool:
    """True for transforms (values or types)."""
    return type_is_transformation(_composite_class(x))


def is_composite(x: Any) -> builtins.bool:
    """True for vectors, matrices, quaternions and transforms (values or types)."""
    return _composite_class(x) is not None


def is_value(x: Any) -> builtins.bool:
    """True for values kernels take by value: numbers, ``bool`` and composites (or their types)."""
    if isinstance(x, type):
        return type_is_value(x)
    if isinstance(x, (builtins.bool, builtins.int, builtins.float, scalars.scalar_base)):
        return True
    return isinstance(x, composite_base)


def is_struct(x: Any) -> builtins.bool:
    """True for ``@struct`` types and their instances."""
    return isinstance(x, (Struct, StructInstance))


def is_array(x: Any) -> builtins.bool:
    """True for arrays and array annotations."""
    return type_is_array(x)


def is_tile(x: Any) -> builtins.bool:
    """True for tile types and annotations (tiles exist inside kernels only)."""
    return type_is_tile(x)


# -- helpers -------------------------------------------------------------------------------------------------------------


def scalar_type_of(t: Any) -> Any:
    """The scalar type of a composite type or value (``vec3d`` -> ``float64``); other types are returned as is."""
    t = normalize_type(t)
    st = getattr(t, "_wp_scalar_type_", None)
    return t if st is None else st


type_scalar_type = scalar_type_of


def type_size(t: Any) -> builtins.int:
    """Number of scalars in one value of type ``t`` (1 for scalars, ``_length_`` for composites: 9 for mat33)."""
    t = normalize_type(t)
    cls = _composite_class(t)
    if cls is not None:
        return builtins.int(cls._length_)
    if scalars.is_scalar_type(t):
        return 1
    raise TypeError(f"type_size() needs a scalar or composite type, got {type_repr(t)}")


def type_length(obj: Any) -> builtins.int:
    """The length of a type or value along its first dimension, as the reference's ``types.type_length``.

    A vector, quaternion or transform type has its number of components, a matrix type its number of rows (3 for
    ``mat33``, where :func:`type_size` says 9), a scalar type 1; a value (vector, matrix, array, sequence) has its
    ``len()``, a scalar value 1. Python's ``int``/``float`` classes have no length (``TypeError``), as there.
    """
    if isinstance(obj, type):
        if issubclass(obj, composite_base):
            shape = getattr(obj, "_shape_", None)
            return builtins.int(shape[0]) if shape else builtins.int(obj._length_)
        if scalars.is_scalar_type(obj):
            return 1
        raise TypeError(f"type_length() needs a Treadle scalar or composite type or a value, got {type_repr(obj)}")
    if isinstance(obj, scalars.scalar_base):
        return 1
    return builtins.len(obj)


def type_ctype(t: Any) -> Any:
    """The ctypes type that stores one value of ``t`` (composites are their own ctypes type)."""
    t = normalize_type(t)
    if scalars.is_scalar_type(t):
        return t._type_
    if type_is_composite(t):
        return t
    if isinstance(t, Struct):
        return t.ctype
    if type_is_array(t):
        return abi.ArrayDesc
    raise TypeError(f"Invalid data type: {type_repr(t)}")


def type_size_in_bytes(t: Any) -> builtins.int:
    """Size in bytes of one value of type ``t``."""
    return ctypes.sizeof(type_ctype(t))


def types_equal(a: Any, b: Any, match_generics: builtins.bool = False) -> builtins.bool:
    """True if ``a`` and ``b`` denote the same type.

    ``typing.Any`` matches anything; Python ``int``/``float``/``bool`` equal ``int32``/``float32``/``bool``;
    composites compare by kind, shape and scalar type; arrays by ``ndim`` and dtype; structs by identity.
    ``match_generics`` is accepted for compatibility (``Any`` always matches).
    """
    a, b = normalize_type(a), normalize_type(b)
    if a is typing.Any or b is typing.Any or a is b:
        return True
    ca, cb = _composite_class(a), _composite_class(b)
    if isinstance(a, type) and isinstance(b, type) and ca is not None and cb is not None:
        return (
            ca._wp_generic_type_str_ == cb._wp_generic_type_str_
            and tuple(ca._shape_) == tuple(cb._shape_)
            and types_equal(ca._wp_scalar_type_, cb._wp_scalar_type_)
        )
    pa, pb = _array_parts(a), _array_parts(b)
    if pa is not None and pb is not None:
        return builtins.int(pa[0]) == builtins.int(pb[0]) and types_equal(pa[1], pb[1], match_generics)
    if isinstance(a, Struct) or isinstance(b, Struct):
        return False
    try:
        return builtins.bool(a == b)
    except Exception:
        return False


def type_repr(t: Any) -> str:
    """A readable name: ``float32``, ``vec3f``, ``mat33d``, ``array(ndim=1, dtype=float32)``, ``module.Struct``."""
    if t is None:
        return "None"
    if t is typing.Any:
        return "Any"
    if isinstance(t, Struct):
        return f"{t.__module__}.{t.key}"
    parts = _array_parts(t)
    if parts is not None:
        return f"array(ndim={parts[0]}, dtype={type_repr(normalize_type(parts[1]))})"
    if isinstance(t, type):
        return t.__name__
    return repr(t)


def dtype_to_numpy(t: Any) -> Any:
    """The NumPy type of ``t``'s scalars (``float32`` -> ``np.float32``; ``vec3h`` -> ``np.float16``).

    Struct types give their structured :class:`numpy.dtype`.
    """
    t = normalize_type(t)
    if isinstance(t, Struct):
        return t.numpy_dtype()
    st = getattr(t, "_wp_scalar_type_", None) if isinstance(t, type) else None
    if st is not None and scalars.is_scalar_type(st):
        return st._np_.type
    raise TypeError(f"Cannot convert {type_repr(t)} to a NumPy type")


def dtype_from_numpy(numpy_type: Any) -> Any:
    """The Treadle scalar type of a NumPy dtype or scalar type (``np.float16`` -> ``float16``)."""
    found = scalars.scalar_from_numpy(numpy_type)
    if found is None:
        raise TypeError(f"Cannot convert {numpy_type!r} to a Treadle type")
    return found
