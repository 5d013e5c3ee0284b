"""User functions (``@func``): the declaration, its overloads, and calls from Python.

Kernel calls of a function are resolved by the compiler (``compiler/functions.py``: overloads, instances, call
resolution); this object is what the decorator returns and what Python code calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..compiler.functions import FuncDef, array_generic_match
from ..core.errors import CodegenError
from ..types import scalars
from ..types.typesys import (
    RefT,
    StaticArgT,
    category_matches,
    is_callable_object,
    is_function_annotation,
    normalize_annotation,
    scalar_category,
    types_match,
)

AnyT = Any


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
        #: the reference API's inlining hint (``wp.func(inline=...)``): kept, not lowered (the compiler decides)
        self.inline: bool | None = None
        #: every @func_grad given to this function (one per overload); ``custom_grad`` is the latest
        self.custom_grads: list[Any] = []
        self.custom_replay: Any = None
        self.native_snippet: Any = None

    def add_overload(self, fn: Callable[..., Any]) -> None:
        """Add ``fn`` (a Python function with the same name and other parameter types) as an overload."""
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
    if types_match(pt, at) or array_generic_match(pt, at):
        return 1
    return None


