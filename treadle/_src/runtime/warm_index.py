"""Warm start: from a kernel's fingerprint straight to its cached binary, without lowering or emitting.

The kernel cache (``cache.py``) is keyed by the generated C++; finding that key means parsing, lowering and
emitting every kernel, which costs milliseconds per kernel at each process start. This index maps a *warm-start
key* to the kernel key, its library and the little launch metadata a launch needs, so a process whose kernels are
all cached loads their libraries directly.

The key is made above this layer, which only maps it to the cache's entries: the compiler fingerprints what
lowering reads (``compiler/fingerprint.py``, Treadle's own lowering sources included) and the backend adds what its
build depends on (``backends/cpu/warm.py``: the compiler identity, flags, the native headers and the backend's own
sources). Entries live in ``<cache>/warm/`` as small JSON files written atomically; an entry whose library changed
(size, modification time, inode) since it was recorded, or that the kernel cache no longer points at, is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from .cache import get_cache, unsafe_reason

FORMAT = "treadle-warm-3"

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

    ``meta`` is what a launch needs without lowering (``launch_ndim``, ``order_dependent``,
    ``heavy_threads``), the kernel's ``name``
    and the compiler that built it (``cxx``); optionally what a recording tape needs (``access``: lists of parameter
    indices) and a backward pass's dropped-gradient warnings (``warnings``: their texts).
    """
    if lib is None:
        return
    with contextlib.suppress(OSError, TypeError, ValueError):
        from .cache import _make_private_dir, tmp_path

        cache = get_cache()
        if cache.lookup(key) != lib:  # verified (owner, permissions, checksum) once, when the entry is written
            return
        st = os.stat(lib)
        ref = (cache.root / "ref" / f"k_{key}.ref").read_text()
        entry = {"format": FORMAT, "fp": fp, "key": key, "symbol": symbol, "lib": lib.name, "ref": ref,
                 "stat": [st.st_size, st.st_mtime_ns, st.st_ino], "launch_ndim": int(meta["launch_ndim"]),
                 "order_dependent": bool(meta["order_dependent"]),
                 "heavy_threads": bool(meta.get("heavy_threads", False)), "name": meta.get("name", ""),
                 "cxx": meta.get("cxx")}
        if meta.get("access") is not None:
            entry["access"] = [sorted(int(i) for i in part) for part in meta["access"]]
        if meta.get("warnings"):
            entry["warnings"] = [str(t) for t in meta["warnings"]]
        d = cache.root / "warm"
        _make_private_dir(d)
        path = d / f"w_{fp[:40]}.json"
        tmp = tmp_path(path)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(entry))
        os.replace(tmp, path)


__all__ = ["FORMAT", "lookup", "record"]
