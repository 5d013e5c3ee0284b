"""Argument setters shared by the recorded-launch classes (CPU ``Launch``, ``CudaLaunch``, ``InterpretedLaunch``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ParamSetters:
    """``set_param_at_index`` / ``set_param_by_name`` / ``set_params`` of a recorded launch.

    The default ``set_param_at_index`` repacks one argument into the launch's ctypes argument struct (``self.args``)
    with the plan's packer for that parameter, keeping the Python value alive; launches that keep Python values
    (the interpreter) override it.
    """

    kernel: Any
    plan: Any
    device: Any
    args: Any
    _keep: list[Any]

    def set_param_at_index(self, index: int, value: Any) -> None:
        """Replace one argument by position."""
        name = self.kernel.param_names[index]
        setattr(self.args, name, self.plan.packers[index](value, self.device))
        self._keep[index] = value

    def set_param_by_name(self, name: str, value: Any) -> None:
        """Replace one argument by name."""
        self.set_param_at_index(self.kernel.param_names.index(name), value)

    def set_params(self, values: Sequence[Any]) -> None:
        """Replace all arguments."""
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)
