"""Treadle kernels and kernel-launching Python functions as JAX primitives: ``jax_kernel`` and ``jax_callable``.

Both lower to one XLA FFI custom call (target ``"treadle_ffi"``, see :mod:`.jax_ffi`), so they work inside
``jax.jit``, under ``jax.vmap`` and, for kernels created with ``enable_backward=True``, under ``jax.grad`` through a
``jax.custom_vjp`` whose backward rule calls the kernel's compiled adjoint.

Argument conventions (the same as the reference API):

- a kernel's (or function's) parameters are inputs followed by outputs; the last ``num_outputs`` parameters that are
  not in ``in_out_argnames`` are pure outputs, allocated by XLA and set to zero before the launch;
- the call takes the inputs (in-out arrays included) in parameter order; arrays are JAX arrays (vector/matrix
  elements as trailing dimensions), scalars are static Python values (a traced scalar is an error);
- the call returns a list: the in-out arrays' new values, then the outputs;
- launch dimensions default to the shape of the first array input, output dimensions to the launch dimensions.

``jax_callable`` runs its Python function through an FFI callback: the C dispatcher calls back into Python with the
XLA buffers, which are wrapped as Treadle arrays (no copy) and passed to the function. A Python function may do
anything (allocate temporaries, choose launches from shapes), so recording its launches once and replaying them
without Python would be unsound in general; the callback costs a few microseconds per call.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import inspect
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ... import config
from ..core.errors import TreadleError
from ..lang import array as _arr
from ..types.typesys import ArrayT, contains_any, normalize_annotation, type_str


class JaxCallableGraphMode(enum.IntEnum):
    """Graph capture modes of :func:`jax_callable` (CUDA graph capture; on the CPU nothing is captured).

    ``NONE`` and ``JAX`` run the function on every call (the only modes on the CPU). ``WARP``, ``WARP_STAGED`` and
    ``WARP_STAGED_EX`` need a CUDA device and are refused on the CPU with an error.
    """

    NONE = 0
    JAX = 1
    WARP = 2
    WARP_STAGED = 3
    WARP_STAGED_EX = 4


class JaxModulePreloadMode(enum.IntEnum):
    """Where :func:`jax_kernel` / :func:`jax_callable` load (compile) Treadle modules before the first execution.

    ``CURRENT_DEVICE`` and ``ALL_DEVICES`` load when the call is traced (on the CPU, the only device, both are the
    same); ``NONE`` loads on first execution (a ``jax_kernel`` always needs its entry point at trace time).
    """

    NONE = 0
    CURRENT_DEVICE = 1
    ALL_DEVICES = 2


# --------------------------------------------------------------------------------------------- signatures


class SignatureError(TreadleError, ValueError):
    """The arguments of ``jax_kernel`` / ``jax_callable`` / ``torch_op`` do not fit the function's parameters."""


class DuplicateNameError(SignatureError, AssertionError):
    """A name given twice in ``in_out_argnames`` (also an ``AssertionError``, as the reference raises)."""


class Signature:
    """How the parameters of a kernel / annotated function split into inputs, in-out arrays and outputs."""

    def __init__(self, names: Sequence[str], types: Sequence[Any], num_outputs: int,
                 in_out_argnames: Sequence[str] | None, what: str) -> None:
        self.names = list(names)
        self.types = list(types)
        self.what = what
        n = len(self.names)
        in_out = list(in_out_argnames or [])
        if isinstance(in_out_argnames, str):
            in_out = [in_out_argnames]
        if len(set(in_out)) != len(in_out):
            raise DuplicateNameError(f"{what}: in_out_argnames must not contain duplicate names, got {in_out}")
        for nm in in_out:
            if nm not in self.names:
                raise SignatureError(f"{what}: in_out_argnames '{nm}' did not match any function argument names "
                                     f"({', '.join(self.names)})")
        n_pure = int(num_outputs) - len(in_out)
        if n_pure < 0:
            raise SignatureError(f"{what}: num_outputs={num_outputs} must count the {len(in_out)} in-out "
                                 "argument(s) too")
        if n_pure > n:
            raise SignatureError(f"{what}: num_outputs={num_outputs} is more than the {n} parameters")
        if num_outputs < 1:
            raise SignatureError(f"{what}: at least one output (or in-out argument) is required; set num_outputs")
        self.output_idx = list(range(n - n_pure, n))
        self.input_idx = list(range(n - n_pure))
        self.in_out_idx = [self.names.index(nm) for nm in in_out]
        for i in self.in_out_idx:
            if i >= n - n_pure:
                raise SignatureError(f"{what}: in-out argument '{self.names[i]}' must come before the "
                                     f"{n_pure} pure output parameter(s)")
        for i in self.output_idx + self.in_out_idx:
            if not isinstance(self.types[i], ArrayT):
                raise SignatureError(f"{what}: output / in-out parameter '{self.names[i]}' must be an array, "
                                     f"got {type_str(self.types[i])}")
        self.array_inputs = [i for i in self.input_idx if isinstance(self.types[i], ArrayT)]
        self.static_inputs = [i for i in self.input_idx if not isinstance(self.types[i], ArrayT)]

    def bind(self, args: Sequence[Any]) -> tuple[list[Any], dict[int, Any]]:
        """Split call arguments into array values (in ``array_inputs`` order) and static values by position."""
        if len(args) != len(self.input_idx):
            names = ", ".join(self.names[i] for i in self.input_idx)
            raise TreadleError(f"{self.what} takes {len(self.input_idx)} input(s) ({names}), got {len(args)}")
        arrays = [args[i] for i in self.array_inputs]
        statics = {i: args[i] for i in self.static_inputs}
        return arrays, statics


