"""Differential fuzzing: random well-typed kernels, run compiled and interpreted, gradients against finite differences.

Each round writes a Python module of generated kernels (and the ``@wp.func`` s they call) to a temporary directory,
imports it, and

- runs every kernel compiled and in interpret mode (``wp.config.mode = "interpret"``) on the same random inputs and
  compares all outputs: integers exactly, floats with ``rtol`` ~1e-4 (the CPU backend compiles with
  ``-march=native``, so GCC may fuse multiply-adds); elements that overflowed (|x| > 1e30) are skipped. A mismatch
  is rerun with FMA contraction disabled (``-ffp-contract=off``): if the compiled result then agrees it is counted
  as floating-point sensitivity, not a bug;
- for float64 kernels, compares the Tape's gradients with central finite differences of the compiled forward pass.

The generator keeps programs well defined in C++: integer values carry a magnitude bound so nothing overflows
(signed overflow is undefined behaviour that GCC optimises on), divisors are never zero, component indices are in
range, float-to-int conversions are clamped, and every loop terminates.

Usage::

    python tools/fuzz_kernels.py --n 200 --seed 1          # 200 forward kernels and 50 gradient kernels
    python tools/fuzz_kernels.py --n 40 --grad-n 0 --keep  # keep the generated files of mismatches

Exit status 1 if any mismatch was found; each is printed with its generated source.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import random
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

#: Python annotations of the generated types: f float32, d float64, i int32, v vec3, m mat33, w vec3d.
ANN = {"f": "float", "d": "wp.float64", "i": "int", "v": "wp.vec3", "m": "wp.mat33", "w": "wp.vec3d"}
INT_VAR_BOUND = 10_000  # every int variable is clamped to +-this on assignment
INT_EXPR_LIMIT = 1 << 30  # no int expression may exceed this magnitude (int32 never overflows)
N_ACC = 8  # length of the accumulator arrays that atomics update
READ_ONLY = {"tid", "n"}  # used as indices at the end of a kernel

#: Compiler bugs already reported and not yet fixed (pattern in the error, short name): counted, not reported again.
#: (The two found so far -- folded NaN/inf constants, loop adjoints reading variables assigned after the loop -- are
#: fixed; their regression tests are in tests/compiler/test_fuzz_differential.py.)
KNOWN_COMPILER_BUGS: list[tuple[str, str]] = []


# ----------------------------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------------------------


class Scope:
    """Variables visible in a block: name -> (type, int bound); inner blocks see the outer ones."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.vars: dict[str, tuple[str, int]] = {}

    def visible(self, t: str) -> list[tuple[str, int]]:
        out = [(n, b) for n, (tt, b) in self.vars.items() if tt == t]
        return out + (self.parent.visible(t) if self.parent else [])

    def lookup(self, name: str) -> tuple[str, int] | None:
        if name in self.vars:
            return self.vars[name]
        return self.parent.lookup(name) if self.parent else None


@dataclasses.dataclass
class Helper:
    name: str
    params: list[str]  # types
    returns: str  # a type, or "fv" for a tuple (float, vec3)


