"""``Tape``: records launches and replays their adjoints in reverse order.

Overwrite safety is on by default: when a recorded launch writes an array that an earlier recorded launch read, the
backward pass of the earlier launch would replay with the new values and give wrong gradients. ``backward()``
then raises an error naming both kernels and the array. Opt out with ``Tape(check_overwrites=False)`` or
``wp.config.verify_autograd_array_access = False``. The check costs a few dictionary updates per recorded launch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ... import config
from ..errors import TreadleError
from .state import pop_tape, push_tape


class OverwriteError(TreadleError):
    """A recorded launch's input was overwritten before ``Tape.backward()``."""


@dataclasses.dataclass
class _Recorded:
    kernel: Any
    dim: Any
    inputs: list[Any]
    outputs: list[Any]
    device: Any
    reads: list[tuple[Any, str, int]]
    inst: Any = None


class Tape:
    """Records kernel launches (``with wp.Tape() as tape: ...``) so that ``tape.backward()`` computes gradients."""

    def __init__(self, check_overwrites: bool | None = None) -> None:
        self.launches: list[Any] = []
        self.scopes: list[tuple[int, str]] = []
        self.loss: Any = None
        self.check_overwrites = check_overwrites
        self._versions: dict[int, int] = {}
        self._writer: dict[int, str] = {}
        self._arrays: dict[int, Any] = {}

    # Recording --------------------------------------------------------------------------------------------------
    def __enter__(self) -> Tape:
        from .state import active_tape

        if active_tape() is not None:
            raise RuntimeError("tapes cannot be nested: a wp.Tape is already recording on this thread")
        push_tape(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        pop_tape(self)

    def _checking(self) -> bool:
        if self.check_overwrites is not None:
            return self.check_overwrites
        return bool(config.verify_autograd_array_access)

    def record_launch(self, kernel: Any, dim: Any, inputs: Any, outputs: Any, device: Any, inst: Any = None) -> None:
        """Record one launch (called by ``wp.launch`` while this tape is active)."""
        from ..lang.array import array

        args = list(inputs) + list(outputs)
        for a in args:
            if isinstance(a, array):
                self._arrays[id(a)] = a
        reads: list[tuple[Any, str, int]] = []
        if self._checking() and inst is not None:
            from ..compiler.access import array_access

            acc = getattr(inst, "_array_access", None)
            if acc is None:
                acc = inst._array_access = array_access(inst.ir)
            r, w = acc
            names = kernel.param_names
            for i in sorted(r):
                a = args[i] if i < len(args) else None
                if isinstance(a, array):
                    reads.append((a, names[i], self._versions.get(id(a), 0)))
            for i in sorted(w):
                a = args[i] if i < len(args) else None
                if isinstance(a, array):
                    self._versions[id(a)] = self._versions.get(id(a), 0) + 1
                    self._writer[id(a)] = kernel.key
        self.launches.append(_Recorded(kernel, dim, list(inputs), list(outputs), device, reads, inst))

    def record_func(self, backward: Callable[[], None], arrays: list[Any]) -> None:
        """Record a Python callback that computes the adjoint of a custom operation on ``arrays``."""
        for a in arrays:
            self._arrays[id(a)] = a
        self.launches.append(backward)

    def record_scope_begin(self, scope_name: str, metadata: Any = None) -> None:
        """Mark the start of a named group of launches (kept for visualisation)."""
        self.scopes.append((len(self.launches), scope_name, metadata if metadata is not None else {}))
        self._open_scopes = getattr(self, "_open_scopes", 0) + 1

    def record_scope_end(self, remove_scope_if_empty: bool = True) -> None:
        """Mark the end of the innermost scope (an empty scope is dropped unless asked otherwise)."""
        if getattr(self, "_open_scopes", 0) <= 0:
            raise RuntimeError("record_scope_end() without a matching record_scope_begin()")
        self._open_scopes -= 1
        if remove_scope_if_empty and self.scopes and self.scopes[-1][0] == len(self.launches) and \
                self.scopes[-1][1] is not None:
            self.scopes.pop()  # the matching begin, with nothing recorded since
            return
        self.scopes.append((len(self.launches), None, None))

    # Backward ---------------------------------------------------------------------------------------------------
    def _verify(self) -> None:
        for rec in self.launches:
            if not isinstance(rec, _Recorded):
                continue
            for a, name, version in rec.reads:
                if self._versions.get(id(a), 0) != version:
                    writer = self._writer.get(id(a), "a later launch")
                    raise OverwriteError(
                        f"array '{name}' read by kernel '{rec.kernel.key}' was overwritten by kernel '{writer}' "
                        "later in the recorded sequence, so its gradient would use the new values and be wrong.\n"
                        "fix: write results to a new array instead of updating one in place (e.g. double-buffer "
                        "state per time step); or, if the overwrite is harmless for the gradient, opt out with "
                        "wp.Tape(check_overwrites=False)"
                    )

    def backward(self, loss: Any = None, grads: dict[Any, Any] | None = None) -> None:
        """Propagate adjoints backwards through the recorded launches.

        Args:
            loss: a one-element array whose gradient is seeded with 1.
            grads: alternatively, a mapping from output arrays to their seed gradients.
        """
        from ..lang.launch import launch

        if self._checking():
            self._verify()
        if loss is not None:
            if loss.grad is None:
                raise TreadleError("the loss array has no gradient buffer: create it with requires_grad=True")
            loss.grad.fill_(1.0)
            self.loss = loss
        if grads:
            for arr, g in grads.items():
                if arr.grad is None:
                    raise TreadleError("an array in grads has no gradient buffer: create it with requires_grad=True")
                arr.grad.assign(g)
        pending = [r for r in self.launches if isinstance(r, _Recorded)]
        from ..lang.kernel import load_backward

        load_backward([r.inst for r in pending if r.inst is not None])  # compile all backward passes in one batch
        for rec in reversed(self.launches):
            if callable(rec) and not isinstance(rec, _Recorded):
                rec()
                continue
            launch(rec.kernel, rec.dim, rec.inputs, rec.outputs, device=rec.device, adjoint=True, record_tape=False)

    # Gradients --------------------------------------------------------------------------------------------------
    @property
    def gradients(self) -> dict[Any, Any]:
        """Mapping from each recorded array that has a gradient buffer to that buffer."""
        return {a: a.grad for a in self._arrays.values() if getattr(a, "grad", None) is not None}

    def get_adjoint(self, a: Any) -> Any:
        """The gradient buffer of ``a`` (or ``None``)."""
        return getattr(a, "grad", None)

    def zero(self) -> None:
        """Set every recorded array's gradient to zero."""
        for a in self._arrays.values():
            g = getattr(a, "grad", None)
            if g is not None:
                g.zero_()

    def reset(self) -> None:
        """Forget the recorded launches and zero the gradients."""
        self.zero()
        self.launches = []
        self.scopes = []
        self._versions.clear()
        self._writer.clear()
        self._arrays.clear()
        self._open_scopes = 0

    def visualize(self, filename: str | None = None, **kwargs: Any) -> str:
        """A GraphViz description of the recorded launches and the arrays they use (written to ``filename``)."""
        lines = ["digraph tape {", "  rankdir=LR;"]
        for i, rec in enumerate(self.launches):
            if not isinstance(rec, _Recorded):
                lines.append(f'  l{i} [label="func {i}" shape=box];')
                continue
            lines.append(f'  l{i} [label="{rec.kernel.key}" shape=box];')
            for a in rec.inputs:
                if hasattr(a, "ptr"):
                    lines.append(f'  a{id(a)} -> l{i};')
            for a in rec.outputs:
                if hasattr(a, "ptr"):
                    lines.append(f'  l{i} -> a{id(a)};')
        lines.append("}")
        text = "\n".join(lines)
        if filename:
            with open(filename, "w") as f:
                f.write(text)
        return text
