"""Scalar types: ``bool``, ``int8`` ... ``uint64``, ``float16``, ``float32``, ``float64``.

Each scalar type is a class. Calling it on the host makes a small value object (``wp.float32(1.5)``); in a kernel it
is a conversion. The class attributes describe the type for the compiler, the emitter and array storage:

- ``_type_``: the ctypes type used for storage (``c_uint16`` for float16);
- ``_np_``: the NumPy dtype;
- ``_cname_``: the C++ type name in the native headers (``treadle::float32`` ...);
- ``_size_``, ``_is_float_``, ``_is_int_``, ``_is_signed_``, ``_bits_``.
"""

from __future__ import annotations

import builtins
import ctypes
import math
from typing import Any

import numpy as np


class scalar_base:
    """Base of all scalar value types."""

    _type_: Any = None
    _np_: Any = None
    _cname_: str = ""
    _size_: int = 0
    _bits_: int = 0
    _length_: int = 1  # one component (vectors and matrices have more)
    _is_float_: bool = False
    _is_int_: bool = False
    _is_signed_: bool = True
    _wp_scalar_type_: Any = None  # set to the class itself below

    __slots__ = ("value",)

    def __init__(self, x: Any = 0) -> None:
        self.value = self._convert(x)

    @classmethod
    def _convert(cls, x: Any) -> Any:
        if isinstance(x, scalar_base):
            x = x.value
        if cls._is_float_:
            return float(np.asarray(x, dtype=cls._np_))
        if cls is bool:  # type: ignore[comparison-overlap]
            return builtins.bool(x)
        return int(np.asarray(int(x)).astype(cls._np_))

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        if self._is_float_:
            raise TypeError(f"{type(self).__name__} cannot be used as an index")
        return int(self.value)

    def __bool__(self) -> builtins.bool:
        return builtins.bool(self.value)

    def __eq__(self, other: object) -> builtins.bool:
        if isinstance(other, scalar_base):
            other = other.value
        return builtins.bool(self.value == other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    def __str__(self) -> str:
        return str(self.value)

    # Arithmetic on host values follows the type: results are the same scalar type.
    def _binary(self, other: Any, op: Any) -> Any:
        o = other.value if isinstance(other, scalar_base) else other
        if not isinstance(o, (builtins.int, builtins.float, np.number, np.bool_)):
            return NotImplemented  # arrays, vectors...: their reflected operator decides
        return type(self)(op(self.value, o))

    def __add__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: b * a)

    def __truediv__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: a / b)

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: b / a)

    def __neg__(self) -> Any:
        return type(self)(-self.value)

    def __pos__(self) -> Any:
        return type(self)(self.value)

    # `%` is C's remainder (the sign of the dividend), as in kernels.
    def __mod__(self, other: Any) -> Any:
        return self._binary(other, _c_mod)

    def __rmod__(self, other: Any) -> Any:
        return self._binary(other, lambda a, b: _c_mod(b, a))

    def __pow__(self, other: Any) -> Any:
        self._float_only("**")
        return self._binary(other, lambda a, b: a**b)

    def __rpow__(self, other: Any) -> Any:
        self._float_only("**")
        return self._binary(other, lambda a, b: b**a)

    def _float_only(self, op: str) -> None:
        if not getattr(self, "_is_float_", False):
            raise TypeError(f"'{op}' is only supported for float scalars, not {type(self).__name__}")

    def __lt__(self, other: Any) -> builtins.bool:
        return builtins.bool(self.value < (other.value if isinstance(other, scalar_base) else other))

    def __le__(self, other: Any) -> builtins.bool:
        return builtins.bool(self.value <= (other.value if isinstance(other, scalar_base) else other))

    def __gt__(self, other: Any) -> builtins.bool:
        return builtins.bool(self.value > (other.value if isinstance(other, scalar_base) else other))

    def __ge__(self, other: Any) -> builtins.bool:
        return builtins.bool(self.value >= (other.value if isinstance(other, scalar_base) else other))


def _c_mod(a: Any, b: Any) -> Any:
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        r = abs(a) % abs(b)
        return -r if a < 0 else r
    return math.fmod(a, b)


class float_base(scalar_base):
    """Base of floating-point scalar types."""

    __slots__ = ()
    _is_float_ = True


class int_base(scalar_base):
    """Base of integer scalar types."""

    __slots__ = ()
    _is_int_ = True


def _scalar(name: str, base: type, ctype: Any, npdt: Any, bits: int, signed: builtins.bool = True) -> type:
    cls: Any = type(
        name,
        (base,),
        {
            "__slots__": (),
            "__doc__": f"The {name} scalar type.",
            "_type_": ctype,
            "_np_": np.dtype(npdt),
            # NumPy reads a `dtype` attribute of an object it is given as a dtype: np.dtype(wp.int32) is int32,
            # np.zeros(n, dtype=wp.float32) a float32 array (the reference's scalar types read the same way)
            "dtype": np.dtype(npdt),
            "_cname_": name,
            "_size_": bits // 8 if bits >= 8 else 1,
            "_bits_": bits,
            "_is_signed_": signed,
        },
    )
    cls._wp_scalar_type_ = cls
    return cls


