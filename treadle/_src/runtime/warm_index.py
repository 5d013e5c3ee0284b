"""Warm start: from a kernel's fingerprint straight to its cached binary, without lowering or emitting.

The kernel cache (``cache.py``) is keyed by the generated C++; finding that key means parsing, lowering and
emitting every kernel, which costs milliseconds per kernel at each process start. This index maps a *warm-start
key* to the kernel key, its library and the little launch metadata a launch needs, so a process whose kernels are
all cached loads their libraries directly.

The key is made above this layer: the compiler fingerprints what lowering reads (``compiler/fingerprint.py``) and
the backend adds what its build depends on (``backends/cpu/warm.py``: the compiler identity, flags, the native
headers and :func:`treadle_signature`, the names, sizes and modification times of Treadle's code-generating
sources). Entries live in ``<cache>/warm/`` as small JSON files written atomically; an entry whose library changed
(size, modification time, inode) since it was recorded, or that the kernel cache no longer points at, is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .cache import get_cache, unsafe_reason

FORMAT = "treadle-warm-3"

_toolkit_sig: str | None = None

#: The parts of Treadle that decide what a CPU kernel compiles to: the error and ABI layer, types, builtins, the
#: compiler, the front end, the geometry types and functions, the CPU backend, the compile flags and toolchain, this
#: index and the configuration (not the CUDA and interpreter backends: they never change a CPU binary).
_CODEGEN_PARTS = ("_src/core", "_src/types", "_src/builtins", "_src/compiler", "_src/lang", "_src/geometry",
                  "_src/backends/cpu", "_src/runtime/native.py", "_src/runtime/toolchain.py",
                  "_src/runtime/warm_index.py", "config.py")


def _add_sources(path: str, add: Any) -> None:
    """``name:size:mtime`` of each ``.py`` file under directory ``path``, sorted, descending into subpackages.

    ``os.listdir`` and ``os.stat`` on plain strings: the least Python around the one ``stat`` per file.
    """
    stat = os.stat
    names = os.listdir(path)
    names.sort()
    for name in names:
        if name.endswith(".py"):
            st = stat(f"{path}/{name}")  # follows links, as the import system does
            add(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        elif "." not in name and name != "__pycache__":
            sub = f"{path}/{name}"
            try:
                st = os.lstat(sub)
            except OSError:
                continue
            if st.st_mode & 0o170000 == 0o040000:  # a directory (not a link to one)
                add(name + "/")
                _add_sources(sub, add)
                add("..")


def sources_signature(root: str, parts: tuple[str, ...] = _CODEGEN_PARTS) -> str:
    """A digest of the names, sizes and modification times of the ``.py`` files of ``parts`` of directory ``root``."""
    seen: list[str] = []
    add = seen.append
    for part in parts:
        path = f"{root}/{part}"
        add(part)
        try:
            st = os.stat(path)
        except OSError:
            add("-")
            continue
        if st.st_mode & 0o170000 == 0o040000:  # a directory
            _add_sources(path, add)
        else:
            add(f"{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(seen).encode()).hexdigest()


def treadle_signature() -> str:
    """Names, sizes and modification times of Treadle's code-generating sources (once per process).

    The native headers are covered by ``native.header_hash``. One ``stat`` per source file (an edit in place
    changes no directory, so nothing cheaper is safe), with as little Python around each as possible: every warm
    start pays for it.
    """
    global _toolkit_sig
    if _toolkit_sig is None:
        # the ``treadle`` package
        _toolkit_sig = sources_signature(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return _toolkit_sig


def forget_signature() -> None:
    """Take :func:`treadle_signature` again on next use (tests)."""
    global _toolkit_sig
    _toolkit_sig = None


# ---------------------------------------------------------------------------------------------- the index
_HEX_DIGITS = frozenset("0123456789abcdef")


def _hex(s: Any, lo: int, hi: int) -> bool:
    """Whether ``s`` is lowercase hexadecimal of ``lo`` to ``hi`` digits (no regular expression to compile at start)."""
    return isinstance(s, str) and lo <= len(s) <= hi and _HEX_DIGITS.issuperset(s)


def _root() -> str:
    return str(get_cache().root)


def _read_trusted(path: str) -> str | None:
    """A cache file's text, if it is ours and not writable by group or others (the kernel cache's own rule)."""
    try:
        fd = os.open(path, os.O_RDONLY)  # no file object: these small reads are on every warm start's path
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if unsafe_reason(path, st) is not None:
            return None
        chunks = []
        while True:
            want = max(st.st_size + 1, 4096)
            b = os.read(fd, want)
            chunks.append(b)
            if len(b) < want:  # the end of a regular file (cache files are replaced, never appended to)
                break
        return b"".join(chunks).decode()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def lookup(fp: str) -> dict[str, Any] | None:
    """The recorded entry for ``fp`` when its library is still the one recorded, else ``None``."""
    root = _root()
    text = _read_trusted(os.path.join(root, "warm", f"w_{fp[:40]}.json"))
    if text is None:
        return None
    try:
        entry = json.loads(text)
        if entry.get("format") != FORMAT or entry.get("fp") != fp:
            return None
        name, key = entry["lib"], entry["key"]
        # a library name inside the cache's library directory, a full-width key
        if not (isinstance(name, str) and name.startswith("b_") and name.endswith(".so") and _hex(name[2:-3], 16, 64)
                and _hex(key, 64, 64)):
            return None
        lib = os.path.join(root, "lib", name)
        st = os.stat(lib)
        if [st.st_size, st.st_mtime_ns, st.st_ino] != entry["stat"] or unsafe_reason(lib, st) is not None:
            return None
        # the kernel cache still points this kernel at that library (not cleared, found damaged or rebuilt)
        if _read_trusted(os.path.join(root, "ref", f"k_{key}.ref")) != entry["ref"]:
            return None
        entry["lib_path"] = Path(lib)
    except (OSError, KeyError, TypeError, ValueError, AttributeError):
        return None
    return entry


def record(fp: str, key: str, lib: Path | None, symbol: str, meta: dict[str, Any]) -> None:
    """Remember the library ``lib`` of kernel key ``key`` under ``fp`` (best effort: a failure costs a warm start).

    ``meta`` is what a launch needs without lowering (``launch_ndim``, ``order_dependent``), the kernel's ``name``
    and the compiler that built it (``cxx``).
    """
    if lib is None:
        return
    with contextlib.suppress(OSError, TypeError, ValueError):
        from .cache import _make_private_dir

        cache = get_cache()
        if cache.lookup(key) != lib:  # verified (owner, permissions, checksum) once, when the entry is written
            return
        st = os.stat(lib)
        ref = (cache.root / "ref" / f"k_{key}.ref").read_text()
        entry = {"format": FORMAT, "fp": fp, "key": key, "symbol": symbol, "lib": lib.name, "ref": ref,
                 "stat": [st.st_size, st.st_mtime_ns, st.st_ino], "launch_ndim": int(meta["launch_ndim"]),
                 "order_dependent": bool(meta["order_dependent"]), "name": meta.get("name", ""),
                 "cxx": meta.get("cxx")}
        d = cache.root / "warm"
        _make_private_dir(d)
        path = d / f"w_{fp[:40]}.json"
        tmp = d / f"{path.name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(entry))
        os.replace(tmp, path)


__all__ = ["FORMAT", "lookup", "record", "sources_signature", "treadle_signature"]
