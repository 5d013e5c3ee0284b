"""The CPU backend's launches: launch plans, frames, recorded launches (``wp.Launch``) and adjoint launches.

Every kernel instance gets a :class:`LaunchPlan` once: one argument packer per parameter (chosen by type), the
address of the kernel's range entry, and a *frame* -- one C buffer holding the launch command, the launch bounds
and the packed arguments -- that the runtime library runs with a single ctypes call (``runtime/threadpool.py``).

Repeated launches are cheap because the plan remembers what it packed last: an argument that is the same object as
last time (same array with the same descriptor, same float object) is not packed again, and the same ``dim`` does
not rewrite the bounds. The frame belongs to the thread that created the plan; launches from other threads pack a
fresh frame, so concurrent launches never share argument memory. The owner thread's plan has a native twin
(``runtime/fastlaunch.py``) that packs and runs in C.

Recorded launches (:class:`Launch`, ``record_cmd=True``) own their frame: ``Launch.launch()`` is one ctypes call.
The launch front door (``lang/launch.py``) records tapes, prints and diverts launches into CPU graph captures
(``runtime/graph.py``) before it calls this backend.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .... import config
from ...compiler.instance import args_layout
from ...core.abi import ARRAY_KEEP_GRAD, ArrayDesc, LaunchBounds
from ...core.errors import LaunchError
from ...runtime import fastlaunch as _fastlaunch
from ...runtime import graph as _graph
from ...runtime import state as _state
from ...runtime import threadpool as _tp
from ...runtime.native import symbol_address
from ...types import scalars
from ...types.arrays import is_array_object
from ...types.typesys import ArrayT, contains_any
from ..args import launch_bounds, make_packer, value_type
from ..launch_params import ParamSetters
from . import build as _cpu_build
from .kernels import CpuKernelInstance as KernelInstance

Kernel = Any

#: Launches with fewer threads than this run on the calling thread (no parallel region); see ``threadpool``.
SERIAL_THRESHOLD = _tp.SERIAL_THRESHOLD

_get_ident = threading.get_ident
_CLAIM = threading.Lock()


def _num_threads() -> int:
    return _tp.num_threads()


def _range_entry(inst: KernelInstance, kind: str) -> int:
    """The address of an instance's range entry (``<sym>_cpu_forward_range`` / ``..._backward_range``)."""
    built = inst.built if kind == "forward" else inst.backward_built()
    return symbol_address(_cpu_build.load_library(built.lib_path), f"{built.symbol}_cpu_{kind}_range")


class _FrameLayout:
    """Where a frame keeps its command, bounds and arguments: the layout of a C struct of the three.

    Computed from ``ctypes.alignment`` / ``ctypes.sizeof`` of the fields (``compiler/instance.py``'s ``args_layout``) instead of making
    ctypes types per kernel: the instance's ``Args`` struct type is made only where Python packs arguments into a
    frame (a type costs as much as the rest of a launch plan).
    """

    __slots__ = ("inst", "bounds_off", "args_off", "size", "align", "arg_ctypes", "arg_offsets", "args_size",
                 "_args_type")

    def __init__(self, inst: KernelInstance) -> None:
        def up(n: int, a: int) -> int:
            return (n + a - 1) // a * a

        self.inst = inst
        self.arg_ctypes, self.arg_offsets, self.args_size, args_align = args_layout(inst.types)
        self.bounds_off = up(ctypes.sizeof(_tp.Cmd), ctypes.alignment(LaunchBounds))
        self.args_off = up(self.bounds_off + ctypes.sizeof(LaunchBounds), args_align)
        self.align = max(ctypes.alignment(_tp.Cmd), ctypes.alignment(LaunchBounds), args_align)
        self.size = up(self.args_off + self.args_size, self.align)
        self._args_type: Any = None

    @property
    def args_type(self) -> Any:
        """The instance's ctypes ``Args`` struct (made and checked against the computed layout at first use)."""
        t = self._args_type
        if t is None:
            t = self.inst.args_type
            names = self.inst.kernel.param_names
            if (ctypes.sizeof(t) != self.args_size  # the computed layout must be the struct's
                    or [getattr(t, n).offset for n in names] != self.arg_offsets):
                raise AssertionError(f"argument layout of kernel '{self.inst.kernel.key}' differs from its ctypes "
                                     "struct")
            self._args_type = t
        return t


