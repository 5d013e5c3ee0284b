"""The CUDA backend (``BACKEND``): CUDA C++ through NVRTC, run by the driver.

Emit, build and load are ``build.py``'s (the build through the shared batch builder), plans, recorded launches and
adjoint launches ``launch.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..args import cached_bounds
from . import build, launch


def _block_dim(block_dim: int) -> int | None:
    return int(block_dim) if block_dim else None


class CudaBackend:
    """The CUDA backend (see ``backends/protocol.py`` for the methods)."""

    name = "cuda"
    host_capture = False  # CUDA launches are captured by the driver (stream capture), not by CPU graphs

    def emit(self, inst: Any, adjoint: bool = False, device: Any = None) -> Any:
        """The keyed CUDA block of ``inst``'s forward (or backward) pass for ``device``'s architecture."""
        kernel = inst.kernel
        opts = build.options_for(device, inst.options.mode, kernel.module.options)
        entry = build.entry_options(kernel.options, kernel.module.options)
        prep = build.prepare_cuda_adjoint if adjoint else build.prepare_cuda
        return prep(inst.ir, inst.deps, opts, kernel.key, entry=entry, args_type=inst.args_type)

    def build(self, items: list[Any], options: Any) -> None:
        """Binaries for ``items`` (``build.compile_cuda_batch``)."""
        build.compile_cuda_batch(items, options)

    def load(self, inst: Any, device: Any, adjoint: bool = False) -> Any:
        """The loaded CUDA function of ``inst``'s pass on ``device``."""
        return build.load_cuda_kernel(inst, device, adjoint=adjoint)

    def allocate(self, device: Any, nbytes: int, pinned: bool = False) -> Any:
        """Device memory of ``device``'s allocator (its memory pool when enabled)."""
        return device.get_allocator(pinned).alloc(nbytes)

    def bounds(self, dim: Any) -> Any:
        """The ``LaunchBounds`` of ``dim``."""
        return cached_bounds(dim)

    def plan(self, kernel: Any, args: Sequence[Any], device: Any, stream: Any = None) -> Any:
        """The forward :class:`~.launch.CudaPlan` on ``device`` (``stream`` is checked first)."""
        launch.stream_of(stream, device)
        return launch.forward_plan(kernel, args, device)

    def bind(self, plan: Any, bounds: Any, args: Sequence[Any], device: Any, stream: Any, record_cmd: bool) -> Any:
        """The packed ``Args`` struct (a fresh one for recorded launches)."""
        return plan.pack(args) if record_cmd else plan.pack_reused(args)

    def launch_line(self, plan: Any, bounds: Any, bound: Any, device: Any) -> str:
        """``treadle: launch <kernel> dim=(...) on cuda:N``."""
        return f"treadle: launch {plan.kernel.key} dim={tuple(bounds.shape[: bounds.ndim])} on {device}"

    def record(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> Any:
        """A :class:`~.launch.CudaLaunch` holding the packed arguments."""
        return launch.CudaLaunch(plan, bounds, args, bound, launch.stream_of(stream, device), _block_dim(block_dim),
                                 max_blocks)

    def launch(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> None:
        """Launch through the driver (on ``stream``, else the device's current stream)."""
        plan.run(bounds, bound, launch.stream_of(stream, device), _block_dim(block_dim), max_blocks)

    def launch_adjoint(self, kernel: Any, bounds: Any, args: Sequence[Any], device: Any, adj: list[Any],
                       record_cmd: bool, stream: Any = None, block_dim: int = 256, max_blocks: int = 0) -> Any:
        """The backward pass (``launch.launch_adjoint``)."""
        s = launch.stream_of(stream, device)
        return launch.launch_adjoint(kernel, bounds, list(args), device, adj, record_cmd, s, _block_dim(block_dim),
                                     max_blocks)


BACKEND = CudaBackend()
launch.CudaPlan.backend = BACKEND

__all__ = ["BACKEND", "CudaBackend"]
