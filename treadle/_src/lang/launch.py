"""``wp.launch``: the one front door of every launch, on every backend.

What every launch shares happens here, once: the native fast path for a CPU kernel launched before from the same
thread (``runtime/fastlaunch.py``: the same checks in C, else it hands over), the kernel and device checks, the
argument count and defaults, tape recording, ``print_launches``, recorded launches (``record_cmd=True``) and CPU
graph captures (``runtime/graph.py``). The rest is the backend's (``backends/protocol.py``), picked by
``backends/registry.py`` (``cpu``, ``cuda``, or ``interpret`` in interpret mode): the launch grid, the plan, the
packed arguments, the run. A non-generic kernel remembers its last plan (``kernel._launch_fast``); while the plan
says it still applies (``plan.reuse``), a launch skips the checks and the plan lookup.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ... import config
from ..backends import registry as _registry
from ..backends.cpu import backend as _cpu_backend  # noqa: F401 - the CPU backend is imported with treadle
from ..backends.cpu import launch as _cpu_launch
from ..backends.cpu.launch import SERIAL_THRESHOLD, Launch, LaunchPlan
from ..compiler import frontend as _frontend  # noqa: F401 - imported with treadle, not at the first kernel load
from ..core.errors import LaunchError
from ..runtime import fastlaunch as _fastlaunch  # noqa: F401 - needed by every first launch: imported with treadle
from ..runtime import graph as _graph
from ..runtime.device import get_device
from ..runtime.recording import active_tape
from ..types import scalars
from ..types.typesys import ArrayT, is_composite, is_struct
from .kernel import Kernel

_num_threads = _cpu_launch._num_threads

#: ``launch(kernel, dim, inputs, outputs, device, record_tape) -> bool`` of the native extension, once loaded.
_native_launch: Any = None


def _default_value(t: Any) -> Any:
    """The value a parameter of type ``t`` starts with in ``wp.Launch(kernel, ...)``."""
    if isinstance(t, ArrayT):
        return None
    if is_struct(t) or is_composite(t):
        return t()
    if t is scalars.bool:
        return False
    return 0.0 if scalars.is_scalar_type(t) and t._is_float_ else 0


def _new_launch(kernel: Kernel, device: Any = None, hooks: Any = None, params: Sequence[Any] | None = None,
                params_addr: Any = None, bounds: Any = None, max_blocks: int = 0, block_dim: int = 256,
                adjoint: bool = False) -> Any:
    """``wp.Launch(kernel, device, ...)``: a recorded launch of ``kernel`` that has not run."""
    if kernel.is_generic:
        raise LaunchError(f"kernel '{kernel.key}' is generic: its parameter types come from the arguments; record "
                          "a launch with wp.launch(..., record_cmd=True) instead of wp.Launch(kernel, device)")
    if params_addr is not None:
        raise LaunchError("wp.Launch(params_addr=...) is not supported: pass params=[...] or set the parameters "
                          "with set_param_by_name()")
    values = list(params) if params is not None else [_default_value(t) for t in kernel.param_types]
    dim = 0 if bounds is None else (tuple(bounds.shape[: bounds.ndim]) if hasattr(bounds, "ndim") else bounds)
    return launch(kernel, dim, inputs=values, device=device, adjoint=adjoint, record_tape=False, record_cmd=True,
                  max_blocks=max_blocks, block_dim=block_dim)


_cpu_launch.NEW_LAUNCH = _new_launch


def launch(kernel: Kernel, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
           adj_inputs: Sequence[Any] = (), adj_outputs: Sequence[Any] = (), device: Any = None, stream: Any = None,
           adjoint: bool = False, record_tape: bool = True, record_cmd: bool = False, max_blocks: int = 0,
           block_dim: int = 256) -> Any:
    """Launch ``kernel`` over a grid of ``dim`` threads with ``inputs`` followed by ``outputs`` as arguments."""
    if (_native_launch is not None and not adjoint and not record_cmd
            and _native_launch(kernel, dim, inputs, outputs, device, record_tape)):
        return None  # the native fast path launched it (runtime/fastlaunch.py); anything unusual comes here
    plan = getattr(kernel, "_launch_fast", None)
    if plan is not None and not adjoint and not record_cmd:
        args = inputs if not outputs else [*inputs, *outputs]
        dev = get_device(device)
        if len(args) == plan.nargs and plan.reuse(dev, stream, block_dim, max_blocks):
            return _run(plan.backend, plan, kernel, dim, inputs, outputs, args, dev, stream, record_tape, False,
                        block_dim, max_blocks)
    return _launch_slow(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, adjoint, record_tape,
                        record_cmd, stream, block_dim, max_blocks)


def _run(backend: Any, plan: Any, kernel: Kernel, dim: Any, inputs: Sequence[Any], outputs: Sequence[Any],
         args: Sequence[Any], dev: Any, stream: Any, record_tape: bool, record_cmd: bool, block_dim: int,
         max_blocks: int, bounds: Any = None) -> Any:
    """A forward launch with its plan: bind, tape, print, then record, capture or run."""
    if bounds is None:
        bounds = backend.bounds(dim)
    bound = backend.bind(plan, bounds, args, dev, stream, record_cmd)
    if record_tape:
        tape = active_tape()
        if tape is not None:
            tape.record_launch(kernel, dim, inputs, outputs, dev, getattr(plan, "inst", plan))
    if config.print_launches:
        print(backend.launch_line(plan, bounds, bound, dev), file=sys.stderr)
    if record_cmd:
        return backend.record(plan, bounds, bound, args, dev, stream, block_dim, max_blocks)
    if backend.host_capture and _graph.STATE.count and _graph.capturing():
        _graph.record(backend.record(plan, bounds, bound, args, dev, stream, block_dim, max_blocks))
        return None
    backend.launch(plan, bounds, bound, args, dev, stream, block_dim, max_blocks)
    return None


def _launch_slow(kernel: Kernel, dim: Any, inputs: Sequence[Any], outputs: Sequence[Any], adj_inputs: Sequence[Any],
                 adj_outputs: Sequence[Any], device: Any, adjoint: bool, record_tape: bool,
                 record_cmd: bool, stream: Any = None, block_dim: int = 256, max_blocks: int = 0) -> Any:
    """A launch without a remembered plan: checks, defaults, the backend's plan, then :func:`_run`."""
    global _native_launch
    dev = get_device(device)
    if not getattr(kernel, "_treadle_kernel_", False):
        raise LaunchError(f"wp.launch() expects a @wp.kernel, got {type(kernel).__name__}")
    if not dev.is_cpu and not dev.is_cuda:
        raise LaunchError(f"device '{dev}' has no backend in this build; launch on 'cpu'")
    args = list(inputs) + list(outputs) if outputs else list(inputs)
    names = kernel.param_names
    if len(args) != len(names):
        if len(args) < len(names) and all(n in kernel.defaults for n in names[len(args):]):
            args += [kernel.defaults[n] for n in names[len(args):]]
        else:
            raise LaunchError(
                f"kernel '{kernel.key}' takes {len(names)} argument(s) ({', '.join(names)}) but the launch passes "
                f"{len(args)} (inputs + outputs)"
            )
    backend = _registry.backend_for(dev)
    bounds = backend.bounds(dim)
    if adjoint:
        return backend.launch_adjoint(kernel, bounds, args, dev, list(adj_inputs) + list(adj_outputs), record_cmd,
                                      stream, block_dim, max_blocks)
    plan = backend.plan(kernel, args, dev, stream)
    out = _run(backend, plan, kernel, dim, inputs, outputs, args, dev, stream, record_tape, record_cmd, block_dim,
               max_blocks, bounds)
    if _native_launch is None:  # loaded with the CPU runtime at the first CPU launch
        _native_launch = _cpu_launch.native_launch
    return out


