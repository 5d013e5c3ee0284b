"""The CPU backend (``BACKEND``): C++ through the system compiler, run on the runtime's thread pool.

Emit and build are ``build.py``'s (through the shared batch builder), load is the kernel instance's
(``kernels.py``), plans, recorded launches and adjoint launches are ``launch.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..args import cached_bounds
from . import build, launch


class CpuBackend:
    """The CPU backend (see ``backends/protocol.py`` for the methods)."""

    name = "cpu"
    host_capture = True

    def emit(self, inst: Any, adjoint: bool = False) -> Any:
        """The keyed C++ block of ``inst``'s forward (or backward) pass."""
        if adjoint:
            return inst.backward_built()
        inst.prepare()
        return inst.built

    def build(self, items: list[Any], options: Any) -> None:
        """Libraries for ``items`` (``build.compile_batch``)."""
        build.compile_batch(items, options)

    def load(self, inst: Any, device: Any = None, adjoint: bool = False) -> Any:
        """The bound entry point of ``inst``'s forward (or backward) pass."""
        if adjoint:
            return inst.ensure_backward()
        inst.ensure_loaded()
        return inst.entry

    def allocate(self, device: Any, nbytes: int, pinned: bool = False) -> Any:
        """Host memory of ``device``'s allocator."""
        return device.get_allocator(pinned).alloc(nbytes)

    def bounds(self, dim: Any) -> Any:
        """The ``LaunchBounds`` of ``dim``."""
        return cached_bounds(dim)

    def plan(self, kernel: Any, args: Sequence[Any], device: Any, stream: Any = None) -> Any:
        """The instance's :class:`~.launch.LaunchPlan` (made and loaded at its first launch)."""
        return launch.plan_for(kernel, list(args))

    def bind(self, plan: Any, bounds: Any, args: Sequence[Any], device: Any, stream: Any, record_cmd: bool) -> Any:
        """The arguments themselves: the plan packs what changed when it runs."""
        return args

    def launch_line(self, plan: Any, bounds: Any, bound: Any, device: Any) -> str:
        """``treadle: launch <kernel> dim=(...)``."""
        return f"treadle: launch {plan.kernel.key} dim={tuple(bounds.shape[: bounds.ndim])}"

    def record(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> Any:
        """A :class:`~.launch.Launch` owning its frame."""
        return launch.Launch(plan, bounds, args, device)

    def launch(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> None:
        """Run the plan (checked-mode kernels report their first failed check)."""
        if bounds.size > 0:
            plan.run(args, device, bounds)
            if plan.debug:
                plan.inst.check_errors()

    def launch_adjoint(self, kernel: Any, bounds: Any, args: Sequence[Any], device: Any, adj: list[Any],
                       record_cmd: bool, stream: Any = None, block_dim: int = 256, max_blocks: int = 0) -> Any:
        """The backward pass through the instance's plan (``launch.launch_adjoint``)."""
        return launch.launch_adjoint(self.plan(kernel, args, device), bounds, list(args), device, adj, record_cmd)


BACKEND = CpuBackend()
launch.LaunchPlan.backend = BACKEND

__all__ = ["BACKEND", "CpuBackend"]
