"""Finding the host C++ compiler and describing it (identity and version enter the cache key)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from ... import config
from ..core.errors import ToolchainError


class Toolchain:
    """The C++ compiler used for CPU kernels."""

    def __init__(self, path: str, version: str) -> None:
        self.path = path
        self.version = version
        self.is_clang = "clang" in version.lower()

    @property
    def identity(self) -> str:
        """Everything about the compiler that can change a binary."""
        return f"{self.path}|{self.version}|{cpu_fingerprint()}"


_cpu_fp: str | None = None


def cpu_fingerprint() -> str:
    """A hash of this CPU's model and feature flags (we compile with ``-march=native``)."""
    global _cpu_fp
    if _cpu_fp is None:
        text = ""
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith(("flags", "model name", "Features", "CPU part")):
                        text += line
                    if line.strip() == "":
                        break
        except OSError:
            import platform

            text = platform.machine() + platform.processor()
        _cpu_fp = hashlib.sha256(text.encode()).hexdigest()[:16]
    return _cpu_fp


def find_compiler() -> str:
    """The compiler path: ``config.cxx`` (or ``$CXX``), else clang++, else g++."""
    if config.cxx:
        found = shutil.which(config.cxx)
        if not found:
            raise ToolchainError(
                f"the configured C++ compiler '{config.cxx}' was not found; install it or unset "
                "treadle.config.cxx / $CXX / $TREADLE_CXX"
            )
        return found
    for name in ("clang++", "g++", "c++"):
        found = shutil.which(name)
        if found:
            return found
    raise ToolchainError(
        "no C++ compiler found for the CPU backend: install clang++ or g++ (e.g. 'apt-get install g++'), "
        "or set treadle.config.cxx"
    )


def _version_of(path: str, cache_dir: Path | None) -> str:
    st = os.stat(path)
    key = f"{path}:{st.st_mtime_ns}:{st.st_size}"
    memo = cache_dir / "toolchains.json" if cache_dir is not None else None
    known: dict[str, str] = {}
    if memo is not None:
        try:
            known = json.loads(memo.read_text())
            if key in known:
                return known[key]
        except (OSError, ValueError):
            known = {}
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise ToolchainError(f"cannot run the C++ compiler '{path}': {e}") from None
    version = out.strip().splitlines()[0] if out.strip() else "unknown"
    if memo is not None:
        known[key] = version
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(known))
            os.replace(tmp, memo)
        except OSError:
            pass
    return version


_toolchain: Toolchain | None = None
_toolchain_key: str | None = None


def prime_toolchain(path: str, version: str, cpu_fp: str) -> None:
    """Take the toolchain and CPU fingerprint a matching environment stamp remembered (``runtime/warm_env.py``)."""
    global _toolchain, _toolchain_key, _cpu_fp
    _toolchain, _toolchain_key, _cpu_fp = Toolchain(path, version), config.cxx, cpu_fp


def forget_toolchain() -> None:
    """Find the toolchain and CPU fingerprint again on next use."""
    global _toolchain, _toolchain_key, _cpu_fp
    _toolchain, _toolchain_key, _cpu_fp = None, None, None


def get_toolchain(cache_dir: Path | None = None) -> Toolchain:
    """The active toolchain (found once per process, re-found when ``config.cxx`` changes)."""
    global _toolchain, _toolchain_key
    if _toolchain is None or _toolchain_key != config.cxx:
        path = find_compiler()
        _toolchain = Toolchain(path, _version_of(path, cache_dir))
        _toolchain_key = config.cxx
    return _toolchain