class _Frame:
    """A launch command with its own bounds and argument memory (one C buffer)."""

    __slots__ = ("buf", "addr", "start", "_args", "cmd", "bounds_addr", "layout")

    def __init__(self, layout: _FrameLayout, fn: int, flags: int = 0) -> None:
        # A zeroed ``bytearray`` rather than a ``c_char`` array: an array type of each new size is a class made on
        # first use (~25 us, once per kernel at a warm start). The frame starts at the first suitably aligned byte.
        buf = bytearray(layout.size + layout.align - 1)
        cmd = _tp.Cmd.from_buffer(buf)
        start = -ctypes.addressof(cmd) % layout.align
        if start:
            cmd = _tp.Cmd.from_buffer(buf, start)
        addr = ctypes.addressof(cmd)
        self.buf = buf
        self.addr = addr
        self.start = start
        self.layout = layout
        self._args: Any = None
        self.cmd = cmd
        self.bounds_addr = addr + layout.bounds_off
        self.cmd.fn = fn
        self.cmd.bounds = self.bounds_addr
        self.cmd.args = addr + layout.args_off
        self.cmd.flags = flags

    @property
    def args(self) -> Any:
        """The frame's arguments as the instance's ctypes ``Args`` struct (a view made at first use)."""
        a = self._args
        if a is None:
            a = self._args = self.layout.args_type.from_buffer(self.buf, self.start + self.layout.args_off)
        return a

    def set_bounds(self, b: LaunchBounds) -> None:
        ctypes.memmove(self.bounds_addr, ctypes.addressof(b), ctypes.sizeof(LaunchBounds))

    def clone(self) -> _Frame:
        """A copy with its own memory (same entry, bounds, arguments and thread count)."""
        layout = self.layout
        fr = _Frame(layout, int(self.cmd.fn or 0), self.cmd.flags)
        off = layout.bounds_off
        ctypes.memmove(fr.addr + off, self.addr + off, layout.size - off)
        fr.cmd.nthreads = self.cmd.nthreads
        return fr


