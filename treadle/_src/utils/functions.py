"""``create_warp_function``: a kernel-callable function made from a plain Python function."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import treadle as wp


def create_warp_function(func: Callable[..., Any]) -> tuple[Any, Any]:
    """Make a kernel-callable :class:`~treadle.Function` from a Python function, in a module of its own.

    The function keeps its name; its module is named ``map_<name>`` (shared by functions of the same name).
    Parameters without annotations are generic (``Any``), specialised per call site like any ``@wp.func``.

    Args:
        func: a Python function (defined in a file, so that its source can be read).

    Returns:
        ``(function, module)``: the new function and the :class:`~treadle.Module` it belongs to.

    Raises:
        TypeError: ``func`` is not a Python function.

    """
    if not inspect.isfunction(func):
        raise TypeError(f"create_warp_function() expects a Python function, got {type(func).__name__}")
    key = func.__name__
    module = wp.get_module(f"map_{key}")
    return wp.Function(func, key, module.name), module
