"""Module management: options per module and explicit (pre)loading."""

from __future__ import annotations

import inspect
from typing import Any

from .kernel import Module, get_module, modules


def _caller_module(module: Any) -> Module:
    if module is None:
        frame = inspect.currentframe()
        caller = frame.f_back.f_back if frame and frame.f_back else None
        name = caller.f_globals.get("__name__", "__main__") if caller else "__main__"
        return get_module(name)
    if isinstance(module, Module):
        return module
    return get_module(module)


def set_module_options(options: dict[str, Any], module: Any = None) -> None:
    """Set options (``enable_backward``, ``max_unroll``, ``mode``, ...) for a module (default: the caller's)."""
    m = _caller_module(module)
    m.options.update(options)
    for k in m.kernels:
        k.instances.clear()


def get_module_options(module: Any = None) -> dict[str, Any]:
    """The options of a module (default: the caller's)."""
    return dict(_caller_module(module).options)


def load_module(module: Any = None, device: Any = None, recursive: bool = False, block_dim: Any = None) -> None:
    """Compile (or load from the cache) every kernel of a module now instead of at first launch."""
    m = _caller_module(module)
    m.load(device)
    if recursive:
        prefix = m.name + "."
        for name, other in list(modules().modules.items()):
            if name.startswith(prefix):
                other.load(device)


def force_load(device: Any = None, modules_: Any = None, block_dim: Any = None) -> None:
    """Load every known module (or the given ones)."""
    targets = modules_ if modules_ is not None else list(modules().modules.values())
    for m in targets:
        (m if isinstance(m, Module) else get_module(m)).load(device)