def resolve_types(sig: Signature, arrays: Sequence[Any], statics: dict[int, Any],
                  array_dtype: Callable[[Any], Any]) -> tuple[Any, ...]:
    """Concrete parameter types of a generic kernel from argument values (arrays: scalar element types)."""
    from ..backends.args import value_type

    types = list(sig.types)
    for i, a in zip(sig.array_inputs, arrays):
        t = types[i]
        if contains_any(t.dtype):
            types[i] = ArrayT(array_dtype(a), t.ndim)
    for i, v in statics.items():
        if contains_any(types[i]):
            types[i] = value_type(v, types[i])
    for i in sig.output_idx:
        if contains_any(types[i]):
            raise TreadleError(f"{sig.what}: output '{sig.names[i]}' has a generic element type; give it a "
                               "concrete dtype (or instantiate the kernel with wp.overload)")
    return tuple(types)


def element_info(t: ArrayT) -> tuple[Any, tuple[int, ...], int]:
    """``(scalar type, inner shape, element size)`` of an array type."""
    dt = t.dtype
    if _arr.is_struct_type(dt):
        raise TreadleError(f"arrays of struct {_arr.type_name(dt)} cannot be exchanged with JAX / PyTorch")
    return dt._wp_scalar_type_, _arr.inner_shape(dt), _arr.elem_size(dt)


def as_dims(d: Any, what: str) -> tuple[int, ...]:
    """A shape tuple from an int or a sequence of ints."""
    if isinstance(d, int) or hasattr(d, "__index__") and not isinstance(d, (tuple, list)):
        return (int(d),)
    try:
        return tuple(int(x) for x in d)
    except TypeError:
        raise TreadleError(f"{what} must be an int or a tuple of ints, got {d!r}") from None


