"""Timing and profiler control: ``ScopedTimer``, ``timing_begin/end/print``, ``TimingResult``, the CUDA profiler.

``ScopedTimer`` measures wall time of a ``with`` block in milliseconds (``elapsed``), prints it indented by how deep
timers are nested, appends it to a dict of lists, can synchronize devices around the block, profile it with
cProfile (``detailed``), mark it as an NVTX range (``use_nvtx``, with the ``nvtx`` package) and record it as a
scope of the active ``Tape``.

Activity timing (``timing_begin``/``timing_end``) reports CUDA activity, as in the reference; CPU work is not an
activity, so on a machine without CUDA the results are empty. Collection of CUDA activity is not implemented yet:
where CUDA devices exist, ``timing_begin`` says so with a warning, and the results are empty there too.
"""

from __future__ import annotations

import builtins
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

#: Activity filter of ``timing_begin`` / ``ScopedTimer(cuda_filter=...)``: kernel launches.
TIMING_KERNEL = 1
#: Activity filter: launches of the kernels Treadle runs for its own builtins (sorts, geometry builds).
TIMING_KERNEL_BUILTIN = 2
#: Activity filter: memory copies.
TIMING_MEMCPY = 4
#: Activity filter: memory fills.
TIMING_MEMSET = 8
#: Activity filter: graph launches.
TIMING_GRAPH = 16
#: Activity filter: every kind of activity (the bit flags above, combined).
TIMING_ALL = 0xFFFFFFFF


class TimingResult:
    """One timed activity: its device, name, filter flag (``TIMING_*``) and duration in milliseconds."""

    def __init__(self, device: Any, name: str, filter: int, elapsed: float) -> None:  # noqa: A002 - reference name
        self.device = device
        self.name = name
        self.filter = filter
        self.elapsed = elapsed

    def __repr__(self) -> str:
        return f"TimingResult(device={_device_name(self.device)!r}, name={self.name!r}, filter={self.filter}, " \
               f"elapsed={self.elapsed})"


def _device_name(device: Any) -> str:
    return str(getattr(device, "alias", device))


def _cuda_devices() -> list[Any]:
    from .device import get_cuda_device_count, get_cuda_devices

    return list(get_cuda_devices()) if get_cuda_device_count() > 0 else []


def _synchronize() -> None:
    from .device import synchronize

    synchronize()


class _TimingState:
    """Whether activity timing is on, and its filter (one per process, as in the reference)."""

    def __init__(self) -> None:
        self.active = False
        self.filter = 0
        self.warned = False


_TIMING = _TimingState()


def timing_begin(cuda_filter: int = TIMING_ALL, synchronize: bool = True) -> None:
    """Begin timing device activity (kernels, copies, memsets, graphs) selected by ``cuda_filter``.

    Args:
        cuda_filter: ``TIMING_*`` flags of the activities to record.
        synchronize: synchronize every device first, so that earlier work is not timed.

    """
    if synchronize:
        _synchronize()
    _TIMING.active = True
    _TIMING.filter = int(cuda_filter)
    if not _TIMING.warned and _cuda_devices():
        _TIMING.warned = True
        warnings.warn("timing_begin(): Treadle does not collect CUDA activity timings yet; timing_end() will return "
                      "no results (use wp.ScopedTimer(synchronize=True) or wp.Event timings instead)", stacklevel=2)


def timing_end(synchronize: bool = True) -> list[TimingResult]:
    """End activity timing.

    Args:
        synchronize: synchronize every device first, so that all recorded work has finished.

    Returns:
        The recorded activities (CPU work is not an activity: empty without CUDA).

    """
    if synchronize:
        _synchronize()
    _TIMING.active = False
    return []


def timing_print(results: list[TimingResult], indent: str = "") -> None:
    """Print activity timings: a timeline, then totals per activity name and per device.

    Args:
        results: the activities, e.g. from :func:`timing_end`.
        indent: a prefix for every line.

    """
    if not results:
        print(f"{indent}No activity")
        return
    rule = f"{indent}{'-' * 16}+{'-' * 9}+{'-' * 17}"

    def table(title: str, head: tuple[str, str, str], rows: list[tuple[str, str, str]]) -> None:
        print(f"{indent}{title}:")
        print(rule)
        print(f"{indent}{head[0]:<16}| {head[1]:<8}| {head[2]}")
        print(rule)
        for a, b, c in rows:
            print(f"{indent}{a:>16}| {b:<8}| {c}")

    table("Timeline", ("Time", "Device", "Activity"),
          [(f"{r.elapsed:.6f} ms ", _device_name(r.device), r.name) for r in results])
    by_name: dict[str, list[float]] = {}
    by_device: dict[str, list[float]] = {}
    for r in results:
        by_name.setdefault(r.name, []).append(r.elapsed)
        by_device.setdefault(_device_name(r.device), []).append(r.elapsed)
    print()
    table("Activity summary", ("Total time", "Count", "Activity"),
          [(f"{sum(v):.6f} ms ", f"{len(v):>7}", k) for k, v in by_name.items()])
    print()
    table("Device summary", ("Total time", "Count", "Device"),
          [(f"{sum(v):.6f} ms ", f"{len(v):>7}", k) for k, v in by_device.items()])


class _Nesting(threading.local):
    depth = 0


_NESTING = _Nesting()
#: Indentation per nesting level of printed timers.
_INDENT = "    "


