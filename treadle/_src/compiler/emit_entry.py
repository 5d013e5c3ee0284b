"""CPU entry points of a kernel: the per-thread body's signature and prologue, the range loop, the exported entries.

The forward emitter (``Emitter.kernel``) and the adjoint emitter (``AdjointEmitter.adjoint_kernel``) write the
statements of a per-thread body; this module writes everything around it, the same way for both:

- the body is ``template <bool _dense> static void <body>(bounds, _flat, _t0.._t3, args)``; its prologue copies the
  arguments into locals and, in the ``_dense`` instantiation, gives array arguments dense strides
  (``treadle::make_dense``) whose innermost stride the compiler sees as a constant;
- ``<sym>_cpu_<kind>_range(bounds, args, begin, end)`` copies the arguments by value and runs threads [begin, end)
  with the body inlined in a counted loop (``treadle::launch_loop``, ``native/launch.h``), choosing the dense
  instantiation when every array argument is dense;
- ``<sym>_cpu_<kind>(bounds, args, nthreads)`` runs a whole launch (on the runtime's thread pool when it is loaded).

The Python launcher calls the range entry through the runtime library (``runtime/threadpool.py``); the whole-launch
entry serves other callers (the JAX FFI dispatcher). The CPU entries are written inside a host-only preprocessor fence
(they use host launch loops and thread pools), so the same block also compiles as CUDA.

What other targets need to write their own entries is handed out as data, never as text to search: the body's
parameters (:data:`BODY_PARAMS_DECL`) and template parameters (:data:`BODY_TEMPLATE`), and one :class:`EntryPoint`
per body, recorded while :func:`collect` is active (``pipeline.kernel_block`` returns them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

from ..types.typesys import ArrayT
from . import ir

#: The per-thread body's parameters, ``(C++ type, name)`` in order.
BODY_PARAMS_DECL: tuple[tuple[str, str], ...] = (
    ("const treadle::launch_bounds_t&", "bounds"), ("treadle::int64", "_flat"), ("treadle::int32", "_t0"),
    ("treadle::int32", "_t1"), ("treadle::int32", "_t2"), ("treadle::int32", "_t3"), ("const Args&", "args"))
BODY_PARAMS = ", ".join(f"{t} {n}" for t, n in BODY_PARAMS_DECL)

#: The per-thread body's template parameters: only ``_dense`` has no default (a caller names it).
BODY_TEMPLATE: tuple[str, ...] = ("bool _dense", "bool _nonempty = false", "bool _own = false")

#: The preprocessor fence around the CPU entries (host-only code).
HOST_FENCE_BEGIN = "#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)  // CPU entry points"
HOST_FENCE_END = "#endif  // CPU entry points"


@dataclasses.dataclass(frozen=True)
class EntryPoint:
    """One per-thread body of an emitted block, as a target writing its own entry point needs to know it.

    Attributes:
        kind: ``"forward"`` or ``"backward"``.
        body: the body's C++ name (a template over :data:`BODY_TEMPLATE`, parameters :data:`BODY_PARAMS_DECL`).
        tid_dims: whether the body reads per-dimension thread indices (``_t0`` .. ``_t3``), not only ``_flat``.
        launch_ndim: the launch dimensionality the kernel's ``wp.tid()`` reads.
    """

    kind: str
    body: str
    tid_dims: bool
    launch_ndim: int


_collect = threading.local()


@contextlib.contextmanager
def collect() -> Iterator[list[EntryPoint]]:
    """Record the :class:`EntryPoint` of every body whose entries are written inside (this thread)."""
    outer = getattr(_collect, "found", None)
    found: list[EntryPoint] = []
    _collect.found = found
    try:
        yield found
    finally:
        _collect.found = outer


def uses_tid_dims(f: ir.FuncIR) -> bool:
    """Whether the kernel reads per-dimension thread indices (``i, j = wp.tid()``)."""
    return any(isinstance(s, ir.Tid) and s.dim >= 0 for s in ir.walk(f.body))


def loop_ndim(f: ir.FuncIR) -> int:
    """The launch dimensionality the fast loop is specialised for (1 when only the flat index is used)."""
    return max(1, min(4, int(getattr(f, "launch_ndim", 1)))) if uses_tid_dims(f) else 1


def body_head(name: str) -> list[str]:
    """The first lines of a per-thread body (its template header, signature and opening brace).

    ``_own`` (used by backward bodies only): the entry has checked that every own-index array's gradient buffer is
    injective and apart from the others (``emit_adjoint.own_index_arrays``), so their gradients take plain adds.
    """
    return [f"template <{', '.join(BODY_TEMPLATE)}>", f"static TREADLE_FUNC void {name}({BODY_PARAMS})", "{"]


def dense_line(name: str, t: Any) -> str | None:
    """After ``var_<name>`` is copied from the arguments: its dense strides in the ``_dense`` instantiation."""
    if isinstance(t, ArrayT):
        return f"    if constexpr (_dense) treadle::make_dense<{t.ndim}>(var_{name});"
    return None


def tid_lines(f: ir.FuncIR) -> list[str]:
    """The thread-index locals the body's ``Tid`` statements read."""
    lines = []
    if uses_tid_dims(f):
        lines.append("    const treadle::int32 _tid[4] = {_t0, _t1, _t2, _t3};")
    lines.append("    (void)bounds; (void)_flat; (void)_t0; (void)_t1; (void)_t2; (void)_t3;")
    return lines


