"""Rewrite ``break`` / ``continue`` / ``return`` into flag variables and guards, for the adjoint pass.

The reverse sweep replays loop iterations one at a time and walks statements backwards; jumps make both hard. This
pass turns a function body into jump-free structured code with the same meaning:

- ``continue`` sets ``_skip``; ``break`` sets ``_skip`` and the loop's exit flag; ``return v`` stores ``v`` in
  ``_retval`` and sets ``_skip``, ``_ret`` and the exit flag of every enclosing loop;
- statements after one that may jump are guarded by ``if not _skip``;
- a loop leaves after an iteration whose exit flag is set (``ForRange.exit`` / ``While.exit``), and every
  iteration starts with ``_skip = _ret``.

The forward kernel keeps the original IR (real jumps are faster); only adjoint code is generated from this form.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..types import scalars
from . import ir


def _jumps(block: ir.Block, in_loop: bool = False) -> bool:
    """True if the block contains a jump that leaves it (break/continue of an enclosing loop, or return)."""
    for s in block.stmts:
        if isinstance(s, ir.Return):
            return True
        if isinstance(s, (ir.Break, ir.Continue)) and not in_loop:
            return True
        if isinstance(s, ir.If) and (_jumps(s.then, in_loop) or _jumps(s.orelse, in_loop)):
            return True
        if isinstance(s, (ir.ForRange, ir.While)) and _has_return(s.body):
            return True
    return False


def _has_return(block: ir.Block) -> bool:
    return any(isinstance(s, ir.Return) for s in ir.walk(block))


class Structurizer:
    """Applies the rewrite to one function (see the module docstring)."""

    def __init__(self, f: ir.FuncIR, next_id: int) -> None:
        self.f = f
        self.next_id = next_id
        self.new_locals: list[ir.Local] = []
        self.skip = self.local("_skip", scalars.bool)
        self.ret = self.local("_ret", scalars.bool)
        self.retval = self.local("_retval", f.return_type) if f.return_type is not None else None
        self.loop_exits: list[ir.Local] = []

    def local(self, name: str, t: Any) -> ir.Local:
        self.next_id += 1
        loc = ir.Local(self.next_id, f"{name}{self.next_id}", t)
        self.new_locals.append(loc)
        return loc

    def value(self, t: Any) -> ir.Value:
        self.next_id += 1
        return ir.Value(self.next_id, t)

    def set_flag(self, out: list[ir.Stmt], flag: ir.Local, loc: Any, value: bool = True) -> None:
        out.append(ir.StoreLocal(loc, flag, ir.Const(value, scalars.bool)))

    def run(self) -> ir.FuncIR:
        body: list[ir.Stmt] = []
        self.set_flag(body, self.skip, self.f.loc, False)
        self.set_flag(body, self.ret, self.f.loc, False)
        body += self.block(self.f.body).stmts
        from ..builtins import REGISTRY

        g = dataclasses.replace(self.f, body=ir.Block(body), locals=self.f.locals + self.new_locals,
                                retval=self.retval)
        _ = REGISTRY
        ir.verify_pass(g, "structurize")
        return g

    def guard(self, rest: list[ir.Stmt], loc: Any) -> list[ir.Stmt]:
        """``if not _skip: rest`` as IR."""
        from ..builtins import REGISTRY

        cur = self.value(scalars.bool)
        neg = self.value(scalars.bool)
        ov = REGISTRY.builtins["_not"].resolve([scalars.bool])
        return [ir.LoadLocal(loc, cur, self.skip), ir.Call(loc, neg, ov, [cur]),
                ir.If(loc, neg, ir.Block(rest), ir.Block())]

    def block(self, b: ir.Block) -> ir.Block:
        out: list[ir.Stmt] = []
        stmts = list(b.stmts)
        for idx, s in enumerate(stmts):
            jumps = self.stmt(s, out)
            if jumps and idx + 1 < len(stmts):
                rest = self.block(ir.Block(stmts[idx + 1:])).stmts
                if rest:
                    out += self.guard(rest, s.loc)
                return ir.Block(out)
        return ir.Block(out)

    def stmt(self, s: ir.Stmt, out: list[ir.Stmt]) -> bool:
        """Append the rewrite of ``s`` to ``out``; return True if it may jump (later statements need a guard)."""
        if isinstance(s, ir.Break):
            self.set_flag(out, self.skip, s.loc)
            self.set_flag(out, self.loop_exits[-1], s.loc)
            return True
        if isinstance(s, ir.Continue):
            self.set_flag(out, self.skip, s.loc)
            return True
        if isinstance(s, ir.Return):
            if s.value is not None and self.retval is not None:
                out.append(ir.StoreLocal(s.loc, self.retval, s.value))
            self.set_flag(out, self.skip, s.loc)
            self.set_flag(out, self.ret, s.loc)
            for e in self.loop_exits:
                self.set_flag(out, e, s.loc)
            return True
        if isinstance(s, ir.If):
            then = self.block(s.then)
            orelse = self.block(s.orelse)
            out.append(ir.If(s.loc, s.cond, then, orelse))
            return _jumps(s.then, False) or _jumps(s.orelse, False)
        if isinstance(s, (ir.ForRange, ir.While)):
            exit_flag = self.local("_exit", scalars.bool)
            self.set_flag(out, exit_flag, s.loc, False)
            self.loop_exits.append(exit_flag)
            body: list[ir.Stmt] = []
            cur = self.value(scalars.bool)
            body.append(ir.LoadLocal(s.loc, cur, self.ret))
            body.append(ir.StoreLocal(s.loc, self.skip, cur))
            body += self.block(s.body).stmts
            self.loop_exits.pop()
            if isinstance(s, ir.ForRange):
                new: ir.Stmt = ir.ForRange(s.loc, s.var, s.start, s.stop, s.step, ir.Block(body), exit_flag)
            else:
                new = ir.While(s.loc, s.cond_block, s.cond, ir.Block(body), exit_flag)
            out.append(new)
            after = self.value(scalars.bool)
            out.append(ir.LoadLocal(s.loc, after, self.ret))
            out.append(ir.StoreLocal(s.loc, self.skip, after))
            return _has_return(s.body)
        out.append(s)
        return False


def structurize(f: ir.FuncIR) -> ir.FuncIR:
    """The jump-free form of ``f`` (a new FuncIR; ``f`` is not modified)."""
    if f.native is not None:
        return f
    max_id = 0
    for s in ir.walk(f.body):
        r = getattr(s, "result", None)
        if r is not None:
            max_id = max(max_id, r.id)
    for loc in f.locals + f.params:
        max_id = max(max_id, loc.id)
    return Structurizer(f, max_id + 1000).run()
