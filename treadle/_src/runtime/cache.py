"""The on-disk kernel cache: content-addressed, atomically published, safe under concurrent processes.

Layout under the cache directory::

    lib/b_<batch>.so      a shared library holding one or more kernels
    ref/k_<kernel>.ref    "<library file> <sha256 of the library>" for each kernel key
    lock/<key>.lock       advisory locks so concurrent processes compile a batch once

A kernel key is a full-width SHA-256 of its generated C++ block, the native headers, the compiler identity and
flags, and the Treadle version: anything that could change the binary. Entries are written to a temporary file and
renamed into place, so a reader sees either nothing or a complete file. A reference whose library is missing or
whose checksum does not match is treated as absent (and recompiled), never loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ... import config


def default_cache_dir() -> Path:
    """``config.kernel_cache_dir``, else ``$XDG_CACHE_HOME/treadle/<version>`` (``~/.cache/...``)."""
    if config.kernel_cache_dir:
        return Path(config.kernel_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "treadle" / config.version


class KernelCache:
    """Access to one cache directory."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self._made = False
        self._hash_memo: dict[str, str] = {}

    def _dirs(self) -> None:
        if not self._made:
            for sub in ("lib", "ref", "lock", "tmp"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            self._made = True

    def lookup(self, key: str) -> Path | None:
        """The library holding kernel ``key``, if a valid one is published."""
        ref = self.root / "ref" / f"k_{key}.ref"
        try:
            text = ref.read_text().split()
        except OSError:
            return None
        if len(text) != 2:
            self._discard(ref)
            return None
        lib = self.root / "lib" / text[0]
        if self._file_hash(lib) != text[1]:
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
        os.replace(built, final)
        for key in kernel_keys:
            ref = self.root / "ref" / f"k_{key}.ref"
            tmp = ref.with_name(f"{ref.name}.{os.getpid()}.tmp")
            tmp.write_text(f"{final.name} {digest}\n")
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


def get_cache() -> KernelCache:
    """The cache for the current ``config.kernel_cache_dir`` (re-created when the setting changes)."""
    global _cache
    root = default_cache_dir()
    if _cache is None or _cache.root != root:
        _cache = KernelCache(root)
    return _cache


def clear_kernel_cache() -> None:
    """Delete all compiled kernels from the kernel cache directory."""
    get_cache().clear()
