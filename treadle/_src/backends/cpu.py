"""The CPU backend: C++ source -> shared library (system compiler) -> ctypes entry points.

The backend interface (shared with the CUDA backend) is small: ``compile(source, out_path, options)``,
``load(path)`` and ``symbol(lib, name)``.
"""

from __future__ import annotations

import ctypes
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from ... import config
from ..errors import CompileError, SourceLoc
from .toolchain import Toolchain, get_toolchain

NATIVE_DIR = Path(__file__).resolve().parent.parent.parent / "native"

_ERROR_RE = re.compile(r"^(?P<file>[^:\n]+\.py):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$",
                       re.M)


class CompileOptions:
    """Options that change the binary (all of them are part of the cache key)."""

    def __init__(self, mode: str = "release", opt_level: int | None = None, extra: list[str] | None = None) -> None:
        self.mode = mode
        self.opt_level = opt_level if opt_level is not None else (1 if mode == "debug" else 3)
        self.extra = list(extra or [])

    def flags(self) -> list[str]:
        flags = ["-std=c++17", f"-O{self.opt_level}", "-march=native", "-fPIC", "-shared",
                 "-fno-math-errno", "-fvisibility=hidden", "-w"]
        if self.mode == "debug":
            flags += ["-DTREADLE_CHECKED", "-g"]
        return flags + self.extra

    def key(self) -> str:
        return " ".join(self.flags())


class CpuBackend:
    """Compiles and loads kernels for the ``cpu`` device."""

    name = "cpu"

    def __init__(self) -> None:
        self.last_compile_seconds = 0.0
        self.compile_count = 0

    def toolchain(self) -> Toolchain:
        from ..runtime.cache import get_cache

        return get_toolchain(get_cache().root)

    def identity(self, options: CompileOptions) -> str:
        """What identifies binaries of this backend: compiler, CPU, flags."""
        return f"cpu|{self.toolchain().identity}|{options.key()}"

    def compile(self, source: str, out: Path, options: CompileOptions) -> None:
        """Compile ``source`` into the shared library ``out``; raise :class:`CompileError` on failure."""
        self.compile_raw(source, out, options.flags())

    def compile_raw(self, source: str, out: Path, flags: list[str]) -> None:
        """Compile ``source`` with exactly ``flags`` (plus the native include directory) into ``out``."""
        tc = self.toolchain()
        src = out.with_suffix(".cpp")
        src.write_text(source)
        cmd = [tc.path, *flags, "-I", str(NATIVE_DIR), "-o", str(out), str(src)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as e:
            raise CompileError(f"could not run the C++ compiler: {e}") from None
        self.last_compile_seconds = time.perf_counter() - t0
        self.compile_count += 1
        if proc.returncode != 0 or not out.exists():
            output = (proc.stderr or "") + (proc.stdout or "")
            raise compile_error_from_output(output, src)

    def load(self, path: Path) -> Any:
        """Load a built library."""
        return ctypes.CDLL(str(path), mode=getattr(ctypes, "RTLD_LOCAL", 0))

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


_backend: CpuBackend | None = None


def get_cpu_backend() -> CpuBackend:
    """The process-wide CPU backend object."""
    global _backend
    if _backend is None:
        _backend = CpuBackend()
    return _backend