bool = _scalar("bool", scalar_base, ctypes.c_bool, np.bool_, 8, signed=False)  # noqa: A001
int8 = _scalar("int8", int_base, ctypes.c_int8, np.int8, 8)
uint8 = _scalar("uint8", int_base, ctypes.c_uint8, np.uint8, 8, signed=False)
int16 = _scalar("int16", int_base, ctypes.c_int16, np.int16, 16)
uint16 = _scalar("uint16", int_base, ctypes.c_uint16, np.uint16, 16, signed=False)
int32 = _scalar("int32", int_base, ctypes.c_int32, np.int32, 32)
uint32 = _scalar("uint32", int_base, ctypes.c_uint32, np.uint32, 32, signed=False)
int64 = _scalar("int64", int_base, ctypes.c_int64, np.int64, 64)
uint64 = _scalar("uint64", int_base, ctypes.c_uint64, np.uint64, 64, signed=False)
float16 = _scalar("float16", float_base, ctypes.c_uint16, np.float16, 16)
float32 = _scalar("float32", float_base, ctypes.c_float, np.float32, 32)
float64 = _scalar("float64", float_base, ctypes.c_double, np.float64, 64)

#: Opaque 64-bit handle (ids of meshes, BVHs, hash grids ...).
handle = uint64


def _bfloat16_numpy() -> Any:
    try:  # ml_dtypes (a dependency of JAX) gives NumPy a real bfloat16 dtype
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:  # otherwise arrays show the raw 16-bit patterns
        return np.dtype(np.uint16)


class _LazyNumpyDtype:
    """bfloat16's NumPy dtype, found on first use: importing ``ml_dtypes`` costs more than the rest of start-up."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type) -> Any:
        dt = _bfloat16_numpy()
        for name in ("_np_", "dtype"):  # replace both descriptors by the value: later reads are plain lookups
            type.__setattr__(owner, name, dt)
        return dt


class bfloat16(scalar_base):
    """The bfloat16 storage type (8-bit exponent, 7-bit mantissa). Kernels load, store and convert it."""

    __slots__ = ()
    _type_ = ctypes.c_uint16
    _np_ = _LazyNumpyDtype()
    dtype = _LazyNumpyDtype()
    _cname_ = "bfloat16"
    _size_ = 2
    _bits_ = 16
    _is_float_ = True

    @classmethod
    def _convert(cls, x: Any) -> Any:
        if isinstance(x, scalar_base):
            x = x.value
        bits = int(np.float32(x).view(np.uint32))
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
            return float("nan")
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.uint32(bits).view(np.float32))


bfloat16._wp_scalar_type_ = bfloat16

bool._is_int_ = False  # type: ignore[attr-defined]

int_types: tuple[type, ...] = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
float_types: tuple[type, ...] = (float16, float32, float64)
scalar_types: tuple[type, ...] = (bool, *int_types, *float_types)
non_atomic_types: tuple[type, ...] = (int8, uint8, int16, uint16, int64)

# bfloat16 is a storage-only type: recognised everywhere, but not in `scalar_types` (no arithmetic on it).
_BY_NUMPY = {t._np_: t for t in scalar_types}  # type: ignore[attr-defined]
_BY_NAME = {t.__name__: t for t in (*scalar_types, bfloat16)}


def is_scalar_type(t: Any) -> builtins.bool:
    """True if ``t`` is one of Treadle's scalar types."""
    return isinstance(t, type) and t in _BY_NAME.values()


def is_float_type(t: Any) -> builtins.bool:
    """True if ``t`` is a floating-point scalar type."""
    return isinstance(t, type) and t in float_types


def is_int_type(t: Any) -> builtins.bool:
    """True if ``t`` is an integer scalar type (``bool`` excluded)."""
    return isinstance(t, type) and t in int_types


def scalar_from_python(t: Any) -> Any:
    """Map Python's ``int``/``float``/``bool`` annotations to ``int32``/``float32``/``bool``; pass others through."""
    if t is builtins.int:
        return int32
    if t is builtins.float:
        return float32
    if t is builtins.bool:
        return bool
    return t


def scalar_from_numpy(dt: Any) -> Any:
    """The scalar type for a NumPy dtype, or ``None``."""
    try:
        dt = np.dtype(dt)
    except TypeError:
        return None
    found = _BY_NUMPY.get(dt)
    if found is None and dt.name == "bfloat16" and dt == bfloat16._np_:  # ml_dtypes' type, when it is installed
        found = _BY_NUMPY[dt] = bfloat16
    return found


def scalar_by_name(name: str) -> Any:
    """The scalar type called ``name`` (``"float32"`` ...), or ``None``."""
    return _BY_NAME.get(name)


def infer_literal_type(value: Any) -> Any:
    """The kernel type of a Python literal: ``bool``, ``int32`` or ``float32`` (as the reference does)."""
    if isinstance(value, builtins.bool) or isinstance(value, np.bool_):
        return bool
    if isinstance(value, scalar_base):
        return type(value)
    if isinstance(value, np.generic):
        return scalar_from_numpy(value.dtype)
    if isinstance(value, builtins.int):
        return int32
    if isinstance(value, builtins.float):
        return float32
    return None


def promote_literal_float(value: builtins.float) -> builtins.float:
    """Round a Python float to float32 as untyped kernel constants are."""
    if math.isfinite(value):
        return builtins.float(np.float32(value))
    return value
