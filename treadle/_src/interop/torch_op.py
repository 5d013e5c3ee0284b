"""``torch_op``: a Treadle kernel (or a function launching kernels) as a PyTorch custom operator, in one call.

``op = wp.torch_op(kernel)`` registers, through ``torch.library``:

- ``treadle::<name>``: the forward operator (a ``torch.library.custom_op``) with a fake (meta) implementation, so
  it traces under ``torch.compile(fullgraph=True)`` and passes ``torch.library.opcheck``;
- ``treadle::<name>_backward``: the adjoint operator, also a custom op with a fake implementation, wired with
  ``torch.library.register_autograd``, so ``loss.backward()`` (eager or compiled) runs the kernel's compiled adjoint.

Argument conventions are those of :func:`~treadle.jax_kernel`: parameters are inputs followed by the last
``num_outputs`` parameters (outputs, allocated by the operator and zero-filled); ``in_out_argnames`` inputs are
copied and the updated copies returned first (custom ops must not mutate or alias their inputs); launch dims default
to the first array input's shape, output dims to the launch dims. Scalars (``float``, ``int``, ``bool``,
vectors/matrices as lists) are ordinary operator arguments. One output returns a tensor, several return a tuple.

For a Python function (parameters annotated like a kernel's), the forward runs the function on zero-copy views of
the tensors; the backward runs it again under a :class:`~treadle.Tape` and replays the adjoints (a forward
recomputation: nothing is stored between the two operators, which keeps them functional for ``torch.compile``).
"""

from __future__ import annotations

import ctypes
import inspect
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..backends.args import launch_bounds, pack_arg
from ..core.abi import ARRAY_KEEP_GRAD
from ..core.errors import TreadleError
from ..types import scalars
from ..types.typesys import ArrayT, contains_any, is_composite, is_struct, normalize_annotation, type_str
from .foreign import torch_descriptor
from .jax_kernel import Signature, as_dims, element_info, output_shape, resolve_types, thread_count

_counter = itertools.count()


def _torch() -> Any:
    import torch

    return torch


def _schema_type(t: Any, what: str, name: str) -> str:
    if isinstance(t, ArrayT):
        return "Tensor"
    if t is scalars.bool:
        return "bool"
    if scalars.is_scalar_type(t):
        return "int" if scalars.is_int_type(t) else "float"
    if is_composite(t):
        return "int[]" if scalars.is_int_type(t._wp_scalar_type_) else "float[]"
    kind = "struct" if is_struct(t) else type_str(t)
    raise TreadleError(f"{what}: parameter '{name}' of type {kind} cannot be a PyTorch operator argument; pass "
                       "arrays, scalars, vectors or matrices")


