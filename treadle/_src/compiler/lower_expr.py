"""Lowering of Python expressions to typed IR (a mixin of :class:`~.frontend.Lowerer`)."""

from __future__ import annotations

import ast
import builtins
import enum
import math
import types as pytypes
from typing import Any

import numpy as np

from ..builtins import REGISTRY
from ..builtins.operators import BINOP_NAMES, CMPOP_NAMES, UNARYOP_NAMES
from ..builtins.registry import Builtin, NoMatch
from ..core.errors import (
    CodegenAttributeError,
    CodegenError,
    CodegenIndexError,
    CodegenKeyError,
    CodegenTypeError,
    UnsupportedConstructError,
)
from ..types import scalars
from ..types.typesys import (
    ArrayT,
    TileT,
    TupleT,
    is_composite,
    is_float,
    is_int,
    is_matrix,
    is_struct,
    is_vector_like,
    normalize_annotation,
    scalar_of,
    type_str,
)
from . import ir
from .source import MISSING


class PyObj:
    """A compile-time Python object met in kernel code (a module, a type, a function, ...)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj


class TupleVal:
    """A tuple of operands (``wp.tid()`` in 2-D, ``(a, b)`` literals, unpacked returns)."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


class ShapeVal(TupleVal):
    """``arr.shape`` in a kernel: one extent per dimension.

    A constant index past the last dimension (up to the fourth) reads 0, as the reference's fixed-size shape does.
    """

    __slots__ = ()


#: Python builtins usable in kernels, mapped to Treadle builtins.
PY_BUILTIN_MAP = {
    builtins.abs: "abs", builtins.min: "min", builtins.max: "max", builtins.len: "len", builtins.print: "print",
    builtins.round: "round", builtins.pow: "pow",
}

UNSUPPORTED_EXPR = {
    ast.Lambda: ("lambda", "define a @wp.func instead"),
    ast.ListComp: ("list comprehension", "write an explicit for loop"),
    ast.SetComp: ("set comprehension", "write an explicit for loop"),
    ast.DictComp: ("dict comprehension", "write an explicit for loop"),
    ast.GeneratorExp: ("generator expression", "write an explicit for loop"),
    ast.Await: ("await", "kernels cannot await"),
    ast.Yield: ("yield", "kernels cannot be generators; write results to an array"),
    ast.YieldFrom: ("yield from", "kernels cannot be generators; write results to an array"),
    ast.List: ("list literal", "use a vector type (wp.vec3(...)) or a fixed-size local array"),
    ast.Dict: ("dict literal", "kernels have no dictionaries; use a struct or arrays"),
    ast.Set: ("set literal", "kernels have no sets"),
    ast.JoinedStr: ("f-string", "use wp.printf('%d', x) with a format string"),
    ast.Starred: ("starred expression here", "unpack into call arguments (f(*v)) or pass the values one by one"),
    ast.NamedExpr: ("walrus operator ':='", "assign in a separate statement"),
}


def const_type(value: Any) -> tuple[Any, bool]:
    """The type of a Python constant and whether it is a weak (untyped) literal."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return scalars.bool, False
    if isinstance(value, enum.Enum) and isinstance(value.value, builtins.int):
        return scalars.int32, False
    if isinstance(value, builtins.int):
        return scalars.int32, True
    if isinstance(value, builtins.float):
        return scalars.float32, True
    if isinstance(value, scalars.scalar_base):
        return type(value), False
    if isinstance(value, np.generic):
        t = scalars.scalar_from_numpy(value.dtype)
        if t is not None:
            return t, False
    if is_composite(type(value)):
        return type(value), False
    return None, False


#: The namespace whose builtins and types kernel code may name without an import: the public package, which
#: registers itself (the compiler sits below it, so it never imports it).
_BARE_NAMES: list[Any] = [None]


def register_bare_names(namespace: Any) -> None:
    """Let kernels name ``namespace``'s builtins and types unqualified (``vec3``, ``expect_eq``), as the reference does."""
    _BARE_NAMES[0] = namespace


class ConstConversionError(ValueError):
    """A literal that cannot take the type it meets (``1.5`` where an integer is needed).

    The statement lowerer reports it at the user's line.
    """


