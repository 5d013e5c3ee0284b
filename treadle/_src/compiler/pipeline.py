"""The compilation pipeline as named stages: lower -> emit -> hash -> compile (batched, cached) -> load.

``TREADLE_DUMP=ir,cpp`` (``config.dump``) writes the output of those stages to ``config.dump_dir``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ... import config
from ..core.errors import CompileError
from ..runtime.cache import get_cache
from ..runtime.native import CompileOptions, get_cpu_backend
from . import ir
from .emit_cpp import Emitter

PRELUDE = '#include "treadle.h"\n#include "kernel_support.h"\n#include "launch.h"\n'

_header_hash: str | None = None


def header_hash() -> str:
    """SHA-256 over the native headers (part of every kernel key).

    Reading and hashing every header costs milliseconds at each process start, so the digest is remembered in the
    kernel cache under a signature of the headers' names, sizes and modification times (any change re-hashes).
    """
    global _header_hash
    if _header_hash is None:
        from ..runtime.native import NATIVE_DIR

        entries = sorted((e.name, e.path, e.stat()) for e in os.scandir(NATIVE_DIR) if e.name.endswith(".h"))
        sig = hashlib.sha256("".join(f"{n}:{st.st_size}:{st.st_mtime_ns};" for n, _, st in entries).encode())
        memo = get_cache().root / "headers" / sig.hexdigest()[:32]
        try:
            _header_hash = memo.read_text().strip() or None
        except OSError:
            _header_hash = None
        if _header_hash is None or len(_header_hash) != 64:
            h = hashlib.sha256()
            for name, path, _ in entries:
                h.update(name.encode())
                with open(path, "rb") as f:
                    h.update(f.read())
            _header_hash = h.hexdigest()
            try:
                memo.parent.mkdir(parents=True, exist_ok=True)
                tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
                tmp.write_text(_header_hash)
                os.replace(tmp, memo)
            except OSError:
                pass
    return _header_hash


def prime_header_hash(digest: str | None) -> None:
    """Take the header digest a matching environment stamp remembered (``runtime/warm_env.py``); ``None`` forgets."""
    global _header_hash
    _header_hash = digest


def dump(stage: str, name: str, text: str) -> None:
    """Write one pipeline stage's output when ``config.dump`` asks for it."""
    if stage.split(".")[-1] in config.dump or stage in config.dump:
        d = Path(config.dump_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.{stage}").write_text(text)


def emit_kernel_block(kernel_ir: ir.FuncIR, funcs: list[Any], checked: bool = False,
                      verify_fp: bool = False) -> tuple[str, str, list[Any]]:
    """C++ for one kernel (with its functions), wrapped in a namespace named by its content hash.

    Returns ``(block, symbol, locations)``; ``locations`` maps checked-mode markers to source locations.
    """
    em = Emitter(line_directives=config.line_directives, checked=checked, verify_fp=verify_fp)
    grad_text = _grad_support(em, funcs, kernel_ir)
    func_text = grad_text + [em.function(fi.ir, fi.cname) for fi in funcs]
    args_struct, body = em.kernel(kernel_ir, "@SYMBOL@")
    inner = "\n\n".join([*em.type_defs, *func_text, args_struct, body])
    digest = hashlib.sha256(inner.encode()).hexdigest()
    symbol = f"tk_{digest[:24]}"
    block = f"namespace {symbol}_ns {{\n\n{inner.replace('@SYMBOL@', symbol)}\n\n}} // namespace {symbol}_ns\n"
    return block, symbol, em.locs


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


def emit_adjoint_block(kernel_ir: ir.FuncIR, funcs: list[Any]) -> tuple[str, str]:
    """C++ for the backward pass of one kernel: forward and adjoint functions plus the backward entry point."""
    from .emit_adjoint import AdjointEmitter, ReplayEmitter, replay_name
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
    adj = AdjointEmitter(em)
    adj_funcs = [adj.custom_adjoint_function(fi.grad_ir, len(fi.types), fi.cname, forward_calls=bool(grad_callees))
                 if getattr(fi, "grad_ir", None) is not None else adj.adjoint_function(structurize(fi.ir), fi.cname)
                 for fi in funcs]
    backward = adj.adjoint_kernel(structurize(kernel_ir), "@SYMBOL@")
    inner = "\n\n".join(["using treadle::adj_accum;\nusing treadle::adj_atomic_accum;", *em.type_defs, *adj.struct_accumulators(), *fwd_funcs,
                          *callee_funcs, *adj_funcs, args_struct, backward])
    digest = hashlib.sha256(inner.encode()).hexdigest()
    symbol = f"tb_{digest[:24]}"
    block = f"namespace {symbol}_ns {{\n\n{inner.replace('@SYMBOL@', symbol)}\n\n}} // namespace {symbol}_ns\n"
    return block, symbol


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
    return out


class Built:
    """A kernel instance ready to compile: its C++ block, symbol and cache key."""

    def __init__(self, block: str, symbol: str, key: str, locs: list[Any] | None = None, name: str = "") -> None:
        self.block = block
        self.name = name
        self.locs = locs or []
        self.symbol = symbol
        self.key = key
        self.lib_path: Path | None = None
        self.error: Exception | None = None


def kernel_options(kernel_ir: ir.FuncIR, deps: list[Any], options: CompileOptions) -> CompileOptions:
    """``options`` with the compiler chosen for this kernel.

    Kernels with run-time ``for`` loops go to the backend's loop compiler (``CpuBackend.loop_compiler``).
    """
    loop = _loop_compiler_options(options)
    if loop is options:
        return options
    bodies = [kernel_ir.body] + [fi.ir.body for fi in ordered_deps(deps) if getattr(fi, "ir", None) is not None]
    if any(isinstance(s, ir.ForRange) for b in bodies for s in ir.walk(b)):
        return loop
    return options


def _loop_compiler_options(options: CompileOptions) -> CompileOptions:
    """``options`` for the backend's loop compiler.

    ``options`` itself when a compiler is configured, in debug builds, or where there is no separate loop compiler.
    """
    if options.cxx is not None or options.mode == "debug":
        return options
    cxx = get_cpu_backend().loop_compiler()
    return options if cxx is None else options.with_cxx(cxx)


def adjoint_options(options: CompileOptions) -> CompileOptions:
    """``options`` with the compiler chosen for a kernel's backward pass: the backend's loop compiler.

    Measured (``docs/autodiff.md``): g++ 12 vectorizes the reverse sweep of elementwise kernels (the ``_own``
    instantiation, ``emit_entry.entries``) where clang++ 14 leaves it scalar, e.g. the backward of a 4M-element saxpy
    12 ms -> 3.3 ms; the compile takes ~1.5x longer, once, at the first ``backward()``.
    """
    return _loop_compiler_options(options)


def prepare(kernel_ir: ir.FuncIR, deps: list[Any], options: CompileOptions, name: str) -> Built:
    """Emit and hash one kernel."""
    if config.dump:  # formatting the IR is not free: only when asked for
        dump("ir", name, "\n\n".join([ir.format_func(fi.ir) for fi in ordered_deps(deps)] + [ir.format_func(kernel_ir)]))
    block, symbol, locs = emit_kernel_block(kernel_ir, ordered_deps(deps), checked=options.mode == "debug",
                                           verify_fp=getattr(options, "verify_fp", False))
    dump("cpp", name, PRELUDE + block)
    backend = get_cpu_backend()
    key_src = "\n".join([config.version, header_hash(), backend.identity(options), block])
    key = hashlib.sha256(key_src.encode()).hexdigest()
    return Built(block, symbol, key, locs, name)


def prepare_adjoint(kernel_ir: ir.FuncIR, deps: list[Any], options: CompileOptions, name: str) -> Built:
    """Emit and hash the backward pass of one kernel."""
    block, symbol = emit_adjoint_block(kernel_ir, ordered_deps(deps))
    dump("adj.cpp", name, PRELUDE + block)
    backend = get_cpu_backend()
    key_src = "\n".join([config.version, header_hash(), backend.identity(options), block])
    key = hashlib.sha256(key_src.encode()).hexdigest()
    return Built(block, symbol, key, name=f"{name} (backward)")


def compile_batch(items: list[Built], options: CompileOptions) -> None:
    """Make sure every item has a library: cache hits are found, misses are compiled (in parallel groups)."""
    _compile_unique(items, options)
    _share_twins(items)


def _compile_unique(items: list[Built], options: CompileOptions) -> None:
    cache = get_cache()
    missing: list[Built] = []
    by_key: dict[str, Built] = {}
    for it in items:
        twin = by_key.get(it.key)
        if twin is not None:  # the same code twice: build once
            it.twin = twin  # type: ignore[attr-defined]
            continue
        by_key[it.key] = it
        it.lib_path = cache.lookup(it.key) if config.cache_kernels else None
        if it.lib_path is None:
            missing.append(it)
    if not missing:
        return
    batch_key = hashlib.sha256("".join(sorted(it.key for it in missing)).encode()).hexdigest()
    with cache.lock(batch_key):
        still = [it for it in missing if (cache.lookup(it.key) if config.cache_kernels else None) is None]
        for it in missing:
            if it not in still:
                it.lib_path = cache.lookup(it.key)
        if still:
            _build(still, options)


def _share_twins(items: list[Built]) -> None:
    for it in items:
        twin = getattr(it, "twin", None)
        if twin is not None:
            it.lib_path, it.error = twin.lib_path, twin.error


def max_parallel_builds() -> int:
    """Compiler processes run at once for one batch: one per core the process may use, at most 8."""
    from ..runtime.threadpool import cpu_count

    return max(1, min(8, cpu_count()))


def _split(items: list[Built], n: int) -> list[list[Built]]:
    """``items`` in ``n`` groups of similar total source size (largest first, each to the lightest group)."""
    groups: list[list[Built]] = [[] for _ in range(max(1, min(n, len(items))))]
    sizes = [0] * len(groups)
    for it in sorted(items, key=lambda b: -len(b.block)):
        g = sizes.index(min(sizes))
        groups[g].append(it)
        sizes[g] += len(it.block)
    return [g for g in groups if g]


def _build(items: list[Built], options: CompileOptions) -> None:
    """Compile ``items`` in independent groups, in parallel, each into its own library.

    A failing group is retried without the precompiled header, then kernel by kernel, so that one bad kernel never
    takes its siblings down.
    """
    import time

    from ..runtime.threadpool import prefetch_runtime

    t0 = time.perf_counter()
    prefetch_runtime()  # the thread pool library builds alongside the kernels the first time
    backend = get_cpu_backend()
    pch = backend.pch_flags(PRELUDE, options, header_hash(), start=False)
    groups = _split(items, max_parallel_builds())
    pending = [(g, _start(g, options, pch)) for g in groups]
    retry: list[list[Built]] = []
    for g, (job, tmp) in pending:
        try:
            _finish(g, job, tmp)
        except CompileError as e:
            if pch is not None or len(g) > 1:
                retry.append(g)
            else:
                g[0].error = e
    if retry:
        pending = [(g, _start(g, options, None)) for g in retry]
        for g, (job, tmp) in pending:
            try:
                _finish(g, job, tmp)
                if pch is not None:  # it was the precompiled header: build it again next time
                    backend.drop_pch(PRELUDE, options, header_hash())
            except CompileError as e:
                if len(g) == 1:
                    g[0].error = e
                    continue
                for it in g:  # a bad kernel: build its siblings one by one
                    try:
                        _finish([it], *_start([it], options, None))
                    except CompileError as e1:
                        it.error = e1
    if pch is None:  # later builds with these options use a precompiled header, built now in the background
        backend.pch_flags(PRELUDE, options, header_hash())
    _log_build(items, time.perf_counter() - t0)


def _start(items: list[Built], options: CompileOptions, pch: list[str] | None) -> tuple[Any, Path]:
    key = hashlib.sha256("".join(sorted(it.key for it in items)).encode()).hexdigest()
    body = "\n".join(it.block for it in items)
    tmp = get_cache().tmp_dir()
    out = tmp / f"b_{key}.so"
    backend = get_cpu_backend()
    if pch is None:
        return backend.start(PRELUDE + body, out, options.flags(), options), tmp
    return backend.start(body, out, [*options.flags(), *pch], options), tmp


def _finish(items: list[Built], job: Any, tmp: Path) -> None:
    job.wait()  # on failure the source stays in ``tmp`` for the error report
    backend = get_cpu_backend()
    backend.compile_count += 1
    backend.last_compile_seconds = job.seconds
    lib = get_cache().publish(job.out, job.out.stem[2:], [it.key for it in items])
    _rmtree(tmp)
    for it in items:
        it.lib_path = lib


def _log_build(items: list[Built], seconds: float) -> None:
    """One line on stderr for builds that take longer than a second (``config.quiet`` silences it)."""
    if (seconds > 1.0 or config.verbose) and not config.quiet:
        import sys

        names = sorted({it.name for it in items if it.name})
        what = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        print(f"treadle: compiled {len(items)} kernel(s) in {seconds:.2f} s ({what})", file=sys.stderr)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


_libs: dict[str, Any] = {}


def load_library(path: Path) -> Any:
    """A cached library, loaded once per process."""
    lib = _libs.get(str(path))
    if lib is None:
        from ..runtime.threadpool import get_cpu_runtime

        get_cpu_runtime()  # first: kernel libraries bind its thread pool through a weak symbol when loaded
        lib = get_cpu_backend().load(path)
        _libs[str(path)] = lib
    return lib


def load_symbol(path: Path, symbol: str, kind: str = "forward") -> Any:
    """The entry point ``<symbol>_cpu_<kind>`` from a cached library."""
    return getattr(load_library(path), f"{symbol}_cpu_{kind}")


__all__ = ["Built", "prepare", "compile_batch", "load_symbol", "os"]