class TorchOp:
    """The result of :func:`torch_op`: call it like the operator; ``.op`` is the ``torch.ops`` overload packet."""

    def __init__(self, fn: Any, num_outputs: int, in_out_argnames: Sequence[str] | None, launch_dims: Any,
                 output_dims: Any, name: str | None, enable_backward: bool | None) -> None:
        torch = _torch()
        self.is_kernel = bool(getattr(fn, "_treadle_kernel_", False))
        self.fn = fn
        label = getattr(fn, "key", None) or getattr(fn, "__qualname__", getattr(fn, "__name__", "fn"))
        self.what = f"torch_op('{label}')"
        if self.is_kernel:
            names, types = list(fn.param_names), list(fn.param_types)
        else:
            if not callable(fn):
                raise TypeError(f"torch_op() expects a @wp.kernel or a function, got {type(fn).__name__}")
            hints = inspect.get_annotations(fn, eval_str=True)
            names = list(inspect.signature(fn).parameters)
            missing = [n for n in names if n not in hints]
            if missing:
                raise TreadleError(f"{self.what}: parameter '{missing[0]}' has no type annotation; annotate it like "
                                   "a kernel parameter (e.g. 'x: wp.array(dtype=float)')")
            types = [normalize_annotation(hints[n]) for n in names]
        self.sig = Signature(names, types, num_outputs, in_out_argnames, self.what)
        sig = self.sig
        self.launch_dims = launch_dims
        self.output_dims = output_dims
        self._fixed_launch = as_dims(launch_dims, "launch_dims") if launch_dims is not None else None
        self._generic = any(contains_any(t) for t in sig.types)
        self._prepared: dict[Any, Any] = {}  # types -> (instance or None, {param: (torch dtype, inner shape)})
        self._static_prep: Any = None  # the one entry of a non-generic kernel, once its instance is loaded
        self._bounds: dict[Any, Any] = {}  # launch dims -> LaunchBounds
        if enable_backward is None:
            enable_backward = fn.enable_backward if self.is_kernel else True
        self.enable_backward = bool(enable_backward)
        if self.enable_backward and sig.in_out_idx:
            self.enable_backward = False  # in-out arrays lose their input values: no adjoint (as in jax_kernel)
        for i in sig.output_idx:
            if contains_any(sig.types[i]):
                raise TreadleError(f"{self.what}: output '{sig.names[i]}' needs a concrete dtype")
        base = name or re.sub(r"\W", "_", str(label).split(".")[-1])
        self.name = f"{base}_{next(_counter)}" if name is None else base
        qual = self.name if "::" in self.name else f"treadle::{self.name}"
        self.qualname = qual
        in_names = [sig.names[i] for i in sig.input_idx]
        params = ", ".join(f"{_schema_type(sig.types[i], self.what, sig.names[i])} {sig.names[i]}"
                           for i in sig.input_idx)
        n_ret = len(sig.in_out_idx) + len(sig.output_idx)
        rets = "Tensor" if n_ret == 1 else "(" + ", ".join(["Tensor"] * n_ret) + ")"
        self._single = n_ret == 1
        self._in_names = in_names
        self.op = torch.library.custom_op(qual, self._forward_impl, mutates_args=(), schema=f"({params}) -> {rets}")
        self.op.register_fake(self._forward_fake)
        self._grad_inputs = [i for i in sig.array_inputs if i not in sig.in_out_idx and
                             (contains_any(sig.types[i].dtype) or
                              scalars.is_float_type(sig.types[i].dtype._wp_scalar_type_))]
        self.backward_op: Any = None
        if self.enable_backward and self._grad_inputs:
            outs = ", ".join(f"Tensor {sig.names[i]}" for i in sig.output_idx)
            gouts = ", ".join(f"Tensor grad_{sig.names[i]}" for i in sig.output_idx)
            n_g = len(self._grad_inputs)
            brets = "Tensor" if n_g == 1 else "(" + ", ".join(["Tensor"] * n_g) + ")"
            self.backward_op = torch.library.custom_op(f"{qual}_backward", self._backward_impl, mutates_args=(),
                                                       schema=f"({params}, {outs}, {gouts}) -> {brets}")
            self.backward_op.register_fake(self._backward_fake)
            self.op.register_autograd(self._autograd_backward, setup_context=self._setup_context)

    def __repr__(self) -> str:
        return f"<treadle {self.what} as torch.ops.{self.qualname.replace('::', '.')}>"

    def __call__(self, *args: Any) -> Any:
        return self.op(*args)

    # -- shapes
    def _launch_and_outputs(self, tensors: dict[int, Any], types: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Any]]:
        sig = self.sig
        if self._fixed_launch is not None:
            launch = self._fixed_launch
        elif sig.array_inputs:
            i0 = sig.array_inputs[0]
            launch = tuple(tensors[i0].shape[: types[i0].ndim])
        else:
            raise TreadleError(f"{self.what}: no array inputs to take the launch dims from; pass launch_dims")
        shapes = []
        for i in sig.output_idx:
            shape = output_shape(sig, i, launch, self.output_dims)
            if len(shape) != types[i].ndim:
                raise TreadleError(f"{self.what}: output '{sig.names[i]}' is a {types[i].ndim}-d array but its "
                                   f"dims are {tuple(shape)}; pass output_dims={{'{sig.names[i]}': (...)}}")
            shapes.append(tuple(shape) + self._prepare(types)[1][i][1])
        return launch, shapes

    def _types(self, args: Sequence[Any]) -> tuple[Any, ...]:
        sig = self.sig
        if not self._generic:
            return tuple(sig.types)
        from .torch import dtype_from_torch

        arrays, statics = sig.bind(args)
        return tuple(resolve_types(sig, arrays, statics, lambda t: dtype_from_torch(t.dtype)))

    def _prepare(self, types: tuple[Any, ...]) -> Any:
        """``(kernel instance or None, {array param: (torch dtype, element dims)})`` for concrete types (cached)."""
        if self._static_prep is not None:
            return self._static_prep
        p = self._prepared.get(types)
        if p is None:
            from .torch import dtype_to_torch

            info = {}
            for i, t in enumerate(types):
                if isinstance(t, ArrayT):
                    scalar, inner, _ = element_info(t)
                    info[i] = (dtype_to_torch(scalar), inner)
            p = (None, info)
            self._prepared[types] = p
        return p

    def _instance(self, types: tuple[Any, ...]) -> Any:
        p = self._prepare(types)
        if p[0] is None:
            k = self.fn
            inst = k.get_instance(tuple(types)) if k.is_generic else k.get_instance(None)
            inst.ensure_loaded()
            p = self._prepared[types] = (inst, p[1])
            if not self._generic:
                self._static_prep = p
        return p[0]

    def _device(self, args: Sequence[Any]) -> Any:
        for i in self.sig.array_inputs:
            return args[i].device
        return "cpu"

    def _forward_fake(self, *args: Any) -> Any:
        torch = _torch()
        sig = self.sig
        types = self._types(args)
        tensors = {i: args[i] for i in sig.array_inputs}
        _, shapes = self._launch_and_outputs(tensors, types)
        dev = self._device(args)
        outs = [torch.empty_like(args[i], memory_format=torch.contiguous_format) for i in sig.in_out_idx]
        info = self._prepare(types)[1]
        outs += [torch.empty(s, dtype=info[i][0], device=dev) for i, s in zip(sig.output_idx, shapes)]
        return outs[0] if self._single else tuple(outs)

    def _backward_fake(self, *args: Any) -> Any:
        torch = _torch()
        grads = [torch.empty_like(args[i], memory_format=torch.contiguous_format) for i in self._grad_inputs]
        return grads[0] if len(grads) == 1 else tuple(grads)

    # -- real implementations
    def _pack(self, inst: Any, values: dict[int, Any], grads: dict[int, Any], types: Sequence[Any]) -> Any:
        sig = self.sig
        packed = inst.args_type()
        for i, (name, t) in enumerate(zip(sig.names, types)):
            v = values[i]
            if isinstance(t, ArrayT):
                if not v.is_cpu:
                    raise TreadleError(f"{self.what}: argument '{name}' is on {v.device}; this build of Treadle "
                                       "runs kernels on the CPU only")
                desc = torch_descriptor(v, t, f"{self.what} argument '{name}'")
                g = grads.get(i)
                if g is not None:  # torch's gradient buffers: stores pass their values on but keep them
                    desc.grad = g.data_ptr()
                    desc.flags |= ARRAY_KEEP_GRAD
                setattr(packed, name, desc)
            else:
                setattr(packed, name, pack_arg(name, t, v, None, inst.kernel))
        return packed

    def _forward_impl(self, *args: Any) -> Any:
        torch = _torch()
        sig = self.sig
        types = self._types(args)
        values = dict(enumerate(args))
        tensors = {i: args[i] for i in sig.array_inputs}
        launch, shapes = self._launch_and_outputs(tensors, types)
        dev = self._device(args)
        for i in sig.in_out_idx:
            values[i] = args[i].clone(memory_format=torch.contiguous_format)
        info = self._prepare(types)[1]
        for i, s in zip(sig.output_idx, shapes):
            values[i] = torch.zeros(s, dtype=info[i][0], device=dev)
        self._run(values, {}, types, launch, adjoint=False)
        outs = [values[i] for i in sig.in_out_idx + sig.output_idx]
        return outs[0] if self._single else tuple(outs)

    def _run(self, values: dict[int, Any], grads: dict[int, Any], types: tuple[Any, ...], launch: tuple[int, ...],
             adjoint: bool) -> None:
        if self.is_kernel:
            inst = self._instance(types)
            packed = self._pack(inst, values, grads, types)
            bounds = self._bounds.get(launch)
            if bounds is None:
                bounds = launch_bounds(launch)
                if len(self._bounds) < 256:
                    self._bounds[launch] = bounds
            if bounds.size > 0:
                entry = inst.ensure_backward() if adjoint else inst.entry
                entry(ctypes.addressof(bounds), ctypes.addressof(packed), thread_count(int(bounds.size)))
            return
        from ..autodiff.tape import Tape
        from .torch import from_torch

        arrays: list[Any] = []
        for i, t in enumerate(types):
            v = values[i]
            if isinstance(t, ArrayT):
                arrays.append(from_torch(v, dtype=t.dtype, requires_grad=False, grad=grads.get(i)))
            elif is_composite(t):
                arrays.append(t(*v))
            else:
                arrays.append(v)
        if not adjoint:
            self.fn(*arrays)
            return
        tape = Tape()
        with tape:
            self.fn(*arrays)
        tape.backward()

    def _setup_context(self, ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        outs = (output,) if self._single else tuple(output)
        sig = self.sig
        ctx.statics = {i: inputs[i] for i in sig.static_inputs}
        ctx.save_for_backward(*[inputs[i] for i in sig.array_inputs], *outs[len(sig.in_out_idx):])

    def _autograd_backward(self, ctx: Any, *grad_outputs: Any) -> Any:
        torch = _torch()
        sig = self.sig
        saved = ctx.saved_tensors
        n_in = len(sig.array_inputs)
        ins = dict(zip(sig.array_inputs, saved[:n_in]))
        outs = list(saved[n_in:])
        gouts = list(grad_outputs[len(sig.in_out_idx):])
        gouts = [torch.zeros_like(o) if g is None else g for o, g in zip(outs, gouts)]
        args = [ins[i] if i in ins else ctx.statics[i] for i in sig.input_idx]
        res = self.backward_op(*args, *outs, *gouts)
        res = (res,) if len(self._grad_inputs) == 1 else tuple(res)
        by_index = dict(zip(self._grad_inputs, res))
        return tuple(by_index.get(i) for i in sig.input_idx)

    def _backward_impl(self, *args: Any) -> Any:
        torch = _torch()
        sig = self.sig
        n_in = len(sig.input_idx)
        n_out = len(sig.output_idx)
        inputs = list(args[:n_in])
        outs = list(args[n_in: n_in + n_out])
        gouts = list(args[n_in + n_out:])
        types = self._types(inputs)
        values: dict[int, Any] = {}
        grads: dict[int, Any] = {}
        for i in sig.input_idx:
            v = inputs[i]
            if i in sig.array_inputs:
                v = v.contiguous()  # gradients share the data's strides: give both a dense layout
                if i in self._grad_inputs:
                    grads[i] = torch.zeros_like(v)
            values[i] = v
        for q, i in enumerate(sig.output_idx):
            o = outs[q].contiguous()
            if not self.is_kernel:
                o = torch.zeros_like(o)  # the function recomputes its outputs
            values[i] = o
            g = torch.empty_like(o)
            g.copy_(gouts[q])  # a private copy: the adjoint may write into output gradients
            grads[i] = g
        tensors = {i: values[i] for i in sig.array_inputs}
        launch, _ = self._launch_and_outputs(tensors, types)
        self._run(values, grads, types, launch, adjoint=True)
        res = [grads[i] for i in self._grad_inputs]
        return res[0] if len(res) == 1 else tuple(res)


def torch_op(fn: Callable[..., Any], *, num_outputs: int = 1, in_out_argnames: Sequence[str] | None = None,
             launch_dims: Any = None, output_dims: Any = None, name: str | None = None,
             enable_backward: bool | None = None) -> TorchOp:
    """Register a Treadle kernel (or a Python function launching kernels) as a PyTorch custom operator.

    The operator works eagerly, under ``torch.compile(fullgraph=True)`` (fake implementations give output shapes),
    passes ``torch.library.opcheck``, and is differentiable: gradients come from the kernel's compiled adjoint.

    Args:
        fn: a ``@wp.kernel``, or a function whose parameters are annotated like a kernel's.
        num_outputs: the last ``num_outputs`` parameters (minus in-out ones) are outputs, allocated zero-filled.
        in_out_argnames: array inputs the kernel updates; the operator works on copies and returns them first.
            Such operators are not differentiable.
        launch_dims: the launch grid (default: the shape of the first array input).
        output_dims: outer shape of outputs, one shape or ``{name: shape}`` (default: the launch dims).
        name: operator name (``"ns::name"`` or ``"name"`` in the ``treadle`` namespace); default: the kernel's name
            plus a counter. Each name can be registered once per process.
        enable_backward: register the autograd formula (default: the kernel's ``enable_backward``).

    Returns:
        A :class:`TorchOp`; call it with tensors and scalars (inputs in parameter order). It returns one tensor, or
        a tuple (in-out results first, then outputs). ``.op`` is the registered ``torch.library`` operator.

    Example::

        op = wp.torch_op(scale_kernel)          # scale_kernel(x: array(float), s: float, y: array(float))
        y = op(x, 2.0)                          # y = 2 x, differentiable w.r.t. x
        y = torch.compile(op, fullgraph=True)(x, 2.0)
    """
    return TorchOp(fn, num_outputs, in_out_argnames, launch_dims, output_dims, name, enable_backward)


__all__ = ["TorchOp", "torch_op"]