class LaunchPlan:
    """Everything about launching one kernel instance that does not depend on the argument values."""

    __slots__ = ("inst", "names", "packers", "debug", "order_dependent", "frame_layout", "fwd", "nargs",
                 "cfg_mode", "owner", "frame", "last", "last_desc", "last_bounds", "device", "kernel", "addr", "run1",
                 "cur_nt", "cfg_fp", "cmd_flags", "fast", "bwd_entry", "bwd_addr", "bwd_frame", "bwd_owner")

    #: the backend running the plan (``backend.py`` sets it)
    backend: Any = None

    def __init__(self, inst: KernelInstance) -> None:
        self.inst = inst
        self.kernel = inst.kernel
        self.names = inst.kernel.param_names
        self.nargs = len(self.names)
        self.packers = [make_packer(n, t, inst.kernel) for n, t in zip(self.names, inst.types)]
        self.debug = inst.options.mode == "debug"
        self.order_dependent = inst.order_dependent()
        #: the forward frames' command flags: ``CMD_HEAVY`` for kernels whose threads may each do much work
        self.cmd_flags = _tp.CMD_HEAVY if inst.heavy_threads() else 0
        self.frame_layout = _FrameLayout(inst)
        self.fwd = _range_entry(inst, "forward")
        self.cfg_mode = config.mode
        self.cfg_fp = config.verify_fp
        self.owner = -1
        self.frame: _Frame | None = None
        self.last: list[Any] = [_UNSET] * self.nargs
        self.last_desc: list[Any] = [None] * self.nargs
        self.last_bounds: Any = None
        self.device: Any = None
        self.addr = 0
        self.run1: Any = None
        self.cur_nt = -1
        #: the native state of this plan (``runtime/fastlaunch.py``), made with the owner's frame; ``None``: Python
        self.fast: Any = None
        #: adjoint launches (``run_backward``): the backward entry they were resolved for, its range entry address,
        #: and a frame of their own, reused by the first thread that ran one
        self.bwd_entry: Any = None
        self.bwd_addr = 0
        self.bwd_frame: _Frame | None = None
        self.bwd_owner = -1

    @property
    def args_type(self) -> Any:
        """The instance's ctypes ``Args`` struct type (made at first use)."""
        return self.frame_layout.args_type

    def reuse(self, device: Any, stream: Any, block_dim: int, max_blocks: int) -> bool:
        """Whether a launch on ``device`` may take this remembered plan as it is.

        It may while the kernel's options have not changed since the plan was made (compile mode, ``verify_fp``,
        the instance still the kernel's) and the launch is on a CPU device.
        """
        if (config.mode is self.cfg_mode and config.verify_fp is self.cfg_fp
                and self.inst in self.kernel.instances.values() and (device is self.device or device.is_cpu)):
            if self.fast is not None:
                self.fast.stamp()  # checked for this configuration: the native path may take it again
            return True
        return False

    def pack(self, args: Sequence[Any], device: Any) -> ctypes.Structure:
        """A fresh argument struct for ``args`` (checked)."""
        packed = self.args_type()  # type: ignore[misc]
        for name, packer, v in zip(self.names, self.packers, args):
            setattr(packed, name, packer(v, device))
        return packed

    def new_frame(self, args: Sequence[Any], device: Any, bounds: LaunchBounds) -> _Frame:
        """A frame of its own holding ``args`` and ``bounds`` (for recorded launches and other threads)."""
        fr = _Frame(self.frame_layout, self.fwd, self.cmd_flags)
        fargs = fr.args
        for name, packer, v in zip(self.names, self.packers, args):
            setattr(fargs, name, packer(v, device))
        fr.set_bounds(bounds)
        return fr

    def nthreads(self) -> int:
        """Threads for the next launch: one for order-dependent kernels in deterministic mode."""
        if self.order_dependent and _deterministic(self.kernel):
            return 1
        return _tp.num_threads()

    def run(self, args: Sequence[Any], device: Any, bounds: LaunchBounds) -> None:
        """Pack what changed since the last launch from this thread, and run."""
        if self.owner != _get_ident():
            with _CLAIM:
                mine = self.frame is None
                if mine:  # the first launching thread owns the plan's frame from now on
                    self.frame = _Frame(self.frame_layout, self.fwd, self.cmd_flags)
                    self.addr = self.frame.addr
                    self.run1 = _runtime().run1
                    self.owner = _get_ident()
                    self.fast = _native_plan(self)
            if not mine:
                self._run_fresh(args, device, bounds)  # another thread owns the frame
                return
        if self.fast is not None:
            self.fast.run(args, device, bounds, self.nthreads())
            return
        fr = self.frame
        assert fr is not None
        if device is not self.device:
            self.device = device
            self.last = [_UNSET] * self.nargs
        last = self.last
        last_desc = self.last_desc
        fargs = fr.args
        for i in range(self.nargs):
            v = args[i]
            key = last[i]
            if key is v:  # the same float, int, bool or None object as last time
                continue
            d = last_desc[i]
            if d is not None and key == id(v) and getattr(v, "_ctype", None) is d:
                continue  # the same array with the same descriptor
            packed = self.packers[i](v, device)
            setattr(fargs, self.names[i], packed)
            tv = type(v)
            if tv is float or tv is int or tv is bool or v is None:
                last[i], last_desc[i] = v, None
            elif packed is not None and getattr(v, "_ctype", None) is packed:
                # An array: remember its id and descriptor, not the array (that would keep its memory alive).
                last[i], last_desc[i] = id(v), packed
            else:  # mutable values (vectors, structs, NumPy arrays...) are packed every time
                last[i], last_desc[i] = _UNSET, None
        if bounds is not self.last_bounds:
            fr.set_bounds(bounds)
            self.last_bounds = bounds
        if self.order_dependent and _deterministic(self.kernel):
            nt = 1
        else:
            nt = config.num_threads
            if nt <= 0:
                nt = _tp._CPUS
        if nt != self.cur_nt:
            fr.cmd.nthreads = nt
            self.cur_nt = nt
        self.run1(self.addr)

    def run_backward(self, args: Sequence[Any], device: Any, bounds: LaunchBounds) -> None:
        """Run the backward pass with every array's own ``.grad`` (a ``Tape.backward()`` launch).

        Packs all arguments into a frame kept for the purpose (the first thread to get here owns it; others use a
        fresh one) instead of building a ``Launch`` each time: same command, about half the Python cost.
        """
        entry = self.inst.ensure_backward()
        if entry is not self.bwd_entry:  # resolved again if the instance's backward library was ever reloaded
            self.bwd_addr = _range_entry(self.inst, "backward")
            self.bwd_entry = entry
            self.bwd_frame = None
        fr = self.bwd_frame
        if fr is None or self.bwd_owner != _get_ident():
            with _CLAIM:
                fr = _Frame(self.frame_layout, self.bwd_addr)
                if self.bwd_frame is None:
                    self.bwd_frame = fr
                    self.bwd_owner = _get_ident()
        fargs = fr.args
        for name, packer, v in zip(self.names, self.packers, args):
            setattr(fargs, name, packer(v, device))
        fr.set_bounds(bounds)
        fr.cmd.nthreads = 1 if _deterministic(self.kernel) else self.nthreads()
        if bounds.size > 0:
            _runtime().run1(fr.addr)

    def _run_fresh(self, args: Sequence[Any], device: Any, bounds: LaunchBounds) -> None:
        fr = self.new_frame(args, device, bounds)
        fr.cmd.nthreads = self.nthreads()
        _runtime().run1(fr.addr)


