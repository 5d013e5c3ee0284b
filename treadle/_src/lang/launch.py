"""``launch``: argument checking and packing, and the call into the compiled entry point."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import config
from ..autodiff.state import active_tape
from ..errors import LaunchError
from ..runtime.device import get_device
from . import scalars
from .abi import MAX_DIMS, LaunchBounds
from .kernel import Kernel, KernelInstance
from .typesys import ArrayT, GenericComposite, contains_any, is_composite, is_struct, type_str

#: Launches with fewer threads than this run on the calling thread (no parallel region).
SERIAL_THRESHOLD = 2048


def launch_bounds(dim: Any) -> LaunchBounds:
    """The launch grid for ``dim`` (an int or a tuple of up to 4 ints)."""
    if isinstance(dim, (int, np.integer)):
        shape: tuple[int, ...] = (int(dim),)
    else:
        try:
            shape = tuple(int(d) for d in dim)
        except TypeError:
            raise LaunchError(f"launch dim must be an int or a tuple of ints, got {dim!r}") from None
    if not 1 <= len(shape) <= MAX_DIMS:
        raise LaunchError(f"launch dim must have 1 to {MAX_DIMS} dimensions, got {len(shape)}")
    if any(s < 0 for s in shape):
        raise LaunchError(f"launch dim must not be negative, got {shape}")
    b = LaunchBounds()
    size = 1
    for i, s in enumerate(shape):
        b.shape[i] = s
        size *= s
    for i in range(len(shape), MAX_DIMS):
        b.shape[i] = 1
    b.ndim = len(shape)
    b.size = size
    return b


_CPU_COUNT = os.cpu_count() or 1


def _num_threads() -> int:
    return max(1, int(config.num_threads or _CPU_COUNT))


def value_type(v: Any, declared: Any) -> Any:
    """The kernel type of a launch argument (for generic kernels)."""
    from .array import array

    if isinstance(declared, ArrayT):
        if isinstance(v, array):
            return ArrayT(v.dtype, v.ndim)
        if isinstance(v, np.ndarray):
            from .scalars import scalar_from_numpy

            dt = scalar_from_numpy(v.dtype) if declared.dtype is Any else declared.dtype
            return ArrayT(dt, v.ndim if not is_composite(dt) else v.ndim - len(dt._shape_))
        # Interop hook: torch tensors / __dlpack__ objects passed straight to a generic kernel (interop/common.py).
        from ..interop.common import foreign_array_type

        return foreign_array_type(v, declared) or declared
    if isinstance(declared, GenericComposite):
        if declared.matches(type(v)):
            return type(v)
        raise LaunchError(f"a {type(v).__name__} argument does not match the generic parameter type {declared!r}")
    if declared is Any:
        if isinstance(v, bool):
            return scalars.bool
        if isinstance(v, int):
            return scalars.int32
        if isinstance(v, float):
            return scalars.float32
        if isinstance(v, scalars.scalar_base):
            return type(v)
        if is_composite(type(v)):
            return type(v)
        st = getattr(v, "_struct_type_", None)
        if st is not None:
            return st
        if isinstance(v, array):
            return ArrayT(v.dtype, v.ndim)
        raise LaunchError(f"cannot infer a kernel type for a {type(v).__name__} argument")
    return declared


def pack_arg(name: str, t: Any, v: Any, device: Any, kernel: Kernel) -> Any:
    """Convert one Python argument to its ctypes value, with a clear error if it does not fit."""
    from .array import array

    if isinstance(t, ArrayT):
        if v is None:
            from .abi import ArrayDesc

            return ArrayDesc()
        if not isinstance(v, array):
            if isinstance(v, np.ndarray) or hasattr(v, "__array_interface__"):
                v = _wrap_numpy(v, t, name, kernel)
            else:
                # Interop hook (slow path only): torch tensors and from_torch(..., return_ctype=True) descriptors
                # come back as a packed ArrayDesc, other __dlpack__ objects as a zero-copy Treadle array view.
                from ..interop.common import coerce_foreign_array

                foreign = coerce_foreign_array(v, t, device, f"kernel '{kernel.key}' argument '{name}'")
                if foreign is None:
                    raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects an array, got "
                                      f"{type(v).__name__}")
                if not isinstance(foreign, array):
                    return foreign  # an ArrayDesc, already checked
                v = foreign
        if v.ndim != t.ndim:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects a {t.ndim}-d array, got a "
                              f"{v.ndim}-d array of shape {v.shape}")
        if not contains_any(t.dtype) and v.dtype != t.dtype:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects an array of {type_str(t.dtype)}, "
                              f"got an array of {type_str(v.dtype)}")
        if device is not None and v.device != device:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' is on device '{v.device}' but the launch "
                              f"is on '{device}'; move it with arr.to('{device}')")
        return v.__ctype__()
    if scalars.is_scalar_type(t):
        if isinstance(v, scalars.scalar_base):
            v = v.value
        elif isinstance(v, np.generic):
            v = v.item()
        if t is scalars.bool:
            return bool(v)
        if scalars.is_int_type(t):
            if isinstance(v, float) or not isinstance(v, (int, bool)):
                raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)}, got "
                                  f"{type(v).__name__} {v!r}")
            return int(v)
        if not isinstance(v, (int, float)):
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)}, got "
                              f"{type(v).__name__}")
        if t is scalars.float16:
            return int(np.float16(v).view(np.uint16))
        return float(v)
    if is_composite(t):
        if isinstance(v, t):
            return v
        try:
            return t(*v) if not isinstance(v, np.ndarray) else t(v)
        except Exception:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects {type_str(t)}, got "
                              f"{type(v).__name__} {v!r}") from None
    if is_struct(t):
        st = getattr(v, "_struct_type_", None)
        if st is not t:
            raise LaunchError(f"kernel '{kernel.key}' argument '{name}' expects a {type_str(t)} struct, got "
                              f"{type(v).__name__}")
        return v.__ctype__()
    raise LaunchError(f"kernel '{kernel.key}' argument '{name}' has an unsupported type {type_str(t)}")


def _wrap_numpy(v: Any, t: ArrayT, name: str, kernel: Kernel) -> Any:
    from .array import array

    try:
        return array(v, dtype=t.dtype if not contains_any(t.dtype) else None, copy=False)
    except Exception as e:
        raise LaunchError(f"kernel '{kernel.key}' argument '{name}': cannot use this NumPy array as "
                          f"{t}: {e}") from None


class Launch:
    """A recorded launch (``launch(..., record_cmd=True)``) that can be replayed cheaply."""

    def __init__(self, inst: KernelInstance, bounds: LaunchBounds, args: ctypes.Structure, device: Any,
                 keep: list[Any]) -> None:
        self.kernel = inst.kernel
        self.instance = inst
        self.bounds = bounds
        self.args = args
        self.device = device
        self._keep = keep
        self.nthreads = 1 if bounds.size < SERIAL_THRESHOLD or config.deterministic else _num_threads()

    def set_dim(self, dim: Any) -> None:
        """Change the launch grid."""
        self.bounds = launch_bounds(dim)

    def set_param_at_index(self, index: int, value: Any) -> None:
        """Replace one argument by position."""
        name = self.kernel.param_names[index]
        setattr(self.args, name, pack_arg(name, self.instance.types[index], value, self.device, self.kernel))
        self._keep[index] = value

    def set_param_by_name(self, name: str, value: Any) -> None:
        """Replace one argument by name."""
        self.set_param_at_index(self.kernel.param_names.index(name), value)

    def set_params(self, values: Sequence[Any]) -> None:
        """Replace all arguments."""
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)

    def launch(self, stream: Any = None) -> None:
        """Run the recorded launch again."""
        self.instance.entry(ctypes.addressof(self.bounds), ctypes.addressof(self.args), self.nthreads)


def make_packer(name: str, t: Any, kernel: Kernel) -> Any:
    """A function ``(value, device) -> ctypes value`` specialised for one parameter type (chosen once)."""
    from .array import array

    if isinstance(t, ArrayT):
        want_dtype = None if contains_any(t.dtype) else t.dtype
        ndim = t.ndim

        def pack_array(v: Any, device: Any) -> Any:
            if type(v) is array or isinstance(v, array):
                if v.ndim == ndim and (want_dtype is None or v.dtype == want_dtype) and v.device is device:
                    return v.__ctype__()
            return pack_arg(name, t, v, device, kernel)

        return pack_array
    if t is scalars.float32 or t is scalars.float64:

        def pack_float(v: Any, device: Any) -> Any:
            if type(v) is float:
                return v
            return pack_arg(name, t, v, device, kernel)

        return pack_float
    if t is scalars.int32 or t is scalars.int64 or t is scalars.uint32 or t is scalars.uint64:

        def pack_int(v: Any, device: Any) -> Any:
            if type(v) is int:
                return v
            return pack_arg(name, t, v, device, kernel)

        return pack_int
    return lambda v, device: pack_arg(name, t, v, device, kernel)


class LaunchPlan:
    """Everything about launching one kernel instance that does not depend on the argument values."""

    __slots__ = ("inst", "names", "packers", "args_type", "debug")

    def __init__(self, inst: KernelInstance) -> None:
        self.inst = inst
        self.names = inst.kernel.param_names
        self.packers = [make_packer(n, t, inst.kernel) for n, t in zip(self.names, inst.types)]
        self.args_type = inst.args_type
        self.debug = inst.options.mode == "debug"

    def pack(self, args: Sequence[Any], device: Any) -> ctypes.Structure:
        packed = self.args_type()  # type: ignore[misc]
        for name, packer, v in zip(self.names, self.packers, args):
            setattr(packed, name, packer(v, device))
        return packed


_bounds_cache: dict[Any, LaunchBounds] = {}


def _bounds(dim: Any) -> LaunchBounds:
    b = _bounds_cache.get(dim) if type(dim) is int or type(dim) is tuple else None
    if b is None:
        b = launch_bounds(dim)
        if (type(dim) is int or type(dim) is tuple) and len(_bounds_cache) < 4096:
            _bounds_cache[dim] = b
    return b


def _plan_for(kernel: Kernel, args: list[Any]) -> LaunchPlan:
    if kernel.is_generic:
        types = tuple(value_type(v, t) for v, t in zip(args, kernel.param_types))
        inst = kernel.get_instance(types)
    else:
        inst = kernel.get_instance(None)
    plan = getattr(inst, "plan", None)
    if plan is None or plan.inst.entry is None:
        inst.ensure_loaded()
        plan = LaunchPlan(inst)
        inst.plan = plan  # type: ignore[attr-defined]
    return plan


def _launch_adjoint(plan: LaunchPlan, bounds: LaunchBounds, packed: ctypes.Structure, adj: list[Any]) -> None:
    """Run the backward pass; array gradients go to ``adj`` arrays where given, else to each array's ``.grad``."""
    from .array import array

    entry = plan.inst.ensure_backward()
    for i, (name, t) in enumerate(zip(plan.names, plan.inst.types)):
        if isinstance(t, ArrayT) and i < len(adj) and adj[i] is not None:
            g = adj[i]
            if not isinstance(g, array):
                raise LaunchError(f"adjoint for '{name}' must be an array, got {type(g).__name__}")
            desc = getattr(packed, name)
            if tuple(g.shape) != tuple(desc.shape[: desc.ndim]):
                raise LaunchError(f"adjoint array for '{name}' has shape {g.shape}, expected "
                                  f"{tuple(desc.shape[: desc.ndim])}")
            desc.grad = g.ptr
    if bounds.size > 0:
        nthreads = 1 if bounds.size < SERIAL_THRESHOLD or config.deterministic else _num_threads()
        entry(ctypes.addressof(bounds), ctypes.addressof(packed), nthreads)


