"""Graph capture on the CPU: record a sequence of kernel launches once, replay it with one native call.

``capture_begin()`` / ``capture_end()`` (or ``with ScopedCapture() as capture``) record, on the calling thread, every
``wp.launch`` (forward or adjoint, including the ones ``Tape.backward()`` makes) and every ``Launch.launch()`` as a
launch command with its own copy of the packed arguments; nothing runs while capturing. ``capture_launch(graph)``
then runs the commands in order through the runtime library in a single ctypes call (``treadle_rt_run``), each
launch parallel as usual.

As on the GPU, arguments are frozen at capture time: replays read and write the same arrays, with the same scalar
values. The array operations ``wp.copy``, ``array.zero_()`` and ``array.fill_()`` (also those made by
``Tape.zero()``/``Tape.backward()``) on host memory are recorded too, as the memcpy/memset nodes of a CUDA graph:
they do not run while capturing, and each replay runs them in order between the launches (a replay is then one
native call per run of consecutive launches). Arrays created inside a capture are initialised at once (``wp.zeros``
and friends are not recorded). ``capture_if`` / ``capture_while`` (``lang/conditional.py``) record conditional nodes:
child graphs that a replay runs according to a condition array read at that time.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from . import state
from .device import get_device

STATE = state.CAPTURE


def capturing() -> bool:
    """Whether the calling thread is capturing a graph."""
    return STATE.count > 0 and getattr(STATE.local, "graph", None) is not None


def capturing_saveable() -> bool:
    """Whether the calling thread is capturing a saveable (``apic=True``) CPU graph."""
    g = getattr(STATE.local, "graph", None) if STATE.count else None
    return g is not None and g.apic


def record_op(fn: Callable[[], None], *arrays: Any) -> bool:
    """Record ``fn`` (an array operation) in the calling thread's CPU capture; whether it was recorded.

    Recorded only while the thread captures on the CPU and every array in ``arrays`` is host memory; otherwise the
    caller runs the operation now.
    """
    g = getattr(STATE.local, "graph", None) if STATE.count else None
    if g is None or not all(a.device.allocator.host_accessible for a in arrays):
        return False
    g._add_op(fn)
    return True


def record(launch: Any) -> None:
    """Add a launch (a ``Launch``) to the calling thread's capture."""
    g = STATE.local.graph
    g._add(launch)


class Graph:
    """A captured sequence of CPU kernel launches and array operations (see :func:`capture_launch`)."""

    def __init__(self, device: Any = None, apic: bool = False) -> None:
        self.device = device
        #: a saveable capture (``apic=True``): structures that cannot be serialised refuse to be recorded
        self.apic = apic
        self.launches: list[Any] = []
        #: recorded array operations: (number of launches recorded before it, operation)
        self.ops: list[tuple[int, Callable[[], None]]] = []
        self._cmds: Any = None
        self._addr = 0
        self._run: Any = None
        self._cmd_size = 0

    def __len__(self) -> int:
        return len(self.launches) + len(self.ops)

    def _add(self, launch: Any) -> None:
        self.launches.append(launch.frozen_copy())

    def _add_op(self, fn: Callable[[], None]) -> None:
        self.ops.append((len(self.launches), fn))

    def _finish(self) -> None:
        from .threadpool import Cmd, get_cpu_runtime

        n = len(self.launches)
        cmds = (Cmd * max(n, 1))()
        for i, ln in enumerate(self.launches):
            ctypes.memmove(ctypes.addressof(cmds) + i * ctypes.sizeof(Cmd), ln.cmd_address, ctypes.sizeof(Cmd))
        self._cmds = cmds
        self._cmd_size = ctypes.sizeof(Cmd)
        self._addr = ctypes.addressof(cmds)
        self._run = get_cpu_runtime().run

    def launch(self) -> None:
        """Run every captured launch and array operation, in order."""
        if self._run is None:
            self._finish()
        start = 0
        for pos, fn in self.ops:
            if pos > start:
                self._run(self._addr + start * self._cmd_size, pos - start)
                start = pos
            fn()
        if len(self.launches) > start:
            self._run(self._addr + start * self._cmd_size, len(self.launches) - start)


def _check_device(device: Any) -> Any:
    from .device import get_device

    dev = get_device(device)
    if not dev.is_cpu and not dev.is_cuda:
        raise RuntimeError(f"graph capture on device '{dev}' needs a CUDA backend, which this build lacks; "
                           "capture on 'cpu'")
    return dev


def capture_begin(device: Any = None, stream: Any = None, force_module_load: Any = None, external: bool = False,
                  apic: bool = False, capture_mode: Any = None) -> None:
    """Start recording the kernel launches of the calling thread into a graph (nothing runs until replayed)."""
    dev = _check_device(device if device is not None or stream is None else stream.device)
    if dev.is_cuda:  # a driver stream capture (runtime/cuda_graph.py)
        from . import cuda_graph

        cuda_graph.capture_begin(dev, stream, external, capture_mode)
        return
    if getattr(STATE.local, "graph", None) is not None:
        raise RuntimeError("a graph capture is already active on this thread; call wp.capture_end() first")
    STATE.local.graph = Graph(dev, apic=bool(apic))
    with STATE.lock:
        STATE.enter()


def capture_end(device: Any = None, stream: Any = None) -> Graph:
    """Stop recording and return the captured :class:`Graph`."""
    if getattr(STATE.local, "graph", None) is None and not (device is not None and get_device(device).is_cpu):
        from . import cuda_graph

        if cuda_graph.active() is not None:
            return cuda_graph.capture_end(device, stream)  # type: ignore[return-value]
    g = getattr(STATE.local, "graph", None)
    if g is None:
        raise RuntimeError("wp.capture_end() without a matching wp.capture_begin() on this thread")
    STATE.local.graph = None
    with STATE.lock:
        STATE.leave()
    g._finish()
    return g


def capture_launch(graph: Graph, stream: Any = None) -> None:
    """Replay a captured graph."""
    if type(graph).__name__ == "CudaGraph":
        graph.launch(stream)  # type: ignore[call-arg]
        return
    if not isinstance(graph, Graph):
        raise TypeError(f"wp.capture_launch() expects a Graph from wp.capture_end(), got {type(graph).__name__}")
    graph.launch()


class ScopedCapture:
    """``with wp.ScopedCapture() as capture: ...`` records launches into ``capture.graph``."""

    def __init__(self, device: Any = None, stream: Any = None, force_module_load: Any = None, external: bool = False,
                 apic: bool = False, capture_mode: Any = None) -> None:
        self.device = device
        self.stream = stream
        self.apic = apic
        self.graph: Graph | None = None
        self.active = False

    def __enter__(self) -> ScopedCapture:
        capture_begin(self.device, self.stream, apic=self.apic)
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.active:
            self.graph = capture_end(self.device, self.stream)
            self.active = False

