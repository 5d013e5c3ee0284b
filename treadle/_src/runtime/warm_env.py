"""The build environment's stamp: how a warm start skips re-deriving facts it derived in an earlier process.

Before a process can fingerprint a kernel for the warm-start index (``warm_index.py``) it needs the content hash of
the native headers, the C++ compiler's path and version, this CPU's fingerprint and the compiler for kernels with
loops. Deriving them means hashing (or looking up) the headers, reading ``/proc/cpuinfo`` and a JSON memo and
searching ``$PATH`` several times: about 1.5 ms of every start.

The *stamp* is a hash of cheap facts about everything those depend on: the names, sizes, modification times and
inodes of the native headers and sources (``native/*.h``, ``native/*.cpp``); Treadle's code-generating sources
(the digest the CPU backend registers with :func:`register_sources`: ``backends/cpu/warm.py``); where ``$PATH`` finds each compiler (searched once, for all names) and the status
of that binary; the boot id (a reboot may bring another CPU); the compiler settings. ``<cache>/warm/env_<stamp>.json`` remembers the derived facts under it. A
process whose stamp matches takes them from there; any change (a header touched or edited, a compiler upgraded,
replaced or shadowed by another one earlier in ``$PATH``, a reboot, an edit of Treadle) gives another stamp: the
facts are derived the normal way and remembered under the new stamp. A memo that is not ours, is writable by others
or does not parse is ignored, like every cache file.

The memo also remembers where Treadle's own native products are (runtime library, launch extension:
``threadpool.shared_library``), so that a warm start does not read and hash their sources to find their content key:
:func:`product` / :func:`remember_product`, keyed by the product's settings, under the stamp that covers its sources
and the compiler.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

from ... import config

FORMAT = "treadle-env-1"

#: ``toolchain.find_compiler``'s search order when no compiler is configured.
_DEFAULT_COMPILERS = ("clang++", "g++")
_FALLBACK_COMPILER = "c++"

#: ``(signature, forget)`` of Treadle's code-generating sources (:func:`register_sources`); no stamp without it
_sources: tuple[Any, Any] | None = None


def register_sources(signature: Any, forget: Any) -> None:
    """Register the digest of Treadle's code-generating sources (``signature()``) and how to take it again."""
    global _sources
    _sources = (signature, forget)


# config.cxx -> (cache root, stamp, facts) still to record, or None once primed or recorded (the facts do not depend on
# the cache: a process primes once per compiler setting)
_state: dict[Any, tuple[str, str, dict[str, Any]] | None] = {}
# config.cxx -> (cache root, stamp, memo) of the memo this process read or wrote: where products are remembered
_loaded: dict[Any, tuple[str, str, dict[str, Any]]] = {}
# :func:`prime` runs once per compiler setting while other threads wait (re-entrant: priming may ask for facts)
_PRIME_LOCK = threading.RLock()
_priming: set[Any] = set()


def _search_path() -> list[str]:
    """``$PATH`` as ``shutil.which`` reads it."""
    path = os.environ.get("PATH", None)
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    return path.split(os.pathsep) if path else []


def _executable(path: str) -> os.stat_result | None:
    """``path``'s status if ``shutil.which`` would accept it (exists, executable, not a directory)."""
    try:
        if not os.access(path, os.F_OK | os.X_OK):  # no exception for the usual miss: cheaper than stat first
            return None
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return None if stat.S_ISDIR(st.st_mode) else st


def which_many(names: tuple[str, ...]) -> dict[str, tuple[str, os.stat_result]]:
    """What ``shutil.which`` finds for each plain command name, in one pass over ``$PATH``, with its status."""
    found: dict[str, tuple[str, os.stat_result]] = {}
    left = list(names)
    seen: set[str] = set()
    access, join, mode = os.access, os.path.join, os.F_OK | os.X_OK
    for d in _search_path():
        if d in seen:
            continue
        seen.add(d)
        for name in left:
            p = join(d, name)
            if not access(p, mode):  # the usual miss: one system call, no exception
                continue
            st = _executable(p)
            if st is not None:
                found[name] = (p, st)
        if found:
            left = [n for n in left if n not in found]
            if not left:
                break
    return found


