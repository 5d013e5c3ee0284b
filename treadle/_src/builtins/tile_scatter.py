"""``tile_scatter_add`` and ``tile_scatter_masked``: each thread adds (writes) one value into an element of a tile.

The tile is a variable updated in place (``inout``). The element's indices come first, one per tile dimension, then
the value and ``has_value``; the number of indices therefore depends on the tile, so the parameters after ``i`` are
declared generically and the rule sorts them out. On the CPU a block is one logical thread, so a call touches at
most one element (``treadle/native/tile_scatter.h``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import is_int, type_str
from .registry import NOT_CONST, Param, need
from .tile_common import Pad, TileSig, need_tile, padded, tile_builtin

#: Positional slots after ``a`` (indices, then value and has_value, then atomic), and the keyword-only ones.
_SLOTS = ("i", "j", "k", "l", "m", "n", "o")
_KEYWORDS = ("value", "has_value", "atomic")


def _scatter_rule(name: str, with_atomic: bool) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        a = need_tile(types[0], "a")
        nd = len(a.shape)
        given = [1 + s for s in range(len(_SLOTS)) if types[1 + s] is not None]
        need(given == list(range(1, 1 + len(given))), f"{name}() takes its indices and value positionally, in order")
        kw = {k: 1 + len(_SLOTS) + n for n, k in enumerate(_KEYWORDS) if types[1 + len(_SLOTS) + n] is not None
              or consts[1 + len(_SLOTS) + n] is not None}
        need(with_atomic or "atomic" not in kw, f"{name}() got an unexpected keyword argument 'atomic'")
        seq = given + [kw[k] for k in _KEYWORDS if k in kw]
        most = nd + (3 if with_atomic else 2)
        need(nd + 2 <= len(seq) <= most and len(given) >= nd,
             f"{name}() on a {nd}-d tile takes {nd} index(es), then value and has_value"
             f"{' (and atomic)' if with_atomic else ''}; got {len(seq)} argument(s) after the tile")
        idx, value, has_value = seq[:nd], seq[nd], seq[nd + 1]
        for p in idx:
            need(is_int(types[p]), f"{name}() indices must be integers, got {type_str(types[p])}")
        literal = isinstance(consts[value], (int, float)) and scalars.is_scalar_type(a.dtype)  # converted as C++ does
        need(types[value] == a.dtype or literal, f"{name}() 'value' type must match the tile's dtype {type_str(a.dtype)}, got "
             f"{type_str(types[value])}")
        need(types[has_value] == scalars.bool, f"{name}() 'has_value' must be a bool, got {type_str(types[has_value])}")
        template: tuple[Any, ...] = padded(a.shape)
        if with_atomic:
            atomic = consts[seq[nd + 2]] if len(seq) > nd + 2 else True
            need(isinstance(atomic, bool) and atomic is not NOT_CONST,
                 f"{name}() 'atomic' must be a compile-time constant (True or False), not a runtime variable")
            template = (*template, atomic)
        pads = tuple(Pad(0) for _ in range(4 - nd))
        # operands: the tile, the indices padded to four, value, has_value (a constant atomic passes no operand)
        return TileSig(a, template=template, order=(0, *pads, *idx, value, has_value))

    return rule


def _params(with_atomic: bool) -> tuple[Param, ...]:
    kws = _KEYWORDS if with_atomic else _KEYWORDS[:2]
    return (Param("a", inout=True), *(Param(s, None) for s in _SLOTS), *(Param(k, None) for k in kws),
            *(() if with_atomic else (Param("atomic", None),)))


tile_builtin("tile_scatter_add", rule=_scatter_rule("tile_scatter_add", True), params=_params(True),
             signature="tile_scatter_add(a: tile, i: int, [j: int, k: int, l: int,] value: Any, has_value: bool, "
                       "atomic: bool = True) -> None",
             doc="Add ``value`` into element ``(i, j, ...)`` of the tile variable ``a`` (one index per dimension) when "
                 "``has_value`` is true. Each thread of the block adds its own value (on the CPU a block is one "
                 "thread: one addition). ``atomic`` (a compile-time bool) only matters where threads collide. "
                 "Gradients: the value receives the element's adjoint.")
tile_builtin("tile_scatter_masked", rule=_scatter_rule("tile_scatter_masked", False), params=_params(False),
             signature="tile_scatter_masked(a: tile, i: int, [j: int, k: int, l: int,] value: Any, has_value: bool) "
                       "-> None",
             doc="Write ``value`` to element ``(i, j, ...)`` of the tile variable ``a`` when ``has_value`` is true "
                 "(each element written by at most one thread per call). Gradients: the value receives the element's "
                 "adjoint, the overwritten element none.")