def output_shape(sig: Signature, i: int, launch: tuple[int, ...], output_dims: Any, *, ndim: int | None = None,
                 inner: tuple[int, ...] = (), fallback: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The outer shape of output parameter ``i`` (without element dims).

    Given dims may include the element's trailing dims (``output_dims={"v": b.shape}`` for an array of ``vec2``
    built from an ``(N, 2)`` input): they are dropped when ``ndim`` and ``inner`` say so. Without given dims the
    launch dims are used, or, when they have the wrong number of dims for this ``ndim``-d output, ``fallback``
    (the first array input's shape) if that fits.
    """
    name = sig.names[i]
    d: tuple[int, ...] | None = None
    if isinstance(output_dims, dict):
        if output_dims.get(name) is not None:
            d = as_dims(output_dims[name], f"output_dims['{name}']")
    elif output_dims is not None:
        d = as_dims(output_dims, "output_dims")
    if d is None:
        if ndim is not None and len(launch) != ndim and fallback is not None and len(fallback) == ndim:
            return tuple(fallback)
        return launch
    k = len(inner)
    if ndim is not None and k and len(d) == ndim + k and tuple(d[ndim:]) == tuple(inner):
        return d[:ndim]
    return d


def dims_key(dims: Any) -> Any:
    """A hashable key for an ``output_dims`` / ``launch_dims`` value."""
    if dims is None:
        return None
    if isinstance(dims, dict):
        return tuple(sorted((k, as_dims(v, f"output_dims['{k}']")) for k, v in dims.items()))
    return as_dims(dims, "output_dims")


def static_key(v: Any) -> Any:
    """A hashable key for a static argument value."""
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        pass
    try:
        return (type(v).__name__, tuple(float(x) for x in v))
    except TypeError:
        return (type(v).__name__, repr(v))


_launch_mod: Any = None


def thread_count(size: int) -> int:
    """Threads for a launch of ``size`` (the same rule as ``wp.launch``)."""
    global _launch_mod
    if _launch_mod is None:
        from ..lang import launch as _launch_mod
    if size < _launch_mod.SERIAL_THRESHOLD or config.deterministic:
        return 1
    return int(_launch_mod._num_threads())


def _check_static(sig: Signature, statics: dict[int, Any]) -> None:
    import jax

    for i, v in statics.items():
        if isinstance(v, jax.core.Tracer):
            raise TreadleError(
                f"{sig.what}: scalar argument '{sig.names[i]}' is a traced JAX value; scalars must be static "
                "Python values. Pass it through jax.jit(..., static_argnames=...) or close over it, or make the "
                "parameter a one-element array"
            )


def _jax_array_info(sig: Signature, i: int, t: ArrayT, a: Any) -> tuple[tuple[int, ...], Any]:
    """Validate a JAX array for array parameter ``i``: returns its outer shape and NumPy dtype."""
    import numpy as np

    from .jax import dtype_to_jax

    scalar, inner, _ = element_info(t)
    shape = tuple(int(s) for s in a.shape)
    want = np.dtype(dtype_to_jax(scalar))
    if np.dtype(a.dtype) != want:
        raise TreadleError(f"{sig.what}: argument '{sig.names[i]}' expects {want} values "
                           f"({type_str(t)}), got a JAX array of {np.dtype(a.dtype)}")
    k = len(inner)
    if len(shape) != t.ndim + k or tuple(shape[len(shape) - k:]) != inner:
        inner_txt = f" followed by element dims {inner}" if k else ""
        raise TreadleError(f"{sig.what}: argument '{sig.names[i]}' expects a JAX array with {t.ndim} dim(s)"
                           f"{inner_txt}, got shape {shape}")
    return shape[: t.ndim], want


# --------------------------------------------------------------------------------------------- jax_kernel


class _Launch:
    """Everything fixed for one traced call: kernel instance, shapes, launch dims, statics (forward + backward)."""

    def __init__(self, sig: Signature, inst: Any, in_shapes: list[tuple[int, ...]], out_shapes: list[tuple[int, ...]],
                 statics: dict[int, Any], launch: tuple[int, ...], platform: str = "cpu",
                 block_dim: int | None = None) -> None:
        from ..backends.args import launch_bounds, pack_arg
        from ..core.abi import ArrayDesc
        from ..runtime.device import get_device

        self.sig = sig
        self.inst = inst
        self.launch = launch
        self.platform = platform  # "cpu": the kernel's CPU entry points; "cuda": launches on XLA's CUDA stream
        self.block_dim = block_dim
        self.preloaded: set[int] = set()  # CUDA ordinals the kernel was loaded on at trace time
        self.bounds = launch_bounds(launch)
        self.nthreads = thread_count(int(self.bounds.size))
        shapes: dict[int, tuple[int, ...]] = dict(zip(sig.array_inputs, in_shapes))
        shapes.update(zip(sig.output_idx, out_shapes))
        self.shapes = shapes
        args_type = inst.args_type
        packed = args_type()
        dev = get_device("cpu")
        self.offsets: dict[int, int] = {}
        for i, (name, t) in enumerate(zip(sig.names, inst.types)):
            if isinstance(t, ArrayT):
                _, _, esize = element_info(t)
                shape = shapes[i]
                desc = ArrayDesc()
                for d, (n, s) in enumerate(zip(shape, _arr.contiguous_strides(shape, esize))):
                    desc.shape[d] = n
                    desc.strides[d] = s
                desc.ndim = len(shape)
                setattr(packed, name, desc)
                self.offsets[i] = getattr(args_type, name).offset
            else:
                setattr(packed, name, pack_arg(name, t, statics[i], dev, inst.kernel))
        self.template = ctypes.string_at(ctypes.addressof(packed), ctypes.sizeof(packed))
        self._fwd: Any = None
        self._bwd: Any = None

    def nbytes(self, i: int) -> tuple[int, int]:
        """``(bytes, rank)`` of the unbatched buffer of array parameter ``i``."""
        _, inner, esize = element_info(self.inst.types[i])
        shape = self.shapes[i]
        return math.prod(shape) * esize, len(shape) + len(inner)

    def forward_plan(self) -> Any:
        from .jax_ffi import BufferSpec

        if self._fwd is None:
            sig = self.sig
            nargs = len(sig.array_inputs)
            arg_pos = {i: k for k, i in enumerate(sig.array_inputs)}
            rets = sig.in_out_idx + sig.output_idx
            ret_pos = {i: nargs + k for k, i in enumerate(rets)}
            bufs = [BufferSpec(*self.nbytes(i)) for i in sig.array_inputs]
            bufs += [BufferSpec(*self.nbytes(i), zero=i in sig.output_idx) for i in rets]
            slots = []
            for i, off in self.offsets.items():
                src = ret_pos[i] if i in ret_pos else arg_pos[i]
                slots.append((off, src, -1))
            self._fwd = self._plan(bufs, nargs, slots, adjoint=False)
        return self._fwd

    def _plan(self, bufs: list[Any], nargs: int, slots: list[tuple[int, int, int]], adjoint: bool) -> Any:
        """A CPU plan (the kernel's entry point) or a CUDA plan (a :class:`CudaTarget` on XLA's stream)."""
        from .jax_ffi import KIND_CPU, KIND_CUDA, CudaTarget, Plan

        if self.platform == "cuda":
            target = CudaTarget(self.inst, self.bounds, adjoint=adjoint, block_dim=self.block_dim)
            return Plan(KIND_CUDA, bufs, nargs, template=self.template, slots=slots, bounds=self.bounds,
                        cuda_target=target)
        entry = self.inst.ensure_backward() if adjoint else self.inst.entry
        return Plan(KIND_CPU, bufs, nargs, entry=entry, template=self.template, slots=slots, bounds=self.bounds,
                    nthreads=self.nthreads)

    def backward_plan(self, grad_inputs: list[int]) -> Any:
        """Args: array inputs, primal outputs, output cotangents. Results: input gradients, cotangent copies."""
        from .jax_ffi import BufferSpec

        if self._bwd is None:
            sig = self.sig
            n_in, n_out = len(sig.array_inputs), len(sig.output_idx)
            nargs = n_in + 2 * n_out
            bufs = [BufferSpec(*self.nbytes(i)) for i in sig.array_inputs]
            bufs += [BufferSpec(*self.nbytes(i)) for i in sig.output_idx]
            bufs += [BufferSpec(*self.nbytes(i)) for i in sig.output_idx]
            bufs += [BufferSpec(*self.nbytes(i), zero=True) for i in grad_inputs]
            bufs += [BufferSpec(*self.nbytes(i)) for i in sig.output_idx]
            grad_pos = {i: nargs + k for k, i in enumerate(grad_inputs)}
            slots = []
            for k, i in enumerate(sig.array_inputs):
                slots.append((self.offsets[i], k, grad_pos.get(i, -1)))
            for q, i in enumerate(sig.output_idx):
                slots.append((self.offsets[i], n_in + q, nargs + len(grad_inputs) + q))
            self._bwd = self._plan(bufs, nargs, slots, adjoint=True)
        return self._bwd


def _preload_cuda(lp: _Launch, ordinal: int, backward: bool) -> None:
    """Compile and load the kernel for ``cuda:<ordinal>`` at trace time (errors surface here, not inside XLA)."""
    from ..runtime.device import is_cuda_available
    from .jax_ffi import CudaTarget

    if not is_cuda_available():
        raise TreadleError(f"jax_kernel('{lp.inst.kernel.key}'): JAX runs this call on CUDA device {ordinal} but "
                           "Treadle cannot use CUDA here (see wp.is_cuda_available())")
    CudaTarget.preload_instance(lp.inst, ordinal)
    if backward:
        CudaTarget.preload_instance(lp.inst, ordinal, adjoint=True)
    lp.preloaded.add(ordinal)


class FfiKernel:
    """A Treadle kernel callable on JAX arrays (the result of :func:`jax_kernel`)."""

    def __init__(self, kernel: Any, num_outputs: int = 1, vmap_method: str = "broadcast_all", launch_dims: Any = None,
                 output_dims: Any = None, in_out_argnames: Sequence[str] | None = None,
                 module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
                 enable_backward: bool = False, has_side_effect: bool = False, block_dim: int | None = None) -> None:
        self._inst: Any = None
        if not getattr(kernel, "_treadle_kernel_", False) and getattr(getattr(kernel, "kernel", None),
                                                                       "_treadle_kernel_", False):
            # an explicit instance of a generic kernel (kernel.add_overload([...]) / wp.overload)
            self._inst, kernel = kernel, kernel.kernel
        if not getattr(kernel, "_treadle_kernel_", False):
            raise TypeError(f"jax_kernel() expects a @wp.kernel, got {type(kernel).__name__}")
        self.kernel = kernel
        self.what = f"jax_kernel('{kernel.key}')"
        types = self._inst.types if self._inst is not None else kernel.param_types
        self.sig = Signature(kernel.param_names, types, num_outputs, in_out_argnames, self.what)
        self.num_outputs = num_outputs
        self.vmap_method = vmap_method
        self.launch_dims = launch_dims
        self.output_dims = output_dims
        self.module_preload_mode = JaxModulePreloadMode(module_preload_mode)
        self.enable_backward = bool(enable_backward)
        self.has_side_effect = bool(has_side_effect)
        self.block_dim = block_dim  # threads per block of CUDA launches (CPU launches have no blocks)
        if self.enable_backward and self.sig.in_out_idx:
            raise TreadleError(f"{self.what}: in_out_argnames is not supported with enable_backward=True (the "
                               "kernel overwrites its input, so the backward pass cannot see the original values)")
        self._launches: dict[Any, _Launch] = {}
        self._diff: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<treadle jax_kernel {self.kernel.key}>"

    # -- planning
    def _launch_for(self, arrays: list[Any], statics: dict[int, Any], launch_dims: Any, output_dims: Any) -> _Launch:
        import numpy as np

        from .jax import dtype_from_jax
        from .jax_ffi import jax_platform

        sig = self.sig
        _check_static(sig, statics)
        platform, ordinal = jax_platform(arrays)
        key = (platform, tuple((tuple(a.shape), np.dtype(a.dtype).str) for a in arrays),
               tuple(static_key(statics[i]) for i in sig.static_inputs),
               as_dims(launch_dims, "launch_dims") if launch_dims is not None else None, dims_key(output_dims))
        lp = self._launches.get(key)
        if lp is not None:
            if platform == "cuda" and ordinal not in lp.preloaded:
                _preload_cuda(lp, ordinal, self.enable_backward)
            return lp
        k = self.kernel
        if self._inst is not None:
            inst = self._inst
        elif k.is_generic:
            types = resolve_types(sig, arrays, statics, lambda a: dtype_from_jax(a.dtype))
            inst = k.get_instance(types)
        else:
            inst = k.get_instance(None)
        if platform == "cpu":
            inst.ensure_loaded()
        in_shapes = [_jax_array_info(sig, i, inst.types[i], a)[0] for i, a in zip(sig.array_inputs, arrays)]
        if launch_dims is not None:
            launch = as_dims(launch_dims, "launch_dims")
        elif in_shapes:
            launch = in_shapes[0]
        else:
            raise TreadleError(f"{self.what}: the kernel has no array inputs, so launch_dims cannot be inferred; "
                               "pass launch_dims=...")
        out_shapes = []
        for i in sig.output_idx:
            shape = output_shape(sig, i, launch, output_dims, ndim=inst.types[i].ndim,
                                 inner=element_info(inst.types[i])[1], fallback=in_shapes[0] if in_shapes else None)
            if len(shape) != inst.types[i].ndim:
                raise TreadleError(f"{self.what}: output '{sig.names[i]}' is a {inst.types[i].ndim}-d array but "
                                   f"its dims are {shape}; pass output_dims={{'{sig.names[i]}': (...)}}")
            out_shapes.append(shape)
        lp = _Launch(sig, inst, in_shapes, out_shapes, statics, launch, platform=platform, block_dim=self.block_dim)
        if platform == "cuda":
            _preload_cuda(lp, ordinal, self.enable_backward)
        self._launches[key] = lp
        return lp

    def _result_types(self, lp: _Launch) -> list[Any]:
        import jax

        from .jax import dtype_to_jax

        out = []
        for i in self.sig.in_out_idx + self.sig.output_idx:
            scalar, inner, _ = element_info(lp.inst.types[i])
            out.append(jax.ShapeDtypeStruct(lp.shapes[i] + inner, dtype_to_jax(scalar)))
        return out

    def _forward(self, arrays: list[Any], lp: _Launch, vmap_method: Any) -> list[Any]:
        from .jax_ffi import ffi_call

        sig = self.sig
        aliases = {sig.array_inputs.index(i): k for k, i in enumerate(sig.in_out_idx)}
        return ffi_call(lp.forward_plan(), list(arrays), self._result_types(lp), aliases=aliases,
                        vmap_method=vmap_method, has_side_effect=self.has_side_effect)

    def _backward(self, arrays: Sequence[Any], outs: Sequence[Any], cts: Sequence[Any], lp: _Launch,
                  vmap_method: Any) -> list[Any]:
        import jax
        import jax.numpy as jnp

        from .jax_ffi import ffi_call

        sig = self.sig
        grad_inputs = [i for i, a in zip(sig.array_inputs, arrays) if jnp.issubdtype(a.dtype, jnp.floating)]
        plan = lp.backward_plan(grad_inputs)
        cts = [jnp.zeros(o.shape, o.dtype) if c is None or type(c).__name__ == "Zero" else c
               for o, c in zip(outs, cts)]
        results = [jax.ShapeDtypeStruct(a.shape, a.dtype) for i, a in zip(sig.array_inputs, arrays)
                   if i in grad_inputs]
        results += [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs]
        n_in, n_out = len(arrays), len(outs)
        aliases = {n_in + n_out + q: len(grad_inputs) + q for q in range(n_out)}
        res = ffi_call(plan, [*arrays, *outs, *cts], results, aliases=aliases, vmap_method=vmap_method,
                       has_side_effect=self.has_side_effect)
        grads = iter(res[: len(grad_inputs)])
        return [next(grads) if i in grad_inputs else None for i in sig.array_inputs]

    # -- call
    def __call__(self, *args: Any, output_dims: Any = None, launch_dims: Any = None, vmap_method: Any = None) -> Any:
        import jax
        import jax.numpy as jnp

        sig = self.sig
        arrays, statics = sig.bind(args)
        arrays = [a if hasattr(a, "shape") and hasattr(a, "dtype") else jnp.asarray(a) for a in arrays]
        launch_dims = launch_dims if launch_dims is not None else self.launch_dims
        output_dims = output_dims if output_dims is not None else self.output_dims
        vm = vmap_method if vmap_method is not None else self.vmap_method
        lp = self._launch_for(arrays, statics, launch_dims, output_dims)
        if not any(isinstance(a, jax.core.Tracer) for a in arrays):
            # An eager call: run a cached jitted wrapper (an eager ffi_call would be traced and lowered every time).
            return list(self._eager_fn(lp, vm)(*arrays))
        if not self.enable_backward:
            return self._forward(arrays, lp, vm)
        # Inside shard_map, mark every input as varying over the same mesh axes before the custom VJP: JAX then
        # differentiates that cast itself (an invariant input's gradient is summed over the shards).
        from .jax_ffi import match_varying

        arrays, _ = match_varying(arrays)
        return list(self._diff_fn(lp, vm)(*arrays))

    def _eager_fn(self, lp: _Launch, vm: Any) -> Any:
        key = ("eager", id(lp), vm)
        f = self._diff.get(key)
        if f is None:
            import jax

            if self.enable_backward:
                f = jax.jit(self._diff_fn(lp, vm))
            else:
                f = jax.jit(lambda *arrays: tuple(self._forward(list(arrays), lp, vm)))
            self._diff[key] = f
        return f

    def _diff_fn(self, lp: _Launch, vm: Any) -> Any:
        """A ``jax.custom_vjp`` function of the array inputs for one launch plan (cached)."""
        key = (id(lp), vm)
        cached = self._diff.get(key)
        if cached is not None:
            return cached
        import jax

        @jax.custom_vjp
        def f(*arrays: Any) -> Any:
            return tuple(self._forward(list(arrays), lp, vm))

        def f_fwd(*arrays: Any) -> Any:
            outs = tuple(self._forward(list(arrays), lp, vm))
            return outs, (arrays, outs)

        def f_bwd(res: Any, cts: Any) -> Any:
            arrays, outs = res
            return tuple(self._backward(arrays, outs, cts, lp, vm))

        f.defvjp(f_fwd, f_bwd)
        self._diff[key] = f
        return f


def jax_kernel(kernel: Any, num_outputs: int = 1, vmap_method: str = "broadcast_all", launch_dims: Any = None,
               output_dims: Any = None, in_out_argnames: Sequence[str] | None = None,
               module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
               enable_backward: bool = False, has_side_effect: bool = False, block_dim: int | None = None) -> FfiKernel:
    """A JAX primitive (XLA FFI custom call) that launches a Treadle kernel.

    Args:
        kernel: the ``@wp.kernel``; its parameters are inputs followed by outputs.
        num_outputs: number of output parameters, in-out arguments included.
        vmap_method: how the call batches under ``jax.vmap``: ``"broadcast_all"`` (default) or ``"expand_dims"``
            (the dispatcher launches once per batch element, zero-copy) or ``"sequential"`` (JAX loops). Can be
            given per call.
        launch_dims: the launch grid (int or tuple); default: the shape of the first array input. Can be given
            per call.
        output_dims: outer shape of the outputs: one shape for all, or ``{name: shape}``; default: the launch
            dims. Can be given per call.
        in_out_argnames: array inputs that the kernel updates in place (XLA aliases them to results).
        module_preload_mode: accepted for compatibility; the kernel is compiled when the call is traced.
        enable_backward: differentiable with ``jax.grad``/``jax.vjp`` through the kernel's adjoint
            (``jax.custom_vjp``); not combinable with ``in_out_argnames``.
        has_side_effect: keep the call even when its results are unused.
        block_dim: accepted for compatibility (CPU launches have no blocks).

    Returns:
        A callable ``f(*inputs, output_dims=None, launch_dims=None, vmap_method=None)`` returning a list of JAX
        arrays (in-out results first, then outputs). Scalars must be static Python values.
    """
    key = (id(kernel), int(num_outputs), vmap_method, dims_key(launch_dims), dims_key(output_dims),
           _names_key(in_out_argnames), int(module_preload_mode), bool(enable_backward), bool(has_side_effect),
           block_dim)
    with _wrappers_lock:
        f = _kernel_wrappers.get(key)
        if f is None:
            f = FfiKernel(kernel, num_outputs, vmap_method, launch_dims, output_dims, in_out_argnames,
                          module_preload_mode, enable_backward, has_side_effect, block_dim)
            _kernel_wrappers[key] = f  # the wrapper holds the kernel, so its id is not reused while cached
        return f


# jax_kernel() / jax_callable() return the same wrapper for the same function and options (as the reference does):
# a wrapper owns its launch plans and traced executables, so re-creating it in a loop would re-trace every time.
_kernel_wrappers: dict[Any, FfiKernel] = {}
_callable_wrappers: dict[Any, Any] = {}
_wrappers_lock = threading.Lock()


def _names_key(names: Any) -> tuple[str, ...]:
    if names is None:
        return ()
    if isinstance(names, str):
        return (names,)
    return tuple(names)


# --------------------------------------------------------------------------------------------- jax_callable

_callables: dict[int, Any] = {}
_next_ctx = [1]
_callables_lock = threading.Lock()


def _trampoline(ctx: int, nbufs: int, data: Any, err: int, errlen: int) -> int:
    """The C dispatcher's way back into Python: run the call registered as ``ctx`` on the given buffers."""
    try:
        call = _callables[ctx]
        call.run([data[i] for i in range(nbufs)])
        return 0
    except BaseException as e:  # noqa: BLE001 - reported to XLA as the call's error
        what = getattr(_callables.get(ctx), "what", "jax_callable")
        msg = f"{what}: {type(e).__name__}: {e}".encode(errors="replace")[: max(int(errlen) - 1, 0)]
        ctypes.memmove(err, msg + b"\0", len(msg) + 1)
        return 1


_trampoline_fn: Any = None


def _get_trampoline() -> Any:
    global _trampoline_fn
    if _trampoline_fn is None:
        from .jax_ffi import CALLBACK_FN

        _trampoline_fn = CALLBACK_FN(_trampoline)
    return _trampoline_fn


class _CallableCall:
    """One traced call of a :class:`FfiCallable`: buffer layouts and static values; run per execution."""

    def __init__(self, owner: FfiCallable, types: list[Any], shapes: dict[int, tuple[int, ...]],
                 statics: dict[int, Any]) -> None:
        from ..runtime.device import get_device

        self.owner = owner
        self.what = owner.what
        self.types = types
        self.shapes = shapes
        self.statics = statics
        self.device = get_device("cpu")
        sig = owner.sig
        # Buffer order: array inputs (in-out ones read from their aliased results), then in-out, then outputs.
        nargs = len(sig.array_inputs)
        rets = sig.in_out_idx + sig.output_idx
        src = {i: k for k, i in enumerate(sig.array_inputs)}
        src.update({i: nargs + k for k, i in enumerate(rets)})
        self.layout = []
        for i, t in enumerate(types):
            if isinstance(t, ArrayT):
                _, _, esize = element_info(t)
                shape = shapes[i]
                self.layout.append((i, src[i], t.dtype, shape, _arr.contiguous_strides(shape, esize)))
        self.plan: Any = None
        self.eager: dict[Any, Any] = {}

    def run(self, ptrs: list[int]) -> None:
        from .common import wrap_memory

        args: list[Any] = [None] * len(self.types)
        for i, v in self.statics.items():
            args[i] = v
        for i, b, dtype, shape, strides in self.layout:
            args[i] = wrap_memory(ptrs[b] or 0, dtype, shape, strides, self.device, owner=None)
        self.owner.func(*args)


class FfiCallable:
    """A Python function that launches Treadle kernels, callable on JAX arrays (the result of :func:`jax_callable`)."""

    def __init__(self, func: Callable[..., Any], num_outputs: int = 1,
                 graph_mode: JaxCallableGraphMode = JaxCallableGraphMode.JAX, vmap_method: str | None = "broadcast_all",
                 output_dims: Any = None, in_out_argnames: Sequence[str] | None = None,
                 stage_in_argnames: Sequence[str] | None = None, stage_out_argnames: Sequence[str] | None = None,
                 graph_cache_max: int | None = 32,
                 module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
                 has_side_effect: bool = False) -> None:
        if not callable(func):
            raise TypeError(f"jax_callable() expects a function, got {type(func).__name__}")
        self.func = func
        name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))
        self.what = f"jax_callable('{name}')"
        try:
            hints = inspect.get_annotations(func, eval_str=True)
        except Exception as e:  # noqa: BLE001
            raise TreadleError(f"{self.what}: cannot evaluate the parameter annotations: {e}") from None
        names, types = [], []
        for p in inspect.signature(func).parameters.values():
            if p.name not in hints:
                raise TreadleError(f"{self.what}: parameter '{p.name}' has no type annotation; annotate it like a "
                                   "kernel parameter (e.g. 'x: wp.array(dtype=float)')")
            names.append(p.name)
            types.append(normalize_annotation(hints[p.name]))
        self.sig = Signature(names, types, num_outputs, in_out_argnames, self.what)
        for nm in list(stage_in_argnames or []) + list(stage_out_argnames or []):
            if nm not in names:
                raise TreadleError(f"{self.what}: staged argument '{nm}' is not a parameter")
        self.num_outputs = num_outputs
        self.graph_mode = JaxCallableGraphMode(graph_mode)
        self.vmap_method = vmap_method
        self.output_dims = output_dims
        self.stage_in_argnames = set(_names_key(stage_in_argnames))
        self.stage_out_argnames = set(_names_key(stage_out_argnames))
        self.graph_cache_max = graph_cache_max
        self.module_preload_mode = JaxModulePreloadMode(module_preload_mode)
        self.has_side_effect = bool(has_side_effect)
        self.graph_cache: dict[Any, Any] = {}  # CUDA graphs captured in WARP modes (always empty on the CPU)
        self._calls: dict[Any, _CallableCall] = {}
        _all_callables.append(self)

    def __repr__(self) -> str:
        return f"<treadle {self.what}>"

    def _preload(self) -> None:
        if self.module_preload_mode == JaxModulePreloadMode.NONE:
            return
        from ..lang.kernel import get_module, modules

        mod_name = getattr(self.func, "__module__", None)
        if mod_name and mod_name in modules().modules:
            get_module(mod_name).load()

    def _call_for(self, arrays: list[Any], statics: dict[int, Any], output_dims: Any) -> _CallableCall:
        import numpy as np

        from .jax import dtype_from_jax
        from .jax_ffi import jax_platform

        sig = self.sig
        _check_static(sig, statics)
        if jax_platform(arrays)[0] == "cuda":
            raise TreadleError(f"{self.what}: jax_callable runs on the CPU only so far (JAX would run this call on a "
                               "CUDA device); jax_kernel supports CUDA devices")
        key = (tuple((tuple(a.shape), np.dtype(a.dtype).str) for a in arrays),
               tuple(static_key(statics[i]) for i in sig.static_inputs), dims_key(output_dims))
        c = self._calls.get(key)
        if c is not None:
            return c
        types = list(sig.types)
        for i, a in zip(sig.array_inputs, arrays):
            if contains_any(types[i].dtype):
                types[i] = ArrayT(dtype_from_jax(a.dtype), types[i].ndim)
        for i in sig.output_idx:
            if contains_any(types[i]):
                raise TreadleError(f"{self.what}: output '{sig.names[i]}' needs a concrete dtype annotation")
        shapes = {i: _jax_array_info(sig, i, types[i], a)[0] for i, a in zip(sig.array_inputs, arrays)}
        first = shapes[sig.array_inputs[0]] if sig.array_inputs else None
        for i in sig.output_idx:
            if first is None and not (isinstance(output_dims, dict) and sig.names[i] in output_dims) and \
                    (output_dims is None or isinstance(output_dims, dict)):
                raise TreadleError(f"{self.what}: no array inputs to take the output shape from; pass output_dims")
            shapes[i] = output_shape(sig, i, first or (), output_dims, ndim=types[i].ndim,
                                     inner=element_info(types[i])[1])
            if len(shapes[i]) != types[i].ndim:
                raise TreadleError(f"{self.what}: output '{sig.names[i]}' is a {types[i].ndim}-d array but its "
                                   f"dims are {shapes[i]}; pass output_dims={{'{sig.names[i]}': (...)}}")
        c = _CallableCall(self, types, shapes, statics)
        with _callables_lock:
            ctx = _next_ctx[0]
            _next_ctx[0] += 1
            _callables[ctx] = c
        from .jax_ffi import BufferSpec, Plan

        bufs = []
        for i in sig.array_inputs + sig.in_out_idx + sig.output_idx:
            _, inner, esize = element_info(types[i])
            bufs.append(BufferSpec(math.prod(shapes[i]) * esize, len(shapes[i]) + len(inner),
                                   zero=i in sig.output_idx))
        c.plan = Plan(1, bufs, len(sig.array_inputs), callback=_get_trampoline(), callback_ctx=ctx)
        self._calls[key] = c
        return c

    def __call__(self, *args: Any, output_dims: Any = None, vmap_method: Any = None) -> Any:
        import jax
        import jax.numpy as jnp

        from .jax import dtype_to_jax
        from .jax_ffi import ffi_call

        if self.graph_mode in (JaxCallableGraphMode.WARP, JaxCallableGraphMode.WARP_STAGED,
                               JaxCallableGraphMode.WARP_STAGED_EX):
            raise TreadleError(f"{self.what}: graph_mode={self.graph_mode.name} captures a CUDA graph and needs a "
                               "CUDA device; on the CPU use JaxCallableGraphMode.JAX or NONE")
        sig = self.sig
        arrays, statics = sig.bind(args)
        arrays = [a if hasattr(a, "shape") and hasattr(a, "dtype") else jnp.asarray(a) for a in arrays]
        output_dims = output_dims if output_dims is not None else self.output_dims
        self._preload()
        c = self._call_for(arrays, statics, output_dims)
        results = []
        for i in sig.in_out_idx + sig.output_idx:
            scalar, inner, _ = element_info(c.types[i])
            results.append(jax.ShapeDtypeStruct(c.shapes[i] + inner, dtype_to_jax(scalar)))
        aliases = {sig.array_inputs.index(i): k for k, i in enumerate(sig.in_out_idx)}
        vm = vmap_method if vmap_method is not None else self.vmap_method

        def call(*arrays: Any) -> Any:
            return ffi_call(c.plan, list(arrays), results, aliases=aliases, vmap_method=vm,
                            has_side_effect=self.has_side_effect)

        if any(isinstance(a, jax.core.Tracer) for a in arrays):
            return call(*arrays)
        eager = c.eager.get(vm)  # an eager call runs a cached jitted wrapper (no tracing per call)
        if eager is None:
            eager = c.eager[vm] = jax.jit(call)
        return list(eager(*arrays))


