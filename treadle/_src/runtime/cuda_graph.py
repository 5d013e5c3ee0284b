"""CUDA graph capture: ``wp.capture_begin/end``, ``wp.ScopedCapture`` and ``wp.capture_launch`` on CUDA devices.

A capture is a driver stream capture (``cuStreamBeginCapture`` in thread-local mode) on the device's current
stream, or on the stream passed in, which becomes the device's current stream for the duration so that launches,
copies, memsets and allocations from the memory pool (stream-ordered, so allowed while capturing) all land in the
graph. ``capture_end`` ends the capture and instantiates the graph; ``capture_launch`` replays it with one
``cuGraphLaunch`` on the given stream (default: the device's current stream).

``external=True`` records into a capture someone else started on the stream (e.g. PyTorch's ``torch.cuda.graph``):
Treadle neither begins nor ends it and ``capture_end`` returns ``None``.

Device-side error reports (checked mode, loop checkpoints) need a host read-back, which capture forbids: launches
recorded in a graph skip it (see ``backends/cuda/launch.py``).
"""

from __future__ import annotations

import threading
from typing import Any

from . import cuda_driver as cd

_LOCAL = threading.local()


class CudaGraph:
    """An instantiated CUDA graph (``capture_end`` on a CUDA device); replay with ``wp.capture_launch``."""

    def __init__(self, device: Any, graph: Any, exec_: Any) -> None:
        self.device = device
        self.graph = graph
        self.graph_exec = exec_

    def launch(self, stream: Any = None) -> None:
        """Replay the graph on ``stream`` (default: the device's current stream)."""
        s = stream if stream is not None else self.device.stream
        with self.device.guard():
            cd.call("cuGraphLaunch", self.graph_exec, s.cuda_stream)

    def __del__(self) -> None:
        if cd._STATE.mod is None:
            return
        try:
            cd.call("cuGraphExecDestroy", self.graph_exec)
            cd.call("cuGraphDestroy", self.graph)
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass


class _Capture:
    __slots__ = ("device", "stream", "saved", "external")

    def __init__(self, device: Any, stream: Any, saved: Any, external: bool) -> None:
        self.device, self.stream, self.saved, self.external = device, stream, saved, external


def active() -> _Capture | None:
    """The calling thread's CUDA capture, if any."""
    return getattr(_LOCAL, "capture", None)


def capture_begin(device: Any, stream: Any = None, external: bool = False, capture_mode: Any = None) -> None:
    """Begin capturing the work of the calling thread on ``device``'s current stream (or ``stream``)."""
    if active() is not None:
        raise RuntimeError("a graph capture is already active on this thread; call wp.capture_end() first")
    dev = cd.cuda_device(device)
    saved = dev.stream
    s = stream if stream is not None else saved
    if s.device is not dev:
        raise RuntimeError(f"capture stream belongs to '{s.device}', not to '{dev}'")
    if s is not saved:
        dev.set_stream(s, sync=True)
    if not external:
        if capture_mode is None or isinstance(capture_mode, str):
            mode = cd.enum("CUstreamCaptureMode", capture_mode or "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL")
        else:  # a CUstreamCaptureMode value (0 global, 1 thread-local, 2 relaxed)
            mode = cd.require_driver().CUstreamCaptureMode(int(capture_mode))
        try:
            with dev.guard():
                cd.call("cuStreamBeginCapture", s.cuda_stream, mode)
        except Exception:
            if s is not saved:
                dev.set_stream(saved, sync=False)
            raise
    elif not s.is_capturing:
        if s is not saved:
            dev.set_stream(saved, sync=False)
        raise RuntimeError("capture_begin(external=True) needs a stream that is already being captured")
    _LOCAL.capture = _Capture(dev, s, saved, external)


def capture_end(device: Any = None, stream: Any = None) -> CudaGraph | None:
    """End the calling thread's capture and instantiate the graph (``None`` for an external capture)."""
    cap = active()
    if cap is None:
        raise RuntimeError("wp.capture_end() without a matching wp.capture_begin() on this thread")
    _LOCAL.capture = None
    dev, s = cap.device, cap.stream
    try:
        if cap.external:
            return None
        with dev.guard():
            graph = cd.call("cuStreamEndCapture", s.cuda_stream)
            exec_ = cd.call("cuGraphInstantiate", graph, 0)
        return CudaGraph(dev, graph, exec_)
    finally:
        if s is not cap.saved:
            dev.set_stream(cap.saved, sync=False)
            cap.saved.wait_stream(s)
