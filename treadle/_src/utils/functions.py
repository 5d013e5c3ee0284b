"""``create_warp_function``: a kernel-callable function made from a plain Python function."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import treadle as wp


def _generic_copy(func: types.FunctionType) -> types.FunctionType:
    """A copy of ``func`` whose unannotated parameters are annotated ``typing.Any`` (the original is not changed)."""
    params = inspect.signature(func).parameters
    missing = {name: Any for name, p in params.items() if p.annotation is inspect.Parameter.empty}
    if not missing:
        return func
    copy = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    copy.__annotations__ = {**missing, **func.__annotations__}
    return copy


def create_warp_function(func: Callable[..., Any]) -> tuple[Any, Any]:
    """Make a kernel-callable :class:`~treadle.Function` from a Python function, in a module of its own.

    The function keeps its name; its module is named ``map_<name>`` (shared by functions of the same name).
    Parameters without annotations are generic (``typing.Any``), specialised per call site like any ``@wp.func``.

    Args:
        func: a Python function (defined in a file, so that its source can be read).

    Returns:
        ``(function, module)``: the new function and the :class:`~treadle.Module` it belongs to.

    Raises:
        TypeError: ``func`` is not a Python function.

    """
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"create_warp_function() expects a Python function, got {type(func).__name__}")
    key = func.__name__
    module = wp.get_module(f"map_{key}")
    return wp.Function(_generic_copy(func), key, module.name), module
