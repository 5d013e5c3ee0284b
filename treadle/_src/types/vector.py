"""Vector types: ``vector(length, dtype)`` and the named aliases ``vec2`` ... ``vec4ul``.

A vector type is a ``ctypes.Array`` of ``length`` scalars, so an instance has exactly the C layout of
``treadle::vec_t<N, T>`` (``length * sizeof(T)`` bytes) and can be stored in arrays, structs and launch arguments
without conversion. ``vector(n, t)`` is cached: the same ``(n, t)`` always gives the same class, so ``vec3 is
vector(3, float32)``.

Class attributes the compiler and the runtime read:

- ``_length_`` (components), ``_type_`` (ctypes storage type, ``c_uint16`` for float16), ``_shape_ = (length,)``;
- ``_wp_scalar_type_`` (the Treadle scalar class), ``_wp_generic_type_str_ = "vec_t"``,
  ``_wp_type_params_ = [length, dtype]``.

Components read back as Python numbers (``float``/``int``/``bool``); float16 components are stored as half bit
patterns and read back as floats. Host arithmetic computes in the vector's own precision (NumPy), as a kernel would.

This module also holds the machinery shared by matrices, quaternions and transforms: :class:`composite_base`,
value flattening, scalar operand checks and the type cache.
"""

from __future__ import annotations

import builtins
import ctypes
import operator
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import scalars

#: Suffix of the named aliases for each scalar type (``vec3f``, ``mat22d`` ...).
SCALAR_SUFFIX: dict[Any, str] = {
    scalars.int8: "b",
    scalars.uint8: "ub",
    scalars.int16: "s",
    scalars.uint16: "us",
    scalars.int32: "i",
    scalars.uint32: "ui",
    scalars.int64: "l",
    scalars.uint64: "ul",
    scalars.float16: "h",
    scalars.float32: "f",
    scalars.float64: "d",
}

_cache: dict[tuple[Any, ...], type] = {}
_cache_lock = threading.RLock()  # re-entrant: a matrix class creates its row vector class


def cached_type(key: tuple[Any, ...], make: Callable[[], type]) -> Any:
    """Return the composite class for ``key``, creating it once with ``make()`` (thread-safe)."""
    cls = _cache.get(key)
    if cls is None:
        with _cache_lock:
            cls = _cache.get(key)
            if cls is None:
                cls = make()
                cls._wp_type_key_ = key  # type: ignore[attr-defined]
                _cache[key] = cls
    return cls


def normalize_scalar(dtype: Any) -> Any:
    """The Treadle scalar class for ``dtype`` (a scalar class, Python ``int``/``float``/``bool`` or a NumPy dtype)."""
    t = scalars.scalar_from_python(dtype)
    if scalars.is_scalar_type(t):
        return t
    if isinstance(t, (np.dtype, str)) or (isinstance(t, type) and issubclass(t, np.generic)):
        found = scalars.scalar_from_numpy(t)
        if found is not None:
            return found
    name = getattr(dtype, "__name__", repr(dtype))
    raise TypeError(f"composite types need a scalar dtype (float32, int32, ...), got {name}")


def make_composite_class(name: str, base: type, length: int, dtype: Any, extra: dict[str, Any]) -> type:
    """Create a ctypes array class of ``length`` scalars of ``dtype`` deriving from ``base`` (in ``base``'s module)."""
    ns: dict[str, Any] = {
        "_type_": dtype._type_,
        "_length_": length,
        "_wp_scalar_type_": dtype,
        "_half_": dtype is scalars.float16 or dtype is scalars.bfloat16,  # stored as 16-bit patterns
        "__module__": base.__module__,
        "__qualname__": name,
        "__doc__": f"The {name} type ({length} x {dtype.__name__}).",
    }
    ns.update(extra)
    return type(name, (base,), ns)


# --------------------------------------------------------------------------------------------------------------
# Value helpers shared by vectors, matrices and structs