_all_callables: list[FfiCallable] = []


def jax_callable(func: Callable[..., Any], num_outputs: int = 1,
                 graph_mode: JaxCallableGraphMode = JaxCallableGraphMode.JAX, vmap_method: str | None = "broadcast_all",
                 output_dims: Any = None, in_out_argnames: Sequence[str] | None = None,
                 stage_in_argnames: Sequence[str] | None = None, stage_out_argnames: Sequence[str] | None = None,
                 graph_cache_max: int | None = 32,
                 module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
                 has_side_effect: bool = False) -> FfiCallable:
    """A JAX primitive (XLA FFI custom call) that runs a Python function launching Treadle kernels.

    ``func``'s parameters are annotated like kernel parameters (inputs, then outputs). On each execution the FFI
    dispatcher calls back into Python: the XLA buffers become Treadle arrays (no copy), outputs are zeroed, and
    ``func`` runs. Under ``jax.vmap`` (``broadcast_all`` / ``expand_dims``) it runs once per batch element.

    Args:
        func: the function; it may launch any number of kernels.
        num_outputs: number of output parameters, in-out arguments included.
        graph_mode: CUDA graph capture mode; on the CPU only ``JAX`` (default) and ``NONE``, which both run
            ``func`` on every call.
        vmap_method: batching under ``jax.vmap`` (per call too).
        output_dims: outer shape of outputs (one shape or ``{name: shape}``); default: the first array input's.
        in_out_argnames: array inputs updated in place.
        stage_in_argnames: inputs copied into staging buffers (CUDA ``WARP_STAGED`` modes; accepted).
        stage_out_argnames: outputs copied out of staging buffers (CUDA ``WARP_STAGED`` modes; accepted).
        graph_cache_max: most CUDA graphs kept in ``WARP`` mode (accepted).
        module_preload_mode: ``CURRENT_DEVICE`` / ``ALL_DEVICES`` compile the kernels of ``func``'s module when the
            call is traced, so no compilation happens inside an XLA execution.
        has_side_effect: keep the call even when its results are unused.
    """
    key = (id(func), int(num_outputs), int(graph_mode), vmap_method, dims_key(output_dims), _names_key(in_out_argnames),
           frozenset(_names_key(stage_in_argnames)), frozenset(_names_key(stage_out_argnames)), graph_cache_max,
           int(module_preload_mode), bool(has_side_effect))
    with _wrappers_lock:
        c = _callable_wrappers.get(key)
        if c is None:
            c = FfiCallable(func, num_outputs, graph_mode, vmap_method, output_dims, in_out_argnames,
                            stage_in_argnames, stage_out_argnames, graph_cache_max, module_preload_mode,
                            has_side_effect)
            _callable_wrappers[key] = c
        return c


def clear_jax_callable_graph_cache(callable: FfiCallable | None = None) -> None:
    """Forget the CUDA graphs captured by one :func:`jax_callable` (or by all of them when ``None``)."""
    targets = [callable] if callable is not None else list(_all_callables)
    for c in targets:
        with contextlib.suppress(AttributeError):
            c.graph_cache.clear()


__all__ = [
    "FfiCallable",
    "FfiKernel",
    "JaxCallableGraphMode",
    "JaxModulePreloadMode",
    "clear_jax_callable_graph_cache",
    "jax_callable",
    "jax_kernel",
]
