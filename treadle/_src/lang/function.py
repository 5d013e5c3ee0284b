"""User functions (``@func``): overloads, generic instantiation and call resolution."""

from __future__ import annotations

import ast
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.errors import CodegenError, CodegenTypeError
from ..types import scalars
from ..types.typesys import (
    GenericComposite,
    RefT,
    StaticArgT,
    TupleT,
    category_matches,
    contains_any,
    is_callable_object,
    is_function_annotation,
    normalize_annotation,
    scalar_category,
    type_str,
    types_match,
)

AnyT = Any


class FuncDef:
    """One overload of a user function: its source and declared parameter types (``Any`` for generic ones)."""

    def __init__(self, fn: Callable[..., Any], owner: Function) -> None:
        from ..compiler.source import MISSING, FuncSource

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
        from ..compiler.source import MISSING

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
        if scalar_category(t) is not None or isinstance(t, GenericComposite):
            return None, True  # `-> wp.Float`, `-> vector(3, wp.Float)`: inferred per instance
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
        from ... import config
        from ..compiler.frontend import LowerContext, lower_function

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
        self.value_type = getattr(f, "value_type", f.return_type)
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
        from ... import config
        from ..compiler.frontend import LowerContext, lower_function
        from ..compiler.source import FuncSource

        ctx = LowerContext(max_unroll=config.max_unroll)
        r, _ = lower_function(FuncSource(fn), list(self.types), is_kernel=False, ctx=ctx,
                              return_type=self.return_type, infer_return=False)
        self.deps = list({id(d): d for d in self.deps + list(ctx.deps)}.values())
        return r

    def _native_ir(self) -> Any:
        """A ``@func_native`` function: parameters only; the emitter writes the C++ snippet as the body."""
        from ..compiler import ir

        ret, _ = self.fdef.declared_return()
        params = [ir.Local(i + 1, n, t) for i, (n, t) in enumerate(zip(self.fdef.param_names, self.types))]
        f = ir.FuncIR(name=self.name, params=params, return_type=ret, body=ir.Block(), locals=[], is_kernel=False,
                      loc=self.fdef.src.loc(self.fdef.src.tree))
        f.native = self.fdef.owner.native_snippet  # type: ignore[attr-defined]
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
        from ... import config
        from ..compiler.frontend import LowerContext, lower_function
        from ..compiler.source import FuncSource
        from ..types.typesys import TupleT

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


