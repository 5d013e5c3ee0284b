"""Tile construction and movement: tile/untile, the constant and random tiles, loads and stores, views and layout.

Every builtin here is lowered with :attr:`Lowering.TILE` (see ``tile_common``); the native functions are in
``treadle/native/tile.h`` and ``tile_ops.h``. Shapes, dtypes, storage and axes are compile-time values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import ArrayT, TileT, TupleT, is_composite, is_float, is_int, is_vector, tile, type_str
from .registry import REGISTRY, NoMatch, Param, need
from .tile_common import (
    Pad,
    TileSig,
    dtype_arg,
    index_count,
    make_tile,
    need_tile,
    padded,
    scalar_dtype,
    shape_arg,
    storage_arg,
    tile_builtin,
)

_STORAGE = Param("storage", "register", static=True)


# -- per-thread values <-> tiles -----------------------------------------------------------------------------------
def _tile_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    x, keep = types[0], consts[1]
    need(x is not None and (scalars.is_scalar_type(x) or is_vector(x) or hasattr(x, "_wp_generic_type_str_")),
         f"wp.tile() takes a scalar or vector value, got {type_str(x)}")
    if is_vector(x) and not keep:  # a vector's components down the rows, the (single) thread along the columns
        return TileSig(make_tile(x._wp_scalar_type_, (x._length_, 1)), cpp="tile_vec")
    return TileSig(make_tile(x, (1,)))


tile_builtin("tile", rule=_tile_rule, params=(Param("x"), Param("preserve_type", False, static=True)),
             signature="tile(x: Any, preserve_type: bool = False) -> tile",
             doc="A tile of each thread's value ``x``: shape ``(block_dim,)`` for a scalar, ``(length, block_dim)`` "
                 "for a vector (``(block_dim,)`` of vectors with ``preserve_type=True``). On the CPU a block is one "
                 "thread, so ``block_dim`` is 1.")
tile._treadle_builtin_ = REGISTRY.builtins["tile"]  # kernels call the builtin through the annotation class


def _untile_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = need_tile(types[0], "a")
    if a.shape == (1,):
        return a.dtype
    need(len(a.shape) == 2 and a.shape[1] == 1 and scalars.is_scalar_type(a.dtype),
         f"untile() takes a tile of shape (block_dim,) or (length, block_dim) with block_dim 1, got {a.shape}")
    from ..types.vector import vector

    return TileSig(vector(a.shape[0], a.dtype), template=(a.shape[0],), cpp="untile_vec")


tile_builtin("untile", rule=_untile_rule, params=(Param("a"),), signature="untile(a: tile) -> Any",
             doc="This thread's value of a tile made by ``wp.tile``: the element of a ``(block_dim,)`` tile, the vector "
                 "(column) of a ``(length, block_dim)`` tile.")


# -- constant, sequence and random tiles ---------------------------------------------------------------------------
def _const_tile(value_at: int | None) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        shape = shape_arg(consts[0])
        dtype = dtype_arg(consts[-2])
        t = make_tile(dtype, shape, storage_arg(consts[-1]))
        if value_at is not None:
            v = types[value_at]
            need(v is not None and (scalars.is_scalar_type(v) or v == dtype),
                 f"the fill value must be a scalar or a {type_str(dtype)}, got {type_str(v)}")
        return TileSig(t, template=(dtype, *t.rows_cols))

    return rule


_DTYPE = Param("dtype", scalars.float32, static=True)
for _name, _what in (("tile_zeros", "zeros"), ("tile_ones", "ones"), ("tile_empty", "zeros (Treadle clears new tiles)")):
    tile_builtin(_name, rule=_const_tile(None), params=(Param("shape", static=True), _DTYPE, _STORAGE),
                 cpp="tile_ones" if _name == "tile_ones" else "tile_zeros", differentiable=False,
                 signature=f"{_name}(shape: tuple[int, ...], dtype: type = float, storage: str = 'register') -> tile",
                 doc=f"A tile of the given shape and element type filled with {_what}.")
tile_builtin("tile_full", rule=_const_tile(1), params=(Param("shape", static=True), Param("value"), _DTYPE, _STORAGE),
             signature="tile_full(shape: tuple[int, ...], value: Scalar, dtype: type = float, storage: str = "
                       "'register') -> tile",
             doc="A tile of the given shape with every element ``value`` (converted to ``dtype``).")


def _from_thread_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    shape = shape_arg(consts[0])
    v = types[1]
    need(v is not None and not isinstance(v, (TileT, ArrayT, TupleT)), f"value must be a per-thread value, got "
         f"{type_str(v)}")
    need(types[2] is None or is_int(types[2]), "thread_idx must be an integer")
    t = make_tile(v, shape, storage_arg(consts[3]))
    order = (0, 1) if types[2] is not None else (0, Pad(0, scalars.int32))
    return TileSig(t, template=(v, *t.rows_cols), order=order)


tile_builtin("tile_from_thread", rule=_from_thread_rule,
             params=(Param("shape", static=True), Param("value"), Param("thread_idx", None), _STORAGE),
             signature="tile_from_thread(shape: tuple[int, ...], value: Any, thread_idx: int = 0, storage: str = "
                       "'register') -> tile",
             doc="A tile of the given shape filled with the value of thread ``thread_idx`` of the block (on the CPU a "
                 "block is one thread: its own value).")


def _arange_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    given = [c for c in consts[:3] if c is not None]
    need(all(isinstance(c, (int, float)) for c in given), "tile_arange() takes compile-time numbers")
    start, stop, step = (0, given[0], 1) if len(given) == 1 else (given[0], given[1], given[2] if len(given) > 2 else 1)
    need(step != 0, "tile_arange() step must not be zero")
    n = max(0, math.ceil((stop - start) / step))
    need(n >= 1, f"tile_arange({', '.join(str(g) for g in given)}) has no elements")
    dtype = consts[3]
    if dtype is None:
        dtype = scalars.int32 if all(isinstance(c, int) for c in given) else scalars.float32
    dtype = dtype_arg(dtype)
    t = make_tile(dtype, (n,), storage_arg(consts[4]))
    return TileSig(t, template=(dtype, 1, n), order=(Pad(float(start), scalars.float64), Pad(float(step), scalars.float64)))


tile_builtin("tile_arange", rule=_arange_rule, differentiable=False,
             params=(Param("start", static=True), Param("stop", None, static=True), Param("step", None, static=True),
                     Param("dtype", None, static=True), _STORAGE),
             signature="tile_arange(start, stop=None, step=None, dtype: type = None, storage: str = 'register') -> tile",
             doc="A 1-d tile of evenly spaced values in ``[start, stop)`` (``tile_arange(n)``: ``0`` up to ``n - 1``). The "
                 "arguments are compile-time numbers; integer arguments give an int32 tile unless ``dtype`` says "
                 "otherwise.")


def _rand_rule(is_int_tile: bool) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        shape = shape_arg(consts[0])
        need(types[1] is not None and is_int(types[1]), f"rng must be an integer state, got {type_str(types[1])}")
        lo, hi = consts[2], consts[3]
        need((lo is None) == (hi is None), "give both min and max, or neither")
        dtype = scalars.int32 if is_int_tile else scalars.float32
        t = make_tile(dtype, shape, storage_arg(consts[4]))
        if is_int_tile:
            bounded = lo is not None
            order: tuple[Any, ...] = (0, Pad(int(lo or 0), scalars.int32), Pad(int(hi or 0), scalars.int32),
                                      Pad(bounded, scalars.bool))
        else:
            order = (0, Pad(float(0.0 if lo is None else lo), scalars.float32),
                     Pad(float(1.0 if hi is None else hi), scalars.float32))
        return TileSig(t, template=(dtype, *t.rows_cols), order=order)

    return rule


for _name, _int in (("tile_randf", False), ("tile_randi", True)):
    tile_builtin(_name, rule=_rand_rule(_int), differentiable=False,
                 params=(Param("shape", static=True), Param("rng"), Param("min", None, static=True),
                         Param("max", None, static=True), _STORAGE),
                 signature=f"{_name}(shape: tuple[int, ...], rng: uint32, min=None, max=None, storage: str = "
                           "'register') -> tile",
                 doc=f"A tile of random {'int32' if _int else 'float32'} values drawn from the state ``rng`` (element "
                     f"``k`` from ``rand_init(rng, k)``), in ``[min, max)`` when given. ``rng`` is left unchanged.")


# -- arrays <-> tiles ----------------------------------------------------------------------------------------------
def _array_of(t: Any) -> ArrayT:
    need(isinstance(t, ArrayT) and not t.indexed, f"'a' must be an array, got {type_str(t)}")
    return t  # type: ignore[no-any-return]


def _offsets(types: Sequence[Any], at: int, ndim: int) -> None:
    if types[at] is not None:
        n = index_count(types[at])
        need(n == ndim, f"offset has {n} entries, the array has {ndim} dimension(s)")


def _load_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = _array_of(types[0])
    shape = shape_arg(consts[1])
    need(len(shape) == a.ndim, f"a {len(shape)}-d tile shape {shape} for a {a.ndim}-d array: give one extent per "
         "array dimension (index the array first, e.g. a[i], to load from a sub-array)")
    _offsets(types, 2, a.ndim)
    t = make_tile(a.dtype, shape, storage_arg(consts[3]))
    return TileSig(t, template=(a.dtype, a.ndim, *padded(shape)))


tile_builtin("tile_load", rule=_load_rule,
             params=(Param("a"), Param("shape", static=True), Param("offset", None), _STORAGE,
                     Param("bounds_check", True, static=True), Param("aligned", False, static=True)),
             signature="tile_load(a: array, shape: tuple[int, ...], offset: tuple[int, ...] = None, storage: str = "
                       "'register', bounds_check: bool = True, aligned: bool = False) -> tile",
             doc="Load the window of ``a`` of the given shape starting at element ``offset``; elements outside the "
                 "array read as zero.")


def _store_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = _array_of(types[0])
    t = need_tile(types[1], "t")
    need(len(t.shape) == a.ndim, f"a {len(t.shape)}-d tile stored into a {a.ndim}-d array")
    need(t.dtype == a.dtype, f"a tile of {type_str(t.dtype)} stored into an array of {type_str(a.dtype)}")
    _offsets(types, 2, a.ndim)
    return TileSig(None, template=(a.dtype, a.ndim, *padded(t.shape)))


tile_builtin("tile_store", rule=_store_rule, side_effects=True, replay=False, grad_sink=True,
             params=(Param("a"), Param("t"), Param("offset", None), Param("bounds_check", True, static=True),
                     Param("aligned", False, static=True)),
             signature="tile_store(a: array, t: tile, offset: tuple[int, ...] = None, bounds_check: bool = True, "
                       "aligned: bool = False) -> None",
             doc="Store a tile into ``a`` starting at element ``offset``; elements outside the array are skipped.")


def _atomic_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = _array_of(types[0])
    t = need_tile(types[1], "t")
    need(len(t.shape) == a.ndim, f"a {len(t.shape)}-d tile added into a {a.ndim}-d array")
    need(t.dtype == a.dtype, f"a tile of {type_str(t.dtype)} added into an array of {type_str(a.dtype)}")
    _offsets(types, 2, a.ndim)
    return TileSig(t.with_(storage="register"), template=(a.dtype, a.ndim, *padded(t.shape)))


tile_builtin("tile_atomic_add", rule=_atomic_rule, side_effects=True, replay=False, grad_sink=True,
             params=(Param("a"), Param("t"), Param("offset", None), Param("bounds_check", True, static=True)),
             signature="tile_atomic_add(a: array, t: tile, offset: tuple[int, ...] = None, bounds_check: bool = True) "
                       "-> tile",
             doc="Add a tile into ``a`` element by element (atomically) at element ``offset``; returns the values it "
                 "replaced (zero outside the array, where nothing is added).")


def _indexed_rule(kind: str) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        a = _array_of(types[0])
        idx = need_tile(types[1], "indices")
        need(len(idx.shape) == 1 and is_int(idx.dtype) and idx.dtype == scalars.int32,
             f"indices must be a 1-d tile of int32, got {type_str(idx)}")
        if kind == "load":
            shape = shape_arg(consts[2])
            t = make_tile(a.dtype, shape, storage_arg(consts[5]))
            off_at, axis = 3, consts[4]
        else:
            t = need_tile(types[2], "t")
            need(t.dtype == a.dtype, f"a tile of {type_str(t.dtype)} for an array of {type_str(a.dtype)}")
            shape, off_at, axis = t.shape, 3, consts[4]
        need(len(shape) == a.ndim, f"a {len(shape)}-d tile for a {a.ndim}-d array")
        need(isinstance(axis, int) and 0 <= axis < a.ndim, f"axis {axis!r} is out of range for a {a.ndim}-d array")
        need(idx.shape[0] == shape[axis], f"the {idx.shape[0]} indices must match the tile's extent {shape[axis]} "
             f"along axis {axis}")
        n = 0
        if types[off_at] is not None:
            n = index_count(types[off_at])
            need(n == a.ndim, f"offset has {n} entries, the array has {a.ndim} dimension(s)")
        lead = 2 if kind == "load" else 3
        pads = tuple(Pad(0) for _ in range(4 - n))
        template = (a.dtype, a.ndim, axis + 4 - a.ndim, *padded(shape), idx.shape[0])
        ret = None if kind == "store" else (t if kind == "load" else t.with_(storage="register"))
        # offsets in the array's dimension order, then zeros (detail::window pads them itself)
        return TileSig(ret, template=template, order=(*range(lead), *range(lead, lead + n), *pads))

    return rule


tile_builtin("tile_load_indexed", rule=_indexed_rule("load"),
             params=(Param("a"), Param("indices"), Param("shape", static=True), Param("offset", None),
                     Param("axis", 0, static=True), _STORAGE),
             signature="tile_load_indexed(a: array, indices: tile, shape: tuple[int, ...], offset: tuple[int, ...] = "
                       "None, axis: int = 0, storage: str = 'register') -> tile",
             doc="Load a tile gathering along ``axis`` through the 1-d int32 tile ``indices``: element ``c`` reads "
                 "``a`` at ``offset[axis] + indices[c[axis]]`` along ``axis`` and ``offset[d] + c[d]`` elsewhere; "
                 "positions outside the array read zero.")
tile_builtin("tile_store_indexed", rule=_indexed_rule("store"), side_effects=True, replay=False, grad_sink=True,
             params=(Param("a"), Param("indices"), Param("t"), Param("offset", None), Param("axis", 0, static=True)),
             signature="tile_store_indexed(a: array, indices: tile, t: tile, offset: tuple[int, ...] = None, axis: int "
                       "= 0) -> None",
             doc="Store a tile scattering along ``axis`` through the 1-d int32 tile ``indices`` (the positions of "
                 "tile_load_indexed); positions outside the array are skipped.")
tile_builtin("tile_atomic_add_indexed", rule=_indexed_rule("atomic"), side_effects=True, replay=False, grad_sink=True,
             params=(Param("a"), Param("indices"), Param("t"), Param("offset", None), Param("axis", 0, static=True)),
             signature="tile_atomic_add_indexed(a: array, indices: tile, t: tile, offset: tuple[int, ...] = None, "
                       "axis: int = 0) -> tile",
             doc="Atomically add a tile into ``a`` at the positions of tile_store_indexed; returns the values replaced "
                 "(zero where nothing was added).")


# -- element access and windows ------------------------------------------------------------------------------------
def _extract_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = need_tile(types[0], "a")
    idx = [t for t in types[1:] if t is not None]
    need(len(idx) == len(a.shape), f"a tile of shape {a.shape} takes {len(a.shape)} indices, got {len(idx)}")
    for t in idx:
        need(is_int(t), f"indices must be integers, got {type_str(t)}")
    d = padded(a.shape)
    pads = tuple(Pad(0) for _ in range(4 - len(idx)))
    return TileSig(a.dtype, template=(d[1], d[2], d[3]), cpp="tile_extract_at",
                   order=(0, *pads, *range(1, 1 + len(idx))))


tile_builtin("tile_extract", rule=_extract_rule,
             params=(Param("a"), Param("i"), Param("j", None), Param("k", None), Param("l", None)),
             signature="tile_extract(a: tile, i: int, j: int = None, k: int = None, l: int = None) -> Any",
             doc="The element of ``a`` at the given indices (one per tile dimension); ``t[i, j]`` is the same.")


def _insert_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = need_tile(types[0], "a")
    idx, v = list(types[1:-1]), types[-1]
    need(len(idx) == len(a.shape), f"a tile of shape {a.shape} takes {len(a.shape)} indices, got {len(idx)}")
    need(v == a.dtype, f"the assigned value must be {type_str(a.dtype)}, got {type_str(v)}")
    d = padded(a.shape)
    pads = tuple(Pad(0) for _ in range(4 - len(idx)))
    return TileSig(a, template=(d[1], d[2], d[3]), cpp="tile_insert_at",
                   order=(0, *pads, *range(1, 1 + len(idx)), len(types) - 1))


tile_builtin("_tile_insert", rule=_insert_rule, params=(Param("a"), Param("i"), Param("v")),
             signature="_tile_insert(a: tile, i: int, v: Any) -> tile",
             doc="``t[i, j] = v``: the tile with one element replaced (the frontend stores it back into ``t``).")


def _scatter_rule(name: str) -> Any:
    """The type rule of ``tile_scatter_masked`` / ``tile_scatter_add``.

    They take one index per tile dimension, then ``value`` and ``has_value`` (and, for the add, the compile-time
    ``atomic``); given positionally these fill the parameters in order, so the operands are read in that order
    whatever names they were bound to.
    """
    adds = name == "tile_scatter_add"

    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        a = need_tile(types[0], "a")
        given = [(t, c) for t, c in zip(types[1:], consts[1:]) if t is not None]
        n = len(a.shape)
        forms = (n + 2, n + 3) if adds else (n + 2,)
        need(len(given) in forms, f"{name}() on a {n}-d tile takes {n} ind{'ex' if n == 1 else 'ices'}, then value "
             f"and has_value{' (and atomic)' if adds else ''}: got {len(given)} argument(s) after the tile")
        for t, _ in given[:n]:
            need(is_int(t), f"indices must be integers, got {type_str(t)}")
        v, has = given[n][0], given[n + 1][0]
        need(v == a.dtype, f"'value' must match the tile's dtype {type_str(a.dtype)}, got {type_str(v)}")
        need(has == scalars.bool, f"'has_value' must be a bool, got {type_str(has)}")
        if adds:
            need(scalars.is_scalar_type(a.dtype) and a.dtype != scalars.bool or is_composite(a.dtype),
                 f"{name}() adds numbers, vectors or matrices, not {type_str(a.dtype)}")
            if len(given) == n + 3:
                atomic = given[n + 2][1]
                need(isinstance(atomic, bool), "'atomic' must be a compile-time constant (True or False), not a "
                     "runtime value")
        pads = tuple(Pad(0) for _ in range(4 - n))
        # on the CPU a block is one thread, so atomic and plain accumulation are the same single update
        return TileSig(a, template=padded(a.shape), cpp=f"{name}_at",
                       order=(0, *pads, *range(1, 1 + n), n + 1, n + 2))

    return rule


_SCATTER_DOC = ("This thread's ``value`` {verb} ``a`` at the given indices (one per tile dimension) when ``has_value`` "
                "is true; ``a`` is a tile variable, updated in place. An index outside the tile is skipped. On the CPU "
                "a block is one thread, so its own value is the only one. {grad}")
_SCATTER_PARAMS = (Param("a", inout=True), Param("i"), Param("j", None), Param("k", None), Param("l", None),
                   Param("value", None), Param("has_value", None))
tile_builtin("tile_scatter_masked", rule=_scatter_rule("tile_scatter_masked"), params=_SCATTER_PARAMS,
             signature="tile_scatter_masked(a: tile, i: int, [j: int, k: int, l: int,] value: Any, has_value: bool) "
                       "-> None",
             doc=_SCATTER_DOC.format(verb="is written into", grad="In the backward pass the value receives the "
                                     "gradient of the element it replaced, which is consumed."))
tile_builtin("tile_scatter_add", rule=_scatter_rule("tile_scatter_add"), params=(*_SCATTER_PARAMS, Param("atomic", None)),
             signature="tile_scatter_add(a: tile, i: int, [j: int, k: int, l: int,] value: Any, has_value: bool, "
                       "atomic: bool = True) -> None",
             doc=_SCATTER_DOC.format(verb="is added into", grad="In the backward pass the value receives the gradient "
                                     "of the element it was added to; ``atomic`` (a compile-time bool) is accepted "
                                     "for the GPU's sake."))


def _window_sig(src: TileT, wshape: tuple[int, ...], cpp: str, n_off: int, off_at: int, base: tuple[Any, ...],
                ret: Any) -> TileSig:
    s, w = padded(src.shape), padded(wshape)
    pads = tuple(Pad(0) for _ in range(4 - n_off))
    tail = tuple(Pad(0) for _ in range(n_off - n_off)) if n_off else ()
    offs = tuple(range(off_at, off_at + n_off)) if n_off else ()
    return TileSig(ret, template=(*s, *w), cpp=cpp, order=(*base, *pads, *offs, *tail))


def _view_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "t")
    n = index_count(types[1])
    need(n <= len(t.shape), f"offset has {n} entries, the tile has {len(t.shape)} dimension(s)")
    if consts[2] is None:  # integer offsets select (and remove) leading dimensions
        need(n < len(t.shape), "tile_view() without a shape keeps at least one dimension: give fewer offsets")
        wshape = (1,) * n + t.shape[n:]
        out = t.shape[n:]
    else:
        out = shape_arg(consts[2])
        need(len(out) == len(t.shape) and n == len(t.shape), f"tile_view() with a shape takes one offset and one "
             f"extent per dimension of the {len(t.shape)}-d tile")
        wshape = out
    ret = make_tile(t.dtype, out, t.storage)
    sig = _window_sig(t, wshape, "tile_subtile", n, 1, (0,), ret)
    if n < len(t.shape):  # offsets name the leading dimensions: pad the trailing ones
        lead = tuple(Pad(0) for _ in range(4 - len(t.shape)))
        trail = tuple(Pad(0) for _ in range(len(t.shape) - n))
        sig = TileSig(ret, template=sig.template, cpp="tile_subtile", order=(0, *lead, *range(1, 1 + n), *trail))
    return sig


tile_builtin("tile_view", rule=_view_rule,
             params=(Param("t"), Param("offset"), Param("shape", None, static=True)),
             signature="tile_view(t: tile, offset: tuple[int, ...], shape: tuple[int, ...] = None) -> tile",
             doc="The part of ``t`` at ``offset``: without ``shape`` the offsets select leading dimensions (removed "
                 "from the result), with ``shape`` a window of that shape. Treadle's view is a copy: writing to it "
                 "leaves ``t`` unchanged.")


def _slice_indexed_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "t")
    idx = need_tile(types[1], "indices")
    need(len(idx.shape) == 1 and idx.dtype == scalars.int32, f"indices must be a 1-d int32 tile, got {type_str(idx)}")
    axis = consts[2]
    nd = len(t.shape)
    need(isinstance(axis, int) and -nd <= axis < nd, f"axis {axis!r} is out of range for a {nd}-d tile")
    ax = axis % nd
    out = tuple(idx.shape[0] if d == ax else e for d, e in enumerate(t.shape))
    ret = make_tile(t.dtype, out, t.storage)
    return TileSig(ret, template=(ax + 4 - nd, *padded(t.shape), *padded(out), idx.shape[0]), cpp="tile_gather_axis")


tile_builtin("tile_slice_indexed", rule=_slice_indexed_rule,
             params=(Param("t"), Param("indices"), Param("axis", 0, static=True)),
             signature="tile_slice_indexed(t: tile, indices: tile, axis: int = 0) -> tile",
             doc="The entries of ``t`` along ``axis`` picked by the 1-d int32 tile ``indices`` (``t[indices, :]``), "
                 "a copy; negative indices count from the end.")


def _assign_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    dst = need_tile(types[0], "dst")
    src = need_tile(types[1], "src")
    need(len(src.shape) == len(dst.shape), f"tile_assign() of a {len(src.shape)}-d tile into a {len(dst.shape)}-d one")
    n = index_count(types[2]) if types[2] is not None else 0
    need(n in (0, len(dst.shape)), f"offset has {n} entries, the tile has {len(dst.shape)} dimension(s)")
    s, w = padded(dst.shape), padded(src.shape)
    pads = tuple(Pad(0) for _ in range(4 - n))
    return TileSig(dst, template=(*s, *w), cpp="tile_assign_window", order=(0, 1, *pads, *range(2, 2 + n)))


tile_builtin("tile_assign", rule=_assign_rule,
             params=(Param("dst", inout=True), Param("src"), Param("offset", None)),
             signature="tile_assign(dst: tile, src: tile, offset: tuple[int, ...] = None) -> None",
             doc="Copy ``src`` into ``dst`` (a tile variable, updated in place) at ``offset``, converting elements to "
                 "``dst``'s type; parts outside ``dst`` are dropped.")


# -- layout --------------------------------------------------------------------------------------------------------
def _reshape_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "t")
    raw = consts[1]
    dims = (raw,) if isinstance(raw, int) else tuple(raw) if isinstance(raw, tuple) else None
    need(dims is not None and all(isinstance(d, int) for d in dims), f"shape must be compile-time ints, got {raw!r}")
    assert dims is not None
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        need(dims.count(-1) == 1 and known > 0 and t.size % known == 0, f"cannot reshape {t.shape} to {dims}")
        dims = tuple(t.size // known if d == -1 else d for d in dims)
    shape = shape_arg(dims)
    need(math.prod(shape) == t.size, f"cannot reshape a tile of {t.size} elements {t.shape} to {shape}")
    ret = make_tile(t.dtype, shape, t.storage)
    return TileSig(ret, template=ret.rows_cols, cpp="tile_reshape")


tile_builtin("tile_reshape", rule=_reshape_rule, params=(Param("t"), Param("shape", static=True)),
             signature="tile_reshape(t: tile, shape: tuple[int, ...]) -> tile",
             doc="The elements of ``t`` in row-major order with a new shape (one extent may be -1).")


def _squeeze_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "t")
    axis = consts[1]
    nd = len(t.shape)
    if axis is None:
        drop = {d for d, e in enumerate(t.shape) if e == 1}
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        drop = set()
        for a in axes:
            need(isinstance(a, int) and -nd <= a < nd, f"axis {a} is out of range for a {nd}-d tile")
            need(t.shape[a] == 1, f"cannot squeeze axis {a} of extent {t.shape[a]}")
            drop.add(a % nd)
    shape = tuple(e for d, e in enumerate(t.shape) if d not in drop) or (1,)
    ret = make_tile(t.dtype, shape, t.storage)
    return TileSig(ret, template=ret.rows_cols, cpp="tile_reshape")


tile_builtin("tile_squeeze", rule=_squeeze_rule, params=(Param("t"), Param("axis", None, static=True)),
             signature="tile_squeeze(t: tile, axis: int | tuple[int, ...] = None) -> tile",
             doc="``t`` without dimensions of extent one (all of them, or those of ``axis``).")


def _transpose_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "a")
    need(len(t.shape) == 2, f"tile_transpose() takes a 2-d tile, got shape {t.shape}")
    return make_tile(t.dtype, (t.shape[1], t.shape[0]), t.storage)


tile_builtin("tile_transpose", rule=_transpose_rule, params=(Param("a"),),
             signature="tile_transpose(a: tile) -> tile", doc="The transpose of a 2-d tile.")


def _broadcast_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "a")
    shape = shape_arg(consts[1])
    need(len(shape) >= len(t.shape), f"cannot broadcast a {len(t.shape)}-d tile to {len(shape)} dimensions")
    src = (1,) * (len(shape) - len(t.shape)) + t.shape
    for s, d in zip(src, shape):
        need(s in (1, d), f"cannot broadcast a tile of shape {t.shape} to {shape}")
    ret = make_tile(t.dtype, shape, t.storage)
    return TileSig(ret, template=(*padded(src), *padded(shape)))


tile_builtin("tile_broadcast", rule=_broadcast_rule, params=(Param("a"), Param("shape", static=True)),
             signature="tile_broadcast(a: tile, shape: tuple[int, ...]) -> tile",
             doc="``a`` repeated along its extent-one (and new leading) dimensions to ``shape``, as NumPy broadcasts.")


def _astype_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "t")
    dtype = dtype_arg(consts[1])
    need(scalars.is_scalar_type(dtype) and scalars.is_scalar_type(t.dtype),
         f"tile_astype() converts scalar tiles, got {type_str(t.dtype)} -> {type_str(dtype)}")
    return TileSig(t.with_(dtype=dtype), template=(dtype,))


tile_builtin("tile_astype", rule=_astype_rule, params=(Param("t"), Param("dtype", static=True)),
             signature="tile_astype(t: tile, dtype: type) -> tile",
             doc="``t`` with its elements converted to ``dtype``.")


def _block_dim_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    if types:
        raise NoMatch("block_dim() takes no arguments")
    return scalars.int32


tile_builtin("block_dim", rule=_block_dim_rule, params=(), differentiable=False,
             signature="block_dim() -> int",
             doc="The number of threads in the block of a tiled launch: 1 on the CPU, where a block runs as one "
                 "thread over whole tiles.")

_ = (is_float, scalar_dtype)  # shared helpers used by the other tile groups
