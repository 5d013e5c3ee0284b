"""The batch builder every compiling backend shares: cache lookups, de-duplication and locking around a build.

A backend hands :func:`build_batch` its :class:`BuildItem` s (one per kernel pass, each with the cache key of its
code) and a function that builds a list of them. Items with the same key are built once and share the result;
items the kernel cache (``runtime/cache.py``) already holds get its artifact; the rest are looked up again under
the cache's lock for the batch (another process may have built them meanwhile) and only those still missing reach
the backend's build function, which sets ``path`` (or ``error``) on each. How a backend builds (compiler processes
in parallel groups for the CPU, one NVRTC run for CUDA) and how it isolates a bad kernel from its siblings is its
own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ... import config
from ..runtime.cache import get_cache


class BuildItem:
    """A kernel pass to build: its cache key, and once built, the artifact's path or the build's error."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.path: Path | None = None
        self.error: Exception | None = None


T = TypeVar("T", bound=BuildItem)


def batch_key(items: Sequence[BuildItem]) -> str:
    """The key of a batch: a digest of its items' keys (sorted), which names its lock and its artifact."""
    return hashlib.sha256("".join(sorted(it.key for it in items)).encode()).hexdigest()


def build_batch(items: Sequence[T], build: Callable[[list[T]], Any]) -> None:
    """Give every item its artifact: found in the kernel cache, or built by ``build`` (once per distinct key)."""
    cache = get_cache()
    unique: dict[str, T] = {}
    missing: list[T] = []
    for it in items:
        if it.key in unique:  # the same code twice: build once
            continue
        unique[it.key] = it
        it.path = cache.lookup(it.key) if config.cache_kernels else None
        if it.path is None:
            missing.append(it)
    if missing:
        with cache.lock(batch_key(missing)):
            still = []
            for it in missing:
                it.path = cache.lookup(it.key) if config.cache_kernels else None
                if it.path is None:
                    still.append(it)
            if still:
                build(still)
    for it in items:
        twin = unique[it.key]
        if twin is not it:
            it.path, it.error = twin.path, twin.error


__all__ = ["BuildItem", "batch_key", "build_batch"]