__all__ = ["SERIAL_THRESHOLD", "Launch", "LaunchPlan", "launch"]


def launch_tiled(*args: Any, **kwargs: Any) -> Any:
    """Launch a tiled kernel: ``dim`` counts blocks, each of ``block_dim`` logical threads (keyword required).

    The launch grid is ``dim`` with one more, innermost dimension for the threads of a block, so ``wp.tid()`` gives
    the block's indices followed by the thread's index within its block. A block runs as one thread over whole
    tiles (``wp.block_dim()`` is 1 inside the kernel, the last ``wp.tid()`` index 0), the blocks spread over the
    CPU thread pool; on CUDA, ``block_dim`` sets the threads per CUDA block of that grid. The other arguments are
    those of :func:`launch`.
    """
    if "block_dim" not in kwargs:
        raise RuntimeError("wp.launch_tiled() needs its block dimension as a keyword argument: "
                           "wp.launch_tiled(kernel, dim, inputs, block_dim=N)")
    block_dim = kwargs.pop("block_dim")
    if isinstance(block_dim, bool) or not isinstance(block_dim, int) or block_dim < 1:
        raise ValueError(f"wp.launch_tiled(): block_dim must be a positive int, got {block_dim!r}")
    if "dim" in kwargs:
        dim = kwargs.pop("dim")
    elif len(args) >= 2:
        dim = args[1]
        args = (args[0], *args[2:])
    else:
        raise TypeError("wp.launch_tiled() needs the grid dimension 'dim' (the number of blocks)")
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"wp.launch_tiled(): dim has 1 to 3 dimensions (a fourth one holds the block), got {dim!r}")
    kernel = args[0] if args else kwargs.pop("kernel")
    return launch(kernel, (*dims, 1), *args[1:], block_dim=block_dim, **kwargs)  # a tuple: the native fast path takes it
