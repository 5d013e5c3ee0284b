"""Python-scope callables for the builtins (``wp.sin(1.0)``, ``wp.dot(a, b)``; ``wp.tid`` for kernels only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import REGISTRY, Builtin


def _make(b: Builtin) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{b.name}() takes positional arguments only in Python scope")
        return b.host_call(*args)

    call.__name__ = b.name
    call.__qualname__ = b.name
    call.__doc__ = f"{b.doc}\n\nSignature: ``{b.signature}``. Group: {b.group}."
    call._treadle_builtin_ = b  # type: ignore[attr-defined]
    return call


_cache: dict[str, Callable[..., Any]] = {}


def exported_builtins() -> dict[str, Callable[..., Any]]:
    """Public builtin callables by name (names starting with ``_`` are internal)."""
    if not _cache:
        for name, b in REGISTRY.builtins.items():
            if not name.startswith("_"):
                _cache[name] = _make(b)
    return _cache
