"""Temporary arrays and cached generated kernels.

A :class:`TemporaryStore` keeps the buffers of arrays that ``treadle.fem`` (or its users) borrow for the duration of
a computation: a borrowed array's buffer returns to the store when the array is released (``array.release()``) or
garbage-collected, and the next borrow of the same dtype and device reuses it when it is large enough. Without a
store (``None`` and no default store), borrowing allocates.
"""

import functools
import weakref
from collections.abc import Callable
from typing import Any

import treadle as wp

from . import codegen

#: Arrays borrowed from a :class:`TemporaryStore` are plain ``wp.array`` objects (with ``release()``/``detach()``).
Temporary = wp.array


class TemporaryStore:
    """A pool of buffers for temporary arrays (see the module documentation)."""

    def __init__(self) -> None:
        self._pools: dict[tuple[Any, ...], list[Any]] = {}
        self._borrowed = 0

    def clear(self) -> None:
        """Free every buffer the store keeps."""
        self._pools.clear()

    @property
    def borrowed_count(self) -> int:
        """Number of arrays currently borrowed."""
        return self._borrowed

    def borrow(self, shape: Any, dtype: Any, pinned: bool = False, device: Any = None,
               requires_grad: bool = False) -> Any:
        """An array of ``shape`` and ``dtype`` whose buffer comes from (and returns to) the store.

        Args:
            shape: the array's shape (an int or a tuple).
            dtype: element type.
            pinned: host memory pinned for transfers.
            device: device of the array.
            requires_grad: whether the array gets a gradient.

        """
        shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        dev = wp.get_device(device)
        size = 1
        for s in shape:
            size *= s
        key = (dtype, str(dev), bool(pinned), bool(requires_grad))
        pool = self._pools.setdefault(key, [])
        buf = None
        for i, b in enumerate(pool):
            if b.shape[0] >= size:
                buf = pool.pop(i)
                break
        if buf is None:
            buf = wp.empty(max(size, 1), dtype=dtype, device=dev, pinned=pinned, requires_grad=requires_grad)
        view = buf[:size].reshape(shape) if size else wp.empty(shape, dtype=dtype, device=dev)
        self._borrowed += 1
        state = {"buf": buf, "live": True}

        def give_back() -> None:
            if state["live"]:
                state["live"] = False
                self._borrowed -= 1
                pool.append(state["buf"])

        fin = weakref.finalize(view, give_back)

        def release() -> None:
            fin()

        def detach() -> None:
            if state["live"]:
                state["live"] = False
                self._borrowed -= 1
            fin.detach()

        _attach(view, release, detach)
        return view


def _attach(arr: Any, release: Callable[[], None], detach: Callable[[], None]) -> None:
    try:
        arr.release = release
        arr.detach = detach
    except AttributeError:  # pragma: no cover - arrays without instance attributes
        pass


_default: list[TemporaryStore | None] = [None]


def set_default_temporary_store(temporary_store: TemporaryStore | None) -> None:
    """Use ``temporary_store`` when ``treadle.fem`` functions are given none (``None``: allocate each time)."""
    if temporary_store is not None and not isinstance(temporary_store, TemporaryStore):
        raise TypeError(f"expected a TemporaryStore or None, got {type(temporary_store).__name__}")
    _default[0] = temporary_store


def default_temporary_store() -> TemporaryStore | None:
    """The store set by :func:`set_default_temporary_store`."""
    return _default[0]


def borrow_temporary(temporary_store: TemporaryStore | None, shape: Any, dtype: Any, pinned: bool = False,
                     requires_grad: bool = False, device: Any = None) -> Any:
    """Borrow an array from ``temporary_store`` (or the default store; a fresh array without either).

    Args:
        temporary_store: the store.
        shape: the array's shape.
        dtype: element type.
        pinned: host memory pinned for transfers.
        requires_grad: whether the array gets a gradient.
        device: device of the array.

    """
    store = temporary_store if temporary_store is not None else _default[0]
    if store is None:
        arr = wp.empty(shape, dtype=dtype, device=device, pinned=pinned, requires_grad=requires_grad)
        _attach(arr, lambda: None, lambda: None)
        return arr
    return store.borrow(shape, dtype, pinned=pinned, device=device, requires_grad=requires_grad)


def borrow_temporary_like(array: Any, temporary_store: TemporaryStore | None) -> Any:
    """Borrow an array of the same shape, dtype, device and gradient requirement as ``array``.

    Args:
        array: the model array.
        temporary_store: the store.

    """
    return borrow_temporary(temporary_store, shape=array.shape, dtype=array.dtype, device=array.device,
                            requires_grad=array.requires_grad)


def dynamic_kernel(suffix: Any, kernel_options: dict[str, Any] | None = None,
                   allow_overloads: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """Decorator making a kernel from a function defined in a factory, once per ``suffix``.

    Functions defined in closures have the same source for every factory call; the suffix (what the closure was
    made for) names the kernel, and the kernel is cached under it.

    Args:
        suffix: what distinguishes this kernel from the other closures of the same function.
        kernel_options: module options of the kernel (``enable_backward``, ``max_unroll``...).
        allow_overloads: accepted for compatibility (kernels here are specialised per argument types anyway).

    """

    def wrap(fn: Callable[..., Any]) -> Any:
        return _dynamic_kernel(fn.__module__, fn.__qualname__, str(suffix), tuple(sorted((kernel_options or {}).items())),
                               fn)

    return wrap


_DYN_KERNELS: dict[tuple[Any, ...], Any] = {}


def _dynamic_kernel(module: str, qual: str, suffix: str, options: tuple[Any, ...], fn: Callable[..., Any]) -> Any:
    key = (module, qual, suffix, options)
    k = _DYN_KERNELS.get(key)
    if k is None:
        opts = dict(options)
        k = codegen.kernel(fn, key=f"{qual}_{codegen.digest(key)}", module=f"{module}.dyn.{codegen.digest(key)}",
                           enable_backward=opts.pop("enable_backward", None))
        for name, v in opts.items():
            k.module.options[name] = v
        _DYN_KERNELS[key] = k
    return k


_DYN_FUNCS: dict[tuple[Any, ...], Any] = {}


def dynamic_func(suffix: Any, code_transformers: Any = None,
                 allow_overloads: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """Decorator making a ``@wp.func`` from a function defined in a factory, once per ``suffix``.

    Args:
        suffix: what distinguishes this function from the other closures of the same function.
        code_transformers: not supported (must be ``None``).
        allow_overloads: accepted for compatibility.

    """
    if code_transformers:
        raise NotImplementedError("dynamic_func: code_transformers are not supported")

    def wrap(fn: Callable[..., Any]) -> Any:
        key = (fn.__module__, fn.__qualname__, str(suffix))
        f = _DYN_FUNCS.get(key)
        if f is None:
            f = _DYN_FUNCS[key] = codegen.func(fn, *key)
        return f

    return wrap


__all__ = ["Temporary", "TemporaryStore", "borrow_temporary", "borrow_temporary_like", "dynamic_func",
           "dynamic_kernel", "functools", "set_default_temporary_store"]
