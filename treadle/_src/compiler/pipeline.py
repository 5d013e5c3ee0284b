"""The compiler's named stages: lower (``frontend.py``) -> emit (C++ blocks, this module) -> fingerprint.

A kernel instance (``instance.py``) runs them lazily: :func:`emit_forward` and :func:`emit_backward` turn its typed IR
and its functions' IR into one C++ block each, wrapped in a namespace named by the block's content hash, and
:func:`dump` writes each stage's output when ``TREADLE_DUMP=ir,cpp,adj.cpp`` (``config.dump``) asks for it, into
``config.dump_dir``. Building the blocks into binaries, caching and loading them is the backends' job
(``backends/cpu/build.py``, ``backends/cuda/build.py``).

:func:`kernel_block` and :func:`adjoint_block` return a :class:`KernelBlock`: the block with the data a target that
writes its own entry points needs (``emit_cuda.py``): the ``Args`` members and their types, the per-thread bodies
(``emit_entry.EntryPoint``) and the number of checkpoint sites (loops whose iterations the backward pass saves).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from ... import config
from . import emit_entry, ir
from .emit_cpp import Emitter

#: The includes every generated CPU translation unit starts with (the native headers).
PRELUDE = '#include "treadle.h"\n#include "kernel_support.h"\n#include "launch.h"\n'


def dump(stage: str, name: str, text: str) -> None:
    """Write one pipeline stage's output when ``config.dump`` asks for it."""
    if stage.split(".")[-1] in config.dump or stage in config.dump:
        d = Path(config.dump_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.{stage}").write_text(text)


@dataclasses.dataclass
class KernelBlock:
    """One pass of a kernel as C++ (a namespace named by its content hash) and what targets read about it.

    Attributes:
        block: the namespace block (types, functions, ``Args``, per-thread bodies, fenced CPU entries).
        symbol: its symbol (``tk_...`` forward, ``tb_...`` backward); the namespace is ``<symbol>_ns``.
        locs: checked-mode markers -> source locations (forward passes).
        args: ``(member, IR type)`` of the ``Args`` struct, in order (the trailing padding byte's type is ``None``).
        entries: the per-thread bodies with CPU entries (:class:`emit_entry.EntryPoint`), in order.
        ckpt_sites: loops whose iterations the pass checkpoints (backward passes; 0: no checkpoint stack).
    """

    block: str
    symbol: str
    locs: list[Any]
    args: list[tuple[str, Any]]
    entries: list[emit_entry.EntryPoint]
    ckpt_sites: int = 0

    def entry(self, kind: str) -> emit_entry.EntryPoint:
        """The entry point of ``kind`` (``forward`` / ``backward``)."""
        for e in self.entries:
            if e.kind == kind:
                return e
        raise LookupError(f"no {kind} entry in block {self.symbol}")


def _args_members(kernel_ir: ir.FuncIR) -> list[tuple[str, Any]]:
    """The ``Args`` members the emitter declares: one per parameter, then the padding byte (type ``None``)."""
    return [*((f"p_{p.name}", p.type) for p in kernel_ir.params), ("_treadle_pad", None)]


def _wrap(inner: str, prefix: str) -> tuple[str, str]:
    digest = hashlib.sha256(inner.encode()).hexdigest()
    symbol = f"{prefix}_{digest[:24]}"
    return f"namespace {symbol}_ns {{\n\n{inner.replace('@SYMBOL@', symbol)}\n\n}} // namespace {symbol}_ns\n", symbol


def kernel_block(kernel_ir: ir.FuncIR, funcs: list[Any], checked: bool = False,
                 verify_fp: bool = False) -> KernelBlock:
    """The forward pass of one kernel (with its functions, callees first) as a :class:`KernelBlock`."""
    em = Emitter(line_directives=config.line_directives, checked=checked, verify_fp=verify_fp)
    grad_text = _grad_support(em, funcs, kernel_ir)
    func_text = grad_text + [em.function(fi.ir, fi.cname) for fi in funcs]
    with emit_entry.collect() as found:
        args_struct, body = em.kernel(kernel_ir, "@SYMBOL@")
    block, symbol = _wrap("\n\n".join([*em.type_defs, *func_text, args_struct, body]), "tk")
    return KernelBlock(block, symbol, em.locs, _args_members(kernel_ir), found)


def emit_kernel_block(kernel_ir: ir.FuncIR, funcs: list[Any], checked: bool = False,
                      verify_fp: bool = False) -> tuple[str, str, list[Any]]:
    """C++ for one kernel (with its functions), wrapped in a namespace named by its content hash.

    Returns ``(block, symbol, locations)``; ``locations`` maps checked-mode markers to source locations.
    """
    kb = kernel_block(kernel_ir, funcs, checked=checked, verify_fp=verify_fp)
    return kb.block, kb.symbol, kb.locs


def _grad_support(em: Emitter, funcs: list[Any], kernel_ir: ir.FuncIR) -> list[str]:
    """Replay and adjoint functions that forward code calls through ``wp.grad(f)``."""
    bodies = [kernel_ir.body] + [g.ir.body for g in funcs]
    targets = [fi for fi in funcs if any(isinstance(s, ir.CallGrad) and s.target is fi
                                         for b in bodies for s in ir.walk(b))]
    if not targets:
        return []
    from .emit_adjoint import AdjointEmitter, ReplayEmitter, replay_name
    from .structurize import structurize

    closure = ordered_deps(targets)
    rem = ReplayEmitter(line_directives=config.line_directives)
    rem.tuple_names, rem.types_done, rem.type_defs = em.tuple_names, em.types_done, em.type_defs
    replays = [rem.function(fi.ir, replay_name(fi)) for fi in closure]
    adj = AdjointEmitter(em)
    adjs = [adj.custom_adjoint_function(fi.grad_ir, len(fi.types), fi.cname)
            if getattr(fi, "grad_ir", None) is not None else adj.adjoint_function(structurize(fi.ir), fi.cname)
            for fi in closure]
    return ["using treadle::adj_accum;\nusing treadle::adj_atomic_accum;", *adj.struct_accumulators(), *replays,
            *adjs]


def adjoint_block(kernel_ir: ir.FuncIR, funcs: list[Any]) -> KernelBlock:
    """The backward pass of one kernel: replays and adjoint functions plus the backward body, as a :class:`KernelBlock`."""
    from .emit_adjoint import ReplayEmitter, replay_name
    from .structurize import structurize

    em = Emitter(line_directives=config.line_directives)
    rem = ReplayEmitter(line_directives=config.line_directives)
    rem.tuple_names, rem.types_done, rem.type_defs = em.tuple_names, em.types_done, em.type_defs
    # Replays recompute values without side effects; a @func_replay body replaces a function's replay entirely.
    fwd_funcs = [em.function(fi.replay_ir, replay_name(fi)) if getattr(fi, "replay_ir", None) is not None
                 else rem.function(fi.ir, replay_name(fi)) for fi in funcs]
    # @func_grad bodies run in the backward pass: the helpers they call run for real (their side effects happen)
    grad_callees = ordered_deps([s.func for fi in funcs if getattr(fi, "grad_ir", None) is not None
                                 for s in ir.walk(fi.grad_ir.body) if isinstance(s, ir.CallFunc)])
    if any(isinstance(s, ir.CallGrad) for fi in grad_callees for s in ir.walk(fi.ir.body)):
        grad_callees = []  # a helper using wp.grad() itself: called through its replay (defined above)
    callee_funcs = [em.function(fi.ir, fi.cname) for fi in grad_callees]
    args_struct, _ = em.kernel(kernel_ir, "@SYMBOL@")
    adj = _site_counting_emitter()(em)
    adj_funcs = [adj.custom_adjoint_function(fi.grad_ir, len(fi.types), fi.cname, forward_calls=bool(grad_callees))
                 if getattr(fi, "grad_ir", None) is not None else adj.adjoint_function(structurize(fi.ir), fi.cname)
                 for fi in funcs]
    with emit_entry.collect() as found:
        backward = adj.adjoint_kernel(structurize(kernel_ir), "@SYMBOL@")
    inner = "\n\n".join(["using treadle::adj_accum;\nusing treadle::adj_atomic_accum;", *em.type_defs, *adj.struct_accumulators(), *fwd_funcs,
                          *callee_funcs, *adj_funcs, args_struct, backward])
    block, symbol = _wrap(inner, "tb")
    return KernelBlock(block, symbol, [], _args_members(kernel_ir), found, adj.ckpt_sites)


def emit_adjoint_block(kernel_ir: ir.FuncIR, funcs: list[Any]) -> tuple[str, str]:
    """C++ for the backward pass of one kernel: ``(block, symbol)`` (see :func:`adjoint_block`)."""
    kb = adjoint_block(kernel_ir, funcs)
    return kb.block, kb.symbol


_SiteCounting: Any = None


def _site_counting_emitter() -> Any:
    """The adjoint emitter, counting the loops whose iterations its forward sweeps checkpoint."""
    global _SiteCounting
    if _SiteCounting is None:
        from .emit_adjoint import AdjointEmitter

        class SiteCounting(AdjointEmitter):  # type: ignore[misc]
            ckpt_sites = 0

            def loop_prologue(self, s: Any, lines: list[str], ind: str) -> None:
                if self.ckpt_now:
                    self.ckpt_sites += 1
                super().loop_prologue(s, lines, ind)

        _SiteCounting = SiteCounting
    return _SiteCounting


def ordered_deps(roots: list[Any]) -> list[Any]:
    """All function instances reachable from ``roots``, callees before callers."""
    out: list[Any] = []
    seen: set[int] = set()

    def visit(fi: Any) -> None:
        if id(fi) in seen:
            return
        seen.add(id(fi))
        for d in fi.deps:
            visit(d)
        out.append(fi)

    for r in roots:
        visit(r)
    return _distinct_names(out)


def _content_key(fi: Any) -> str | None:
    """What a function instance compiles to: its IR text and the C++ names of its callees (``None``: unknown)."""
    body = getattr(fi, "_ir", None)
    if body is None:
        return None
    grad = getattr(fi, "grad_ir", None)
    parts = [ir.format_func(body), "|".join(d.cname for d in fi.deps), ir.format_func(grad) if grad is not None else ""]
    return "\n".join(parts)


def _distinct_names(funcs: list[Any]) -> list[Any]:
    """``funcs`` (callees first) with one entry per C++ name.

    Copies of one function made by a factory share source and signature, hence the name. A copy that compiles to
    the same code as one already listed is dropped (its callers call the same C++ function); one whose code differs
    (other captured values or callees) is renamed after its content, so that each keeps its own definition.
    """
    listed: dict[str, str | None] = {}
    out: list[Any] = []
    for fi in funcs:
        key = _content_key(fi)
        while fi.cname in listed:
            if key is not None and listed[fi.cname] == key:
                break
            if key is None:  # nothing to compare: keep the old behaviour of listing it
                listed.pop(fi.cname)
                continue
            fi.cname = f"{fi.cname}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        else:
            listed[fi.cname] = key
            out.append(fi)
    return out


def has_runtime_loops(kernel_ir: ir.FuncIR, deps: list[Any]) -> bool:
    """Whether the kernel or a function it calls has a ``for`` loop over a run-time range."""
    bodies = [kernel_ir.body] + [fi.ir.body for fi in ordered_deps(deps) if getattr(fi, "ir", None) is not None]
    return any(isinstance(s, ir.ForRange) for b in bodies for s in ir.walk(b))


def has_heavy_threads(kernel_ir: ir.FuncIR, deps: list[Any]) -> bool:
    """Whether a thread of the kernel may do much work.

    It may where the kernel or a function it calls loops (a ``for`` over a run-time range, a ``while``) or has tile
    values (a tiled launch runs one block per thread on the CPU).
    """
    from ..types.typesys import TileStackT, TileT

    def tiled(x: Any) -> bool:
        return isinstance(getattr(x, "type", None), (TileT, TileStackT))

    funcs = [kernel_ir] + [fi.ir for fi in ordered_deps(deps) if getattr(fi, "ir", None) is not None]
    for f in funcs:
        if any(tiled(v) for v in (*f.params, *f.locals)):
            return True
        for s in ir.walk(f.body):
            if isinstance(s, (ir.ForRange, ir.While)):
                return True
            if isinstance(s, ir.Call) and (tiled(s.result) or any(tiled(a) for a in s.args)):
                return True
    return False


def emit_forward(kernel_ir: ir.FuncIR, deps: list[Any], name: str, checked: bool = False,
                 verify_fp: bool = False) -> tuple[str, str, list[Any]]:
    """The emit stage of a kernel's forward pass: ``(block, symbol, locations)`` (dumps ``ir`` and ``cpp``)."""
    if config.dump:  # formatting the IR is not free: only when asked for
        dump("ir", name, "\n\n".join([ir.format_func(fi.ir) for fi in ordered_deps(deps)] + [ir.format_func(kernel_ir)]))
    block, symbol, locs = emit_kernel_block(kernel_ir, ordered_deps(deps), checked=checked, verify_fp=verify_fp)
    dump("cpp", name, PRELUDE + block)
    return block, symbol, locs


def emit_backward(kernel_ir: ir.FuncIR, deps: list[Any], name: str) -> tuple[str, str]:
    """The emit stage of a kernel's backward pass: ``(block, symbol)`` (dumps ``adj.cpp``)."""
    block, symbol = emit_adjoint_block(kernel_ir, ordered_deps(deps))
    dump("adj.cpp", name, PRELUDE + block)
    return block, symbol


__all__ = ["PRELUDE", "KernelBlock", "adjoint_block", "dump", "emit_adjoint_block", "emit_backward", "emit_forward", "emit_kernel_block",
           "has_heavy_threads", "has_runtime_loops", "kernel_block", "ordered_deps"]
