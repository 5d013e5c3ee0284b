"""Launches on CUDA devices: the same argument packing as the CPU (``core/abi.py``), run by the driver.

The launch front door (``lang/launch.py``) runs launches on a ``cuda:N`` device through the CUDA backend
(``backend.py``), which uses this module's plans. A kernel instance gets one
:class:`CudaPlan` per device and pass (forward or adjoint): the per-parameter packers every backend uses
(``backends/args.py: make_packer``, so a CUDA ``Args`` struct is byte for byte the CPU one) and the loaded entry point
(:func:`treadle._src.backends.cuda.build.load_cuda_kernel`). No CPU library is built for a CUDA launch.

A launch packs its arguments into a fresh ``Args`` struct (the driver copies parameters during ``cuLaunchKernel``,
so nothing has to outlive the call) and launches on the given stream, else the device's current stream. Recorded
launches (``record_cmd=True``) are :class:`CudaLaunch` objects holding their packed arguments; replaying one is a
single driver call. Checked-mode kernels and backward passes with loop checkpoints read back what the device
recorded after the launch (which waits for the device), except during a graph capture.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

from .... import config
from ...core.abi import ARRAY_KEEP_GRAD
from ...core.errors import LaunchError
from ...types.arrays import is_array_object
from ..args import launch_bounds, make_packer, value_type
from ..launch_params import ParamSetters


class CudaPlan:
    """What launching one kernel instance's forward or backward pass on one device needs, made once."""

    __slots__ = ("inst", "kernel", "device", "adjoint", "names", "nargs", "packers", "args_type", "fn", "checked",
                 "owner", "shared", "last", "last_desc", "mode")

    #: the backend running the plan (``backend.py`` sets it)
    backend: Any = None

    def __init__(self, inst: Any, device: Any, adjoint: bool) -> None:
        from . import build as cb

        self.inst = inst
        self.kernel = inst.kernel
        self.device = device
        self.adjoint = adjoint
        self.names = list(inst.kernel.param_names)
        self.nargs = len(self.names)
        self.mode = config.mode
        self.packers = [make_packer(n, t, inst.kernel) for n, t in zip(self.names, inst.types)]
        self.args_type = inst.args_type
        self.fn = cb.load_cuda_kernel(inst, device, adjoint=adjoint)
        # read back device-side records after a launch: checked mode, and loop checkpoints of backward passes
        self.checked = inst.options.mode == "debug" or (adjoint and self.fn.ckpt_bytes > 0)
        self.owner: int | None = None  # the thread whose launches reuse ``shared``
        self.shared: Any = None
        self.last: list[Any] = []
        self.last_desc: list[Any] = []

    def pack(self, args: Sequence[Any]) -> ctypes.Structure:
        """The ``Args`` struct of ``args`` (each checked as on the CPU, arrays must live on this device)."""
        packed = self.args_type()
        dev = self.device
        for name, packer, v in zip(self.names, self.packers, args):
            setattr(packed, name, packer(v, dev))
        return packed  # type: ignore[no-any-return]

    def pack_reused(self, args: Sequence[Any]) -> ctypes.Structure:
        """The plan's own ``Args`` struct with only the arguments that changed since the last launch repacked.

        The driver copies parameters during ``cuLaunchKernel``, so one struct serves every immediate launch of the
        thread that made the first one (other threads pack a fresh struct). An argument is unchanged when it is the
        very same int/float/bool/None object, or the same array with the same descriptor object (a descriptor is
        rebuilt whenever the array's pointers change).
        """
        if self.owner != _get_ident():
            if self.owner is not None:
                return self.pack(args)
            self.owner = _get_ident()
            self.shared = self.args_type()
            self.last = [_UNSET] * len(self.names)
            self.last_desc = [None] * len(self.names)
        packed, last, last_desc, dev = self.shared, self.last, self.last_desc, self.device
        for i, v in enumerate(args):
            key = last[i]
            if key is v:
                continue
            d = last_desc[i]
            if d is not None and key == id(v) and getattr(v, "_ctype", None) is d:
                continue
            p = self.packers[i](v, dev)
            setattr(packed, self.names[i], p)
            tv = type(v)
            if tv is float or tv is int or tv is bool or v is None:
                last[i], last_desc[i] = v, None
            elif p is not None and getattr(v, "_ctype", None) is p:
                last[i], last_desc[i] = id(v), p  # an array: its id and descriptor, not the array itself
            else:
                last[i], last_desc[i] = _UNSET, None
        return packed  # type: ignore[no-any-return]

    def reuse(self, device: Any, stream: Any, block_dim: int, max_blocks: int) -> bool:
        """Whether a launch may take this remembered forward plan as it is.

        It may on the plan's device with the default stream, block size and grid, while the compile mode and the
        kernel's instance stay the same.
        """
        return (device is self.device and stream is None and max_blocks == 0 and block_dim == 256
                and self.mode is config.mode and self.inst in self.kernel.instances.values())

    def run(self, bounds: Any, packed: Any, stream: Any = None, block_dim: int | None = None,
            max_blocks: int = 0) -> None:
        if bounds.size <= 0:
            return
        if block_dim == 256 and self.fn.block_dim < 256:
            block_dim = None  # launch()'s default: the kernel's own block size (its launch_bounds)
        self.fn.launch(bounds, packed, stream=stream, block_dim=block_dim, max_blocks=max_blocks)
        if self.checked and not _capturing(self.device, stream):
            self.fn.check_errors()


