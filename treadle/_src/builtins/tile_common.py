"""What the tile builtin groups share: the declaration helper, the signature a tile type rule returns, checks.

Tile builtins are lowered with :attr:`Lowering.TILE` (``compiler/lower_tile.py``): the call's arguments are bound to
the declaration's :class:`Param` list, compile-time parameters (shapes, dtypes, storage, axes, functions) reach the
type rule in ``consts`` and the runtime ones become the operands. A rule returns the result type, or a
:class:`TileSig` when it also picks C++ template arguments, another C++ function, or an operand order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import (
    TILE_STORAGES,
    TileT,
    TupleT,
    is_composite,
    is_float,
    is_int,
    is_struct,
    normalize_annotation,
    type_str,
)
from .registry import Builtin, Interp, Lowering, NoMatch, Param, builtin, need

GROUP = "Tile Primitives"

#: The most elements one tile may hold: the native value lives on the block's stack (and, on CUDA, in one thread's
#: local memory), so a tile stays well below the 8 MiB default stack of the thread pool's workers.
MAX_TILE_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class Pad:
    """A constant operand a rule inserts into the operand list (``TileSig.order``), e.g. a missing index 0."""

    value: Any
    type: Any = scalars.int64


@dataclasses.dataclass(frozen=True)
class TileSig:
    """What a tile type rule decides beyond the result type.

    Attributes:
        ret: the result type (``None``: no value).
        template: C++ template arguments (ints and types), in front of those the C++ compiler deduces.
        cpp: the C++ function when it is not the builtin's own (one builtin, several native forms).
        order: the operands passed, as positions in the bound operand list or :class:`Pad` constants
            (``None``: all of them, in order).
    """

    ret: Any
    template: tuple[Any, ...] = ()
    cpp: str | None = None
    order: tuple[Any, ...] | None = None


@dataclasses.dataclass(frozen=True)
class TileCallee:
    """A function passed to a tile builtin (``tile_map``, ``tile_reduce``), resolved for the element types.

    Attributes:
        obj: the builtin or ``@func`` the user passed.
        ret: its result type for the element types.
        fwd: the C++ callable computing one element.
        adj: the C++ callable of its adjoint (``None``: no derivative; the reverse sweep adds nothing).
        differentiable: whether gradients flow through it.
        replay: the C++ callable backward passes use for the forward value (a @func's side-effect-free variant).
        args: the element types it is called with.
    """

    obj: Any
    ret: Any
    fwd: str
    adj: str | None
    differentiable: bool
    replay: str = ""
    args: tuple[Any, ...] = ()


def tile_builtin(name: str, *, rule: Callable[[Sequence[Any], Sequence[Any]], Any], doc: str, signature: str,
                 params: tuple[Param, ...], cpp: str | None = None, differentiable: bool = True,
                 side_effects: bool = False, replay: bool = True, grad_sink: bool = False,
                 zero_derivative: bool = False) -> Builtin:
    """Declare a tile builtin (kernel-only, lowered with :attr:`Lowering.TILE`, no interpreter form)."""
    return builtin(name, group=GROUP, rule=rule, doc=doc, signature=signature, cpp=cpp, differentiable=differentiable,
                   kernel_only=True, lowering=Lowering.TILE, interpret=Interp.NONE, params=params,
                   side_effects=side_effects, replay=replay, grad_sink=grad_sink, zero_derivative=zero_derivative)


def no_struct_tiles(t: Any, name: str) -> None:
    """Refuse tiles of ``@wp.struct`` elements where ``name`` has no meaning for them (no ordering, no arithmetic)."""
    dtype = t.dtype if isinstance(t, TileT) else t
    need(not is_struct(dtype), f"{name}() does not support tiles of a Warp struct (@wp.struct) type, got "
         f"{type_str(dtype)}: apply it to a field (load the field as a tile of its own)")


def need_tile(t: Any, what: str) -> TileT:
    """Require a tile type for argument ``what``."""
    if not isinstance(t, TileT):
        raise NoMatch(f"'{what}' must be a tile, got {type_str(t) if t is not None else 'a compile-time value'}")
    return t


def shape_arg(value: Any, what: str = "shape") -> tuple[int, ...]:
    """A compile-time tile shape: an int or a tuple of 1-4 positive ints."""
    dims = (value,) if isinstance(value, int) and not isinstance(value, bool) else value
    ok = isinstance(dims, tuple) and 1 <= len(dims) <= 4 and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)
    need(ok, f"'{what}' must be a compile-time int or tuple of 1 to 4 positive ints, got {value!r}")
    return tuple(int(d) for d in dims)


def storage_arg(value: Any) -> str:
    """The storage kind ``"register"`` or ``"shared"``."""
    need(value in TILE_STORAGES, f"storage must be 'register' or 'shared', got {value!r}")
    return str(value)


def dtype_arg(value: Any, default: Any = scalars.float32) -> Any:
    """A compile-time element type (``None``: ``default``)."""
    if value is None:
        return default
    t = normalize_annotation(value)
    need(scalars.is_scalar_type(t) or is_composite(t) or is_struct(t),
         f"dtype must be a scalar, vector, matrix or struct type, got {value!r}")
    return t


def make_tile(dtype: Any, shape: tuple[int, ...], storage: str = "register") -> TileT:
    """The tile type, refusing tiles too large to hold as one value."""
    t = TileT(dtype, tuple(shape), storage)
    nbytes = t.size * _elem_bytes(dtype)
    need(nbytes <= MAX_TILE_BYTES, f"a tile of shape {shape} and dtype {type_str(dtype)} needs {nbytes} bytes, more "
         f"than the {MAX_TILE_BYTES} bytes a tile may hold")
    return t


def _elem_bytes(t: Any) -> int:
    import ctypes

    if scalars.is_scalar_type(t):
        return ctypes.sizeof(t._type_)
    if is_struct(t):
        return ctypes.sizeof(t.ctype)
    return ctypes.sizeof(t) if isinstance(t, type) else 8


def padded(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Extents padded on the left with 1 to four dimensions (the native functions' D0..D3)."""
    s = (1,) * (4 - len(shape)) + tuple(shape)
    return s[0], s[1], s[2], s[3]


def index_count(t: Any) -> int:
    """Number of integer operands a bound index parameter holds (an int or a tuple of ints)."""
    if isinstance(t, TupleT):
        for x in t.types:
            need(is_int(x), f"indices must be integers, got {type_str(x)}")
        return len(t.types)
    need(is_int(t), f"an index must be an integer, got {type_str(t)}")
    return 1


def scalar_dtype(t: Any) -> Any:
    """The scalar type of a tile element type (itself for scalars)."""
    return t._wp_scalar_type_ if is_composite(t) else t


def is_float_tile(t: Any) -> bool:
    """True for tiles of float scalars or float composites."""
    return isinstance(t, TileT) and is_float(scalar_dtype(t.dtype))


def _short(t: Any) -> str:
    """A tile type as ``tile<vec3f, (8,)>`` (other types by name), for operator messages."""
    if isinstance(t, TileT):
        return f"tile<{type_str(t.dtype)}, {t.shape}>"
    return type_str(t)


def elementwise_rule(op: str, types: Sequence[Any], elem_rule: Callable[..., Any] | None = None) -> Any:
    """The result of an arithmetic operator with a tile operand, or ``None`` when no operand is a tile.

    Two tiles of one type combine element by element; a scalar of the element's scalar type on either side applies
    to every element; unary ``-``/``+`` keep the type.
    """
    if not any(isinstance(t, TileT) for t in types):
        return None
    if len(types) == 1:
        need(op in ("neg", "pos"), f"'{op}' does not apply to tiles")
        return types[0]
    a, b = types
    if op in ("mul", "div") and elem_rule is not None:  # element types may differ: the element operation decides
        ta = a if isinstance(a, TileT) else None
        tb = b if isinstance(b, TileT) else None
        if ta is not None and tb is not None:
            need(ta.shape == tb.shape, f"tile shapes differ: {ta.shape} and {tb.shape}")
        shape_of = ta if ta is not None else tb
        assert shape_of is not None
        ea = ta.dtype if ta is not None else a
        eb = tb.dtype if tb is not None else b
        if ta is not None and tb is None or ta is None and tb is not None:
            other = b if ta is not None else a
            need(not isinstance(other, TileT) and (scalars.is_scalar_type(other) or is_composite(other)),
                 f"Cannot {'multiply' if op == 'mul' else 'divide'} {type_str(a)} by {type_str(b)}: at least one "
                 "operand must be a scalar type or a tile")
        try:
            elem = elem_rule([ea, eb], [None, None])
        except NoMatch as e:
            verb = "multiply" if op == "mul" else "divide"
            why = "the element type must be scalar on at least one side" if ta is not None and tb is not None \
                else "at least one operand must be a scalar type (or a tile of scalars)"
            raise NoMatch(f"Cannot {verb} {_short(a)} by {_short(b)}: {why} ({e})") from None
        return shape_of.with_(dtype=elem, storage="register")
    if isinstance(a, TileT) and isinstance(b, TileT):
        need(a.shape == b.shape, f"tile shapes differ: {a.shape} and {b.shape}")
        need(a.dtype == b.dtype, f"tile element types differ: {type_str(a.dtype)} and {type_str(b.dtype)}")
        need(op in ("add", "sub", "mul", "div"), f"'{op}' does not apply to tiles")
        return a
    tile_t, other = (a, b) if isinstance(a, TileT) else (b, a)
    need(scalars.is_scalar_type(other) and other == scalar_dtype(tile_t.dtype),
         f"a tile of {type_str(tile_t.dtype)} can be scaled by {type_str(scalar_dtype(tile_t.dtype))} only, got "
         f"{type_str(other)}")
    return tile_t


def int_tile_rule(types: Sequence[Any]) -> Any:
    """The result of a bitwise operator (``& | ^ << >> ~``) with a tile operand, or ``None`` when none is a tile.

    Both operands are tiles of one integer type and shape, or a tile and a scalar of its element type.
    """
    if not any(isinstance(t, TileT) for t in types):
        return None
    tiles = [t for t in types if isinstance(t, TileT)]
    first = tiles[0]
    need(not is_struct(first.dtype), "bitwise inplace and binary operators do not support tiles of a Warp struct "
         f"(@wp.struct) type, got {type_str(first.dtype)}")
    need(scalars.is_scalar_type(first.dtype) and is_int(first.dtype),
         f"bitwise operators take tiles of integers, got a tile of {type_str(first.dtype)}")
    for t in types:
        if isinstance(t, TileT):
            need(t.shape == first.shape, f"tile shapes differ: {first.shape} and {t.shape}")
            need(t.dtype == first.dtype, f"tile element types differ: {type_str(first.dtype)} and {type_str(t.dtype)}")
        else:
            need(t == first.dtype, f"a tile of {type_str(first.dtype)} combines bitwise with {type_str(first.dtype)} "
                 f"only, got {type_str(t)}")
    return first.with_(storage="register")
