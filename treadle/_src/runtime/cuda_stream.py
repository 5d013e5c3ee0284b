"""CUDA streams and events (reference API: ``wp.Stream``, ``wp.Event``, ``wp.ScopedStream`` and friends).

Every CUDA device has a current stream (``device.stream``): a blocking stream Treadle creates on first use, so work
on it also orders with the legacy default stream other libraries use. Launches, copies and allocations from the
memory pool go to the current stream of their device.

Without CUDA these names still exist and answer as the reference does on a CPU-only machine: constructing a stream
or an event, asking for the current stream, recording or waiting raise ``RuntimeError`` ("Device cpu is not a CUDA
device"), or ``ValueError``/``RuntimeError`` (:class:`~treadle._src.runtime.device.DeviceUnavailableError`) for a
``cuda:N`` that does not exist; ``synchronize_stream()`` on the CPU and ``ScopedStream(None)`` do nothing.
"""

from __future__ import annotations

from typing import Any

from . import cuda_driver as _cd
from .device import ScopedDevice, get_device


class Stream:
    """A CUDA stream: an ordered queue of work on one device.

    Args:
        device: the CUDA device (default: the current device, which must be a CUDA device).
        priority: ``-1`` (high) or ``0`` (low, the default); other values are clamped.
        cuda_stream: an existing stream handle (int) to wrap; the caller keeps it alive.

    Raises:
        RuntimeError: ``device`` is not a CUDA device, or the stream could not be created.
        TypeError: ``priority`` is not an integer.
    """

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        cuda_stream = kwargs.pop("cuda_stream", None)
        if kwargs:
            raise TypeError(f"Stream() got unexpected keyword arguments {sorted(kwargs)}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"stream priority must be an integer, got {type(priority).__name__}")
        self.device = _cd.cuda_device(device)
        self.owner = cuda_stream is None
        self._cached_event: Event | None = None
        self._obj: Any = None
        if cuda_stream is not None:
            self._handle = _cd.handle(cuda_stream)
            return
        with self.device.guard():
            least, greatest = _cd.call("cuCtxGetStreamPriorityRange")
            self._obj = _cd.call("cuStreamCreateWithPriority", 0, int(greatest) if priority < 0 else int(least))
        self._handle = _cd.handle(self._obj)

    @property
    def cuda_stream(self) -> int:
        """The ``CUstream`` handle as an integer."""
        return self._handle

    @property
    def priority(self) -> int:
        """``-1`` for a high-priority stream, ``0`` otherwise."""
        with self.device.guard():
            least, _ = _cd.call("cuCtxGetStreamPriorityRange")
            p = int(_cd.call("cuStreamGetPriority", self._handle))
        return -1 if p < int(least) else 0

    @property
    def is_blocking(self) -> bool:
        """Whether the stream synchronises with the legacy default stream."""
        return not (int(_cd.call("cuStreamGetFlags", self._handle)) & 1)

    @property
    def is_complete(self) -> bool:
        """Whether all work submitted to the stream has finished."""
        return _query("cuStreamQuery", self._handle)

    @property
    def is_capturing(self) -> bool:
        """Whether a graph capture is in progress on this stream."""
        return int(_cd.call("cuStreamIsCapturing", self._handle)) != 0

    @property
    def cached_event(self) -> Event:
        """An event owned by the stream, used by :meth:`wait_stream` when none is given."""
        if self._cached_event is None:
            self._cached_event = Event(self.device)
        return self._cached_event

    def record_event(self, event: Event | None = None, external: bool = False) -> Event:
        """Record ``event`` (a new one if ``None``) at the current end of the stream; returns it."""
        if event is None:
            event = Event(self.device)
        elif event.device is not self.device:
            raise RuntimeError(f"event from device {event.device} cannot be recorded on a stream of {self.device}")
        with self.device.guard():
            _cd.call("cuEventRecord", event.cuda_event, self._handle)
        return event

    def wait_event(self, event: Event, external: bool = False) -> None:
        """Make later work on this stream wait until ``event`` completes (the host does not wait)."""
        if not isinstance(event, Event):
            raise TypeError(f"wait_event() expects an Event, got {type(event).__name__}")
        with self.device.guard():
            _cd.call("cuStreamWaitEvent", self._handle, event.cuda_event, 0)

    def wait_stream(self, other_stream: Stream, event: Event | None = None, external: bool = False) -> None:
        """Make later work on this stream wait for everything submitted to ``other_stream`` so far."""
        if not isinstance(other_stream, Stream):
            raise TypeError(f"wait_stream() expects a Stream, got {type(other_stream).__name__}")
        ev = other_stream.record_event(event if event is not None else other_stream.cached_event)
        self.wait_event(ev)

    def synchronize(self) -> None:
        """Block the calling thread until the stream's work is done."""
        with self.device.guard():
            _cd.call("cuStreamSynchronize", self._handle)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._handle == self._handle

    def __hash__(self) -> int:
        return hash(self._handle)

    def __repr__(self) -> str:
        return f"<Stream {self._handle:#x} on {self.device}>"

    def __del__(self) -> None:
        if getattr(self, "owner", False) and self._obj is not None and _cd._STATE.mod is not None:
            try:
                _cd.call("cuStreamDestroy", self._obj)
            except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
                pass


class Event:
    """A CUDA event: a point in a stream that other streams or the host can wait for, or time.

    Args:
        device: the CUDA device whose streams may record it (default: the current device).
        cuda_event: an existing event handle (int) to wrap.
        enable_timing: record timing data (for :func:`get_event_elapsed_time`).
        interprocess: usable from other processes (:meth:`ipc_handle`); excludes ``enable_timing``.
    """

    class Flags:
        DEFAULT = 0x0
        BLOCKING_SYNC = 0x1
        DISABLE_TIMING = 0x2
        INTERPROCESS = 0x4

    def __init__(self, device: Any = None, cuda_event: Any = None, enable_timing: bool = False,
                 interprocess: bool = False) -> None:
        if enable_timing and interprocess:
            raise ValueError("an Event cannot have both enable_timing=True and interprocess=True")
        self.device = _cd.cuda_device(device)
        self.enable_timing = enable_timing
        self.interprocess = interprocess
        self.owner = cuda_event is None
        self._obj: Any = None
        if cuda_event is not None:
            self._handle = _cd.handle(cuda_event)
            return
        flags = 0 if enable_timing else Event.Flags.DISABLE_TIMING
        if interprocess:
            flags |= Event.Flags.INTERPROCESS
        with self.device.guard():
            self._obj = _cd.call("cuEventCreate", flags)
        self._handle = _cd.handle(self._obj)

    @property
    def cuda_event(self) -> int:
        """The ``CUevent`` handle as an integer."""
        return self._handle

    @property
    def is_complete(self) -> bool:
        """Whether the work recorded before the event has finished."""
        return _query("cuEventQuery", self._handle)

    def synchronize(self) -> None:
        """Block the calling thread until the event completes."""
        _cd.call("cuEventSynchronize", self._handle)

    def ipc_handle(self) -> bytes:
        """The event's CUDA IPC handle (64 bytes); the event must be created with ``interprocess=True``."""
        if not self.interprocess:
            raise RuntimeError("ipc_handle() needs an Event created with interprocess=True")
        if not self.device.is_ipc_supported:
            raise RuntimeError(f"Device {self.device} does not support IPC")
        h = _cd.call("cuIpcGetEventHandle", self._handle)
        return bytes(getattr(h, "reserved", h))[:64]

    def __repr__(self) -> str:
        return f"<Event {self._handle:#x} on {self.device}>"

    def __del__(self) -> None:
        if getattr(self, "owner", False) and self._obj is not None and _cd._STATE.mod is not None:
            try:
                _cd.call("cuEventDestroy", self._obj)
            except Exception:  # noqa: BLE001
                pass


def _query(fn: str, h: int) -> bool:
    drv = _cd.require_driver()
    (err,) = getattr(drv, fn)(h)
    code = int(err)
    if code == 0:
        return True
    if code == 600:  # CUDA_ERROR_NOT_READY
        return False
    raise _cd.CudaError(fn, code, _cd._error_name(drv, err), _cd._error_text(drv, err))


# ---------------------------------------------------------------------------------------------------------------
# Functions (reference API)
# ---------------------------------------------------------------------------------------------------------------


def get_stream(device: Any = None) -> Stream:
    """The current stream of ``device`` (default: the current device).

    Raises:
        RuntimeError: the device is not a CUDA device.
    """
    return get_device(device).stream  # type: ignore[no-any-return]


def set_stream(stream: Stream, device: Any = None, sync: bool = False) -> None:
    """Make ``stream`` the current stream of ``device`` (default: the current device).

    ``sync=True`` makes ``stream`` first wait for the work on the device's previous current stream.
    """
    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"Device {dev} is not a CUDA device")
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream() expects a Stream, got {type(stream).__name__}")
    dev.set_stream(stream, sync=sync)  # type: ignore[attr-defined]


