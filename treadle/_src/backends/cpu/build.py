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


class Built(BuildItem):
    """A kernel instance ready to compile: its C++ block, symbol and cache key (``lib_path``: its library)."""

    def __init__(self, block: str, symbol: str, key: str, locs: list[Any] | None = None, name: str = "") -> None:
        super().__init__(key)
        self.block = block
        self.name = name
        self.locs = locs or []
        self.symbol = symbol

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
    return Built(block, symbol, block_key(block, options), name=f"{name} (backward)")


def compile_batch(items: list[Built], options: CompileOptions) -> None:
    """Make sure every item has a library: cache hits are found, misses are compiled (in parallel groups)."""
    build_batch(items, lambda missing: _build(missing, options))


def max_parallel_builds() -> int:
    """Compiler processes run at once for one batch: one per core the process may use, at most 8."""
    from ...runtime.threadpool import cpu_count

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

    from ...runtime.threadpool import prefetch_runtime

    t0 = time.perf_counter()
    prefetch_runtime()  # the thread pool library builds alongside the kernels the first time
    backend = get_native_compiler()
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
    backend = get_native_compiler()
    if pch is None:
        return backend.start(PRELUDE + body, out, options.flags(), options), tmp
    return backend.start(body, out, [*options.flags(), *pch], options), tmp


def _finish(items: list[Built], job: Any, tmp: Path) -> None:
    job.wait()  # on failure the source stays in ``tmp`` for the error report
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


__all__ = ["Built", "adjoint_options", "block_key", "compile_batch", "kernel_options", "load_library", "load_symbol",
           "prepare", "prepare_adjoint"]
