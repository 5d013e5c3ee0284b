"""Types as the compiler sees them.

Kernel values have one of these types:

- a scalar class (``float32`` ...), from :mod:`treadle._src.types.scalars`;
- a composite class (vector, matrix, quaternion, transform), from :mod:`treadle._src.types.vector` and friends;
- a ``Struct`` (from ``@struct``);
- :class:`ArrayT` (an array argument or view: dtype and number of dimensions);
- :class:`TupleT` (multiple return values);
- ``None`` for "no value".
"""

from __future__ import annotations

import builtins
import collections.abc
import dataclasses
import typing
from typing import Any

from . import scalars


@dataclasses.dataclass(frozen=True)
class ArrayT:
    """An array type: element type, number of dimensions (1-4), and whether it is an indexed array."""

    dtype: Any
    ndim: int = 1
    indexed: bool = False

    def __str__(self) -> str:
        kind = "indexedarray" if self.indexed else "array"
        return f"{kind}(ndim={self.ndim}, dtype={type_str(self.dtype)})"


@dataclasses.dataclass(frozen=True)
class TupleT:
    """The type of a tuple of values (``return a, b``)."""

    types: tuple[Any, ...]

    def __str__(self) -> str:
        return "tuple(" + ", ".join(type_str(t) for t in self.types) + ")"


@dataclasses.dataclass(frozen=True)
class TupleVarT:
    """The annotation ``tuple[T, ...]``: a tuple of any length whose items are ``T`` (a generic parameter type)."""

    elem: Any

    def __str__(self) -> str:
        return f"tuple({type_str(self.elem)}, ...)"


AnyT = typing.Any


class StaticArgT:
    """The compile-time "type" of a function passed to a ``@func`` parameter (``g: wp.Function``).

    Calls specialise the callee per function object: the parameter is bound to the function while lowering and
    passes no runtime value (static dispatch).
    """

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StaticArgT) and other.obj is self.obj

    def __hash__(self) -> int:
        return hash(("StaticArgT", id(self.obj)))

    def __str__(self) -> str:
        key = getattr(self.obj, "key", None) or getattr(self.obj, "name", None) or getattr(self.obj, "__name__", "?")
        return f"function({key}@{id(self.obj):x})"

    __repr__ = __str__


def is_callable_object(obj: Any) -> bool:
    """True for values that may be passed to a function parameter: ``@func`` functions and builtins."""
    return bool(getattr(obj, "_treadle_function_", False) or getattr(obj, "_treadle_builtin_", None) is not None
                or type(obj).__name__ == "Builtin")


def is_function_annotation(t: Any) -> bool:
    """True for parameter annotations that take a function: ``wp.Function``, ``Callable`` (bare or subscripted)."""
    if t is collections.abc.Callable or t is typing.Callable:
        return True
    if typing.get_origin(t) is collections.abc.Callable:
        return True
    return isinstance(t, type) and getattr(t, "_treadle_function_", False) is True


class RefT:
    """``wp.ref[T]``: a by-reference ``@func`` parameter (the callee's writes reach the caller's variable)."""

    def __init__(self, t: Any) -> None:
        self.t = t

    @property
    def dtype(self) -> Any:
        """The referenced value type ``T``."""
        return self.t

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RefT) and other.t == self.t

    def __hash__(self) -> int:
        return hash(("RefT", self.t))

    def __repr__(self) -> str:
        return f"wp.ref[{type_str(self.t)}]"


class ref:  # noqa: N801 (the reference API's name)
    """``wp.ref[T]`` annotates a ``@func`` parameter passed by reference."""

    def __class_getitem__(cls, t: Any) -> RefT:
        return RefT(normalize_annotation(t))


class OpaqueType:
    """A native type that kernels can hold in variables but not look inside (e.g. a hash-grid query state).

    ``cname`` is its C++ spelling in the native headers.
    """

    def __init__(self, name: str, cname: str, doc: str = "") -> None:
        self.__name__ = name
        self.cname = cname
        self.__doc__ = doc or f"The {name} native type."

    def __repr__(self) -> str:
        return self.__name__


def scalar_category(t: Any) -> str | None:
    """``"Int"``, ``"Float"`` or ``"Scalar"`` for the generic scalar annotations ``wp.Int``/``wp.Float``/``wp.Scalar``."""
    if isinstance(t, typing.TypeVar) and t.__name__ in ("Int", "Float", "Scalar"):
        return t.__name__
    return None


def category_matches(cat: str, t: Any) -> bool:
    """True if the scalar type ``t`` belongs to the category (``Int``, ``Float`` or ``Scalar``)."""
    if cat == "Int":
        return scalars.is_int_type(t)
    if cat == "Float":
        return scalars.is_float_type(t)
    return scalars.is_int_type(t) or scalars.is_float_type(t)


class GenericComposite:
    """A generic vector/matrix annotation such as ``vector(length=Any, dtype=float)`` (matches by kind)."""

    def __init__(self, kind: str, shape: tuple[Any, ...], dtype: Any) -> None:
        self.kind = kind
        self.shape = shape
        self.dtype = dtype

    def matches(self, t: Any) -> bool:
        """True if the concrete type ``t`` is an instance of this generic type."""
        if generic_kind(t) != self.kind:
            return False
        cat = scalar_category(self.dtype)
        if cat is not None:
            if not category_matches(cat, t._wp_scalar_type_):
                return False
        elif self.dtype is not AnyT and t._wp_scalar_type_ != self.dtype:
            return False
        return all(want is AnyT or want == got for want, got in zip(self.shape, t._shape_))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, GenericComposite) and (self.kind, self.shape, self.dtype)
                == (other.kind, other.shape, other.dtype))

    def __hash__(self) -> int:
        return hash((self.kind, self.shape, id(self.dtype)))

    def __repr__(self) -> str:
        dims = ", ".join("Any" if d is AnyT else str(d) for d in self.shape)
        return f"{'vector' if self.kind == 'vec_t' else 'matrix'}({dims}, {type_str(self.dtype)})"

    __name__ = "generic"


