"""Kernel instances: a kernel specialised for concrete parameter types, and the compiler stages it goes through.

A :class:`KernelInstance` runs the named stages lazily, each at most once per instance:

- *lower* (:meth:`KernelInstance.lower`): the kernel's source to typed IR (``frontend.py``), with the function
  instances it calls (``deps``) and the launch dimensionality it needs;
- *emit* (:meth:`KernelInstance.emit_forward`, :meth:`KernelInstance.emit_backward`): C++ blocks of the forward and
  backward passes (``pipeline.py``);
- *fingerprint* (:meth:`KernelInstance.fingerprint`): what lowering reads, without lowering (``fingerprint.py``),
  which a backend joins with what its build depends on into a warm-start key (the runtime's warm-start index maps
  keys to cached binaries).

It also knows the kernel's argument layout (:attr:`KernelInstance.args_type`, the ctypes mirror of the C++ ``Args``
struct). Building, loading and launching are the backends' (``backends/cpu/kernels.py`` adds them for the CPU).

The kernel is the front end's declaration, seen through what the compiler reads of it: ``key``, ``src`` (the
parsed source), ``param_names``, ``module`` (with ``option(name, default)`` and ``options``), ``options``.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ... import config
from ..core.abi import ArrayDesc, IndexedArrayDesc
from ..types import scalars
from ..types.typesys import ArrayT, is_composite, is_struct, type_str
from . import fingerprint as _fingerprint
from . import pipeline


class KernelInstance:
    """A kernel specialised for concrete parameter types: its IR, C++ blocks and fingerprint, made on first use.

    ``options`` are the compile options the kernel asks for (mode, checks); the emit stages read ``mode`` and
    ``verify_fp`` from them.
    """

    def __init__(self, kernel: Any, types: tuple[Any, ...], options: Any = None) -> None:
        self.kernel = kernel
        self.types = types
        self.options = options if options is not None else kernel.compile_options()
        self._ir: Any = None
        self._deps: list[Any] = []
        self._launch_ndim = 1
        self._args_type: type[ctypes.Structure] | None = None
        self._access: tuple[set[int], set[int], set[int], set[int]] | None = None

    # Lowering happens on first use of the IR: a warm start that finds every kernel in the warm-start index never
    # parses, lowers or emits anything.
    @property
    def ir(self) -> Any:
        """The kernel's typed IR (lowered on first use)."""
        if self._ir is None:
            self.lower()
        return self._ir

    @ir.setter
    def ir(self, value: Any) -> None:
        self._ir = value

    @property
    def deps(self) -> list[Any]:
        """The function instances the kernel calls (lowered on first use)."""
        if self._ir is None:
            self.lower()
        return self._deps

    @deps.setter
    def deps(self, value: list[Any]) -> None:
        self._deps = value

    @property
    def launch_ndim(self) -> int:
        """The number of launch dimensions the kernel's ``wp.tid()`` reads."""
        if self._ir is None:
            self.lower()
        return self._launch_ndim

    @launch_ndim.setter
    def launch_ndim(self, value: int) -> None:
        self._launch_ndim = value

    @property
    def args_type(self) -> type[ctypes.Structure]:
        """The ctypes mirror of the kernel's C++ ``Args`` struct (made on first use)."""
        if self._args_type is None:
            self._args_type = make_args_struct(self.kernel.param_names, self.types)
        return self._args_type

    @args_type.setter
    def args_type(self, value: type[ctypes.Structure]) -> None:
        self._args_type = value

    def order_dependent(self) -> bool:
        """Whether results depend on the order threads run in (float atomics and the like)."""
        from .determinism import kernel_order_dependent

        return kernel_order_dependent(self.ir, self.deps)

    def heavy_threads(self) -> bool:
        """Whether the thread pool should look for few long threads in a small launch of it (``threads.h``).

        True for kernels with loops or tiles whose results do not depend on the order threads run in (an
        order-dependent kernel's small launches stay on one thread, so they give the same result every time).
        """
        return pipeline.has_heavy_threads(self.ir, self.deps) and not self.order_dependent()

    def access_facts(self) -> tuple[set[int], set[int], set[int], set[int]]:
        """Which array parameters the kernel reads, writes, needs the values of, and assigns to (taken once).

        ``(reads, writes, value reads, stores)``: sets of parameter indices (``access.py``).
        """
        if self._access is None:
            from .access import array_access, array_stores, value_reads

            f = self.ir
            self._access = (*array_access(f), value_reads(f), array_stores(f))
        return self._access

    # -- stages ------------------------------------------------------------------------------------------------
    def lower(self) -> None:
        """The lower stage: source -> typed IR, the functions it calls, and its launch dimensionality."""
        from .frontend import LowerContext, lower_function

        ctx = LowerContext(max_unroll=self.kernel.module.option("max_unroll", config.max_unroll))
        f, ndim = lower_function(self.kernel.src, list(self.types), is_kernel=True, ctx=ctx)
        self._ir = f
        self._deps = ctx.deps
        self._launch_ndim = ndim

    def emit_forward(self) -> tuple[str, str, list[Any]]:
        """The emit stage of the forward pass: ``(C++ block, symbol, checked-mode locations)``."""
        return pipeline.emit_forward(self.ir, self.deps, self.kernel.key, checked=self.options.mode == "debug",
                                     verify_fp=getattr(self.options, "verify_fp", False))

    def emit_backward(self) -> tuple[str, str]:
        """The emit stage of the backward pass: ``(C++ block, symbol)``."""
        return pipeline.emit_backward(self.ir, self.deps, self.kernel.key)

    def has_runtime_loops(self) -> bool:
        """Whether the kernel (or a function it calls) loops over a run-time range (a backend may build it apart)."""
        return pipeline.has_runtime_loops(self.ir, self.deps)

    def fingerprint(self) -> str | None:
        """The fingerprint stage: a digest of what lowering would read now (``None`` where it cannot be taken)."""
        return _fingerprint.fingerprint(self)


def args_layout(types: tuple[Any, ...]) -> tuple[list[Any], list[int], int, int]:
    """Field ctypes and offsets, size and alignment of the ``Args`` struct :func:`make_args_struct` makes.

    Computed with the C layout rules ctypes follows (each field at its alignment, the size padded to the largest),
    without making the struct type: a ctypes type costs tens of microseconds, and the native launch path needs only
    the layout.
    """
    fields = [ctype_of(t) for t in types]
    offsets: list[int] = []
    end, align = 0, 1
    for ct in fields:
        a = ctypes.alignment(ct)
        end = (end + a - 1) // a * a
        offsets.append(end)
        end += ctypes.sizeof(ct)
        align = max(align, a)
    end += 1  # ``_treadle_pad``
    return fields, offsets, (end + align - 1) // align * align, align


def make_args_struct(names: list[str], types: tuple[Any, ...]) -> type[ctypes.Structure]:
    """The ctypes mirror of the C++ ``Args`` struct of a kernel."""
    fields = [(n, ctype_of(t)) for n, t in zip(names, types)]
    fields.append(("_treadle_pad", ctypes.c_char))
    return type("Args", (ctypes.Structure,), {"_fields_": fields})


def ctype_of(t: Any) -> Any:
    """The ctypes type that mirrors a kernel value type."""
    if isinstance(t, ArrayT):
        return IndexedArrayDesc if t.indexed else ArrayDesc
    if scalars.is_scalar_type(t):
        return t._type_
    if is_composite(t):
        return t
    if is_struct(t):
        return t.ctype
    raise TypeError(f"type {type_str(t)} cannot be a kernel argument")


__all__ = ["KernelInstance", "args_layout", "ctype_of", "make_args_struct"]
