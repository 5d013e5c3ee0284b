"""User functions as the compiler sees them: overloads (:class:`FuncDef`), instances, and call resolution.

The front end's ``Function`` (``lang/function.py``: the ``@func`` decorator's object, callable from Python) keeps
its overloads as :class:`FuncDef` objects, parsed on first use. A kernel's call of a function is resolved here
(:func:`resolve_call`): the overload the argument types select, instantiated for those types
(:class:`FuncInstance`), which lowers the function body (and its ``@func_grad``/``@func_replay`` bodies) to IR.

The owner is read through what the compiler needs of it: ``key``, ``name``, ``native_snippet``, ``custom_grad``,
``custom_replay``, ``grad_for(fdef)`` and ``defs()``.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

from ... import config
from ..core.errors import CodegenError, CodegenTypeError
from ..types import scalars
from ..types.typesys import (
    ArrayT,
    GenericComposite,
    RefT,
    StaticArgT,
    TileT,
    TupleT,
    contains_any,
    is_callable_object,
    is_function_annotation,
    normalize_annotation,
    scalar_category,
    type_str,
    types_match,
)
from . import ir
from .lower_expr import PyObj, convert_const
from .source import MISSING, FuncSource

AnyT = Any


class FuncDef:
    """One overload of a user function: its source and declared parameter types (``Any`` for generic ones)."""

    def __init__(self, fn: Callable[..., Any], owner: Any) -> None:

        self.fn = fn
        self.owner = owner
        self.src = FuncSource(fn)
        self.param_names: list[str] = []
        self.param_types: list[Any] = []
        self.defaults: dict[str, Any] = {}
        args = self.src.tree.args.args
        for p, node in zip(self.src.signature.parameters.values(), args):
            self.param_names.append(p.name)
            ann = self.src.eval_annotation(node.annotation, p.annotation)
            if ann is MISSING:
                raise CodegenError(
                    f"parameter '{p.name}' of '{self.src.qualname}' has no type annotation",
                    self.src.loc(node),
                    f"annotate it, e.g. '{p.name}: float' (or '{p.name}: typing.Any' for a generic function)",
                )
            self.param_types.append(normalize_annotation(ann))
            if p.default is not inspect.Parameter.empty:
                self.defaults[p.name] = p.default
        ret = self.src.signature.return_annotation
        self.return_annotation = (
            MISSING if ret is inspect.Signature.empty else self.src.eval_annotation(self.src.tree.returns, ret)
        )
        self.instances: dict[tuple[Any, ...], FuncInstance] = {}
        self.is_generic = any(contains_any(t) for t in self.param_types)

    def declared_return(self) -> tuple[Any, bool]:
        """(return type, infer?) from the annotation."""
        r = self.return_annotation
        if r is MISSING:
            return None, True
        if r is None:
            return None, False
        if isinstance(r, tuple):
            return TupleT(tuple(normalize_annotation(x) for x in r)), False
        origin = getattr(r, "__origin__", None)
        if origin is tuple:
            return TupleT(tuple(normalize_annotation(x) for x in r.__args__)), False
        t = normalize_annotation(r)
        if t is Any or scalar_category(t) is not None or isinstance(t, GenericComposite):
            return None, True  # `-> Any`, `-> wp.Float`, `-> vector(3, wp.Float)`: inferred per instance
        return t, False

    def instance(self, types: tuple[Any, ...]) -> FuncInstance:
        inst = self.instances.get(types)
        if inst is None:
            inst = FuncInstance(self, types)
            self.instances[types] = inst
            try:
                inst.lower()
            except BaseException:
                del self.instances[types]
                raise
        else:
            inst.lower()  # raises the recursion error when called while being lowered
        return inst


class FuncInstance:
    """A function overload lowered for concrete parameter types."""

    def __init__(self, fdef: FuncDef, types: tuple[Any, ...]) -> None:
        self.fdef = fdef
        self.types = types
        self.name = fdef.src.qualname
        self._ir: Any = None
        self._lowering = False
        self.deps: list[FuncInstance] = []
        self.return_type: Any = None
        #: positions of the ``wp.ref[T]`` parameters: the instance returns ``(result?, *final values)`` and the
        #: caller stores those values back into its arguments (copy-in/copy-out, so autodiff sees plain data flow)
        self.ref_positions = [i for i, t in enumerate(fdef.param_types) if isinstance(t, RefT)]
        #: tile parameters the body updates in place (``t += u``, ``t[i] = v``, ``tile_assign(t, ...)``): as in the
        #: reference, the caller's tile sees the update; they are copied back like ``wp.ref`` parameters, but the
        #: caller may pass any tile expression (a temporary's update is then dropped)
        self.tile_refs = tile_params_updated(fdef, types) if fdef.owner.native_snippet is None else []
        self.ref_positions += [i for i in self.tile_refs if i not in self.ref_positions]
        #: the function's own result type when it has ref parameters (``return_type`` is then the wrapping tuple)
        self.value_type: Any = None
        ident = "|".join(type_str(t) for t in types)
        digest = hashlib.sha256(f"{fdef.owner.key}|{fdef.src.source_hash}|{ident}".encode()).hexdigest()[:12]
        self.cname = f"fn_{_c_ident(fdef.src.name)}_{digest}"

    def lower(self) -> Any:
        """Lower (once); recursion is reported as an error at the recursive call."""
        if self._ir is not None:
            return self._ir
        if self._lowering:
            raise CodegenError(f"'{self.name}' calls itself (directly or indirectly); recursion is not supported "
                               "in kernels", self.fdef.src.loc(self.fdef.src.tree),
                               "rewrite it with a loop")
        from .frontend import LowerContext, lower_function

        if self.fdef.owner.native_snippet is not None:
            if self.ref_positions:
                raise CodegenError(f"'{self.name}': wp.ref[...] parameters are not supported in @wp.func_native "
                                   "functions", self.fdef.src.loc(self.fdef.src.tree),
                                   "return the new value from the snippet instead (or write a @wp.func)")
            return self._native_ir()
        self._lowering = True
        try:
            ret, infer = self.fdef.declared_return()
            ctx = LowerContext(max_unroll=config.max_unroll)
            refs = [self.fdef.param_names[i] for i in self.ref_positions]
            f, _ = lower_function(self.fdef.src, list(self.types), is_kernel=False, ctx=ctx, return_type=ret,
                                  infer_return=infer, ref_params=refs)
        finally:
            self._lowering = False
        self._ir = f
        self.return_type = f.return_type
        self.value_type = f.value_type
        self.deps = list(ctx.deps)
        if any(isinstance(t, StaticArgT) for t in self.types) and (
                self.fdef.owner.custom_grad is not None or self.fdef.owner.custom_replay is not None):
            raise CodegenError(f"'{self.name}': functions with Function parameters (wp.Function) cannot have "
                               "custom gradients or replay functions", self.fdef.src.loc(self.fdef.src.tree),
                               "pass the value the function computes instead, or drop @wp.func_grad/@wp.func_replay")
        self.grad_ir = self._lower_custom_grad()
        self.replay_ir = self._lower_custom_replay()
        return f

    def _lower_custom_replay(self) -> Any:
        """Lower the ``@func_replay`` replacement used by the backward pass's forward replay, if any."""
        fn = self.fdef.owner.custom_replay
        if fn is None:
            return None
        from .frontend import LowerContext, lower_function

        ctx = LowerContext(max_unroll=config.max_unroll)
        r, _ = lower_function(FuncSource(fn), list(self.types), is_kernel=False, ctx=ctx,
                              return_type=self.return_type, infer_return=False)
        self.deps = list({id(d): d for d in self.deps + list(ctx.deps)}.values())
        return r

    def _native_ir(self) -> Any:
        """A ``@func_native`` function: parameters only; the emitter writes the C++ snippet as the body."""
        ret, _ = self.fdef.declared_return()
        params = [ir.Local(i + 1, n, t) for i, (n, t) in enumerate(zip(self.fdef.param_names, self.types))]
        f = ir.FuncIR(name=self.name, params=params, return_type=ret, body=ir.Block(), locals=[], is_kernel=False,
                      loc=self.fdef.src.loc(self.fdef.src.tree), value_type=ret,
                      native=self.fdef.owner.native_snippet)
        self._ir = f
        self.return_type = ret
        self.deps = []
        self.grad_ir = None
        self.replay_ir = None
        return f

    def _lower_custom_grad(self) -> Any:
        """Lower the ``@func_grad`` adjoint of this function, if it has one."""
        grad_fn = self.fdef.owner.grad_for(self.fdef)
        if grad_fn is None:
            return None
        from .frontend import LowerContext, lower_function

        src = FuncSource(grad_fn)
        n_primal = len(self.types)
        types = list(self.types) + ([self.return_type] if self.return_type is not None else [])
        nparams = len(src.tree.args.args)
        if isinstance(self.return_type, TupleT) and nparams == n_primal + len(self.return_type.types) != len(types):
            types = list(self.types) + list(self.return_type.types)  # one adjoint parameter per returned value
        if nparams != len(types):
            raise CodegenError(
                f"the custom gradient of '{self.name}' must take the function's {n_primal} parameter(s)"
                + (" followed by the adjoint of its return value" if self.return_type is not None else "")
                + f", got {nparams} parameter(s)", src.loc(src.tree),
                "e.g. def adj_f(x: float, adj_ret: float): wp.adjoint[x] += ...")
        ctx = LowerContext(max_unroll=config.max_unroll)
        names = self.fdef.param_names
        g, _ = lower_function(src, types, is_kernel=False, ctx=ctx, return_type=None, infer_return=False,
                              adjoint_of=names)
        self.deps = list({id(d): d for d in self.deps + list(ctx.deps)}.values())
        return g

    @property
    def ir(self) -> Any:
        return self.lower()