def is_scalar(t: Any) -> bool:
    """True for scalar types (``bool`` included)."""
    return scalars.is_scalar_type(t)


def is_float(t: Any) -> bool:
    """True for float scalar types."""
    return scalars.is_float_type(t)


def is_int(t: Any) -> bool:
    """True for integer scalar types (not ``bool``)."""
    return scalars.is_int_type(t)


def generic_kind(t: Any) -> str | None:
    """``"vec_t"``, ``"mat_t"``, ``"quat_t"``, ``"transform_t"`` for composite types, else ``None``."""
    return getattr(t, "_wp_generic_type_str_", None) if isinstance(t, type) else None


def is_vector_like(t: Any) -> bool:
    """Vectors, quaternions and transforms: one index, ``_length_`` components."""
    return generic_kind(t) in ("vec_t", "quat_t", "transform_t")


def is_vector(t: Any) -> bool:
    """Plain vectors (``vec_t``)."""
    return generic_kind(t) == "vec_t"


def is_matrix(t: Any) -> bool:
    """Matrices (``mat_t``)."""
    return generic_kind(t) == "mat_t"


def is_composite(t: Any) -> bool:
    """Any vector-like or matrix type."""
    return generic_kind(t) is not None


def is_struct(t: Any) -> bool:
    """``@struct`` types."""
    return hasattr(t, "vars") and hasattr(t, "native_name") and hasattr(t, "ctype")


def scalar_of(t: Any) -> Any:
    """The scalar type of a composite, or ``t`` itself."""
    if is_composite(t):
        return t._wp_scalar_type_
    return t


def length_of(t: Any) -> int:
    """Number of components of a vector-like type."""
    return int(t._length_)


def shape_of(t: Any) -> tuple[int, ...]:
    """``(n,)`` for vectors, ``(rows, cols)`` for matrices."""
    return tuple(t._shape_)


def type_str(t: Any) -> str:
    """A short readable name for a type (used in messages and IR dumps)."""
    if t is None:
        return "None"
    if t is AnyT:
        return "Any"
    if isinstance(t, (ArrayT, TupleT)):
        return str(t)
    if is_struct(t):
        return str(getattr(t, "key", t))
    if isinstance(t, type):
        return t.__name__
    return repr(t)


def normalize_annotation(t: Any) -> Any:
    """Turn an annotation into a compiler type (``float`` -> ``float32``, array annotations -> :class:`ArrayT`)."""
    if t in (builtins.int, builtins.float, builtins.bool):
        return scalars.scalar_from_python(t)
    if is_array_annotation(t):
        return ArrayT(normalize_annotation(t.dtype), int(t.ndim), bool(getattr(t, "_indexed_", False)))
    if typing.get_origin(t) is tuple:  # tuple[int, wp.vec3] / tuple[float, ...]
        args = typing.get_args(t)
        if len(args) == 2 and args[1] is Ellipsis:
            return TupleVarT(normalize_annotation(args[0]))
        return TupleT(tuple(normalize_annotation(a) for a in args))
    return t


def is_array_annotation(t: Any) -> bool:
    """True for ``wp.array(dtype=..., ndim=...)`` objects (annotations or real arrays): the array protocol."""
    return getattr(type(t), "_treadle_array_", False) is True


def types_match(expected: Any, actual: Any) -> bool:
    """True if a value of type ``actual`` may be passed where ``expected`` is declared (``Any`` matches all)."""
    if expected is AnyT:
        return True
    cat = scalar_category(expected)
    if cat is not None:
        return category_matches(cat, actual)
    if is_function_annotation(expected):
        return isinstance(actual, StaticArgT)
    if isinstance(expected, GenericComposite):
        return expected.matches(actual)
    if isinstance(expected, ArrayT) and isinstance(actual, ArrayT):
        return (expected.ndim == actual.ndim and expected.indexed == actual.indexed
                and types_match(expected.dtype, actual.dtype))
    if isinstance(expected, TupleVarT):
        return isinstance(actual, TupleT) and all(types_match(expected.elem, a) for a in actual.types)
    if isinstance(expected, TupleT) and isinstance(actual, TupleT):
        return (len(expected.types) == len(actual.types)
                and all(types_match(e, a) for e, a in zip(expected.types, actual.types)))
    return bool(expected == actual)


def contains_any(t: Any) -> bool:
    """True if the type is generic (``Any`` somewhere inside)."""
    if t is AnyT or isinstance(t, GenericComposite) or is_function_annotation(t) or scalar_category(t) is not None:
        return True
    if isinstance(t, ArrayT):
        return contains_any(t.dtype)
    if isinstance(t, TupleVarT):
        return True
    if isinstance(t, TupleT):
        return any(contains_any(x) for x in t.types)
    return False


def type_size(t: Any) -> int:
    """Size in bytes of a kernel value type (scalars, composites, structs)."""
    import ctypes

    if scalars.is_scalar_type(t):
        return ctypes.sizeof(t._type_)
    if is_composite(t):
        return ctypes.sizeof(t)
    if is_struct(t):
        return ctypes.sizeof(t.ctype)
    raise TypeError(f"{type_str(t)} has no fixed size")
