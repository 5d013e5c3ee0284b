"""Which integer values of a function are provably non-negative (array indices that need no wrapping).

A negative array index counts from the end of its dimension (``a[-1]`` is the last element), so every index the
compiler cannot prove non-negative is emitted through ``treadle::wrap_index``, a test and an add per index. On the
hot paths that test is pure cost: it hides the affine ``i * stride`` address from the C++ compiler, which then
gathers instead of loading contiguous vectors (a 7-point stencil ran 3x slower). ``nonneg_values`` proves the common
cases safe: thread indices, ``range`` counters with a non-negative start and a positive step, lengths and shapes,
non-negative constants, and ``+``, ``-`` (of a constant), ``*``, ``//``, ``%``, ``min``, ``max``, ``abs`` and
widening conversions of those. ``i = wp.tid(); i += 1; a[i - 1]`` is proven (the analysis follows the program:
``i`` is at least 1 where ``i - 1`` is read).

The analysis is a forward pass over the structured IR computing a lower bound for every integer local and value:
``if`` branches merge to the smaller bound; a loop's body is iterated to a fixed point (the bound at its head merges
every value the body assigns, which also covers ``break`` and ``continue``), giving up on a local (no bound) after a
few rounds of decrease. Integer overflow is not modelled: a program whose index arithmetic overflows is out of
bounds either way.
"""

from __future__ import annotations

import math
from typing import Any

from ..types.typesys import is_int
from . import ir

#: A lower bound: an integer, ``math.inf`` (no value reaches here yet) or ``None`` (unbounded below).
Bound = Any

_ROUNDS = 4  # loop fixed-point rounds before a still-decreasing local is given up


def _min(a: Bound, b: Bound) -> Bound:
    return None if a is None or b is None else min(a, b)


def _unsigned_narrow(t: Any) -> bool:
    """Unsigned types that convert to ``int64`` without turning negative (all but ``uint64``)."""
    return is_int(t) and not getattr(t, "_is_signed_", True) and getattr(t, "_bits_", 64) < 64


