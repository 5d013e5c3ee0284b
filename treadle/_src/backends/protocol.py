"""The backend protocol: what the launch front door (``lang/launch.py``) and the module loader ask of a backend.

A backend is a folder under ``backends/`` (``cpu/``, ``cuda/``, ``interpret/``) whose ``backend.py`` defines
``BACKEND``, an object with the methods of :class:`Backend`; ``registry.get_backend(name)`` imports it at first
use. The stages of a kernel pass on a backend:

- *emit*: the pass's code for this target from the compiler's shared emission (``compiler/pipeline.py``);
- *build*: a batch of emitted passes to binaries through the shared batch builder (``backends/batch.py``);
- *load*: the entry point of an instance's pass, built or found in the cache;
- *plan* / *bind* / *launch*: the per-instance launch plan (made once), the arguments of one launch packed for it,
  and the launch itself (or a recorded launch, :meth:`Backend.record`);
- *allocate*: device memory for arrays on the backend's devices.

The front door does what every launch shares exactly once -- argument count and defaults, tape recording,
``print_launches``, recorded and captured launches -- and calls the backend for the rest, in this order:
``bounds`` -> ``plan`` -> ``bind`` -> (tape, print) -> ``record`` or ``launch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Backend(Protocol):
    """What a backend implements (see the module docstring for the order of the calls)."""

    #: the backend's name (its folder under ``backends/``)
    name: str
    #: whether launches go into CPU graph captures (``runtime/graph.py``) while one is active
    host_capture: bool

    def emit(self, inst: Any, adjoint: bool = False) -> Any:
        """The emitted, keyed pass of kernel instance ``inst`` for this target (ready for :meth:`build`)."""

    def build(self, items: list[Any], options: Any) -> None:
        """Give every emitted pass of ``items`` its binary (cache hits found, misses compiled in one batch)."""

    def load(self, inst: Any, device: Any, adjoint: bool = False) -> Any:
        """The loaded entry point of ``inst``'s forward (or backward) pass on ``device``."""

    def allocate(self, device: Any, nbytes: int, pinned: bool = False) -> Any:
        """``nbytes`` of memory on ``device`` (a ``runtime.memory.Allocation``)."""

    def bounds(self, dim: Any) -> Any:
        """The launch grid of ``dim`` as this backend launches it (checked)."""

    def plan(self, kernel: Any, args: Sequence[Any], device: Any, stream: Any = None) -> Any:
        """The launch plan of ``kernel`` for these argument values (its instance, loaded; remembered per kernel)."""

    def bind(self, plan: Any, bounds: Any, args: Sequence[Any], device: Any, stream: Any,
             record_cmd: bool) -> Any:
        """The arguments of one launch as this backend runs them (packing that must precede the tape record)."""

    def launch_line(self, plan: Any, bounds: Any, bound: Any, device: Any) -> str:
        """The line ``print_launches`` prints for this launch."""

    def record(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> Any:
        """A recorded launch (``record_cmd=True``; also what a CPU graph capture keeps)."""

    def launch(self, plan: Any, bounds: Any, bound: Any, args: Sequence[Any], device: Any, stream: Any,
               block_dim: int, max_blocks: int) -> None:
        """Run one launch."""

    def launch_adjoint(self, kernel: Any, bounds: Any, args: Sequence[Any], device: Any, adj: list[Any],
                       record_cmd: bool, stream: Any, block_dim: int, max_blocks: int) -> Any:
        """Run (or record) the backward pass; array gradients go to ``adj`` where given, else to each ``.grad``."""


__all__ = ["Backend"]
