"""The one table of builtins.

Each builtin is declared once (see :func:`builtin`): name, type rule, C++ symbol, differentiability, doc group,
docstring, and an optional host implementation. Everything else reads this declaration: type inference
(:meth:`Builtin.resolve`), the C++ emitter (``Overload.cpp``), autodiff (``adj_<cpp>`` by convention, see
``treadle/native``), Python-scope calls (:meth:`Builtin.host_call`), the public module attributes and the docs.

Type rules are plain functions ``rule(types, consts) -> return type`` that raise :class:`NoMatch` when the
argument types do not fit. ``consts`` holds the Python value of each argument that is a compile-time constant
(``NOT_CONST`` otherwise), for builtins whose result type depends on a value (``identity(n=3, dtype=float)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..types.typesys import is_composite, scalar_of, type_str


class NoMatch(Exception):
    """Raised by a type rule whose argument types do not fit."""


class _NotConst:
    def __repr__(self) -> str:
        return "NOT_CONST"


NOT_CONST: Any = _NotConst()

TypeRule = Callable[[Sequence[Any], Sequence[Any]], Any]


@dataclasses.dataclass(frozen=True, eq=False)
class Overload:
    """A builtin resolved for concrete argument types."""

    builtin: Builtin
    arg_types: tuple[Any, ...]
    ret: Any
    cpp: str
    template: tuple[Any, ...] = ()

    @property
    def differentiable(self) -> bool:
        """Whether gradients flow through this call."""
        return self.builtin.differentiable


@dataclasses.dataclass(eq=False)
class Builtin:
    """One builtin function as declared in a group file."""

    name: str
    group: str
    rule: TypeRule
    doc: str
    signature: str
    cpp: str
    differentiable: bool = True
    host: Callable[..., Any] | None = None
    kernel_only: bool = False
    lowering: str = "call"
    template: Callable[[Sequence[Any], Any], Sequence[Any]] | None = None
    static_args: int = 0
    ref_args: tuple[int, ...] = ()
    _cache: dict[tuple[Any, ...], Overload] = dataclasses.field(default_factory=dict)

    def resolve(self, types: Sequence[Any], consts: Sequence[Any] | None = None) -> Overload:
        """The overload for these argument types; raises :class:`NoMatch` with a readable reason otherwise."""
        key = tuple(types)
        if consts is None or all(c is NOT_CONST for c in consts):
            hit = self._cache.get(key)
            if hit is not None:
                return hit
            cacheable = True
            consts = [NOT_CONST] * len(types)
        else:
            cacheable = False
        ret = self.rule(list(types), list(consts))
        template = tuple(self.template(list(types), ret)) if self.template else ()
        ov = Overload(self, key, ret, self.cpp, template)
        if cacheable:
            self._cache[key] = ov
        return ov

    def host_call(self, *args: Any) -> Any:
        """Evaluate the builtin on host values (Python scope)."""
        if self.host is None or self.kernel_only:
            raise RuntimeError(
                f"'{self.name}' can only be called inside a @kernel or @func, not from Python scope"
            )
        from ..types.hostvals import from_numpy_result, host_type_of, to_numpy

        types = [host_type_of(a) for a in args]
        try:
            ov = self.resolve(types)
        except NoMatch as e:
            sig = ", ".join(type_str(t) for t in types)
            raise TypeError(f"{self.name}({sig}): {e}. Valid forms: {self.signature}") from None
        values = [to_numpy(a, t) for a, t in zip(args, types)]
        # Host implementations marked _treadle_typed_ also receive the argument types (e.g. quaternion products).
        result = self.host(types, *values) if getattr(self.host, "_treadle_typed_", False) else self.host(*values)
        return from_numpy_result(result, ov.ret)


class Registry:
    """All builtins by name."""

    def __init__(self) -> None:
        self.builtins: dict[str, Builtin] = {}

    def add(self, b: Builtin) -> Builtin:
        if b.name in self.builtins:
            raise ValueError(f"builtin '{b.name}' declared twice")
        self.builtins[b.name] = b
        return b

    def get(self, name: str) -> Builtin | None:
        return self.builtins.get(name)

    def groups(self) -> dict[str, list[Builtin]]:
        out: dict[str, list[Builtin]] = {}
        for b in self.builtins.values():
            out.setdefault(b.group, []).append(b)
        return out


REGISTRY = Registry()


def builtin(
    name: str,
    *,
    group: str,
    rule: TypeRule,
    doc: str,
    signature: str,
    cpp: str | None = None,
    differentiable: bool = True,
    host: Callable[..., Any] | None = None,
    kernel_only: bool = False,
    lowering: str = "call",
    template: Callable[[Sequence[Any], Any], Sequence[Any]] | None = None,
    static_args: int = 0,
    ref_args: tuple[int, ...] = (),
) -> Builtin:
    """Declare a builtin (the only way builtins come into existence).

    ``ref_args`` lists argument positions passed by reference: the caller must pass a variable, which the builtin
    may update in place (``hash_grid_query_next(query, index)``).
    """
    return REGISTRY.add(
        Builtin(
            name=name,
            group=group,
            rule=rule,
            doc=doc,
            signature=signature,
            cpp=cpp if cpp is not None else name,
            differentiable=differentiable,
            host=host,
            kernel_only=kernel_only,
            lowering=lowering,
            template=template,
            static_args=static_args,
            ref_args=ref_args,
        )
    )


# ----------------------------------------------------------------------------------------------------------------
# Rule helpers shared by the group files
# ----------------------------------------------------------------------------------------------------------------


def need(cond: bool, why: str) -> None:
    """Raise :class:`NoMatch` with ``why`` unless ``cond``."""
    if not cond:
        raise NoMatch(why)


def arity(types: Sequence[Any], *counts: int) -> None:
    """Require one of the given argument counts."""
    if len(types) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise NoMatch(f"expected {want} argument(s), got {len(types)}")


def same(types: Sequence[Any]) -> Any:
    """Require all argument types to be equal and return it."""
    first = types[0]
    for t in types[1:]:
        if t != first:
            raise NoMatch("arguments must have the same type, got " + ", ".join(type_str(x) for x in types))
    return first


def np_scalar(t: Any) -> Any:
    """The NumPy dtype of a scalar or composite type."""
    return scalar_of(t)._np_


def composite_or_scalar(t: Any) -> bool:
    """True for numeric scalars and composites."""
    from ..types.typesys import is_float, is_int

    return is_float(t) or is_int(t) or is_composite(t)


def as_array(x: Any) -> np.ndarray:
    """A NumPy view of a host value (helper for host implementations)."""
    return np.asarray(x)