class _Unset:
    pass


_UNSET = _Unset()


#: Argument kinds the native fast path packs itself (``native/fastlaunch.cpp``); anything else goes through the
#: plan's Python packer there too.
_NATIVE_SCALARS: dict[Any, tuple[int, Any]] = {
    scalars.float32: (2, ctypes.c_float), scalars.float64: (3, ctypes.c_double), scalars.int32: (4, ctypes.c_int32),
    scalars.int64: (5, ctypes.c_int64), scalars.uint32: (6, ctypes.c_uint32), scalars.uint64: (7, ctypes.c_uint64)}


class _ArgsOf:
    """The frame's ``Args`` struct as the native launch path sees it: made only if Python packs an argument.

    The native path packs arrays and numbers itself; an unusual value goes through the plan's Python packer and
    is set here.
    """

    __slots__ = ("_frame", "_index")
    _frame: _Frame
    _index: dict[str, int]

    def __init__(self, frame: _Frame, names: list[str]) -> None:
        object.__setattr__(self, "_frame", frame)
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    def __setattr__(self, name: str, value: Any) -> None:
        fr = self._frame
        i = self._index.get(name)
        layout = fr.layout
        if i is not None and fr._args is None and type(value) is layout.arg_ctypes[i]:
            # A descriptor the packer made (an array's first launch): its bytes, as ctypes would copy them
            ctypes.memmove(fr.addr + layout.args_off + layout.arg_offsets[i], ctypes.addressof(value),
                           ctypes.sizeof(value))
            return
        setattr(fr.args, name, value)