def _c_ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)



def resolve_call(func: Any, raw: list[Any], kwargs: dict[str, Any], low: Any, node: ast.AST) -> tuple[Any, list[Any]]:
    """Pick the overload of user function ``func`` for a call from kernel code.

    ``func`` is the front end's ``Function`` (``defs()``: its overloads, ``name``); ``low`` the frontend lowering
    the call. Returns the function instance and the ordered operands.
    """
    candidates: list[tuple[int, FuncDef, list[Any], tuple[Any, ...]]] = []
    errors: list[str] = []
    for fdef in func.defs():
        try:
            ops = _bind(fdef, raw, kwargs, low, node)
        except _BindError as e:
            errors.append(str(e))
            continue
        score = 0
        types: list[Any] = []
        ok = True
        for op, pt in zip(ops, fdef.param_types):
            if isinstance(op, _StaticArg):  # a function argument: specialise on it (static dispatch)
                if pt is AnyT or is_function_annotation(pt):
                    types.append(op.type)
                    continue
                ok = False
                errors.append(f"a function cannot be passed where {type_str(pt)} is declared")
                break
            if isinstance(pt, RefT):  # by reference: the argument's type must match exactly (no conversion)
                if op.type == pt.t or (contains_any(pt.t) and types_match(pt.t, op.type)):
                    types.append(op.type)
                    continue
                ok = False
                errors.append(f"({', '.join(type_str(t) for t in fdef.param_types)}): argument of type "
                              f"{type_str(op.type)} does not match {type_str(pt)}")
                break
            if contains_any(pt):
                if pt is AnyT or array_generic_match(pt, op.type) or types_match(pt, op.type):
                    types.append(op.type)
                    score += 1
                    continue
                ok = False
                break
            if op.type == pt:
                types.append(pt)
                continue
            if getattr(op, "weak", False) and scalars.is_scalar_type(pt):
                try:
                    convert_const(op, pt)
                except ValueError:
                    ok = False
                    break
                types.append(pt)
                score += 2
                continue
            ok = False
            errors.append(f"({', '.join(type_str(t) for t in fdef.param_types)}): argument of type "
                          f"{type_str(op.type)} does not match {type_str(pt)}")
            break
        if ok:
            candidates.append((score, fdef, ops, tuple(types)))
    if not candidates:
        given = ", ".join(type_str(getattr(o, "type", None)) for o in raw)
        detail = "; ".join(errors) if errors else ""
        raise CodegenTypeError(
            f"no overload of function '{func.name}' accepts ({given})" + (f": {detail}" if detail else ""),
            low.src.loc(node),
            "check the argument types against the function's annotations",
        )
    candidates.sort(key=lambda c: c[0])
    _, fdef, ops, chosen = candidates[0]
    ops = [convert_const(o, t) if getattr(o, "weak", False) and o.type != t and scalars.is_scalar_type(t) else o
           for o, t in zip(ops, chosen) if not isinstance(o, _StaticArg)]
    pending = fdef.instances.get(chosen)
    if pending is not None and pending._lowering:
        raise CodegenError(f"'{func.name}' calls itself (directly or indirectly); recursion is not supported "
                           "in kernels", low.src.loc(node), "rewrite the recursion as a loop")
    return fdef.instance(chosen), ops

