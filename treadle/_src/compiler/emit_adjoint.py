"""Adjoint (reverse-mode) C++ generation from the typed IR.

For each function and kernel the adjoint runs a forward sweep (recomputing every value), then a reverse sweep that
walks the statements backwards and calls each builtin's ``adj_`` function. The input is the jump-free form made by
:mod:`.structurize`. Every value is declared once at the top of the function, so the reverse sweep can read what the
forward sweep computed.

Loops are differentiated exactly, including dynamic bounds, ``while``, ``break`` and ``continue``: each iteration of
a loop pushes the variables its replay needs onto a per-thread checkpoint stack (:mod:`.checkpoints` says which); the reverse sweep walks the
iterations backwards, restores each iteration's state, replays that iteration forward and then reverses it. Loops
nested in a loop are checkpointed during the replay of their enclosing iteration, so memory is proportional to the
trip count of one loop level, not to the product.

After an adjoint value has been propagated it is reset to zero, which makes repeated loop iterations correct.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

from ..builtins.registry import Op
from ..types import scalars
from ..types.typesys import ArrayT, TileT, TupleT, is_composite, is_float, is_struct, normalize_annotation, scalar_of
from . import emit_entry, ir
from .checkpoints import checkpoint_sets
from .dataflow import Marks
from .emit_cpp import Emitter, callee_functor, cpp_field, cpp_type, template_arg


def _struct_tile(t: Any) -> bool:
    return isinstance(t, TileT) and is_struct(t.dtype) and differentiable(t.dtype)


def differentiable(t: Any) -> bool:
    """Whether values of type ``t`` carry gradients."""
    if t is None or isinstance(t, ArrayT):
        return False
    if is_float(t):
        return True
    if is_composite(t):
        return is_float(scalar_of(t))
    if isinstance(t, TileT):
        return differentiable(t.dtype)
    if is_struct(t):
        return any(differentiable(normalize_annotation(ft)) for ft in t.vars.values())
    if isinstance(t, TupleT):
        return any(differentiable(x) for x in t.types)
    return False


def adjoint_live(f: ir.FuncIR) -> set[int]:
    """Ids of the values whose adjoint can be non-zero.

    Those are the values that flow (through operations and variables) into an array store or atomic, a ``@func``
    call, or the function's return value. The reverse sweep skips the adjoints of all other values: a value that is unused, or only compared, then never
    adds ``0 * inf`` or ``0 * NaN`` (from its own partial derivatives) to the gradients of its inputs.
    """
    marks = Marks()
    vals, locs, mark = marks.values, marks.locals, marks.add
    if f.retval is not None:
        locs.add(f.retval.id)
    stmts = list(ir.walk(f.body))

    def mark_all(s: Any) -> bool:
        changed = False
        for name in ("args", "src", "value", "index"):
            v = getattr(s, name, None)
            changed = marks.add_all(v if isinstance(v, list) else [v]) or changed
        return changed

    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, (ir.ArrayStore, ir.ArrayAtomic)):
                changed = mark(s.value) or changed
            elif isinstance(s, (ir.CallFunc, ir.CallGrad)):
                changed = mark_all(s) or changed
            elif isinstance(s, ir.StoreLocal):
                if s.local.id in locs:
                    changed = mark(s.value) or changed
            elif isinstance(s, ir.LoadLocal):
                if s.result.id in vals:
                    changed = marks.add_local(s.local.id) or changed
            elif isinstance(s, ir.Call):
                refs = any(isinstance(a, ir.LocalRef) and a.local.id in locs for a in s.args)
                if s.result is None or s.result.id in vals or refs or s.overload.builtin.grad_sink:
                    changed = mark_all(s) or changed
            elif isinstance(s, (ir.Construct, ir.Extract, ir.Insert)):
                if s.result.id in vals:
                    changed = mark_all(s) or changed
    return vals


def _has_array(t: Any) -> bool:
    if isinstance(t, ArrayT):
        return True
    if is_struct(t):
        return any(_has_array(normalize_annotation(ft)) for ft in t.vars.values())
    if isinstance(t, TupleT):
        return any(_has_array(x) for x in t.types)
    return False


_OPERANDS = ("args", "index", "indices", "src", "value", "array", "cond", "start", "stop", "step", "compare")


def own_index_arrays(f: ir.FuncIR) -> dict[int, ir.Local]:
    """Array parameters whose every element access is at the thread's own index: ``{value id: parameter}``.

    A parameter qualifies when it is only ever loaded from or stored to (never passed on, viewed, reassigned or
    updated atomically) and every index tuple is the same full set of launch dimensions (``x[i]`` in a 1-d launch,
    ``x[i, j]`` or ``x[j, i]`` in a 2-d one, ``i, j`` straight from ``wp.tid()``). Then no two threads touch the same
    element, and the gradient of a load can be a plain add; whether the gradient buffers really are disjoint and
    injective is checked at run time (``treadle::grad_own`` / ``grad_apart``). The values returned are the ids of
    the ``LoadLocal`` results that refer to each parameter.
    """
    params = {p.id: p for p in f.params if isinstance(p.type, ArrayT)}
    if not params or any(_has_array(p.type) and not isinstance(p.type, ArrayT) for p in f.params):
        return {}
    nd = max(1, getattr(f, "launch_ndim", 1))
    full = {-1} if nd == 1 else set(range(nd))
    tid_val: dict[int, int] = {}  # value id -> launch dimension
    stores: dict[int, list[Any]] = {}
    bad_locals: set[int] = set()
    stmts = list(ir.walk(f.body))
    for s in stmts:
        if isinstance(s, ir.Tid):
            tid_val[s.result.id] = s.dim
        elif isinstance(s, ir.StoreLocal):
            stores.setdefault(s.local.id, []).append(s.value)
        elif isinstance(s, ir.ForRange):
            bad_locals.add(s.var.id)
        for a in getattr(s, "args", None) or []:
            if isinstance(a, ir.LocalRef):
                bad_locals.add(a.local.id)
    tid_local: dict[int, int] = {}
    for _ in range(3):  # locals assigned only from thread indices (possibly through other such locals)
        for s in stmts:
            if isinstance(s, ir.LoadLocal) and s.local.id in tid_local:
                tid_val[s.result.id] = tid_local[s.local.id]
        for lid, vals in stores.items():
            found = {tid_val.get(v.id, -9) if isinstance(v, ir.Value) else -9 for v in vals}
            if lid not in bad_locals and len(found) == 1 and -9 not in found:
                tid_local[lid] = found.pop()
    ref: dict[int, int] = {}  # LoadLocal result id -> parameter local id
    for s in stmts:
        if isinstance(s, ir.LoadLocal) and s.local.id in params:
            ref[s.result.id] = s.local.id
    ok = {pid for pid in params if pid not in bad_locals and pid not in stores}
    pattern: dict[int, tuple[int, ...]] = {}
    for s in stmts:
        for name in _OPERANDS:
            v = getattr(s, name, None)
            for op in (v if isinstance(v, list) else [v]):
                if not isinstance(op, ir.Value) or op.id not in ref:
                    continue
                pid = ref[op.id]
                if isinstance(s, ir.Call) and s.overload.builtin.metadata_only:
                    continue  # shape queries do not touch elements
                if name != "array" or not isinstance(s, (ir.ArrayLoad, ir.ArrayStore)):
                    ok.discard(pid)
                    continue
                dims = tuple(tid_val.get(i.id, -9) if isinstance(i, ir.Value) else -9 for i in s.indices)
                if (len(dims) != params[pid].type.ndim or set(dims) != full or len(set(dims)) != len(dims)
                        or pattern.setdefault(pid, dims) != dims):
                    ok.discard(pid)
    return {vid: params[pid] for vid, pid in ref.items() if pid in ok}


def replay_stmt(em: Emitter, s: ir.Stmt, lines: list[str], ind: str) -> bool:
    """Emit ``s`` as the backward pass's forward replay does; returns False if it is emitted as usual.

    The replay recomputes values only: array stores and atomics are dropped (an atomic's old value is read
    instead), printing is skipped, and user functions are called through their side-effect-free replay variants.
    """
    local: set[int] = getattr(em, "local_arrays", set())
    if isinstance(s, (ir.ArrayStore, ir.ArrayAtomic)) and isinstance(s.array, ir.Value) and s.array.id in local:
        return False  # thread-private arrays are recomputed like any other value
    if isinstance(s, ir.ArrayStore):
        return True
    if isinstance(s, ir.ArrayAtomic):
        if s.result is not None:
            idx = ", ".join(em.indices(s))
            lines.append(f"{ind}{em.decl(s.result)} = treadle::load({em.op(s.array)}, {idx});")
        return True
    if isinstance(s, ir.Call) and not s.overload.builtin.replay:
        return True
    if isinstance(s, ir.CallFunc):
        args = ", ".join(em.op(a) for a in s.args)
        call = f"{replay_name(s.func)}({args})"
        lines.append(f"{ind}{em.decl(s.result)} = {call};" if s.result is not None else f"{ind}{call};")
        return True
    return False


def replay_name(fi: Any) -> str:
    """The C++ name of the function used for ``fi`` in forward replays."""
    return f"{fi.cname}_replay"


class ReplayEmitter(Emitter):
    """Writes the side-effect-free replay variant of a ``@func`` (see :func:`replay_stmt`)."""

    callee_slot = 2

    def function(self, f: ir.FuncIR, cname: str) -> str:
        native = getattr(f, "native", None)
        if native is not None:  # a @func_native replay: its replay snippet, else the forward snippet
            return self.native_function(f, cname, native[2] if native[2] is not None else native[0])
        self.local_arrays = ir.local_array_values(f)
        return super().function(f, cname)

    def stmt(self, s: ir.Stmt, lines: list[str], ind: str) -> None:
        if not replay_stmt(self, s, lines, ind):
            super().stmt(s, lines, ind)


class _GradBodyEmitter(Emitter):
    """Writes a ``@func_grad`` body as forward code.

    ``@func`` helpers it calls run for real (side effects included) when the block defines their forward variants
    (``forward_calls``, the backward pass's block); otherwise through their side-effect-free replays, the only
    variants that every block holding adjoints defines.
    """

    forward_calls = False

    def stmt(self, s: ir.Stmt, lines: list[str], ind: str) -> None:
        if isinstance(s, ir.CallFunc):
            self.line(s, lines, ind)
            name = s.func.cname if self.forward_calls else replay_name(s.func)
            call = f"{name}({', '.join(self.op(a) for a in s.args)})"
            lines.append(f"{ind}{self.decl(s.result)} = {call};" if s.result is not None else f"{ind}{call};")
            return
        super().stmt(s, lines, ind)


_warned: set[tuple[str, int, str]] = set()
_deferred = threading.local()
#: the texts of the dropped-gradient warnings issued so far (each is issued once per process)
_issued: set[str] = set()


@contextlib.contextmanager
def deferred_dropped_warnings() -> Iterator[list[str]]:
    """Collect the dropped-gradient warnings of backward passes emitted in the block instead of issuing them.

    A backward pass emitted ahead of need (built with its forward, before anyone asks for the gradient) warns when
    its gradient is asked for: the caller issues the collected texts then (:func:`warn_dropped_text`).
    """
    saved = getattr(_deferred, "sink", None)
    sink: list[str] = []
    _deferred.sink = sink
    try:
        yield sink
    finally:
        _deferred.sink = saved


def pass_on_dropped(texts: list[str]) -> None:
    """Issue collected dropped-gradient warnings now, or hand them to an enclosing :func:`deferred_dropped_warnings`."""
    sink = getattr(_deferred, "sink", None)
    if sink is not None:
        sink.extend(texts)
        return
    for text in texts:
        warn_dropped_text(text, stacklevel=3)


def warn_dropped_text(text: str, stacklevel: int = 2) -> None:
    """Issue one dropped-gradient warning (its text as :func:`deferred_dropped_warnings` collected it)."""
    import warnings

    from ..core.errors import DroppedGradientWarning

    if text not in _issued:  # a backward pass found in the warm-start index and then built again warns once
        _issued.add(text)
        warnings.warn(text, DroppedGradientWarning, stacklevel=stacklevel + 1)


def _operands(s: ir.Stmt) -> list[Any]:
    out: list[Any] = []
    for v in (getattr(s, fld.name) for fld in dataclasses.fields(s)):
        if isinstance(v, ir.Value):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, ir.Value))
    return out


def active_values(f: ir.FuncIR) -> set[int]:
    """Ids of the values that may depend on the function's inputs (parameters, array contents), flow-insensitively.

    A value made only of constants (``wp.vec3(0.1, 0.2, 0.3)``) is not active: no gradient can flow back from it.
    """
    active: set[int] = set()
    active_locals = {p.id for p in f.params}
    changed = True
    while changed:
        changed = False
        for s in ir.walk(f.body):
            if isinstance(s, ir.StoreLocal):
                v = s.value
                if isinstance(v, ir.Value) and v.id in active and s.local.id not in active_locals:
                    active_locals.add(s.local.id)
                    changed = True
                continue
            r = getattr(s, "result", None)
            if not isinstance(r, ir.Value) or r.id in active:
                continue
            if (isinstance(s, (ir.ArrayLoad, ir.ArrayAtomic))
                    or (isinstance(s, ir.LoadLocal) and s.local.id in active_locals)
                    or any(o.id in active for o in _operands(s))):
                active.add(r.id)
                changed = True
    return active


def _warn_dropped(s: ir.Call, active: set[int] | None) -> None:
    """Warn (once per place) that a gradient reaching a builtin without an adjoint stops there.

    Called for calls whose result's adjoint can be non-zero (``adjoint_live``) and has a differentiable type; the
    warning needs a float argument that depends on the inputs (``active_values``: something a gradient could flow
    back to).
    """
    name = s.overload.builtin.name
    if s.overload.builtin.zero_derivative or not any(
            isinstance(a, ir.Value) and differentiable(a.type) and (active is None or a.id in active)
            for a in s.args):
        return
    loc = s.loc
    key = (getattr(loc, "file", "?"), int(getattr(loc, "line", 0) or 0), name)
    if key in _warned:
        return
    _warned.add(key)
    import warnings

    from ..core.errors import DroppedGradientWarning

    where = f"{key[0]}:{key[1]}: " if loc is not None else ""
    text = (f"{where}'{name}' has no adjoint: gradients do not flow back through it (the backward pass takes its "
            "derivative as 0)")
    sink = getattr(_deferred, "sink", None)
    if sink is not None:
        sink.append(text)
        return
    if text not in _issued:
        _issued.add(text)
        warnings.warn(text, DroppedGradientWarning, stacklevel=2)


class AdjointEmitter(Emitter):
    """Writes adjoint functions and the backward kernel entry point."""

    hoist = True
    callee_slot = 2

    def __init__(self, base: Emitter) -> None:
        super().__init__(line_directives=base.line_directives, checked=False)
        self.tuple_names = base.tuple_names
        self.types_done = base.types_done
        self.type_defs = base.type_defs
        self.loop_ids: dict[int, int] = {}
        self.ckpt_now = False
        self.dummy = 0
        self.own: dict[int, str] = {}  # array value id -> name of its "own index" flag (own_index_arrays)
        self.live: set[int] | None = None  # values whose adjoint can be non-zero (adjoint_live); None: all
        self.active: set[int] | None = None  # values that depend on the inputs (active_values); None: all
        self.active_of: ir.FuncIR | None = None  # the function being reversed (its active_values when needed)
        self.partner: dict[int, ir.Call] = {}  # sin/cos result id -> call replayed with its partner (sincos_calls)
        self.saved: dict[int, list[ir.Local]] = {}  # loop statement id -> locals an iteration saves (checkpoints.py)
        self.loop_ckpt: dict[int, bool] = {}  # loop statement id -> whether its forward sweep checkpoints
        self.saved_ckpt: dict[int, bool] = {}  # loop statement id -> the checkpoint state around its iteration

    # Declarations ----------------------------------------------------------------------------------------------
    def ct(self, t: Any) -> str:
        return cpp_type(t, self.tuple_names)

    def declarations(self, f: ir.FuncIR, with_locals: bool) -> list[str]:
        lines: list[str] = []
        seen: set[int] = set()
        for s in ir.walk(f.body):
            r = getattr(s, "result", None)
            if r is not None and r.id not in seen:
                seen.add(r.id)
                t = self.ct(r.type)
                lines.append(f"    {t} _v{r.id}{{}}; {t} adj_v{r.id} = treadle::adj_zero<{t}>();")
                if r.id in self.partner:
                    lines.append(f"    {t} _pc{r.id}{{}};")
            if isinstance(s, ir.LocalArray):
                el = self.ct(s.result.type.dtype)
                n_el = 1
                for d in s.shape:
                    n_el *= d
                lines.append(f"    {el} _lb{s.result.id}[{max(n_el, 1)}]{{}}; {el} _lg{s.result.id}[{max(n_el, 1)}]{{}};")
            if isinstance(s, (ir.ForRange, ir.While)):
                n = self.loop_ids.setdefault(id(s), len(self.loop_ids))
                lines.append(f"    size_t _base{n} = 0, _esz{n} = 0; treadle::int64 _cnt{n} = 0;")
        if with_locals:
            for loc in f.locals:
                t = self.ct(loc.type)
                lines.append(f"    {t} var_{loc.name}{{}}; {t} adj_var_{loc.name} = treadle::adj_zero<{t}>();")
        return lines

    # Sweeps -----------------------------------------------------------------------------------------------------
    def stmt(self, s: ir.Stmt, lines: list[str], ind: str) -> None:
        """Forward replay: like the forward kernel, but without side effects (stores, atomics, printing)."""
        if isinstance(s, ir.Call) and s.result is not None and s.result.id in self.partner:
            self.line(s, lines, ind)
            b = s.overload.builtin
            fn = f"{b.name}_{b.partner}"
            r = s.result.id
            lines.append(f"{ind}_v{r} = treadle::{fn}({self.op(s.args[0])}, _pc{r});")
            return
        if not replay_stmt(self, s, lines, ind):
            super().stmt(s, lines, ind)

    def sincos_calls(self, f: ir.FuncIR, live: set[int]) -> dict[int, ir.Call]:
        """The ``sin``/``cos`` calls (float32/float64) whose adjoint runs: the replay computes the partner value too.

        The adjoint of ``sin(x)`` needs ``cos(x)`` and vice versa; the replay gets both from one ``sincos`` call
        (``treadle::sin_cos``), which costs about as much as one of them, and the reverse sweep uses the saved value.
        """
        out: dict[int, ir.Call] = {}
        for s in ir.walk(f.body):
            if (isinstance(s, ir.Call) and s.result is not None and s.result.id in live and len(s.args) == 1
                    and s.overload.builtin.partner and s.overload.differentiable
                    and s.result.type in (scalars.float32, scalars.float64)):
                out[s.result.id] = s
        return out

    def forward(self, block: ir.Block, lines: list[str], ind: str, ckpt: bool) -> None:
        old = self.ckpt_now
        self.ckpt_now = ckpt
        self.block(block, lines, ind)
        self.ckpt_now = old

    def loop_prologue(self, s: Any, lines: list[str], ind: str) -> None:
        self.loop_ckpt[id(s)] = self.ckpt_now
        if self.ckpt_now:
            n = self.loop_ids[id(s)]
            size = " + ".join(f"sizeof(var_{m.name})" for m in self.saved[id(s)]) or "0"
            lines.append(f"{ind}_base{n} = treadle::ckpt_size(); _cnt{n} = 0; _esz{n} = {size};")

    def iter_prologue(self, s: Any, lines: list[str], ind: str) -> None:
        if self.loop_ckpt[id(s)]:
            n = self.loop_ids[id(s)]
            for m in self.saved[id(s)]:
                lines.append(f"{ind}treadle::ckpt_push(var_{m.name});")
            lines.append(f"{ind}++_cnt{n};")
        self.saved_ckpt[id(s)] = self.ckpt_now
        self.ckpt_now = False  # loops nested in this one are checkpointed when this iteration is replayed

    def iter_epilogue(self, s: Any, lines: list[str], ind: str) -> None:
        self.ckpt_now = self.saved_ckpt[id(s)]
        super().iter_epilogue(s, lines, ind)

    def adj(self, x: Any) -> str | None:
        if isinstance(x, ir.Value):
            return f"adj_v{x.id}"
        if isinstance(x, ir.LocalRef):
            return f"adj_var_{x.local.name}"
        return None

    def adj_or_dummy(self, x: Any, dummies: list[str]) -> str:
        a = self.adj(x)
        if a is not None:
            return a
        self.dummy += 1
        name = f"_d{self.dummy}"
        t = x.type if x.type is not None else scalars.int32
        dummies.append(f"{self.ct(t)} {name}{{}};")
        return name

    def emit_adj(self, lines: list[str], ind: str, call: str, dummies: list[str]) -> None:
        if dummies:
            lines.append(f"{ind}{{ {' '.join(dummies)} {call}; }}")
        else:
            lines.append(f"{ind}{call};")

    def accum(self, lines: list[str], ind: str, target: str | None, src: str, t: Any) -> None:
        if target is not None and differentiable(t):
            lines.append(f"{ind}adj_accum({target}, {src});")

    def reverse(self, block: ir.Block, lines: list[str], ind: str) -> None:
        for s in reversed(block.stmts):
            self.rev(s, lines, ind)

    def rev(self, s: ir.Stmt, lines: list[str], ind: str) -> None:  # noqa: C901 - one case per statement kind
        op = self.op
        r: Any = getattr(s, "result", None)
        if isinstance(s, (ir.Call, ir.Construct, ir.Extract, ir.Insert)) and self.live is not None and \
                r is not None and r.id not in self.live and not (isinstance(s, ir.Call) and s.overload.builtin.grad_sink):
            return  # its adjoint is always zero (see adjoint_live)
        if isinstance(s, ir.Call) and s.overload.builtin.grad_sink and s.overload.differentiable:
            self.rev_grad_sink(s, lines, ind)
            return
        if isinstance(s, ir.Call):
            ov = s.overload
            if r is not None and not ov.differentiable and differentiable(r.type):
                if self.active is None and self.active_of is not None:  # computed at the first such call only
                    self.active = active_values(self.active_of)
                _warn_dropped(s, self.active)
            if r is None or not ov.differentiable or not differentiable(r.type):
                return
            cpp = ov.cpp
            if ov.builtin.op in (Op.SELECT, Op.WHERE):
                c, a, b = s.args
                first, second = (b, a) if ov.builtin.op is Op.SELECT else (a, b)
                ta, tb = self.adj(first), self.adj(second)
                lines.append(f"{ind}if ({op(c)}) {{ {f'adj_accum({ta}, adj_v{r.id});' if ta else ''} }}"
                             f" else {{ {f'adj_accum({tb}, adj_v{r.id});' if tb else ''} }}")
            elif ov.builtin.op is None:
                dummies: list[str] = []
                adjs = [self.adj_or_dummy(a, dummies) for a in s.args]
                tmpl = "<" + ",".join(template_arg(x) for x in ov.template) + ">" if ov.template else ""
                args = [op(a) for a in s.args] + adjs + [f"adj_v{r.id}"]
                if ov.callee is not None:  # tile_map: the element function's adjoint, as a local functor
                    dummies.insert(0, callee_functor(ov.callee, f"_afn{r.id}", ov.callee.adj or "",
                                                     self.tuple_names, adjoint=True))
                    args.insert(0, f"_afn{r.id}{{}}")
                if r.id in self.partner:
                    cpp, args[0] = f"{ov.builtin.name}_of_{ov.builtin.partner}", f"_pc{r.id}"
                guard = self.nonzero_guard(ov, r)
                if guard:
                    lines.append(f"{ind}if ({guard})")
                self.emit_adj(lines, ind + ("    " if guard else ""),
                              f"treadle::adj_{cpp}{tmpl}({', '.join(args)})", dummies)
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.CallFunc):
            native = getattr(s.func.ir, "native", None) is not None
            # arrays carry gradients too: the callee's adjoint accumulates into their gradient buffers
            if not native and not any(differentiable(a.type) or _has_array(a.type) for a in s.args) and not (
                    r is not None and differentiable(r.type)):
                return
            dummies = []
            adjs = []
            for a in s.args:
                if native and isinstance(a.type, ArrayT):  # native adjoints see the gradient buffer as adj_<array>
                    self.dummy += 1
                    dummies.append(f"auto _d{self.dummy} = treadle::grad_of({op(a)});")
                    adjs.append(f"_d{self.dummy}")
                else:
                    adjs.append(self.adj_or_dummy(a, dummies))
            args = [op(a) for a in s.args] + adjs + ([f"adj_v{r.id}"] if r is not None else [])
            self.emit_adj(lines, ind, f"adj_{s.func.cname}({', '.join(args)})", dummies)
            if r is not None:
                lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.Construct):
            if differentiable(r.type):
                self.rev_construct(s, lines, ind)
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.Extract):
            if differentiable(r.type):
                if s.field is not None:
                    self.accum(lines, ind, f"{self.adj(s.src)}.{cpp_field(s.field)}" if self.adj(s.src) else None,
                               f"adj_v{r.id}", r.type)
                elif isinstance(s.src.type, TupleT):
                    tgt = self.adj(s.src)
                    self.accum(lines, ind, f"{tgt}.f{s.index[0].value}" if tgt else None, f"adj_v{r.id}", r.type)
                elif self.adj(s.src) is not None:
                    dummies = []
                    idx = [op(i) for i in s.index]
                    didx = [self.adj_or_dummy(i, dummies) if False else self._int_dummy(i, dummies) for i in s.index]
                    call = (f"treadle::adj_extract({op(s.src)}, {', '.join(idx)}, {self.adj(s.src)}, "
                            f"{', '.join(didx)}, adj_v{r.id})")
                    self.emit_adj(lines, ind, call, dummies)
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.Insert):
            if differentiable(r.type):
                self.rev_insert(s, lines, ind)
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.ArrayLoad) and is_struct(r.type):
            if differentiable(r.type):
                where = ", ".join(self.indices(s))
                lines.append(f"{ind}{{ auto* _g = treadle::grad_address({op(s.array)}, {where}); "
                             f"if (_g) adj_atomic_accum(_g, adj_v{r.id}); }}")
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.ArrayStore) and is_struct(s.value.type):
            tgt = self.adj(s.value)
            where = ", ".join(self.indices(s))
            if tgt is not None and differentiable(s.value.type):
                # the element's gradient goes to the stored value and is consumed (see take_grad in array.h)
                lines.append(f"{ind}{{ auto* _g = treadle::grad_address({op(s.array)}, {where}); "
                             f"if (_g) {{ adj_accum({tgt}, *_g); "
                             f"treadle::drop_grad(treadle::grad_flags({op(s.array)}), _g); }} }}")
            else:
                lines.append(f"{ind}treadle::adj_store_overwrite({op(s.array)}, {where});")
        elif isinstance(s, ir.ArrayLoad):
            own = self.own.get(s.array.id) if isinstance(s.array, ir.Value) else None
            if differentiable(r.type) and own is not None:
                where = ", ".join(self.indices(s))
                lines.append(f"{ind}if (auto* _g = treadle::grad_address({op(s.array)}, {where})) "
                             f"treadle::adj_grad_add(_g, adj_v{r.id}, {own});")
            elif differentiable(r.type):
                dummies = []
                didx = [self._int_dummy(i, dummies) for i in s.indices]
                dummies.append(f"{self.ct(s.array.type)} _da{{}};")
                args = [op(s.array), *self.indices(s), "_da"] + didx + [f"adj_v{r.id}"]
                self.emit_adj(lines, ind, f"treadle::adj_load({', '.join(args)})", dummies)
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.ArrayStore):
            tgt = self.adj(s.value)
            if tgt is not None and differentiable(s.value.type):
                dummies = []
                didx = [self._int_dummy(i, dummies) for i in s.indices]
                dummies.append(f"{self.ct(s.array.type)} _da{{}};")
                args = [op(s.array), *self.indices(s), op(s.value), "_da"] + didx + [tgt]
                self.emit_adj(lines, ind, f"treadle::adj_store({', '.join(args)})", dummies)
            else:  # nothing to pass on, but the store still replaced the element: its gradient is consumed
                where = ", ".join(self.indices(s))
                lines.append(f"{ind}treadle::adj_store_overwrite({op(s.array)}, {where});")
        elif isinstance(s, ir.ArrayAtomic):
            tgt = self.adj(s.value)
            if s.op in ("add", "sub", "min", "max") and differentiable(s.value.type):
                idx_text = ", ".join(self.indices(s))
                dummies = []
                if tgt is None:
                    tgt = self.adj_or_dummy(s.value, dummies)
                adj_r = f"adj_v{r.id}" if r is not None else f"{self.ct(s.value.type)}{{}}"
                call = (f"treadle::adj_atomic_{s.op}(treadle::address({op(s.array)}, {idx_text}), {op(s.value)}, "
                        f"treadle::grad_address({op(s.array)}, {idx_text}), {tgt}, {adj_r})")
                self.emit_adj(lines, ind, call, dummies)
            if r is not None:
                lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.LoadLocal):
            self.accum(lines, ind, f"adj_var_{s.local.name}", f"adj_v{r.id}", r.type)
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")
        elif isinstance(s, ir.StoreLocal):
            if differentiable(s.local.type):
                self.accum(lines, ind, self.adj(s.value), f"adj_var_{s.local.name}", s.local.type)
                lines.append(f"{ind}treadle::adj_reset(adj_var_{s.local.name});")
        elif isinstance(s, ir.If):
            then: list[str] = []
            orelse: list[str] = []
            self.reverse(s.then, then, ind + "    ")
            self.reverse(s.orelse, orelse, ind + "    ")
            if then or orelse:
                lines.append(f"{ind}if ({op(s.cond)}) {{")
                lines += then
                lines.append(f"{ind}}} else {{")
                lines += orelse
                lines.append(f"{ind}}}")
        elif isinstance(s, (ir.ForRange, ir.While)):
            self.rev_loop(s, lines, ind)
        # Tid, DeclLocal, ArrayView: nothing flows back.

    def rev_grad_sink(self, s: ir.Call, lines: list[str], ind: str) -> None:
        """The adjoint of a call that moves gradients besides its result (``Builtin.grad_sink``).

        A tile stored or added into an array passes the array's gradient back to the tile's adjoint.
        """
        ov, r = s.overload, s.result
        dummies: list[str] = []
        adjs = [self.adj_or_dummy(a, dummies) for a in s.args]
        tmpl = "<" + ",".join(template_arg(x) for x in ov.template) + ">" if ov.template else ""
        args = [self.op(a) for a in s.args] + adjs + ([f"adj_v{r.id}"] if r is not None else [])
        self.emit_adj(lines, ind, f"treadle::adj_{ov.cpp}{tmpl}({', '.join(args)})", dummies)
        if r is not None:
            lines.append(f"{ind}treadle::adj_reset(adj_v{r.id});")

    def nonzero_guard(self, ov: Any, r: ir.Value) -> str:
        """The condition under which a singular builtin's adjoint runs: its result's adjoint is not exactly zero.

        Values that never reach an output are skipped statically (``adjoint_live``); this run-time test covers the
        rest for builtins whose partial derivatives can be infinite or NaN (``wp.sqrt`` of 0 or of a negative,
        division by 0, ...), e.g. a ``wp.where``/``select`` branch not taken, where ``0 * NaN`` would otherwise
        poison the gradient. Other builtins are not tested (the test costs ~10% of a backward pass).
        """
        if not ov.builtin.singular or not (is_float(r.type) or is_composite(r.type)):
            return ""
        return f"treadle::adj_nonzero<{self.ct(scalar_of(r.type))}>(adj_v{r.id})"

    def own_conditions(self, f: ir.FuncIR, found: dict[int, ir.Local], var: str) -> dict[str, str]:
        """Per own-index array: the run-time test that its load gradients may use plain adds.

        ``found`` is ``own_index_arrays(f)``; the tests are written over the array expressions ``var.format(name)``.
        """
        arrays = [p for p in f.params if isinstance(p.type, ArrayT)]
        nd = max(1, getattr(f, "launch_ndim", 1))
        out = {}
        for p in {id(p): p for p in found.values()}.values():
            conds = [f"treadle::grad_own<{p.type.ndim}>({var.format(p.name)})"]
            if nd > 1:
                conds.append(f"bounds.ndim == {nd}")
            mine = f"treadle::grad_span<{p.type.ndim}>({var.format(p.name)})"
            conds += [f"treadle::grad_apart({mine}, treadle::grad_span<{q.type.ndim}>({var.format(q.name)}))"
                      for q in arrays if q is not p]
            out[p.name] = " && ".join(conds)
        return out

    def own_condition(self, f: ir.FuncIR, found: dict[int, ir.Local]) -> str | None:
        """The entry's test (over ``args``) for the ``_own`` body.

        It holds when every own-index array has no gradient buffer or passes its test.
        """
        conds = self.own_conditions(f, found, "args.p_{}")
        return " && ".join(f"(treadle::grad_absent(args.p_{n}) || ({c}))" for n, c in conds.items()) or None

    def own_flags(self, f: ir.FuncIR, found: dict[int, ir.Local]) -> list[str]:
        """Per-launch flags of the arrays whose load gradients may use plain adds (see ``own_index_arrays``).

        All are true in the ``_own`` instantiation, whose entry has tested them (``own_condition``).
        """
        self.own = {}
        lines = [f"    const bool _own_{n} = _own || ({c});" for n, c in self.own_conditions(f, found, "var_{}").items()]
        for vid, p in found.items():
            self.own[vid] = f"_own_{p.name}"
        return lines

    def _int_dummy(self, i: Any, dummies: list[str]) -> str:
        self.dummy += 1
        name = f"_d{self.dummy}"
        dummies.append(f"{self.ct(i.type)} {name}{{}};")
        return name

    def rev_construct(self, s: ir.Construct, lines: list[str], ind: str) -> None:
        r = s.result
        t = r.type
        if not s.args or is_struct(t):
            return
        if isinstance(t, TupleT):
            for i, a in enumerate(s.args):
                self.accum(lines, ind, self.adj(a), f"adj_v{r.id}.f{i}", a.type)
            return
        if scalars.is_scalar_type(t):
            a = s.args[0]
            tgt = self.adj(a)
            if tgt is not None and differentiable(a.type):
                lines.append(f"{ind}treadle::adj_cast<{self.ct(t)}>({self.op(a)}, {tgt}, adj_v{r.id});")
            return
        if len(s.args) == 1 and is_composite(s.args[0].type):  # conversion between precisions
            a = s.args[0]
            self.accum(lines, ind, self.adj(a), f"{self.ct(a.type)}(adj_v{r.id})", a.type)
            return
        if len(s.args) == 1:  # fill from one scalar
            a = s.args[0]
            n = t._length_
            terms = " + ".join(f"adj_v{r.id}.{'c' if t._wp_generic_type_str_ != 'mat_t' else 'data'}"
                               f"{self._flat_index(t, k)}" for k in range(n))
            self.accum(lines, ind, self.adj(a), f"{self.ct(scalar_of(t))}({terms})", a.type)
            return
        if getattr(t, "_wp_generic_type_str_", None) == "mat_t" and is_composite(s.args[0].type):  # from rows
            for i, a in enumerate(s.args):
                self.accum(lines, ind, self.adj(a), f"treadle::extract(adj_v{r.id}, {i})", a.type)
            return
        for k, a in enumerate(s.args):
            if getattr(t, "_wp_generic_type_str_", None) == "mat_t":
                cols = t._shape_[1]
                src = f"treadle::extract(adj_v{r.id}, {k // cols}, {k % cols})"
            else:
                src = f"treadle::extract(adj_v{r.id}, {k})"
            self.accum(lines, ind, self.adj(a), src, a.type)

    def _flat_index(self, t: Any, k: int) -> str:
        if t._wp_generic_type_str_ == "mat_t":
            cols = t._shape_[1]
            return f"[{k // cols}][{k % cols}]"
        return f"[{k}]"

    def rev_insert(self, s: ir.Insert, lines: list[str], ind: str) -> None:
        r = s.result
        if s.field is not None:
            lines.append(f"{ind}{{ {self.ct(r.type)} _t = adj_v{r.id};")
            self.accum(lines, ind + "  ", self.adj(s.value), f"_t.{cpp_field(s.field)}", s.value.type)
            lines.append(f"{ind}  _t.{cpp_field(s.field)} = {{}};")
            self.accum(lines, ind + "  ", self.adj(s.src), "_t", r.type)
            lines.append(f"{ind}}}")
            return
        dummies: list[str] = []
        src_adj = self.adj_or_dummy(s.src, dummies)
        val_adj = self.adj_or_dummy(s.value, dummies)
        didx = [self._int_dummy(i, dummies) for i in s.index]
        args = ([self.op(s.src)] + [self.op(i) for i in s.index] + [self.op(s.value), src_adj] + didx
                + [val_adj, f"adj_v{r.id}"])
        self.emit_adj(lines, ind, f"treadle::adj_insert({', '.join(args)})", dummies)

    def rev_loop(self, s: Any, lines: list[str], ind: str) -> None:
        n = self.loop_ids[id(s)]
        mods = self.saved[id(s)]
        body: list[str] = []
        self.reverse(s.body, body, ind + "    ")
        if not body:
            return  # nothing differentiable happens in the loop
        lines.append(f"{ind}for (treadle::int64 _k{n} = _cnt{n} - 1; _k{n} >= 0; --_k{n}) {{")
        lines.append(f"{ind}    size_t _p{n} = _base{n} + size_t(_k{n}) * _esz{n};")
        for m in mods:
            lines.append(f"{ind}    _p{n} = treadle::ckpt_read(_p{n}, var_{m.name});")
        self.forward(s.body, lines, ind + "    ", ckpt=True)
        lines += body
        lines.append(f"{ind}}}")
        lines.append(f"{ind}treadle::ckpt_pop_to(_base{n});")

    # Whole functions --------------------------------------------------------------------------------------------
    def adjoint_function(self, f: ir.FuncIR, fwd_cname: str) -> str:
        """``adj_<fn>(params..., adj_params&..., adj_ret)``: forward sweep, then reverse sweep."""
        native = getattr(f, "native", None)
        if native is not None:
            return self.native_function(f, f"adj_{fwd_cname}", native[1] or "", adjoint=True)
        self.collect_types(f)
        self.local_arrays = ir.local_array_values(f)
        params = [f"{self.ct(p.type)} var_{p.name}" for p in f.params]
        adj_params = [f"{self.ct(p.type)}& adj_var_{p.name}" for p in f.params]
        ret = [f"const {self.ct(f.return_type)}& adj_ret"] if f.return_type is not None else []
        lines = [f"static TREADLE_FUNC void adj_{fwd_cname}({', '.join(params + adj_params + ret)})", "{"]
        live = adjoint_live(f)
        self.partner = self.sincos_calls(f, live)
        self.saved = checkpoint_sets(f)
        lines += self.declarations(f, with_locals=True)
        self.enter(f)
        self.forward(f.body, lines, "    ", ckpt=True)
        retval = f.retval
        if retval is not None and f.return_type is not None:
            self.accum(lines, "    ", f"adj_var_{retval.name}", "adj_ret", f.return_type)
        self.live = live
        self.active_of = f
        self.reverse(f.body, lines, "    ")
        self.live = None
        self.active, self.active_of = None, None
        self.partner = {}
        lines.append("}")
        return "\n".join(lines)

    def custom_adjoint_function(self, g: ir.FuncIR, n_primal: int, fwd_cname: str, forward_calls: bool = False) -> str:
        """A ``@func_grad`` body as ``adj_<fn>``: primal params by value, adjoints by reference, then adj_ret.

        ``forward_calls``: the block defines the forward variants of the functions the body calls (see
        :class:`_GradBodyEmitter`).
        """
        em = _GradBodyEmitter(line_directives=self.line_directives)
        em.forward_calls = forward_calls
        em.tuple_names, em.types_done, em.type_defs = self.tuple_names, self.types_done, self.type_defs
        em.collect_types(g)
        primal = [f"{self.ct(p.type)} var_{p.name}" for p in g.params[:n_primal]]
        adjs = [f"{self.ct(a.type)}& var_{a.name}" for a in g.body.adjoint_locals]
        rest = [f"{self.ct(p.type)} var_{p.name}" for p in g.params[n_primal:]]
        split = len(rest) > 1  # a function returning a tuple: one adjoint parameter per returned value
        ret_tuple = TupleT(tuple(p.type for p in g.params[n_primal:]))
        name = f"adj_{fwd_cname}_split" if split else f"adj_{fwd_cname}"
        lines = [f"static TREADLE_FUNC void {name}({', '.join(primal + adjs + rest)})", "{"]
        lines += em.local_decls(g)
        em.enter(g)
        em.block(g.body, lines, "    ")
        lines.append("}")
        if split:
            n_adj = len(adjs)
            p_names = [f"var_{p.name}" for p in g.params[:n_primal]]
            a_names = [f"var_{a.name}" for a in g.body.adjoint_locals]
            unpack = [f"adj_ret.f{k}" for k in range(len(rest))]
            lines.append(f"static TREADLE_FUNC void adj_{fwd_cname}({', '.join(primal + adjs[:n_adj])}, "
                         f"const {self.ct(ret_tuple)}& adj_ret)")
            lines.append(f"{{ {name}({', '.join(p_names + a_names + unpack)}); }}")
        return "\n".join(lines)

    def adjoint_kernel(self, f: ir.FuncIR, symbol: str) -> str:
        """The backward per-thread body and its ``extern "C"`` entry points (see ``emit_entry``)."""
        self.collect_types(f)
        self.local_arrays = ir.local_array_values(f)
        lines = emit_entry.body_head("kernel_backward_body")
        for p in f.params:
            t = self.ct(p.type)
            lines.append(f"    {t} var_{p.name} = args.p_{p.name}; {t} adj_var_{p.name}{{}};")
            dense = emit_entry.dense_line(p.name, p.type)
            if dense is not None:
                lines.append(dense)
        live = adjoint_live(f)
        self.partner = self.sincos_calls(f, live)
        self.saved = checkpoint_sets(f)
        lines += self.declarations(f, with_locals=True)
        lines += emit_entry.tid_lines(f)
        own_found = own_index_arrays(f)
        lines += self.own_flags(f, own_found)
        self.enter(f)
        self.forward(f.body, lines, "    ", ckpt=True)
        self.live = live
        self.active_of = f
        self.reverse(f.body, lines, "    ")
        self.live = None
        self.active, self.active_of = None, None
        self.partner = {}
        self.own = {}
        lines.append("}")
        lines.append("")
        lines.append(emit_entry.entries(symbol, "backward", "kernel_backward_body", f, own=self.own_condition(f, own_found)))
        return "\n".join(lines)

    def _depth(self, t: Any) -> int:
        if is_struct(t):
            return 1 + max([self._depth(normalize_annotation(ft)) for ft in t.vars.values()] or [0])
        if isinstance(t, TupleT):
            return 1 + max([self._depth(x) for x in t.types] or [0])
        return 0

    def struct_accumulators(self) -> list[str]:
        """``adj_accum`` overloads for every struct type used (field by field, differentiable fields only)."""
        out = []
        ordered = [t for t in self.types_done if is_struct(t) or isinstance(t, TupleT)]
        # nested structs first, so each overload can call the ones of its fields
        ordered.sort(key=lambda t: self._depth(t))
        for t in ordered:
            if is_struct(t):
                body = []
                for name, ft in t.vars.items():
                    if differentiable(normalize_annotation(ft)):
                        body.append(f"    adj_accum(a.{cpp_field(name)}, b.{cpp_field(name)});")
                out.append(f"static TREADLE_FUNC void adj_accum({t.native_name}& a, const {t.native_name}& b)\n"
                           "{\n" + "\n".join(body) + ("\n" if body else "") + "    (void)a; (void)b;\n}")
                atomic = [b.replace("adj_accum(a.", "adj_atomic_accum(&g->").replace(", b.", ", v.")
                          for b in body]
                out.append(f"static TREADLE_FUNC void adj_atomic_accum({t.native_name}* g, "
                           f"const {t.native_name}& v)\n"
                           "{\n" + "\n".join(atomic) + ("\n" if atomic else "") + "    (void)g; (void)v;\n}")
            elif isinstance(t, TupleT):
                name = self.tuple_names[t]
                body = [f"    adj_accum(a.f{i}, b.f{i});" for i, et in enumerate(t.types) if differentiable(et)]
                out.append(f"static TREADLE_FUNC void adj_accum({name}& a, const {name}& b)\n"
                           "{\n" + "\n".join(body) + ("\n" if body else "") + "    (void)a; (void)b;\n}")
        return out