def _native_plan(plan: LaunchPlan) -> Any:
    """The native state of ``plan`` (owner: the calling thread), or ``None`` when the extension is not in use."""
    ext = _fastlaunch.module()
    fr = plan.frame
    if ext is None or fr is None or not config.native_launch:
        return None
    kinds, ndims, dtypes = [], [], []
    layout = plan.frame_layout
    for t, ct in zip(plan.inst.types, layout.arg_ctypes):
        size = ctypes.sizeof(ct)
        kind, ndim, dtype = 0, 0, None
        if isinstance(t, ArrayT):
            if not t.indexed and size == ctypes.sizeof(ArrayDesc):
                kind, ndim = 1, t.ndim
                dtype = None if contains_any(t.dtype) else t.dtype
        else:
            k, ct = next((v for st, v in _NATIVE_SCALARS.items() if st is t), (0, None))
            if ct is not None and size == ctypes.sizeof(ct) and t._type_ is ct:
                kind = k
        kinds.append(kind)
        ndims.append(ndim)
        dtypes.append(dtype)
    return ext.Plan(fr, fr.addr, fr.bounds_addr, fr.addr + layout.args_off, _ArgsOf(fr, plan.names), list(plan.names),
                    list(plan.packers), kinds, list(layout.arg_offsets), ndims, dtypes, plan.kernel, plan.inst,
                    _state.LAUNCH.epoch, plan.debug, plan.order_dependent, plan.owner)


def _deterministic(kernel: Kernel) -> bool:
    opt = kernel.module.options.get("deterministic")
    return bool(config.deterministic if opt is None else opt)


_rt: Any = None


def _runtime() -> Any:
    global _rt, native_launch
    if _rt is None:
        _rt = _tp.get_cpu_runtime()
        ext = _fastlaunch.module()
        native_launch = ext.launch if ext is not None else None
    return _rt


#: ``launch(kernel, dim, inputs, outputs, device, record_tape) -> bool`` of the native extension, once loaded.
native_launch: Any = None


#: ``wp.Launch(kernel, device, ...)``: made by the public front (``lang/launch.py`` registers it), which launches
#: with ``record_cmd=True``.
NEW_LAUNCH: Callable[..., Any] | None = None


