"""Global configuration (``treadle.config`` / ``wp.config``).

This module is the one place that reads environment variables. Settings are plain attributes, as in the
reference API (``wp.config.mode = "debug"``); :func:`override` changes some of them for a ``with`` block.

Environment variables read once at import:

- ``TREADLE_CACHE_PATH`` (or ``WARP_CACHE_PATH``): kernel cache directory.
- ``TREADLE_CXX`` (or ``CXX``): the C++ compiler for the CPU backend.
- ``TREADLE_NUM_THREADS``: worker threads for CPU launches (default: all cores).
- ``TREADLE_DUMP``: comma-separated pipeline stages to dump (``ir,cpp,adj.cpp,cu,adj.cu``) into ``dump_dir``.
- ``TREADLE_MODE``: ``release``, ``debug`` or ``interpret``.
- ``TREADLE_NATIVE_LAUNCH``: ``0`` turns the native launch fast path off.
- ``TREADLE_SANITIZE``: sanitizers for every native build (``thread``, ``address``, ``undefined``; comma-separated).
"""

from __future__ import annotations

import contextlib
import enum
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

#: Treadle's version (also ``treadle.__version__``).
version: str = "0.1.0"

_env = os.environ

#: "release", "debug" (checked mode: bounds checks, division-by-zero and NaN checks), or "interpret" (kernels run
#: in Python, thread by thread, through the IR interpreter: steppable with pdb, errors raised at the user's line).
mode: str = _env.get("TREADLE_MODE", "release")
#: Report NaN/Inf stores in checked mode.
verify_fp: bool = False
#: Verify CUDA calls (accepted for compatibility).
verify_cuda: bool = False
#: Print each launch to stderr.
print_launches: bool = False
#: Keep compiled kernels on disk between processes.
cache_kernels: bool = True
#: Kernel cache directory; ``None`` means the per-user default.
kernel_cache_dir: str | None = _env.get("TREADLE_CACHE_PATH") or _env.get("WARP_CACHE_PATH") or None
#: Generate adjoint code for kernels (can be overridden per module/kernel).
enable_backward: bool = True
#: Loops over compile-time constant ranges with at most this many iterations are unrolled.
max_unroll: int = 16
#: Optimization level of the C++ compiler (``-O<n>``); ``None``: 3 in release builds, 1 in checked (``"debug"``)
#: builds.
optimization_level: int | None = None
#: Emit ``#line`` directives mapping generated C++ back to Python lines.
line_directives: bool = True
#: Silence the one line on stderr that builds taking more than a second print.
quiet: bool = False
#: Print a line on stderr for every build, not only for those that take more than a second.
verbose: bool = False
#: Log levels (the values of Python's ``logging`` levels), exported as ``wp.LOG_DEBUG`` ... ``wp.LOG_ERROR``.
LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = 10, 20, 30, 40
#: Log level (accepted for compatibility; Treadle prints nothing on stdout at any level).
log_level: int = LOG_WARNING
#: Extra flags passed to the C++ compiler.
cpu_compiler_flags: list[str] = []
#: Sanitizers compiled into every native build: kernel libraries, the thread-pool runtime and the launch extension
#: (``"thread"``, ``"address"``, ``"undefined"``, comma-separated; ``""``: none). Instrumented builds get their own
#: cache entries. Set it (``TREADLE_SANITIZE=thread``) before the first launch: the runtime is built and loaded once
#: per process. An uninstrumented Python needs the sanitizer's runtime preloaded (``docs/threads.md``).
sanitize: str = _env.get("TREADLE_SANITIZE", "")
#: The C++ compiler to use for the CPU backend (``None``: find clang++ or g++).
cxx: str | None = _env.get("TREADLE_CXX") or _env.get("CXX") or None
#: Number of worker threads for CPU launches (0: all cores).
num_threads: int = int(_env.get("TREADLE_NUM_THREADS", "0") or 0)
#: Launch through the native fast path (a small CPython extension built at first use); ``False`` (or
#: ``TREADLE_NATIVE_LAUNCH=0``) keeps every launch on the Python path. Read when a kernel is first launched.
native_launch: bool = _env.get("TREADLE_NATIVE_LAUNCH", "1") != "0"
#: Streaming (non-temporal) stores for CPU kernels whose output is written once per thread at the thread index and
#: never read, when a launch writes at least 64 MB of it (docs/cpu_backend.md). Off by default: it saves a quarter of
#: the memory traffic of such launches, but costs build time for every eligible kernel. ``TREADLE_STREAM_STORES=1``.
stream_stores: bool = _env.get("TREADLE_STREAM_STORES", "0") == "1"
#: On CUDA devices, run the serial Mesh/Bvh builds and refits (SAH, median) on the host and copy the tree to the
#: device (about 25x faster on an H200 than the one-thread GPU kernel; graph captures keep the kernel).
geometry_host_builds: bool = _env.get("TREADLE_GEOMETRY_HOST_BUILDS", "1") != "0"
class DeterministicMode(enum.IntEnum):
    """Deterministic execution modes (``wp.config.deterministic``); any true value asks for run-to-run identity."""

    NOT_GUARANTEED = 0
    RUN_TO_RUN = 1
    GPU_TO_GPU = 2


