"""The CPU backend's builds: C++ blocks -> cache keys -> shared libraries (batched, cached) -> entry points.

:func:`prepare` / :func:`prepare_adjoint` take a kernel instance's IR through the compiler's emit stage
(``compiler/pipeline.py``) and key the block (:func:`block_key`: the code with the compiler, flags, native headers
and Treadle's version). :func:`compile_batch` runs the shared batch builder (``backends/batch.py``: cache lookups,
twins, the batch lock), which hands the missing blocks to this module's build: parallel groups, one library per
group; :func:`load_symbol` binds an entry point.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .... import config
from ...compiler import pipeline
from ...compiler.pipeline import PRELUDE
from ...core.errors import CompileError
from ...runtime.cache import get_cache
from ...runtime.native import CompileOptions, get_native_compiler, header_hash
from ..batch import BuildItem, build_batch
from . import schedule


class Built(BuildItem):
    """A kernel pass ready to compile: its C++ block, symbol and cache key (``lib_path``: its library).

    ``kind`` is ``"forward"`` or ``"backward"``; ``options`` (set by :func:`compile_batch`) the compile options it
    builds with.
    """

    def __init__(self, block: str, symbol: str, key: str, locs: list[Any] | None = None, name: str = "",
                 kind: str = "forward") -> None:
        super().__init__(key)
        self.block = block
        self.name = name
        self.locs = locs or []
        self.symbol = symbol
        self.kind = kind
        self.options: CompileOptions | None = None

    @property
    def lib_path(self) -> Path | None:
        """The built library (``None`` until built or found)."""
        return self.path

    @lib_path.setter
    def lib_path(self, value: Path | None) -> None:
        self.path = value


def kernel_options(kernel_ir: Any, deps: list[Any], options: CompileOptions) -> CompileOptions:
    """``options`` with the compiler chosen for this kernel.

    Kernels with run-time ``for`` loops go to the loop compiler (``NativeCompiler.loop_compiler``).
    """
    loop = _loop_compiler_options(options)
    if loop is options:
        return options
    return loop if pipeline.has_runtime_loops(kernel_ir, deps) else options


def _loop_compiler_options(options: CompileOptions) -> CompileOptions:
    """``options`` for the loop compiler.

    ``options`` itself when a compiler is configured, in debug builds, or where there is no separate loop compiler.
    """
    if options.cxx is not None or options.mode == "debug":
        return options
    cxx = get_native_compiler().loop_compiler()
    return options if cxx is None else options.with_cxx(cxx)


def adjoint_options(options: CompileOptions) -> CompileOptions:
    """``options`` with the compiler chosen for a kernel's backward pass: the loop compiler.

    Measured (``docs/autodiff.md``): g++ 12 vectorizes the reverse sweep of elementwise kernels (the ``_own``
    instantiation, ``emit_entry.entries``) where clang++ 14 leaves it scalar, e.g. the backward of a 4M-element saxpy
    12 ms -> 3.3 ms; the compile takes ~1.5x longer, once, at the first ``backward()``.
    """
    return _loop_compiler_options(options)


def block_key(block: str, options: CompileOptions) -> str:
    """The cache key of a C++ block: Treadle's version, the native headers, the compiler and flags, the code."""
    key_src = "\n".join([config.version, header_hash(), get_native_compiler().identity(options), block])
    return hashlib.sha256(key_src.encode()).hexdigest()


def prepare(kernel_ir: Any, deps: list[Any], options: CompileOptions, name: str) -> Built:
    """Emit (the compiler's stage) and key one kernel's forward pass."""
    block, symbol, locs = pipeline.emit_forward(kernel_ir, deps, name, checked=options.mode == "debug",
                                                verify_fp=getattr(options, "verify_fp", False))
    return Built(block, symbol, block_key(block, options), locs, name)


def prepare_adjoint(kernel_ir: Any, deps: list[Any], options: CompileOptions, name: str) -> Built:
    """Emit (the compiler's stage) and key one kernel's backward pass."""
    block, symbol = pipeline.emit_backward(kernel_ir, deps, name)
    return Built(block, symbol, block_key(block, options), name=f"{name} (backward)", kind="backward")


def compile_batch(items: list[Built], options: CompileOptions) -> None:
    """Make sure every item has a library: cache hits are found, misses are compiled (in parallel groups)."""
    compile_batches([(items, options)])


def compile_batches(batches: list[tuple[list[Built], CompileOptions]]) -> None:
    """:func:`compile_batch` for several lists of items, each with its compile options, in one parallel build.

    The compiler processes of every list run at once (a module's forward passes with their backward passes, which
    may use another compiler), and each item still gets its own cache entry.
    """
    items: list[Built] = []
    for its, options in batches:
        for it in its:
            it.options = options
            items.append(it)
    if items:
        build_batch(items, _build)


#: Every build: ``(name, kind, compiler)`` of each kernel pass compiled, in order (:func:`build_log`).
_build_log: list[tuple[str, str, str]] = []


def build_log() -> list[tuple[str, str, str]]:
    """``(kernel name, "forward" or "backward", compiler)`` of every kernel pass this process compiled, in order.

    Kernel passes found in the cache are not listed: the log says what a program paid compiler time for.
    """
    return list(_build_log)


