"""Conditional graph nodes: ``capture_if`` and ``capture_while``, in CPU captures and outside any capture.

Outside a capture, both run at once: the condition (the first element of an ``int32`` array, true when non-zero) is
read now and the branch or loop body runs as ordinary Python. Inside a CPU capture (``wp.capture_begin()`` /
``wp.ScopedCapture``), each callback is called once, with the capture redirected into a child graph of its own, and
the parent graph records one node that reads the condition *when the graph is replayed* and runs the child graph
it selects (``capture_if``) or runs the body graph for as long as the condition holds (``capture_while``; the body
is responsible for updating the condition). Nodes nest: a callback may itself call ``capture_if`` or
``capture_while``. A :class:`Graph` from an earlier capture may be given instead of a callback.

Treadle's CUDA captures hold launches, copies and memsets only; a conditional node inside one is refused, and
:func:`is_conditional_graph_supported` answers ``False`` where a CUDA device is present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..runtime import graph as graph_mod


def is_conditional_graph_supported() -> bool:
    """Whether graph captures can hold conditional nodes (:func:`capture_if` / :func:`capture_while`).

    ``True`` when every capture this process can make supports them: CPU captures do, Treadle's CUDA captures do
    not, so the answer is ``False`` where a CUDA device is present (a program then takes its unconditional path,
    as it does with the reference on an older driver).
    """
    from ..runtime.device import get_cuda_device_count

    return get_cuda_device_count() == 0


def _check_condition(condition: Any, fn: str) -> None:
    from ..types import scalars
    from .array import array

    if not isinstance(condition, array) or condition.dtype is not scalars.int32 or condition.size < 1:
        got = (f"an array of {getattr(condition.dtype, '__name__', condition.dtype)} with {condition.size} "
               f"elements" if isinstance(condition, array) else type(condition).__name__)
        raise TypeError(f"wp.{fn}(): the condition must be a Warp array of int32 (its first element is read), got "
                        f"{got}; e.g. wp.zeros(1, dtype=wp.int32)")


def _check_body(body: Any, what: str, fn: str, optional: bool) -> None:
    if body is None and optional:
        return
    if not (callable(body) or isinstance(body, graph_mod.Graph)):
        raise TypeError(f"wp.{fn}(): {what} must be a callable or a Graph from wp.capture_end(), got "
                        f"{type(body).__name__}")


def _value(condition: Any) -> int:
    """The condition's first element, read now (host memory is read in place)."""
    host = condition.device.allocator.host_accessible
    data = condition._host_numpy() if host else condition.numpy()
    return int(data.flat[0])


def _run(body: Any, kwargs: dict[str, Any]) -> None:
    if isinstance(body, graph_mod.Graph):
        body.launch()
    elif body is not None:
        body(**kwargs)


def _active_cpu_graph(fn: str) -> graph_mod.Graph | None:
    """The calling thread's CPU capture, if any (a CUDA capture is refused)."""
    g = getattr(graph_mod.STATE.local, "graph", None) if graph_mod.STATE.count else None
    if g is not None:
        return g
    from ..runtime import cuda_graph

    if cuda_graph.active() is not None:
        raise RuntimeError(f"wp.{fn}() inside a CUDA graph capture: Treadle's CUDA graphs hold launches, copies and "
                           "memsets only, not conditional nodes (wp.is_conditional_graph_supported() is False here); "
                           "call it outside the capture, or capture on the CPU")
    return None


def _capture_child(parent: graph_mod.Graph, body: Any, kwargs: dict[str, Any]) -> graph_mod.Graph | None:
    """Record ``body`` (a callback) into a child graph of ``parent``; a given ``Graph`` is used as it is."""
    if body is None or isinstance(body, graph_mod.Graph):
        return body
    child = graph_mod.Graph(parent.device, apic=parent.apic)
    local = graph_mod.STATE.local
    local.graph = child
    try:
        body(**kwargs)
    finally:
        local.graph = parent
    child._finish()
    return child


def capture_if(condition: Any, on_true: Callable[..., Any] | graph_mod.Graph | None = None,
               on_false: Callable[..., Any] | graph_mod.Graph | None = None, stream: Any = None,
               **kwargs: Any) -> None:
    """Run ``on_true`` if ``condition[0]`` is non-zero, else ``on_false``; inside a capture, decide at each replay.

    Args:
        condition: an ``int32`` array; its first element is the condition.
        on_true: a callback (called with ``**kwargs``) or a captured :class:`Graph`, run when the condition holds.
        on_false: the same, run when it does not.
        stream: accepted for the reference API (CPU captures have no streams).
        **kwargs: passed to the callbacks.

    Raises:
        TypeError: the condition is not an ``int32`` array, or a branch is neither a callable nor a Graph.
        RuntimeError: called inside a CUDA graph capture.
    """
    _check_condition(condition, "capture_if")
    _check_body(on_true, "on_true", "capture_if", optional=True)
    _check_body(on_false, "on_false", "capture_if", optional=True)
    parent = _active_cpu_graph("capture_if")
    if parent is None:
        _run(on_true if _value(condition) else on_false, kwargs)
        return
    then_graph = _capture_child(parent, on_true, kwargs)
    else_graph = _capture_child(parent, on_false, kwargs)

    def node() -> None:
        chosen = then_graph if _value(condition) else else_graph
        if chosen is not None:
            chosen.launch()

    parent._add_op(node)


def capture_while(condition: Any, while_body: Callable[..., Any] | graph_mod.Graph, stream: Any = None,
                  **kwargs: Any) -> None:
    """Run ``while_body`` for as long as ``condition[0]`` is non-zero; inside a capture, loop at each replay.

    The body must update the condition (e.g. a kernel that clears it) for the loop to end. Inside a capture the
    callback is called once, to record the body graph.

    Args:
        condition: an ``int32`` array; its first element is tested before each iteration.
        while_body: a callback (called with ``**kwargs``) or a captured :class:`Graph`.
        stream: accepted for the reference API (CPU captures have no streams).
        **kwargs: passed to the callback.

    Raises:
        TypeError: the condition is not an ``int32`` array, or the body is neither a callable nor a Graph.
        RuntimeError: called inside a CUDA graph capture.
    """
    _check_condition(condition, "capture_while")
    _check_body(while_body, "while_body", "capture_while", optional=False)
    parent = _active_cpu_graph("capture_while")
    if parent is None:
        while _value(condition):
            _run(while_body, kwargs)
        return
    body_graph = _capture_child(parent, while_body, kwargs)

    def node() -> None:
        while _value(condition):
            body_graph.launch()  # type: ignore[union-attr]

    parent._add_op(node)