class _Bounds:
    def __init__(self, f: ir.FuncIR) -> None:
        self.values: dict[int, Bound] = {}
        self.loops: list[dict[int, Bound]] = []  # per enclosing loop: the smallest bound assigned to each local

    # Values --------------------------------------------------------------------------------------------------
    def of(self, x: Any) -> Bound:
        if isinstance(x, ir.Const):
            return x.value if is_int(x.type) and isinstance(x.value, int) else None
        if isinstance(x, ir.Value):
            if _unsigned_narrow(x.type):
                return 0
            return self.values.get(x.id)
        return None

    def call(self, s: ir.Call) -> Bound:
        b = s.overload.builtin
        a = [self.of(x) for x in s.args]
        if b.shape_query:
            return 0
        name = b.name
        if len(a) == 2:
            lhs, rhs = a
            if name == "add" and lhs is not None and rhs is not None:
                return lhs + rhs
            if name == "sub" and lhs is not None and isinstance(s.args[1], ir.Const) and rhs is not None:
                return lhs - rhs
            if name == "mul" and lhs is not None and rhs is not None and lhs >= 0 and rhs >= 0:
                return 0 if 0 in (lhs, rhs) else lhs * rhs
            if name in ("div", "floordiv", "mod") and lhs is not None and rhs is not None and lhs >= 0 and rhs >= 1:
                return 0
            if name == "min":
                return _min(lhs, rhs)
            if name == "max":
                known = [v for v in a if v is not None]
                return max(known) if known else None
        if name == "abs" and len(a) == 1:
            return 0
        return None

    def convert(self, s: ir.Construct) -> Bound:
        if len(s.args) != 1 or not is_int(getattr(s.args[0], "type", None)):
            return None
        src, dst = s.args[0].type, s.result.type
        sbits, dbits = getattr(src, "_bits_", 64), getattr(dst, "_bits_", 64)
        src_signed = getattr(src, "_is_signed_", True)
        if getattr(dst, "_is_signed_", True) and (dbits > sbits or (dbits == sbits and src_signed)):
            return self.of(s.args[0])
        return None

    def define(self, s: ir.Stmt, env: dict[int, Bound]) -> None:
        r = getattr(s, "result", None)
        if not isinstance(r, ir.Value) or not is_int(r.type):
            return
        if isinstance(s, ir.Tid):
            v: Bound = 0
        elif isinstance(s, ir.LoadLocal):
            v = env.get(s.local.id)
        elif isinstance(s, ir.Call):
            v = self.call(s)
        elif isinstance(s, ir.Construct):
            v = self.convert(s)
        else:
            v = None
        self.values[r.id] = v

    # Locals --------------------------------------------------------------------------------------------------
    def assign(self, env: dict[int, Bound], local: ir.Local, v: Bound) -> None:
        if not is_int(local.type):
            return
        env[local.id] = v
        for acc in self.loops:
            acc[local.id] = _min(acc.get(local.id, math.inf), v)

    def block(self, block: ir.Block, env: dict[int, Bound]) -> None:
        for s in block.stmts:
            self.stmt(s, env)

    def stmt(self, s: ir.Stmt, env: dict[int, Bound]) -> None:
        if isinstance(s, ir.If):
            other = dict(env)
            self.block(s.then, env)
            self.block(s.orelse, other)
            for k in set(env) | set(other):
                env[k] = _min(env.get(k), other.get(k))
            return
        if isinstance(s, ir.ForRange):
            step = s.step.value if isinstance(s.step, ir.Const) else None
            if step is not None and step > 0:
                var: Bound = self.of(s.start)
            elif step is not None and step < 0:
                stop = self.of(s.stop)
                var = stop + 1 if stop is not None else None
            else:
                var = None
            self.loop(env, [s.body], s.var, var)
            return
        if isinstance(s, ir.While):
            self.loop(env, [s.cond_block, s.body], None, None)
            return
        self.define(s, env)
        if isinstance(s, ir.StoreLocal):
            self.assign(env, s.local, self.of(s.value))
        for op in ir.operands(s):
            if isinstance(op, ir.LocalRef):
                self.assign(env, op.local, None)

    def loop(self, env: dict[int, Bound], blocks: list[ir.Block], var: ir.Local | None, var_bound: Bound) -> None:
        head = dict(env)
        for _ in range(_ROUNDS):
            acc = self.iterate(head, blocks, var, var_bound)
            new = dict(head)
            for k, v in acc.items():
                new[k] = _min(head.get(k), v)
            if new == head:
                break
            head = new
        else:  # still decreasing: the locals the body assigns are unbounded (and its values recomputed so)
            head.update(dict.fromkeys(acc))
            self.iterate(head, blocks, var, var_bound)
        env.clear()
        env.update(head)

    def iterate(self, head: dict[int, Bound], blocks: list[ir.Block], var: ir.Local | None,
                var_bound: Bound) -> dict[int, Bound]:
        """Run the loop body once from ``head``; the smallest bound it assigns to each local."""
        acc: dict[int, Bound] = {}
        self.loops.append(acc)
        body = dict(head)
        if var is not None:
            self.assign(body, var, var_bound)
        for b in blocks:
            self.block(b, body)
        self.loops.pop()
        for outer in self.loops:  # what the body assigns, the enclosing loops' bodies assign too
            for k, v in acc.items():
                outer[k] = _min(outer.get(k, math.inf), v)
        return acc


def nonneg_values(f: ir.FuncIR) -> frozenset[int]:
    """Ids of the integer values of ``f`` that are provably ``>= 0`` wherever they are computed."""
    b = _Bounds(f)
    env: dict[int, Bound] = {}
    params = {p.id for p in f.params}
    for loc in f.locals:
        if is_int(loc.type) and loc.id not in params:
            env[loc.id] = 0  # locals start zeroed
    for p in f.params:
        if is_int(p.type):
            env[p.id] = 0 if _unsigned_narrow(p.type) else None
    b.block(f.body, env)
    return frozenset(k for k, v in b.values.items() if v is not None and v >= 0)


def is_nonneg(x: Any, nonneg: frozenset[int]) -> bool:
    """Whether operand ``x`` is provably ``>= 0``, given ``nonneg_values`` of its function."""
    if isinstance(x, ir.Const):
        return is_int(x.type) and isinstance(x.value, int) and x.value >= 0
    return isinstance(x, ir.Value) and (x.id in nonneg or _unsigned_narrow(x.type))
