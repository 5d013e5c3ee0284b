"""Values of the IR interpreter (:mod:`.interpret`): how kernel values look while a kernel runs in Python.

- scalars are NumPy scalars of the kernel precision (``np.float32``, ``np.int32``, ``np.bool_``, ...), so arithmetic
  rounds and wraps as the compiled code does;
- vectors, matrices, quaternions and transforms are NumPy arrays of shape ``type._shape_`` (what the builtins' host
  implementations take and return); they are never modified in place, so they can be shared freely;
- structs are :class:`StructValue` s (field name -> value, with value semantics like the C++ structs);
- arrays are :class:`ArrayRef` s: a NumPy view of the array's memory (zero-copy on the CPU) plus its kernel dtype;
- tuples (multiple return values) are Python tuples.

Arrays of structs are read and written as NumPy records of :meth:`Struct.numpy_dtype`; arrays held in struct fields
travel as native descriptors (pointer, shape, strides), exactly as in compiled code.
"""

from __future__ import annotations

import ctypes
import enum
import math
from typing import Any

import numpy as np

from ...core.errors import CheckedModeError
from ...types import scalars
from ...types.typesys import ArrayT, TupleT, is_composite, is_struct, normalize_annotation, scalar_of


class InterpretError(CheckedModeError):
    """A kernel failed while running in interpret mode (reported at the user's line, with the thread index)."""


class InterpretIndexError(InterpretError, IndexError):
    """An out-of-bounds array or component index in interpret mode."""


class InterpretZeroDivisionError(InterpretError, ZeroDivisionError):
    """Integer division or modulo by zero in interpret mode."""


class InterpretUnsupportedError(InterpretError, NotImplementedError):
    """A builtin that has no Python implementation yet (it only runs compiled)."""


class Fault(Exception):
    """Raised while a statement runs; the interpreter reports it as ``kind`` with the location and thread."""

    kind: type[InterpretError] = InterpretError


class OutOfBounds(Fault):
    """An index outside an array or a vector/matrix."""

    kind = InterpretIndexError


class DivisionByZero(Fault):
    """An integer division or modulo by zero."""

    kind = InterpretZeroDivisionError


class ArrayRef:
    """An array inside the interpreter: a NumPy view (``None`` for a null array) and its kernel element type.

    ``data`` has the array's shape followed by the element's inner shape (vectors/matrices), or is a structured
    array for structs. ``grad`` is the address of the gradient of element 0 (0 if none), kept so that arrays stored
    into struct records keep their gradient buffers.
    """

    __slots__ = ("data", "dtype", "ndim", "name", "grad")

    def __init__(self, data: np.ndarray | None, dtype: Any, ndim: int, name: str = "", grad: int = 0) -> None:
        self.data = data
        self.dtype = dtype
        self.ndim = ndim
        self.name = name
        self.grad = grad

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's extents (without the inner dimensions of vector/matrix elements)."""
        if self.data is None:
            return (0,) * self.ndim
        return tuple(self.data.shape[: self.ndim])

    def __bool__(self) -> bool:
        return self.data is not None

    def __repr__(self) -> str:
        if self.data is None:
            return f"<null array {self.name}>"
        return f"<array {self.name or '?'} shape={self.shape}>\n{self.data!r}"

    def check(self, idx: tuple[int, ...]) -> None:
        """Raise :class:`OutOfBounds` unless ``idx`` (one index per leading dimension) is inside the array."""
        if self.data is None:
            raise OutOfBounds(f"array '{self.name}' is null (None was passed)")
        shape = self.data.shape
        for d, i in enumerate(idx):
            if not 0 <= i < shape[d]:
                self.check_dim(d, i)

    def check_dim(self, d: int, i: int) -> None:
        """Raise :class:`OutOfBounds` unless ``0 <= i <`` the extent of dimension ``d``."""
        if self.data is None:
            raise OutOfBounds(f"array '{self.name}' is null (None was passed)")
        n = self.data.shape[d]
        if not 0 <= i < n:
            raise OutOfBounds(f"index {i} is out of bounds for dimension {d} of extent {n} "
                              f"(array '{self.name}', shape {self.shape})")

    def view(self, key: tuple[Any, ...], ndim: int, name: str) -> ArrayRef:
        """A sub-array for a NumPy index ``key`` (integers already checked), keeping the gradient offset."""
        assert self.data is not None
        sub = self.data[key]
        grad = self.grad + (sub.ctypes.data - self.data.ctypes.data) if self.grad else 0
        return ArrayRef(sub, self.dtype, ndim, name, grad)


