"""Tile computation: ``tile_map``, ``tile_axpy``, ``tile_diag_add``, reductions, scans and ``tile_sort``.

The arithmetic operators on tiles (``a + b``, ``2.0 * t``, ``-t``) are the operator builtins, whose rules accept
tiles (``tile_common.elementwise_rule``). Native code: ``treadle/native/tile_ops.h``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import TileT, is_int, type_str
from .registry import Param, need
from .tile_common import (
    TileCallee,
    TileSig,
    is_float_tile,
    make_tile,
    need_tile,
    no_struct_tiles,
    scalar_dtype,
    tile_builtin,
)

_EXTRA = ("b", "c", "d", "e", "f", "g", "h")


def _map_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    fn = consts[0]
    need(isinstance(fn, TileCallee), "tile_map() takes a builtin or a @wp.func as its first argument")
    a = need_tile(types[1], "a")
    for name, t in zip(_EXTRA, types[2:]):
        if isinstance(t, TileT):
            need(t.shape == a.shape, f"tile_map() operand '{name}' has shape {t.shape}, 'a' has {a.shape}")
    ret = fn.ret
    need(ret is not None and not isinstance(ret, TileT), "the mapped function must return a value per element")
    return make_tile(ret, a.shape, "register")


tile_builtin("tile_map", rule=_map_rule,
             params=(Param("op", static=True), Param("a"), *(Param(n, None) for n in _EXTRA)),
             signature="tile_map(op: Callable, a: tile, b: Any = None, ..., h: Any = None) -> tile",
             doc="A tile of ``op`` applied element by element: ``op(a[k])``, ``op(a[k], b[k])``, ... (up to 8 "
                 "operands) where ``op`` is a builtin or a @wp.func; the operands after ``a`` are tiles of ``a``'s "
                 "shape or values used for every element. Differentiable when ``op`` is.")


def _axpy_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    alpha, src, dest = types[0], need_tile(types[1], "src"), need_tile(types[2], "dest")
    need(src == dest, f"tile_axpy() needs tiles of one type, got {type_str(src)} and {type_str(dest)}")
    need(alpha == scalar_dtype(src.dtype), f"alpha must be {type_str(scalar_dtype(src.dtype))}, got {type_str(alpha)}")
    return dest


tile_builtin("tile_axpy", rule=_axpy_rule, params=(Param("alpha"), Param("src"), Param("dest", inout=True)),
             signature="tile_axpy(alpha: Scalar, src: tile, dest: tile) -> None",
             doc="``dest += alpha * src`` in place (``dest`` is a tile variable).")


def _diag_add_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a, d = need_tile(types[0], "a"), need_tile(types[1], "d")
    need(len(a.shape) == 2 and a.shape[0] == a.shape[1], f"tile_diag_add() takes a square tile, got {a.shape}")
    need(d.shape == (a.shape[0],) and d.dtype == a.dtype,
         f"the diagonal must be a ({a.shape[0]},) tile of {type_str(a.dtype)}, got {type_str(d)}")
    return a.with_(storage="register")


tile_builtin("tile_diag_add", rule=_diag_add_rule, params=(Param("a"), Param("d")),
             signature="tile_diag_add(a: tile, d: tile) -> tile",
             doc="A copy of the square tile ``a`` with the 1-d tile ``d`` added to its diagonal.")


# -- reductions ----------------------------------------------------------------------------------------------------
def _sum_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = need_tile(types[0], "a")
    axis = consts[1]
    if axis is None:
        return make_tile(a.dtype, (1,))
    nd = len(a.shape)
    need(isinstance(axis, int) and -nd <= axis < nd, f"axis {axis!r} is out of range for a {nd}-d tile")
    ax = axis % nd
    outer = 1
    for e in a.shape[:ax]:
        outer *= e
    inner = 1
    for e in a.shape[ax + 1:]:
        inner *= e
    shape = tuple(e for d, e in enumerate(a.shape) if d != ax) or (1,)
    ret = make_tile(a.dtype, shape)
    return TileSig(ret, template=(outer, a.shape[ax], inner, a.dtype, *a.rows_cols, *ret.rows_cols),
                   cpp="tile_sum_axis")


tile_builtin("tile_sum", rule=_sum_rule, params=(Param("a"), Param("axis", None, static=True)),
             signature="tile_sum(a: tile, axis: int = None) -> tile",
             doc="The sum of all elements as a ``(1,)`` tile, or the sums along ``axis`` (that dimension removed).")


def _scalar_reduce(name: str, index: bool) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        a = need_tile(types[0], "a")
        no_struct_tiles(a, name)
        need(scalars.is_scalar_type(a.dtype), f"{name}() takes a tile of scalars, got {type_str(a.dtype)}")
        return make_tile(scalars.int32 if index else a.dtype, (1,))

    return rule


for _name, _index, _doc in (
        ("tile_min", False, "The smallest element as a ``(1,)`` tile (NaN elements are skipped, as C ``fmin`` does)."),
        ("tile_max", False, "The largest element as a ``(1,)`` tile (NaN elements are skipped, as C ``fmax`` does)."),
        ("tile_argmin", True, "The flat index of the (first) smallest element as a ``(1,)`` int32 tile."),
        ("tile_argmax", True, "The flat index of the (first) largest element as a ``(1,)`` int32 tile.")):
    tile_builtin(_name, rule=_scalar_reduce(_name, _index), params=(Param("a"),), differentiable=not _index,
                 zero_derivative=_index, signature=f"{_name}(a: tile) -> tile", doc=_doc)


def _reduce_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    fn = consts[0]
    need(isinstance(fn, TileCallee), "tile_reduce() takes a builtin or a @wp.func as its first argument")
    a = need_tile(types[1], "a")
    need(fn.ret == a.dtype, f"the function must return the tile element type {type_str(a.dtype)}, got "
         f"{type_str(fn.ret)}")
    axis = consts[2]
    if axis is None:
        return make_tile(a.dtype, (1,))
    outer, ext, inner, shape = _axis_split(a, axis)
    ret = make_tile(a.dtype, shape)
    return TileSig(ret, template=(outer, ext, inner, *ret.rows_cols), cpp="tile_reduce_axis")


def _axis_split(a: TileT, axis: Any) -> tuple[int, int, int, tuple[int, ...]]:
    """A tile seen as (outer, extent, inner) around ``axis``, and the shape without that axis."""
    nd = len(a.shape)
    need(isinstance(axis, int) and not isinstance(axis, bool) and -nd <= axis < nd,
         f"axis {axis!r} is out of range for a {nd}-d tile")
    ax = axis % nd
    outer = 1
    for e in a.shape[:ax]:
        outer *= e
    inner = 1
    for e in a.shape[ax + 1:]:
        inner *= e
    return outer, a.shape[ax], inner, tuple(e for d, e in enumerate(a.shape) if d != ax) or (1,)


tile_builtin("tile_reduce", rule=_reduce_rule, differentiable=False,
             params=(Param("op", static=True, fn_args=2), Param("a"), Param("axis", None, static=True)),
             signature="tile_reduce(op: Callable, a: tile, axis: int = None) -> tile",
             doc="The elements of ``a`` folded with the binary ``op`` (a builtin or @wp.func), as a ``(1,)`` tile, or "
                 "along ``axis`` (that dimension removed). Not differentiable: use tile_sum, tile_min or tile_max for "
                 "gradients.")


def _dot_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a, b = need_tile(types[0], "a"), need_tile(types[1], "b")
    need(a.shape == b.shape and a.dtype == b.dtype, f"tile_dot() needs tiles of one shape and type, got "
         f"{type_str(a)} and {type_str(b)}")
    return make_tile(scalar_dtype(a.dtype), (1,))


tile_builtin("tile_dot", rule=_dot_rule, params=(Param("a"), Param("b")),
             signature="tile_dot(a: tile, b: tile) -> tile",
             doc="The sum of the element products of two tiles of one shape, as a ``(1,)`` tile (vector elements "
                 "contract with ``dot``, matrix elements with ``ddot``).")


# -- scans and sort ------------------------------------------------------------------------------------------------
def _scan_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = need_tile(types[0], "a")
    need(scalars.is_scalar_type(a.dtype), f"scans take tiles of scalars, got {type_str(a.dtype)}")
    return a.with_(storage="register")


for _name, _diff, _doc in (
        ("tile_scan_inclusive", True, "Inclusive prefix sums over the row-major element order (same shape)."),
        ("tile_scan_exclusive", True, "Exclusive prefix sums over the row-major element order (same shape)."),
        ("tile_scan_max_inclusive", False, "Running maximum over the row-major element order (same shape)."),
        ("tile_scan_min_inclusive", False, "Running minimum over the row-major element order (same shape).")):
    tile_builtin(_name, rule=_scan_rule, params=(Param("a"),), differentiable=_diff,
                 signature=f"{_name}(a: tile) -> tile", doc=_doc)


def _sort_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    k, v = need_tile(types[0], "keys"), need_tile(types[1], "values")
    need(k.shape == v.shape, f"tile_sort() keys {k.shape} and values {v.shape} differ in shape")
    need(scalars.is_scalar_type(k.dtype), f"keys must be scalars, got {type_str(k.dtype)}")
    return TileSig(None, cpp="tile_sort")


tile_builtin("tile_sort", rule=_sort_rule, params=(Param("keys", inout=True), Param("values", inout=True)),
             differentiable=False, signature="tile_sort(keys: tile, values: tile) -> None",
             doc="Sort ``keys`` ascending in place, permuting ``values`` with them (both tile variables). Not stable.")

_ = (is_int, is_float_tile)
