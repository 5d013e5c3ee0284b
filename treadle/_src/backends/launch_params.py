"""Argument setters shared by the recorded-launch classes (CPU ``Launch``, ``CudaLaunch``, ``InterpretedLaunch``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.abi import ARRAY_KEEP_GRAD
from ..core.errors import LaunchError
from ..types.typesys import ArrayT


class ParamSetters:
    """The parameter setters of a recorded launch.

    ``set_param_at_index`` / ``set_param_by_name`` / ``set_params``, and their ``_from_ctype`` forms. The default ``set_param_at_index`` repacks one argument into the launch's ctypes argument struct (``self.args``)
    with the plan's packer for that parameter, keeping the Python value alive; launches that keep Python values
    (the interpreter) override it. ``adjoint=True`` sets the gradient buffer an adjoint launch accumulates into for
    an array parameter (the array's own ``.grad`` otherwise).
    """

    kernel: Any
    plan: Any
    instance: Any
    device: Any
    args: Any
    adjoint: bool
    _keep: list[Any]

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        """Replace one argument by position (``adjoint=True``: the gradient buffer of an array parameter)."""
        name = self.kernel.param_names[index]
        if adjoint:
            self._set_adjoint(index, name, value)
            return
        setattr(self.args, name, self.plan.packers[index](value, self.device))
        self._keep[index] = value

    def set_param_by_name(self, name: str, value: Any, adjoint: bool = False) -> None:
        """Replace one argument by name."""
        self.set_param_at_index(self._index(name), value, adjoint)

    def set_params(self, values: Sequence[Any]) -> None:
        """Replace all arguments."""
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)

    def set_param_at_index_from_ctype(self, index: int, value: Any) -> None:
        """Replace one argument by position with a value already in its native form.

        The value is a ctypes struct, array descriptor or vector, or a number; nothing is kept alive for it.
        """
        name = self.kernel.param_names[index]
        try:
            setattr(self.args, name, value)
        except TypeError as e:
            raise LaunchError(f"kernel '{self.kernel.key}' parameter '{name}': {e}") from None

    def set_param_by_name_from_ctype(self, name: str, value: Any) -> None:
        """Replace one argument by name with a value already in its native form."""
        self.set_param_at_index_from_ctype(self._index(name), value)

    def _index(self, name: str) -> int:
        try:
            return list(self.kernel.param_names).index(name)
        except ValueError:
            raise LaunchError(f"kernel '{self.kernel.key}' has no parameter '{name}' (parameters: "
                              f"{', '.join(self.kernel.param_names)})") from None

    def _set_adjoint(self, index: int, name: str, value: Any) -> None:
        if not getattr(self, "adjoint", False):
            raise LaunchError(f"adjoint=True sets a gradient buffer of an adjoint launch; this launch of "
                              f"'{self.kernel.key}' is a forward one (wp.Launch(kernel, device, adjoint=True))")
        if not isinstance(self.instance.types[index], ArrayT):
            raise LaunchError(f"parameter '{name}' of '{self.kernel.key}' is not an array: only array parameters "
                              "take a gradient buffer")
        desc = getattr(self.args, name)
        keep: dict[int, Any] = self.__dict__.setdefault("_adj_keep", {})
        if value is None:
            desc.grad = 0
            keep.pop(index, None)
            return
        shape, strides = tuple(desc.shape[: desc.ndim]), tuple(desc.strides[: desc.ndim])
        if tuple(getattr(value, "shape", ())) != shape:
            raise LaunchError(f"gradient buffer for '{name}' has shape {getattr(value, 'shape', None)}, the "
                              f"array has {shape}")
        if tuple(value.strides) != strides and value.size > 0:
            raise LaunchError(f"gradient buffer for '{name}' has strides {value.strides}, the array has {strides}: "
                              "native code indexes both with the array's strides")
        desc.grad = value.ptr or 0
        desc.flags |= ARRAY_KEEP_GRAD  # the caller's buffer: stores pass its values on but keep them
        keep[index] = value
