"""Which array parameters a kernel (or function) reads and writes, from its IR.

Used by the tape's overwrite check: a recorded launch whose input array is later overwritten would be
differentiated with the wrong values.
"""

from __future__ import annotations

from typing import Any

from . import ir

#: Builtins that look at an array's shape or pointer only, not at its contents.
_METADATA_ONLY = frozenset({"_array_dim", "len", "_array_valid"})


def array_access(f: ir.FuncIR, _memo: dict[int, tuple[set[int], set[int]]] | None = None) -> tuple[set[int], set[int]]:
    """``(reads, writes)``: indices of the parameters whose arrays are loaded from / stored or atomically updated.

    A load counts as a read only if no store to the same array comes before it in program order: a kernel that
    writes an element and reads it back (``y[i] = x[i]; z[i] = y[i]``) does not consume ``y`` as an input.
    """
    memo = _memo if _memo is not None else {}
    key = id(f)
    if key in memo:
        return memo[key]
    memo[key] = (set(), set())  # recursion guard (recursion is rejected by the frontend anyway)
    origin: dict[int, set[int]] = {}
    for i, p in enumerate(f.params):
        origin[p.id] = {i}
    reads: set[int] = set()
    writes: set[int] = set()

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
            elif isinstance(s, ir.ArrayLoad):
                reads.update(org(s.array) - writes)
            elif isinstance(s, (ir.ArrayStore, ir.ArrayAtomic)):
                writes.update(org(s.array))  # the old value an atomic returns carries no gradient
            elif isinstance(s, ir.CallFunc):
                r, w = array_access(s.func.ir, memo)
                for i, a in enumerate(s.args):
                    if i in r:
                        reads.update(org(a))
                    if i in w:
                        writes.update(org(a))
            elif isinstance(s, ir.Call) and s.overload.builtin.name not in _METADATA_ONLY:
                for a in s.args:  # builtins taking arrays (e.g. sample_cdf, lower_bound) read them
                    reads.update(org(a))
    memo[key] = (reads, writes)
    return reads, writes