def _boot_id() -> str | None:
    try:
        fd = os.open("/proc/sys/kernel/random/boot_id", os.O_RDONLY)  # no file object: three system calls, not seven
    except OSError:
        return None
    try:
        return os.read(fd, 64).decode().strip() or None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _st(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_dev}"


def compute_stamp() -> tuple[str, dict[str, Any]] | None:
    """The stamp and the compilers it saw (``None`` where it cannot be taken: no boot id, no compiler found)."""
    from .native import LOOP_KERNELS_WITH_GXX, NATIVE_DIR

    boot = _boot_id()
    if boot is None or _sources is None:
        return None
    parts = [FORMAT, config.version, repr(config.cxx), str(LOOP_KERNELS_WITH_GXX), _sources[0](), boot]
    native = str(NATIVE_DIR)
    names = os.listdir(native)
    names.sort()
    stat = os.stat
    for name in names:  # headers, and the sources of Treadle's own native products (runtime library, extension)
        if name.endswith((".h", ".cpp")):
            parts.append(f"{name}:{_st(stat(f'{native}/{name}'))}")
    cxx = config.cxx
    loop: tuple[str, os.stat_result] | None = None
    default: tuple[str, os.stat_result] | None
    if cxx:
        if os.path.dirname(cxx):
            cst = _executable(cxx)
            default = (cxx, cst) if cst is not None else None
        else:
            default = which_many((cxx,)).get(cxx)
    else:
        found = which_many(_DEFAULT_COMPILERS)
        default = found.get("clang++") or found.get("g++")
        if default is None:
            default = which_many((_FALLBACK_COMPILER,)).get(_FALLBACK_COMPILER)
        if LOOP_KERNELS_WITH_GXX:
            loop = found.get("g++")
    if default is None:
        return None  # reported by the normal path
    parts.append(f"cxx:{default[0]}:{_st(default[1])}")
    parts.append(f"loop:{loop[0]}:{_st(loop[1])}" if loop is not None else "loop:-")
    stamp = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    facts = {"cxx": default[0],
             "loop_sig": f"{loop[0]}:{loop[1].st_mtime_ns}:{loop[1].st_size}" if loop is not None else None}
    return stamp, facts


def _memo_path(root: str, stamp: str) -> str:
    return os.path.join(root, "warm", f"env_{stamp[:40]}.json")


def prime() -> None:
    """Fill this process's memos of headers, toolchain, CPU and loop compiler from the memo of a matching stamp.

    Once per compiler setting; where the memo is missing, :func:`remember` records the facts after the normal path
    has derived them.
    """
    key = config.cxx
    if key in _state and not _priming:
        return
    with _PRIME_LOCK:  # other threads wait for the facts (a memo found invalid forgets them while they are derived)
        if key in _state:
            return
        _priming.add(key)
        try:
            _prime_locked(key)
        finally:
            _priming.discard(key)


def _prime_locked(key: Any) -> None:
    from .warm_index import _read_trusted, _root

    _state[key] = None
    root = _root()
    taken = compute_stamp()
    if taken is None:
        return
    stamp, facts = taken
    text = _read_trusted(_memo_path(root, stamp))
    memo: Any = None
    if text is not None:
        with contextlib.suppress(ValueError):
            memo = json.loads(text)
    if not _valid(memo, stamp, facts):
        # derived afresh, after the stamp was taken, so that what :func:`remember` records belongs to it
        _forget_facts()
        _state[key] = (root, stamp, facts)
        return
    from .native import get_native_compiler, prime_header_hash
    from .toolchain import prime_toolchain

    _loaded[key] = (root, stamp, memo)
    prime_header_hash(memo["header_hash"])
    prime_toolchain(facts["cxx"], memo["version"], memo["cpu_fp"])
    get_native_compiler().prime_loop_compiler(memo["loop_cxx"], facts["loop_sig"])


