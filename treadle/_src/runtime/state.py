"""Process-wide runtime state in a leaf module: the device runtime's holder, the graph captures, the launch state.

The native launch extension (``fastlaunch.py``) reads them on every launch, so they live below the modules that use
them: ``device.py`` installs how the runtime is created and started, ``graph.py`` keeps the captures,
``recording.py`` the tapes. :data:`LAUNCH` is the C struct the extension reads instead of Python attributes: the
configuration epoch (bumped by every write to ``wp.config`` and when kernels drop their instances), the counts
of active captures and tapes, the settings a launch reads (``print_launches``, ``num_threads``,
``deterministic``), and the held device runtime's default device and devices by name (:func:`publish_devices`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from ... import config


class LaunchState(ctypes.Structure):
    """What a native launch reads of the process (``native/fastlaunch.cpp``: ``LaunchState``, field for field)."""

    _fields_ = [("epoch", ctypes.c_int64), ("captures", ctypes.c_int32), ("tapes", ctypes.c_int32),
                ("print_launches", ctypes.c_int32), ("num_threads", ctypes.c_int32),
                ("deterministic", ctypes.c_int32), ("reserved", ctypes.c_int32),
                # the held device runtime's default device and its devices by name (NULL: no runtime yet)
                ("default_device", ctypes.py_object), ("devices", ctypes.py_object)]


#: the launch state (its address is handed to the extension once)
LAUNCH = LaunchState()


def _config_changed(name: str | None = None, value: Any = None) -> None:
    """Copy the settings a launch reads into :data:`LAUNCH` and start a new configuration epoch."""
    LAUNCH.print_launches = bool(config.print_launches)
    try:
        LAUNCH.num_threads = max(0, int(config.num_threads))
    except (TypeError, ValueError):  # an odd value: every launch takes the Python path, which reports it
        LAUNCH.num_threads = 0
        LAUNCH.print_launches = 1
    LAUNCH.deterministic = bool(config.deterministic)
    LAUNCH.epoch += 1


_config_changed()
config.on_change(_config_changed)


def publish_devices(runtime: Any) -> None:
    """Copy ``runtime``'s default device and devices by name into :data:`LAUNCH` (``None``: no runtime is held).

    ``device.py`` calls it whenever the held runtime's default device changes.
    """
    if runtime is None:
        LAUNCH.default_device = ctypes.py_object()
        LAUNCH.devices = ctypes.py_object()
    else:
        LAUNCH.default_device = ctypes.py_object(runtime.default_device)
        LAUNCH.devices = ctypes.py_object(runtime.devices)


def new_epoch() -> None:
    """Start a new configuration epoch: remembered plans are checked again before the native path takes them."""
    LAUNCH.epoch += 1


class CaptureState:
    """Active captures: a process-wide count (cheap to test on every launch) and the per-thread graph."""

    def __init__(self) -> None:
        self.count = 0
        self.local = threading.local()
        self.lock = threading.Lock()

    def enter(self) -> None:
        """A capture starts (under :attr:`lock`)."""
        self.count += 1
        LAUNCH.captures = self.count

    def leave(self) -> None:
        """A capture ends (under :attr:`lock`)."""
        self.count -= 1
        LAUNCH.captures = self.count


#: the graph captures (``graph.STATE``)
CAPTURE = CaptureState()


class RuntimeHolder:
    """The one lazily created device runtime, plus the registered device providers (kept across resets).

    ``factory(providers)`` makes the runtime and ``start()`` runs once it is held (both set by ``device.py``): the
    runtime is held before it starts, so that starting may look devices up.
    """

    def __init__(self) -> None:
        self.providers: list[Any] = []
        self.runtime: Any = None
        self.factory: Callable[[list[Any]], Any] | None = None
        self.start: Callable[[], None] | None = None
        self._started = False
        # re-entrant: starting looks devices up through ``get`` on the same thread
        self._lock = threading.RLock()

    def get(self) -> Any:
        """The runtime, created (and started) on first use; threads asking meanwhile wait for it to be started."""
        rt = self.runtime
        if rt is not None and self._started:
            return rt
        with self._lock:
            if self.runtime is None:
                if self.factory is None:
                    raise RuntimeError("the device runtime is not set up (treadle._src.runtime.device is not "
                                       "imported)")
                self.runtime = self.factory(self.providers)
                try:
                    publish_devices(self.runtime)
                    if self.start is not None:
                        self.start()
                finally:
                    self._started = True
            return self.runtime

    def reset(self) -> None:
        """Drop the runtime (the next use creates it again)."""
        with self._lock:
            self.runtime = None
            self._started = False
            publish_devices(None)


#: the device runtime (``device._HOLDER``)
DEVICES = RuntimeHolder()


_tape_lock = threading.Lock()


def tapes_changed(delta: int) -> None:
    """``delta`` tapes started (or, negative, stopped) recording on some thread."""
    with _tape_lock:
        LAUNCH.tapes = max(0, LAUNCH.tapes + delta)
