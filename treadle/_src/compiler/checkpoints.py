"""Which locals each loop iteration saves on the checkpoint stack of a backward pass.

The reverse sweep of a loop restores an iteration's saved locals, replays that iteration forward and reverses it
(see :mod:`.emit_adjoint`). An iteration must save every local whose value at the start of the iteration the
replay reads, and nothing else: on the CPU each byte is stack traffic, on a GPU it is per-thread local memory of a
fixed capacity. Two kinds of locals the body touches need no saving:

- *stable* locals: every write of the local comes before the loop in program order, so the value each iteration
  sees is the one it still has when the loop is reversed (kernel parameters and ``i = wp.tid()`` are the common
  cases; a write inside an enclosing loop before this one is redone by the replay of that enclosing iteration);
- *killed* locals: a top-level statement of the body assigns the local before anything in the body reads it, so
  the value at the start of the iteration is never used (the temporaries of a loop body).

A loop's own variable is always saved (the replay does not rerun the loop header).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import ir


def _by_reference(s: ir.Stmt) -> list[ir.Local]:
    """Locals passed by reference (read and written) to the builtin ``s`` calls."""
    return [a.local for a in getattr(s, "args", None) or [] if isinstance(a, ir.LocalRef)]


def _writes(s: ir.Stmt) -> Iterator[ir.Local]:
    if isinstance(s, (ir.StoreLocal, ir.DeclLocal)):
        yield s.local
    elif isinstance(s, ir.ForRange):
        yield s.var
    yield from _by_reference(s)


def _reads(s: ir.Stmt) -> Iterator[ir.Local]:
    if isinstance(s, ir.LoadLocal):
        yield s.local
    yield from _by_reference(s)


def _nested(s: ir.Stmt) -> Iterator[ir.Stmt]:
    yield s
    for b in ("then", "orelse", "cond_block", "body"):
        blk = getattr(s, b, None)
        if isinstance(blk, ir.Block):
            yield from ir.walk(blk)


def touched(loop: Any) -> list[ir.Local]:
    """Every local the loop's body reads or writes, and its variable (the candidates for saving)."""
    out: dict[int, ir.Local] = {}
    if isinstance(loop, ir.ForRange):
        out[loop.var.id] = loop.var
    for t in ir.walk(loop.body):
        for loc in (*_writes(t), *_reads(t)):
            out[loc.id] = loc
    return list(out.values())


def killed_at_start(loop: Any) -> set[int]:
    """Ids of the locals a top-level statement of the body assigns before anything in the body reads them."""
    read: set[int] = set()
    killed: set[int] = set()
    for s in loop.body.stmts:
        if isinstance(s, (ir.StoreLocal, ir.DeclLocal)) and s.local.id not in read:
            killed.add(s.local.id)
        for t in _nested(s):
            read.update(loc.id for loc in _reads(t))
    return killed


def checkpoint_sets(f: ir.FuncIR) -> dict[int, list[ir.Local]]:
    """For each loop of ``f`` (keyed by ``id`` of its statement): the locals one iteration saves, in a fixed order."""
    order: dict[int, int] = {}
    writes: dict[int, list[int]] = {}
    loops: list[Any] = []
    for k, s in enumerate(ir.walk(f.body)):
        order[id(s)] = k
        for loc in _writes(s):
            writes.setdefault(loc.id, []).append(k)
        if isinstance(s, (ir.ForRange, ir.While)):
            loops.append(s)
    out: dict[int, list[ir.Local]] = {}
    for s in loops:
        at = order[id(s)]
        killed = killed_at_start(s)
        own = s.var.id if isinstance(s, ir.ForRange) else None
        out[id(s)] = [loc for loc in touched(s) if loc.id == own or not (
            loc.id in killed or all(k < at for k in writes.get(loc.id, ())))]
    return out