def is_number(x: Any) -> builtins.bool:
    """True for a single real value: Python numbers, NumPy scalars and 0-d arrays, Treadle scalar values."""
    if isinstance(x, (builtins.int, builtins.float, np.number, np.bool_, scalars.scalar_base)):
        return True
    return isinstance(x, np.ndarray) and x.ndim == 0


def flatten_values(x: Any) -> list[Any]:
    """Flatten a composite, a NumPy array or a (nested) sequence into a list of scalar values."""
    if isinstance(x, composite_base):
        return x._values()
    if isinstance(x, np.ndarray):
        return x.ravel().tolist()
    if is_number(x):
        return [x]
    if isinstance(x, (str, bytes)):
        raise TypeError(f"must be real number, not {type(x).__name__}")
    ndim = getattr(x, "ndim", None)
    if isinstance(ndim, builtins.int) and callable(getattr(x, "tolist", None)):  # torch/JAX/Paddle tensors
        v = x.tolist()
        return [v] if ndim == 0 else flatten_values(v)
    out: list[Any] = []
    for item in x:
        if is_number(item):
            out.append(item)
        else:
            out.extend(flatten_values(item))
    return out


def nested_to_numpy(x: Any, np_dtype: Any = None) -> np.ndarray:
    """A NumPy array from a composite, array or nested sequence (composites keep their shape)."""
    if isinstance(x, composite_base):
        return x._to_numpy().reshape(x._shape_)
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        parts = [nested_to_numpy(item) if not is_number(item) else np.asarray(_plain(item)) for item in x]
        if not parts:
            return np.zeros((0,), dtype=np_dtype)
        return np.stack(parts)
    return np.asarray(_plain(x), dtype=np_dtype)


def _plain(x: Any) -> Any:
    return x.value if isinstance(x, scalars.scalar_base) else x


