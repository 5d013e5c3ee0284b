"""The on-disk kernel cache: content-addressed, atomically published, safe under concurrent processes.

Layout under the cache directory::

    lib/b_<batch>.so      a shared library holding one or more kernels
    ref/k_<kernel>.ref    "<library file> <sha256 of the library>" for each kernel key
    lock/<key>.lock       advisory locks so concurrent processes compile a batch once

A kernel key is a full-width SHA-256 of its generated C++ block, the native headers, the compiler identity and
flags, and the Treadle version: anything that could change the binary. Entries are written to a temporary file and
renamed into place, so a reader sees either nothing or a complete file. A reference whose library is missing or
whose checksum does not match is treated as absent (and recompiled), never loaded.

Security: the directory is created user-only (``0700``) and published files are user-only too. A cache directory
owned by another user or writable by group/others is not used at all (a warning says why, and this process
compiles into a private temporary directory instead); a reference or library file in it that is not ours or is
writable by group/others is never loaded (a warning says why, and the entry is rebuilt).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

from ... import config


def default_cache_dir() -> Path:
    """``config.kernel_cache_dir``, else ``$XDG_CACHE_HOME/treadle/<version>`` (``~/.cache/...``)."""
    if config.kernel_cache_dir:
        return Path(config.kernel_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "treadle" / config.version


def _warn(msg: str) -> None:
    warnings.warn(msg, RuntimeWarning, stacklevel=3)
    if not sys.warnoptions:  # make sure it is seen even where warnings are filtered
        print(f"treadle: warning: {msg}", file=sys.stderr)


def unsafe_reason(path: str | Path, st: os.stat_result | None = None) -> str | None:
    """Why ``path`` must not be trusted (another user's, or writable by group/others), or ``None`` if it is safe."""
    if st is None:
        st = os.stat(path)
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid != getuid():
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"it is writable by {'group' if st.st_mode & 0o020 else 'others'} (mode {oct(st.st_mode & 0o777)})"
    return None


def tmp_path(path: Path) -> Path:
    """A name next to ``path`` to write it under before renaming it into place, unique to this process and thread.

    A name unique per process only is not enough: two threads publishing the same entry would write one file, and
    one of them could rename the other's half-written file into place (or find it already renamed away).
    """
    return path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _make_private_dir(path: Path) -> None:
    """Create ``path`` and any missing parents with user-only permissions (``0700``)."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=0o700)


def _secure_root(requested: Path) -> Path:
    """``requested`` if it is (or could be created as) a private directory, else a fresh private temporary one."""
    try:
        _make_private_dir(requested)
        problem = unsafe_reason(requested)
    except OSError as e:
        problem = f"it cannot be created or read ({e.strerror or e})"
    if problem is None:
        return requested
    fallback = Path(tempfile.mkdtemp(prefix="treadle-cache-"))
    atexit.register(shutil.rmtree, fallback, True)
    _warn(f"not using the kernel cache directory {requested}: {problem}, so another user could replace compiled "
          f"kernels; this process compiles into the private directory {fallback} instead. Fix: make the directory "
          f"yours and user-only (chmod 700 '{requested}'), or set wp.config.kernel_cache_dir to a private directory")
    return fallback


class KernelCache:
    """Access to one cache directory."""

    def __init__(self, root: Path | None = None) -> None:
        #: The directory asked for; :attr:`root` is the one used (a private fallback when that one is unsafe).
        self.requested = Path(root) if root is not None else default_cache_dir()
        self.root = _secure_root(self.requested)
        self._made = False
        self._hash_memo: dict[str, str] = {}
        self._warned: set[str] = set()

    def _dirs(self) -> None:
        if not self._made:
            for sub in ("lib", "ref", "lock", "tmp"):
                _make_private_dir(self.root / sub)
            self._made = True

    def trusted(self, path: Path) -> bool:
        """Whether a cache file may be loaded (a missing file is not trusted, silently)."""
        try:
            problem = unsafe_reason(path)
        except OSError:
            return False
        if problem is not None:
            if str(path) not in self._warned:
                self._warned.add(str(path))
                _warn(f"not loading the cache entry {path}: {problem}, so another user could have replaced it; "
                      "rebuilding it")
            return False
        return True

    def lookup(self, key: str) -> Path | None:
        """The library holding kernel ``key``, if a valid one is published (ours, not writable by others)."""
        ref = self.root / "ref" / f"k_{key}.ref"
        try:
            text = ref.read_text().split()
        except OSError:
            return None
        if not self.trusted(ref):
            self._discard(ref)
            return None
        if len(text) != 2:
            self._discard(ref)
            return None
        lib = self.root / "lib" / text[0]
        if not self.trusted(lib) or self._file_hash(lib) != text[1]:
            self._discard(ref)
            return None
        return lib

    def _file_hash(self, path: Path) -> str | None:
        try:
            st = path.stat()
            memo_key = f"{path}:{st.st_mtime_ns}:{st.st_size}"
            hit = self._hash_memo.get(memo_key)
            if hit is None:
                hit = hashlib.sha256(path.read_bytes()).hexdigest()
                self._hash_memo[memo_key] = hit
            return hit
        except OSError:
            return None

    def _discard(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()

    def tmp_dir(self) -> Path:
        """A fresh private directory for one compilation."""
        self._dirs()
        return Path(tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=self.root / "tmp"))

    def publish(self, built: Path, batch_key: str, kernel_keys: list[str]) -> Path:
        """Move a built library into place and point each kernel key at it (atomic renames)."""
        self._dirs()
        final = self.root / "lib" / f"b_{batch_key}.so"
        digest = hashlib.sha256(built.read_bytes()).hexdigest()
        os.chmod(built, 0o700)
        os.replace(built, final)
        for key in kernel_keys:
            ref = self.root / "ref" / f"k_{key}.ref"
            tmp = tmp_path(ref)
            tmp.write_text(f"{final.name} {digest}\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, ref)
        return final

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """An exclusive advisory lock for compiling ``key`` (no-op where ``fcntl`` is unavailable)."""
        self._dirs()
        path = self.root / "lock" / f"{key}.lock"
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        with open(path, "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def clear(self) -> None:
        """Remove every cache entry."""
        if self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
        self._made = False
        self._hash_memo.clear()


_cache: KernelCache | None = None


_cache_setting: str | None = None


def get_cache() -> KernelCache:
    """The cache for the current ``config.kernel_cache_dir`` (re-created when the setting changes)."""
    global _cache, _cache_setting
    setting = config.kernel_cache_dir
    if setting and _cache is not None and setting is _cache_setting:  # the same setting as last time: no path work
        return _cache
    root = default_cache_dir()
    if _cache is None or _cache.requested != root:
        _cache = KernelCache(root)
    _cache_setting = setting if isinstance(setting, str) else None
    return _cache


def clear_kernel_cache() -> None:
    """Delete all compiled kernels from the kernel cache directory."""
    get_cache().clear()