def _valid(memo: Any, stamp: str, facts: dict[str, Any]) -> bool:
    if not isinstance(memo, dict) or memo.get("format") != FORMAT or memo.get("stamp") != stamp:
        return False
    h, v, c, lc = memo.get("header_hash"), memo.get("version"), memo.get("cpu_fp"), memo.get("loop_cxx")
    return (isinstance(h, str) and len(h) == 64 and all(ch in "0123456789abcdef" for ch in h)
            and isinstance(v, str) and isinstance(c, str) and len(c) == 16 and lc in ("g++", "")
            and memo.get("cxx") == facts["cxx"] and (lc == "" or facts["loop_sig"] is not None))


def remember() -> None:
    """Record the facts the normal path derived, under the stamp :func:`prime` took (best effort)."""
    key = config.cxx
    pending = _state.get(key)
    if pending is None:
        return
    _state[key] = None
    root, stamp, facts = pending
    with contextlib.suppress(Exception):  # a memo that is not written only costs the next start
        from .cache import get_cache
        from .native import get_native_compiler, header_hash
        from .toolchain import cpu_fingerprint, get_toolchain

        tc = get_toolchain(get_cache().root)
        memo = {"format": FORMAT, "stamp": stamp, "cxx": tc.path, "version": tc.version,
                "cpu_fp": cpu_fingerprint(), "header_hash": header_hash(),
                "loop_cxx": get_native_compiler().loop_compiler() or ""}
        again = compute_stamp()  # nothing changed while the facts were derived
        if again is None or again[0] != stamp or not _valid(memo, stamp, facts):
            return
        _write(root, stamp, memo)
        _loaded[key] = (root, stamp, memo)


def _write(root: str, stamp: str, memo: dict[str, Any]) -> None:
    from .cache import _make_private_dir

    d = os.path.join(root, "warm")
    _make_private_dir(Path(d))
    path = _memo_path(root, stamp)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(memo))
    os.replace(tmp, path)


def product(stem: str, key: str) -> str | None:
    """The path of Treadle's native product ``stem`` remembered under this process's stamp for ``key``, or ``None``.

    ``key`` names the product's settings (flags, Python ABI, the names of its native sources); the stamp covers the
    compiler and the native sources' status, so a path found here is the one that hashing their text would give.
    The caller still checks that the file is there and trusted.
    """
    from .warm_index import _root

    m = _loaded.get(config.cxx)
    if m is None:
        return None
    root = _root()
    if m[0] != root:  # the memo of another kernel cache (the setting changed since it was read)
        return None
    products = m[2].get("products")
    p = products.get(key) if isinstance(products, dict) else None
    if not isinstance(p, str) or not os.path.isabs(p):
        return None
    d, name = os.path.split(p)
    if not name.startswith(f"{stem}_") or not name.endswith(".so"):
        return None
    # where ``backends.cpu.shared_cache()`` puts products now: the per-user default directory or this kernel cache
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if d not in (os.path.join(base, "treadle", config.version, "rt"), os.path.join(root, "rt")):
        return None
    return p


def remember_product(stem: str, key: str, path: str) -> None:
    """Record where native product ``stem`` lives for ``key``, under the stamp of this process (best effort)."""
    from .warm_index import _root

    k = config.cxx
    m = _loaded.get(k)
    if m is None:
        return
    root, stamp, memo = m
    if root != _root():
        return
    products = memo.get("products")
    products = dict(products) if isinstance(products, dict) else {}
    if products.get(key) == path:
        return
    products[key] = path
    new = dict(memo, products=products)
    _loaded[k] = (root, stamp, new)
    with contextlib.suppress(Exception):  # not written: the next start derives the path again
        again = compute_stamp()  # the product's sources are those the stamp saw
        if again is not None and again[0] == stamp:
            _write(root, stamp, new)


def _forget_facts() -> None:
    from .native import get_native_compiler, prime_header_hash
    from .toolchain import forget_toolchain

    forget_toolchain()
    prime_header_hash(None)
    get_native_compiler().forget_toolchains()


def forget() -> None:
    """Drop every per-process memo the stamp covers, as a fresh process starts (tests)."""
    _state.clear()
    _loaded.clear()
    if _sources is not None:
        _sources[1]()
    _forget_facts()


__all__ = ["compute_stamp", "prime", "remember", "forget", "which_many", "product", "register_sources",
           "remember_product"]
