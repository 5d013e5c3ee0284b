"""The CPU runtime library: a persistent worker pool and the launch trampoline (``native/threads.h``).

The library is compiled once per toolchain and header version into the kernel cache (``rt/``), then loaded with
``RTLD_GLOBAL`` before any kernel library, so that the kernels' whole-launch entries find its
``treadle_rt_parallel_for`` through a weak symbol. Python launches call :meth:`CpuRuntime.run1` (one launch) or
:meth:`CpuRuntime.run` (a captured sequence) with :class:`Cmd` records: one native call per launch or per graph
(``run1`` goes through the native launch extension, ``runtime/fastlaunch.py``, when it is available, else ctypes).

If the library cannot be built, launches still work: every command then runs serially on the calling thread
through the kernel's own range entry (``fallback``), and a warning says why.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import config

#: Launches with fewer threads than this run on the calling thread (no wake-up of the pool). Measured on the 2-core
#: CI machine: below ~4k threads of a cheap kernel, handing work to a spinning worker costs more than it saves.
SERIAL_THRESHOLD = 4096
#: Idle workers spin this long (ns) after a launch before they sleep: back-to-back launches then start in ~1 us,
#: while an idle process burns no CPU. Waking a sleeping worker costs tens of microseconds.
SPIN_NS = 200_000
#: Smallest number of threads handed to a worker at once (a launch is cut into up to 16 chunks per thread).
MIN_CHUNK = 256

_RANGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong)


class Cmd(ctypes.Structure):
    """One launch command (``treadle_cmd_t``): range entry, bounds, arguments, thread count."""

    _fields_ = [
        ("fn", ctypes.c_void_p),
        ("bounds", ctypes.c_void_p),
        ("args", ctypes.c_void_p),
        ("nthreads", ctypes.c_int32),
        ("flags", ctypes.c_int32),
    ]


assert ctypes.sizeof(Cmd) == 32

#: ``Cmd.flags`` bit (``TREADLE_CMD_HEAVY``): the kernel's threads may each do much work, so a launch under the serial
#: threshold is probed and goes parallel when its threads turn out long
CMD_HEAVY = 1


def cpu_count() -> int:
    """CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def num_threads() -> int:
    """Threads a parallel launch uses: ``config.num_threads``, or every core when it is 0."""
    n = config.num_threads
    return int(n) if n and n > 0 else _CPUS


_CPUS = cpu_count()


#: ``CpuRuntime`` attribute -> (exported function, argument types, result type) of the runtime library
_FUNCTIONS: dict[str, tuple[str, list[Any], Any]] = {
    "run1": ("treadle_rt_run1", [ctypes.c_void_p], None),
    "run": ("treadle_rt_run", [ctypes.c_void_p, ctypes.c_int64], None),
    "_configure": ("treadle_rt_configure", [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64], None),
    "_shutdown": ("treadle_rt_shutdown", [], None),
    "_workers": ("treadle_rt_workers", [], ctypes.c_int32),
    "memset": ("treadle_rt_memset", [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int32], None),
}


class CpuRuntime:
    """The loaded runtime library (or the serial fallback when it could not be built).

    The library's functions (``run1``, ``run``, ``memset``...) become ctypes functions at their first use: most
    processes launch through the native extension and never call several of them.
    """

    def __init__(self, lib: Any, path: Path | None) -> None:
        self.lib = lib
        self.path = path
        if lib is not None:
            self.configure(serial_threshold=SERIAL_THRESHOLD, spin_ns=SPIN_NS, min_chunk=MIN_CHUNK)
        else:
            self.run1 = _serial_run1
            self.run = _serial_run
            self.memset = None

    def __getattr__(self, name: str) -> Any:
        """A library function, made a ctypes function with its signature at first use (then kept)."""
        spec = _FUNCTIONS.get(name)
        lib = self.__dict__.get("lib")
        if spec is None or lib is None:
            raise AttributeError(name)
        symbol, argtypes, restype = spec
        fn = getattr(lib, symbol)
        fn.argtypes = argtypes
        fn.restype = restype
        self.__dict__[name] = fn
        return fn

    @property
    def parallel(self) -> bool:
        """Whether launches can use several threads."""
        return self.lib is not None

    def configure(self, workers: int = -1, serial_threshold: int = -1, spin_ns: int = -1, min_chunk: int = -1) -> None:
        """Change pool settings (negative: keep); ``workers`` > 0 starts that many worker threads now."""
        if self.lib is not None:
            self._configure(workers, serial_threshold, spin_ns, min_chunk)

    def workers(self) -> int:
        """Worker threads started so far (the launching thread works too and is not counted)."""
        return int(self._workers()) if self.lib is not None else 0

    def shutdown(self) -> None:
        """Stop the worker threads (they start again with the next parallel launch)."""
        if self.lib is not None:
            self._shutdown()


