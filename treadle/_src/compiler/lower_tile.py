"""Lowering of tile builtins (:attr:`Lowering.TILE`) and of tile subscripts (``t[i, j]``, ``t[i, j] = v``).

A tile builtin declares its parameters (``Builtin.params``). The call's positional and keyword arguments are bound
to them; compile-time parameters reach the type rule as Python values (shapes, dtypes, storage, axes, and functions,
which are resolved here for the tile's element types), the others become the operands (tuples of indices flatten
into one integer operand each). A parameter marked ``inout`` names a tile variable that receives the call's result.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from ..builtins import REGISTRY
from ..builtins.registry import NOT_CONST, REQUIRED, Builtin, Lowering, NoMatch, Overload, Param
from ..builtins.tile_common import Pad, TileCallee, TileSig
from ..core.errors import CodegenTypeError
from ..types import scalars
from ..types.typesys import (
    TileT,
    TupleT,
    is_callable_object,
    is_composite,
    is_int,
    is_matrix,
    is_struct,
    scalar_of,
    type_str,
)
from . import ir
from .lower_expr import PyObj, TupleVal


def _is_builtin(obj: Any) -> Builtin | None:
    if isinstance(obj, Builtin):
        return obj
    b = getattr(obj, "_treadle_builtin_", None)
    return b if isinstance(b, Builtin) else None


class Lowered(ast.expr):
    """An already lowered operand in a synthesized call (``a @ b`` becomes ``tile_matmul(a, b)``)."""

    _fields = ()

    def __init__(self, value: Any, like: ast.AST) -> None:
        super().__init__()
        self.value = value
        ast.copy_location(self, like)


class TileMixin:
    """The tile lowerings of the Lowerer (mixed into ``CallMixin``)."""

    #: tile variables that view part of another: name -> (viewed variable, offsets, window extents, steps)
    tile_views: dict[str, Any]
    #: the last slice lowered: (result value id, offsets, window extents, steps), for ``note_tile_view``
    last_tile_slice: Any

    def expr_Lowered(self, node: Lowered) -> Any:
        return node.value

    def tile_matmul_operator(self, a: Any, b: Any, node: ast.BinOp) -> Any:
        """``a @ b`` on tiles: ``tile_matmul(a, b)``."""
        call = ast.copy_location(ast.Call(func=node, args=[Lowered(a, node.left), Lowered(b, node.right)],
                                          keywords=[]), node)
        return self.lower_tile(REGISTRY.builtins["tile_matmul"], call)

    def bind_tile_args(self, b: Builtin, node: ast.Call) -> list[tuple[Param, ast.expr | None]]:
        """Each parameter with the expression the call gives it (``None``: omitted)."""
        params = b.params
        if len(node.args) > len(params):
            raise self.err(f"{b.name}() takes at most {len(params)} arguments, got {len(node.args)}",  # type: ignore[attr-defined]
                           node, f"valid forms: {b.signature}", CodegenTypeError)
        given: dict[str, ast.expr] = {p.name: a for p, a in zip(params, node.args)}
        names = {p.name for p in params}
        for k in node.keywords:
            if k.arg is None or k.arg not in names:
                raise self.err(f"{b.name}() got an unexpected keyword argument '{k.arg}'", node,  # type: ignore[attr-defined]
                               f"valid forms: {b.signature}", CodegenTypeError)
            if k.arg in given:
                raise self.err(f"{b.name}() got multiple values for argument '{k.arg}'", node,  # type: ignore[attr-defined]
                               cls=CodegenTypeError)
            given[k.arg] = k.value
        out: list[tuple[Param, ast.expr | None]] = []
        for p in params:
            if p.name not in given and p.default is REQUIRED:
                raise self.err(f"{b.name}() is missing the argument '{p.name}'", node,  # type: ignore[attr-defined]
                               f"valid forms: {b.signature}", CodegenTypeError)
            out.append((p, given.get(p.name)))
        return out

    def static_value(self, b: Builtin, p: Param, raw: Any, node: ast.AST) -> Any:
        """The compile-time value of a static parameter."""
        if isinstance(raw, PyObj):
            return raw.obj
        if isinstance(raw, ir.Const):
            return raw.value
        if isinstance(raw, TupleVal) and all(isinstance(x, ir.Const) for x in raw.items):
            return tuple(x.value for x in raw.items)
        raise self.err(f"'{p.name}' of {b.name}() must be a compile-time constant", node,  # type: ignore[attr-defined]
                       "use literals, wp.constant values or wp.static(...)", CodegenTypeError)

    def lower_tile(self, b: Builtin, node: ast.Call) -> Any:
        """A call of a tile builtin (see the module docstring)."""
        if b.name == "tile_view":
            sliced = self.tile_view_slices(b, node)
            if sliced is not None:
                return sliced
        types: list[Any] = []
        consts: list[Any] = []
        ops: list[Any] = []
        inouts: list[tuple[ir.Local, str]] = []
        callee_at: list[tuple[int, int]] = []
        for p, expr in self.bind_tile_args(b, node):
            if expr is None:
                if p.default is None:  # absent: the rule sees (None, None), and no operand
                    types.append(None)
                    consts.append(None)
                    continue
                if p.static:
                    types.append(None)
                    consts.append(p.default)
                    continue
                v: Any = ir.Const(p.default, _literal_type(p.default), True)
                types.append(v.type)
                consts.append(p.default)
                ops.append(v)
                continue
            if p.inout:
                local = self.locals.get(expr.id) if isinstance(expr, ast.Name) else None  # type: ignore[attr-defined]
                if local is None or not isinstance(local.type, TileT):
                    raise self.err(f"'{p.name}' of {b.name}() must be a tile variable (it is updated in place)",  # type: ignore[attr-defined]
                                   expr, "assign the tile to a variable first and pass the variable", CodegenTypeError)
                inouts.append((local, p.name))
            raw = self._tid_value(self.expr(expr))  # type: ignore[attr-defined]
            if p.static:
                value = self.static_value(b, p, raw, expr)
                if is_callable_object(value):
                    callee_at.append((len(types), p.fn_args))
                types.append(None)
                consts.append(value)
                continue
            if isinstance(raw, TupleVal):
                items = [self.as_operand(x, expr) for x in raw.items]  # type: ignore[attr-defined]
                types.append(TupleT(tuple(x.type for x in items)))
                consts.append(tuple(x.value if isinstance(x, ir.Const) else NOT_CONST for x in items))
                ops.extend(items)
                continue
            if isinstance(raw, PyObj):
                raise self.err(f"'{p.name}' of {b.name}() must be a value, not a {type(raw.obj).__name__}", expr,  # type: ignore[attr-defined]
                               f"valid forms: {b.signature}", CodegenTypeError)
            v = self.as_operand(raw, expr)  # type: ignore[attr-defined]
            types.append(v.type)
            consts.append(v.value if isinstance(v, ir.Const) else NOT_CONST)
            ops.append(v)
        callee: TileCallee | None = None
        for i, fn_args in callee_at:
            after = [t for t in types[i + 1:] if t is not None]
            operand_types = [after[0]] * fn_args if fn_args and after else after
            resolved = self.resolve_tile_callee(b, consts[i], operand_types, node)
            consts[i] = resolved
            callee = resolved
        try:
            sig = b.rule(types, consts)
        except NoMatch as e:
            shown = ", ".join(type_str(t) if t is not None else repr(c) for t, c in zip(types, consts))
            raise self.err(f"{b.name}({shown}): {e}", node, f"valid forms: {b.signature}",  # type: ignore[attr-defined]
                           CodegenTypeError) from None
        if not isinstance(sig, TileSig):
            sig = TileSig(sig)
        if sig.order is not None:
            ops = [ir.Const(x.value, x.type) if isinstance(x, Pad) else ops[x] for x in sig.order]
        loc = self.src.loc(node)  # type: ignore[attr-defined]
        arg_types = tuple(o.type for o in ops)
        if len(inouts) > 1:  # one call per updated tile: <cpp>_<param>, each giving that tile's new value
            for local, pname in inouts:
                ov = Overload(b, arg_types, local.type, f"{sig.cpp or b.cpp}_{pname}", tuple(sig.template), None,
                              callee)
                r = self.new_value(local.type, "tile")  # type: ignore[attr-defined]
                self.emit(ir.Call(loc, r, ov, list(ops)))  # type: ignore[attr-defined]
                self.assign(ast.Name(id=local.name, ctx=ast.Store()), r, node)  # type: ignore[attr-defined]
                self.tile_updated(local.name, node)
            return None
        inout = inouts[0][0] if inouts else None
        ov = Overload(b, arg_types, sig.ret, sig.cpp or b.cpp, tuple(sig.template), None, callee)
        if sig.ret is None:
            self.emit(ir.Call(loc, None, ov, ops))  # type: ignore[attr-defined]
            return None
        r = self.new_value(sig.ret, "tile" if isinstance(sig.ret, TileT) else "")  # type: ignore[attr-defined]
        self.emit(ir.Call(loc, r, ov, ops))  # type: ignore[attr-defined]
        if b.name == "tile_view":  # a view: its offsets (one per dimension, after the padding) and window
            nd = len(types[0].shape)
            self.last_tile_slice = (r.id, ops[5 - nd:5], tuple(sig.template[8 - nd:8]), (1,) * nd)
        if inout is not None:
            self.assign(ast.Name(id=inout.name, ctx=ast.Store()), r, node)  # type: ignore[attr-defined]
            self.tile_updated(inout.name, node)
            return None
        return r

    def tile_view_slices(self, b: Builtin, node: ast.Call) -> Any:
        """``tile_view(t, offset=(slice(0, -1, 1), 2))``: offsets that hold slices are a subscript ``t[0:-1, 2]``.

        Returns ``None`` when no offset is a ``slice(...)`` call (the ordinary integer-offset form).
        """
        bound = dict((p.name, e) for p, e in self.bind_tile_args(b, node))
        off = bound.get("offset")
        items = off.elts if isinstance(off, ast.Tuple) else [off] if off is not None else []

        def is_slice(e: ast.expr) -> bool:
            if not isinstance(e, ast.Call):
                return False
            f = self.expr(e.func)  # type: ignore[attr-defined]
            return isinstance(f, PyObj) and f.obj is builtins.slice

        if not any(is_slice(e) for e in items):
            return None
        if bound.get("shape") is not None:
            raise self.err("tile_view() does not take 'shape' together with a slice offset: the slices give the "  # type: ignore[attr-defined]
                           "view's extents", node, "drop shape=, or give integer offsets with shape=",
                           CodegenTypeError)
        idx: list[Any] = []
        for e in items:
            if not is_slice(e):
                idx.append(self.value(e))  # type: ignore[attr-defined]
                continue
            assert isinstance(e, ast.Call)
            if e.keywords or not 1 <= len(e.args) <= 3:
                raise self.err("slice() takes 1 to 3 positional bounds", e, cls=CodegenTypeError)  # type: ignore[attr-defined]
            parts: list[ast.expr | None] = [None, e.args[0], None] if len(e.args) == 1 else [*e.args, None][:3]
            idx.append(self.slice_spec(ast.copy_location(ast.Slice(*parts), e)))  # type: ignore[attr-defined]
        for i, e in zip(idx, items):
            if not isinstance(i, ir.SliceSpec) and not is_int(i.type):
                raise self.err(f"tile_view() offsets must be integers or slices, got {type_str(i.type)}", e,  # type: ignore[attr-defined]
                               cls=CodegenTypeError)
        val = self.value(bound["t"])  # type: ignore[attr-defined,arg-type]
        if not isinstance(val.type, TileT):
            raise self.err(f"'t' of tile_view() must be a tile, got {type_str(val.type)}", node, cls=CodegenTypeError)  # type: ignore[attr-defined]
        return self.tile_slice(val, idx, node)

    def resolve_tile_callee(self, b: Builtin, obj: Any, operand_types: list[Any], node: ast.AST) -> TileCallee:
        """A function passed to a tile builtin, resolved for the element types of the operands after it."""
        elems = [t.dtype if isinstance(t, TileT) else t for t in operand_types]
        fb = _is_builtin(obj)
        if fb is not None:
            try:
                ov = fb.resolve(elems)
            except NoMatch as e:
                what = " (a Warp struct type)" if any(is_struct(t) for t in elems) else ""
                raise self.err(f"{b.name}(): no overload of '{fb.name}' takes ({', '.join(type_str(t) for t in elems)})"  # type: ignore[attr-defined]
                               f"{what}: {e}",
                               node, f"valid forms of {fb.name}: {fb.signature}", CodegenTypeError) from None
            if fb.op is not None or fb.lowering is not Lowering.CALL:
                raise self.err(f"{b.name}() cannot apply '{fb.name}' element by element", node,  # type: ignore[attr-defined]
                               "wrap it in a @wp.func", CodegenTypeError)
            tmpl = ""
            if ov.template:
                tmpl = "<" + ",".join(str(x) if isinstance(x, int) else _cpp_type(x) for x in ov.template) + ">"
            diff = fb.differentiable and not fb.zero_derivative
            return TileCallee(fb, ov.ret, f"treadle::{ov.cpp}{tmpl}", f"treadle::adj_{ov.cpp}{tmpl}" if diff else None,
                              diff, f"treadle::{ov.cpp}{tmpl}", tuple(elems))
        if getattr(obj, "_treadle_function_", False):
            fakes = [self.new_value(t) for t in elems]  # type: ignore[attr-defined]
            inst, _ = self.resolve_function_call(obj, fakes, {}, node)  # type: ignore[attr-defined]
            self.ctx.add_dependency(inst)  # type: ignore[attr-defined]
            return TileCallee(obj, inst.return_type, inst.cname, f"adj_{inst.cname}", True, f"{inst.cname}_replay",
                              tuple(elems))
        raise self.err(f"{b.name}() takes a builtin or a @wp.func, got {type(obj).__name__}", node,  # type: ignore[attr-defined]
                       cls=CodegenTypeError)

    def tile_window(self, t: TileT, idx: list[Any], node: ast.AST
                    ) -> tuple[list[Any], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """The window a subscript of a tile names: offsets (operands), window extents, the result's shape, steps.

        An integer index selects one position of its dimension (and drops it); a slice ``start:stop`` with constant
        bounds (or a start and ``:``-less stop that fit) keeps a range; missing trailing indices keep whole dims.
        """
        nd = len(t.shape)
        if len(idx) > nd:
            raise self.err(f"too many indices ({len(idx)}) for a tile of shape {t.shape}", node,  # type: ignore[attr-defined]
                           cls=CodegenTypeError)
        offsets: list[Any] = []
        window: list[int] = []
        out: list[int] = []
        steps: list[int] = []
        for d in range(nd):
            ext = t.shape[d]
            i = idx[d] if d < len(idx) else ir.SliceSpec(None, None, None)
            if not isinstance(i, ir.SliceSpec):
                if isinstance(i, ir.Const) and not -ext <= int(i.value) < ext:
                    raise self.err(f"index {i.value} is out of bounds for dimension {d} of extent {ext}", node,  # type: ignore[attr-defined]
                                   cls=CodegenTypeError)
                if isinstance(i, ir.Const) and int(i.value) < 0:
                    i = ir.Const(int(i.value) + ext, scalars.int32)
                elif not isinstance(i, ir.Const):
                    i = self.wrap_index(i, ext, node)
                offsets.append(i)
                window.append(1)
                steps.append(1)
                continue
            for p in (i.start, i.stop, i.step):
                if p is not None and not isinstance(p, ir.Const):
                    raise self.err("tile slices need compile-time constant bounds (the result's shape is a compile-time fact)",  # type: ignore[attr-defined]
                                   node, "use literals or wp.static(...) bounds, or wp.tile_view(t, offset, shape)",
                                   CodegenTypeError)
            given = [None if p is None else int(p.value) for p in (i.start, i.stop, i.step)]  # type: ignore[union-attr]
            if given[2] == 0:
                raise self.err("slice step cannot be zero", node, cls=CodegenTypeError)  # type: ignore[attr-defined]
            lo, hi, step = slice(*given).indices(ext)
            count = len(range(lo, hi, step))
            if count == 0:
                why = f"the slice {lo}:{hi}:{step} of dimension {d} is empty (a zero-length tile dimension is not allowed)"
                raise self.err(why, node, cls=CodegenTypeError)  # type: ignore[attr-defined]
            offsets.append(ir.Const(lo, scalars.int32))
            window.append(count)
            steps.append(step)
            out.append(count)
        return offsets, tuple(window), tuple(out) or (1,), tuple(steps)

    def wrap_index(self, i: Any, ext: int, node: ast.AST) -> Any:
        """A runtime index that counts from the end when negative, as NumPy's (``t[i, :]`` with ``i = -1``)."""
        call = self.call_builtin  # type: ignore[attr-defined]
        neg = call(REGISTRY.builtins["_cmp_lt"], [i, ir.Const(0, i.type)], node)
        return call(REGISTRY.builtins["where"], [neg, call(REGISTRY.builtins["add"], [i, ir.Const(ext, i.type)], node),
                                                 i], node)

    def tile_subscript_parts(self, val: Any, idx: list[Any], node: ast.AST) -> Any:
        """``t[...]`` with already lowered indices (integers and slices): an element, a component or a slice."""
        nd = len(val.type.shape)
        if len(idx) > nd and not any(isinstance(i, ir.SliceSpec) for i in idx[:nd]):
            elem = self.tile_subscript(val, idx[:nd], node)
            return self.subscript_value(elem, idx[nd:], node)  # type: ignore[attr-defined]
        if any(isinstance(i, ir.SliceSpec) for i in idx) or len(idx) < nd:
            return self.tile_slice(val, idx, node)
        return self.tile_subscript(val, idx, node)

    def tile_subscript_node(self, val: Any, node: ast.Subscript) -> Any:
        """``t[...]`` on a tile: an element, a slice, or advanced indexing ``t[idx, :]`` with a 1-d int tile."""
        nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        idx: list[Any] = []
        for n in nodes:
            if isinstance(n, ast.Slice):
                idx.append(self.slice_spec(n))  # type: ignore[attr-defined]
                continue
            v = self.value(n)  # type: ignore[attr-defined]
            if not isinstance(v.type, TileT) and not is_int(v.type):
                raise self.err(f"tile indices must be integers or slices (or one 1-d int32 index tile), got {type_str(v.type)}",  # type: ignore[attr-defined]
                               n, "convert with int(...)", CodegenTypeError)
            idx.append(v)
        picked = [d for d, i in enumerate(idx) if not isinstance(i, ir.SliceSpec) and isinstance(i.type, TileT)]
        if picked:
            d = picked[0]
            rest = [i for k, i in enumerate(idx) if k != d]
            if len(picked) > 1 or any(not isinstance(i, ir.SliceSpec) or i.start is not None or i.stop is not None
                                      or i.step is not None for i in rest):
                raise self.err("advanced tile indexing takes one index tile and requires ':' on all other axes", node,  # type: ignore[attr-defined]
                               "e.g. t[idx, :] or t[:, idx]", CodegenTypeError)
            b = REGISTRY.builtins["tile_slice_indexed"]
            try:
                sig = b.rule([val.type, idx[d].type, None], [NOT_CONST, NOT_CONST, d])
            except NoMatch as e:
                raise self.err(f"tile_slice_indexed(): {e}", node, cls=CodegenTypeError) from None  # type: ignore[attr-defined]
            ov = Overload(b, (val.type, idx[d].type), sig.ret, sig.cpp or b.cpp, tuple(sig.template))
            r = self.new_value(sig.ret, "tile")  # type: ignore[attr-defined]
            self.emit(ir.Call(self.src.loc(node), r, ov, [val, idx[d]]))  # type: ignore[attr-defined]
            return r
        nd = len(val.type.shape)
        if len(idx) > nd and not any(isinstance(i, ir.SliceSpec) for i in idx[:nd]):
            # a component of an element of a tile of vectors or matrices: t[i, c], t[i, j, r, c]
            elem = self.tile_subscript(val, idx[:nd], node)
            return self.subscript_value(elem, idx[nd:], node)  # type: ignore[attr-defined]
        if any(isinstance(i, ir.SliceSpec) for i in idx) or len(idx) < nd:
            return self.tile_slice(val, idx, node)
        return self.tile_subscript(val, idx, node)

    def tile_slice(self, val: Any, idx: list[Any], node: ast.AST) -> Any:
        """``t[i]``, ``t[i, :]``, ``t[1:3, 2:]``: a copy of that part of the tile."""
        from ..builtins.tile_common import make_tile, padded

        t: TileT = val.type
        offsets, window, out, steps = self.tile_window(t, idx, node)
        ret = make_tile(t.dtype, out, t.storage)
        pads = [ir.Const(0, scalars.int64) for _ in range(4 - len(offsets))]
        ops = [val, *pads, *offsets]
        b = REGISTRY.builtins["tile_view"]
        if all(st == 1 for st in steps):
            ov = Overload(b, tuple(o.type for o in ops), ret, "tile_subtile", (*padded(t.shape), *padded(window)))
        else:
            st4 = (1,) * (4 - len(steps)) + steps
            ov = Overload(b, tuple(o.type for o in ops), ret, "tile_subtile_step",
                          (*padded(t.shape), *padded(window), *st4))
        r = self.new_value(ret, "tile")  # type: ignore[attr-defined]
        self.emit(ir.Call(self.src.loc(node), r, ov, ops))  # type: ignore[attr-defined]
        self.last_tile_slice = (r.id, offsets, window, steps)
        return r

    def note_tile_view(self, name: str, expr: ast.expr, value: Any) -> None:
        """After ``name = <expr>``: remember ``name`` as a view when ``expr`` is a part of a tile variable.

        ``row = t[i]``, ``part = t[1:3, :]`` and ``v = wp.tile_view(t, ...)`` make views: an update of the view in
        place (``tile_assign(row, ...)``, ``row += u``, ``row[j] = x``) is written back into ``t``, as the
        reference's views alias their tile. Any other assignment to ``name`` ends the view.
        """
        self.tile_views.pop(name, None)
        rec, self.last_tile_slice = self.last_tile_slice, None
        if rec is None or not isinstance(value, ir.Value) or rec[0] != value.id:
            return
        base: ast.expr | None = None
        if isinstance(expr, ast.Subscript):
            base = expr.value
        elif isinstance(expr, ast.Call) and expr.args:
            base = expr.args[0]
        local = self.locals.get(base.id) if isinstance(base, ast.Name) else None  # type: ignore[attr-defined]
        if local is None or not isinstance(local.type, TileT) or base.id == name:  # type: ignore[union-attr]
            return
        offsets = []
        for o in rec[1]:  # runtime offsets are kept in variables: the view may be updated in another block
            if isinstance(o, ir.Const):
                offsets.append(o)
                continue
            keep = self.temp_local(o.type)  # type: ignore[attr-defined]
            self.emit(ir.StoreLocal(self.src.loc(expr), keep, o))  # type: ignore[attr-defined]
            offsets.append(keep)
        self.tile_views[name] = (base.id, offsets, rec[2], rec[3])  # type: ignore[union-attr]

    def tile_updated(self, name: str, node: ast.AST) -> None:
        """``name`` was updated in place: if it views part of another tile variable, write it back there."""
        view = self.tile_views.get(name)
        if view is None:
            return
        from ..builtins.tile_common import padded

        base_name, offsets, window, steps = view
        base = self.locals.get(base_name)  # type: ignore[attr-defined]
        if base is None:
            return
        t: TileT = base.type
        v = self.value(ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node))  # type: ignore[attr-defined]
        if v.type.shape != window:
            v = self.reshape_value(v, window, node)
        offs = []
        for o in offsets:
            if isinstance(o, ir.Local):
                val = self.new_value(o.type)  # type: ignore[attr-defined]
                self.emit(ir.LoadLocal(self.src.loc(node), val, o))  # type: ignore[attr-defined]
                o = val
            offs.append(o)
        cur = self.value(ast.copy_location(ast.Name(id=base_name, ctx=ast.Load()), node))  # type: ignore[attr-defined]
        pads = [ir.Const(0, scalars.int64) for _ in range(4 - len(offs))]
        ops = [cur, v, *pads, *offs]
        b = REGISTRY.builtins["tile_assign"]
        if all(st == 1 for st in steps):
            ov = Overload(b, tuple(o.type for o in ops), t, "tile_assign_window", (*padded(t.shape), *padded(window)))
        else:
            st4 = (1,) * (4 - len(steps)) + tuple(steps)
            ov = Overload(b, tuple(o.type for o in ops), t, "tile_assign_step", (*padded(t.shape), *padded(window), *st4))
        r = self.new_value(t, "tile")  # type: ignore[attr-defined]
        self.emit(ir.Call(self.src.loc(node), r, ov, ops))  # type: ignore[attr-defined]
        self.assign(ast.copy_location(ast.Name(id=base_name, ctx=ast.Store()), node), r, node)  # type: ignore[attr-defined]
        self.tile_updated(base_name, node)

    def assign_tile_slice(self, target: ast.Subscript, local: ir.Local, idx: list[Any], v: Any,
                          node: ast.AST) -> None:
        """``t[i, :] = u`` / ``t[a:b] = u``: the window replaced by a tile of its shape (``tile_assign``)."""
        from ..builtins.tile_common import padded

        t: TileT = local.type
        offsets, window, out, steps = self.tile_window(t, idx, node)
        if not isinstance(v.type, TileT) or (v.type.shape != out and v.type.shape != window):
            got = v.type.shape if isinstance(v.type, TileT) else type_str(v.type)
            raise self.err(f"shape mismatch: assigning to a {out} part of a tile requires a tile of matching "  # type: ignore[attr-defined]
                           f"shape {out}, got {got}", node,
                           cls=CodegenTypeError)
        if v.type.shape != window:  # a dropped dimension: reshape the source to the window's rank
            v = self.reshape_value(v, window, node)
        cur = self.value(target.value)  # type: ignore[attr-defined]
        pads = [ir.Const(0, scalars.int64) for _ in range(4 - len(offsets))]
        ops = [cur, v, *pads, *offsets]
        b = REGISTRY.builtins["tile_assign"]
        st4 = (1,) * (4 - len(steps)) + steps
        if all(st == 1 for st in steps):
            ov = Overload(b, tuple(o.type for o in ops), t, "tile_assign_window", (*padded(t.shape), *padded(window)))
        else:
            ov = Overload(b, tuple(o.type for o in ops), t, "tile_assign_step", (*padded(t.shape), *padded(window), *st4))
        r = self.new_value(t, "tile")  # type: ignore[attr-defined]
        self.emit(ir.Call(self.src.loc(node), r, ov, ops))  # type: ignore[attr-defined]
        self.assign(target.value, r, node)  # type: ignore[attr-defined]
        self.tile_updated(local.name, node)

    def reshape_value(self, v: Any, shape: tuple[int, ...], node: ast.AST) -> Any:
        """A tile value with the same elements and another shape."""
        ret = v.type.with_(shape=shape)
        b = REGISTRY.builtins["tile_reshape"]
        ov = Overload(b, (v.type,), ret, "tile_reshape", ret.rows_cols)
        r = self.new_value(ret, "tile")  # type: ignore[attr-defined]
        self.emit(ir.Call(self.src.loc(node), r, ov, [v]))  # type: ignore[attr-defined]
        return r

    def tile_element_target(self, target: ast.expr) -> tuple[ir.Local, list[Any]] | None:
        """``t[i, j]`` as an assignment target where ``t`` is a tile variable: the variable and the indices."""
        chain: list[ast.Subscript] = []  # t[i][r] = v: the subscripts from the outermost in
        base: ast.expr = target
        while isinstance(base, ast.Subscript):
            chain.append(base)
            base = base.value
        if not chain or not isinstance(base, ast.Name):
            return None
        local = self.locals.get(base.id)  # type: ignore[attr-defined]
        if local is None or not isinstance(local.type, TileT):
            return None
        idx: list[Any] = []
        for sub in reversed(chain):
            idx += self.index_operands(sub.slice, allow_slices=True)  # type: ignore[attr-defined]
        return local, idx

    def assign_tile_element(self, target: ast.Subscript, local: ir.Local, idx: list[Any], v: Any,
                            node: ast.AST) -> None:
        target = ast.copy_location(ast.Subscript(value=ast.copy_location(ast.Name(id=local.name, ctx=ast.Load()),
                                                                          target), slice=target.slice, ctx=ast.Store()),
                                   target)
        """``t[i, j] = v``: the tile variable receives a copy with that element replaced (a part: ``t[i, :] = u``)."""
        nd = len(local.type.shape)
        if len(idx) > nd and not any(isinstance(i, ir.SliceSpec) for i in idx):
            # t[i, c] = s on a tile of vectors (or matrices): the element with that component replaced
            cur = self.value(target.value)  # type: ignore[attr-defined]
            elem = self.tile_subscript(cur, idx[:nd], node)
            et, comp = elem.type, idx[nd:]
            if not is_composite(et) or len(comp) > (2 if is_matrix(et) else 1):
                raise self.err(f"a tile of {type_str(et)} takes {nd} indices here, got {len(idx)}", node,  # type: ignore[attr-defined]
                               cls=CodegenTypeError)
            extents = tuple(et._shape_) if is_matrix(et) else (et._length_,)
            comp = [ir.Const(int(c.value) + extents[n], c.type) if isinstance(c, ir.Const) and
                    -extents[n] <= int(c.value) < 0 else c for n, c in enumerate(comp)]  # t[i][-1]: the last row
            part = et._wp_row_type_ if is_matrix(et) and len(comp) == 1 else scalar_of(et)
            v = self.coerce(v, part, node, "the assigned component")  # type: ignore[attr-defined]
            new_elem = self.new_value(et)  # type: ignore[attr-defined]
            self.emit(ir.Insert(self.src.loc(node), new_elem, elem, list(comp), v))  # type: ignore[attr-defined]
            v = new_elem
            idx = idx[:nd]
        elif any(isinstance(i, ir.SliceSpec) for i in idx) or len(idx) < nd:
            self.assign_tile_slice(target, local, idx, v, node)
            return
        cur = self.value(target.value)  # type: ignore[attr-defined]
        new = self.tile_index_call(REGISTRY.builtins["_tile_insert"], cur, idx, [v], node)
        self.assign(target.value, new, node)  # type: ignore[attr-defined]
        self.tile_updated(local.name, node)

    def tile_subscript(self, val: Any, idx: list[Any], node: ast.AST) -> Any:
        """``t[i, j]``: the element (``tile_extract``)."""
        b = REGISTRY.builtins["tile_extract"]
        return self.tile_index_call(b, val, idx, [], node)

    def tile_index_call(self, b: Builtin, val: Any, idx: list[Any], extra: list[Any], node: ast.AST) -> Any:
        """A call of an element-access builtin with already lowered operands (indices then ``extra``)."""
        t: TileT = val.type
        if len(idx) != len(t.shape):
            raise self.err(f"a tile of shape {t.shape} takes {len(t.shape)} indices, got {len(idx)}", node,  # type: ignore[attr-defined]
                           cls=CodegenTypeError)
        idx = list(idx)
        for d, i in enumerate(idx):  # constant indices: checked, and negative ones count from the end
            if isinstance(i, ir.Const):
                ext = t.shape[d]
                if not -ext <= int(i.value) < ext:
                    raise self.err(f"index {i.value} is out of bounds for dimension {d} of extent {ext}", node,  # type: ignore[attr-defined]
                                   cls=CodegenTypeError)
                idx[d] = ir.Const(int(i.value) % ext, scalars.int32)
        ops = [val, *idx, *extra]
        try:
            sig = b.rule([o.type for o in ops], [NOT_CONST] * len(ops))
        except NoMatch as e:
            raise self.err(f"{b.name}(): {e}", node, f"valid forms: {b.signature}", CodegenTypeError) from None  # type: ignore[attr-defined]
        if not isinstance(sig, TileSig):
            sig = TileSig(sig)
        if sig.order is not None:
            ops = [ir.Const(x.value, x.type) if isinstance(x, Pad) else ops[x] for x in sig.order]
        ov = Overload(b, tuple(o.type for o in ops), sig.ret, sig.cpp or b.cpp, tuple(sig.template))
        r = self.new_value(sig.ret)  # type: ignore[attr-defined]
        self.emit(ir.Call(self.src.loc(node), r, ov, ops))  # type: ignore[attr-defined]
        return r


def _literal_type(value: Any) -> Any:
    if isinstance(value, bool):
        return scalars.bool
    if isinstance(value, int):
        return scalars.int32
    return scalars.float32


def _cpp_type(t: Any) -> str:
    from .emit_cpp import cpp_type

    return cpp_type(t)
