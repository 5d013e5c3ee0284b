"""The frontend: Python AST of a kernel or ``@func`` -> typed IR (:class:`~.ir.FuncIR`).

Types are inferred while lowering: parameter types come from annotations (or from the concrete argument types of
a generic instance), literals are ``int32``/``float32`` (weak, adapting to typed operands), and every builtin's
result type comes from its rule in the registry. Python variables become typed :class:`~.ir.Local` slots whose type
is fixed by their first assignment. Unsupported constructs and type errors are reported at the user's line.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from ..builtins import REGISTRY
from ..core.errors import CodegenError, CodegenTypeError, SourceLoc, UnsupportedConstructError
from ..types import scalars
from ..types.typesys import (
    ArrayT,
    StaticArgT,
    TupleT,
    is_callable_object,
    is_composite,
    is_int,
    is_matrix,
    is_struct,
    is_vector_like,
    normalize_annotation,
    scalar_of,
    type_str,
)
from . import ir
from .functions import resolve_call
from .lower_call import CallMixin, _TidRequest
from .lower_expr import ConstConversionError, PyObj, TupleVal, convert_const
from .source import FuncSource

UNSUPPORTED_STMT = {
    ast.Try: ("try/except", "kernels cannot raise or catch exceptions; check values and return early"),
    ast.Raise: ("raise", "kernels cannot raise exceptions; use wp.expect_eq() or write an error flag to an array"),
    ast.With: ("with", "kernels have no context managers"),
    ast.AsyncWith: ("async with", "kernels cannot be async"),
    ast.AsyncFor: ("async for", "kernels cannot be async"),
    ast.FunctionDef: ("nested function definition", "define it at module level with @wp.func"),
    ast.AsyncFunctionDef: ("nested function definition", "define it at module level with @wp.func"),
    ast.ClassDef: ("class definition", "define structs at module level with @wp.struct"),
    ast.Import: ("import", "import modules at module level"),
    ast.ImportFrom: ("import", "import modules at module level"),
    ast.Global: ("global statement", "pass values in as kernel arguments or arrays"),
    ast.Nonlocal: ("nonlocal statement", "pass values in as arguments"),
    ast.Delete: ("del", "kernel variables cannot be deleted"),
    ast.Assert: ("assert", "use wp.expect_eq() / wp.expect_near(), or checked mode (wp.config.mode = 'debug')"),
    ast.Match: ("match statement", "use if/elif/else"),
}


class _LValue:
    """Where an assignment writes: a variable or an array element, then a path of components/fields.

    ``steps[k]`` is ``("index", [operands])`` or ``("field", name)``; ``types[k]`` is the type after step ``k``.
    """

    def __init__(self, local: ir.Local | None = None, array: Any = None, indices: list[Any] | None = None,
                 type: Any = None) -> None:
        self.local = local
        self.array = array
        self.indices = indices or []
        self.steps: list[tuple[str, Any]] = []
        self.types: list[Any] = []
        self.type = type
        #: an array view (``c[i]`` of a 2-d ``c``): usable only as the base of another subscript
        self.is_view = False

    def then(self, step: tuple[str, Any], t: Any) -> _LValue:
        lv = _LValue(self.local, self.array, self.indices, t)
        lv.steps = self.steps + [step]
        lv.types = self.types + [t]
        return lv


class LowerContext:
    """What the lowerer needs from its caller: dependency tracking and settings."""

    def __init__(self, max_unroll: int = 16) -> None:
        self.max_unroll = max_unroll
        self.deps: list[Any] = []
        #: user functions whose adjoint the forward code calls through wp.grad(f)
        self.grad_targets: list[Any] = []

    def add_dependency(self, inst: Any) -> None:
        if inst not in self.deps:
            self.deps.append(inst)


class Lowerer(CallMixin):
    """Lowers one function body for one set of parameter types."""

    def resolve_function_call(self, fn: Any, raw: list[Any], kwargs: dict[str, Any],
                              node: ast.AST) -> tuple[Any, list[Any]]:
        """The instance of ``@func`` ``fn`` that a call with these operands selects, and the ordered operands."""
        return resolve_call(fn, raw, kwargs, self, node)

    def __init__(self, src: FuncSource, param_types: list[Any], is_kernel: bool, ctx: LowerContext,
                 return_type: Any = None, infer_return: bool = False, adjoint_of: list[str] | None = None,
                 ref_params: list[str] | None = None) -> None:
        self.src = src
        #: ``wp.ref[T]`` parameters: every return also hands back their final values (see FuncInstance)
        self.ref_params = list(ref_params or [])
        self.ctx = ctx
        self.is_kernel = is_kernel
        self.launch_tid_used = False
        self.next_id = 0
        self.blocks: list[ir.Block] = [ir.Block()]
        self.locals: dict[str, ir.Local] = {}
        self.all_locals: list[ir.Local] = []
        #: Local.id -> the block that declared the variable (the two branches of an ``if`` are different blocks)
        self.local_block: dict[int, ir.Block] = {}
        self.loop_depth = 0
        self.return_type = return_type
        self.infer_return = infer_return
        self.return_seen = False
        self.params: list[ir.Local] = []
        self.const_bindings: dict[str, Any] = {}
        #: locals last assigned a literal (``n = 3``), visible to later wp.static() expressions
        self.static_locals: dict[str, Any] = {}
        #: tile variables that view a part of another (``row = t[i]``): name -> TileView (see lower_tile)
        self.tile_views: dict[str, Any] = {}
        self.last_tile_slice: Any = None
        args = src.tree.args
        names = [a.arg for a in args.args]
        for name, t in zip(names, param_types):
            if isinstance(t, StaticArgT):  # a function argument: bound while lowering, no runtime parameter
                self.const_bindings[name] = PyObj(t.obj)
                continue
            local = self.new_local(name, t)
            self.params.append(local)
        # In a @func_grad body, wp.adjoint[x] names the adjoint of parameter x (passed by reference).
        self.adjoint_locals: dict[str, ir.Local] = {}
        for name, t in zip(adjoint_of or [], param_types):
            self.next_id += 1
            loc = ir.Local(self.next_id, f"adj__{name}", t)
            self.adjoint_locals[name] = loc
        #: conditions (array has a gradient buffer) for the store of the statement being lowered
        self.adjoint_guards: list[Any] = []

    # Infrastructure ---------------------------------------------------------------------------------------------
    def err(self, msg: str, node: ast.AST | None, fix: str = "", cls: type = CodegenError) -> CodegenError:
        return cls(msg, self.src.loc(node), fix)

    def emit(self, stmt: ir.Stmt) -> None:
        self.blocks[-1].stmts.append(stmt)

    def new_value(self, t: Any, hint: str = "") -> ir.Value:
        self.next_id += 1
        return ir.Value(self.next_id, t, hint)

    def new_local(self, name: str, t: Any, cname: str | None = None) -> ir.Local:
        """A variable named ``name`` in kernel code (``cname``: another name in generated code, for rebindings)."""
        self.next_id += 1
        local = ir.Local(self.next_id, cname or name, t)
        self.locals[name] = local
        self.all_locals.append(local)
        self.local_block[local.id] = self.blocks[-1]
        return local

    def temp_local(self, t: Any) -> ir.Local:
        self.next_id += 1
        local = ir.Local(self.next_id, f"_tmp{self.next_id}", t)
        self.all_locals.append(local)
        return local

    def lower_body_into(self, block: ir.Block, fn: Callable[[], Any]) -> None:
        self.blocks.append(block)
        try:
            fn()
        finally:
            self.blocks.pop()

    def loc(self, node: ast.AST | None) -> SourceLoc:
        return self.src.loc(node)

    # Names ------------------------------------------------------------------------------------------------------
    def read_name(self, node: ast.Name) -> Any:
        name = node.id
        bound = self.const_bindings.get(name)
        if bound is not None:  # the variable of an unrolled loop: a constant in each copy of the body
            return bound
        local = self.locals.get(name)
        if local is not None:
            v = self.new_value(local.type, name)
            self.emit(ir.LoadLocal(self.loc(node), v, local))
            return v
        return self.resolve_global(name, node)

    # Driver -----------------------------------------------------------------------------------------------------
    def lower(self) -> ir.FuncIR:
        fdef = self.src.tree
        self.check_signature(fdef)
        self.block(fdef.body)
        if self.infer_return and not self.return_seen:
            self.return_type = None
        value_type = self.return_type
        if self.ref_params:
            if self.return_type is None and not _ends(fdef.body):
                self.emit_return(None, fdef)  # falling off the end hands back the by-reference values
            self.return_type = self.ref_return_type()
        body = self.blocks[0]
        body.adjoint_locals = list(self.adjoint_locals.values())
        f = ir.FuncIR(
            name=self.src.qualname,
            params=self.params,
            return_type=self.return_type,
            body=body,
            locals=[loc for loc in self.all_locals if loc not in self.params],
            is_kernel=self.is_kernel,
            loc=self.loc(fdef),
            value_type=value_type,
        )
        ir.verify_pass(f, "lowering", structure_only=True)
        return f

    def ref_return_type(self) -> TupleT:
        """The instance's return type with by-reference parameters: ``(result?, *ref values)``."""
        refs = tuple(self.locals[n].type for n in self.ref_params)
        return TupleT(((self.return_type,) if self.return_type is not None else ()) + refs)

    def emit_return(self, val: Any, node: ast.AST) -> None:
        """Return ``val``, wrapped with the by-reference parameters' current values when there are any."""
        if self.ref_params:
            items = [val] if val is not None else []
            for n in self.ref_params:
                local = self.locals[n]
                items.append(self.new_value(local.type, n))
                self.emit(ir.LoadLocal(self.loc(node), items[-1], local))
            v = self.new_value(TupleT(tuple(x.type for x in items)), "ret")
            self.emit(ir.Construct(self.loc(node), v, items))
            val = v
        self.emit(ir.Return(self.loc(node), val))

    def check_signature(self, fdef: ast.FunctionDef) -> None:
        a = fdef.args
        if a.vararg or a.kwarg:
            raise self.err("*args and **kwargs are not supported in kernels and functions", fdef,
                           "list every parameter with a type annotation", UnsupportedConstructError)
        if self.is_kernel and fdef.returns is not None:
            raw = self.src.signature.return_annotation
            ret = self.src.eval_annotation(fdef.returns, None if raw is inspect.Signature.empty else raw)
            if ret is not None and ret is not type(None):  # `-> None`, `-> types.NoneType` or an alias of them
                raise self.err("kernels cannot return values", fdef.returns,
                               "write results to output arguments, and omit the return annotation or use `-> None`",
                               CodegenTypeError)

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:
        for cls, (what, fix) in UNSUPPORTED_STMT.items():
            if isinstance(node, cls):
                raise self.err(f"{what} is not supported in kernels", node, fix, UnsupportedConstructError)
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.err(f"'{type(node).__name__}' statements are not supported in kernels", node,
                           cls=UnsupportedConstructError)
        try:
            method(node)
        except ConstConversionError as e:  # raised deep in constant folding: report it at this statement
            raise self.err(str(e), node, "write a value of the expected type (e.g. 1 instead of 1.5), or convert "
                           "explicitly with int(...) / float(...)", CodegenTypeError) from None

    # Simple statements ------------------------------------------------------------------------------------------
    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        r = self.expr(node.value)
        if isinstance(r, PyObj) and isinstance(r.obj, _TidRequest):
            return

    def stmt_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.err("chained assignment (a = b = c) is not supported", node, "assign each variable separately",
                           UnsupportedConstructError)
        target = node.targets[0]
        self.last_tile_slice = None
        value = self.expr(node.value)
        self.assign(target, value, node)
        if isinstance(target, ast.Name):
            self.note_tile_view(target.id, node.value, value)  # type: ignore[attr-defined]

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.err("a declaration without a value is not supported", node, "give the variable a value")
        value = self.expr(node.value)
        ann = normalize_annotation(self.src.eval_annotation(node.annotation, ast.unparse(node.annotation)))
        if isinstance(node.target, ast.Name) and not isinstance(value, TupleVal):
            v = self.as_operand(value, node)
            if v.type != ann:
                if isinstance(v, ir.Const) and v.weak and scalars.is_scalar_type(ann):
                    v = convert_const(v, ann)
                else:
                    raise self.err(f"value of type {type_str(v.type)} does not match the annotation "
                                   f"{type_str(ann)}", node, cls=CodegenTypeError)
            value = v
        self.assign(node.target, value, node)

    def assign(self, target: ast.expr, value: Any, node: ast.AST) -> None:
        if isinstance(value, PyObj) and isinstance(value.obj, _TidRequest):
            n = len(target.elts) if isinstance(target, ast.Tuple) else 1
            value = self.make_tid(n, value.obj.node)
        if isinstance(target, ast.Tuple):
            if isinstance(value, (ir.Value, ir.Const)) and isinstance(value.type, TupleT):
                value = self.unpack_tuple_value(value, node)
            if isinstance(value, (ir.Value, ir.Const)) and is_composite(value.type):
                items = [self.subscript_value(value, [ir.Const(i, scalars.int32)], node)
                         for i in range(value.type._shape_[0])]
                value = TupleVal(items)
            if not isinstance(value, TupleVal):
                raise self.err("cannot unpack a non-tuple value", node, cls=CodegenTypeError)
            if len(value.items) != len(target.elts):
                raise self.err(f"cannot unpack {len(value.items)} values into {len(target.elts)} names", node,
                               cls=CodegenTypeError)
            for t, v in zip(target.elts, value.items):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Name):
            self.assign_name(target, value, node)
            return
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            v = self.as_operand(value, node)
            self.assign_component(target, v, node)
            return
        raise self.err(f"cannot assign to {type(target).__name__}", target, cls=UnsupportedConstructError)

    def make_tid(self, n: int, node: ast.AST) -> Any:
        if n > 4:
            raise self.err("wp.tid() has at most 4 dimensions", node)
        self.launch_ndim = max(getattr(self, "launch_ndim", 1), n)
        items = []
        for d in range(n):
            v = self.new_value(scalars.int32, f"tid{d}")
            self.emit(ir.Tid(self.loc(node), v, d if n > 1 else -1))
            items.append(v)
        return items[0] if n == 1 else TupleVal(items)

    def assign_name(self, target: ast.Name, value: Any, node: ast.AST) -> None:
        name = target.id
        if isinstance(value, ir.Const) and self.loop_depth == 0:
            self.static_locals[name] = getattr(value.value, "value", value.value)
        else:
            self.static_locals.pop(name, None)
        if isinstance(value, TupleVal):
            value = self.as_operand(value, node)
        prev = self.const_bindings.get(name)
        if isinstance(prev, PyObj) and (is_callable_object(prev.obj)
                                        or getattr(prev.obj, "_treadle_grad_of_", None) is not None):
            if not (isinstance(value, PyObj) and value.obj is prev.obj):
                # the alias is resolved when the kernel is built: a rebinding (maybe under a runtime condition)
                # has no single meaning
                other = "another function" if isinstance(value, PyObj) and is_callable_object(value.obj) \
                    else "a non-function value"
                raise self.err(f"rebinding function-valued local '{name}' to {other} is not supported (it is "
                               "resolved when the kernel is built)", node,
                               f"give the new value another name than '{name}'", CodegenError)
        if isinstance(value, PyObj) and name not in self.locals and (
                is_callable_object(value.obj) or isinstance(value.obj, type)
                or getattr(value.obj, "_treadle_grad_of_", None) is not None):
            self.const_bindings[name] = value  # `f = some_func` / `T = a.dtype`: a compile-time alias
            return
        if isinstance(value, PyObj) and (getattr(value.obj, "__array_interface__", None) is not None
                                         or hasattr(value.obj, "__cuda_array_interface__")):
            value = self.as_operand(value, node)  # raises: arrays from Python scope must be kernel arguments
        if isinstance(value, PyObj):
            raise self.err(f"cannot assign a Python {type(value.obj).__name__} to the kernel variable '{name}'",
                           node, "kernel variables hold numbers, vectors, matrices, structs or arrays",
                           CodegenTypeError)
        local = self.locals.get(name)
        if local is None:
            if value.type is None:
                raise self.err("this call returns no value", node, cls=CodegenTypeError)
            t = value.type
            local = self.new_local(name, t)
            self.emit(ir.DeclLocal(self.loc(node), local))
        elif value.type != local.type:
            rebind = (value.type is not None and local not in self.params and name not in self.ref_params
                      and self.local_block.get(local.id) is self.blocks[-1])
            converted = None
            if isinstance(value, ir.Const) and value.weak and scalars.is_scalar_type(local.type):
                try:
                    converted = convert_const(value, local.type)
                except ConstConversionError:
                    if not rebind:
                        raise
            if converted is not None:
                value = converted
            elif rebind:
                # a value of another type in the block that declared the variable (no branch or loop in between):
                # the name means a new variable from here on, as in Python
                local = self.new_local(name, value.type, cname=f"{name}_{self.next_id + 1}")
                self.emit(ir.DeclLocal(self.loc(node), local))
            else:
                raise self.err(
                    f"variable '{name}' has type {type_str(local.type)} but is assigned a {type_str(value.type)}",
                    node, f"inside a branch or loop, a variable declared outside it keeps its type; convert "
                    f"explicitly, e.g. {type_str(local.type)}(...), or use a new name", CodegenTypeError)
        self.emit(ir.StoreLocal(self.loc(node), local, value))

    def adjoint_lvalue(self, target: ast.expr) -> _LValue | None:
        """Where ``wp.adjoint[p]`` / ``wp.adjoint[p.field...]`` (in a ``@func_grad`` body) points, else ``None``.

        Scalars, vectors and structs name the adjoint variable of parameter ``p`` (passed by reference), or a field
        of it. An array names a view of its gradient buffer (``wp.adjoint[arr][i] += v`` accumulates into
        ``arr.grad``); stores through it run only when the array has a gradient buffer (a condition is pushed on
        ``adjoint_guards`` for the statement to apply, see ``guarded``).
        """
        if not isinstance(target, ast.Subscript) or not self.adjoint_locals or \
                not isinstance(target.value, (ast.Name, ast.Attribute)):
            return None
        base = self.expr(target.value)
        if not (isinstance(base, PyObj) and getattr(base.obj, "_treadle_adjoint_", False)):
            return None
        path, fields = target.slice, []
        while isinstance(path, ast.Attribute):
            fields.append(path.attr)
            path = path.value
        if not isinstance(path, ast.Name) or path.id not in self.adjoint_locals:
            raise self.err("wp.adjoint[...] takes a parameter name of the original function (or a field of one)",
                           target, f"parameters: {', '.join(self.adjoint_locals)}", CodegenError)
        adj = self.adjoint_locals[path.id]
        lv = _LValue(local=adj, type=adj.type)
        for name in reversed(fields):
            t = lv.type
            if not is_struct(t) or name not in t.vars:
                raise self.err(f"wp.adjoint[...]: {type_str(t)} has no field '{name}'", target,
                               cls=CodegenTypeError)
            lv = lv.then(("field", name), normalize_annotation(t.vars[name]))
        if isinstance(lv.type, ArrayT):
            grad = self.call_builtin(REGISTRY.builtins["_grad_array"], [self.value(target.slice)], target)
            self.adjoint_guards.append(self.call_builtin(REGISTRY.builtins["_has_data"], [grad], target))
            view = _LValue(array=grad, type=lv.type)
            view.is_view = True
            return view
        return lv

    def guarded(self, mark: int, node: ast.AST, fn: Callable[[], Any]) -> None:
        """Run ``fn`` (which emits a store) under the conditions pushed on ``adjoint_guards`` since ``mark``."""
        guards = self.adjoint_guards[mark:]
        del self.adjoint_guards[mark:]
        if not guards:
            fn()
            return
        block = ir.Block()
        self.lower_body_into(block, fn)
        for cond in reversed(guards):
            outer = ir.Block()
            outer.stmts.append(ir.If(self.loc(node), cond, block, ir.Block()))
            block = outer
        self.blocks[-1].stmts.extend(block.stmts)

    def assign_component(self, target: ast.expr, v: Any, node: ast.AST) -> None:
        """``a[i] = v``, ``v.x = s``, ``s.field.x = s``, ``m[i, j] = s``, ``arr[i].x = s``."""
        tile_el = self.tile_element_target(target)
        if tile_el is not None:  # t[i, j] = v on a tile variable
            self.assign_tile_element(target, tile_el[0], tile_el[1], v, node)  # type: ignore[arg-type]
            return
        mark = len(self.adjoint_guards)
        lv = self.resolve_lvalue(target)
        self.guarded(mark, node, lambda: self.store_lvalue(lv, v, node))

    def resolve_lvalue(self, target: ast.expr) -> _LValue:
        """Evaluate the parts of an assignment target once (indices included) and describe where it points."""
        adj = self.adjoint_lvalue(target)
        if adj is not None:
            return adj
        if isinstance(target, ast.Name):
            local = self.locals.get(target.id)
            if local is None:
                raise self.err(f"cannot assign to a component of '{target.id}': it is not a kernel variable",
                               target, "assign the value to a variable first", CodegenTypeError)
            return _LValue(local=local, type=local.type)
        if isinstance(target, ast.Attribute):
            lv = self.resolve_lvalue(target.value)
            t = lv.type
            if isinstance(t, ArrayT):
                raise self.err(f"'{target.attr}' of an array is read-only in kernels", target,
                               "arrays cannot be resized or re-described inside a kernel; allocate an array of "
                               "the right shape before the launch and assign to its elements (a[i] = ...)",
                               CodegenTypeError)
            if is_struct(t):
                if target.attr not in t.vars:
                    raise self.err(f"struct '{type_str(t)}' has no field '{target.attr}'", target,
                                   f"fields are: {', '.join(t.vars)}", CodegenTypeError)
                return lv.then(("field", target.attr), normalize_annotation(t.vars[target.attr]))
            i = self.component_index(t, target.attr, target)
            if isinstance(i, tuple):  # transform .p / .q: read and written through the transform builtins
                getter = "transform_get_translation" if target.attr == "p" else "transform_get_rotation"
                part_t = REGISTRY.builtins[getter].resolve([t]).ret
                return lv.then(("tf", target.attr), part_t)
            return lv.then(("index", [ir.Const(i, scalars.int32)]), scalar_of(t))
        if isinstance(target, ast.Subscript):
            lv = self.resolve_lvalue(target.value)
            t = lv.type
            if isinstance(t, ArrayT):
                arr = self.load_lvalue(lv, target)
                idx = self.index_operands(target.slice)
                if 0 < len(idx) < t.ndim:  # c[i][j] = ...: c[i] is a view, the base of the next subscript
                    view = _LValue(array=self.subscript_value(arr, idx, target), type=None)
                    view.type = view.array.type
                    view.is_view = True
                    return view
                if len(idx) != t.ndim:
                    raise self.err(f"too many or too few indices ({len(idx)}) for a {t.ndim}-d array", target,
                                   f"index all {t.ndim} dimension(s): a[i{', j' * (t.ndim - 1)}] = ...",
                                   CodegenTypeError)
                return _LValue(array=arr, indices=idx, type=t.dtype)
            if not is_composite(t):
                raise self.err(f"a value of type {type_str(t)} has no components to assign", target,
                               cls=CodegenTypeError)
            if is_vector_like(t) and isinstance(target.slice, ast.Slice):  # v[a:b:c] = w (constant slice)
                from ..types.vector import vector

                pos = self.slice_positions(self.slice_spec(target.slice), t._length_, target)
                return lv.then(("slice", pos), vector(len(pos), scalar_of(t)))
            if is_matrix(t) and any(isinstance(n, ast.Slice) for n in _index_nodes(target.slice)):
                # m[a:b] = w, m[a:b, c] = v, m[a:b, c:d] += w ...: constant slices, component by component
                mpos, rt = self.matrix_slice(t, self.index_operands(target.slice, allow_slices=True), target)
                return lv.then(("mslice", mpos), rt)
            idx = self.index_operands(target.slice)
            for i, n in zip(idx, t._shape_):
                self.check_const_index(i, n, target)
            if getattr(t, "_wp_generic_type_str_", None) == "mat_t" and len(idx) == 1:
                comp = t._wp_row_type_
            elif len(idx) == len(t._shape_):
                comp = scalar_of(t)
            else:
                raise self.err(f"wrong number of indices for {type_str(t)}", target, cls=CodegenTypeError)
            return lv.then(("index", idx), comp)
        raise self.err(f"cannot assign to a part of this {type(target).__name__} expression: its result is a "
                       "temporary, read-only value", target, "store the value in a variable first, then assign to "
                       "the variable's component (v = ...; v.x = ...)", UnsupportedConstructError)

    def load_lvalue(self, lv: _LValue, node: ast.AST, upto: int | None = None, update: bool = False) -> Any:
        """The current value at ``lv`` (or at its first ``upto`` steps); ``update``: see ``ir.ArrayLoad``."""
        loc = self.loc(node)
        if lv.is_view:
            return lv.array
        if lv.local is not None:
            cur: Any = self.new_value(lv.local.type, lv.local.name)
            self.emit(ir.LoadLocal(loc, cur, lv.local))
        else:
            cur = self.new_value(lv.array.type.dtype)
            self.emit(ir.ArrayLoad(loc, cur, lv.array, list(lv.indices), update=update))
        steps = lv.steps if upto is None else lv.steps[:upto]
        for (kind, what), t in zip(steps, lv.types):
            if kind == "tf":
                getter = "transform_get_translation" if what == "p" else "transform_get_rotation"
                cur = self.call_builtin(REGISTRY.builtins[getter], [cur], node)
                continue
            if kind == "slice":
                cur = self.gather_components(cur, what, node)
                continue
            if kind == "mslice":
                cur = self.gather_matrix(cur, what, t, node)
                continue
            nxt = self.new_value(t)
            if kind == "field":
                self.emit(ir.Extract(loc, nxt, cur, [], field=what))
            else:
                self.emit(ir.Extract(loc, nxt, cur, list(what)))
            cur = nxt
        return cur

    def store_lvalue(self, lv: _LValue, v: Any, node: ast.AST) -> None:
        """Write ``v`` at ``lv``: components are inserted into their containers back up to the root."""
        loc = self.loc(node)
        if lv.is_view:
            raise self.err("cannot assign to a whole array view", node, "index every dimension: c[i, j] = ...",
                           CodegenTypeError)
        v = self.coerce(v, lv.type, node, "the assigned value")
        for k in range(len(lv.steps) - 1, -1, -1):
            container = self.load_lvalue(lv, node, upto=k, update=True)
            kind, what = lv.steps[k]
            if kind == "tf":
                setter = "transform_set_translation_copy" if what == "p" else "transform_set_rotation_copy"
                v = self.call_builtin(REGISTRY.builtins[setter], [container, v], node)
                continue
            if kind == "slice":  # insert the components of v one by one
                for j, pos in enumerate(what):
                    comp = self.new_value(scalar_of(v.type))
                    self.emit(ir.Extract(loc, comp, v, [ir.Const(j, scalars.int32)]))
                    nxt = self.new_value(container.type)
                    self.emit(ir.Insert(loc, nxt, container, [ir.Const(pos, scalars.int32)], comp))
                    container = nxt
                v = container
                continue
            if kind == "mslice":  # insert the components of v (row-major) at their (row, column) positions
                ncols = v.type._shape_[1] if is_matrix(v.type) else 1
                for j, (row, col) in enumerate(what):
                    comp = self.new_value(scalar_of(v.type))
                    at = [j // ncols, j % ncols] if is_matrix(v.type) else [j]
                    self.emit(ir.Extract(loc, comp, v, [ir.Const(a, scalars.int32) for a in at]))
                    nxt = self.new_value(container.type)
                    self.emit(ir.Insert(loc, nxt, container, [ir.Const(row, scalars.int32),
                                                              ir.Const(col, scalars.int32)], comp))
                    container = nxt
                v = container
                continue
            r = self.new_value(container.type)
            if kind == "field":
                self.emit(ir.Insert(loc, r, container, [], v, field=what))
            else:
                self.emit(ir.Insert(loc, r, container, list(what), v))
            v = r
        if lv.local is not None:
            self.emit(ir.StoreLocal(loc, lv.local, v))
        else:
            self.emit(ir.ArrayStore(loc, lv.array, list(lv.indices), v))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        from ..builtins import REGISTRY
        from ..builtins.operators import BINOP_NAMES

        op = BINOP_NAMES[type(node.op).__name__]
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.value(target)
            rhs = self.value(node.value)
            self.assign(target, self.call_builtin(REGISTRY.builtins[op], [cur, rhs], node), node)
            self.tile_updated(target.id, node)  # type: ignore[attr-defined]
            return
        tile_el = self.tile_element_target(target)
        if tile_el is not None:  # t[i, j] += v on a tile variable
            var = ast.copy_location(ast.Name(id=tile_el[0].name, ctx=ast.Load()), target)
            cur = self.tile_subscript_parts(self.value(var), tile_el[1], node)  # type: ignore[attr-defined]
            new = self.call_builtin(REGISTRY.builtins[op], [cur, self.value(node.value)], node)
            self.assign_tile_element(target, tile_el[0], tile_el[1], new, node)  # type: ignore[arg-type]
            return
        mark = len(self.adjoint_guards)
        lv = self.resolve_lvalue(target)  # indices are evaluated exactly once

        def update() -> None:
            atomic = REGISTRY.builtins[op].atomic
            if lv.array is not None and not lv.steps and atomic in ("add", "sub"):
                # arr[i] += v is an atomic add, as in the reference (safe under parallel launches).
                v = self.coerce(self.value(node.value), lv.type, node, "the added value")
                self.emit(ir.ArrayAtomic(self.loc(node), None, atomic, lv.array, list(lv.indices), v))
                return
            if lv.array is not None and not lv.steps and atomic and _atomic_int(lv.type):
                # arr[i] &= v (|=, ^=) on 32/64-bit integer elements is atomic too, as in the reference.
                v = self.coerce(self.value(node.value), lv.type, node, "the operand")
                self.emit(ir.ArrayAtomic(self.loc(node), None, atomic, lv.array, list(lv.indices), v))
                return
            cur = self.load_lvalue(lv, node)
            rhs = self.value(node.value)
            self.store_lvalue(lv, self.call_builtin(REGISTRY.builtins[op], [cur, rhs], node), node)

        self.guarded(mark, node, update)

    def stmt_Return(self, node: ast.Return) -> None:
        if self.is_kernel:
            if node.value is not None:
                raise self.err("kernels cannot return values", node,
                               "write results to output arguments (a bare `return` ends the thread)", CodegenTypeError)
            self.emit(ir.Return(self.loc(node), None))
            return
        if node.value is None:
            val = None
            t = None
        else:
            r = self.expr(node.value)
            val = self.as_operand(r, node)
            t = val.type
        if self.infer_return and not self.return_seen:
            if isinstance(val, ir.Const) and val.weak:
                val = ir.Const(val.value, val.type)
            self.return_type = t
            self.return_seen = True
        elif t != self.return_type:
            if isinstance(val, ir.Const) and val.weak and scalars.is_scalar_type(self.return_type):
                val = convert_const(val, self.return_type)
            elif isinstance(self.return_type, TupleT) and isinstance(t, TupleT):
                raise self.err(f"returned {type_str(t)} but the function returns {type_str(self.return_type)}",
                               node, cls=CodegenTypeError)
            else:
                raise self.err(f"returned a {type_str(t)} but the function returns {type_str(self.return_type)}",
                               node, "return values of one type on every path (convert explicitly)",
                               CodegenTypeError)
        self.return_seen = True
        self.emit_return(val, node)

    # Control flow -----------------------------------------------------------------------------------------------
    def stmt_If(self, node: ast.If) -> None:
        cond = self.truth(self.value(node.test), node.test)
        if isinstance(cond, ir.Const):  # constant condition: lower only the branch taken
            self.block(node.body if cond.value else node.orelse)
            return
        then, orelse = ir.Block(), ir.Block()
        self.lower_body_into(then, lambda: self.block(node.body))
        self.lower_body_into(orelse, lambda: self.block(node.orelse))
        self.emit(ir.If(self.loc(node), cond, then, orelse))

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.err("for ... else is not supported in kernels", node, cls=UnsupportedConstructError)
        it = node.iter
        if not isinstance(node.target, ast.Name):
            raise self.err("the loop variable must be a single name", node.target, cls=UnsupportedConstructError)
        reverse = False
        if isinstance(it, ast.Call) and isinstance(self.expr(it.func), PyObj):
            fobj = self.expr(it.func).obj
            import builtins as py

            if fobj is py.reversed and len(it.args) == 1 and isinstance(it.args[0], ast.Call):
                reverse = True
                it = it.args[0]
                fobj = self.expr(it.func).obj
            if fobj is py.range:
                self.lower_range_loop(node, it, reverse)
                return
        seq = self.value(it)
        if is_composite(seq.type):
            self.lower_component_loop(node, seq)
            return
        next_name = _query_next_builtin(seq.type)
        if next_name is not None:
            self.lower_query_loop(node, seq, next_name)
            return
        raise self.err("kernels can only loop over range(...) or the components of a vector/matrix", it,
                       "use 'for i in range(n):'", UnsupportedConstructError)

    def lower_range_loop(self, node: ast.For, call: ast.Call, reverse: bool) -> None:
        args = [self.value(a) for a in call.args]
        if not 1 <= len(args) <= 3:
            raise self.err("range() takes 1 to 3 arguments", call, cls=CodegenTypeError)
        for a, n in zip(args, call.args):
            if not is_int(a.type):
                raise self.err(f"range() arguments must be integers, got {type_str(a.type)}", n,
                               "convert with int(...)", CodegenTypeError)
        args = self.adapt_weak(args)
        strong = [a.type for a in args if not (isinstance(a, ir.Const) and a.weak)]
        it_t = strong[0] if strong else scalars.int32
        args = [convert_const(a, it_t) if isinstance(a, ir.Const) else a for a in args]
        if any(a.type != it_t for a in args):
            raise self.err("range() arguments must all have the same integer type", call,
                           "convert them with int(...)", CodegenTypeError)
        start: Any
        stop: Any
        step: Any
        if len(args) == 1:
            start, stop, step = ir.Const(0, it_t), args[0], ir.Const(1, it_t)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], ir.Const(1, it_t)
        else:
            start, stop, step = args
        if isinstance(step, ir.Const) and step.value == 0:
            raise self.err("range() step must not be zero", call, cls=CodegenTypeError)
        if reverse:
            if not isinstance(step, ir.Const):
                raise self.err("reversed(range(...)) needs a constant step", call, cls=UnsupportedConstructError)
            # reversed(range(a, b, s)) == range(last, a - sign(s), -s) with last = a + ((b - a - sign) // s) * s
            start, stop, step = self.reversed_range(start, stop, step, call)
        name = node.target.id  # type: ignore[attr-defined]
        var = self.locals.get(name)
        if var is None:
            var = self.new_local(name, it_t)
            self.emit(ir.DeclLocal(self.loc(node), var))
        elif var.type != it_t:
            raise self.err(f"loop variable '{name}' already has type {type_str(var.type)}", node.target,
                           cls=CodegenTypeError)
        static_trips = None
        if all(isinstance(x, ir.Const) for x in (start, stop, step)):
            static_trips = len(range(start.value, stop.value, step.value))  # type: ignore[union-attr]
            if (static_trips <= self.ctx.max_unroll or _static_uses(node.body, name)) and self.unrollable(node, name):
                self.unroll(node, var, range(start.value, stop.value, step.value), it_t)
                return
        body = ir.Block()
        self.loop_depth += 1
        self.lower_body_into(body, lambda: self.block(node.body))
        self.loop_depth -= 1
        self.emit(ir.ForRange(self.loc(node), var, start, stop, step, body))

    def unrollable(self, node: ast.For, name: str) -> bool:
        """Constant-trip loops are unrolled unless they jump or assign their own variable."""
        for n in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
                return False
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                return False
        return True

    def unroll(self, node: ast.For, var: ir.Local, values: range, it_t: Any) -> None:
        """Lower the body once per iteration with the loop variable bound to a constant (``wp.static(i)`` works)."""
        name = var.name
        outer = self.const_bindings.get(name)
        self.loop_depth += 1
        try:
            for v in values:
                c = ir.Const(v, it_t)
                self.emit(ir.StoreLocal(self.loc(node), var, c))
                self.const_bindings[name] = c
                self.block(node.body)
        finally:
            self.loop_depth -= 1
            if isinstance(outer, PyObj):
                self.const_bindings[name] = outer
            else:
                self.const_bindings.pop(name, None)
        if len(values):  # after the loop the variable keeps its last value (as in Python), also for wp.static()
            self.static_locals[name] = values[-1]

    def reversed_range(self, start: Any, stop: Any, step: Any, node: ast.AST) -> tuple[Any, Any, Any]:
        from ..builtins import REGISTRY

        s = step.value
        sign = 1 if s > 0 else -1
        t = start.type
        sub, add, mul, div = (REGISTRY.builtins[n] for n in ("sub", "add", "mul", "div"))
        span = self.call_builtin(sub, [self.call_builtin(sub, [stop, start], node), ir.Const(sign, t)], node)
        count = self.call_builtin(div, [span, ir.Const(s, t)], node)
        last = self.call_builtin(add, [start, self.call_builtin(mul, [count, ir.Const(s, t)], node)], node)
        new_stop = self.call_builtin(sub, [start, ir.Const(sign, t)], node)
        # An empty range must stay empty: if span has the wrong sign, start from the stop value.
        from ..builtins.operators import CMPOP_NAMES

        empty = self.call_builtin(REGISTRY.builtins[CMPOP_NAMES["LtE" if s > 0 else "GtE"]], [stop, start], node)
        sel = REGISTRY.builtins["select"]
        last = self.call_builtin(sel, [empty, last, new_stop], node)
        return last, new_stop, ir.Const(-s, t)

    def lower_component_loop(self, node: ast.For, seq: Any) -> None:
        t = seq.type
        n = t._shape_[0]
        name = node.target.id  # type: ignore[attr-defined]
        idx = self.temp_local(scalars.int32)
        elem_t = t._wp_row_type_ if getattr(t, "_wp_generic_type_str_", None) == "mat_t" else scalar_of(t)
        var = self.locals.get(name) or self.new_local(name, elem_t)
        if var.type != elem_t:
            raise self.err(f"loop variable '{name}' already has type {type_str(var.type)}", node.target,
                           cls=CodegenTypeError)
        self.emit(ir.DeclLocal(self.loc(node), var))
        body = ir.Block()

        def lower() -> None:
            i = self.new_value(scalars.int32)
            self.emit(ir.LoadLocal(self.loc(node), i, idx))
            e = self.new_value(elem_t)
            self.emit(ir.Extract(self.loc(node), e, seq, [i]))
            self.emit(ir.StoreLocal(self.loc(node), var, e))
            self.block(node.body)

        self.loop_depth += 1
        self.lower_body_into(body, lower)
        self.loop_depth -= 1
        self.emit(ir.ForRange(self.loc(node), idx, ir.Const(0, scalars.int32), ir.Const(n, scalars.int32),
                              ir.Const(1, scalars.int32), body))

    def lower_query_loop(self, node: ast.For, query: Any, next_name: str) -> None:
        """``for index in wp.hash_grid_query(...)``: ``while *_query_next(query, index): body``."""
        name = node.target.id  # type: ignore[attr-defined]
        state = self.temp_local(query.type)
        self.emit(ir.StoreLocal(self.loc(node), state, query))
        var = self.locals.get(name)
        if var is None:
            var = self.new_local(name, scalars.int32)
            self.emit(ir.DeclLocal(self.loc(node), var))
        b = REGISTRY.builtins[next_name]
        cond_block = ir.Block()
        conds: list[Any] = []
        self.lower_body_into(cond_block, lambda: conds.append(
            self.call_builtin(b, [ir.LocalRef(state), ir.LocalRef(var)], node)))
        body = ir.Block()
        self.loop_depth += 1
        self.lower_body_into(body, lambda: self.block(node.body))
        self.loop_depth -= 1
        self.emit(ir.While(self.loc(node), cond_block, conds[0], body))

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.err("while ... else is not supported in kernels", node, cls=UnsupportedConstructError)
        cond_block = ir.Block()
        conds: list[Any] = []
        self.lower_body_into(cond_block, lambda: conds.append(self.truth(self.value(node.test), node.test)))
        body = ir.Block()
        self.loop_depth += 1
        self.lower_body_into(body, lambda: self.block(node.body))
        self.loop_depth -= 1
        self.emit(ir.While(self.loc(node), cond_block, conds[0], body))

    def stmt_Break(self, node: ast.Break) -> None:
        if self.loop_depth == 0:
            raise self.err("'break' outside a loop", node)
        self.emit(ir.Break(self.loc(node)))

    def stmt_Continue(self, node: ast.Continue) -> None:
        if self.loop_depth == 0:
            raise self.err("'continue' outside a loop", node)
        self.emit(ir.Continue(self.loc(node)))


