"""Tile stacks: ``wp.tile_stack(capacity=..., dtype=...)`` and ``tile_stack_push/pop/count/clear``.

A stack is a place (:class:`~treadle._src.types.typesys.TileStackT`): the builtins that change it take the stack
variable by reference (``ref_args``), and ``@func`` parameters of stack type are references (``emit_cpp``), so a
helper function pushes onto its caller's stack. On the CPU a block is one logical thread, so each push offers one
value and each pop hands out one (``treadle/native/tile_stack.h``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import TileStackT, TupleT, make_tile_stack_type, tile_stack, type_str
from .registry import REGISTRY, Interp, NoMatch, Param, builtin, need
from .tile_common import GROUP, TileSig, dtype_arg, tile_builtin


def _stack_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    capacity, dtype = consts
    need(isinstance(capacity, int) and not isinstance(capacity, bool),
         f"tile_stack() capacity must be a compile-time int, got {capacity!r}")
    try:
        t = make_tile_stack_type(capacity, dtype_arg(dtype))
    except (TypeError, ValueError) as e:
        raise NoMatch(str(e)) from None
    return TileSig(t, template=(t.dtype, t.capacity), cpp="tile_stack_init")


tile_builtin("tile_stack", rule=_stack_rule, differentiable=False,
             params=(Param("capacity", static=True), Param("dtype", static=True)),
             signature="tile_stack(capacity: int, dtype: type) -> tile_stack",
             doc="An empty stack of up to ``capacity`` values of ``dtype`` shared by the block (``capacity`` is a "
                 "positive compile-time int). In Python scope, the same call is the annotation of a ``@wp.func`` "
                 "parameter that receives a stack (by reference).")
tile_stack._treadle_builtin_ = REGISTRY.builtins["tile_stack"]  # kernels call the builtin through the annotation


def _need_stack(t: Any, name: str) -> TileStackT:
    if not isinstance(t, TileStackT):
        raise NoMatch(f"{name}() takes a tile_stack, got {type_str(t)}")
    return t


def _push_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) == 3, f"tile_stack_push() takes (s, value, has_value), got {len(types)} argument(s)")
    s = _need_stack(types[0], "tile_stack_push")
    need(types[1] == s.dtype, f"tile_stack_push() value type {type_str(types[1])} does not match the stack's dtype "
         f"{type_str(s.dtype)}")
    need(types[2] == scalars.bool, f"tile_stack_push() has_value must be a bool, got {type_str(types[2])}")
    return scalars.int32


def _pop_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) == 1, f"tile_stack_pop() takes one tile_stack, got {len(types)} argument(s)")
    return TupleT((_need_stack(types[0], "tile_stack_pop").dtype, scalars.int32))


def _one_stack(name: str, ret: Any) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        need(len(types) == 1, f"{name}() takes one tile_stack, got {len(types)} argument(s)")
        _need_stack(types[0], name)
        return ret

    return rule


# replayed in backward passes: a stack is the block's own state, rebuilt by the replay like any local variable
_COMMON: dict[str, Any] = dict(group=GROUP, differentiable=False, kernel_only=True, side_effects=True, replay=True,
                               interpret=Interp.NONE)  # like every tile builtin: compiled kernels only
builtin("tile_stack_push", rule=_push_rule, ref_args=(0,), **_COMMON,
        signature="tile_stack_push(s: tile_stack, value: Any, has_value: bool) -> int",
        doc="Push ``value`` onto the stack when ``has_value`` is true; returns the slot written (``0`` to "
            "``capacity - 1``), or -1 when nothing was pushed (``has_value`` false, or the stack full: the value is "
            "dropped).")
builtin("tile_stack_pop", rule=_pop_rule, ref_args=(0,), **_COMMON,
        signature="tile_stack_pop(s: tile_stack) -> tuple[Any, int]",
        doc="Pop the most recently pushed value: ``(value, slot)`` with the slot it occupied, or ``(0, -1)`` (a "
            "zero of the dtype) when the stack is empty.")
builtin("tile_stack_clear", rule=_one_stack("tile_stack_clear", None), ref_args=(0,), **_COMMON,
        signature="tile_stack_clear(s: tile_stack) -> None", doc="Empty the stack.")
builtin("tile_stack_count", rule=_one_stack("tile_stack_count", scalars.int32), group=GROUP, differentiable=False,
        kernel_only=True, interpret=Interp.NONE, signature="tile_stack_count(s: tile_stack) -> int",
        doc="The number of values on the stack.")