class Gen:
    """Random expressions and statements over a fixed set of types (``grad`` mode: float64 and vec3d only)."""

    def __init__(self, rng: random.Random, grad: bool = False) -> None:
        self.rng = rng
        self.grad = grad
        self.counter = 0
        self.helpers: list[Helper] = []
        self.loop_depth = 0
        self.in_func = False
        self.return_type: str | None = None

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def lit(self) -> str:
        return f"{self.rng.uniform(-2.0, 2.0):.3f}"

    # Expressions ------------------------------------------------------------------------------------------------
    def expr(self, t: str, sc: Scope, depth: int) -> str:
        if t == "i":
            return self.iexpr(sc, depth)[0]
        return getattr(self, f"{t}expr")(sc, depth)

    def var_or(self, t: str, sc: Scope, fallback: str) -> str:
        vs = sc.visible(t)
        if not vs:
            return fallback
        return self.rng.choice(vs)[0]

    def fexpr(self, sc: Scope, depth: int) -> str:
        r = self.rng
        if depth <= 0 or self.chance(0.25):
            return self.var_or("f", sc, self.lit()) if self.chance(0.75) else self.lit()
        a = lambda: self.fexpr(sc, depth - 1)  # noqa: E731
        k = r.randrange(24)
        if k < 4:
            return f"({a()} {r.choice(['+', '-', '*', '+'])} {a()})"
        if k == 4:
            return f"({a()} / (wp.abs({a()}) + 1.0))"
        if k == 5:
            return f"wp.{r.choice(['sin', 'cos', 'tanh', 'abs'])}({a()})"
        if k == 6:
            return f"wp.sqrt(wp.abs({a()}))"
        if k == 7:
            return f"wp.exp(wp.clamp({a()}, -4.0, 4.0))"
        if k == 8:
            return f"wp.{r.choice(['min', 'max'])}({a()}, {a()})"
        if k == 9:
            return f"wp.clamp({a()}, {self.lit()}, 2.5)"
        if k == 23 and sc.visible("f"):  # a NaN-prone operand where NaN handling differs between conventions
            nan = f"wp.sqrt({self.var_or('f', sc, 'f0')} - {self.lit()})"
            return r.choice([f"wp.min({nan}, {a()})", f"wp.max({a()}, {nan})", f"wp.clamp({nan}, -1.0, 1.0)"])
        if k == 10:
            return f"float({self.iexpr(sc, depth - 1)[0]})"
        if k == 11:
            return f"wp.float32({self.dexpr(sc, depth - 1)})"
        if k == 12:
            v = self.vexpr(sc, depth - 1)
            return r.choice([f"wp.length({v})", f"wp.dot({v}, {self.vexpr(sc, depth - 1)})", f"{v}[{r.randrange(3)}]",
                             f"{v}.{r.choice('xyz')}", f"wp.max({v})", f"wp.min({v})"])
        if k == 13:
            m = self.mexpr(sc, depth - 1)
            return r.choice([f"{m}[{r.randrange(3)}, {r.randrange(3)}]", f"wp.trace({m})", f"wp.ddot({m}, {m})"])
        if k == 14:
            return f"({a()} if {self.bexpr(sc, depth - 1)} else {a()})"
        if k == 15:
            return f"wp.{r.choice(['floor', 'ceil', 'round', 'trunc'])}({a()})"
        if k == 16:
            return f"wp.lerp({a()}, {a()}, {a()})"
        if k == 17:
            return f"wp.mod({a()}, wp.abs({a()}) + 0.5)"
        if k == 18:
            return f"wp.pow(wp.abs({a()}) + 0.5, {r.choice(['0.5', '1.5', '2.0', '-1.0'])})"
        if k == 19:
            return f"wp.atan2({a()}, {a()})"
        if k == 20 and not self.in_func:
            calls = [h for h in self.helpers if h.returns == "f"]
            if calls:
                return self.call(r.choice(calls), sc, depth - 1)
        if k == 21 and sc.visible("f"):  # NaN for negative arguments: it must flow the same way through both
            return f"wp.{r.choice(['sqrt', 'log'])}({self.var_or('f', sc, 'f0')} - {self.lit()})"
        return f"(-{a()})"

    def dexpr(self, sc: Scope, depth: int) -> str:
        r = self.rng
        if depth <= 0 or self.chance(0.25):
            return self.var_or("d", sc, f"wp.float64({self.lit()})")
        a = lambda: self.dexpr(sc, depth - 1)  # noqa: E731
        k = r.randrange(16 if self.grad else 12)
        if k < 4:
            return f"({a()} {r.choice(['+', '-', '*', '*'])} {a()})"
        if k == 4:
            den = a()
            return f"({a()} / ({den} * {den} + 1.0))"
        if k == 5:
            return f"wp.{r.choice(['sin', 'cos', 'tanh'])}({a()})"
        if k == 6:
            e = a()
            return f"wp.sqrt({e} * {e} + 0.5)"
        if k == 7:
            return f"wp.exp(wp.sin({a()}))"
        if k == 8:
            return f"({a()} if {self.bexpr(sc, depth - 1)} else {a()})"
        if k == 9:
            if self.grad:
                w = self.wexpr(sc, depth - 1)
                return r.choice([f"wp.dot({w}, {self.wexpr(sc, depth - 1)})", f"{w}[{r.randrange(3)}]",
                                 f"wp.length({w} + wp.vec3d(2.0, 0.5, 0.25))"])
            return f"wp.float64({self.fexpr(sc, depth - 1)})"
        if k == 10 and not self.in_func:
            calls = [h for h in self.helpers if h.returns == "d"]
            if calls:
                return self.call(r.choice(calls), sc, depth - 1)
        if k == 11:
            return f"wp.{r.choice(['min', 'max'])}({a()}, {a()})"
        if k == 12:
            return f"(wp.float64({r.randint(1, 3)}) * {a()})"
        if k == 13:
            e = a()
            return f"wp.atan2({a()}, {e} * {e} + 1.0)"
        if k == 14:
            e = a()
            return f"wp.log({e} * {e} + 1.0)"
        return f"(-{a()})"

    def iexpr(self, sc: Scope, depth: int, limit: int = INT_EXPR_LIMIT) -> tuple[str, int]:
        """An int expression and a bound on its magnitude (kept below ``limit``)."""
        r = self.rng
        if depth <= 0 or self.chance(0.3):
            vs = sc.visible("i")
            if vs and self.chance(0.8):
                return r.choice(vs)
            n = r.randint(-9, 9)
            return (f"({n})" if n < 0 else str(n)), abs(n)
        k = r.randrange(12)
        a, ba = self.iexpr(sc, depth - 1, limit)
        b, bb = self.iexpr(sc, depth - 1, limit)
        out: tuple[str, int]
        if k < 3:
            op = r.choice(["+", "-", "*"])
            out = (f"({a} {op} {b})", ba * bb if op == "*" else ba + bb)
        elif k == 3:
            d = r.randint(2, 9)
            op = r.choice(["/", "//", "%"])
            out = (f"({a} {op} (wp.abs({b}) % {d} + 1))", d if op == "%" else ba)
        elif k == 4:
            op = r.choice(["&", "|", "^"])
            out = (f"({a} {op} {b})", 2 * max(ba, bb, 1))
        elif k == 5:
            s = r.randint(0, 3)
            op = r.choice(["<<", ">>"])
            out = (f"({a} {op} {s})", ba << s if op == "<<" else ba)
        elif k == 6:
            out = (f"wp.{r.choice(['min', 'max'])}({a}, {b})", max(ba, bb))
        elif k == 7:
            out = (f"wp.abs({a})", ba)
        elif k == 8:
            c = r.randint(1, 50)
            out = (f"wp.clamp({a}, -{c}, {c})", c)
        elif k == 9:
            e = self.fexpr(sc, depth - 1)  # converting NaN to int is undefined behaviour: map it to 0 first
            out = (f"int(wp.clamp(wp.where(wp.isnan({e}), 0.0, {e}), -1000.0, 1000.0))", 1000)
        elif k == 10:
            out = (f"({a} if {self.bexpr(sc, depth - 1)} else {b})", max(ba, bb))
        else:
            out = (f"(-{a})", ba)
        if out[1] > limit:
            return a, ba
        return out

    def int_value(self, sc: Scope, depth: int, bound: int = INT_VAR_BOUND) -> str:
        """An int expression whose value is within +-bound."""
        e, b = self.iexpr(sc, depth)
        return e if b <= bound else f"wp.clamp({e}, -{bound}, {bound})"

    def bexpr(self, sc: Scope, depth: int) -> str:
        r = self.rng
        k = r.randrange(9 if depth > 0 else 5)
        if k == 0 and not self.grad:
            return f"{self.fexpr(sc, depth - 1)} {r.choice(['<', '>', '<=', '>='])} {self.fexpr(sc, depth - 1)}"
        if k <= 1:
            return f"{self.dexpr(sc, depth - 1)} {r.choice(['<', '>'])} {self.dexpr(sc, depth - 1)}"
        if k == 2:
            return f"{self.iexpr(sc, depth - 1)[0]} {r.choice(['<', '>', '==', '!=', '<=', '>='])} " \
                   f"{self.iexpr(sc, depth - 1)[0]}"
        if k == 3:
            return f"{self.iexpr(sc, depth - 1)[0]} % {r.randint(2, 4)} == 0"
        if k == 4:
            if self.grad:
                return f"{self.wexpr(sc, depth - 1)}[{r.randrange(3)}] > 0.0"
            return f"wp.length({self.vexpr(sc, depth - 1)}) > {abs(float(self.lit())):.3f}"
        if k == 5:
            return f"not ({self.bexpr(sc, depth - 1)})"
        if k == 6:
            return f"({self.bexpr(sc, depth - 1)}) {r.choice(['and', 'or'])} ({self.bexpr(sc, depth - 1)})"
        if k == 7:
            return f"{self.iexpr(sc, depth - 1)[0]} < {self.iexpr(sc, depth - 1)[0]} < {self.iexpr(sc, depth - 1)[0]}"
        return f"wp.isfinite({self.dexpr(sc, depth - 1)})"

    def vexpr(self, sc: Scope, depth: int) -> str:
        r = self.rng
        if depth <= 0 or self.chance(0.3):
            return self.var_or("v", sc, f"wp.vec3({self.lit()}, {self.lit()}, {self.lit()})")
        a = lambda: self.vexpr(sc, depth - 1)  # noqa: E731
        f = lambda: self.fexpr(sc, depth - 1)  # noqa: E731
        k = r.randrange(12)
        if k < 2:
            return f"({a()} {r.choice(['+', '-'])} {a()})"
        if k == 2:
            return r.choice([f"({a()} * {f()})", f"({f()} * {a()})"])
        if k == 3:
            return f"({a()} / (wp.abs({f()}) + 1.0))"
        if k == 4:
            return f"wp.cross({a()}, {a()})"
        if k == 5:
            return f"wp.normalize({a()})"
        if k == 6:
            return f"wp.vec3({f()}, {f()}, {f()})"
        if k == 7:
            return f"({self.mexpr(sc, depth - 1)} * {a()})"
        if k == 8:
            return f"wp.{r.choice(['cw_mul', 'min', 'max'])}({a()}, {a()})"
        if k == 9:
            return f"({a()} if {self.bexpr(sc, depth - 1)} else {a()})"
        if k == 10:
            return f"wp.vec3({f()})"
        return f"(-{a()})"

    def mexpr(self, sc: Scope, depth: int) -> str:
        r = self.rng
        if depth <= 0 or self.chance(0.35):
            return self.var_or("m", sc, "wp.identity(n=3, dtype=float)")
        a = lambda: self.mexpr(sc, depth - 1)  # noqa: E731
        v = lambda: self.vexpr(sc, depth - 1)  # noqa: E731
        k = r.randrange(8)
        if k < 2:
            return f"({a()} {r.choice(['+', '-', '*'])} {a()})"
        if k == 2:
            return f"({a()} * {self.fexpr(sc, depth - 1)})"
        if k == 3:
            return f"wp.transpose({a()})"
        if k == 4:
            return f"wp.outer({v()}, {v()})"
        if k == 5:
            return f"wp.{r.choice(['diag', 'skew'])}({v()})"
        if k == 6:
            return f"wp.mat33({v()}, {v()}, {v()})"
        return "wp.identity(n=3, dtype=float)"

    def wexpr(self, sc: Scope, depth: int) -> str:
        r = self.rng
        if depth <= 0 or self.chance(0.3):
            return self.var_or("w", sc, f"wp.vec3d({self.lit()}, {self.lit()}, {self.lit()})")
        a = lambda: self.wexpr(sc, depth - 1)  # noqa: E731
        d = lambda: self.dexpr(sc, depth - 1)  # noqa: E731
        k = r.randrange(7)
        if k < 2:
            return f"({a()} {r.choice(['+', '-'])} {a()})"
        if k == 2:
            return f"({a()} * {d()})"
        if k == 3:
            return f"wp.cross({a()}, {a()})"
        if k == 4:
            return f"wp.vec3d({d()}, {d()}, {d()})"
        if k == 5:
            return f"wp.normalize({a()} + wp.vec3d(3.0, 0.0, 0.0))"
        return f"(-{a()})"

    def call(self, h: Helper, sc: Scope, depth: int) -> str:
        args = [self.int_value(sc, depth) if t == "i" else self.expr(t, sc, depth) for t in h.params]
        return f"{h.name}({', '.join(args)})"

    # Statements -------------------------------------------------------------------------------------------------
    def types(self) -> list[str]:
        return ["d", "d", "w", "i"] if self.grad else ["f", "f", "f", "d", "i", "i", "v", "v", "m"]

    def assign_value(self, t: str, sc: Scope, depth: int) -> tuple[str, int]:
        if t == "i":
            return self.int_value(sc, depth), INT_VAR_BOUND
        e = self.expr(t, sc, depth)
        if t == "f" and self.loop_depth and self.chance(0.7):
            e = f"wp.clamp({e}, -100.0, 100.0)"  # keeps loop-carried values finite (mostly)
        return e, 0

    def block(self, sc: Scope, n: int, depth: int) -> list[str]:
        out: list[str] = []
        for _ in range(n):
            out += self.stmt(sc, depth)
        return out or ["pass"]

    def stmt(self, sc: Scope, depth: int) -> list[str]:  # noqa: C901 - one table of statement kinds
        r = self.rng
        ed = r.randint(1, 3)
        k = r.randrange(20)
        if k < 5:  # a new variable
            t = r.choice(self.types())
            name = self.fresh(t)
            e, b = self.assign_value(t, sc, ed)
            sc.vars[name] = (t, b)
            return [f"{name} = {e}"]
        if k < 8:  # reassign or update a visible variable
            t = r.choice(self.types())
            vs = [v for v in sc.visible(t) if v[0] not in READ_ONLY]
            if not vs:
                return self.stmt(sc, depth)
            name, bound = r.choice(vs)
            if t == "i":
                if r.random() < 0.3:
                    return [f"{name} {r.choice(['//=', '%='])} {r.randint(2, 9)}"]
                return [f"{name} = {self.int_value(sc, ed, bound)}"]
            if t in "fdvmw" and r.random() < 0.5:
                op = r.choice(["+=", "-="]) if t in "vmw" else r.choice(["+=", "-=", "*="])
                rhs = self.expr(t, sc, ed)
                if op == "*=":
                    rhs = f"wp.sin({rhs})" if t == "f" else f"wp.cos({rhs})"
                return [f"{name} {op} {rhs}"]
            return [f"{name} = {self.assign_value(t, sc, ed)[0]}"]
        if k == 8:  # component write
            t = r.choice(["v", "m"] if not self.grad else ["w"])
            vs = sc.visible(t)
            if not vs:
                return self.stmt(sc, depth)
            name = r.choice(vs)[0]
            comp = "f" if t in "vm" else "d"
            if t == "m":
                return [f"{name}[{r.randrange(3)}, {r.randrange(3)}] = {self.expr(comp, sc, ed)}"]
            which = r.choice([f"[{r.randrange(3)}]", f".{r.choice('xyz')}"])
            if self.chance(0.3) and not self.grad:
                iv = self.iexpr(sc, 1)[0]
                which = f"[wp.abs({iv}) % 3]"
            op = r.choice(["=", "+="])
            return [f"{name}{which} {op} {self.expr(comp, sc, ed)}"]
        if k < 11 and depth > 0:  # if / else
            c = self.bexpr(sc, 2)
            then = self.block(Scope(sc), r.randint(1, 3), depth - 1)
            lines = [f"if {c}:"] + _indent(then)
            if self.chance(0.6):
                lines += ["else:"] + _indent(self.block(Scope(sc), r.randint(1, 3), depth - 1))
            return lines
        if k < 13 and depth > 0:  # for loop with dynamic bounds
            inner = Scope(sc)
            j = self.fresh("j")
            inner.vars[j] = ("i", 16)
            lo = self.int_value(sc, 1, 8)
            form = r.randrange(4)
            if form == 0:
                rng = f"range(wp.abs({lo}) % 5)"
            elif form == 1:
                rng = f"range({lo}, {lo} + {r.randint(0, 4)})"
            elif form == 2:
                rng = f"range({lo} + {r.randint(0, 4)}, {lo}, -1)"
            else:
                rng = f"range(0, wp.abs({lo}) % 7, {r.randint(1, 3)})"
            self.loop_depth += 1
            body = self.block(inner, r.randint(1, 3), depth - 1) + self.jump(inner)
            self.loop_depth -= 1
            return [f"for {j} in {rng}:"] + _indent(body)
        if k == 13 and depth > 0:  # while loop (counts down, so it ends)
            inner = Scope(sc)
            w = self.fresh("cnt")
            self.loop_depth += 1
            body = [f"{w} = {w} - 1"] + self.block(inner, r.randint(1, 3), depth - 1) + self.jump(inner)
            self.loop_depth -= 1
            start = f"wp.abs({self.int_value(sc, 1, 50)}) % 5"
            sc.vars[w] = ("i", 16)
            return [f"{w} = {start}", f"while {w} > 0:"] + _indent(body)
        if k < 16 and not self.in_func:
            return self.atomic(sc, ed)
        if k == 16 and self.in_func and self.return_type is not None and depth > 0:
            return [f"if {self.bexpr(sc, 1)}:"] + _indent([self.return_stmt(sc)])
        if k == 17 and not self.in_func:
            tuples = [h for h in self.helpers if h.returns == "fv"]
            if tuples and not self.grad:
                call = self.call(r.choice(tuples), sc, 1)
                fname, vname = self.fresh("f"), self.fresh("v")
                sc.vars[fname] = ("f", 0)
                sc.vars[vname] = ("v", 0)
                return [f"{fname}, {vname} = {call}"]
        if k == 18 and not self.in_func and not self.grad:
            return [f"fout[tid] = {self.fexpr(sc, ed)}"]
        if k == 19 and self.loop_depth == 0 and not self.in_func and depth > 0 and self.chance(0.3):
            return [f"if tid % 3 == 1 and ({self.bexpr(sc, 1)}):", "    return"]
        t = r.choice(self.types())
        name = self.fresh(t)
        e, b = self.assign_value(t, sc, ed)
        sc.vars[name] = (t, b)
        return [f"{name} = {e}"]

    def jump(self, sc: Scope) -> list[str]:
        """Maybe a guarded break/continue at the end of a loop body."""
        if not self.chance(0.4):
            return []
        return [f"if {self.bexpr(sc, 1)}:", f"    {self.rng.choice(['break', 'continue'])}"]

    def atomic(self, sc: Scope, depth: int) -> list[str]:
        r = self.rng
        idx = f"wp.abs({self.int_value(sc, 1, 1000)}) % {N_ACC}"
        if self.grad:
            return [f"wp.atomic_add(out2, 0, {self.dexpr(sc, depth)})"]
        k = r.randrange(7)
        if k == 0:
            return [f"wp.atomic_{r.choice(['add', 'sub', 'min', 'max'])}(facc, {idx}, {self.fexpr(sc, depth)})"]
        if k == 1:
            return [f"facc[{idx}] += {self.fexpr(sc, depth)}"]
        if k == 2:
            return [f"wp.atomic_add(vacc, {idx}, {self.vexpr(sc, depth)})"]
        if k == 3:
            op = r.choice(["add", "sub", "min", "max", "and", "or", "xor", "exch"])
            value = self.int_value(sc, depth, 1000)
            name = self.fresh("i")
            sc.vars[name] = ("i", INT_VAR_BOUND)
            return [f"{name} = wp.clamp(wp.atomic_{op}(iacc, {idx}, {value}), -{INT_VAR_BOUND}, {INT_VAR_BOUND})"]
        if k == 4:
            return [f"iacc[{idx}] += {self.int_value(sc, depth, 1000)}"]
        if k == 5:
            return [f"wp.atomic_cas(iacc, {idx}, {self.int_value(sc, 1, 20)}, {self.int_value(sc, depth, 1000)})"]
        return [f"wp.atomic_{r.choice(['min', 'max'])}(iacc, {idx}, {self.int_value(sc, depth, 1000)})"]

    def return_stmt(self, sc: Scope) -> str:
        if self.return_type == "fv":
            return f"return {self.fexpr(sc, 2)}, {self.vexpr(sc, 2)}"
        assert self.return_type is not None
        return f"return {self.expr(self.return_type, sc, 2)}"

    # Functions and kernels --------------------------------------------------------------------------------------
    def helper(self, name: str) -> list[str]:
        r = self.rng
        if self.grad:
            params, ret = r.choice([["d", "d"], ["d", "w", "i"], ["w", "d"]]), "d"
        else:
            params, ret = r.choice([(["f", "i", "v"], "f"), (["f", "f"], "f"), (["v", "m", "i"], "fv"),
                                    (["f", "v"], "fv"), (["d", "i"], "d")])
        sc = Scope()
        names = [f"p{i}" for i in range(len(params))]
        for n, t in zip(names, params):
            sc.vars[n] = (t, INT_VAR_BOUND)
        self.in_func, self.return_type = True, ret
        body = self.block(sc, r.randint(1, 4), 2)
        body.append(self.return_stmt(sc))
        self.in_func, self.return_type = False, None
        sig = ", ".join(f"{n}: {ANN[t]}" for n, t in zip(names, params))
        ann = f" -> {ANN[ret]}" if ret != "fv" else ""
        self.helpers.append(Helper(name, params, ret))
        return ["@wp.func", f"def {name}({sig}){ann}:"] + _indent(body)

    def kernel(self, name: str) -> list[str]:
        r = self.rng
        sc = Scope()
        if self.grad:
            params = ("x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.vec3d), k: wp.array(dtype=int), "
                      "out: wp.array(dtype=wp.float64), out2: wp.array(dtype=wp.float64)")
            head = ["tid = wp.tid()", "d0 = x[tid]", "w0 = y[tid]", "i0 = k[tid]", "d1 = x[(tid + 1) % x.shape[0]]"]
            sc.vars.update({"tid": ("i", 64), "d0": ("d", 0), "w0": ("w", 0), "i0": ("i", 9), "d1": ("d", 0)})
            body = self.block(sc, r.randint(3, 7), 3)
            tail = [f"out[tid] = {self.dexpr(sc, 2)}"]
        else:
            params = ("fin: wp.array(dtype=float), din: wp.array(dtype=wp.float64), iin: wp.array(dtype=int), "
                      "vin: wp.array(dtype=wp.vec3), min_: wp.array(dtype=wp.mat33), n: int, "
                      "fout: wp.array(dtype=float), dout: wp.array(dtype=wp.float64), iout: wp.array(dtype=int), "
                      "vout: wp.array(dtype=wp.vec3), mout: wp.array(dtype=wp.mat33), facc: wp.array(dtype=float), "
                      "iacc: wp.array(dtype=int), vacc: wp.array(dtype=wp.vec3)")
            head = ["tid = wp.tid()", "f0 = fin[tid]", "d0 = din[tid]", "i0 = iin[tid]", "v0 = vin[tid]",
                    "m0 = min_[tid]", "f1 = fin[(tid + 1) % n]"]
            sc.vars.update({"tid": ("i", 64), "n": ("i", 64), "f0": ("f", 0), "d0": ("d", 0), "i0": ("i", 9),
                            "v0": ("v", 0), "m0": ("m", 0), "f1": ("f", 0)})
            body = self.block(sc, r.randint(3, 8), 3)
            tail = [f"fout[tid] = {self.var_or('f', sc, 'f0') if self.chance(0.5) else self.fexpr(sc, 2)}",
                    f"dout[tid] = {self.dexpr(sc, 2)}",
                    f"iout[tid] = {self.int_value(sc, 2, INT_EXPR_LIMIT)}",
                    f"vout[tid] = {self.vexpr(sc, 2)}",
                    f"mout[tid] = {self.mexpr(sc, 2)}"]
        return ["@wp.kernel", f"def {name}({params}):"] + _indent(head + body + tail)


