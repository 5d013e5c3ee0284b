"""Helpers for the fixed-point dataflow passes over the typed IR (``access.value_reads``, ``adjoint_live``)."""

from __future__ import annotations

from typing import Any

from . import ir


class Marks:
    """A growing set of IR values and locals; each ``add`` says whether it changed the set (for fixed points)."""

    def __init__(self) -> None:
        self.values: set[int] = set()
        self.locals: set[int] = set()

    def add(self, op: Any) -> bool:
        """Mark an operand (a value, or the local a ``LocalRef`` names); other operands are ignored."""
        if isinstance(op, ir.Value) and op.id not in self.values:
            self.values.add(op.id)
            return True
        if isinstance(op, ir.LocalRef):
            return self.add_local(op.local.id)
        return False

    def add_all(self, ops: Any) -> bool:
        """Mark every operand of a list (``None`` is an empty list)."""
        changed = False
        for op in ops or []:
            changed = self.add(op) or changed
        return changed

    def add_local(self, local_id: int) -> bool:
        """Mark a local variable by id."""
        if local_id in self.locals:
            return False
        self.locals.add(local_id)
        return True
