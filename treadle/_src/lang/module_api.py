"""Module management: options per module, explicit (pre)loading, ahead-of-time compilation."""

from __future__ import annotations

import inspect
import os
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..backends import aot
from ..runtime import state as _state
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
    _state.new_epoch()  # plans of the dropped instances must not be taken by the native launch path


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


def compile_aot_module(module: Any, device: Any = None, arch: int | Iterable[int] | None = None,
                       module_dir: str | os.PathLike[str] | None = None, use_ptx: bool | None = None,
                       strip_hash: bool | None = None) -> list[Path]:
    """Compile every kernel of ``module`` ahead of time; returns the artifact paths in target order.

    Args:
        module: a :class:`~treadle.Module`, a Python module, or a module name.
        device: device(s) to compile for when ``arch`` is not given (their exact architectures, or the CPU).
        arch: CUDA architecture(s) such as ``80`` or ``[80, 90]``; no GPU is needed.
        module_dir: output directory (default: ``<kernel cache>/aot``).
        use_ptx: PTX instead of CUBIN (``None``: CUBIN).
        strip_hash: leave the content hash out of file names (also stored as the module's ``strip_hash`` option).

    Raises:
        TypeError: ``module`` is not a module.
        CompileError: a kernel failed to compile (the message leads with its Python line).
    """
    if isinstance(module, Module):
        mod = module
    elif isinstance(module, (types.ModuleType, str)):
        mod = get_module(module)
    else:
        raise TypeError(f"compile_aot_module() expects a Module, a Python module or a module name, got "
                        f"{type(module).__name__}")
    return aot.compile_module(mod, device, arch, module_dir, use_ptx, strip_hash)
