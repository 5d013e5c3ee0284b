"""Which kernels can give different results from run to run when their threads run in parallel.

``wp.config.deterministic`` runs such kernels' launches serially, in thread-index order (see ``lang/launch.py``).
A kernel is order-dependent when it (or a function it calls) performs

- an atomic on floating-point values: a float sum's rounding depends on the order of the additions; or
- an atomic whose old value is used: ``slot = wp.atomic_add(counter, 0, 1)`` hands out slots in thread order.

Integer atomics whose result is unused (counts, histograms, min/max) commute exactly and stay parallel.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..lang.typesys import is_float, scalar_of
from . import ir


def _operands(s: ir.Stmt) -> list[Any]:
    out: list[Any] = []
    for f in dataclasses.fields(s):
        if f.name in ("result", "loc"):
            continue
        v = getattr(s, f.name)
        if isinstance(v, (list, tuple)):
            out.extend(v)
        else:
            out.append(v)
    return out


def _is_float_atomic(s: ir.ArrayAtomic) -> bool:
    t = getattr(s.array, "type", None)
    dtype = getattr(t, "dtype", None)
    try:
        return dtype is not None and bool(is_float(scalar_of(dtype)))
    except Exception:  # noqa: BLE001 - unknown element types are treated as order-dependent
        return True


def order_dependent(f: ir.FuncIR) -> bool:
    """Whether ``f``'s own statements contain an order-dependent atomic (see the module docstring)."""
    stmts = list(ir.walk(f.body))
    atomics = [s for s in stmts if isinstance(s, ir.ArrayAtomic)]
    if not atomics:
        return False
    if any(_is_float_atomic(s) for s in atomics):
        return True
    results = {id(s.result) for s in atomics if s.result is not None}
    if not results:
        return False
    return any(id(op) in results for s in stmts for op in _operands(s))


def kernel_order_dependent(kernel_ir: ir.FuncIR, deps: list[Any]) -> bool:
    """:func:`order_dependent` over a kernel and every function it calls."""
    if order_dependent(kernel_ir):
        return True
    seen: set[int] = set()
    todo = list(deps)
    while todo:
        fi = todo.pop()
        if id(fi) in seen:
            continue
        seen.add(id(fi))
        fir = getattr(fi, "ir", None)
        if fir is not None and order_dependent(fir):
            return True
        todo.extend(getattr(fi, "deps", []) or [])
    return False
