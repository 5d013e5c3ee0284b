"""Which array parameters a kernel (or function) reads and writes, from its IR.

Used by the tape's overwrite check: a recorded launch whose input array is later overwritten would be
differentiated with the wrong values.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .dataflow import Marks


def array_access(f: ir.FuncIR) -> tuple[set[int], set[int]]:
    """``(reads, writes)``: indices of the parameters whose arrays are loaded from / stored or atomically updated.

    A load counts as a read only if no store to the same array comes before it in program order: a kernel that
    writes an element and reads it back (``y[i] = x[i]; z[i] = y[i]``) does not consume ``y`` as an input.
    """
    reads, writes, _ = _access(f, {})
    return reads, writes


def array_stores(f: ir.FuncIR) -> set[int]:
    """Indices of the array parameters that are assigned to (``a[i] = v``), as opposed to updated atomically."""
    return _access(f, {})[2]


def _access(f: ir.FuncIR, memo: dict[int, tuple[set[int], set[int], set[int]]]) -> tuple[set[int], set[int], set[int]]:
    key = id(f)
    if key in memo:
        return memo[key]
    memo[key] = (set(), set(), set())  # recursion guard (recursion is rejected by the frontend anyway)
    origin: dict[int, set[int]] = {}
    for i, p in enumerate(f.params):
        origin[p.id] = {i}
    reads: set[int] = set()
    writes: set[int] = set()
    stores: set[int] = set()

    def org(x: Any) -> set[int]:
        if isinstance(x, ir.Value):
            return origin.get(-x.id, set())
        if isinstance(x, ir.LocalRef):
            return origin.get(x.local.id, set())
        return set()

    # Two passes so that values flowing around loops are seen.
    for _ in range(2):
        for s in ir.walk(f.body):
            if isinstance(s, ir.LoadLocal):
                origin.setdefault(-s.result.id, set()).update(origin.get(s.local.id, set()))
            elif isinstance(s, ir.StoreLocal):
                origin.setdefault(s.local.id, set()).update(org(s.value))
            elif isinstance(s, (ir.ArrayView, ir.Extract)):
                src = s.array if isinstance(s, ir.ArrayView) else s.src
                origin.setdefault(-s.result.id, set()).update(org(src))
            elif isinstance(s, ir.ArrayLoad) and not s.update:
                reads.update(org(s.array) - writes)
            elif isinstance(s, (ir.ArrayStore, ir.ArrayAtomic)):
                writes.update(org(s.array))  # the old value an atomic returns carries no gradient
                if isinstance(s, ir.ArrayStore):
                    stores.update(org(s.array))
            elif isinstance(s, ir.CallFunc):
                r, w, st = _access(s.func.ir, memo)
                for i, a in enumerate(s.args):
                    if i in r:
                        reads.update(org(a))
                    if i in w:
                        writes.update(org(a))
                    if i in st:
                        stores.update(org(a))
            elif isinstance(s, ir.Call) and not s.overload.builtin.metadata_only:
                for a in s.args:  # builtins taking arrays (e.g. sample_cdf, lower_bound) read them
                    reads.update(org(a))
    memo[key] = (reads, writes, stores)
    return reads, writes, stores


def value_reads(f: ir.FuncIR) -> set[int]:
    """Indices of the array parameters whose loaded *values* the backward pass needs.

    A load whose value only flows (through variables, ``+``, ``-``, and vector construction or extraction) into
    array stores or atomic adds does not need its value to be differentiated: ``x[i] = x[i] + 1.0`` differentiates
    the same with any ``x``. The same holds through a ``@func`` call for a parameter whose value the function only
    passes on (the same operations) to its result, when the caller does not need that result's value either --
    e.g. a ``wp.ref`` parameter updated in place. Every other use (a product, a condition, an index, ...) needs it.
    """
    marks = _needed(f, {}, include_return=True)
    needed = marks.values
    stmts = list(ir.walk(f.body))
    if not f.is_kernel:
        return set(range(len(f.params)))  # functions: their return value's uses are not visible here
    origin: dict[int, set[int]] = {p.id: {i} for i, p in enumerate(f.params)}
    val_origin: dict[int, set[int]] = {}
    for _ in range(2):
        for s in stmts:
            if isinstance(s, ir.LoadLocal):
                val_origin.setdefault(s.result.id, set()).update(origin.get(s.local.id, set()))
            elif isinstance(s, ir.StoreLocal) and isinstance(s.value, ir.Value):
                origin.setdefault(s.local.id, set()).update(val_origin.get(s.value.id, set()))
            elif isinstance(s, ir.ArrayView) and isinstance(s.array, ir.Value):
                val_origin.setdefault(s.result.id, set()).update(val_origin.get(s.array.id, set()))
    out: set[int] = set()
    for s in stmts:
        if isinstance(s, ir.ArrayLoad) and s.result.id in needed and isinstance(s.array, ir.Value):
            out |= val_origin.get(s.array.id, set())
        elif isinstance(s, ir.Call) and not s.overload.builtin.metadata_only:
            for a in s.args:  # builtins that take arrays read their values
                if isinstance(a, ir.Value):
                    out |= val_origin.get(a.id, set())
        elif isinstance(s, (ir.CallFunc, ir.CallGrad)):
            for a in s.args:
                if isinstance(a, ir.Value):
                    out |= val_origin.get(a.id, set())
    return out


def _needed(f: ir.FuncIR, memo: dict[int, set[int]], include_return: bool) -> Marks:
    """The values and locals of ``f`` whose values its backward pass needs (returned values too, if asked)."""
    marks = Marks()
    stmts = list(ir.walk(f.body))
    needed, needed_locals = marks.values, marks.locals
    need, need_all = marks.add, marks.add_all

    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, (ir.ArrayLoad, ir.ArrayView)):
                changed = need_all(s.indices) or changed
            elif isinstance(s, ir.ArrayStore):
                changed = need_all(s.indices) or changed
            elif isinstance(s, ir.ArrayAtomic):
                changed = need_all(s.indices) or changed
                if s.op not in ("add", "sub") or s.compare is not None:
                    changed = need(s.value) or changed
                if s.compare is not None:
                    changed = need(s.compare) or changed
            elif isinstance(s, ir.Call):
                passes = s.overload.builtin.pass_through
                if not passes or (s.result is not None and s.result.id in needed):
                    changed = need_all(s.args) or changed
            elif isinstance(s, ir.CallFunc):
                passed_on = _passed_on_params(s.func.ir, memo)
                result_needed = s.result is not None and s.result.id in needed
                for i, a in enumerate(s.args):
                    if result_needed or i not in passed_on:
                        changed = need(a) or changed
            elif isinstance(s, ir.CallGrad):
                changed = need_all(s.args) or changed
            elif isinstance(s, (ir.Construct,)):
                if s.result.id in needed:
                    changed = need_all(s.args) or changed
            elif isinstance(s, ir.Extract):
                changed = need_all(s.index) or changed
                if s.result.id in needed:
                    changed = need(s.src) or changed
            elif isinstance(s, ir.Insert):
                changed = need_all(s.index) or changed
                if s.result.id in needed:
                    changed = need(s.src) or changed
                    changed = need(s.value) or changed
            elif isinstance(s, ir.If):
                changed = need(s.cond) or changed
            elif isinstance(s, ir.While):
                changed = need(s.cond) or changed
            elif isinstance(s, ir.ForRange):
                changed = need_all([s.start, s.stop, s.step]) or changed
                changed = marks.add_local(s.var.id) or changed
            elif isinstance(s, ir.StoreLocal):
                if s.local.id in needed_locals:
                    changed = need(s.value) or changed
            elif isinstance(s, ir.LoadLocal):
                if s.result.id in needed:
                    changed = marks.add_local(s.local.id) or changed
            elif isinstance(s, ir.Return) and s.value is not None and include_return:
                changed = need(s.value) or changed
    return marks


def _passed_on_params(f: ir.FuncIR, memo: dict[int, set[int]]) -> set[int]:
    """Parameters of function ``f`` whose values its backward pass needs only if its caller needs the result."""
    key = id(f)
    if key not in memo:
        memo[key] = set()  # recursion guard (recursion is rejected by the frontend anyway)
        locals_needed = _needed(f, memo, include_return=False).locals
        memo[key] = {i for i, p in enumerate(f.params) if p.id not in locals_needed}
    return memo[key]