class Function:
    """A user function decorated with ``@func``; calling it from Python runs the Python body."""

    _treadle_function_ = True

    def __init__(self, fn: Callable[..., Any], key: str, module: str) -> None:
        self.key = key
        self.name = fn.__name__
        self.module = module
        self.func = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = module
        self.__wrapped__ = fn  # inspect.signature() shows the user's parameters
        self.overloads: list[FuncDef] = []
        self._pending: list[Callable[..., Any]] = [fn]
        self.custom_grad: Any = None
        #: every @func_grad given to this function (one per overload); ``custom_grad`` is the latest
        self.custom_grads: list[Any] = []
        self.custom_replay: Any = None
        self.native_snippet: Any = None

    def add_overload(self, fn: Callable[..., Any]) -> None:
        self._pending.append(fn)

    def defs(self) -> list[FuncDef]:
        """Overloads, parsed on first use (so annotations may name things defined later in the module)."""
        while self._pending:
            fdef = FuncDef(self._pending[0], self)  # raises (and stays pending) when the source is unreadable
            self._pending.pop(0)
            self.overloads = [o for o in self.overloads if o.param_types != fdef.param_types] + [fdef]
        return self.overloads

    def grad_for(self, fdef: FuncDef) -> Any:
        """The ``@func_grad`` of overload ``fdef``: the latest whose leading parameter types are the overload's.

        Without such a match (e.g. a generic overload), the latest ``@func_grad`` given.
        """
        if len(self.custom_grads) > 1:
            n = len(fdef.param_types)
            for fn in reversed(self.custom_grads):
                try:
                    types = FuncDef(fn, self).param_types[:n]
                except CodegenError:
                    continue
                if types == fdef.param_types:
                    return fn
        return self.custom_grad

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the Python body of the overload that the arguments' types select (as kernels would)."""
        try:
            ov = self.get_overload([_py_value_type(a) for a in args],
                                   {k: _py_value_type(v) for k, v in kwargs.items()})
        except CodegenError:  # no readable source or annotations (e.g. defined in an exec string): run it as is
            return self.func(*args, **kwargs)
        if ov is None:
            shown = args if not kwargs else (*args, *(f"{k}={v!r}" for k, v in kwargs.items()))
            raise RuntimeError(f"Error calling function '{self.name}', no overload found for arguments {shown!r}")
        fdef = ov if isinstance(ov, FuncDef) else ov.defs()[-1]
        names = fdef.param_names
        given = len(args) + len(kwargs)
        if len(args) > len(names) or any(n not in fdef.defaults and n not in kwargs for n in names[len(args):]):
            raise RuntimeError(f"Invalid number of arguments for function '{self.name}', expected {len(names)}, "
                               f"got {given}")
        bound = {n: fdef.defaults[n] for n in names[len(args):] if n not in kwargs}
        return fdef.fn(*args, **kwargs, **bound)

    def get_overload(self, arg_types: list[Any], kwarg_types: dict[str, Any]) -> FuncDef | None:
        """The overload that a call with these argument types selects, or ``None``.

        Types are kernel types, Python-scope argument types, or ``None`` (unknown: matches any parameter). The
        overload's ``defaults`` may be edited; kernels built later see the change.
        """
        arg_types = [_norm_arg_type(t) for t in arg_types]
        kwarg_types = {k: _norm_arg_type(t) for k, t in kwarg_types.items()}
        best: tuple[int, FuncDef] | None = None
        for fdef in self.defs():
            names = fdef.param_names
            if len(arg_types) > len(names) or any(k not in names[len(arg_types):] for k in kwarg_types):
                continue
            score = 0
            for n, pt in zip(names, fdef.param_types):
                i = names.index(n)
                if i < len(arg_types) or n in kwarg_types:
                    at = arg_types[i] if i < len(arg_types) else kwarg_types[n]
                    m = _py_match(pt, at)
                    if m is None:
                        break
                    score += m
                elif n not in fdef.defaults:
                    break
            else:
                if best is None or score < best[0]:
                    best = (score, fdef)
        return best[1] if best is not None else None

    @property
    def defaults(self) -> dict[str, Any]:
        """Default argument values of the (latest) overload, by parameter name; kernels built later see changes."""
        return self.defs()[-1].defaults

    @defaults.setter
    def defaults(self, values: dict[str, Any]) -> None:
        self.defs()[-1].defaults = dict(values)

    def __repr__(self) -> str:
        return f"<treadle function {self.key}>"

    # Kernel-side call resolution ------------------------------------------------------------------------------
    def resolve_call(self, raw: list[Any], kwargs: dict[str, Any], low: Any, node: ast.AST) -> tuple[Any, list[Any]]:
        """Pick the overload for a call from kernel code; returns the instance and the ordered operands."""
        from ..compiler.lower_expr import convert_const

        candidates: list[tuple[int, FuncDef, list[Any], tuple[Any, ...]]] = []
        errors: list[str] = []
        for fdef in self.defs():
            try:
                ops = self._bind(fdef, raw, kwargs, low, node)
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
                    if pt is AnyT or _array_generic_match(pt, op.type) or types_match(pt, op.type):
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
                f"no overload of function '{self.name}' accepts ({given})" + (f": {detail}" if detail else ""),
                low.src.loc(node),
                "check the argument types against the function's annotations",
            )
        candidates.sort(key=lambda c: c[0])
        _, fdef, ops, chosen = candidates[0]
        ops = [convert_const(o, t) if getattr(o, "weak", False) and o.type != t and scalars.is_scalar_type(t) else o
               for o, t in zip(ops, chosen) if not isinstance(o, _StaticArg)]
        pending = fdef.instances.get(chosen)
        if pending is not None and pending._lowering:
            raise CodegenError(f"'{self.name}' calls itself (directly or indirectly); recursion is not supported "
                               "in kernels", low.src.loc(node), "rewrite the recursion as a loop")
        return fdef.instance(chosen), ops

    def _bind(self, fdef: FuncDef, raw: list[Any], kwargs: dict[str, Any], low: Any, node: ast.AST) -> list[Any]:
        from ..compiler.lower_expr import PyObj

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