#: Bit-identical results run to run (serial order for float atomics); a bool or a :class:`DeterministicMode`.
deterministic: bool | DeterministicMode = False
#: Pipeline stages to write to :data:`dump_dir` per kernel: ``ir`` (typed IR), ``cpp`` (generated C++), ``adj.cpp``
#: (the adjoint's C++), ``cu`` and ``adj.cu`` (CUDA C++). ``TREADLE_DUMP=ir,cpp``.
dump: list[str] = [s for s in _env.get("TREADLE_DUMP", "").split(",") if s]
#: Where dumps are written (``TREADLE_DUMP_DIR``).
dump_dir: str = _env.get("TREADLE_DUMP_DIR", "treadle_dump")
#: Build kernels of the CPU backend with a precompiled header (not in checked builds).
use_precompiled_headers: bool = True
#: CUDA code NVRTC produces: ``"cubin"``, ``"ptx"``, or ``None`` (CUBIN for the device's architecture when NVRTC
#: knows it, else PTX).
cuda_output: str | None = None
#: PTX target architecture (e.g. ``75``); setting it asks for PTX output.
ptx_target_arch: int | None = None
#: Source line information in CUDA code, for profilers.
lineinfo: bool = False
#: Accepted for compatibility with the reference API (component writes are always allowed and differentiated).
enable_vector_component_overwrites: bool = False
#: Check that no recorded launch's gradients change because an array it read was overwritten later (compared by
#: running its adjoint with the kept and the current values: :class:`treadle.OverwriteError` at
#: ``Tape.backward()``; ``docs/autodiff.md``).
verify_autograd_array_access: bool = True
#: Enable the stream-ordered memory pool of CUDA devices that support one when they are initialised.
enable_mempools_at_init: bool = False
#: Accepted for compatibility with the reference API (not read).
enable_graph_capture_module_load_by_default: bool = True
#: Accepted for compatibility with the reference API (not read).
max_graph_tape_size: int = 0
#: Accepted for compatibility with the reference API (not read).
legacy_scalar_return_types: bool = False
#: Accepted for compatibility with the reference API (not read).
track_memory: bool = False
#: Accepted for compatibility with the reference API (not read).
launch_array_access_mode: str = "default"


_listeners: list[Callable[[str, Any], None]] = []


def on_change(listener: Callable[[str, Any], None]) -> None:
    """Call ``listener(name, value)`` after every write of a setting (``wp.config.x = ...``, :func:`override`)."""
    _listeners.append(listener)


class _ConfigModule(types.ModuleType):
    """This module's class: writes of settings notify the :func:`on_change` listeners (the launch state)."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        for listener in _listeners:
            listener(name, value)


sys.modules[__name__].__class__ = _ConfigModule


@contextlib.contextmanager
def override(**settings: Any) -> Iterator[None]:
    """Temporarily change configuration settings inside a ``with`` block."""
    mod = sys.modules[__name__]
    old = {}
    for key, value in settings.items():
        if not hasattr(mod, key):
            raise AttributeError(f"treadle.config has no setting '{key}'")
        old[key] = getattr(mod, key)
        setattr(mod, key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            setattr(mod, key, value)