def _indent(lines: list[str]) -> list[str]:
    return ["    " + ln for ln in lines]


def generate_module(seed: int, n_kernels: int, grad: bool = False, n_helpers: int = 2) -> tuple[str, list[str]]:
    """Source of a module with ``n_kernels`` random kernels (and helpers); returns (source, kernel names)."""
    rng = random.Random(seed)
    g = Gen(rng, grad)
    prefix = "g" if grad else "k"
    lines = ["# Generated by tools/fuzz_kernels.py", f"# seed={seed} grad={grad}", "import treadle as wp", ""]
    for h in range(n_helpers):
        lines += g.helper(f"fz_{prefix}h{h}") + ["", ""]
    names = []
    for i in range(n_kernels):
        g.counter = 10  # generated names (f11, i12, ...) never collide with the fixed ones (f0, i0, ...)
        name = f"fz_{prefix}{i}"
        names.append(name)
        lines += g.kernel(name) + ["", ""]
    return "\n".join(lines) + "\n", names


# ----------------------------------------------------------------------------------------------------------------
# Running and comparing
# ----------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Mismatch:
    kind: str  # "forward", "error", "gradient"
    kernel: str
    detail: str
    source: str
    path: str

    def report(self) -> str:
        return f"--- {self.kind} mismatch in {self.kernel} ({self.path}) ---\n{self.detail}\n\n{_numbered(self.source)}"