def _bind(fdef: FuncDef, raw: list[Any], kwargs: dict[str, Any], low: Any, node: ast.AST) -> list[Any]:
    names = fdef.param_names
    if len(raw) > len(names):
        raise _BindError(f"takes {len(names)} argument(s) but {len(raw)} were given")
    bound: dict[str, Any] = dict(zip(names, raw))
    for k, v in kwargs.items():
        if k not in names:
            raise _BindError(f"has no parameter named '{k}'")
        if k in bound:
            raise _BindError(f"got multiple values for '{k}'")
        bound[k] = v
    ops = []
    for n in names:
        if n in bound:
            v = bound[n]
        elif n in fdef.defaults:
            v = low.wrap_python(fdef.defaults[n], node)
        else:
            raise _BindError(f"missing argument '{n}'")
        if isinstance(v, PyObj) and is_callable_object(v.obj):
            ops.append(_StaticArg(v.obj))
            continue
        ops.append(low.as_operand(v, node))
    return ops


class _BindError(Exception):
    pass


class _StaticArg:
    """A function passed as an argument: no runtime value; its type selects the specialisation."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.type = StaticArgT(obj)


def array_generic_match(pt: Any, at: Any) -> bool:
    """Whether array type ``at`` fits the generic array parameter ``pt`` (same ndim, dtype ``Any`` or matching)."""
    return (isinstance(pt, ArrayT) and isinstance(at, ArrayT) and pt.ndim == at.ndim
            and (pt.dtype is AnyT or types_match(pt.dtype, at.dtype)))


__all__ = ["FuncDef", "FuncInstance", "array_generic_match", "resolve_call"]


def tile_params_updated(fdef: FuncDef, types: tuple[Any, ...]) -> list[int]:
    """Positions of tile parameters that the body updates in place and never rebinds (``t = ...``)."""
    from ..builtins import REGISTRY

    names = {n: i for i, n in enumerate(fdef.param_names) if i < len(types) and isinstance(types[i], TileT)}
    if not names:
        return []
    updated: set[str] = set()
    rebound: set[str] = set()

    def base(e: ast.expr) -> str | None:
        while isinstance(e, ast.Subscript):
            e = e.value
        return e.id if isinstance(e, ast.Name) else None

    for node in ast.walk(fdef.src.tree):
        if isinstance(node, ast.AugAssign):
            n = base(node.target)
            if n is not None:
                updated.add(n)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                    if isinstance(e, ast.Name):
                        rebound.add(e.id)
                    elif isinstance(e, ast.Subscript) and base(e) is not None:
                        updated.add(base(e))  # type: ignore[arg-type]
        elif isinstance(node, ast.Call):
            f = node.func
            b = REGISTRY.builtins.get(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name)
                                      else "")
            if b is None or not b.params:
                continue
            inout = [p.name for p in b.params if p.inout]
            given = {p.name: a for p, a in zip(b.params, node.args)}
            given.update({k.arg: k.value for k in node.keywords if k.arg is not None})
            for pname in inout:
                a = given.get(pname)
                if isinstance(a, ast.Name):
                    updated.add(a.id)
    return sorted(names[n] for n in updated - rebound if n in names)
