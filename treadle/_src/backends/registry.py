"""Backends by name: ``backends/<name>/backend.py`` defines ``BACKEND`` (see ``protocol.py``); adding a folder adds one.

:func:`backend_for` picks the backend of a launch: the device's kind (``cpu``, ``cuda``), or ``interpret`` for CPU
launches while ``wp.config.mode == "interpret"``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ... import config
from .protocol import Backend

_BACKENDS: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (its module is imported at first use)."""
    b = _BACKENDS.get(name)
    if b is None:
        try:
            mod = importlib.import_module(f"{__package__}.{name}.backend")
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{name}" and e.name != f"{__package__}.{name}.backend":
                raise
            raise LookupError(f"no backend called '{name}' (backends/{name}/backend.py)") from None
        b = _BACKENDS[name] = mod.BACKEND
    return b


def backend_for(device: Any) -> Backend:
    """The backend that runs a launch on ``device`` now."""
    if device.is_cuda:
        return get_backend("cuda")
    if config.mode == "interpret":
        return get_backend("interpret")
    return get_backend("cpu")


__all__ = ["backend_for", "get_backend"]