@dataclasses.dataclass
class Stats:
    kernels: int = 0
    grad_kernels: int = 0
    fp_sensitive: int = 0
    ill_conditioned: int = 0
    known: dict[str, int] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    mismatches: list[Mismatch] = dataclasses.field(default_factory=list)


def _numbered(src: str) -> str:
    return "\n".join(f"{i + 1:4d}  {ln}" for i, ln in enumerate(src.splitlines()))


def import_file(path: Path, name: str) -> Any:
    """Import a generated file as module ``name`` (kernels need a real file: Treadle reads their source)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def forward_inputs(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "fin": rng.uniform(-2, 2, n).astype(np.float32),
        "din": rng.uniform(-2, 2, n),
        "iin": rng.integers(-9, 10, n).astype(np.int32),
        "vin": rng.uniform(-2, 2, (n, 3)).astype(np.float32),
        "min_": rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32),
    }


def run_forward(wp: Any, kernel: Any, inputs: dict[str, np.ndarray], mode: str) -> dict[str, np.ndarray]:
    """Launch one forward kernel on copies of ``inputs`` in ``mode``; returns every output array."""
    n = len(inputs["fin"])
    arrs = [wp.array(inputs["fin"], dtype=float), wp.array(inputs["din"], dtype=wp.float64),
            wp.array(inputs["iin"], dtype=int), wp.array(inputs["vin"], dtype=wp.vec3),
            wp.array(inputs["min_"], dtype=wp.mat33), n]
    outs = {"fout": wp.zeros(n, dtype=float), "dout": wp.zeros(n, dtype=wp.float64), "iout": wp.zeros(n, dtype=int),
            "vout": wp.zeros(n, dtype=wp.vec3), "mout": wp.zeros(n, dtype=wp.mat33),
            "facc": wp.zeros(N_ACC, dtype=float), "iacc": wp.zeros(N_ACC, dtype=int),
            "vacc": wp.zeros(N_ACC, dtype=wp.vec3)}
    with wp.config.override(mode=mode):
        wp.launch(kernel, dim=n, inputs=arrs, outputs=list(outs.values()))
    return {k: v.numpy().copy() for k, v in outs.items()}


def compare(a: np.ndarray, b: np.ndarray, rtol: float = 1e-4) -> str:
    """'' if the arrays agree (integers exactly, floats within tolerance), else a description."""
    if a.dtype.kind in "iub":
        bad = np.argwhere(a != b)
        if len(bad):
            i = tuple(bad[0])
            return f"{len(bad)} element(s) differ, first at {i}: compiled {a[i]} vs interpreted {b[i]}"
        return ""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    huge = (np.abs(a64) > 1e30) | (np.abs(b64) > 1e30)  # overflowed somewhere: not comparable
    both_nan = np.isnan(a64) & np.isnan(b64)
    skip = huge | both_nan
    finite = np.where(skip | ~np.isfinite(a64), 0.0, a64)
    scale = max(1.0, float(np.max(np.abs(finite))) if finite.size else 1.0)
    close = np.isclose(a64, b64, rtol=rtol, atol=rtol * scale) | skip
    bad = np.argwhere(~close)
    if len(bad):
        i = tuple(bad[0])
        return f"{len(bad)} element(s) differ, first at {i}: compiled {a[i]!r} vs interpreted {b[i]!r}"
    return ""


def _known(stats: Stats, error: str) -> bool:
    """Count an error that matches a known compiler bug; True if it did."""
    for pattern, what in KNOWN_COMPILER_BUGS:
        if pattern in error:
            stats.known[what] = stats.known.get(what, 0) + 1
            return True
    return False


def _differing(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> set[str]:
    return {k for k in a if compare(a[k], b[k])}


def perturbed(inputs: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """The float inputs moved by a few ulps (relative 1e-6)."""
    rng = np.random.default_rng(seed + 7)
    return {k: (v * (1 + 1e-6 * rng.uniform(-1, 1, v.shape))).astype(v.dtype) if v.dtype.kind == "f" else v
            for k, v in inputs.items()}


def compare_outputs(compiled: dict[str, np.ndarray], interp: dict[str, np.ndarray]) -> str:
    problems = []
    for k in compiled:
        d = compare(compiled[k], interp[k])
        if d:
            problems.append(f"{k}: {d}")
    return "\n".join(problems)


def check_forward_module(wp: Any, path: Path, mod_name: str, names: list[str], seed: int, n_threads: int,
                         stats: Stats, nofma: Any = None) -> None:
    """Run every kernel of a generated module both ways and record mismatches in ``stats``."""
    src = path.read_text()
    mod = import_file(path, mod_name)
    inputs = forward_inputs(n_threads, seed)
    for name in names:
        stats.kernels += 1
        k = getattr(mod, name)
        try:
            compiled = run_forward(wp, k, inputs, "release")
        except Exception as e:  # noqa: BLE001 - a compile or launch failure is a finding too
            if not _known(stats, str(e)):
                stats.mismatches.append(Mismatch("error", name, f"compiled run failed: {type(e).__name__}: {e}", src,
                                                 str(path)))
            continue
        try:
            interp = run_forward(wp, k, inputs, "interpret")
        except Exception as e:  # noqa: BLE001
            detail = f"interpreted run failed: {type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
            stats.mismatches.append(Mismatch("error", name, detail, src, str(path)))
            continue
        diff = compare_outputs(compiled, interp)
        if not diff:
            continue
        if nofma is None:
            nofma = _import_nofma(wp, path, mod_name)
        strict = run_forward(wp, getattr(nofma, name), inputs, "release")
        if not compare_outputs(strict, interp):
            stats.fp_sensitive += 1  # agrees once the compiler may not fuse multiply-adds
            stats.notes.append(f"fp-contraction sensitive: {name} ({path}): {diff}")
            continue
        # Ill-conditioned outputs (cancellation, then normalize or a float comparison) change when the inputs move by
        # a few ulps; a difference there says nothing about either implementation.
        wobbly = run_forward(wp, k, perturbed(inputs, seed), "release")
        if _differing(compiled, wobbly) & _differing(compiled, interp):
            stats.ill_conditioned += 1
            stats.notes.append(f"ill-conditioned: {name} ({path}): {diff}")
            continue
        stats.mismatches.append(Mismatch("forward", name, diff, src, str(path)))


def _import_nofma(wp: Any, path: Path, mod_name: str) -> Any:
    """The same module imported again under another name and compiled with FMA contraction off."""
    copy = path.with_name(path.stem + "_nofma.py")
    copy.write_text(path.read_text())
    old = list(wp.config.cpu_compiler_flags)
    wp.config.cpu_compiler_flags = old + ["-ffp-contract=off"]
    try:
        mod = import_file(copy, mod_name + "_nofma")
        for v in vars(mod).values():  # instantiate now, while the flag is set (options are read per instance)
            if getattr(v, "_treadle_kernel_", False):
                v.get_instance(None)
        return mod
    finally:
        wp.config.cpu_compiler_flags = old


def grad_inputs(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-1.5, 1.5, n), "y": rng.uniform(-1.5, 1.5, (n, 3)), "k": rng.integers(0, 6, n).astype(np.int32),
            "w_out": rng.normal(size=n), "w_out2": rng.normal(size=1)}


def _grad_forward(wp: Any, kernel: Any, inp: dict[str, np.ndarray], xs: np.ndarray, ys: np.ndarray) -> float:
    n = len(xs)
    out = wp.zeros(n, dtype=wp.float64)
    out2 = wp.zeros(1, dtype=wp.float64)
    wp.launch(kernel, dim=n, inputs=[wp.array(xs, dtype=wp.float64), wp.array(ys, dtype=wp.vec3d),
                                     wp.array(inp["k"], dtype=int)], outputs=[out, out2])
    return float(np.dot(inp["w_out"], out.numpy()) + np.dot(inp["w_out2"], out2.numpy()))


def check_gradient(wp: Any, kernel: Any, inp: dict[str, np.ndarray]) -> str:
    """'' if the Tape's gradients agree with central finite differences of the compiled forward pass."""
    n = len(inp["x"])
    x = wp.array(inp["x"], dtype=wp.float64, requires_grad=True)
    y = wp.array(inp["y"], dtype=wp.vec3d, requires_grad=True)
    out = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    out2 = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=n, inputs=[x, y, wp.array(inp["k"], dtype=int)], outputs=[out, out2])
    tape.backward(grads={out: inp["w_out"], out2: inp["w_out2"]})
    grads = [x.grad.numpy().reshape(-1), y.grad.numpy().reshape(-1)]
    base = [inp["x"], inp["y"]]

    def fd(which: int, j: int, h: float) -> float:
        b = base[which]
        args = []
        for sign in (1.0, -1.0):
            moved = b.reshape(-1).copy()
            moved[j] += sign * h
            args.append([moved.reshape(b.shape), inp["y"]] if which == 0 else [inp["x"], moved.reshape(b.shape)])
        return (_grad_forward(wp, kernel, inp, *args[0]) - _grad_forward(wp, kernel, inp, *args[1])) / (2 * h)

    for which, g in enumerate(grads):
        for j in range(g.size):
            d = fd(which, j, 1e-6)
            if abs(g[j] - d) <= 1e-4 * (1 + abs(d)):
                continue
            d2 = fd(which, j, 5e-7)
            if not np.isfinite(d) or abs(d - d2) > 1e-4 * (1 + abs(d)):
                continue  # not smooth here (a branch or kink within h): finite differences mean nothing
            what = "x" if which == 0 else "y"
            return f"d/d{what}[{j}]: tape {g[j]!r} vs finite differences {d!r}"
    return ""


