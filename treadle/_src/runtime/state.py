"""Process-wide runtime state in a leaf module: the device runtime's holder and the graph-capture state.

The native launch extension (``fastlaunch.py``) reads both on every launch (the default device; whether a capture
is active), so they live below the modules that use them: ``device.py`` installs how the runtime is created and
started, ``graph.py`` keeps the captures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class CaptureState:
    """Active captures: a process-wide count (cheap to test on every launch) and the per-thread graph."""

    def __init__(self) -> None:
        self.count = 0
        self.local = threading.local()
        self.lock = threading.Lock()


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

    def get(self) -> Any:
        """The runtime, created (and started) on first use."""
        if self.runtime is None:
            if self.factory is None:
                raise RuntimeError("the device runtime is not set up (treadle._src.runtime.device is not imported)")
            self.runtime = self.factory(self.providers)
            if self.start is not None:
                self.start()
        return self.runtime

    def reset(self) -> None:
        """Drop the runtime (the next use creates it again)."""
        self.runtime = None


#: the device runtime (``device._HOLDER``)
DEVICES = RuntimeHolder()