def to_float(x: Any) -> builtins.float:
    """``float(x)`` that refuses strings (as ctypes does)."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"must be real number, not {type(x).__name__}")
    return builtins.float(x)


def encode_half(values: list[Any], dtype: Any = None) -> list[builtins.int]:
    """The 16-bit patterns of a list of real values in ``dtype`` (``float16`` by default, or ``bfloat16``)."""
    floats = [to_float(v) for v in values]
    if dtype is scalars.bfloat16:
        if scalars.bfloat16._np_.kind == "V":  # ml_dtypes: rounded to nearest even from the double directly
            return np.asarray(floats, dtype=np.float64).astype(scalars.bfloat16._np_).view(np.uint16).tolist()
        return [builtins.int(np.float32(scalars.bfloat16._convert(f)).view(np.uint32)) >> 16 for f in floats]
    return np.asarray(floats, dtype=np.float16).view(np.uint16).tolist()


def decode_half(bits: builtins.int, dtype: Any = None) -> builtins.float:
    """The float value of a 16-bit pattern of ``dtype`` (``float16`` by default, or ``bfloat16``)."""
    if dtype is scalars.bfloat16:
        return builtins.float(np.uint32(builtins.int(bits) << 16).view(np.float32))
    return builtins.float(np.uint16(bits).view(np.float16))


def _decode_halves(raw: Any, dtype: Any) -> np.ndarray:
    """Float values (float32) of a buffer of 16-bit patterns of ``dtype``."""
    bits = np.frombuffer(raw, dtype=np.uint16)
    if dtype is scalars.bfloat16:
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.view(np.float16).astype(np.float32)


def scalar_operand(x: Any, st: Any, op: str, owner: str) -> Any:
    """Convert a scalar operand of a composite operation to a NumPy scalar of type ``st``.

    Float composites take any real number; integer composites refuse floats (as kernels do).
    """
    if isinstance(x, scalars.scalar_base):
        is_float_value = type(x)._is_float_
        x = x.value
    else:
        is_float_value = isinstance(x, (builtins.float, np.floating)) or (
            isinstance(x, np.ndarray) and x.dtype.kind == "f"
        )
    if st._is_float_:
        return st._np_.type(builtins.float(x))
    if is_float_value:
        raise TypeError(f"unsupported operand types for {op}: '{owner}' and a float value ({x!r})")
    if st is scalars.bool:
        return np.bool_(x)
    return st._np_.type(st._type_(builtins.int(x)).value)


def c_divide(a: np.ndarray, b: Any, is_int: builtins.bool) -> np.ndarray:
    """Division as kernels do it: integers truncate toward zero; floats follow IEEE (``x / 0`` is inf)."""
    with np.errstate(all="ignore"):
        if not is_int:
            return np.asarray(a / b)
        if np.any(np.asarray(b) == 0):
            raise ZeroDivisionError("integer division by zero")
        q = np.abs(a) // np.abs(b)
        neg = (np.asarray(a) < 0) != (np.asarray(b) < 0)
        return np.where(neg, -q, q).astype(np.result_type(a, b))


def _index(key: Any, n: builtins.int, what: str) -> builtins.int:
    i = operator.index(key)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"{what} index {key} out of range for length {n}")
    return i


# --------------------------------------------------------------------------------------------------------------
# Base classes


class composite_base(ctypes.Array):  # type: ignore[type-arg]
    """Common base of vector, matrix, quaternion and transform types (a ctypes array of scalars)."""

    # Placeholders so that ctypes accepts this abstract base; concrete classes override both.
    _type_ = ctypes.c_float
    _length_ = 0
    _shape_: tuple[builtins.int, ...] = (0,)
    _wp_scalar_type_: Any = None
    _wp_generic_type_str_ = ""
    _wp_type_params_: list[Any] = []
    _wp_type_key_: tuple[Any, ...] = ()
    _half_ = False

    __hash__ = None  # type: ignore[assignment]  # mutable values, as in the reference

    # -- storage -------------------------------------------------------------------------------------------------
    def _get(self, i: builtins.int) -> Any:
        raw = ctypes.Array.__getitem__(self, i)
        return decode_half(raw, self._wp_scalar_type_) if self._half_ else raw

    def _set(self, i: builtins.int, value: Any) -> None:
        st = self._wp_scalar_type_
        try:
            if self._half_:
                value = encode_half([value], st)[0]
            elif isinstance(value, np.ndarray) and value.ndim == 0:
                value = value.item()
            ctypes.Array.__setitem__(self, i, value)
        except TypeError:
            raise TypeError(
                f"Expected to assign a `{st.__name__}` value but got `{type(value).__name__}` instead"
            ) from None

    def _store(self, values: list[Any]) -> None:
        if self._half_:
            values = encode_half(values, self._wp_scalar_type_)
        else:
            values = [v.item() if isinstance(v, np.ndarray) else v for v in values]
        # Slice assignment on the ctypes base stores directly (ctypes.Array.__init__ would call our __setitem__).
        ctypes.Array.__setitem__(self, slice(0, self._length_), values)

    def _values(self) -> list[Any]:
        """The components as a flat list of Python numbers."""
        if self._half_:
            return _decode_halves(memoryview(self), self._wp_scalar_type_).tolist()
        return ctypes.Array.__getitem__(self, slice(0, self._length_))

    def _to_numpy(self) -> np.ndarray:
        """A flat NumPy copy of the components in the scalar's dtype (float16 included)."""
        return np.frombuffer(memoryview(self), dtype=self._wp_scalar_type_._np_, count=self._length_).copy()

    @classmethod
    def _from_numpy(cls, arr: Any) -> Any:
        """An instance holding the values of ``arr`` (cast to the scalar dtype, row-major)."""
        data = np.ascontiguousarray(arr, dtype=cls._wp_scalar_type_._np_)
        if data.size != cls._length_:
            raise ValueError(f"expected {cls._length_} values for {cls.__name__}, got {data.size}")
        return cls.from_buffer_copy(data.data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The values as a NumPy array of shape ``_shape_`` (NumPy itself prefers the ctypes buffer)."""
        arr = self._to_numpy().reshape(self._shape_)
        return arr if dtype is None else arr.astype(dtype)

    def _elem_repr(self, v: Any) -> str:
        st = self._wp_scalar_type_
        if st is scalars.float32 or st is scalars.int32:
            return repr(v)
        return f"{st.__name__}({v!r})"

    # -- copying and pickling ---------------------------------------------------------------------------------------
    def __copy__(self) -> Any:
        return type(self).from_buffer_copy(self)

    def __deepcopy__(self, memo: Any) -> Any:
        return type(self).from_buffer_copy(self)

    def __reduce__(self) -> Any:
        return (_rebuild, (self._wp_type_key_, bytes(self)))

    def __ne__(self, other: object) -> Any:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


def _rebuild(key: tuple[Any, ...], data: bytes) -> Any:
    """Unpickle a composite value from its type key and raw bytes."""
    return class_from_key(key).from_buffer_copy(data)


#: composite kind -> ``factory(*key[1:])`` making its class (``matrix.py`` and ``quat.py`` add their kinds)
COMPOSITE_FACTORIES: dict[str, Any] = {}


def class_from_key(key: tuple[Any, ...]) -> Any:
    """The composite class described by a cache key (``("vec", 3, float32)`` ...)."""
    factory = COMPOSITE_FACTORIES.get(key[0])
    if factory is None:
        raise ValueError(f"unknown composite type key {key!r}")
    return factory(*key[1:])


def _component(i: builtins.int, name: str) -> property:
    def fget(self: Any) -> Any:
        if i >= self._length_ or not self._xyzw_:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return self._get(i)

    def fset(self: Any, value: Any) -> None:
        if i >= self._length_ or not self._xyzw_:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        self._set(i, value)

    return property(fget, fset, doc=f"Component {i} of the vector.")


class vec_base(composite_base):
    """Base class of all vector types (and of quaternions and transforms, which are vector-like)."""

    _type_ = ctypes.c_float
    _length_ = 0
    _wp_generic_type_str_ = "vec_t"
    _xyzw_ = True

    def __init__(self, *args: Any) -> None:
        n = self._length_
        if not args:
            return  # ctypes zero-initialises
        if len(args) == n and n > 1 and not self._half_ and self._type_ is not ctypes.c_bool:
            try:  # fast path: n plain numbers, converted and checked by ctypes
                ctypes.Array.__setitem__(self, slice(0, n), args)
                return
            except TypeError:
                pass  # vectors among the arguments, or a real type error reported below
        if len(args) == 1:
            a = args[0]
            values = [a] * n if is_number(a) else flatten_values(a)
        elif builtins.all(is_number(a) for a in args):
            values = list(args)
        else:
            values = flatten_values(args)
        if len(values) != n:
            raise ValueError(
                f"Invalid number of arguments in vector constructor, expected {n} elements, got {len(values)}"
            )
        self._store(values)

    x = _component(0, "x")
    y = _component(1, "y")
    z = _component(2, "z")
    w = _component(3, "w")

    # -- sequence protocol ----------------------------------------------------------------------------------------
    def __len__(self) -> builtins.int:
        return self._length_

    def __iter__(self) -> Any:
        return iter(self._values())

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            values = self._values()[key]
            return vector(len(values), self._wp_scalar_type_)._from_numpy(
                np.asarray(values, dtype=self._wp_scalar_type_._np_)
            )
        return self._get(_index(key, self._length_, "vector"))

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, slice):
            idx = range(*key.indices(self._length_))
            values = [value] * len(idx) if is_number(value) else flatten_values(value)
            if len(values) != len(idx):
                raise ValueError("Can only assign sequence of same size")
            for i, v in zip(idx, values):
                self._set(i, v)
            return
        self._set(_index(key, self._length_, "vector"), value)

    # -- printing -------------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"{type(self).__name__}([{', '.join(self._elem_repr(v) for v in self._values())}])"

    def __str__(self) -> str:
        return f"[{', '.join(str(v) for v in self._values())}]"

    # -- comparison -------------------------------------------------------------------------------------------
    def __eq__(self, other: object) -> Any:
        if isinstance(other, vec_base):
            return other._length_ == self._length_ and self._values() == other._values()
        if isinstance(other, composite_base):
            return False
        if isinstance(other, np.ndarray):
            return other.shape == (self._length_,) and builtins.bool(np.all(other == self._to_numpy()))
        if isinstance(other, (list, tuple)):
            return len(other) == self._length_ and builtins.all(
                is_number(b) and a == _plain(b) for a, b in zip(self._values(), other)
            )
        return NotImplemented

    # -- arithmetic -------------------------------------------------------------------------------------------
    def _operand(self, other: Any, op: str) -> Any:
        """``other`` as a NumPy operand, or ``None`` when this class does not handle it."""
        if isinstance(other, vec_base):
            if (
                other._length_ != self._length_
                or other._wp_scalar_type_ is not self._wp_scalar_type_
                or other._wp_generic_type_str_ != self._wp_generic_type_str_
            ):
                raise TypeError(
                    f"unsupported operand types for {op}: '{type(self).__name__}' and '{type(other).__name__}'"
                )
            return other._to_numpy()
        if is_number(other):
            return scalar_operand(other, self._wp_scalar_type_, op, type(self).__name__)
        return None

    def _result(self, arr: Any) -> Any:
        return type(self)._from_numpy(arr)

    def _elementwise(self, other: Any, op: str, fn: Callable[[Any, Any], Any], reflected: builtins.bool) -> Any:
        b = self._operand(other, op)
        if b is None:
            return NotImplemented
        a = self._to_numpy()
        with np.errstate(all="ignore"):
            return self._result(fn(b, a) if reflected else fn(a, b))

    def __add__(self, other: Any) -> Any:
        return self._elementwise(other, "+", operator.add, False)

    def __radd__(self, other: Any) -> Any:
        return self._elementwise(other, "+", operator.add, True)

    def __sub__(self, other: Any) -> Any:
        return self._elementwise(other, "-", operator.sub, False)

    def __rsub__(self, other: Any) -> Any:
        return self._elementwise(other, "-", operator.sub, True)

    def _scale(self, other: Any, op: str, reflected: builtins.bool) -> Any:
        if isinstance(other, vec_base):
            fix = "wp.cw_mul(a, b)" if op == "*" else "wp.cw_div(a, b)"
            raise TypeError(
                f"unsupported operand types for {op}: '{type(self).__name__}' and '{type(other).__name__}' "
                f"(use {fix} for a component-wise product/quotient, or wp.dot(a, b))"
            )
        if not is_number(other):
            return NotImplemented
        b = scalar_operand(other, self._wp_scalar_type_, op, type(self).__name__)
        a = self._to_numpy()
        if op == "*":
            with np.errstate(all="ignore"):
                return self._result(a * b)
        is_int = not self._wp_scalar_type_._is_float_
        return self._result(c_divide(b, a, is_int) if reflected else c_divide(a, b, is_int))

    def __mul__(self, other: Any) -> Any:
        return self._scale(other, "*", False)

    def __rmul__(self, other: Any) -> Any:
        return self._scale(other, "*", True)

    def __truediv__(self, other: Any) -> Any:
        return self._scale(other, "/", False)

    def __rtruediv__(self, other: Any) -> Any:
        return self._scale(other, "/", True)

    def __matmul__(self, other: Any) -> Any:
        return NotImplemented  # vector @ matrix is handled by the matrix's __rmatmul__

    def __neg__(self) -> Any:
        with np.errstate(all="ignore"):
            return self._result(-self._to_numpy())

    # `%` componentwise with C's remainder (the sign of the dividend), as in kernels.
    def __mod__(self, other: Any) -> Any:
        return self._elementwise(other, "%", np.fmod, False)

    def __rmod__(self, other: Any) -> Any:
        return self._elementwise(other, "%", np.fmod, True)

    def __pos__(self) -> Any:
        return type(self).from_buffer_copy(self)


# --------------------------------------------------------------------------------------------------------------
# The factory


def vector_type_name(length: builtins.int, dtype: Any) -> str:
    """The class name of ``vector(length, dtype)``: ``vec3f``, ``spatial_vectord``, ``vector(length=5, ...)``."""
    suffix = SCALAR_SUFFIX.get(dtype)
    if suffix is not None and length <= 4:
        return f"vec{length}{suffix}"
    if length == 6 and dtype in scalars.float_types:
        return f"spatial_vector{suffix}"
    return f"vector(length={length}, dtype={dtype.__name__})"


def vector(length: builtins.int, dtype: Any) -> type[vec_base]:
    """The vector type of ``length`` components of scalar type ``dtype`` (cached: same arguments, same class).

    With ``typing.Any`` for the length or dtype the result is a generic annotation matching any such vector.
    """
    from .typesys import GenericComposite, scalar_category

    if length is Any or dtype is Any or scalar_category(dtype) is not None:
        dt = normalize_scalar(dtype) if dtype is not Any and scalar_category(dtype) is None else dtype
        return GenericComposite("vec_t", (length,), dt)  # type: ignore[return-value]
    length = operator.index(length)
    if length < 0:
        raise ValueError(f"vector length must not be negative, got {length}")
    dtype = normalize_scalar(dtype)

    def make() -> type:
        return make_composite_class(
            vector_type_name(length, dtype),
            vec_base,
            length,
            dtype,
            {"_shape_": (length,), "_wp_type_params_": [length, dtype]},
        )

    return cached_type(("vec", length, dtype), make)


vec2b = vector(2, scalars.int8)
vec3b = vector(3, scalars.int8)
vec4b = vector(4, scalars.int8)
vec2ub = vector(2, scalars.uint8)
vec3ub = vector(3, scalars.uint8)
vec4ub = vector(4, scalars.uint8)
vec2s = vector(2, scalars.int16)
vec3s = vector(3, scalars.int16)
vec4s = vector(4, scalars.int16)
vec2us = vector(2, scalars.uint16)
vec3us = vector(3, scalars.uint16)
vec4us = vector(4, scalars.uint16)
vec2i = vector(2, scalars.int32)
vec3i = vector(3, scalars.int32)
vec4i = vector(4, scalars.int32)
vec2ui = vector(2, scalars.uint32)
vec3ui = vector(3, scalars.uint32)
vec4ui = vector(4, scalars.uint32)
vec2l = vector(2, scalars.int64)
vec3l = vector(3, scalars.int64)
vec4l = vector(4, scalars.int64)
vec2ul = vector(2, scalars.uint64)
vec3ul = vector(3, scalars.uint64)
vec4ul = vector(4, scalars.uint64)
vec2h = vector(2, scalars.float16)
vec3h = vector(3, scalars.float16)
vec4h = vector(4, scalars.float16)
vec2f = vector(2, scalars.float32)
vec3f = vector(3, scalars.float32)
vec4f = vector(4, scalars.float32)
vec2d = vector(2, scalars.float64)
vec3d = vector(3, scalars.float64)
vec4d = vector(4, scalars.float64)
vec2 = vec2f
vec3 = vec3f
vec4 = vec4f


vector._treadle_type_factory_ = "vector"  # type: ignore[attr-defined]  # callable in kernels (lower_call.py)
COMPOSITE_FACTORIES["vec"] = vector  # unpickling (class_from_key)