def _grad_kernel_outputs(wp: Any, k: Any, inp: dict[str, np.ndarray], n: int, mode: str) -> list[np.ndarray]:
    out = wp.zeros(n, dtype=wp.float64)
    out2 = wp.zeros(1, dtype=wp.float64)
    with wp.config.override(mode=mode):
        wp.launch(k, dim=n, inputs=[wp.array(inp["x"], dtype=wp.float64), wp.array(inp["y"], dtype=wp.vec3d),
                                    wp.array(inp["k"], dtype=int)], outputs=[out, out2])
    return [out.numpy(), out2.numpy()]


def check_grad_module(wp: Any, path: Path, mod_name: str, names: list[str], seed: int, n_threads: int,
                      stats: Stats) -> None:
    src = path.read_text()
    mod = import_file(path, mod_name)
    inp = grad_inputs(n_threads, seed)
    nofma = None
    for name in names:
        stats.grad_kernels += 1
        k = getattr(mod, name)
        try:
            detail = check_gradient(wp, k, inp)
        except Exception as e:  # noqa: BLE001
            detail = "" if _known(stats, str(e)) else f"gradient run failed: {type(e).__name__}: {e}"
            if not detail:
                continue
        if detail:
            if nofma is None:
                nofma = _import_nofma(wp, path, mod_name)
            try:
                strict = check_gradient(wp, getattr(nofma, name), inp)
            except Exception as e:  # noqa: BLE001
                strict = str(e)
            if not strict:
                # Fused multiply-adds leave rounding residues (wp.cross(v, v) != 0) that move branches between
                # nearby points; without contraction the gradient is right.
                stats.fp_sensitive += 1
                stats.notes.append(f"fp-contraction sensitive gradient: {name} ({path}): {detail}")
                continue
            stats.mismatches.append(Mismatch("gradient", name, detail, src, str(path)))
            continue
        # The float64 kernels double as forward tests of the interpreter.
        out_c = _grad_kernel_outputs(wp, k, inp, n_threads, "release")
        out_i = _grad_kernel_outputs(wp, k, inp, n_threads, "interpret")
        diff = "\n".join(d for d in (compare(a, b, 1e-9) for a, b in zip(out_c, out_i)) if d)
        if diff:
            if nofma is None:
                nofma = _import_nofma(wp, path, mod_name)
            strict_out = _grad_kernel_outputs(wp, getattr(nofma, name), inp, n_threads, "release")
            if not any(compare(a, b, 1e-9) for a, b in zip(strict_out, out_i)):
                stats.fp_sensitive += 1
                stats.notes.append(f"fp-contraction sensitive: {name} ({path}): {diff}")
                continue
            stats.mismatches.append(Mismatch("forward", name, diff, src, str(path)))