def _query_next_builtin(t: Any) -> str | None:
    """The ``*_next`` builtin that advances a query state type, for ``for i in query`` loops."""
    name = getattr(t, "next_builtin", None)  # builtins/geometry_types.py: QueryType
    return str(name) if name else None


def _as_load(target: ast.expr) -> ast.expr:
    """A copy of an assignment target usable as an expression."""
    import copy

    node = copy.deepcopy(target)
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()  # type: ignore[attr-defined]
    return node


def _atomic_int(t: Any) -> bool:
    """Element types whose bitwise augmented assignments are atomic: 32/64-bit integers, also in vectors/matrices."""
    st = scalar_of(t)
    return (t is st or is_composite(t)) and is_int(st) and st._size_ >= 4


def _static_uses(stmts: list[ast.stmt], name: str) -> bool:
    """True when a ``wp.static(...)`` expression in ``stmts`` reads ``name`` (its loop must then be unrolled)."""
    for n in ast.walk(ast.Module(body=stmts, type_ignores=[])):
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Attribute) and n.func.attr == "static"
                                        or isinstance(n.func, ast.Name) and n.func.id == "static"):
            if any(isinstance(m, ast.Name) and m.id == name for a in n.args for m in ast.walk(a)):
                return True
    return False


def _index_nodes(node: ast.expr) -> list[ast.expr]:
    """The index expressions of a subscript (``m[a, b]`` -> [a, b])."""
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _ends(stmts: list[ast.stmt]) -> bool:
    """True if a block always leaves (return/break/continue as its last statement)."""
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Break, ast.Continue))


def lower_function(src: FuncSource, param_types: list[Any], *, is_kernel: bool, ctx: LowerContext,
                   return_type: Any = None, infer_return: bool = False,
                   adjoint_of: list[str] | None = None,
                   ref_params: list[str] | None = None) -> tuple[ir.FuncIR, int]:
    """Lower ``src`` for the given parameter types; returns the IR and the launch dimensionality used by tid()."""
    low = Lowerer(src, param_types, is_kernel, ctx, return_type, infer_return, adjoint_of, ref_params)
    f = low.lower()
    ndim = getattr(low, "launch_ndim", 1)
    f.launch_ndim = ndim
    return f, ndim


__all__ = ["LowerContext", "Lowerer", "lower_function", "is_int", "scalar_of"]
