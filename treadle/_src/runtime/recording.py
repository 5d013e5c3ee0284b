"""Which :class:`Tape` (if any) is recording launches on this thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from .state import tapes_changed

_local = threading.local()


def active_tape() -> Any:
    """The innermost recording tape of the calling thread, or ``None``."""
    stack = _local.__dict__.get("stack")  # not getattr: a missing attribute raises inside, ~1 us per launch
    return stack[-1] if stack else None


def push_tape(tape: Any) -> None:
    """Start recording into ``tape`` on this thread."""
    if not hasattr(_local, "stack"):
        _local.stack = []
    _local.stack.append(tape)
    tapes_changed(1)


def pop_tape(tape: Any) -> None:
    """Stop recording into ``tape``."""
    stack = getattr(_local, "stack", [])
    if stack and stack[-1] is tape:
        stack.pop()
        tapes_changed(-1)


@contextlib.contextmanager
def suspend_tapes() -> Iterator[None]:
    """Hide the recording tapes of this thread inside a ``with`` block (tools that run their own tape)."""
    saved = getattr(_local, "stack", [])
    _local.stack = []
    tapes_changed(-len(saved))
    try:
        yield
    finally:
        tapes_changed(len(saved) - len(_local.stack))
        _local.stack = saved