class StructValue:
    """A struct value: fields by name, in declaration order. Field reads work as attributes (handy in pdb)."""

    __slots__ = ("type", "fields")

    def __init__(self, type: Any, fields: dict[str, Any]) -> None:
        self.type = type
        self.fields = fields

    def __getattr__(self, name: str) -> Any:
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def replace(self, name: str, value: Any) -> StructValue:
        """A copy with one field replaced."""
        fields = dict(self.fields)
        fields[name] = value
        return StructValue(self.type, fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{getattr(self.type, 'key', 'struct')}({inner})"


# ----------------------------------------------------------------------------------------------------------------
# Conversions
# ----------------------------------------------------------------------------------------------------------------


def np_scalar(v: Any, np_type: Any) -> Any:
    """``v`` as the NumPy scalar type ``np_type``, wrapping out-of-range integers as a C cast does."""
    try:
        return np_type(v)
    except (OverflowError, ValueError, TypeError):
        return np.asarray(v).astype(np_type)[()]


def cast_scalar(v: Any, t: Any) -> Any:
    """``static_cast<t>(v)`` for a scalar kernel value ``v`` (truncation toward zero, wrap-around, bool tests)."""
    np_type = t._np_.type
    if type(v) is np_type:
        return v
    if t is scalars.bool:
        return np.bool_(bool(v))
    return np.asarray(v).astype(np_type)[()]


def coerce(v: Any, t: Any) -> Any:
    """A host implementation's result as a value of kernel type ``t`` (precision and shape fixed up)."""
    if t is None:
        return None
    if scalars.is_scalar_type(t):
        np_type = t._np_.type
        if type(v) is np_type:
            return v
        if isinstance(v, np.ndarray):
            v = v.reshape(())[()]
        return np_scalar(v, np_type)
    if is_composite(t):
        a = np.asarray(v, dtype=scalar_of(t)._np_)
        if a.shape != tuple(t._shape_):
            a = a.reshape(t._shape_)
        return a
    if isinstance(t, TupleT):
        return tuple(coerce(x, et) for x, et in zip(v, t.types))
    return v


def zero_value(t: Any) -> Any:
    """The value of a default-initialised (``T{}``) local of type ``t``."""
    if t is None:
        return None
    if scalars.is_scalar_type(t):
        return t._np_.type(0)
    if is_composite(t):
        return np.zeros(t._shape_, dtype=scalar_of(t)._np_)
    if isinstance(t, ArrayT):
        return ArrayRef(None, t.dtype, t.ndim)
    if is_struct(t):
        return StructValue(t, {name: zero_value(normalize_annotation(ft)) for name, ft in t.vars.items()})
    if isinstance(t, TupleT):
        return tuple(zero_value(et) for et in t.types)
    return None  # opaque native types (query states) have no Python value


def const_value(value: Any, t: Any) -> Any:
    """The interpreter value of an IR constant."""
    if t is None:
        return value
    if isinstance(value, scalars.scalar_base):
        value = value.value
    if isinstance(value, enum.Enum):
        value = value.value
    if scalars.is_scalar_type(t):
        if t is scalars.bool:
            return np.bool_(bool(value))
        return np_scalar(value, t._np_.type)
    if is_composite(t):
        return np.asarray(value, dtype=scalar_of(t)._np_).reshape(t._shape_).copy()
    return value


def host_value(v: Any, t: Any, name: str) -> Any:
    """A launch argument (as passed to ``wp.launch``) as the interpreter value of parameter type ``t``."""
    if isinstance(t, ArrayT):
        return array_ref(v, t, name)
    if scalars.is_scalar_type(t):
        if isinstance(v, scalars.scalar_base):
            v = v.value
        if t is scalars.bool:
            return np.bool_(bool(v))
        return np_scalar(v, t._np_.type)
    if is_composite(t):
        return np.array(np.asarray(v, dtype=scalar_of(t)._np_).reshape(t._shape_))
    if is_struct(t):
        return struct_from_record(v.numpy_value(), t, name)
    return v


def array_ref(v: Any, t: ArrayT, name: str) -> ArrayRef:
    """An :class:`ArrayRef` viewing a Treadle array argument (``None`` gives a null array)."""
    if v is None:
        return ArrayRef(None, t.dtype, t.ndim, name)
    grad = getattr(v, "grad", None)
    gptr = int(getattr(grad, "ptr", 0) or 0) if grad is not None else 0
    return ArrayRef(v.numpy(), t.dtype, t.ndim, name, gptr)


def inner_shape(dtype: Any) -> tuple[int, ...]:
    return tuple(dtype._shape_) if is_composite(dtype) else ()


def np_dtype(dtype: Any) -> np.dtype:
    if is_struct(dtype):
        return np.dtype(dtype.numpy_dtype())
    return np.dtype(scalar_of(dtype)._np_)


def array_from_desc(desc: Any, t: ArrayT, name: str) -> ArrayRef:
    """An :class:`ArrayRef` from a native descriptor record (an array held in a struct field)."""
    ptr = int(desc["data"])
    if ptr == 0:
        return ArrayRef(None, t.dtype, t.ndim, name)
    ndim = int(desc["ndim"]) or t.ndim
    shape = tuple(int(x) for x in desc["shape"][:ndim])
    strides = tuple(int(x) for x in desc["strides"][:ndim])
    npdt = np_dtype(t.dtype)
    inner = inner_shape(t.dtype)
    inner_strides: list[int] = []
    acc = npdt.itemsize
    for n in reversed(inner):
        inner_strides.insert(0, acc)
        acc *= n
    elem = acc
    if math.prod(shape) == 0:
        data = np.empty(shape + inner, dtype=npdt)
    else:
        lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + elem
        buf: Any = (ctypes.c_char * (hi - lo)).from_address(ptr + lo)
        data = np.ndarray(shape + inner, dtype=npdt, buffer=buf, offset=-lo, strides=strides + tuple(inner_strides))
    return ArrayRef(data, t.dtype, t.ndim, name, int(desc["grad"]))


def _fill_desc(desc: Any, ref: ArrayRef) -> None:
    if ref.data is None:
        desc[...] = np.zeros((), dtype=desc.dtype)
        return
    desc["data"] = ref.data.ctypes.data
    desc["grad"] = ref.grad
    shape = np.zeros(4, dtype=np.int64)
    strides = np.zeros(4, dtype=np.int64)
    shape[: ref.ndim] = ref.data.shape[: ref.ndim]
    strides[: ref.ndim] = ref.data.strides[: ref.ndim]
    desc["shape"] = shape
    desc["strides"] = strides
    desc["ndim"] = ref.ndim
    desc["flags"] = 0


def struct_from_record(rec: Any, st: Any, name: str = "") -> StructValue:
    """A :class:`StructValue` holding a copy of a NumPy record of ``st.numpy_dtype()``."""
    fields: dict[str, Any] = {}
    for fname, ft in st.vars.items():
        ft = normalize_annotation(ft)
        raw = rec[fname]
        if isinstance(ft, ArrayT):
            fields[fname] = array_from_desc(raw, ft, f"{name}.{fname}" if name else fname)
        elif is_struct(ft):
            fields[fname] = struct_from_record(raw, ft, f"{name}.{fname}" if name else fname)
        elif is_composite(ft):
            fields[fname] = np.array(raw, dtype=scalar_of(ft)._np_).reshape(ft._shape_)
        else:
            fields[fname] = np_scalar(raw, ft._np_.type)
    return StructValue(st, fields)


def fill_record(rec: Any, value: StructValue) -> None:
    """Write a :class:`StructValue` into a (0-d or element) NumPy record of its struct's dtype."""
    for fname, ft in value.type.vars.items():
        ft = normalize_annotation(ft)
        v = value.fields[fname]
        if isinstance(ft, ArrayT):
            _fill_desc(rec[fname], v)
        elif is_struct(ft):
            fill_record(rec[fname], v)
        else:
            rec[fname] = v


def struct_record(value: StructValue) -> np.ndarray:
    """A 0-d NumPy record holding a :class:`StructValue` (to store it into an array of structs)."""
    rec = np.zeros((), dtype=value.type.numpy_dtype())
    fill_record(rec, value)
    return rec


def load_element(ref: ArrayRef, idx: tuple[int, ...]) -> Any:
    """``ref[idx]`` as an interpreter value (a copy: arrays change under it)."""
    assert ref.data is not None
    v = ref.data[idx]
    t = ref.dtype
    if is_struct(t):
        return struct_from_record(v, t, f"{ref.name}[{', '.join(map(str, idx))}]")
    if isinstance(v, np.ndarray):
        return v.copy()
    return v


def store_element(ref: ArrayRef, idx: tuple[int, ...], value: Any) -> None:
    """``ref[idx] = value``."""
    assert ref.data is not None
    if isinstance(value, StructValue):
        ref.data[idx] = struct_record(value)
    else:
        ref.data[idx] = value


# ----------------------------------------------------------------------------------------------------------------
# Printing, in the format of treadle/native/print.h
# ----------------------------------------------------------------------------------------------------------------


def format_scalar(v: Any) -> str:
    """One scalar as ``print`` writes it: floats ``%g``, integers in full, bools ``True``/``False``."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):g}"
    return str(int(v))


def format_value(v: Any) -> str:
    """A scalar, vector or matrix as ``print`` writes it (components followed by a space; matrix rows on lines)."""
    if isinstance(v, np.ndarray):
        if v.ndim == 2:
            return "\n".join("".join(format_scalar(x) + " " for x in row) for row in v)
        return "".join(format_scalar(x) + " " for x in v.reshape(-1))
    if isinstance(v, StructValue):
        return repr(v)
    return format_scalar(v)


def max_abs_diff(a: Any, b: Any) -> float:
    """Largest componentwise ``|a - b|`` in double precision (NaN if any component is NaN)."""
    d = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).reshape(-1)
    if np.any(np.isnan(d)):
        return math.nan
    return float(d.max()) if d.size else 0.0