class _Unset:
    pass


_UNSET = _Unset()
_get_ident = threading.get_ident


def _capturing(device: Any, stream: Any) -> bool:
    try:
        s = stream if stream is not None else device.stream
        return bool(s.is_capturing)
    except Exception:  # noqa: BLE001 - a driver without capture queries (tests)
        return False


def plan_for(inst: Any, device: Any, adjoint: bool = False) -> CudaPlan:
    """The memoised :class:`CudaPlan` of ``inst`` on ``device``."""
    memo = inst.__dict__.setdefault("_cuda_plans", {})
    key = (device.alias, adjoint)
    plan = memo.get(key)
    if plan is None or plan.device is not device:
        with inst.kernel.module.lock:  # threads launching a new kernel at once: one build, one plan
            plan = memo.get(key)
            if plan is None or plan.device is not device:
                plan = CudaPlan(inst, device, adjoint)
                memo[key] = plan
    return plan  # type: ignore[no-any-return]


def instance_for(kernel: Any, args: Sequence[Any]) -> Any:
    """The kernel instance for these arguments (generic kernels are specialised on the argument types)."""
    if kernel.is_generic:
        return kernel.get_instance(tuple(value_type(v, t) for v, t in zip(args, kernel.param_types)))
    return kernel.get_instance(None)


def _stream_of(stream: Any, device: Any) -> Any:
    if stream is None:
        return None
    if not hasattr(stream, "cuda_stream"):
        raise LaunchError(f"stream= expects a wp.Stream, got {type(stream).__name__}")
    if getattr(stream, "device", device) is not device:
        raise LaunchError(f"the launch is on '{device}' but its stream belongs to '{stream.device}'")
    return stream


class CudaLaunch(ParamSetters):
    """A recorded CUDA launch (``launch(..., record_cmd=True)`` on a CUDA device), replayed with :meth:`launch`."""

    def __init__(self, plan: CudaPlan, bounds: Any, args: Sequence[Any], packed: Any, stream: Any = None,
                 block_dim: int | None = None, max_blocks: int = 0) -> None:
        self.plan = plan
        self.kernel = plan.kernel
        self.instance = plan.inst
        self.device = plan.device
        self.adjoint = plan.adjoint
        self.bounds = bounds
        self.args = packed
        self.stream = stream
        self.block_dim = block_dim
        self.max_blocks = max_blocks
        self._keep = list(args)

    def set_dim(self, dim: Any) -> None:
        """Change the launch grid."""
        self.bounds = launch_bounds(dim)

    def launch(self, stream: Any = None) -> None:
        """Launch again (on ``stream``, else the recorded stream, else the device's current stream)."""
        s = _stream_of(stream, self.device) if stream is not None else self.stream
        self.plan.run(self.bounds, self.args, s, self.block_dim, self.max_blocks)


def stream_of(stream: Any, device: Any) -> Any:
    """``stream`` checked for a launch on ``device`` (``None``: the device's current stream)."""
    return _stream_of(stream, device) if stream is not None else None


def forward_plan(kernel: Any, args: Sequence[Any], device: Any) -> CudaPlan:
    """The forward plan of these arguments, remembered on a non-generic kernel (``kernel._launch_fast``)."""
    plan = plan_for(instance_for(kernel, args), device)
    if not kernel.is_generic:
        kernel._launch_fast = plan
    return plan


def launch_adjoint(kernel: Any, bounds: Any, args: list[Any], device: Any, adj: list[Any], record_cmd: bool,
                   stream: Any = None, block_dim: int | None = None, max_blocks: int = 0) -> CudaLaunch | None:
    """The backward pass (``stream`` checked); array gradients go to ``adj`` arrays where given."""
    plan = plan_for(instance_for(kernel, args), device, adjoint=True)
    packed = plan.pack(args)
    keep = _apply_adjoints(plan, packed, adj)
    rec = CudaLaunch(plan, bounds, [*args, *keep], packed, stream, block_dim, max_blocks)
    if record_cmd:
        return rec
    plan.run(bounds, packed, stream, block_dim, max_blocks)
    return None


def _apply_adjoints(plan: CudaPlan, packed: Any, adj: list[Any]) -> list[Any]:
    """Point array gradients at the ``adj`` arrays where given (else each array's own ``.grad``)."""
    from ...types.typesys import ArrayT

    keep = []
    for i, (name, t) in enumerate(zip(plan.names, plan.inst.types)):
        if isinstance(t, ArrayT) and i < len(adj) and adj[i] is not None:
            g = adj[i]
            if not is_array_object(g):
                raise LaunchError(f"adjoint for '{name}' must be an array, got {type(g).__name__}")
            if g.device != plan.device:
                raise LaunchError(f"adjoint array for '{name}' is on '{g.device}' but the launch is on "
                                  f"'{plan.device}'")
            desc = getattr(packed, name)
            if tuple(g.shape) != tuple(desc.shape[: desc.ndim]):
                raise LaunchError(f"adjoint array for '{name}' has shape {g.shape}, expected "
                                  f"{tuple(desc.shape[: desc.ndim])}")
            if (g.ptr or 0) != desc.grad:  # the caller's own adjoint buffer: stores keep its values
                desc.flags |= ARRAY_KEEP_GRAD
            desc.grad = g.ptr or 0
            keep.append(g)
    return keep