def max_parallel_builds() -> int:
    """Compiler processes run at once for one batch: one per core the process may use, at most 8."""
    from ...runtime.threadpool import cpu_count

    return max(1, min(8, cpu_count()))


def _plan(items: list[Built]) -> list[tuple[list[Built], CompileOptions, float]]:
    """The compiler processes of a build: ``(passes, options, estimated cost)`` per group.

    Passes are grouped by compile options (each compiler, flags); each set is cut into groups of similar estimated
    cost (``schedule.py``), a few per process, so that a queue of :func:`max_parallel_builds` processes keeps every
    core busy whatever the mix of compilers.
    """
    backend = get_native_compiler()
    by_opts: dict[str, list[Built]] = {}
    opts: dict[str, CompileOptions] = {}
    for it in items:
        o = it.options or CompileOptions()
        by_opts.setdefault(o.key(), []).append(it)
        opts.setdefault(o.key(), o)
    costs = {k: [schedule.cost(len(it.block), it.kind, backend.toolchain(opts[k]).is_clang) for it in its]
             for k, its in by_opts.items()}
    total = sum(sum(c) for c in costs.values())
    processes = max_parallel_builds()
    plan: list[tuple[list[Built], CompileOptions, float]] = []
    cost_of = {id(it): c for k, its in by_opts.items() for it, c in zip(its, costs[k])}
    for k, its in by_opts.items():
        n = schedule.group_count(sum(costs[k]), total, processes)
        for g in schedule.split(its, costs[k], n):
            plan.append((g, opts[k], sum(cost_of[id(it)] for it in g)))
    return plan


def _build(items: list[Built]) -> None:
    """Compile ``items`` in independent groups, on a queue of parallel compiler processes, each into its own library.

    A failing group is retried without the precompiled header, then kernel by kernel, so that one bad kernel never
    takes its siblings down.
    """
    import time

    from ...runtime.threadpool import prefetch_runtime

    t0 = time.perf_counter()
    prefetch_runtime()  # the thread pool library builds alongside the kernels the first time
    backend = get_native_compiler()
    plan = _plan(items)
    pch_of: dict[str, list[str] | None] = {}
    for _, options, _ in plan:
        if options.key() not in pch_of:
            pch_of[options.key()] = backend.pch_flags(PRELUDE, options, header_hash(), start=False)

    def compile_group(entry: tuple[list[Built], CompileOptions, float]) -> tuple[Any, Path]:
        g, options, _ = entry
        job, tmp = _start(g, options, pch_of[options.key()])
        job.wait()
        return job, tmp

    results = schedule.run_queue(plan, [c for _, _, c in plan], compile_group, max_parallel_builds())
    retry: list[tuple[list[Built], CompileOptions]] = []
    for (g, options, _), res in zip(plan, results):
        if isinstance(res, CompileError):
            if pch_of[options.key()] is not None or len(g) > 1:
                retry.append((g, options))
            else:
                g[0].error = res
        elif isinstance(res, BaseException):
            raise res
        else:
            _publish(g, *res)
    if retry:
        again = [(g, options, _start(g, options, None)) for g, options in retry]
        for g, options, (job, tmp) in again:
            try:
                _finish(g, job, tmp)
                if pch_of[options.key()] is not None:  # it was the precompiled header: build it again next time
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
    for g, options, _ in plan:
        if pch_of[options.key()] is None:  # later builds with these options use a precompiled header, built now
            backend.pch_flags(PRELUDE, options, header_hash())
        for it in g:
            _build_log.append((it.name, it.kind, backend.toolchain(options).path))
    _log_build(items, time.perf_counter() - t0)


def _start(items: list[Built], options: CompileOptions, pch: list[str] | None) -> tuple[Any, Path]:
    key = hashlib.sha256("".join(sorted(it.key for it in items)).encode()).hexdigest()
    body = "\n".join(it.block for it in items)
    tmp = get_cache().tmp_dir()
    out = tmp / f"b_{key}.so"
    backend = get_native_compiler()
    if pch is None:
        return backend.start(PRELUDE + body, out, options.flags(), options), tmp
    return backend.start(body, out, [*options.flags(), *pch], options), tmp


def _finish(items: list[Built], job: Any, tmp: Path) -> None:
    job.wait()  # on failure the source stays in ``tmp`` for the error report
    _publish(items, job, tmp)


def _publish(items: list[Built], job: Any, tmp: Path) -> None:
    """Count a finished compiler run, move its library into the cache and point its passes at it."""
    backend = get_native_compiler()
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
        from ...runtime.threadpool import get_cpu_runtime

        get_cpu_runtime()  # first: kernel libraries bind its thread pool through a weak symbol when loaded
        lib = _libs.setdefault(str(path), get_native_compiler().load(path))  # threads loading it at once keep one
    return lib


def load_symbol(path: Path, symbol: str, kind: str = "forward") -> Any:
    """The entry point ``<symbol>_cpu_<kind>`` from a cached library."""
    return getattr(load_library(path), f"{symbol}_cpu_{kind}")


__all__ = ["Built", "adjoint_options", "block_key", "build_log", "compile_batch", "compile_batches", "kernel_options",
           "load_library", "load_symbol", "prepare", "prepare_adjoint"]
