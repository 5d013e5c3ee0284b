"""Native code: C++ source -> shared library with the system compiler, loaded with ``dlopen``.

:class:`NativeCompiler` runs the C++ compiler (parallel jobs, a precompiled header of the native headers, the faster
linker where there is one) and loads the libraries it builds; :class:`CompileOptions` are the flags that change a
binary. The CPU backend builds kernels with it (``backends/cpu/build.py``), the runtime its own native products: the
thread-pool library (``threadpool.py``) and the launch extension (``fastlaunch.py``). :func:`header_hash` is the
content hash of the native headers every generated kernel includes.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ... import config
from ..core.errors import CompileError, SourceLoc, ToolchainError
from .toolchain import Toolchain, get_toolchain

NATIVE_DIR = Path(__file__).resolve().parent.parent.parent / "native"

#: Build kernels with run-time ``for`` loops with g++ when the default compiler is clang++ (see
#: ``NativeCompiler.loop_compiler``); ``TREADLE_LOOP_KERNELS_GXX=0`` turns it off.
LOOP_KERNELS_WITH_GXX = os.environ.get("TREADLE_LOOP_KERNELS_GXX", "1") != "0"

_ERROR_RE = re.compile(r"^(?P<file>[^:\n]+\.py):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$",
                       re.M)


def _shared_function_class() -> Any:
    """One cdecl function-pointer class for every library :func:`load_native_library` loads (``None``: unavailable)."""
    import _ctypes

    if not hasattr(_ctypes, "dlopen"):  # pragma: no cover - Windows loads through ``LoadLibrary``
        return None

    class _FuncPtr(_ctypes.CFuncPtr):  # type: ignore[misc,name-defined]
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = ctypes.c_int

    return _FuncPtr


class _NativeLibrary(ctypes.CDLL):
    """A ``ctypes.CDLL`` whose functions share one class instead of a class made per library.

    ``CDLL.__init__`` creates a function-pointer class for each library it loads, which costs about as much as
    loading a small library; a warm start loads the runtime and a kernel library or two before its first launch.
    The functions behave as ``CDLL``'s do: cdecl, the GIL released during calls, ``restype`` and ``argtypes`` set
    on each function object.
    """

    _FuncPtr = _shared_function_class()

    def __init__(self, path: str, mode: int) -> None:  # noqa: D107 - see the class
        import _ctypes

        self._name = path
        self._handle = _ctypes.dlopen(path, mode)


def load_native_library(path: str, mode: int) -> Any:
    """``ctypes.CDLL(path, mode=mode)``, without its per-library cost where the platform allows."""
    if _NativeLibrary._FuncPtr is None:  # pragma: no cover - not a dlopen platform
        return ctypes.CDLL(path, mode=mode)
    return _NativeLibrary(path, mode)


def symbol_address(lib: Any, name: str) -> int:
    """The address of the function ``name`` exported by a loaded library (``AttributeError`` if there is none).

    ``dlsym`` alone: no ctypes function object to make and cast, where only the address is wanted.
    """
    import _ctypes

    dlsym = getattr(_ctypes, "dlsym", None)
    if dlsym is None:  # pragma: no cover - not a dlopen platform
        return int(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0)
    try:
        return int(dlsym(lib._handle, name))
    except OSError as e:  # what ``getattr(lib, name)`` raises for a missing symbol
        raise AttributeError(str(e)) from None


_SANITIZERS = ("thread", "address", "undefined")


def sanitizer_flags() -> list[str]:
    """Compiler flags of ``config.sanitize`` (``[]`` when it is empty), for every native build.

    Raises:
        ToolchainError: ``config.sanitize`` names a sanitizer Treadle does not build with.
    """
    setting = config.sanitize
    if not setting:
        return []
    kinds = [k.strip() for k in str(setting).split(",") if k.strip()]
    bad = [k for k in kinds if k not in _SANITIZERS]
    if bad:
        raise ToolchainError(f"wp.config.sanitize (TREADLE_SANITIZE) names unknown sanitizer(s) {', '.join(bad)}; "
                             f"use {', '.join(_SANITIZERS)} (comma-separated) or '' for none")
    return [f"-fsanitize={','.join(kinds)}", "-g", "-fno-omit-frame-pointer"]


class CompileOptions:
    """Options that change the binary (all of them are part of the cache key)."""

    def __init__(self, mode: str = "release", opt_level: int | None = None, extra: list[str] | None = None,
                 verify_fp: bool = False, cxx: str | None = None) -> None:
        self.mode = mode
        self.verify_fp = verify_fp  # NaN/Inf checks on float stores (checked builds; changes the emitted code)
        self.opt_level = opt_level if opt_level is not None else (1 if mode == "debug" else 3)
        self.extra = list(extra or [])
        #: the compiler for these kernels (``None``: the default toolchain; see ``NativeCompiler.loop_compiler``)
        self.cxx = cxx

    def with_cxx(self, cxx: str | None) -> CompileOptions:
        """The same options for another compiler."""
        return CompileOptions(self.mode, self.opt_level, self.extra, self.verify_fp, cxx)

    def flags(self) -> list[str]:
        flags = ["-std=c++17", f"-O{self.opt_level}", "-march=native", "-fPIC", "-shared",
                 "-fno-math-errno", "-ffp-contract=off", "-fvisibility=hidden", "-w"]
        if self.mode == "debug":
            flags += ["-DTREADLE_CHECKED", "-g"]
        return flags + sanitizer_flags() + self.extra

    def key(self) -> str:
        return " ".join(self.flags()) + (f" [cxx={self.cxx}]" if self.cxx else "")


#: ``-fuse-ld=`` flag of a faster linker than the system default, found once per process ("" when there is none,
#: when ``$TREADLE_FAST_LINKER=0``, or after it failed once). Linking dominates the fixed cost of a small build:
#: an empty library links in ~0.06 s with GNU ld and ~0.03 s with gold, out of ~0.11 s for the whole compiler run.
_fast_ld: str | None = None
#: What clang++ and g++ print when the link step (not the compilation) failed.
_LINK_FAILED = ("linker command failed", "ld returned", "invalid linker name", "fuse-ld")


def fast_linker_flag() -> str:
    """``-fuse-ld=lld`` or ``-fuse-ld=gold`` when that linker is installed, else ``""``."""
    global _fast_ld
    if _fast_ld is None:
        _fast_ld = ""
        if os.environ.get("TREADLE_FAST_LINKER", "1") != "0":
            for name in ("lld", "gold"):
                if shutil.which(f"ld.{name}"):
                    _fast_ld = f"-fuse-ld={name}"
                    break
    return _fast_ld


class CompileJob:
    """A compiler process started by :meth:`NativeCompiler.start`; :meth:`wait` finishes it."""

    def __init__(self, proc: subprocess.Popen | None, src: Path, out: Path, error: str | None = None,
                 cmd: list[str] | None = None) -> None:
        self.proc = proc
        self.src = src
        self.out = out
        self.error = error
        self.cmd = cmd or []
        self.t0 = time.perf_counter()
        self.seconds = 0.0

    def wait(self) -> None:
        """Wait for the compiler; raise :class:`CompileError` if it failed."""
        global _fast_ld
        if self.proc is None:
            raise CompileError(f"could not run the C++ compiler: {self.error}")
        try:
            stdout, stderr = self.proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise CompileError("the C++ compiler did not finish within 600 s") from None
        ok = self.proc.returncode == 0 and self.out.exists()
        ld = next((f for f in self.cmd if f.startswith("-fuse-ld=")), None)
        text = (stderr or "") + (stdout or "")
        if not ok and ld is not None and any(m in text for m in _LINK_FAILED):
            # The faster linker may not work with this compiler: link with the default one from now on.
            retry = subprocess.run([f for f in self.cmd if f != ld], capture_output=True, text=True, timeout=600)
            if retry.returncode == 0 and self.out.exists():
                _fast_ld = ""
                ok = True
            stdout, stderr = retry.stdout, retry.stderr
        self.seconds = time.perf_counter() - self.t0
        if not ok:
            raise compile_error_from_output((stderr or "") + (stdout or ""), self.src)


class NativeCompiler:
    """Compiles C++ into shared libraries and loads them (kernel libraries, Treadle's own native products).

    Independent batches compile in parallel (:meth:`start` returns at once). A precompiled header of the native
    headers is built once per compiler, flags and header version into the kernel cache (``pch/``), in the
    background the first time, and used by later builds (:meth:`pch_flags`); a build that fails with it is
    retried without it.
    """

    name = "cpu"

    def __init__(self) -> None:
        self.last_compile_seconds = 0.0
        self.compile_count = 0
        self._pch_jobs: dict[str, threading.Thread] = {}
        self._identities: dict[Any, str] = {}
        self._toolchains: dict[str, Toolchain] = {}
        self._loop_cxx: str | None = None
        self._loop_sig: dict[str, str] = {}
        self._pch_lock = threading.Lock()
        self._pch_checked: set[str] = set()  # precompiled headers found valid by this process

    def toolchain(self, options: CompileOptions | None = None) -> Toolchain:
        """The default toolchain, or the one ``options.cxx`` asks for."""
        from .cache import get_cache

        default = get_toolchain(get_cache().root)
        name = options.cxx if options is not None else None
        if not name:
            return default
        tc = self._toolchains.get(name)
        if tc is None:
            from .toolchain import _version_of

            path = shutil.which(name)
            if path is None:
                return default
            tc = self._toolchains[name] = Toolchain(path, _version_of(path, get_cache().root))
        return tc

    def loop_compiler(self) -> str | None:
        """The compiler for kernels with run-time ``for`` loops (``None``: the default one).

        Measured on the n-body kernel (``docs/cpu_backend.md``): g++ 12 vectorizes a kernel's inner ``for`` loop
        that accumulates into a float (16 iterations at a time, the sum still taken in program order) where
        clang++ 14 leaves it scalar, so such kernels run ~1.5x faster when built with g++, while clang++ compiles
        kernels ~25% faster (CPU time). Used only when no compiler is configured (``wp.config.cxx`` / ``$CXX``) and
        the default one is clang++.
        """
        if config.cxx or not LOOP_KERNELS_WITH_GXX:
            return None
        if self._loop_cxx is None:
            try:
                default_is_clang = self.toolchain().is_clang
            except Exception:  # noqa: BLE001 - no compiler at all: reported by the build
                default_is_clang = False
            self._loop_cxx = "g++" if default_is_clang and shutil.which("g++") else ""
        return self._loop_cxx or None

    def loop_compiler_signature(self) -> str:
        """The loop compiler's path, size and modification time (no subprocess; ``-`` when there is none)."""
        name = self.loop_compiler()
        if name is None:
            return "-"
        sig = self._loop_sig.get(name)
        if sig is None:
            path = shutil.which(name) or name
            try:
                st = os.stat(path)
                sig = f"{path}:{st.st_mtime_ns}:{st.st_size}"
            except OSError:
                sig = path
            self._loop_sig[name] = sig
        return sig

    def prime_loop_compiler(self, name: str, signature: str | None) -> None:
        """Take the loop compiler a matching environment stamp remembered (``runtime/warm_env.py``)."""
        self._loop_cxx = name
        if name and signature is not None:
            self._loop_sig[name] = signature

    def forget_toolchains(self) -> None:
        """Find compilers and identities again on next use."""
        self._identities.clear()
        self._toolchains.clear()
        self._loop_cxx = None
        self._loop_sig.clear()

    def identity(self, options: CompileOptions) -> str:
        """What identifies binaries of this backend: compiler, CPU, flags."""
        key = (config.cxx, config.kernel_cache_dir, options.key())
        ident = self._identities.get(key)
        if ident is None:
            ident = self._identities[key] = f"cpu|{self.toolchain(options).identity}|{options.key()}"
        return ident

    def compile(self, source: str, out: Path, options: CompileOptions) -> None:
        """Compile ``source`` into the shared library ``out``; raise :class:`CompileError` on failure."""
        self.start(source, out, options.flags(), options).wait()
        self.compile_count += 1

    def compile_raw(self, source: str, out: Path, flags: list[str]) -> None:
        """Compile ``source`` with exactly ``flags`` (plus the native include directory) into ``out``."""
        job = self.start(source, out, flags)
        job.wait()
        self.last_compile_seconds = job.seconds

    def start(self, source: str, out: Path, flags: list[str], options: CompileOptions | None = None) -> CompileJob:
        """Start compiling ``source`` into ``out`` (``.wait()`` the job); the source is kept next to ``out``."""
        tc = self.toolchain(options)
        src = out.with_suffix(".cpp")
        src.write_text(source)
        ld = fast_linker_flag() if "-shared" in flags else ""
        cmd = [tc.path, *flags, *([ld] if ld else []), "-I", str(NATIVE_DIR), "-o", str(out), str(src)]
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            return CompileJob(None, src, out, str(e))
        return CompileJob(proc, src, out, cmd=cmd)

    # Precompiled header -------------------------------------------------------------------------------------------
    def _pch_paths(self, prelude: str, options: CompileOptions, header_hash: str) -> tuple[Path, Path, list[str]]:

        tc = self.toolchain(options)
        flags = [f for f in options.flags() if f != "-shared"]
        h = hashlib.sha256("\0".join([config.version, tc.identity, " ".join(flags), header_hash, prelude]).encode())
        d = shared_cache().root / "pch" / h.hexdigest()[:32]
        header = d / "treadle_prelude.h"
        pch = d / ("treadle_prelude.h.pch" if tc.is_clang else "treadle_prelude.h.gch")
        use = ["-include-pch", str(pch)] if tc.is_clang else ["-include", str(header)]
        return header, pch, use + (["-Winvalid-pch"] if not tc.is_clang else [])

    def pch_flags(self, prelude: str, options: CompileOptions, header_hash: str, start: bool = True
                  ) -> list[str] | None:
        """Flags that include ``prelude`` precompiled, or ``None`` while it is not built.

        With ``start``, a missing header starts building in the background. The pipeline asks with ``start=False``
        before a batch and starts the build after it: a first build cannot use the header anyway, and on a 2-core
        machine a header built alongside the batch's compilers only slows them down.
        """
        if not config.use_precompiled_headers or options.mode == "debug":
            return None
        header, pch, use = self._pch_paths(prelude, options, header_hash)
        if pch.exists():
            cache = shared_cache()
            # a header another user could have replaced is never used (nor rebuilt over: that is theirs)
            if not (cache.trusted(pch) and cache.trusted(header)):
                return None
            if str(pch) in self._pch_checked or self._pch_valid(pch, self.toolchain(options).is_clang):
                self._pch_checked.add(str(pch))
                return use
            # not a precompiled header of this compiler (damaged): g++ would quietly parse the headers instead, at
            # every build, so it is replaced
            with contextlib.suppress(OSError):
                pch.unlink()
            with self._pch_lock:
                self._pch_jobs.pop(str(pch), None)
        if not start:
            return None
        key = str(pch)
        with self._pch_lock:
            if key not in self._pch_jobs:
                # not a daemon: a short program waits for it at exit, and the next process finds it built
                t = threading.Thread(target=self._build_pch, args=(prelude, options, header, pch), daemon=False,
                                     name="treadle-pch")
                self._pch_jobs[key] = t
                t.start()
        return None

    @staticmethod
    def _pch_valid(pch: Path, clang: bool) -> bool:
        """Whether ``pch`` starts as the compiler's precompiled headers do (``CPCH`` for clang, ``gpch`` for g++)."""
        try:
            with open(pch, "rb") as f:
                magic = f.read(4)
        except OSError:
            return False
        return magic == (b"CPCH" if clang else b"gpch")

    def wait_pch(self) -> None:
        """Wait for background header builds (tests, benchmarks)."""
        for t in list(self._pch_jobs.values()):
            t.join()

    def drop_pch(self, prelude: str, options: CompileOptions, header_hash: str) -> None:
        """Forget a precompiled header that a compiler rejected (it is rebuilt on a later build)."""
        header, pch, _ = self._pch_paths(prelude, options, header_hash)
        with contextlib.suppress(OSError):
            pch.unlink()
        self._pch_checked.discard(str(pch))
        with self._pch_lock:
            self._pch_jobs.pop(str(pch), None)

    def _build_pch(self, prelude: str, options: CompileOptions, header: Path, pch: Path) -> None:

        try:
            from .cache import _make_private_dir, tmp_path

            _make_private_dir(header.parent)
            with shared_cache().lock(f"pch_{header.parent.name}"):
                if pch.exists():
                    return
                if not header.exists() or not shared_cache().trusted(header):
                    tmp_h = tmp_path(header)
                    tmp_h.write_text(prelude)
                    os.replace(tmp_h, header)
                tmp = tmp_path(pch)
                flags = [f for f in options.flags() if f != "-shared"]
                cmd = [self.toolchain(options).path, *flags, "-I", str(NATIVE_DIR), "-x", "c++-header", str(header), "-o",
                       str(tmp)]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if proc.returncode == 0 and tmp.exists():
                    os.replace(tmp, pch)
                else:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
        except Exception:  # noqa: BLE001 - a missing precompiled header only costs time
            pass

    def load(self, path: Path) -> Any:
        """Load a built library."""
        return load_native_library(str(path), getattr(ctypes, "RTLD_LOCAL", 0))

    def symbol(self, lib: Any, name: str) -> Any:
        return getattr(lib, name)


def compile_error_from_output(output: str, src: Path) -> CompileError:
    """A :class:`CompileError` that leads with the Python line recovered from ``#line`` directives."""
    m = _ERROR_RE.search(output)
    if m is not None:
        loc = SourceLoc(m.group("file"), int(m.group("line")), max(int(m.group("col") or 1) - 1, 0))
        return CompileError(
            f"the C++ compiler rejected the code generated for this line: {m.group('msg')}\n"
            f"(this is a Treadle bug for valid kernels; generated source: {src})",
            output,
            loc,
        )
    return CompileError(f"the C++ compiler failed on generated code (source: {src})", output)


_shared: tuple[str | None, Any] | None = None


def shared_cache() -> Any:
    """Where Treadle's own build products live (thread-pool runtime library, precompiled headers).

    They depend only on the compiler, flags and Treadle's headers, never on user code, so every kernel cache
    directory a user configures shares the ones in the per-user default cache directory (``~/.cache/treadle/...``):
    they are built once per installation, as warp-lang ships its runtime prebuilt. When that directory cannot be
    used privately, the configured kernel cache holds them.
    """
    global _shared
    from .cache import KernelCache, get_cache, unsafe_reason

    cache = get_cache()
    if not config.kernel_cache_dir:
        return cache
    if _shared is None or _shared[0] != config.kernel_cache_dir:
        chosen = cache
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "treadle" / config.version
        try:
            from .cache import _make_private_dir

            _make_private_dir(root)
            if unsafe_reason(root) is None and os.access(root, os.W_OK):
                chosen = KernelCache(root)
        except (OSError, ImportError):
            pass
        _shared = (config.kernel_cache_dir, chosen)
    return _shared[1]


_compiler: NativeCompiler | None = None


def get_native_compiler() -> NativeCompiler:
    """The process-wide native compiler."""
    global _compiler
    if _compiler is None:
        _compiler = NativeCompiler()
    return _compiler


_header_hash: str | None = None


def header_hash() -> str:
    """SHA-256 over the native headers (part of every kernel key).

    Reading and hashing every header costs milliseconds at each process start, so the digest is remembered in the
    kernel cache under a signature of the headers' names, sizes and modification times (any change re-hashes).
    """
    global _header_hash
    if _header_hash is None:
        from .cache import get_cache, tmp_path

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
                tmp = tmp_path(memo)
                tmp.write_text(_header_hash)
                os.replace(tmp, memo)
            except OSError:
                pass
    return _header_hash


def prime_header_hash(digest: str | None) -> None:
    """Take the header digest a matching environment stamp remembered (``warm_env.py``); ``None`` forgets."""
    global _header_hash
    _header_hash = digest