class ScopedTimer:
    """Time the block of a ``with`` statement.

    Attributes:
        elapsed: the block's duration in milliseconds (0.0 while running or when inactive).
        extra_msg: text appended to the printed line.
        timing_results: the activities recorded with ``cuda_filter``.

    """

    def __init__(
        self,
        name: str,
        active: bool = True,
        print: bool = True,  # noqa: A002 - the reference's parameter name
        detailed: bool = False,
        dict: builtins.dict[str, list[float]] | None = None,  # noqa: A002
        use_nvtx: bool = False,
        color: int | str = "rapids",
        synchronize: bool = False,
        cuda_filter: int = 0,
        report_func: Callable[[list[TimingResult], str], None] | None = None,
        skip_tape: bool = False,
    ) -> None:
        """Configure the timer.

        Args:
            name: the timer's name (printed, and the key in ``dict``).
            active: when False the timer does nothing.
            print: print ``"<name> took <ms> ms"`` when the block ends.
            detailed: profile the block with cProfile and print its statistics.
            dict: a dict of lists to which the elapsed time is appended under ``name``.
            use_nvtx: mark the block as an NVTX range instead of timing it (needs the ``nvtx`` package).
            color: the NVTX range's colour (ARGB value or colour name).
            synchronize: synchronize every device before the block starts and before it is timed at the end, so
                that asynchronous device work is included.
            cuda_filter: ``TIMING_*`` flags of device activities to record and report (see :func:`timing_begin`).
            report_func: ``f(results, indent)`` reports the activities (default :func:`timing_print`).
            skip_tape: do not record the block as a scope of the active ``Tape``.

        """
        self.name = name
        self.active = active and self.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.use_nvtx = use_nvtx
        self.color = color
        self.synchronize = synchronize
        self.cuda_filter = cuda_filter
        self.report_func = report_func or timing_print
        self.skip_tape = skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""
        self.timing_results: list[TimingResult] = []
        self._start = 0
        self._profile: Any = None
        self._nvtx_range: Any = None
        self._nvtx: Any = None
        self._tape: Any = None
        self._depth = 0

    #: Class-wide switch: ``ScopedTimer.enabled = False`` turns every timer created afterwards off.
    enabled = True

    def __enter__(self) -> ScopedTimer:
        if not self.active:
            return self
        if not self.skip_tape:
            from .recording import active_tape

            self._tape = active_tape()
            if self._tape is not None:
                self._tape.record_scope_begin(self.name)
        if self.synchronize:
            _synchronize()
        if self.use_nvtx:
            try:
                import nvtx
            except ImportError:
                raise ImportError("ScopedTimer(use_nvtx=True) needs the nvtx package: pip install nvtx") from None
            self._nvtx = nvtx
            self._nvtx_range = nvtx.start_range(self.name, color=self.color)
            return self
        if self.cuda_filter:
            timing_begin(self.cuda_filter, synchronize=False)
        if self.detailed:
            import cProfile

            self._profile = cProfile.Profile()
            self._profile.enable()
        self._depth = _NESTING.depth
        _NESTING.depth += 1
        self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        try:
            if self.use_nvtx:
                if self.synchronize:
                    _synchronize()
                self._nvtx.end_range(self._nvtx_range)
                return
            if self._profile is not None:
                self._profile.disable()
                self._profile.print_stats(sort="tottime")
            if self.cuda_filter:
                self.timing_results = timing_end(synchronize=False)
            if self.synchronize:
                _synchronize()
            self.elapsed = (time.perf_counter_ns() - self._start) / 1.0e6
            _NESTING.depth = self._depth
            if self.dict is not None:
                self.dict.setdefault(self.name, []).append(self.elapsed)
            if self.print:
                prefix = _INDENT * self._depth
                if self.cuda_filter:
                    self.report_func(self.timing_results, prefix)
                sys.stdout.write(f"{prefix}{self.name} took {self.elapsed:.2f} ms {self.extra_msg}\n")
        finally:
            if self._tape is not None:
                self._tape.record_scope_end()
                self._tape = None


def _cuda_device_or_none(device: Any) -> Any:
    from .device import get_device

    dev = get_device(device)
    return dev if getattr(dev, "is_cuda", False) else None


def cuda_profiler_start(device: Any = None) -> None:
    """Start an attached CUDA profiler's data collection (``cuProfilerStart``) for ``device``'s context.

    Does nothing when ``device`` (default: the current device) is not a CUDA device.
    """
    dev = _cuda_device_or_none(device)
    if dev is not None:
        from .cuda_driver import ContextGuard, call

        with ContextGuard(dev):
            call("cuProfilerStart")


def cuda_profiler_stop(device: Any = None) -> None:
    """Stop an attached CUDA profiler's data collection (``cuProfilerStop``) for ``device``'s context.

    Does nothing when ``device`` (default: the current device) is not a CUDA device.
    """
    dev = _cuda_device_or_none(device)
    if dev is not None:
        from .cuda_driver import ContextGuard, call

        with ContextGuard(dev):
            call("cuProfilerStop")


class ScopedCudaProfiler:
    """Limit an attached CUDA profiler's capture to a ``with`` block (:func:`cuda_profiler_start` / ``_stop``).

    The device is resolved when the object is made, so the same context is used at both ends even if the current
    device changes inside the block. Does nothing for a device that is not a CUDA device.
    """

    def __init__(self, device: Any = None) -> None:
        """Resolve ``device`` (default: the current device)."""
        self.device = _cuda_device_or_none(device)

    def __enter__(self) -> ScopedCudaProfiler:
        if self.device is not None:
            cuda_profiler_start(self.device)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device is not None:
            cuda_profiler_stop(self.device)
