"""What the launcher needs to know about a kernel's atomics.

**Order dependence.** ``wp.config.deterministic`` runs the launches of order-dependent kernels serially, in
thread-index order (see ``backends/cpu/launch.py``). A kernel is order-dependent when it (or a function it calls) performs

- an atomic on floating-point values: a float sum's rounding depends on the order of the additions; or
- an atomic whose old value is used: ``slot = wp.atomic_add(counter, 0, 1)`` hands out slots in thread order.

Integer atomics whose result is unused (counts, histograms, min/max) commute exactly and stay parallel.

**Combinable adds.** :func:`combinable_targets` finds kernels whose float ``atomic_add`` / ``atomic_sub`` may be
summed per thread before they reach memory (``reductions.py``): every such atomic targets an array parameter
directly, its old value is unused, the parameter is used for nothing else, and no called function does atomics.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..types.typesys import is_float, scalar_of
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


def _defs(f: ir.FuncIR) -> dict[int, ir.Stmt]:
    return {id(getattr(s, "result", None)): s for s in ir.walk(f.body) if getattr(s, "result", None) is not None}


def _calls_atomics(f: ir.FuncIR, seen: set[int]) -> bool:
    """Whether a function called from ``f`` (transitively) performs atomics, or cannot be inspected."""
    for s in ir.walk(f.body):
        if isinstance(s, (ir.CallFunc, getattr(ir, "CallGrad", ir.CallFunc))):
            fi = getattr(s, "func", None)
            if id(fi) in seen:
                continue
            seen.add(id(fi))
            fir = getattr(fi, "ir", None)
            if fir is None or any(isinstance(t, ir.ArrayAtomic) for t in ir.walk(fir.body)):
                return True
            if _calls_atomics(fir, seen):
                return True
    return False


def combinable_targets(f: ir.FuncIR) -> list[str] | None:
    """Names of the array parameters whose float atomic adds may be combined per thread, or ``None``."""
    from ..types.typesys import ArrayT, is_struct

    if any(is_struct(p.type) for p in f.params):
        return None  # arrays inside structs could alias a target
    stmts = list(ir.walk(f.body))
    float_adds = [s for s in stmts if isinstance(s, ir.ArrayAtomic) and s.op in ("add", "sub") and _is_float_atomic(s)]
    if not float_adds:
        return None
    if any(isinstance(s, ir.ArrayAtomic) and s not in float_adds and _is_float_atomic(s) for s in stmts):
        return None  # float min/max/cas/exch with combining on would see stale values
    if _calls_atomics(f, set()):
        return None
    params = {id(p): p for p in f.params if isinstance(p.type, ArrayT)}
    stored = {id(s.local) for s in stmts if isinstance(s, ir.StoreLocal)}
    defs = _defs(f)
    targets: dict[int, Any] = {}
    target_values: set[int] = set()
    for a in float_adds:
        d = defs.get(id(a.array))
        if not isinstance(d, ir.LoadLocal) or id(d.local) not in params or id(d.local) in stored:
            return None
        targets[id(d.local)] = d.local
        target_values.add(id(a.array))
    results = {id(a.result) for a in float_adds if a.result is not None}
    used: set[int] = set()  # every operand, except the target array of a qualifying atomic
    for st in stmts:
        ops = _operands(st)
        if isinstance(st, ir.ArrayAtomic) and st in float_adds:
            ops = [o for o in ops if o is not st.array]
        used.update(id(o) for o in ops)
    if used & results or used & target_values:
        return None  # an old value is used, or a target array value is used for something else too
    for st in stmts:  # any other load of a target parameter must be unused
        if isinstance(st, ir.LoadLocal) and id(st.local) in targets and id(st.result) in used:
            return None
    return [p.name for p in f.params if id(p) in targets]
