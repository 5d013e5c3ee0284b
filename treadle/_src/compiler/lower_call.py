"""Lowering of calls: builtins, user ``@func`` s, type constructors and conversions (a mixin of the Lowerer)."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from ..builtins import REGISTRY
from ..builtins.registry import NOT_CONST, Builtin, Lowering, NoMatch, Overload
from ..core import pyast
from ..core.errors import CodegenError, CodegenTypeError, CodegenValueError, UnsupportedConstructError
from ..types import scalars
from ..types.typesys import (
    ArrayT,
    TileStackT,
    TupleT,
    is_callable_object,
    is_composite,
    is_float,
    is_int,
    is_matrix,
    is_struct,
    normalize_annotation,
    scalar_of,
    type_str,
)
from . import ir
from .lower_expr import PY_BUILTIN_MAP, ExprMixin, PyObj, TupleVal, convert_const
from .lower_tile import TileMixin
from .source import MISSING as _MISSING


def _is_user_function(obj: Any) -> bool:
    return getattr(obj, "_treadle_function_", False)


def _is_kernel(obj: Any) -> bool:
    return getattr(obj, "_treadle_kernel_", False)


class CallMixin(TileMixin, ExprMixin):
    """``expr_Call`` and everything it dispatches to."""

    launch_tid_used: bool
    is_kernel: bool
    locals: dict[str, Any]
    const_bindings: dict[str, Any]

    def resolve_function_call(self, fn: Any, raw: list[Any], kwargs: dict[str, Any],
                              node: ast.AST) -> tuple[Any, list[Any]]:
        """The ``@func`` instance a call selects and its ordered operands (the frontend's ``Lowerer`` resolves it)."""
        raise NotImplementedError

    def expr_Call(self, node: ast.Call) -> Any:
        if any(isinstance(a, ast.Starred) for a in node.args):
            node = self.expand_starred(node)
        callee = self.expr(node.func)
        if not isinstance(callee, PyObj):
            raise self.err("this value is not callable", node.func, cls=CodegenTypeError)
        obj = callee.obj
        builtin_decl = getattr(obj, "_treadle_builtin_", None)
        if isinstance(obj, Builtin):
            builtin_decl = obj
        if builtin_decl is None and obj in PY_BUILTIN_MAP.keys() if _hashable(obj) else False:
            builtin_decl = REGISTRY.get(PY_BUILTIN_MAP[obj])
        if builtin_decl is not None:
            return self.call_declared(builtin_decl, node)
        if _is_user_function(obj):
            return self.call_user(obj, node)
        if _is_kernel(obj):
            raise self.err(f"kernel '{obj.key}' cannot be called from kernel code", node,
                           "turn the shared code into a @wp.func and call that", CodegenTypeError)
        if obj is builtins.type and len(node.args) == 1 and not node.keywords:  # type(x): its kernel type
            v = self.as_operand(self.expr(node.args[0]), node)
            return PyObj(v.type)
        if obj is builtins.range:
            raise self.err("range() can only be used as the iterable of a for loop", node,
                           cls=UnsupportedConstructError)
        if obj in (builtins.int, builtins.float, builtins.bool) or isinstance(obj, type) and (
            scalars.is_scalar_type(obj) or is_composite(obj)
        ):
            return self.construct(normalize_annotation(obj), node)
        if is_struct(obj):
            return self.construct_struct(obj, node)
        if getattr(obj, "_treadle_type_factory_", None):
            return self.call_type_factory(obj, node)
        if getattr(obj, "_treadle_static_", False):
            return self.eval_static(node)
        if getattr(obj, "_treadle_local_array_", False):
            return self.local_array(node)
        if _is_array_class(obj):
            return self.array_from_ptr(node)
        if getattr(obj, "_treadle_compile_time_", False):  # e.g. wp.grad(f): evaluated when the kernel is built
            vals = [self.expr(a) for a in node.args]
            if not all(isinstance(v, PyObj) for v in vals) or node.keywords:
                raise self.err(f"'{obj.__name__}' takes compile-time arguments (functions or types)", node,
                               cls=CodegenTypeError)
            return PyObj(obj(*[v.obj for v in vals]))
        if getattr(obj, "_treadle_grad_of_", None) is not None:
            return self.call_grad(obj._treadle_grad_of_, node)
        name = getattr(obj, "__name__", type(obj).__name__)
        for a in node.args:  # report unsupported constructs in the arguments first
            self.expr(a)
        if callable(obj):
            raise self.err(f"'{name}' is a Python function, not a @wp.func; kernels cannot call it", node,
                           f"decorate '{name}' with @wp.func (and annotate its parameters)",
                           UnsupportedConstructError)
        raise self.err(f"'{name}' is not callable", node, cls=CodegenTypeError)

    def call_grad(self, target: Any, node: ast.Call) -> Any:
        """``wp.grad(f)(x, y)``: gradients of the scalar result of ``f`` w.r.t. each argument (forward-only)."""
        from ..types.typesys import is_float

        vals = [self._tid_value(self.expr(a)) for a in node.args]
        # functions passed to a function parameter stay compile-time arguments (wp.grad(apply)(f, x))
        raw: list[Any] = [v if isinstance(v, PyObj) and is_callable_object(v.obj) else self.as_operand(v, node)
                          for v in vals]
        b = target if isinstance(target, Builtin) else getattr(target, "_treadle_builtin_", None)
        if b is not None:
            try:
                ov = b.resolve([a.type for a in raw])
            except NoMatch:
                raw = self.adapt_weak(raw)
                ov = b.resolve([a.type for a in raw])
            ret, tgt, args = ov.ret, ov, raw
        elif getattr(target, "_treadle_function_", False):
            inst, args = self.resolve_function_call(target, raw, {}, node)
            self.ctx.add_dependency(inst)
            if inst not in self.ctx.grad_targets:
                self.ctx.grad_targets.append(inst)
            ret, tgt = inst.return_type, inst
        else:
            raise self.err("wp.grad() takes a @wp.func or a builtin", node, cls=CodegenTypeError)
        if not (is_float(ret) and all(is_float(scalar_of(a.type)) or is_composite(a.type) for a in args)):
            raise self.err(f"wp.grad() needs a function with float arguments and a float scalar result, got "
                           f"{type_str(ret)}", node, "differentiate a scalar-valued function", CodegenTypeError)
        t = args[0].type if len(args) == 1 else TupleT(tuple(a.type for a in args))
        r = self.new_value(t, "grad")
        self.emit(ir.CallGrad(self.src.loc(node), r, tgt, list(args)))
        if isinstance(t, TupleT):
            return self.unpack_tuple_value(r, node)
        return r

    def local_array(self, node: ast.Call) -> Any:
        """``wp.zeros(shape, dtype)`` in a kernel: a zero-initialised thread-private array of constant shape."""
        raw = self.call_args(node, ["shape", "dtype"])
        if not raw:
            raise self.err("wp.zeros() in a kernel needs a shape", node, "e.g. wp.zeros(shape=(4,), dtype=float)",
                           CodegenTypeError)
        shape_arg = raw[0]
        items = shape_arg.items if isinstance(shape_arg, TupleVal) else [shape_arg]
        shape = []
        for it in items:
            if not (isinstance(it, ir.Const) and isinstance(it.value, int) and it.value >= 0):
                raise self.err("the shape of a kernel-local array must be made of constant integers", node,
                               "use literals, wp.constant values or wp.static(...)", CodegenTypeError)
            shape.append(int(it.value))
        if not 1 <= len(shape) <= 4:
            raise self.err("kernel-local arrays have 1 to 4 dimensions", node, cls=CodegenTypeError)
        dtype = scalars.float32
        if len(raw) > 1:
            if not isinstance(raw[1], PyObj):
                raise self.err("dtype must be a type", node, cls=CodegenTypeError)
            dtype = normalize_annotation(raw[1].obj)
        r = self.new_value(ArrayT(dtype, len(shape)), "local")
        self.emit(ir.LocalArray(self.src.loc(node), r, tuple(shape)))
        return r

    def eval_static(self, node: ast.Call) -> Any:
        """``wp.static(expr)``: evaluate ``expr`` in Python when the kernel is built.

        The expression sees the function's globals and closure, and the variables of enclosing unrolled loops.
        """
        if len(node.args) != 1 or node.keywords:
            raise self.err("wp.static() takes exactly one expression", node, cls=CodegenTypeError)
        scope = dict(self.src.globals)
        scope.update({k: v for k, v in self.src.closure.items() if v is not _MISSING})
        for name, local in self.locals.items():  # vectors/matrices: a zero value of their type (len(v), v.dtype)
            if is_composite(local.type):
                scope[name] = local.type()
            elif isinstance(local.type, TupleT):  # tuples: as many items (len(t)), zero values where it can
                scope[name] = tuple(t() if is_composite(t) else None for t in local.type.types)
        scope.update(self.static_locals)  # type: ignore[attr-defined]
        for k, c in self.const_bindings.items():  # type: ignore[attr-defined]
            scope[k] = c.obj if isinstance(c, PyObj) else c.value
        code = pyast.compile_ast(ast.Expression(body=node.args[0]), self.src.file, "eval")
        try:
            value = eval(code, scope)  # noqa: S307 - the user's own compile-time expression
        except Exception as e:
            raise self.err(f"wp.static() expression failed when the kernel was built: {type(e).__name__}: {e}",
                           node.args[0], "wp.static() can only use module globals, closure values and the "
                           "variables of constant-range loops", CodegenError) from None
        where = _array_inside(value, type(value).__name__)
        if where is not None:
            what = "an array" if "." not in where else f"a struct whose field {where} is an array"
            raise self.err(f"wp.static() returned an unsupported value, {what}: arrays cannot be created inside "
                           "kernels", node.args[0],
                           "pass the array to the kernel as an argument", CodegenError)
        return self.wrap_python(value, node)

    # Builtins --------------------------------------------------------------------------------------------------
    def call_args(self, node: ast.Call, names: list[str] | None = None) -> list[Any]:
        """Positional arguments, then keyword arguments at their signature positions.

        A keyword naming a parameter that the positional arguments already reach (a builtin whose coordinates may
        be one vector or several scalars: ``texture_sample(t, u, v, dtype=float, lod=0.0)``) comes after them,
        in the order written; its rule accepts those keywords in either order.
        """
        args = [self._tid_value(self.expr(a)) for a in node.args]
        if node.keywords:
            if names is None:
                raise self.err("keyword arguments are not supported for this call", node, cls=CodegenTypeError)
            by_name = {k.arg: self.expr(k.value) for k in node.keywords}
            n_positional = len(args)
            for n in names[len(args):]:
                if n in by_name:
                    args.append(by_name.pop(n))
                else:
                    break
            if by_name and all(k in names and names.index(k) < n_positional for k in by_name):
                args.extend(by_name.values())
                by_name = {}
            if by_name:
                raise self.err(f"unexpected keyword argument(s): {', '.join(str(k) for k in by_name)}", node, cls=CodegenTypeError)
        return args

    def expand_starred(self, node: ast.Call) -> ast.Call:
        """``f(a, *v, b)``: the call with ``*v`` replaced by one argument per item of ``v``.

        ``v`` is a vector, quaternion or other vector-like value (its components), a matrix (its rows), a tuple, or
        a slice of an array with constant bounds (``*arr[:3]``: ``arr[0], arr[1], arr[2]``). Each item is stored in
        a hidden variable that the rewritten call names, so the callee sees plain arguments.
        """
        args: list[ast.expr] = []
        for a in node.args:
            if not isinstance(a, ast.Starred):
                args.append(a)
                continue
            for item in self.starred_items(a.value):
                name = f"_star{self.next_id + 1}"
                local = self.new_local(name, item.type)
                self.emit(ir.DeclLocal(self.src.loc(a), local))
                self.emit(ir.StoreLocal(self.src.loc(a), local, item))
                args.append(ast.copy_location(ast.Name(id=name, ctx=ast.Load()), a))
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords), node)

    def starred_items(self, expr: ast.expr) -> list[Any]:
        """The operands ``*expr`` stands for in a call (see :meth:`expand_starred`)."""
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Slice):
            base = self.expr(expr.value)  # lowered once: an array slice unpacks element by element
            arr = None if isinstance(base, (PyObj, TupleVal)) else self.as_operand(base, expr)
            if arr is not None and isinstance(arr.type, ArrayT):
                return self.starred_array_slice(arr, expr.slice, expr)
            v = self.subscript_of(base if arr is None else arr, expr)
        else:
            v = self.expr(expr)
        if isinstance(v, TupleVal):
            return [self.as_operand(x, expr) for x in v.items]
        op = None if isinstance(v, PyObj) else self.as_operand(v, expr)
        t: Any = getattr(op, "type", None)
        if isinstance(t, TupleT):
            count = len(t.types)
        elif t is not None and is_composite(t):
            count = int(t._shape_[0])  # components of a vector, rows of a matrix
        else:
            raise self.err("Starred expressions are only supported for vectors, matrices, quaternions, tuples and "
                           f"array slices with constant bounds, got {type_str(t) if t is not None else 'a Python value'}",
                           expr, cls=CodegenTypeError)
        return [self.subscript_value(op, [ir.Const(i, scalars.int32)], expr) for i in range(count)]

    def starred_array_slice(self, arr: Any, sl: ast.Slice, node: ast.AST) -> list[Any]:
        """``*arr[start:stop:step]``: the elements, for constant, non-negative bounds and an explicit stop."""
        if sl.upper is None:
            raise self.err("unpacking an array slice requires explicit upper bound (the array's length is known only "
                           "at run time)", node, cls=CodegenValueError)
        bounds: list[int] = []
        for part, default in ((sl.lower, 0), (sl.upper, 0), (sl.step, 1)):
            if part is None:
                bounds.append(default)
                continue
            c = self.expr(part)
            if not isinstance(c, ir.Const) or not isinstance(c.value, (int, np.integer)):
                raise self.err("Slice component must be a compile-time constant integer when an array slice is "
                               "unpacked", part, "write literals or wp.static(...) bounds", CodegenValueError)
            bounds.append(int(c.value))
        start, stop, step = bounds
        if step <= 0:
            raise self.err("the step cannot be negative (or zero) when an array slice is unpacked", node,
                           cls=CodegenValueError)
        if start < 0 or stop < 0:
            raise self.err("slice bounds cannot be negative for arrays when unpacked (the length is known only at "
                           "run time)", node, cls=CodegenValueError)
        return [self.subscript_value(arr, [ir.Const(k, scalars.int32)], node) for k in range(start, stop, step)]

    def array_from_ptr(self, node: ast.Call) -> Any:
        """``wp.array(ptr=p, shape=(n, ...), dtype=T)`` in kernel code: a contiguous view of memory at ``p``."""
        usage = "in kernels, wp.array() takes ptr=, shape= and dtype= (a view of memory the kernel does not own)"
        given = {k.arg: k.value for k in node.keywords}
        if node.args or set(given) - {"ptr", "shape", "dtype"} or not {"ptr", "shape", "dtype"} <= set(given):
            raise self.err("wp.array() in a kernel needs exactly ptr=, shape= and dtype=", node, usage,
                           CodegenTypeError)
        dtype = self.expr(given["dtype"])
        if not isinstance(dtype, PyObj):
            raise self.err("dtype= must be a type known when the kernel is built", given["dtype"], usage,
                           CodegenTypeError)
        ptr = self.as_operand(self.expr(given["ptr"]), given["ptr"])
        shape = self.expr(given["shape"])
        extents = shape.items if isinstance(shape, TupleVal) else [shape]
        ops = [self.as_operand(e, given["shape"]) for e in extents]
        b = REGISTRY.builtins["_array_from_ptr"]
        try:
            ov = b.resolve([ptr.type, None, *[o.type for o in ops]], [NOT_CONST, dtype.obj, *[NOT_CONST] * len(ops)])
        except NoMatch as e:
            raise self.err(f"wp.array(): {e}", node, usage, CodegenTypeError) from None
        r = self.new_value(ov.ret, "view")
        self.emit(ir.Call(self.src.loc(node), r, ov, [ptr, *ops]))
        return r

    def _tid_value(self, a: Any) -> Any:
        if isinstance(a, PyObj) and isinstance(a.obj, _TidRequest):
            return self.as_operand(a, a.obj.node)
        return a

    def call_declared(self, b: Builtin, node: ast.Call) -> Any:
        """A call of a declared builtin: its special lowering (``Builtin.lowering``), else a plain call."""
        if b.lowering is not Lowering.CALL:
            return SPECIAL_LOWERINGS[b.lowering](self, b, node)
        if b.ref_args:
            return self.call_with_refs(b, node)
        raw = self.call_args(node, _param_names(b))
        consts: list[Any] = []
        ops: list[Any] = []
        for a in raw:
            if isinstance(a, PyObj):
                consts.append(a.obj)
                ops.append(ir.Const(0, None))
            else:
                v = self.as_operand(a, node)
                consts.append(v.value if isinstance(v, ir.Const) else NOT_CONST)
                ops.append(v)
        if b.static_args:
            for i in range(min(b.static_args, len(ops))):
                ops[i] = ir.Const(consts[i], None)
            return self.call_builtin(b, ops, node, consts)
        if any(isinstance(a, PyObj) for a in raw):
            return self.call_with_type_args(b, raw, ops, consts, node)
        return self.call_builtin(b, ops, node)

    def call_with_type_args(self, b: Builtin, raw: list[Any], ops: list[Any], consts: list[Any],
                            node: ast.AST) -> Any:
        """A builtin given compile-time objects (``dtype=wp.vec3``) at some positions.

        Only builtins with a ``dtype`` parameter take them: their rule sees each as a constant whose argument type
        is ``None``, and the call passes no runtime value for it.
        """
        if "dtype" not in (_param_names(b) or []):
            bad = next(a for a in raw if isinstance(a, PyObj))
            raise self.err(f"'{b.name}' does not take a {type(bad.obj).__name__} argument", node,
                           f"valid forms: {b.signature}", CodegenTypeError)
        keep = [i for i, a in enumerate(raw) if not isinstance(a, PyObj)]
        return self.call_builtin(b, ops, node, consts, keep=keep)

    def call_with_refs(self, b: Builtin, node: ast.Call) -> Any:
        """A builtin that updates some of its arguments in place: those must be plain variables.

        Besides them, only a compile-time type may be given (``dtype=wp.vec3``, for a builtin with a ``dtype``
        parameter), by keyword at its signature position or positionally.
        """
        names = _param_names(b) or []
        type_args: dict[int, Any] = {}
        for k in node.keywords:
            v = self.expr(k.value) if "dtype" in names else None
            if k.arg not in names or not (isinstance(v, PyObj) and isinstance(v.obj, type)):
                raise self.err(f"'{b.name}' takes positional arguments only (and a dtype= type, where it has one)",
                               node, f"valid forms: {b.signature}", CodegenTypeError)
            type_args[names.index(k.arg)] = v.obj  # type: ignore[union-attr]
        if not node.keywords and self.refs_via_tuple(b, node):
            return None
        ops: list[Any] = []
        for i, a in enumerate(node.args):
            if i in b.ref_args:
                local = self.locals.get(a.id) if isinstance(a, ast.Name) else None  # type: ignore[attr-defined]
                if local is None:
                    raise self.err(f"argument {i + 1} of '{b.name}' must be a variable (it is updated in place)", a,
                                   "assign it to a variable first, e.g. 'v = ...' and pass 'v'", CodegenTypeError)
                ops.append(ir.LocalRef(local))
                continue
            v = self.expr(a)
            if isinstance(v, PyObj) and isinstance(v.obj, type) and "dtype" in names:
                type_args[i] = v.obj
                continue
            ops.append(self.as_operand(v, a))
        if not type_args:
            return self.call_builtin(b, ops, node)
        n = len(ops) + len(type_args)
        if any(i >= n for i in type_args):
            raise self.err(f"'{b.name}': dtype= follows the other arguments", node, f"valid forms: {b.signature}",
                           CodegenTypeError)
        full: list[Any] = []
        consts: list[Any] = []
        rest = iter(ops)
        for i in range(n):
            if i in type_args:
                full.append(ir.Const(0, None))
                consts.append(type_args[i])
            else:
                full.append(next(rest))
                consts.append(NOT_CONST)
        return self.call_builtin(b, full, node, consts, keep=[i for i in range(n) if i not in type_args])

    def refs_via_tuple(self, b: Builtin, node: ast.Call) -> bool:
        """Lower ``svd3(A, U, sigma, V)``-style calls through the builtin's tuple form (``svd3(A)``), if it has one.

        The outputs are then assigned to the variables, so gradients flow through them as they do for
        ``U, sigma, V = svd3(A)``. Returns False when the builtin has no such form.
        """
        n = len(node.args)
        outs = [i for i in b.ref_args if i < n]
        n_in = n - len(outs)
        if not outs or outs != list(range(n_in, n)):
            return False
        targets: list[ir.Local] = []
        for a in node.args[n_in:]:
            local = self.locals.get(a.id) if isinstance(a, ast.Name) else None
            if local is None:
                return False
            targets.append(local)
        ins = [self.value(a) for a in node.args[:n_in]]
        try:
            ov = b.resolve([a.type for a in ins])
        except NoMatch:
            return False
        if not isinstance(ov.ret, TupleT) or list(ov.ret.types) != [t.type for t in targets]:
            return False
        items = self.unpack_tuple_value(self.call_builtin(b, ins, node), node).items
        loc = self.src.loc(node)
        for local, v in zip(targets, items):
            self.emit(ir.StoreLocal(loc, local, v))
        return True

    def lower_tid(self, b: Builtin, node: ast.Call) -> Any:
        """``wp.tid()``: a request that the assignment unpacking it turns into thread indices."""
        if node.args:
            raise self.err("wp.tid() takes no arguments", node, cls=CodegenTypeError)
        if not self.is_kernel:
            raise self.err("wp.tid() can only be called in a @wp.kernel, not in a @wp.func", node,
                           "pass the index to the function as an argument", CodegenError)
        return PyObj(_TidRequest(node))

    def lower_len(self, b: Builtin, node: ast.Call) -> Any:
        """``len(x)``: a constant for vectors, matrices and tuples; a shape query for arrays."""
        (arg,) = self.call_args(node)
        v = self.as_operand(arg, node)
        if is_composite(v.type):
            return ir.Const(v.type._shape_[0], scalars.int32)
        if isinstance(v.type, TupleT):
            return ir.Const(len(v.type.types), scalars.int32)
        return self.call_builtin(b, [v], node)

    def lower_cast(self, b: Builtin, node: ast.Call) -> Any:
        """``cast(a, dtype)``: the type is a compile-time argument."""
        raw = self.call_args(node, ["a", "dtype"])
        if len(raw) != 2 or not isinstance(raw[1], PyObj):
            raise self.err("cast(a, dtype) needs a value and a type", node, cls=CodegenTypeError)
        v = self.as_operand(raw[0], node)
        try:
            ov = b.resolve([v.type, None], [NOT_CONST, raw[1].obj])
        except NoMatch as e:
            raise self.err(f"cast(): {e}", node, f"valid forms: {b.signature}", CodegenTypeError) from None
        r = self.new_value(ov.ret)
        self.emit(ir.Call(self.src.loc(node), r, ov, [v]))
        return r

    def lower_expect_near(self, b: Builtin, node: ast.Call) -> Any:
        """``expect_near(a, b[, tolerance])``: the tolerance defaults to 1e-6."""
        args = [self.as_operand(a, node) for a in self.call_args(node, ["a", "b", "tolerance"])]
        if len(args) == 2:
            args.append(ir.Const(1e-6, scalars.float32, True))
        return self.call_builtin(b, args, node)

    def printf_call(self, fmt: str, vals: list[Any], node: ast.AST) -> None:
        """Emit the formatted print every ``print``/``printf`` lowers to (the ``printf`` builtin, ``Op.PRINTF``)."""
        b = REGISTRY.builtins["printf"]
        ov = Overload(b, tuple(v.type for v in vals), None, b.cpp, (), fmt)
        self.emit(ir.Call(self.src.loc(node), None, ov, vals))

    def lower_print(self, b: Builtin, node: ast.Call) -> Any:
        args = self.call_args(node)
        if len(args) == 1 and not (isinstance(args[0], PyObj) and isinstance(args[0].obj, str)):
            v = self.as_operand(args[0], node)
            if is_struct(v.type):  # one line: Name(field=value, vec=[x y z], ...)
                fmt: list[str] = []
                vals: list[Any] = []
                self.printf_parts(v, fmt, vals, node)
                self.printf_call("".join(fmt) + "\n", vals, node)
                return None
            return self.call_builtin(REGISTRY.builtins["print"], [v], node)
        fmt, vals = [], []
        for a in args:
            if isinstance(a, PyObj) and isinstance(a.obj, str):
                fmt.append(a.obj.replace("%", "%%"))
                continue
            v = self.as_operand(a, node)
            if not scalars.is_scalar_type(v.type):
                raise self.err("print() with several arguments supports strings and scalars only", node,
                               "print vectors and matrices with their own print() call", CodegenTypeError)
            fmt.append(_printf_spec(v.type))
            vals.append(v)
        self.printf_call(" ".join(fmt) + "\n", vals, node)
        return None

    def printf_parts(self, v: Any, fmt: list[str], vals: list[Any], node: ast.AST) -> None:
        """Append the printf format and operands that show value ``v`` (structs field by field)."""
        t = v.type
        if scalars.is_scalar_type(t):
            fmt.append(_printf_spec(t))
            vals.append(v)
        elif is_struct(t):
            fmt.append(f"{type_str(t)}(")
            for i, name in enumerate(t.vars):
                fmt.append(f"{', ' if i else ''}{name}=")
                self.printf_parts(self.component_by_name(v, name, node), fmt, vals, node)
            fmt.append(")")
        elif is_composite(t):
            fmt.append("[")
            for i in range(t._shape_[0]):
                fmt.append(" " if i else "")
                self.printf_parts(self.subscript_value(v, [ir.Const(i, scalars.int32)], node), fmt, vals, node)
            fmt.append("]")
        else:
            fmt.append(f"<{type_str(t)}>".replace("%", "%%"))

    def lower_printf(self, b: Builtin, node: ast.Call) -> Any:
        args = self.call_args(node)
        if not args or not (isinstance(args[0], PyObj) and isinstance(args[0].obj, str)):
            raise self.err("printf() needs a format string as its first argument", node, cls=CodegenTypeError)
        vals = [self.as_operand(a, node) for a in args[1:]]
        for v in vals:
            if not scalars.is_scalar_type(v.type):
                raise self.err(f"printf() arguments must be scalars, got {type_str(v.type)}", node,
                               "print components one by one (v[0], v[1], ...)", CodegenTypeError)
        self.printf_call(args[0].obj, vals, node)
        return None

    def lower_atomic(self, b: Builtin, node: ast.Call) -> Any:
        args = [self.as_operand(a, node) for a in self.call_args(node)]
        if not args or not isinstance(args[0].type, ArrayT):
            raise self.err(f"the first argument of {b.name}() must be an array", node,
                           f"valid forms: {b.signature}", CodegenTypeError)
        arr_t: ArrayT = args[0].type
        op = b.atomic
        n_vals = 2 if op == "cas" else 1
        idx = args[1:-n_vals]
        vals = args[-n_vals:]
        if len(idx) != arr_t.ndim:
            raise self.err(f"{b.name}() on a {arr_t.ndim}-d array needs {arr_t.ndim} index argument(s), "
                           f"got {len(idx)}", node, f"valid forms: {b.signature}", CodegenTypeError)
        for i in idx:
            if not is_int(i.type):
                raise self.err(f"indices must be integers, got {type_str(i.type)}", node, cls=CodegenTypeError)
        vals = [self.coerce(v, arr_t.dtype, node, f"{b.name}() value") for v in vals]
        dt = scalar_of(arr_t.dtype)
        if op in ("and", "or", "xor") and not is_int(dt):
            raise self.err(f"{b.name}() needs an integer array", node, cls=CodegenTypeError)
        if dt in (scalars.int8, scalars.uint8, scalars.int16, scalars.uint16, scalars.bool):
            raise self.err(f"{b.name}() is not supported on {type_str(dt)} arrays", node,
                           "use an int32, uint32, int64, uint64, float16, float32 or float64 array",
                           CodegenTypeError)
        if op in ("min", "max") and dt is scalars.float16:  # as in the reference: no half-precision min/max atomics
            raise self.err(f"{b.name}() is not supported on float16 arrays", node,
                           "use a float32 or float64 array", CodegenTypeError)
        r = self.new_value(arr_t.dtype, "old")
        cmp = vals[0] if op == "cas" else None
        self.emit(ir.ArrayAtomic(self.src.loc(node), r, op, args[0], idx, vals[-1], cmp))
        return r

    # Conversions and constructors -------------------------------------------------------------------------------
    def coerce(self, v: Any, t: Any, node: ast.AST, what: str) -> Any:
        """``v`` as type ``t``: weak literals are converted, everything else must match exactly."""
        if v.type == t:
            return v
        if isinstance(v, ir.Const) and v.weak and scalars.is_scalar_type(t):
            try:
                return convert_const(v, t)
            except ValueError:
                pass
        raise self.err(f"{what} must be {type_str(t)}, got {type_str(v.type)}", node,
                       f"convert it explicitly, e.g. {type_str(t)}(...)", CodegenTypeError)

    def construct(self, t: Any, node: ast.Call) -> Any:
        raw = [self._tid_value(self.expr(a)) for a in node.args] if node.keywords else self.call_args(node)
        loc = self.src.loc(node)
        args = [self.as_operand(a, node) for a in raw]
        kw = {k.arg: k.value for k in node.keywords}
        if "dtype" in kw and is_composite(t):
            t = self.with_dtype(t, self.expr(kw.pop("dtype")), node)  # wp.quat(x, y, z, w, dtype=...)
        for key in ("shape", "length"):  # mat32d(m, shape=(3, 2)): accepted when it agrees with the type
            if key in kw and is_composite(t):
                given = self.expr(kw.pop(key))
                value = tuple(x.value for x in given.items) if isinstance(given, TupleVal) else getattr(
                    given, "value", None)
                want = tuple(t._shape_) if key == "shape" else t._length_
                if value != want:
                    raise self.err(f"{key}={value} does not match {type_str(t)} ({key} {want})", node,
                                   f"drop {key}= or use a type of {key} {value}", CodegenTypeError)
        if kw and getattr(t, "_wp_generic_type_str_", None) == "transform_t" and set(kw) <= {"p", "q"}:
            # wp.transform(p=..., q=...) / wp.transform(p, q=...): a missing q is the identity rotation
            p = args[0] if args else (self.as_operand(self.expr(kw.pop("p")), node) if "p" in kw else None)
            q = self.as_operand(self.expr(kw.pop("q")), node) if "q" in kw else None
            st = scalar_of(t)
            if p is None:
                p = self.construct_composite(REGISTRY.builtins["transform_get_translation"].resolve([t]).ret, [], node)
            if q is None:
                q = self.call_builtin(REGISTRY.builtins["quat_identity"], [ir.Const(st, None)], node, [st])
            args = [p, q]
        if kw:
            raise self.err("keyword arguments are not supported in constructors", node, cls=CodegenTypeError)
        if scalars.is_scalar_type(t):
            if len(args) != 1:
                raise self.err(f"{type_str(t)}() takes exactly one argument", node, cls=CodegenTypeError)
            a = args[0]
            if not scalars.is_scalar_type(a.type):
                raise self.err(f"cannot convert {type_str(a.type)} to {type_str(t)}", node, cls=CodegenTypeError)
            if isinstance(a, ir.Const):
                try:
                    return convert_const(ir.Const(_cast_value(a.value, t), a.type), t)
                except ValueError:
                    pass
            if a.type == t:
                return a
            r = self.new_value(t)
            self.emit(ir.Construct(loc, r, [a]))
            return r
        return self.construct_composite(t, args, node)

    def with_dtype(self, t: Any, dtype: Any, node: ast.AST) -> Any:
        """The composite type of the same kind and shape as ``t`` with scalar type ``dtype`` (a type operand)."""
        from ..types import matrix as matrix_mod
        from ..types import quat as quat_mod
        from ..types import vector as vector_mod

        if not isinstance(dtype, PyObj):
            raise self.err("dtype= must be a type such as wp.float64", node, cls=CodegenTypeError)
        dt = normalize_annotation(dtype.obj)
        kind = t._wp_generic_type_str_
        if kind == "quat_t":
            return quat_mod.quaternion(dt)
        if kind == "transform_t":
            return quat_mod.transformation(dt)
        if kind == "mat_t":
            return matrix_mod.matrix(t._shape_, dt)
        return vector_mod.vector(t._length_, dt)

    def construct_composite(self, t: Any, args: list[Any], node: ast.AST) -> Any:
        loc = self.src.loc(node)
        st = scalar_of(t)
        n = t._length_
        special = self.special_constructor(t, args, node)
        if special is not None:
            return special
        if len(args) == 1 and is_composite(args[0].type):
            src_t = args[0].type
            if src_t._length_ != n:
                raise self.err(f"cannot build {type_str(t)} from {type_str(src_t)}", node, cls=CodegenTypeError)
        elif len(args) == 0 or (len(args) == 1 and scalars.is_scalar_type(args[0].type)):
            args = [self.coerce(a, st, node, f"{type_str(t)}() argument") for a in args]
        elif is_matrix(t) and len(args) == t._shape_[0] and all(is_composite(a.type) for a in args):
            row_t = t._wp_row_type_
            for a in args:
                if a.type._length_ != t._shape_[1]:
                    raise self.err(f"rows of {type_str(t)} must have {t._shape_[1]} components", node,
                                   cls=CodegenTypeError)
            args = [a if a.type == row_t else self.convert_value(a, row_t, node) for a in args]
        elif len(args) == n:
            args = [self.coerce(a, st, node, f"{type_str(t)}() component") for a in args]
        else:
            raise self.err(f"{type_str(t)}() takes 0, 1 or {n} arguments, got {len(args)}", node,
                           cls=CodegenTypeError)
        r = self.new_value(t)
        self.emit(ir.Construct(loc, r, list(args)))
        return r

    def special_constructor(self, t: Any, args: list[Any], node: ast.AST) -> Any:
        """``wp.transform(p, q)``, ``wp.quat(v, w)``, ``wp.spatial_vector(w, v)``: the builtin constructors."""
        kind = getattr(t, "_wp_generic_type_str_", None)
        name = {"quat_t": "quaternion", "transform_t": "transformation"}.get(kind or "")
        if name is None and kind == "vec_t" and t._length_ == 6:
            name = "spatial_vector"
        if name is None or not args or all(scalars.is_scalar_type(a.type) for a in args):
            return None
        if len(args) == 1 and args[0].type._length_ == t._length_ if is_composite(args[0].type) else False:
            return None  # a plain conversion
        r = self.call_builtin(REGISTRY.builtins[name], list(args), node)
        if r.type != t:
            r = self.convert_value(r, t, node)
        return r

    def convert_value(self, v: Any, t: Any, node: ast.AST) -> Any:
        r = self.new_value(t)
        self.emit(ir.Construct(self.src.loc(node), r, [v]))
        return r

    def construct_struct(self, st: Any, node: ast.Call) -> Any:
        fields = list(st.vars)
        raw = self.call_args(node, fields)
        loc = self.src.loc(node)
        r = self.new_value(st, "s")
        self.emit(ir.Construct(loc, r, []))
        cur: Any = r
        for name, a in zip(fields, raw):
            v = self.coerce(self.as_operand(a, node), normalize_annotation(st.vars[name]), node, f"field '{name}'")
            nxt = self.new_value(st, "s")
            self.emit(ir.Insert(loc, nxt, cur, [], v, field=name))
            cur = nxt
        return cur

    def call_type_factory(self, fn: Any, node: ast.Call) -> Any:
        """``wp.vector(a, b, c)`` / ``wp.vector(length=3, dtype=float)`` / ``wp.matrix(...)`` in kernels."""
        kw = {k.arg: self.expr(k.value) for k in node.keywords}
        args = [self.as_operand(self.expr(a), node) for a in node.args]
        kind = fn._treadle_type_factory_
        dtype = kw.pop("dtype", None)
        dtype = normalize_annotation(dtype.obj) if isinstance(dtype, PyObj) else None
        if kind == "vector":
            length = kw.pop("length", None)
            if isinstance(length, ir.Const):
                n = length.value
            elif len(args) == 1 and is_composite(args[0].type):  # wp.vector(v, dtype=...): a cast of v
                n = args[0].type._length_
            else:
                n = len(args)
            if dtype is None:
                dtype = scalar_of(args[0].type) if args else scalars.float32
            from ..types.vector import vector

            return self.construct_composite(vector(n, dtype), args, node)
        if kind in ("quaternion", "transformation"):  # wp.types.quaternion(x, y, z, w) / (v, w) / (q, dtype=...)
            from ..types import quat as quat_mod

            if dtype is None:
                dtype = scalar_of(args[0].type) if args else scalars.float32
            return self.construct_composite(getattr(quat_mod, kind)(dtype), args, node)
        shape = kw.pop("shape", None)
        from ..types.matrix import matrix

        if isinstance(shape, TupleVal):
            dims = tuple(x.value for x in shape.items)
        elif len(args) == 1 and is_matrix(args[0].type):  # wp.matrix(m, dtype=...): a cast of m
            dims = tuple(args[0].type._shape_)
        elif args and all(is_composite(a.type) for a in args):
            dims = (len(args), args[0].type._length_)
        else:
            raise self.err("wp.matrix() in kernels needs shape=(rows, cols) or row vectors", node,
                           cls=CodegenTypeError)
        if dtype is None:
            dtype = scalar_of(args[0].type) if args else scalars.float32
        return self.construct_composite(matrix(dims, dtype), args, node)

    # User functions ------------------------------------------------------------------------------------------
    def call_user(self, fn: Any, node: ast.Call) -> Any:
        raw = [self.stack_ref(a) or self.expr(a) for a in node.args]
        kwargs = {str(k.arg): self.expr(k.value) for k in node.keywords}
        return self.call_user_values(fn, raw, node, kwargs)

    def stack_ref(self, a: ast.expr) -> ir.LocalRef | None:
        """A tile-stack variable passed to a ``@func``: by reference (the function updates the caller's stack)."""
        local = self.locals.get(a.id) if isinstance(a, ast.Name) else None
        return ir.LocalRef(local) if local is not None and isinstance(local.type, TileStackT) else None

    def call_user_values(self, fn: Any, raw: list[Any], node: ast.AST, kwargs: dict[str, Any] | None = None) -> Any:
        """Call a ``@func`` with already lowered operands (also used for operators on structs)."""
        inst, ordered = self.resolve_function_call(fn, raw, kwargs or {}, node)
        targets = self.ref_targets(inst, node) if inst.ref_positions else []
        loc = self.src.loc(node)
        ret = inst.return_type
        r = self.new_value(ret, fn.name) if ret is not None else None
        self.emit(ir.CallFunc(loc, r, inst, ordered))
        self.ctx.add_dependency(inst)
        if targets:  # wp.ref[T] parameters: store their final values back into the caller's variables
            items = self.unpack_tuple_value(r, node).items
            result = items.pop(0) if inst.value_type is not None else None
            for target, v in zip(targets, items):
                if target is not None:
                    self.assign(target, v, node)  # type: ignore[attr-defined]
                    if isinstance(target, ast.Name):
                        self.tile_updated(target.id, node)  # type: ignore[attr-defined]
            if result is not None and isinstance(result.type, TupleT):
                return self.unpack_tuple_value(result, node)
            return result
        if isinstance(ret, TupleT):
            return self.unpack_tuple_value(r, node)
        return r

    def ref_targets(self, inst: Any, node: ast.AST) -> list[ast.expr | None]:
        """The caller's expressions bound to ``wp.ref[T]`` parameters.

        Each must name a place (variable, array element, field or component), since the function writes through it.
        """
        names = inst.fdef.param_names
        args = list(getattr(node, "args", []))
        kw = {k.arg: k.value for k in getattr(node, "keywords", [])}
        out: list[ast.expr | None] = []
        for pos in inst.ref_positions:
            name = names[pos]
            a = args[pos] if pos < len(args) else kw.get(name)
            if a is None:
                raise self.err(f"'{inst.name}' needs a variable for its by-reference parameter '{name}'", node,
                               f"pass a variable, array element or field as '{name}'", CodegenTypeError)
            root = a
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            ok = isinstance(root, ast.Name) and root.id in self.locals and root.id not in self.const_bindings
            if pos in inst.tile_refs and not (ok and isinstance(a, ast.Name)):
                out.append(None)  # a tile expression: the function updates a temporary
                continue
            if not ok:
                raise self.err(f"argument '{name}' of '{inst.name}' is passed by reference (wp.ref) and must be a "
                               f"variable, an array element or a field, not {ast.unparse(a)!r}", a,
                               "assign the value to a variable first and pass the variable", CodegenTypeError)
            out.append(a)
        return out

    def unpack_tuple_value(self, v: Any, node: ast.AST) -> TupleVal:
        items = []
        for i, t in enumerate(v.type.types):
            e = self.new_value(t)
            self.emit(ir.Extract(self.src.loc(node), e, v, [ir.Const(i, scalars.int32)]))
            items.append(e)
        return TupleVal(items)


