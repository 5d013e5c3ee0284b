"""The interpreter backend (``BACKEND``): CPU launches while ``wp.config.mode == "interpret"``, run in Python.

Nothing is built: a launch lowers the kernel and runs its IR thread by thread (``interpreter.py``). Backward
passes run the compiled CPU backward pass (in release mode), which replays the forward computation itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .... import config
from ..registry import get_backend
from .interpreter import InterpretedLaunch, Interpreter, argument_values, instance_for, launch_shape


class InterpretBackend:
    """The interpreter backend (see ``backends/protocol.py`` for the methods)."""

    name = "interpret"
    host_capture = False

    def emit(self, inst: Any, adjoint: bool = False) -> Any:
        """The typed IR the interpreter runs (nothing else is emitted)."""
        return inst.ir

    def build(self, items: list[Any], options: Any) -> None:
        """Nothing to build."""

    def load(self, inst: Any, device: Any = None, adjoint: bool = False) -> Any:
        """The lowered instance itself."""
        inst.lower()
        return inst

    def allocate(self, device: Any, nbytes: int, pinned: bool = False) -> Any:
        """Host memory of ``device``'s allocator."""
        return device.get_allocator(pinned).alloc(nbytes)

    def bounds(self, dim: Any) -> Any:
        """``dim`` itself: the grid is checked with the arguments, after the instance (:meth:`bind`)."""
        return dim

    def plan(self, kernel: Any, args: Sequence[Any], device: Any, stream: Any = None) -> Any:
        """The kernel instance for these arguments."""
        return instance_for(kernel, args)

    def bind(self, plan: Any, bounds: Any, args: Sequence[Any], device: Any, stream: Any, record_cmd: bool) -> Any:
        """``(shape, values)``: the grid and the arguments as interpreter values (checked as compiled launches)."""
        shape = launch_shape(bounds)
        return shape, argument_values(plan, args, device)

    def launch_line(self, plan: Any, bounds: Any, bound: Any, device: Any) -> str:
        """``treadle: interpret <kernel> dim=(...)``."""
        return f"treadle: interpret {plan.kernel.key} dim={bound[0]}"

    def record(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> Any:
        """An :class:`~.interpreter.InterpretedLaunch`."""
        return InterpretedLaunch(plan, bound[0], list(args), device)

    def launch(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> None:
        """Run the kernel's IR over the grid."""
        Interpreter(plan, bound[0], bound[1]).run()

    def launch_adjoint(self, kernel: Any, bounds: Any, args: Sequence[Any], device: Any, adj: list[Any],
                       record_cmd: bool, stream: Any = None, block_dim: int = 256, max_blocks: int = 0) -> Any:
        """The compiled backward pass (release mode), which replays the forward computation itself."""
        with config.override(mode="release"):
            cpu = get_backend("cpu")
            cpu.launch_adjoint(kernel, cpu.bounds(bounds), args, device, adj, False, stream, block_dim, max_blocks)
        return None


BACKEND = InterpretBackend()

__all__ = ["BACKEND", "InterpretBackend"]