class Launch(ParamSetters):
    """A recorded launch (``launch(..., record_cmd=True)``) that can be replayed cheaply.

    ``wp.Launch(kernel, device, adjoint=False, params=None, bounds=None)`` makes one without running the kernel:
    parameters start as zeros, default vectors, matrices and structs, and null arrays (or ``params``), the grid as
    ``bounds`` (default: empty); ``set_param_by_name`` / ``set_dim`` fill them in before ``launch()``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if args and getattr(args[0], "_treadle_kernel_", False):
            assert NEW_LAUNCH is not None
            return NEW_LAUNCH(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and getattr(args[0], "_treadle_kernel_", False):
            return  # wp.Launch(kernel, ...): made by __new__
        self._record(*args, **kwargs)

    def _record(self, plan: LaunchPlan, bounds: LaunchBounds, args: Sequence[Any], device: Any,
                adjoint: bool = False) -> None:
        self.plan = plan
        self.kernel = plan.inst.kernel
        self.instance = plan.inst
        self.device = device
        self.adjoint = adjoint
        self._keep = list(args)
        self._frame = plan.new_frame(args, device, bounds)
        if adjoint:
            self._frame.cmd.fn = _range_entry(plan.inst, "backward")
        self.bounds = bounds
        self.args = self._frame.args
        self._frame.cmd.nthreads = 1 if adjoint and _deterministic(self.kernel) else plan.nthreads()
        self._run1 = _runtime().run1
        self._addr = self._frame.addr

    @property
    def nthreads(self) -> int:
        """Threads the launch may use."""
        return int(self._frame.cmd.nthreads)

    def set_dim(self, dim: Any) -> None:
        """Change the launch grid."""
        self.bounds = launch_bounds(dim)
        self._frame.set_bounds(self.bounds)

    def launch(self, stream: Any = None) -> None:
        """Run the recorded launch again (recorded into the active graph capture, if any)."""
        if _graph.STATE.count and _graph.capturing():
            _graph.record(self)
            return
        self._run1(self._addr)

    @property
    def cmd_address(self) -> int:
        """Address of the native launch command (for graphs)."""
        return self._addr

    def frozen_copy(self) -> Launch:
        """A copy whose arguments later ``set_param*`` calls on this launch do not change (for graph capture)."""
        c = Launch.__new__(Launch)
        c.__dict__.update(self.__dict__)
        c._keep = list(self._keep)
        c._frame = self._frame.clone()
        c.args = c._frame.args
        c._addr = c._frame.addr
        return c


def plan_for(kernel: Kernel, args: list[Any]) -> LaunchPlan:
    if kernel.is_generic:
        types = tuple(value_type(v, t) for v, t in zip(args, kernel.param_types))
        inst = kernel.get_instance(types)
    else:
        inst = kernel.get_instance(None)
    plan = getattr(inst, "plan", None)
    if plan is None or plan.inst.entry is None:
        inst.ensure_loaded()
        with kernel.module.lock:  # threads launching a new kernel at once share one plan
            plan = getattr(inst, "plan", None)
            if plan is None or plan.inst.entry is None:
                plan = LaunchPlan(inst)
                inst.plan = plan  # type: ignore[attr-defined]
    if not kernel.is_generic:
        kernel._launch_fast = plan  # type: ignore[attr-defined]
    return plan


def launch_adjoint(plan: LaunchPlan, bounds: LaunchBounds, args: list[Any], dev: Any, adj: list[Any],
                    record_cmd: bool) -> Launch | None:
    """Run the backward pass; array gradients go to ``adj`` arrays where given, else to each array's ``.grad``."""
    if not adj and not record_cmd and not _graph.capturing():
        plan.run_backward(args, dev, bounds)
        return None
    plan.inst.ensure_backward()
    rec = Launch(plan, bounds, args, dev, adjoint=True)
    staged: list[tuple[Any, Any]] = []
    for i, (name, t) in enumerate(zip(plan.names, plan.inst.types)):
        if isinstance(t, ArrayT) and i < len(adj) and adj[i] is not None:
            g = adj[i]
            if not is_array_object(g):
                raise LaunchError(f"adjoint for '{name}' must be an array, got {type(g).__name__}")
            desc = getattr(rec.args, name)
            if tuple(g.shape) != tuple(desc.shape[: desc.ndim]):
                raise LaunchError(f"adjoint array for '{name}' has shape {g.shape}, expected "
                                  f"{tuple(desc.shape[: desc.ndim])}")
            primal = tuple(desc.strides[: desc.ndim])
            if tuple(g.strides) != primal and g.size > 0:
                # Native code indexes data and gradient with the primal's strides: stage the adjoint in that layout.
                if record_cmd or _graph.capturing():
                    raise LaunchError(f"adjoint array for '{name}' has strides {g.strides}, the array has "
                                      f"{primal}: pass an adjoint with the array's layout to record or capture "
                                      "this launch")
                stage = _staged_grad(g, primal)
                staged.append((g, stage))
                g = stage
            if g.ptr != desc.grad:  # the caller's own adjoint buffer: stores pass its values on but keep them
                desc.flags |= ARRAY_KEEP_GRAD
            desc.grad = g.ptr
            rec._keep.append(g)
    if record_cmd:
        return rec
    if _graph.capturing():
        _graph.record(rec)
        return None
    if bounds.size > 0:
        rec.launch()
    for g, stage in staged:
        if 0 not in g.strides:  # an expanded (stride-0) adjoint is read-only input, as torch hands them out
            g.assign(stage)
    return None


def _staged_grad(g: Any, strides: tuple[int, ...]) -> Any:
    """A copy of adjoint array ``g`` laid out with the primal's byte ``strides`` (backed by a fresh allocation)."""
    view = g._zeros_with_layout(tuple(g.shape), strides)
    view.assign(g)
    return view
