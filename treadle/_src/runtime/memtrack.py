"""Allocation tracking: :class:`ScopedMemoryTracker`, :func:`print_memory_report` and ``config.track_memory``.

While tracking is on (``wp.config.track_memory = True``, or inside a ``ScopedMemoryTracker``), every array
allocation is recorded with its device, size, a label (``array[float32, 1000]``), the user's line that made it and
the tracker scope it was made in (nested trackers form paths such as ``sim/collision``). Records leave the live set
when the memory is released (the owner of the allocation is collected). Totals, peaks and live sets are per device
and process-wide; the scope stack is per thread. When the outermost tracker exits and ``config.track_memory`` is
off, tracking stops and the records are cleared.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import IO, Any

from ... import config

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass
class _Record:
    seq: int
    device: str
    nbytes: int
    label: str
    site: str
    scope: str


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0  # active ScopedMemoryTracker objects
        self.seq = itertools.count()
        self.clear()

    def clear(self) -> None:
        self.live: dict[int, _Record] = {}
        self.total: dict[str, list[int]] = {}  # device -> [count, bytes] of every allocation made
        self.current: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.scopes: dict[str, dict[str, list[int]]] = {}  # scope -> device -> [count, bytes]


_state = _State()
_local = threading.local()


def _scope_stack() -> list[str]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def is_tracking() -> bool:
    """Whether allocations are being recorded now."""
    return builtins.bool(config.track_memory) or _state.depth > 0


def _user_site() -> str:
    """``file:line : function()`` of the innermost frame outside Treadle's package."""
    f: types.FrameType | None = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    if f is None:
        return "<unknown>"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno} : {f.f_code.co_name}()"


def record_allocation(owner: Any, device: Any, nbytes: int, label: str) -> None:
    """Record an allocation of ``nbytes`` on ``device`` whose memory lives as long as ``owner`` (if tracking)."""
    if not is_tracking():
        return
    dev = str(device)
    stack = _scope_stack()
    rec = _Record(next(_state.seq), dev, int(nbytes), label, _user_site(), "/".join(stack) or "(no scope)")
    with _state.lock:
        _state.live[rec.seq] = rec
        total = _state.total.setdefault(dev, [0, 0])
        total[0] += 1
        total[1] += rec.nbytes
        cur = _state.current[dev] = _state.current.get(dev, 0) + rec.nbytes
        _state.peak[dev] = max(_state.peak.get(dev, 0), cur)
        scope = _state.scopes.setdefault(rec.scope, {}).setdefault(dev, [0, 0])
        scope[0] += 1
        scope[1] += rec.nbytes
    try:
        weakref.finalize(owner, _release, rec.seq)
    except TypeError:  # an owner without weak references: the allocation stays listed as live
        pass


def _release(seq: int) -> None:
    with _state.lock:
        rec = _state.live.pop(seq, None)
        if rec is not None:
            _state.current[rec.device] = _state.current.get(rec.device, 0) - rec.nbytes


def _fmt(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def memory_report(sort: str = "size", max_items: int = 10) -> str:
    """The text :func:`print_memory_report` prints (see there)."""
    if sort not in ("size", "chronological"):
        raise ValueError(f"Invalid sort order {sort!r}: expected 'size' or 'chronological'")
    with _state.lock:
        live = list(_state.live.values())
        total = {d: list(v) for d, v in _state.total.items()}
        peak = dict(_state.peak)
        scopes = {s: {d: list(v) for d, v in per.items()} for s, per in _state.scopes.items()}
    lines = ["Memory allocations (tracked)"]
    lines.append("  allocated in all:")
    lines += [f"    {d:<12} {c} allocation(s), {_fmt(b)}" for d, (c, b) in sorted(total.items())]
    lines.append("  peak in use:")
    lines += [f"    {d:<12} {_fmt(b)}" for d, b in sorted(peak.items())]
    lines.append("  live now:")
    for d in sorted(total):
        mine = [r for r in live if r.device == d]
        lines.append(f"    {d:<12} {len(mine)} allocation(s), {_fmt(sum(r.nbytes for r in mine))}")
    if scopes:
        lines.append("  by scope:")
        for s in sorted(scopes):
            lines.append(f"    {s}:")
            lines += [f"      {d}: {c} allocation(s), {_fmt(b)}" for d, (c, b) in sorted(scopes[s].items())]
    for d in sorted({r.device for r in live}):
        mine = [r for r in live if r.device == d]
        if sort == "size":
            mine.sort(key=lambda r: (-r.nbytes, r.seq))
            order = "largest first"
        else:
            mine.sort(key=lambda r: r.seq)
            order = "oldest first"
        lines.append(f"  live on {d} ({order}, at most {max_items}):")
        lines += [f"    {_fmt(r.nbytes):>10} : {r.label} : {r.site} : scope {r.scope}" for r in mine[:max_items]]
    return "\n".join(lines)


def print_memory_report(file: IO[str] | None = None, sort: str = "size", max_items: int = 10) -> None:
    """Print the tracked allocations: totals, peak and live use per device, per-scope totals, the live list.

    Args:
        file: where to write (``sys.stdout`` by default).
        sort: order of the live allocations listed per device: ``"size"`` (largest first) or ``"chronological"``
            (oldest first).
        max_items: at most this many live allocations listed per device.

    Raises:
        ValueError: ``sort`` is neither ``"size"`` nor ``"chronological"``.
        RuntimeError: tracking is off (set ``wp.config.track_memory = True`` or use :class:`ScopedMemoryTracker`).

    """
    if sort not in ("size", "chronological"):
        raise ValueError(f"Invalid sort order {sort!r}: expected 'size' or 'chronological'")
    if not is_tracking():
        raise RuntimeError("Allocation tracking is off: set wp.config.track_memory = True, or call this inside a "
                           "`with wp.ScopedMemoryTracker():` block")
    print(memory_report(sort, max_items), file=file or sys.stdout)


class ScopedMemoryTracker:
    """Record the allocations made inside a ``with`` block (and nested blocks), report them on exit.

    Args:
        name: the scope's name; nested trackers make paths (``"simulation/collision"``).
        active: ``False`` makes the tracker do nothing (keep the call site, switch it off).
        print: print the report when the block exits.
        report_func: called with the report text instead of printing it.

    """

    def __init__(self, name: str = "root", active: bool = True, print: bool = True,  # noqa: A002 - the API's name
                 report_func: Callable[[str], None] | None = None) -> None:
        self.name = name
        self.active = active
        self.print = print
        self.report_func = report_func
        self._entered = False

    def __enter__(self) -> ScopedMemoryTracker:
        if self.active:
            with _state.lock:
                _state.depth += 1
            _scope_stack().append(self.name)
            self._entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._entered:
            return
        self._entered = False
        stack = _scope_stack()
        if stack:
            stack.pop()
        if self.print:
            text = memory_report()
            if self.report_func is not None:
                self.report_func(text)
            else:
                builtins.print(text)
        with _state.lock:
            _state.depth -= 1
            stop = _state.depth == 0 and not config.track_memory
        if stop:
            self.clear()

    def report(self, sort: str = "size", max_items: int = 10) -> str:
        """The report text now (the same as :func:`print_memory_report` prints)."""
        return memory_report(sort, max_items)

    def clear(self) -> None:
        """Forget every record (totals, peaks, live allocations)."""
        with _state.lock:
            _state.clear()
