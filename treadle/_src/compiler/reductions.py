"""Reductions into a few fixed elements, privatised per chunk of threads on the CPU.

``wp.atomic_add(total, 0, v)`` in every thread is a reduction: with real atomics, threads fight over one cache line
and each add costs a contended compare-and-swap. When :func:`~.determinism.combinable_targets` says a kernel's
float atomic adds may be combined, and every such add goes to a constant element (``total[0]``, ``out[3]``) of a
1-d array parameter, :func:`privatize` derives a second version of the kernel in which those adds are plain
``load + add + store`` on the same array. The CPU launch loop (``emit_entry``) runs that version with the array's
descriptor pointing at a small zeroed buffer local to the chunk -- the compiler keeps it in registers -- and adds
the buffer into the real array with one atomic per element at the end of the chunk.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..types import scalars
from ..types.typesys import ArrayT
from . import ir
from .determinism import combinable_targets

#: Largest constant index privatised (the chunk-local buffer has that many elements at most).
MAX_ELEMENTS = 16


@dataclasses.dataclass
class Target:
    """A privatised array parameter: its name, element type and how many leading elements the kernel adds into."""

    name: str
    dtype: Any
    count: int


def _const_index(s: ir.ArrayAtomic) -> int | None:
    if len(s.indices) != 1 or not isinstance(s.indices[0], ir.Const):
        return None
    v = s.indices[0].value
    v = getattr(v, "value", v)
    return int(v) if isinstance(v, int) and 0 <= v < MAX_ELEMENTS else None


def privatize(f: ir.FuncIR) -> tuple[ir.FuncIR, list[Target]] | None:
    """The kernel with its reduction atomics turned into plain adds, and the arrays to privatise; or ``None``."""
    names = combinable_targets(f)
    if not names:
        return None
    params = {p.name: p for p in f.params}
    if any(not isinstance(params[n].type, ArrayT) or params[n].type.ndim != 1 for n in names):
        return None
    if any(not scalars.is_float_type(params[n].type.dtype) or params[n].type.dtype is scalars.float16 for n in names):
        return None  # vector targets and half precision keep their atomics
    stmts = list(ir.walk(f.body))
    defs = {id(getattr(s, "result", None)): s for s in stmts if getattr(s, "result", None) is not None}
    counts: dict[str, int] = {}
    for s in stmts:
        if isinstance(s, ir.ArrayAtomic) and s.op in ("add", "sub"):
            d = defs.get(id(s.array))
            name = getattr(getattr(d, "local", None), "name", None)
            if name not in names:
                continue
            k = _const_index(s)
            if k is None:
                return None
            counts[name] = max(counts.get(name, 0), k + 1)
    if set(counts) != set(names):
        return None
    from ..builtins import REGISTRY

    next_id = [max((v.id for v in _values(stmts)), default=0) + 1]

    def new_value(t: Any) -> ir.Value:
        next_id[0] += 1
        return ir.Value(next_id[0], t, "red")

    def rewrite(b: ir.Block) -> ir.Block:
        out: list[ir.Stmt] = []
        for s in b.stmts:
            if isinstance(s, ir.ArrayAtomic) and s in targets_stmts:
                t = s.array.type.dtype
                old = new_value(t)
                new = new_value(t)
                ov = REGISTRY.builtins[s.op].resolve([t, t])
                out.append(ir.ArrayLoad(s.loc, old, s.array, list(s.indices)))
                out.append(ir.Call(s.loc, new, ov, [old, s.value]))
                out.append(ir.ArrayStore(s.loc, s.array, list(s.indices), new))
            elif isinstance(s, (ir.If, ir.ForRange, ir.While)):
                c = copy.copy(s)  # keeps the fields other passes filled in
                for field in ("then", "orelse", "body", "cond_block"):
                    if hasattr(c, field):
                        setattr(c, field, rewrite(getattr(c, field)))
                out.append(c)
            else:
                out.append(s)
        return ir.Block(out)

    targets_stmts = {s for s in stmts if isinstance(s, ir.ArrayAtomic) and s.op in ("add", "sub")
                     and getattr(getattr(defs.get(id(s.array)), "local", None), "name", None) in counts}
    g = copy.copy(f)
    g.body = rewrite(f.body)
    ir.verify_pass(g, "privatize")
    return g, [Target(n, params[n].type.dtype, counts[n]) for n in names]


def _values(stmts: list[ir.Stmt]) -> list[ir.Value]:
    return [v for v in (getattr(s, "result", None) for s in stmts) if isinstance(v, ir.Value)]