def fuzz(n: int, seed: int, grad_n: int, workdir: Path, per_module: int = 8, n_threads: int = 16,
         log: Any = None) -> Stats:
    """Generate and check ``n`` forward kernels and ``grad_n`` gradient kernels; returns the statistics."""
    import treadle as wp

    stats = Stats()
    workdir.mkdir(parents=True, exist_ok=True)
    done = 0
    round_ = 0
    while done < n:
        count = min(per_module, n - done)
        s = seed * 1000 + round_
        src, names = generate_module(s, count)
        path = workdir / f"fuzz_fwd_{seed}_{round_}.py"
        path.write_text(src)
        check_forward_module(wp, path, f"fuzz_fwd_{seed}_{round_}", names, s, n_threads, stats)
        done += count
        round_ += 1
        if log:
            log(f"forward: {done}/{n} kernels, {len(stats.mismatches)} mismatch(es), {stats.fp_sensitive} fp-sensitive")
    done = 0
    while done < grad_n:
        count = min(per_module, grad_n - done)
        s = seed * 1000 + round_
        src, names = generate_module(s, count, grad=True)
        path = workdir / f"fuzz_grad_{seed}_{round_}.py"
        path.write_text(src)
        check_grad_module(wp, path, f"fuzz_grad_{seed}_{round_}", names, s, 8, stats)
        done += count
        round_ += 1
        if log:
            log(f"gradient: {done}/{grad_n} kernels, {len(stats.mismatches)} mismatch(es)")
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="number of forward kernels")
    ap.add_argument("--grad-n", type=int, default=None, help="number of gradient kernels (default: n // 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=16, help="launch size of each forward kernel")
    ap.add_argument("--out", type=Path, default=None, help="directory for the generated files (default: temporary)")
    ap.add_argument("--verbose", action="store_true", help="list the differences classified as not bugs")
    args = ap.parse_args(argv)
    grad_n = args.n // 4 if args.grad_n is None else args.grad_n
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="treadle-fuzz-") as tmp:
        workdir = args.out or Path(tmp)
        sys.path.insert(0, str(workdir))
        stats = fuzz(args.n, args.seed, grad_n, workdir, n_threads=args.threads,
                     log=lambda m: print(m, file=sys.stderr, flush=True))
        for m in stats.mismatches:
            print(m.report())
            print()
        if args.verbose:
            for note in stats.notes:
                print(note, file=sys.stderr)
    print(textwrap.dedent(f"""
        kernels: {stats.kernels} forward, {stats.grad_kernels} gradient
        mismatches: {len(stats.mismatches)}
        fp-contraction sensitive (agree with -ffp-contract=off): {stats.fp_sensitive}
        ill-conditioned (compiled output moves under 1e-6 input perturbation): {stats.ill_conditioned}
        known compiler bugs hit: {stats.known or 'none'}
        time: {time.time() - t0:.1f} s""").strip())
    return 1 if stats.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