class _TidRequest:
    """``wp.tid()`` before it is known how many indices the caller unpacks."""

    def __init__(self, node: ast.AST) -> None:
        self.node = node


#: The frontend's lowering of each special form (``Builtin.lowering``).
SPECIAL_LOWERINGS: dict[Lowering, Callable[[Any, Builtin, ast.Call], Any]] = {
    Lowering.TID: CallMixin.lower_tid,
    Lowering.PRINT: CallMixin.lower_print,
    Lowering.PRINTF: CallMixin.lower_printf,
    Lowering.ATOMIC: CallMixin.lower_atomic,
    Lowering.LEN: CallMixin.lower_len,
    Lowering.CAST: CallMixin.lower_cast,
    Lowering.EXPECT_NEAR: CallMixin.lower_expect_near,
    Lowering.TILE: CallMixin.lower_tile,
}


def _array_inside(value: Any, path: str) -> str | None:
    """The path to an array in a ``wp.static()`` result (the value itself or a struct field), else ``None``."""
    if getattr(value, "__array_interface__", None) is not None or hasattr(value, "__cuda_array_interface__"):
        return path
    t = type(value)
    if is_struct(t):
        for name in t.vars:
            found = _array_inside(getattr(value, name, None), f"{path}.{name}")
            if found is not None:
                return found
    return None


def _printf_spec(t: Any) -> str:
    if is_float(t):
        return "%g"
    if t in (scalars.int64,):
        return "%lld"
    if t in (scalars.uint64,):
        return "%llu"
    if t in (scalars.uint32, scalars.uint16, scalars.uint8):
        return "%u"
    return "%d"


def _cast_value(v: Any, t: Any) -> Any:
    if isinstance(v, scalars.scalar_base):
        v = v.value
    if is_int(t):
        return int(v)
    if is_float(t):
        return float(v)
    return bool(v)


def _param_names(b: Builtin) -> list[str] | None:
    sig = b.signature
    if "(" not in sig:
        return None
    inner = sig[sig.index("(") + 1 : sig.index(")")] if ")" in sig else ""
    names = []
    for part in inner.split(","):
        part = part.strip().lstrip("*")
        if not part:
            continue
        names.append(part.split(":")[0].split("=")[0].strip())
    return names


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _is_array_class(obj: Any) -> bool:
    """``wp.array`` (or ``wp.array1d`` ... ``wp.array4d``) called in kernel code: a class with the array protocol."""
    return isinstance(obj, type) and getattr(obj, "_treadle_array_", False) is True