def convert_const(c: ir.Const, t: Any) -> ir.Const:
    """A constant converted to scalar type ``t`` (for weak literals meeting typed operands)."""
    v = c.value
    if isinstance(v, scalars.scalar_base):
        v = v.value
    if isinstance(v, enum.Enum):
        v = v.value
    if is_float(t):
        return ir.Const(builtins.float(v), t)
    if is_int(t):
        if isinstance(v, builtins.float) and not v.is_integer():
            raise ConstConversionError(f"the constant {v} is used where {type_str(t)} is needed, but it is not "
                                       "an integer")
        return ir.Const(builtins.int(v), t)
    if t is scalars.bool:
        return ir.Const(builtins.bool(v), t)
    raise ValueError(f"cannot convert a constant to {type_str(t)}")


class ExprMixin:
    """Expression lowering; relies on the statement lowerer for emitting and locals."""

    src: Any
    ctx: Any
    next_id: int

    # Provided by the Lowerer -------------------------------------------------------------------------------
    def emit(self, stmt: ir.Stmt) -> None:
        raise NotImplementedError

    def new_value(self, t: Any, hint: str = "") -> ir.Value:
        raise NotImplementedError

    def read_name(self, node: ast.Name) -> Any:
        raise NotImplementedError

    def err(self, msg: str, node: ast.AST | None, fix: str = "", cls: type = CodegenError) -> CodegenError:
        raise NotImplementedError

    def temp_local(self, t: Any) -> ir.Local:
        raise NotImplementedError

    def new_local(self, name: str, t: Any, cname: str | None = None) -> ir.Local:
        raise NotImplementedError

    def lower_body_into(self, block: ir.Block, fn: Any) -> None:
        raise NotImplementedError

    # --------------------------------------------------------------------------------------------------------
    def expr(self, node: ast.expr) -> Any:
        """Lower an expression to an operand, a :class:`PyObj` or a :class:`TupleVal`."""
        for cls, (what, fix) in UNSUPPORTED_EXPR.items():
            if isinstance(node, cls):
                raise self.err(f"{what} is not supported in kernels", node, fix, UnsupportedConstructError)
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.err(f"'{type(node).__name__}' expressions are not supported in kernels", node,
                           cls=UnsupportedConstructError)
        return method(node)

    def value(self, node: ast.expr) -> ir.Value | ir.Const:
        """Lower an expression that must produce a runtime value (not a type or module)."""
        r = self.expr(node)
        return self.as_operand(r, node)

    def as_operand(self, r: Any, node: ast.AST) -> ir.Value | ir.Const:
        if isinstance(r, (ir.Value, ir.Const, ir.LocalRef)):  # LocalRef: a tile stack passed to a @func
            return r  # type: ignore[return-value]
        if isinstance(r, PyObj):
            if type(r.obj).__name__ == "_TidRequest":  # wp.tid() used as a value: the flat thread index
                return self.make_tid(1, r.obj.node)  # type: ignore[attr-defined]
            c = self.py_constant(r.obj, node)
            if c is not None:
                return c
            if getattr(r.obj, "__array_interface__", None) is not None or hasattr(r.obj, "__cuda_array_interface__"):
                raise self.err("this uses an array from Python scope (a global or closure variable); kernels "
                               "only see arrays passed to them as arguments", node,
                               "add a kernel parameter for it, e.g. 'data: wp.array(dtype=float)', and pass the "
                               "array in wp.launch(..., inputs=[...])", CodegenTypeError)
            what = getattr(r.obj, "__name__", type(r.obj).__name__)
            raise self.err(f"'{what}' is not a value that kernels can use here", node,
                           "only numbers, vectors, matrices, structs and arrays are kernel values",
                           CodegenTypeError)
        if isinstance(r, TupleVal):
            items = [self.as_operand(x, node) for x in r.items]
            t = TupleT(tuple(x.type for x in items))
            v = self.new_value(t, "tuple")
            self.emit(ir.Construct(self.src.loc(node), v, list(items)))
            return v
        raise self.err("expected a value", node)

    def py_constant(self, obj: Any, node: ast.AST) -> ir.Const | None:
        t, weak = const_type(obj)
        if t is None:
            return None
        if isinstance(obj, enum.Enum):
            obj = obj.value
        return ir.Const(obj, t, weak)

    # Leaves --------------------------------------------------------------------------------------------------
    def expr_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, str):
            return PyObj(node.value)
        if node.value is None:
            return PyObj(None)
        c = self.py_constant(node.value, node)
        if c is None:
            raise self.err(f"constant {node.value!r} is not supported in kernels", node, cls=CodegenTypeError)
        return c

    def expr_Name(self, node: ast.Name) -> Any:
        return self.read_name(node)

    def resolve_global(self, name: str, node: ast.AST) -> Any:
        obj = self.src.lookup(name)
        if obj is MISSING:
            # As in the reference, bare builtin and type names (`expect_eq`, `vec3`) resolve without an import (not
            # other module attributes: a misspelt `e` must not become Euler's number).
            ns = _BARE_NAMES[0]
            obj = getattr(ns, name, MISSING) if ns is not None and not name.startswith("_") else MISSING
            if obj is not MISSING and name not in REGISTRY.builtins and not isinstance(obj, type):
                obj = MISSING
        if obj is MISSING:
            raise self.err(f"name '{name}' is not defined", node,
                           "define it before the kernel is first launched (as a module global, a @wp.func or "
                           "a local assigned earlier in the kernel)", CodegenKeyError)
        return self.wrap_python(obj, node)

    def wrap_python(self, obj: Any, node: ast.AST) -> Any:
        c = self.py_constant(obj, node)
        if c is not None and not isinstance(obj, type):
            return c
        st = getattr(obj, "_struct_type_", None)
        if st is not None and not isinstance(obj, type):  # a struct instance (wp.static(make_struct(...)))
            return self.struct_constant(obj, st, node)
        return PyObj(obj)

    def struct_constant(self, obj: Any, st: Any, node: ast.AST) -> Any:
        """A struct value built from a host struct instance's field values (array fields stay null)."""
        loc = self.src.loc(node)
        cur: Any = self.new_value(st, "s")
        self.emit(ir.Construct(loc, cur, []))
        for name, ft in st.vars.items():
            val = getattr(obj, name)
            if val is None:
                continue  # unset array fields stay null
            if getattr(val, "_struct_type_", None) is None and self.py_constant(val, node) is None:
                raise self.err(f"a struct value computed at build time cannot carry field '{name}' of type "
                               f"{type(val).__name__} (arrays are only passed as kernel arguments)", node,
                               "pass the struct as a kernel argument instead", CodegenTypeError)
            v = self.wrap_python(val, node)
            if isinstance(v, ir.Const) and v.type != normalize_annotation(ft):
                v = convert_const(v, normalize_annotation(ft))
            nxt = self.new_value(st, "s")
            self.emit(ir.Insert(loc, nxt, cur, [], v, field=name))
            cur = nxt
        return cur

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        if node.attr == "value" and isinstance(node.value, ast.Attribute):  # MyEnum.A.value: the member's value
            owner = self.expr(node.value.value)
            if isinstance(owner, PyObj) and isinstance(owner.obj, type) and issubclass(owner.obj, enum.Enum):
                member = getattr(owner.obj, node.value.attr, None)
                if isinstance(member, enum.Enum):
                    return self.wrap_python(member.value, node)
        base = self.expr(node.value)
        if isinstance(base, PyObj):
            obj = base.obj
            if is_composite(obj) and node.attr in ("length", "dtype", "shape"):  # vector/matrix type properties
                return self.composite_property(obj, node.attr)
            if isinstance(obj, pytypes.ModuleType) or isinstance(obj, type) or hasattr(obj, node.attr):
                try:
                    attr = getattr(obj, node.attr)
                except AttributeError:
                    attr = MISSING
                if attr is MISSING:
                    b = REGISTRY.get(node.attr) if getattr(obj, "__name__", "") in ("treadle", "warp") else None
                    if b is not None:
                        return PyObj(b)
                    raise self.err(f"'{getattr(obj, '__name__', obj)}' has no attribute '{node.attr}'", node,
                                   cls=CodegenAttributeError)
                if obj is math and callable(attr) and REGISTRY.get(node.attr) is not None:
                    return PyObj(REGISTRY.get(node.attr))
                return self.wrap_python(attr, node)
            raise self.err(f"'{type(obj).__name__}' object has no attribute '{node.attr}'", node,
                           cls=CodegenAttributeError)
        val = self.as_operand(base, node)
        return self.component_by_name(val, node.attr, node)

    def component_by_name(self, val: Any, name: str, node: ast.AST) -> Any:
        t = val.type
        if isinstance(t, ArrayT) and name == "shape":
            dim = REGISTRY.builtins["_array_dim"]
            return ShapeVal([self.call_builtin(dim, [val, ir.Const(d, scalars.int32)], node) for d in range(t.ndim)])
        if isinstance(t, ArrayT) and name == "dtype":  # the element type, usable as a constructor (a.dtype(x))
            return PyObj(t.dtype)
        if isinstance(t, ArrayT) and name == "ndim":  # a compile-time constant of the array type
            return ir.Const(int(t.ndim), scalars.int32)
        if isinstance(t, ArrayT) and name == "ptr" and not t.indexed:
            return self.call_builtin(REGISTRY.builtins["_array_ptr"], [val], node)
        if is_composite(t) and name in ("length", "dtype", "shape"):
            return self.composite_property(t, name)
        if is_struct(t):
            if name not in t.vars:
                raise self.err(f"struct '{type_str(t)}' has no field '{name}'", node,
                               f"fields are: {', '.join(t.vars)}", CodegenAttributeError)
            ft = normalize_annotation(t.vars[name])
            r = self.new_value(ft, name)
            self.emit(ir.Extract(self.src.loc(node), r, val, [], field=name))
            return r
        idx = self.component_index(t, name, node)
        if isinstance(idx, tuple):
            return self.extract_path(val, list(idx), node)
        r = self.new_value(scalar_of(t), name)
        self.emit(ir.Extract(self.src.loc(node), r, val, [ir.Const(idx, scalars.int32)]))
        return r

    def composite_property(self, t: Any, name: str) -> Any:
        """``v.length`` / ``v.dtype`` / ``m.shape`` of a vector or matrix type (or value): compile-time values."""
        if name == "dtype":
            return PyObj(t._wp_scalar_type_)
        if name == "length":
            return ir.Const(int(t._length_), scalars.int32)
        return TupleVal([ir.Const(int(d), scalars.int32) for d in t._shape_])

    def component_index(self, t: Any, name: str, node: ast.AST) -> Any:
        if isinstance(t, ArrayT):
            raise self.err(f"arrays have no attribute '{name}' in kernels", node,
                           "kernels know arr.shape, arr.ndim, arr.dtype and arr.ptr (and arr[i] for elements)",
                           CodegenAttributeError)
        kind = getattr(t, "_wp_generic_type_str_", None)
        if kind in ("vec_t", "quat_t") and name in "xyzw" and len(name) == 1:
            i = "xyzw".index(name)
            if i < t._length_:
                return i
        if kind == "transform_t" and name in ("p", "q"):
            return ("p", name)
        raise self.err(f"'{type_str(t)}' has no attribute '{name}'", node, cls=CodegenAttributeError)

    def extract_path(self, val: Any, path: list[Any], node: ast.AST) -> Any:
        # Only transforms have named parts: t.p and t.q read through the builtins that return them.
        name = "transform_get_translation" if path[-1] == "p" else "transform_get_rotation"
        return self.call_builtin(REGISTRY.builtins[name], [val], node)

    def expr_Tuple(self, node: ast.Tuple) -> Any:
        return TupleVal([self.expr(e) for e in node.elts])

    # Operators -----------------------------------------------------------------------------------------------
    def expr_BinOp(self, node: ast.BinOp) -> Any:
        name = BINOP_NAMES.get(type(node.op).__name__)
        if name is None:  # pragma: no cover - all Python binary operators are mapped
            raise self.err(f"operator {type(node.op).__name__} is not supported", node)
        a = self.value(node.left)
        b = self.value(node.right)
        if isinstance(node.op, ast.MatMult) and (isinstance(a.type, TileT) or isinstance(b.type, TileT)):
            return self.tile_matmul_operator(a, b, node)  # type: ignore[attr-defined]
        if is_struct(a.type) or is_struct(b.type):  # operators on structs: a @func named like the operator
            fn = self.src.lookup(name)
            if getattr(fn, "_treadle_function_", False):
                return self.call_user_values(fn, [a, b], node)  # type: ignore[attr-defined]
        return self.call_builtin(REGISTRY.builtins[name], [a, b], node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        name = UNARYOP_NAMES[type(node.op).__name__]
        a = self.value(node.operand)
        if isinstance(a, ir.Const) and name in ("neg", "pos") and not isinstance(a.value, (scalars.scalar_base,)):
            if not is_composite(a.type):
                return ir.Const(-a.value if name == "neg" else a.value, a.type, a.weak)
        if name == "_not":
            a = self.truth(a, node.operand)
        return self.call_builtin(REGISTRY.builtins[name], [a], node)

    def truth(self, v: Any, node: ast.AST) -> Any:
        """Convert a scalar to bool for conditions (``if x:`` with an int or float)."""
        if v.type is scalars.bool:
            return v
        if isinstance(v, ir.Const):
            return ir.Const(builtins.bool(v.value), scalars.bool)
        if is_int(v.type) or is_float(v.type):
            zero = ir.Const(0, v.type)
            return self.call_builtin(REGISTRY.builtins["_cmp_ne"], [v, zero], node)
        if isinstance(v.type, ArrayT):  # `if arr:` tests for a non-null array
            return self.call_builtin(REGISTRY.builtins["_array_valid"], [v], node)
        raise self.err(f"a value of type {type_str(v.type)} cannot be used as a condition", node,
                       "compare it explicitly, e.g. 'if length(v) > 0.0:'", CodegenTypeError)

    def expr_Compare(self, node: ast.Compare) -> Any:
        left = self.value(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                raise self.err(f"'{type(op).__name__.lower()}' comparisons are not supported in kernels", node,
                               "use == / != / < / <= / > / >=", UnsupportedConstructError)
            right = self.value(right_node)
            r = self.call_builtin(REGISTRY.builtins[CMPOP_NAMES[type(op).__name__]], [left, right], node)
            result = r if result is None else self.call_builtin(REGISTRY.builtins["bit_and"], [result, r], node)
            left = right
        return result

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        # Short-circuit evaluation: `i < n and a[i] > 0` must not read a[i] when i >= n.
        is_and = isinstance(node.op, ast.And)
        out = self.temp_local(scalars.bool)
        first = self.truth(self.value(node.values[0]), node.values[0])
        self.emit(ir.StoreLocal(self.src.loc(node), out, first))
        rest = node.values[1:]

        def build(values: list[ast.expr]) -> None:
            cur = self.new_value(scalars.bool)
            self.emit(ir.LoadLocal(self.src.loc(node), cur, out))
            then, orelse = ir.Block(), ir.Block()
            inner = then if is_and else orelse

            def body() -> None:
                v = self.truth(self.value(values[0]), values[0])
                self.emit(ir.StoreLocal(self.src.loc(node), out, v))
                if len(values) > 1:
                    build(values[1:])

            self.lower_body_into(inner, body)
            self.emit(ir.If(self.src.loc(node), cur, then, orelse))

        build(rest)
        r = self.new_value(scalars.bool)
        self.emit(ir.LoadLocal(self.src.loc(node), r, out))
        return r

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.truth(self.value(node.test), node.test)
        if isinstance(cond, ir.Const):
            return self.expr(node.body if cond.value else node.orelse)
        then, orelse = ir.Block(), ir.Block()
        results: list[Any] = []
        self.lower_body_into(then, lambda: results.append(self.value(node.body)))
        self.lower_body_into(orelse, lambda: results.append(self.value(node.orelse)))
        a, b = results
        t = a.type
        if a.type != b.type:
            if isinstance(b, ir.Const) and b.weak and scalars.is_scalar_type(a.type):
                b = convert_const(b, scalar_of(a.type))
            elif isinstance(a, ir.Const) and a.weak and scalars.is_scalar_type(b.type):
                a = convert_const(a, scalar_of(b.type))
                t = b.type
            else:
                raise self.err(f"both branches of 'x if c else y' must have the same type, got "
                               f"{type_str(a.type)} and {type_str(b.type)}", node,
                               "convert one branch explicitly so both have the same type", CodegenTypeError)
        out = self.temp_local(t)
        then.stmts.append(ir.StoreLocal(self.src.loc(node), out, a))
        orelse.stmts.append(ir.StoreLocal(self.src.loc(node), out, b))
        self.emit(ir.If(self.src.loc(node), cond, then, orelse))
        r = self.new_value(t)
        self.emit(ir.LoadLocal(self.src.loc(node), r, out))
        return r

    # Subscripts ----------------------------------------------------------------------------------------------
    def slice_spec(self, node: ast.Slice) -> ir.SliceSpec:
        parts: list[Any] = []
        for part in (node.lower, node.upper, node.step):
            if part is None:
                parts.append(None)
                continue
            v = self.value(part)
            if not is_int(v.type):
                raise self.err(f"slice bounds must be integers, got {type_str(v.type)}", part, cls=CodegenIndexError)
            parts.append(v)
        if isinstance(parts[2], ir.Const) and parts[2].value == 0:
            raise self.err("slice step cannot be zero", node.step, cls=CodegenIndexError)
        return ir.SliceSpec(*parts)

    def index_operands(self, node: ast.expr, allow_slices: bool = False) -> list[Any]:
        nodes = node.elts if isinstance(node, ast.Tuple) else [node]
        if any(isinstance(n, ast.Slice) for n in nodes):
            if not allow_slices:
                raise self.err("slices are only supported on arrays in kernels", node, "index single elements",
                               CodegenIndexError)
            return [self.slice_spec(n) if isinstance(n, ast.Slice) else self.index_operands(n)[0] for n in nodes]
        items = [self.value(e) for e in nodes]
        out = []
        for it, n in zip(items, nodes):
            if not (is_int(it.type) or (isinstance(it, ir.Const) and it.type is scalars.int32)):
                raise self.err(f"indices must be integers, got {type_str(it.type)}", n,
                               "convert with int(...)", CodegenIndexError)
            out.append(it)
        return out

    def tuple_index(self, idx: list[Any], n: int, node: ast.AST) -> int:
        """The position a constant index ``idx`` names in a tuple of ``n`` items (negative ones count from the end)."""
        if len(idx) != 1 or not isinstance(idx[0], ir.Const):
            raise self.err("tuples can only be indexed with a constant", node, cls=CodegenIndexError)
        k = idx[0].value
        if not -n <= k < n:
            raise self.err(f"index {k} is out of range for a tuple of {n} element(s)", node, cls=CodegenIndexError)
        return int(k) % n

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        return self.subscript_of(self.expr(node.value), node)

    def subscript_of(self, base: Any, node: ast.Subscript) -> Any:
        """``base[...]`` for an already lowered ``base`` (the expression ``node.value``)."""
        if isinstance(base, PyObj):
            return self.subscript_python(base, node)
        if isinstance(base, TupleVal):
            idx = self.index_operands(node.slice)
            if isinstance(base, ShapeVal) and len(idx) == 1 and isinstance(idx[0], ir.Const) \
                    and len(base.items) <= idx[0].value < 4:
                return ir.Const(0, scalars.int32)
            return base.items[self.tuple_index(idx, len(base.items), node)]
        val = self.as_operand(base, node)
        if isinstance(val.type, TileT):
            return self.tile_subscript_node(val, node)  # type: ignore[attr-defined]
        idx = self.index_operands(node.slice, allow_slices=isinstance(val.type, (ArrayT, TileT))
                                  or is_vector_like(val.type) or is_matrix(val.type))
        if isinstance(val.type, TileT) and (any(isinstance(i, ir.SliceSpec) for i in idx)
                                            or len(idx) < len(val.type.shape)):
            return self.tile_slice(val, idx, node)  # type: ignore[attr-defined]
        if is_vector_like(val.type) and len(idx) == 1 and isinstance(idx[0], ir.SliceSpec):
            return self.gather_components(val, self.slice_positions(idx[0], val.type._length_, node), node)
        if is_matrix(val.type) and any(isinstance(i, ir.SliceSpec) for i in idx):
            positions, rt = self.matrix_slice(val.type, idx, node)
            return self.gather_matrix(val, positions, rt, node)
        return self.subscript_value(val, idx, node)

    def matrix_slice(self, t: Any, idx: list[Any], node: ast.AST) -> tuple[list[tuple[int, int]], Any]:
        """The (row, column) positions that ``m[rows, cols]`` selects, in row-major order, and the result type.

        At least one index is a constant slice; an index beside a slice must be constant too. Two slices give a
        matrix (``m[a:b]`` takes all columns), a slice and an index a vector. An empty selection gives the 0x0
        matrix (the reference's convention).
        """
        from ..types.matrix import matrix
        from ..types.vector import vector

        if len(idx) == 1:
            idx = [idx[0], ir.SliceSpec(None, None, None)]
        if len(idx) != 2:
            raise self.err(f"a matrix takes at most 2 indices, got {len(idx)}", node, cls=CodegenIndexError)
        sel: list[Any] = []
        for i, n in zip(idx, t._shape_):
            if isinstance(i, ir.SliceSpec):
                sel.append(self.slice_positions(i, n, node))
                continue
            if not isinstance(i, ir.Const):
                raise self.err("an index beside a matrix slice must be constant", node,
                               "use integer literals or wp.static()", CodegenIndexError)
            k = int(getattr(i.value, "value", i.value))
            if not -n <= k < n:
                raise self.err(f"index {k} is out of range for {n} rows/columns", node, cls=CodegenIndexError)
            sel.append(k % n)
        rows, cols = sel
        st = scalar_of(t)
        if isinstance(rows, list) and isinstance(cols, list):
            shape = (len(rows), len(cols)) if rows and cols else (0, 0)
            return [(r, c) for r in rows for c in cols], matrix(shape, st)
        if isinstance(rows, list):
            return [(r, cols) for r in rows], vector(len(rows), st)
        return [(rows, c) for c in cols], vector(len(cols), st)

    def gather_matrix(self, val: Any, positions: list[tuple[int, int]], rt: Any, node: ast.AST) -> Any:
        """``m[a:b, c:d]`` and friends: a new matrix or vector of the selected components."""
        loc = self.src.loc(node)
        st = scalar_of(val.type)
        items = []
        for r, c in positions:
            e = self.new_value(st)
            self.emit(ir.Extract(loc, e, val, [ir.Const(r, scalars.int32), ir.Const(c, scalars.int32)]))
            items.append(e)
        out = self.new_value(rt, "slice")
        self.emit(ir.Construct(loc, out, items))
        return out

    def slice_positions(self, spec: ir.SliceSpec, n: int, node: ast.AST) -> list[int]:
        """The component positions selected by a constant slice of a vector-like value of length ``n``."""
        parts = []
        for p in (spec.start, spec.stop, spec.step):
            if p is not None and not isinstance(p, ir.Const):
                raise self.err("vector slices need constant bounds", node, "use integer literals or wp.static()",
                               CodegenIndexError)
            parts.append(None if p is None else int(getattr(p.value, "value", p.value)))
        return list(range(*slice(*parts).indices(n)))

    def gather_components(self, val: Any, positions: list[int], node: ast.AST) -> Any:
        """``v[a:b:c]``: a new vector of the selected components (same scalar type)."""
        from ..types.vector import vector

        loc = self.src.loc(node)
        st = scalar_of(val.type)
        items = []
        for k in positions:
            e = self.new_value(st)
            self.emit(ir.Extract(loc, e, val, [ir.Const(k, scalars.int32)]))
            items.append(e)
        r = self.new_value(vector(len(positions), st), "slice")
        self.emit(ir.Construct(loc, r, items))
        return r

    def subscript_python(self, base: PyObj, node: ast.Subscript) -> Any:
        obj = base.obj
        if getattr(obj, "_treadle_adjoint_", False):
            mark = len(self.adjoint_guards)  # type: ignore[attr-defined]
            lv = self.adjoint_lvalue(node)  # type: ignore[attr-defined]
            del self.adjoint_guards[mark:]  # type: ignore[attr-defined]  # a read: no store to guard
            if lv is None:
                raise self.err("wp.adjoint[...] can only be used inside a @wp.func_grad function", node)
            return self.load_lvalue(lv, node)  # type: ignore[attr-defined]
        try:
            key = ast.literal_eval(node.slice)
        except ValueError:
            key = MISSING
        if key is not MISSING:
            try:
                item = self.wrap_python(obj[key], node)
            except Exception:
                item = None
            if isinstance(item, ir.Const) and (isinstance(obj, (list, dict, set, bytearray, np.ndarray))
                                               or getattr(obj, "__array_interface__", None) is not None
                                               or hasattr(obj, "__cuda_array_interface__")):
                what = "array" if not isinstance(obj, (list, dict, set, bytearray)) else type(obj).__name__
                raise self.err(f"this reads a value out of a Python {what}, a mutable object: the kernel would keep "
                               "the value it had when the kernel was compiled and silently ignore later changes",
                               node, "pass the data as a kernel argument (a wp.array or a scalar), or make it a "
                               "tuple or wp.constant(...) if it never changes", CodegenTypeError)
            if item is not None:
                return item
        raise self.err("cannot index this Python object inside a kernel", node, cls=CodegenIndexError)

    def subscript_value(self, val: Any, idx: list[Any], node: ast.AST) -> Any:
        t = val.type
        loc = self.src.loc(node)
        if isinstance(t, ArrayT):
            if len(idx) > t.ndim:
                raise self.err(f"too many indices ({len(idx)}) for a {t.ndim}-d array", node, cls=CodegenIndexError)
            if any(isinstance(i, ir.SliceSpec) for i in idx):
                if t.indexed:
                    raise self.err("indexed arrays cannot be sliced in kernels", node,
                                   "index the leading dimensions with integers (arr[i]) instead",
                                   CodegenIndexError)
                kept = t.ndim - sum(1 for i in idx if not isinstance(i, ir.SliceSpec))
                r = self.new_value(ArrayT(t.dtype, kept), "slice")
                self.emit(ir.ArrayView(loc, r, val, idx))
                return r
            if len(idx) < t.ndim:
                r = self.new_value(ArrayT(t.dtype, t.ndim - len(idx), t.indexed), "view")
                self.emit(ir.ArrayView(loc, r, val, idx))
                return r
            r = self.new_value(t.dtype, "elem")
            self.emit(ir.ArrayLoad(loc, r, val, idx))
            return r
        if isinstance(t, TupleT):
            k = self.tuple_index(idx, len(t.types), node)
            r = self.new_value(t.types[k])
            self.emit(ir.Extract(loc, r, val, [ir.Const(k, idx[0].type)]))
            return r
        if is_matrix(t):
            rows, cols = t._shape_
            self.check_const_index(idx[0], rows, node)
            if len(idx) == 1:
                r = self.new_value(t._wp_row_type_, "row")
            elif len(idx) == 2:
                self.check_const_index(idx[1], cols, node)
                r = self.new_value(scalar_of(t))
            else:
                raise self.err("matrices take one or two indices", node, cls=CodegenIndexError)
            self.emit(ir.Extract(loc, r, val, idx))
            return r
        if is_vector_like(t):
            if len(idx) != 1:
                raise self.err(f"{type_str(t)} takes one index", node, cls=CodegenIndexError)
            self.check_const_index(idx[0], t._length_, node)
            r = self.new_value(scalar_of(t))
            self.emit(ir.Extract(loc, r, val, idx))
            return r
        if isinstance(t, TileT):
            return self.tile_subscript(val, idx, node)  # type: ignore[attr-defined]
        raise self.err(f"a value of type {type_str(t)} cannot be indexed", node, cls=CodegenIndexError)

    def check_const_index(self, i: Any, n: int, node: ast.AST) -> None:
        if isinstance(i, ir.Const) and not (-n <= i.value < n):
            raise self.err(f"index {i.value} is out of range for {n} components", node, cls=CodegenIndexError)
        if isinstance(i, ir.Const) and i.value < 0:
            i.value += n

    # Calls ---------------------------------------------------------------------------------------------------
    def call_builtin(self, b: Builtin, args: list[Any], node: ast.AST, consts: list[Any] | None = None,
                     keep: list[int] | None = None) -> Any:
        """Resolve ``b`` for the operand types (adapting weak literals) and emit the call.

        ``keep``: the positions that pass a runtime value (the others are compile-time type arguments).
        """
        types = [a.type for a in args]
        try:
            ov = b.resolve(types, consts)
        except NoMatch as first:
            args = self.adapt_weak(args)
            try:
                ov = b.resolve([a.type for a in args], consts)
            except NoMatch:
                sig = ", ".join(type_str(t) for t in types)
                raise self.err(f"no overload of '{b.name}' accepts ({sig}): {first}", node,
                               f"valid forms: {b.signature}", CodegenTypeError) from None
        args = args[b.static_args:] if keep is None else [args[i] for i in keep]
        if ov.ret is None:
            self.emit(ir.Call(self.src.loc(node), None, ov, args))
            return None
        if all(isinstance(a, ir.Const) for a in args) and args and b.host is not None and not ov.template:
            folded = self.fold(b, args, ov)
            if folded is not None:
                return folded
        r = self.new_value(ov.ret)
        self.emit(ir.Call(self.src.loc(node), r, ov, args))
        return r

    def fold(self, b: Builtin, args: list[ir.Const], ov: Any) -> ir.Const | None:
        """Constant-fold scalar builtins on literals, keeping weak typing (``2 * 3`` stays a weak int)."""
        if not all(scalars.is_scalar_type(a.type) for a in args) or not scalars.is_scalar_type(ov.ret):
            return None
        try:
            with np.errstate(all="ignore"):
                v = b.host_call(*[a.type(a.value) if not a.weak else a.value for a in args])
        except Exception:
            return None
        weak = all(a.weak for a in args) and ov.ret in (scalars.int32, scalars.float32)
        if isinstance(v, builtins.float) and not math.isfinite(v) and is_int(ov.ret):
            return None
        return ir.Const(v, ov.ret, weak)

    def adapt_weak(self, args: list[Any]) -> list[Any]:
        """Give weak literals the scalar type of the strongly typed operands."""
        strong = [a for a in args if not (isinstance(a, ir.Const) and a.weak)]
        if not strong or len(strong) == len(args):
            return args
        first = strong[0].type
        target = scalar_of(first.dtype if isinstance(first, TileT) else first)  # tiles: their element's scalar
        if not scalars.is_scalar_type(target):
            return args
        out = []
        for a in args:
            if isinstance(a, ir.Const) and a.weak and scalars.is_scalar_type(a.type):
                if is_int(target) and isinstance(a.value, builtins.float):
                    out.append(a)
                    continue
                out.append(convert_const(a, target))
            else:
                out.append(a)
        return out
