"""Outputs a kernel writes once per thread, at the thread index, and never reads: candidates for streaming stores.

A triad ``a[i] = b[i] + s * c[i]`` over arrays larger than the caches moves four streams through memory for three
arrays: before a plain store can write part of a cache line, the core reads the line (read-for-ownership).
Non-temporal stores write whole lines without reading them. They are only correct here if every element of the
output that a chunk of threads covers is written by that chunk -- the entry (``emit_entry``, ``launch_loop_streamed``
in ``native/launch.h``) lets the body write into an aligned buffer and streams the whole buffer out -- so the store
must be unconditional, at the flat thread index, the only access to that array, in a kernel without ``return``.
"""

from __future__ import annotations

from typing import Any

from ..types.typesys import ArrayT
from . import ir


def streamed_output(f: ir.FuncIR) -> ir.Local | None:
    """The 1-d array parameter of kernel ``f`` whose stores may be streamed (see the module docstring), or ``None``."""
    stmts = list(ir.walk(f.body))
    if any(isinstance(s, ir.Return) for s in stmts):
        return None
    defs = {s.result.id: s for s in stmts if isinstance(getattr(s, "result", None), ir.Value)}  # type: ignore[attr-defined]
    stored = {s.local.id for s in stmts if isinstance(s, ir.StoreLocal)}

    def is_flat_tid(x: Any) -> bool:
        d = defs.get(x.id) if isinstance(x, ir.Value) else None
        if isinstance(d, ir.LoadLocal):  # i = wp.tid(), assigned once
            assigns = [s for s in stmts if isinstance(s, ir.StoreLocal) and s.local.id == d.local.id]
            return len(assigns) == 1 and assigns[0] in f.body.stmts and is_flat_tid(assigns[0].value)
        return isinstance(d, ir.Tid) and d.dim == -1

    found: ir.Local | None = None
    for p in f.params:
        if not isinstance(p.type, ArrayT) or p.type.ndim != 1 or p.type.indexed or p.id in stored:
            continue
        loads = {s.result.id for s in stmts if isinstance(s, ir.LoadLocal) and s.local.id == p.id}
        uses = [(s, op) for s in stmts for op in ir.operands(s)
                if (isinstance(op, ir.Value) and op.id in loads) or (isinstance(op, ir.LocalRef) and op.local.id == p.id)]
        stores = [s for s, op in uses if isinstance(s, ir.ArrayStore) and s.array is op]
        shape_reads = [s for s, _ in uses if isinstance(s, ir.Call) and s.overload.builtin.shape_query]
        if len(stores) != 1 or len(uses) != 1 + len(shape_reads):
            continue
        st = stores[0]
        if st not in f.body.stmts or len(st.indices) != 1 or not is_flat_tid(st.indices[0]):
            continue
        if any(isinstance(op, ir.Value) and op.id in loads for op in [st.value, *st.indices]):
            continue
        if found is not None:
            return None  # one streamed output per kernel
        found = p
    return found