def launch(kernel: Kernel, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
           adj_inputs: Sequence[Any] = (), adj_outputs: Sequence[Any] = (), device: Any = None, stream: Any = None,
           adjoint: bool = False, record_tape: bool = True, record_cmd: bool = False, max_blocks: int = 0,
           block_dim: int = 256) -> Launch | None:
    """Launch ``kernel`` over a grid of ``dim`` threads with ``inputs`` followed by ``outputs`` as arguments."""
    dev = get_device(device)
    if not getattr(kernel, "_treadle_kernel_", False):
        raise LaunchError(f"wp.launch() expects a @wp.kernel, got {type(kernel).__name__}")
    if not dev.is_cpu:
        raise LaunchError(f"device '{dev}' has no backend in this build; launch on 'cpu'")
    args = list(inputs) + list(outputs) if outputs else list(inputs)
    names = kernel.param_names
    if len(args) != len(names):
        if len(args) < len(names) and all(n in kernel.defaults for n in names[len(args):]):
            args += [kernel.defaults[n] for n in names[len(args):]]
        else:
            raise LaunchError(
                f"kernel '{kernel.key}' takes {len(names)} argument(s) ({', '.join(names)}) but the launch passes "
                f"{len(args)} (inputs + outputs)"
            )
    if config.mode == "interpret":  # interpreter mode: run the IR in Python, see treadle/_src/compiler/interpret.py
        from ..compiler.interpret import interpret_launch
        return interpret_launch(kernel, dim, args, dev, inputs, outputs, adjoint, list(adj_inputs) + list(adj_outputs), record_tape, record_cmd)
    bounds = _bounds(dim)
    plan = _plan_for(kernel, args)
    packed = plan.pack(args, dev)
    if adjoint:
        _launch_adjoint(plan, bounds, packed, list(adj_inputs) + list(adj_outputs))
        return None
    if record_tape:
        tape = active_tape()
        if tape is not None:
            tape.record_launch(kernel, dim, inputs, outputs, dev, plan.inst)
    if config.print_launches:
        import sys

        print(f"treadle: launch {kernel.key} dim={tuple(bounds.shape[: bounds.ndim])}", file=sys.stderr)
    if record_cmd:
        return Launch(plan.inst, bounds, packed, dev, args)
    size = bounds.size
    if size > 0:
        nthreads = 1 if size < SERIAL_THRESHOLD or config.deterministic else _num_threads()
        plan.inst.entry(ctypes.addressof(bounds), ctypes.addressof(packed), nthreads)
        if plan.debug:
            plan.inst.check_errors()
    return None