def wait_stream(other_stream: Stream, event: Event | None = None, external: bool = False) -> None:
    """Make the current stream wait for the work submitted to ``other_stream`` so far."""
    get_stream().wait_stream(other_stream, event, external)


def synchronize_stream(stream_or_device: Any = None) -> None:
    """Block until the work on a stream (or a device's current stream) is done; nothing to wait for on the CPU."""
    if isinstance(stream_or_device, Stream):
        stream_or_device.synchronize()
        return
    dev = get_device(stream_or_device)
    if dev.is_cuda:
        dev.stream.synchronize()


def record_event(event: Event | None = None, external: bool = False) -> Event:
    """Record an event (a new one if ``None``) on the current stream; returns it."""
    return get_stream().record_event(event, external)


def wait_event(event: Event, external: bool = False) -> None:
    """Make the current stream wait until ``event`` completes."""
    get_stream().wait_event(event, external)


def synchronize_event(event: Event) -> None:
    """Block until ``event`` completes."""
    if not isinstance(event, Event):
        raise TypeError(f"synchronize_event() expects an Event, got {type(event).__name__}")
    event.synchronize()


def get_event_elapsed_time(start_event: Event, end_event: Event, synchronize: bool = True) -> float:
    """Milliseconds between two recorded events created with ``enable_timing=True`` (resolution ~0.5 us)."""
    for ev in (start_event, end_event):
        if not isinstance(ev, Event):
            raise TypeError(f"get_event_elapsed_time() expects Events, got {type(ev).__name__}")
        if not ev.enable_timing and ev.owner:
            raise RuntimeError("get_event_elapsed_time() needs events created with enable_timing=True")
    if synchronize:
        end_event.synchronize()
    return float(_cd.call("cuEventElapsedTime", start_event.cuda_event, end_event.cuda_event))


class ScopedStream:
    """Make a stream the current stream of its device (and that device current) inside a ``with`` block.

    Args:
        stream: the stream; ``None`` makes the block a no-op.
        sync_enter: the stream first waits for the device's previous current stream.
        sync_exit: on exit, the previous stream waits for this one.
    """

    def __init__(self, stream: Stream | None, sync_enter: bool = True, sync_exit: bool = False) -> None:
        self.stream = stream
        self.sync_enter = sync_enter
        self.sync_exit = sync_exit
        self.device = stream.device if stream is not None else None
        self.saved_stream: Stream | None = None
        self._device_scope: ScopedDevice | None = None

    def __enter__(self) -> Stream | None:
        if self.stream is None or self.device is None:
            return None
        self._device_scope = ScopedDevice(self.device)
        self._device_scope.__enter__()
        self.saved_stream = self.device.stream
        self.device.set_stream(self.stream, sync=self.sync_enter)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is None or self.device is None:
            return
        assert self.saved_stream is not None and self._device_scope is not None
        if self.sync_exit:
            self.saved_stream.wait_stream(self.stream)
        self.device.set_stream(self.saved_stream, sync=False)
        self._device_scope.__exit__(*exc)
