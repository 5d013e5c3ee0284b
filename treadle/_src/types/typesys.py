"""Types as the compiler sees them.

Kernel values have one of these types:

- a scalar class (``float32`` ...), from :mod:`treadle._src.types.scalars`;
- a composite class (vector, matrix, quaternion, transform), from :mod:`treadle._src.types.vector` and friends;
- a ``Struct`` (from ``@struct``);
- :class:`ArrayT` (an array argument or view: dtype and number of dimensions);
- :class:`TupleT` (multiple return values);
- :class:`TileT` (a tile: element type, shape and storage, all compile-time facts);
- :class:`TileStackT` (a block's stack of values: element type and capacity);
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


#: The tile storage kinds: a tile in the block's registers (on the CPU: the block's stack) or in shared memory.
TILE_STORAGES = ("register", "shared")


@dataclasses.dataclass(frozen=True)
class TileT:
    """A tile type: element type, shape (1-4 constant extents) and storage.

    Storage is a fact about where the tile lives, not about its values: two tiles of one element type and shape
    have equal types whatever their storage, so either may be passed where the other is declared.
    """

    dtype: Any
    shape: tuple[int, ...]
    storage: str = dataclasses.field(default="register", compare=False)

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def rows_cols(self) -> tuple[int, int]:
        """The (rows, cols) of the native row-major storage: leading extents folded into the rows."""
        return self.size // self.shape[-1], self.shape[-1]

    def with_(self, dtype: Any = None, shape: tuple[int, ...] | None = None, storage: str | None = None) -> TileT:
        """A tile type with some of the facts replaced."""
        return TileT(self.dtype if dtype is None else dtype, self.shape if shape is None else tuple(shape),
                     self.storage if storage is None else storage)

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"tile(dtype={type_str(self.dtype)}, shape=({dims}{',' if len(self.shape) == 1 else ''}), " \
               f"storage={self.storage})"


def make_tile_type(dtype: Any, shape: Any, storage: str = "register") -> TileT:
    """A :class:`TileT` from user-facing facts; raises ``TypeError``/``ValueError`` on bad ones."""
    dims = (shape,) if isinstance(shape, (builtins.int,)) else tuple(shape)
    if not 1 <= len(dims) <= 4 or not all(isinstance(d, (builtins.int,)) and not isinstance(d, builtins.bool)
                                           and d >= 1 for d in dims):
        raise ValueError(f"a tile shape is 1 to 4 positive integer extents, got {shape!r}")
    if storage not in TILE_STORAGES:
        raise ValueError(f"tile storage must be 'register' or 'shared', got {storage!r}")
    return TileT(normalize_annotation(dtype), tuple(builtins.int(d) for d in dims), storage)


class tile:  # noqa: N801 (the reference API's name)
    """``wp.tile``: a tile annotation (``wp.tile[float, 16, 16]``, ``wp.tile(dtype=float, shape=(16, 16))``).

    Inside kernels, ``wp.tile(x)`` is the builtin that makes a tile from each thread's value; the builtins layer
    registers it as ``_treadle_builtin_``.
    """

    _treadle_builtin_: Any = None

    def __new__(cls, *args: Any, dtype: Any = None, shape: Any = None, storage: str = "register", **kw: Any) -> Any:
        if args or kw or dtype is None or shape is None:
            raise RuntimeError("wp.tile(x) makes a tile inside a kernel only; in Python scope, wp.tile(dtype=..., "
                               "shape=...) (or wp.tile[dtype, M, N]) is a tile annotation")
        return make_tile_type(dtype, shape, storage)

    def __class_getitem__(cls, params: Any) -> TileT:
        if not isinstance(params, tuple) or len(params) < 2:
            raise TypeError("wp.tile[dtype, M, N, ...] needs an element type and the tile's extents")
        dtype, rest = params[0], params[1:]
        shape = rest[0] if len(rest) == 1 and isinstance(rest[0], tuple) else rest
        return make_tile_type(dtype, shape)


@dataclasses.dataclass(frozen=True)
class TileStackT:
    """A block's stack of values (``wp.tile_stack(capacity=8, dtype=int)``): element type and capacity.

    Unlike tiles, a stack is a place, not a value: pushes and pops update it, and a ``@func`` that receives one
    updates the caller's stack.
    """

    dtype: Any
    capacity: int

    def __str__(self) -> str:
        return f"tile_stack(capacity={self.capacity}, dtype={type_str(self.dtype)})"


def make_tile_stack_type(capacity: Any, dtype: Any) -> TileStackT:
    """A :class:`TileStackT` from user-facing facts; raises ``TypeError``/``ValueError`` on bad ones."""
    if dtype is None:
        raise TypeError("tile_stack() missing required keyword argument 'dtype'")
    if isinstance(capacity, builtins.bool) or not isinstance(capacity, builtins.int) or capacity < 1:
        raise ValueError(f"tile_stack() requires capacity to be a positive integer, got {capacity!r}")
    return TileStackT(normalize_annotation(dtype), builtins.int(capacity))


class tile_stack:  # noqa: N801 (the reference API's name)
    """``wp.tile_stack(capacity=..., dtype=...)``: a stack annotation in Python scope (``@wp.func`` parameters).

    Inside kernels the same call makes an empty stack; the builtins layer registers that builtin as
    ``_treadle_builtin_``.
    """

    _treadle_builtin_: Any = None

    def __new__(cls, capacity: Any = None, dtype: Any = None) -> Any:  # type: ignore[misc]
        if capacity is None:
            raise TypeError("tile_stack() missing required keyword argument 'capacity'")
        return make_tile_stack_type(capacity, dtype)


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
    if isinstance(t, (ArrayT, TupleT, TileT, TileStackT)):
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