def _use_native_run1(rt: CpuRuntime) -> None:
    """Make ``rt.run1`` the native extension's (no ctypes call) when the extension is available."""
    from . import fastlaunch
    from .native import symbol_address

    ext = fastlaunch.load(symbol_address(rt.lib, "treadle_rt_run1"))
    if ext is not None:
        rt.run1 = ext.run1


def _serial_run1(cmd_addr: int) -> None:
    cmd = Cmd.from_address(cmd_addr)
    fn = _RANGE_FN(cmd.fn)
    size = ctypes.c_int64.from_address(cmd.bounds + 40).value
    if size > 0:
        fn(cmd.bounds, cmd.args, 0, size)


def _serial_run(cmds_addr: int, count: int) -> None:
    for i in range(count):
        _serial_run1(cmds_addr + i * ctypes.sizeof(Cmd))


def _source() -> str:
    return '#define TREADLE_RT_IMPLEMENTATION\n#include "threads.h"\n'


def _product_key(stem: str, key_parts: list[str], sources: tuple[Path, ...]) -> str | None:
    """The environment memo's key of a native product, or ``None`` when a source is not one the stamp covers."""
    from .native import NATIVE_DIR

    native = str(NATIVE_DIR)
    names = [os.path.basename(p) for p in map(str, sources)
             if os.path.dirname(p) == native and p.endswith((".h", ".cpp"))]  # plain strings: no pathlib on this path
    if len(names) != len(sources):
        return None
    return hashlib.sha256("\0".join([stem, config.version, *key_parts, *names]).encode()).hexdigest()


def known_library(stem: str, key_parts: list[str], sources: tuple[Path, ...] = ()) -> Path | None:
    """The path :func:`shared_library` would return, when the environment memo knows it and the file is trusted.

    Nothing is read, hashed or built: ``None`` means "not known without that work".
    """
    return _known(stem, _product_key(stem, key_parts, sources))


def _known(stem: str, memo_key: str | None) -> Path | None:
    from . import warm_env
    from .cache import unsafe_reason

    known = warm_env.product(stem, memo_key) if memo_key is not None else None
    if known is not None:
        with contextlib.suppress(OSError):
            if unsafe_reason(known) is None:
                return Path(known)
    return None


def shared_library(stem: str, key_parts: list[str], build: Callable[[Path], None],
                   sources: tuple[Path, ...] = ()) -> Path:
    """``<shared>/rt/<stem>_<key>.so``, built once per content key (Treadle's own native build products).

    The key hashes ``key_parts`` and the text of the ``sources`` files with Treadle's version and the compiler's
    identity. A library there that another user could have replaced is rebuilt; concurrent processes build it once
    (lock), publish it atomically and privately (``build(out)`` compiles into ``out`` in a private temporary
    directory). Where every source is a native file, a warm start takes the library's path from the environment
    memo (``warm_env.product``: its stamp covers the compiler and those files) instead of reading and hashing them.
    """
    from . import warm_env
    from .cache import _make_private_dir
    from .native import get_native_compiler, shared_cache

    memo_key = _product_key(stem, key_parts, sources)
    known = _known(stem, memo_key)
    if known is not None:
        return known
    h = hashlib.sha256()
    for part in (config.version, get_native_compiler().toolchain().identity, *key_parts,
                 *(src.read_text() for src in sources)):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()
    cache = shared_cache()
    final = cache.root / "rt" / f"{stem}_{key[:32]}.so"
    if not (final.exists() and cache.trusted(final)):
        with cache.lock(f"{stem}_{key}"):
            if not (final.exists() and cache.trusted(final)):
                tmp = cache.tmp_dir()
                try:
                    out = tmp / f"{stem}.so"
                    build(out)
                    _make_private_dir(final.parent)
                    os.chmod(out, 0o700)
                    os.replace(out, final)
                finally:
                    import shutil

                    shutil.rmtree(tmp, ignore_errors=True)
    if memo_key is not None:
        warm_env.remember_product(stem, memo_key, str(final))
    return final


_RT_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden", "-w"]