#: Bodies of at most this many IR statements keep an inlined loop for strided (non-dense) arguments; larger ones
#: call the out-of-line general body from the fast loop (``entries``).
INLINE_STRIDED_STATEMENTS = 16


def entries(symbol: str, kind: str, body: str, f: ir.FuncIR, checked: bool = False,
            privatized: list[Any] | None = None, nonempty: str | None = None, streamed: str | None = None,
            own: str | None = None) -> str:
    """The range entry and the whole-launch entry of one body (``kind``: ``forward`` or ``backward``).

    ``privatized`` (from ``reductions.privatize``) names the arrays that ``<body>_priv`` reduces into with plain
    adds: that body runs with them pointing at chunk-local buffers, added into the real arrays at the end.
    ``nonempty`` (from ``uniform.uniform_ranges``) tests, over ``args``, that every launch-constant loop range of the
    body runs at least once: when it holds for dense arguments, the ``_nonempty`` instantiation runs in
    ``treadle::launch_loop_lanes``, whose thread loop the compiler may vectorize (lanes = threads).
    ``streamed`` (from ``streaming.streamed_output``) names a 1-d output whose stores a large dense 1-d launch writes
    through ``treadle::launch_loop_streamed`` (non-temporal stores).
    ``own`` (backward bodies, from ``AdjointEmitter.own_condition``) tests over ``args`` that every own-index
    gradient may take plain adds: when it holds for dense arguments, the ``_own`` instantiation runs, whose body has
    no per-element choice between a plain and an atomic add (and so vectorizes like the forward).
    """
    found = getattr(_collect, "found", None)
    if found is not None:
        found.append(EntryPoint(kind, body, uses_tid_dims(f), max(1, int(getattr(f, "launch_ndim", 1)))))
    arrays = [(p.name, p.type.ndim) for p in f.params if isinstance(p.type, ArrayT)]
    nd = loop_ndim(f)
    rng = f"{symbol}_cpu_{kind}_range"

    def loop(variant: str, fn: str = body, runner: str = "launch_loop") -> str:
        return (f"treadle::{runner}<{nd}>(bounds, begin, end, [&](treadle::int64 _f, treadle::int32 _a, "
                f"treadle::int32 _b, treadle::int32 _c, treadle::int32 _d) {{ {fn}<{variant}>(bounds, _f, _a, _b, "
                "_c, _d, args); });")

    # Strided (non-dense) arguments run the out-of-line general body from the fast loop, except in tiny bodies: one
    # more inlined copy of a body per kernel cost ~25% of a differentiated kernel's compile time, for a path on which
    # only the tiniest bodies, memory-bound, lose to the call (a strided 4M-element a*x+y: 1.7 -> 3.6 ms; a 19-
    # statement vector body: within 2%).
    tiny = sum(1 for _ in ir.walk(f.body)) <= INLINE_STRIDED_STATEMENTS
    if tiny:
        general = loop("false")
    else:
        general = (f"treadle::launch_loop<{nd}>(bounds, begin, end, [=](treadle::int64 _f, treadle::int32 _a, "
                   f"treadle::int32 _b, treadle::int32 _c, treadle::int32 _d) {{ {body}_any(static_cast<const "
                   "treadle::launch_bounds_t*>(b), static_cast<const Args*>(a), _f, _a, _b, _c, _d); });")

    # The general path gets the caller's pointers, never the address of the local copies: a local whose address
    # escapes into a call defeats the alias analysis that lets the fast loops vectorize.
    no_alias = ""
    if privatized:
        ndims = dict(arrays)
        red = [t.name for t in privatized]
        others = [name for name, _ in arrays if name not in red]
        no_alias = " && ".join(f"treadle::disjoint<{ndims[t]}, {ndims[o]}>(_in.p_{t}, _in.p_{o})" for t in red
                               for o in others) or "true"
    lines = [
        HOST_FENCE_BEGIN,
        f"static TREADLE_NOINLINE void {body}_any(const treadle::launch_bounds_t* b, const Args* a, treadle::int64 _f, "
        "treadle::int32 _a, treadle::int32 _b, treadle::int32 _c, treadle::int32 _d)",
        "{",
        f"    {body}<false>(*b, _f, _a, _b, _c, _d, *a);",
        "}",
        "",
        f'extern "C" TREADLE_EXPORT void {rng}(const void* b, const void* a, long long begin, long long end)',
        "{",
        "    treadle::warm_tls();",
        "    const treadle::launch_bounds_t bounds = *static_cast<const treadle::launch_bounds_t*>(b);",
        f"    if (!treadle::launch_fast<{nd}>(bounds, end)) {{",
        "        treadle::launch_loop_any(bounds, begin, end, [=](treadle::int64 _f, treadle::int32 _a, "
        "treadle::int32 _b, treadle::int32 _c, treadle::int32 _d) {",
        f"            {body}_any(static_cast<const treadle::launch_bounds_t*>(b), static_cast<const Args*>(a), _f, _a, "
        "_b, _c, _d); });",
        "        return;",
        "    }",
    ]
    if privatized:
        from .emit_cpp import cpp_type

        conds = [no_alias] + [f"_in.p_{t.name}.shape[0] >= {t.count}" for t in privatized]
        conds += [f"treadle::is_dense<{nd_a}>(_in.p_{name})" for name, nd_a in arrays if name not in red]
        # 1-d launches: four copies of the arguments, each reducing into its own buffer, take threads in turn (four
        # independent sums, the order of a parallel reduction); n-d launches: one buffer.
        ways = 4 if nd == 1 else 1
        lines += ["    const Args& _in = *static_cast<const Args*>(a);", f"    if ({' && '.join(conds)}) {{"]
        lines += [f"        Args args{w} = *static_cast<const Args*>(a);" for w in range(ways)]
        for t in privatized:
            ct = cpp_type(t.dtype)
            lines.append(f"        {ct} _red_{t.name}[{ways}][{t.count}] = {{}};")
            lines += [f"        treadle::privatize(args{w}.p_{t.name}, _red_{t.name}[{w}], {t.count});"
                      for w in range(ways)]
        if ways == 4:
            fns = ", ".join(f"[&](treadle::int32 _i) {{ {body}_priv<true>(bounds, _i, _i, 0, 0, 0, args{w}); }}"
                            for w in range(4))
            lines.append(f"        treadle::launch_loop4(begin, end, {fns});")
        else:
            lines += ["        const Args& args = args0;", f"        {loop('true', body + '_priv')}"]
        lines += [f"        treadle::reduce_into(_in.p_{t.name}, _red_{t.name}[{w}], {t.count});" for w in range(ways)
                  for t in privatized]
        lines += ["        return;", "    }"]
    lines.append("    const Args args = *static_cast<const Args*>(a);")
    if arrays and not checked:
        dense = " && ".join(f"treadle::is_dense<{nd_a}>(args.p_{name})" for name, nd_a in arrays)
        lines.append(f"    if ({dense}) {{")
        if nonempty:
            lines += [f"        if ({nonempty}) {{", f"            {loop('true, true', runner='launch_loop_lanes')}",
                      "            return;", "        }"]
        if streamed and nd == 1:  # the dense loop, with stores streamed when the launch is large enough
            lines += ["        Args sargs = args;",
                      f"        treadle::launch_loop_streamed(begin, end, sargs.p_{streamed}, "
                      f"treadle::stream_fits(args.p_{streamed}, begin, end), [&](treadle::int32 _i) {{ "
                      f"{body}<true>(bounds, _i, _i, 0, 0, 0, sargs); }});"]
        else:
            if own:
                # gradients that may overlap (an array passed twice): rare, so the out-of-line general body
                lines += [f"        if ({own}) {{", f"            {loop('true, false, true')}", "            return;",
                          "        }", f"        {loop('true') if tiny else general}"]
            else:
                lines.append(f"        {loop('true')}")
        lines += ["        return;", "    }"]
    lines += [
        f"    {general}",
        "}",
        "",
        f'extern "C" TREADLE_EXPORT void {symbol}_cpu_{kind}(const treadle::launch_bounds_t* b, const Args* a, '
        "treadle::int32 nthreads)",
        "{",
        f"    treadle::parallel_launch(&{rng}, b, a, nthreads);",
        "}",
        HOST_FENCE_END,
    ]
    return "\n".join(lines)