class _PyLiteral:
    """The type of a plain Python ``int``/``float``/``bool`` argument (untyped until an overload is chosen)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


_PY_INT, _PY_FLOAT, _PY_BOOL, _PY_CALLABLE = (_PyLiteral(k) for k in ("int", "float", "bool", "callable"))


def _py_value_type(v: Any) -> Any:
    """The type of a Python-scope argument for overload selection (``None``: unknown, matches any parameter)."""
    from .array import array as _array

    if isinstance(v, (np.generic, np.ndarray)) and v.ndim == 0:
        return scalars.scalar_from_numpy(v.dtype)  # NumPy scalars (np.float64 is also a Python float)
    if isinstance(v, bool):
        return _PY_BOOL
    if isinstance(v, int):
        return _PY_INT
    if isinstance(v, float):
        return _PY_FLOAT
    if isinstance(v, scalars.scalar_base):
        return type(v)
    if is_callable_object(v):
        return StaticArgT(v)
    if callable(v) and not isinstance(v, type):
        return _PY_CALLABLE
    if isinstance(v, _array):
        from ..types.typesys import ArrayT

        return ArrayT(v.dtype, v.ndim, getattr(v, "_indexed_", False))
    st = getattr(v, "_struct_type_", None)
    if st is not None:
        return st
    from ..types.typesys import is_composite

    if is_composite(type(v)):
        return type(v)
    return None


def _norm_arg_type(t: Any) -> Any:
    """Python's ``int``/``float``/``bool`` as untyped literals; annotations (``wp.array[float]``) normalised."""
    import builtins

    lits = {builtins.bool: _PY_BOOL, builtins.int: _PY_INT, builtins.float: _PY_FLOAT}
    if isinstance(t, type) and t in lits:
        return lits[t]
    if t is None or isinstance(t, (_PyLiteral, StaticArgT)):
        return t
    return normalize_annotation(t)


def _py_match(pt: Any, at: Any) -> int | None:
    """How well a Python-scope argument type fits a parameter (0 best), or ``None`` when it does not."""
    if isinstance(pt, RefT):
        pt = pt.t
    if at is _PY_CALLABLE:
        return None
    if at is None or pt is AnyT:
        return 0 if at is None else 3
    cat = scalar_category(pt)
    if isinstance(at, _PyLiteral):
        lit = {"int": scalars.int32, "float": scalars.float32, "bool": scalars.bool}[at.kind]
        if pt == lit:
            return 0
        if at is _PY_INT and scalars.is_scalar_type(pt) and pt is not scalars.bool:
            return 1 if getattr(pt, "_is_int_", False) else 2
        if cat is not None and category_matches(cat, lit):
            return 2
        return None
    if isinstance(at, StaticArgT):
        return 0 if is_function_annotation(pt) else None
    if pt == at:
        return 0
    if types_match(pt, at) or _array_generic_match(pt, at):
        return 1
    return None


class _BindError(Exception):
    pass


class _StaticArg:
    """A function passed as an argument: no runtime value; its type selects the specialisation."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.type = StaticArgT(obj)


def _array_generic_match(pt: Any, at: Any) -> bool:
    from ..types.typesys import ArrayT

    return (isinstance(pt, ArrayT) and isinstance(at, ArrayT) and pt.ndim == at.ndim
            and (pt.dtype is AnyT or types_match(pt.dtype, at.dtype)))