def _rt_flags() -> list[str]:
    """The runtime library's flags, with ``config.sanitize``'s sanitizers (an instrumented build is its own)."""
    from .native import sanitizer_flags

    return _RT_FLAGS + sanitizer_flags()


def _runtime_sources() -> tuple[Path, ...]:
    from .native import NATIVE_DIR

    return (NATIVE_DIR / "threads.h",)


def build_runtime_library() -> Path:
    """Compile the runtime library (once per toolchain and header version, shared by kernel caches).

    It lives in ``backends.cpu.shared_cache()``; a library there that another user could have replaced is rebuilt.
    """
    from .native import get_native_compiler

    flags = _rt_flags()
    return shared_library("treadle_rt", [" ".join(flags)],
                          lambda out: get_native_compiler().compile_raw(_source(), out, flags), _runtime_sources())


class _Holder:
    def __init__(self) -> None:
        self.runtime: CpuRuntime | None = None
        self.lock = threading.Lock()
        self.prefetch: threading.Thread | None = None
        self.built: Path | None = None
        self.error: Exception | None = None


_HOLDER = _Holder()


def _build_into_holder() -> None:
    try:
        _HOLDER.built = build_runtime_library()
    except Exception as e:  # noqa: BLE001 - reported by get_cpu_runtime
        _HOLDER.error = e
        return
    from . import fastlaunch

    fastlaunch.prebuild()


def prefetch_runtime() -> None:
    """Start building the runtime library in the background (the first kernel build overlaps with it)."""
    with _HOLDER.lock:
        if _HOLDER.runtime is None and _HOLDER.prefetch is None:
            _HOLDER.prefetch = threading.Thread(target=_build_into_holder, daemon=False, name="treadle-rt-build")
            _HOLDER.prefetch.start()


def parallel_memset(ptr: int, value: int, nbytes: int) -> bool:
    """Set ``nbytes`` at ``ptr`` to the byte ``value`` on the pool's threads.

    ``False`` when no pool is loaded or a single thread is configured: the caller then sets them itself.
    """
    rt = _HOLDER.runtime
    if rt is None or rt.memset is None:
        return False
    nt = num_threads()
    if nt <= 1:
        return False
    rt.memset(ptr, value, nbytes, nt)
    return True


def get_cpu_runtime() -> CpuRuntime:
    """The process-wide runtime (built and loaded on first use)."""
    rt = _HOLDER.runtime
    if rt is not None:
        return rt
    pre = _HOLDER.prefetch
    if pre is not None:
        pre.join()
    with _HOLDER.lock:
        if _HOLDER.runtime is None:
            try:
                if _HOLDER.error is not None:
                    raise _HOLDER.error
                path = _HOLDER.built or build_runtime_library()
                from .native import load_native_library

                lib = load_native_library(str(path), getattr(ctypes, "RTLD_GLOBAL", 0))
                rt = CpuRuntime(lib, path)
                _use_native_run1(rt)
                _HOLDER.runtime = rt
            except Exception as e:  # noqa: BLE001 - any failure degrades to serial launches, never to no launches
                warnings.warn(f"treadle: the CPU thread pool is unavailable ({e}); kernels run on one thread",
                              RuntimeWarning, stacklevel=2)
                _HOLDER.runtime = CpuRuntime(None, None)
        return _HOLDER.runtime


def warm_up() -> None:
    """Part of ``wp.init()``: take the toolchain facts from the environment memo and load the runtime if it is built.

    The CPU device's counterpart of loading a GPU driver: the environment stamp (``warm_env.prime``: Treadle's
    sources, native headers and compiler checked, facts read from the memo) and, when the memo knows both the
    runtime library and the launch extension, loading them (two ``dlopen``). Where anything is missing (first run,
    a changed header or compiler, kernel caching off) nothing is built here: the first kernel build or launch does
    that as before. Best effort: any problem is left to the normal path to report.
    """
    if _HOLDER.runtime is not None or not config.cache_kernels or config.dump:
        return
    try:
        from . import fastlaunch, warm_env

        warm_env.prime()
        if not config.native_launch:
            return
        rt = known_library("treadle_rt", [" ".join(_rt_flags())], _runtime_sources())
        ext = fastlaunch.known_extension()
        if rt is None or ext is None:
            return
        with _HOLDER.lock:
            if _HOLDER.runtime is not None or _HOLDER.prefetch is not None:
                return
            _HOLDER.built = rt
            fastlaunch.use_path(ext)
        get_cpu_runtime()
    except Exception:  # noqa: BLE001 - the first launch takes the normal path and reports what is wrong
        return
