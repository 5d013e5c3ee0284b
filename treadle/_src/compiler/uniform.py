"""Run-time ``for`` loops whose range is the same for every thread of a launch (a *uniform* range).

A kernel such as an all-pairs n-body sum runs, in every thread, ``for j in range(n)`` with ``n`` a kernel argument.
Each thread's floating-point sums must keep their order, so the inner loop cannot be vectorized across ``j``; the
thread loop around it can (lanes = threads, each lane doing exactly the scalar operations in order), but only when
the inner loop is entered unconditionally: g++ gives up on the loop nest when the inner loop's entry test
(``0 < n``) sits inside the thread loop. ``uniform_ranges`` finds the loops whose bounds are launch constants (literals,
integer kernel arguments never assigned in the body, ``len``/``shape`` of array arguments, integer ``+ - *`` and
divisions ``/ // %`` of those) and spells, for each, the test that it runs at least once as C++ over the launch's ``Args``. The entry
(``emit_entry``) evaluates those tests once per launch and, when they all hold, runs the ``_nonempty`` instantiation of
the body, in which those loops are emitted without the entry test (``Emitter.for_range``).
"""

from __future__ import annotations

from typing import Any

from ..builtins.registry import Interp
from ..types.typesys import ArrayT, is_int
from . import ir


def _mutated(f: ir.FuncIR) -> set[int]:
    """Ids of the locals the body assigns or passes by reference (their value may change)."""
    out: set[int] = set()
    for s in ir.walk(f.body):
        if isinstance(s, ir.StoreLocal):
            out.add(s.local.id)
        out.update(op.local.id for op in ir.operands(s) if isinstance(op, ir.LocalRef))
    return out


def uniform_ranges(f: ir.FuncIR) -> dict[int, str]:
    """``{id(ForRange): C++ test that it runs at least once}`` for the kernel's loops with launch-constant bounds.

    The tests read the launch's arguments as ``args.p_<name>``; loops with a non-constant step are left out.
    """
    from .emit_cpp import cpp_const, cpp_type

    params = {p.id: p for p in f.params}
    stable = set(params) - _mutated(f)
    defs: dict[int, ir.Stmt] = {}
    for s in ir.walk(f.body):
        r = getattr(s, "result", None)
        if isinstance(r, ir.Value):
            defs[r.id] = s

    def array_param(x: Any) -> ir.Local | None:
        s = defs.get(x.id) if isinstance(x, ir.Value) else None
        if isinstance(s, ir.LoadLocal) and s.local.id in stable and isinstance(s.local.type, ArrayT):
            return s.local
        return None

    def expr(x: Any) -> str | None:
        if isinstance(x, ir.Const):
            return cpp_const(x) if is_int(x.type) else None
        s = defs.get(x.id) if isinstance(x, ir.Value) else None
        if s is None or not is_int(x.type):
            return None
        if isinstance(s, ir.LoadLocal):
            return f"args.p_{s.local.name}" if s.local.id in stable else None
        if isinstance(s, ir.Call):
            b = s.overload.builtin
            if b.shape_query and len(s.args) == 1 and array_param(s.args[0]) is not None:  # len(arr)
                return f"treadle::int32(args.p_{array_param(s.args[0]).name}.shape[0])"  # type: ignore[union-attr]
            if b.shape_query and len(s.args) == 2 and isinstance(s.args[1], ir.Const):  # arr.shape[d]
                a = array_param(s.args[0])
                return f"treadle::int32(args.p_{a.name}.shape[{int(s.args[1].value)}])" if a is not None else None
            # integer divisions (``/ // %``: ``n // 64`` of an argument is as uniform as ``n``) call the builtin's C++
            division = b.interpret is Interp.INT_DIVISION
            if (b.infix or division) and len(s.args) == 2:
                lhs, rhs = expr(s.args[0]), expr(s.args[1])
                if lhs is None or rhs is None:
                    return None
                t = cpp_type(x.type)
                if b.infix:
                    return f"{t}({lhs} {b.infix} {rhs})"
                return f"treadle::{b.cpp}({t}({lhs}), {t}({rhs}))"
        return None

    out: dict[int, str] = {}
    for s in ir.walk(f.body):
        if not isinstance(s, ir.ForRange) or not isinstance(s.step, ir.Const) or s.step.value == 0:
            continue
        start, stop = expr(s.start), expr(s.stop)
        if start is None or stop is None:
            continue
        t = cpp_type(s.var.type)
        out[id(s)] = f"{t}({start}) {'<' if s.step.value > 0 else '>'} {t}({stop})"
    return out
