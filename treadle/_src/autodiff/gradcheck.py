"""Finite-difference gradient checks and Jacobians (the ``treadle.autograd`` module).

``jacobian`` builds the autodiff Jacobian one output component (row) at a time: it seeds that component's gradient
with 1, runs the adjoint and reads the input gradients. ``jacobian_fd`` builds the finite-difference Jacobian one
input component (column) at a time with central differences. ``gradcheck`` compares the two, ``gradcheck_tape`` does
so for every kernel launch recorded on a :class:`Tape`.

A Jacobian is a 2-D array of shape ``(output components, input elements)`` whose dtype is the input's dtype, so its
NumPy view has shape ``(output components, input elements, *input element shape)``; ``.numpy().reshape(rows, -1)``
gives the plain ``(output components, input components)`` matrix. Components are counted in C order (element index
times components per element plus component index). Entries that were not evaluated (``max_inputs_per_var`` /
``max_outputs_per_var``) are NaN.

All arrays the functions touch (values and gradients) are restored before they return; for Python functions only
the top-level array inputs can be restored (``restore_inputs``).
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..lang.array import array, inner_shape, is_struct_type, numpy_scalar_dtype

__all__ = ["FunctionMetadata", "gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd"]

Mask = list[tuple[Any, Any]]


# Array helpers ------------------------------------------------------------------------------------------------------


def _is_float_array(a: Any) -> bool:
    if not isinstance(a, array) or is_struct_type(a.dtype):
        return False
    try:
        return numpy_scalar_dtype(a.dtype).kind == "f"
    except Exception:
        return False


def _differentiable(a: Any) -> bool:
    """Only float arrays with ``requires_grad=True`` take part in Jacobians."""
    return _is_float_array(a) and a.requires_grad and a.grad is not None


def _ncomp(a: array) -> int:
    return int(a.size) * math.prod(inner_shape(a.dtype))


def _read(a: array) -> np.ndarray:
    """A float64 copy of ``a``'s values, flattened over elements and components."""
    return np.array(a.numpy(), dtype=np.float64).reshape(-1)


def _write(a: array, flat: np.ndarray) -> None:
    """Set ``a``'s values from a flat vector (rounded to the array's precision)."""
    values = np.asarray(flat).reshape(tuple(a.shape) + inner_shape(a.dtype)).astype(numpy_scalar_dtype(a.dtype))
    if a.device.is_cpu:
        a.numpy()[...] = values
    else:
        a.assign(values)


def _write_one(a: array, index: int, value: float) -> float:
    """Set flat component ``index`` of ``a`` to ``value``; returns the value actually stored (after rounding)."""
    npdt = numpy_scalar_dtype(a.dtype)
    if a.device.is_cpu:
        view = a.numpy()
        pos = np.unravel_index(index, view.shape)
        view[pos] = npdt.type(value)
        return float(view[pos])
    flat = _read(a)
    flat[index] = value
    _write(a, flat)
    return float(npdt.type(value))


class _Snapshot:
    """Saved values (and optionally gradients) of a set of arrays, restorable at any time."""

    def __init__(self, arrays: Sequence[Any], grads: bool = False) -> None:
        seen: dict[int, array] = {}
        for a in arrays:
            if isinstance(a, array) and id(a) not in seen and not is_struct_type(a.dtype):
                seen[id(a)] = a
        self.arrays = list(seen.values())
        self.values = [np.array(a.numpy(), copy=True) for a in self.arrays]
        self.grads = [np.array(a.grad.numpy(), copy=True) if grads and a.grad is not None else None
                      for a in self.arrays]

    def restore(self, grads: bool = False) -> None:
        for a, v, g in zip(self.arrays, self.values, self.grads):
            _assign(a, v)
            if grads and g is not None and a.grad is not None:
                _assign(a.grad, g)

    def zero_grads(self) -> None:
        for a in self.arrays:
            if a.grad is not None:
                a.grad.zero_()


def _assign(a: array, values: np.ndarray) -> None:
    if a.device.is_cpu:
        a.numpy()[...] = values
    else:
        a.assign(values)


# Metadata -----------------------------------------------------------------------------------------------------------


def _is_kernel(function: Any) -> bool:
    return bool(getattr(function, "_treadle_kernel_", False))


class FunctionMetadata:
    """Labels, strides and dtypes of a kernel's or Python function's inputs and outputs."""

    def __init__(self, key: str | None = None, input_labels: list[str] | None = None,
                 output_labels: list[str] | None = None, input_strides: list[tuple] | None = None,
                 output_strides: list[tuple] | None = None, input_dtypes: list | None = None,
                 output_dtypes: list | None = None) -> None:
        self.key = key
        self.input_labels = input_labels or []
        self.output_labels = output_labels or []
        self.input_strides = input_strides or []
        self.output_strides = output_strides or []
        self.input_dtypes = input_dtypes or []
        self.output_dtypes = output_dtypes or []

    @property
    def is_empty(self) -> bool:
        return self.key is None

    def input_is_array(self, i: int) -> bool:
        return self.input_strides[i] is not None

    def output_is_array(self, i: int) -> bool:
        return self.output_strides[i] is not None

    @staticmethod
    def _describe(values: Sequence[Any]) -> tuple[list, list]:
        strides = [tuple(v.strides) if isinstance(v, array) else None for v in values]
        dtypes = [v.dtype if isinstance(v, array) else type(v) for v in values]
        return strides, dtypes

    def update_from_kernel(self, kernel: Any, inputs: Sequence[Any]) -> None:
        """Fill in the fields from a kernel's parameter names (inputs first, then outputs)."""
        n = len(inputs)
        self.key = kernel.key
        self.input_labels = list(kernel.param_names[:n])
        self.output_labels = list(kernel.param_names[n:])
        self.input_strides, self.input_dtypes = self._describe(inputs)
        self.output_strides = [None] * len(self.output_labels)
        self.output_dtypes = list(kernel.param_types[n:])

    def update_from_function(self, function: Callable, inputs: Sequence[Any],
                             outputs: Sequence[Any] | None = None) -> None:
        """Fill in the fields from a Python function's signature and (if given) its outputs."""
        self.key = getattr(function, "__name__", repr(function))
        labels: list[str] = []
        try:
            params = [p for p in inspect.signature(function).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            labels = [p.name for p in params]
        except (TypeError, ValueError):
            pass
        self.input_labels = [labels[i] if i < len(labels) else f"input_{i}" for i in range(len(inputs))]
        self.input_strides, self.input_dtypes = self._describe(inputs)
        if outputs is not None:
            self.output_labels = [f"output_{i}" for i in range(len(outputs))]
            self.output_strides, self.output_dtypes = self._describe(outputs)


# Problem setup ------------------------------------------------------------------------------------------------------


class _Problem:
    """One Jacobian computation: the function, its arguments, and the (input, output) pairs to evaluate."""

    def __init__(self, function: Any, dim: Any, inputs: Sequence[Any] | None, outputs: Sequence[Any] | None,
                 input_output_mask: Mask | None, device: Any, max_blocks: int, block_dim: int | None,
                 metadata: FunctionMetadata | None, restore_inputs: bool) -> None:
        if inputs is None:
            raise ValueError("inputs must be given (a list of the function's arguments)")
        self.function = function
        self.is_kernel = _is_kernel(function)
        self.dim = dim
        self.inputs = list(inputs)
        self.device = device
        self.max_blocks = max_blocks
        self.block_dim = block_dim
        self.restore_inputs = restore_inputs
        self.meta = metadata if metadata is not None else FunctionMetadata()
        if self.is_kernel:
            if dim is None:
                raise ValueError(f"dim must be given to compute Jacobians of kernel '{function.key}'")
            self.outputs = list(outputs or [])
            if self.meta.is_empty:
                self.meta.update_from_kernel(function, self.inputs)
            self.pairs = self._resolve_mask(input_output_mask)
            return
        if not callable(function):
            raise TypeError(f"function must be a kernel or a callable, got {type(function).__name__}")
        snap = _Snapshot(self.inputs)
        try:
            # The outputs of a Python function are what it returns: evaluate once to find them.
            self.outputs = self.call_function()
            if self.meta.is_empty or not self.meta.output_labels:
                self.meta.update_from_function(function, self.inputs, self.outputs)
            self.pairs = self._resolve_mask(input_output_mask)
        finally:
            if restore_inputs:
                snap.restore()

    @property
    def key(self) -> str:
        return str(self.meta.key)

    def _index(self, which: Any, labels: list[str], kind: str) -> int:
        if isinstance(which, str):
            if which not in labels:
                raise ValueError(f"'{which}' is not an {kind} of '{self.key}' (its {kind}s: {', '.join(labels)})")
            return labels.index(which)
        return int(which)

    def _resolve_mask(self, mask: Mask | None) -> list[tuple[int, int]]:
        diff_in = [i for i, a in enumerate(self.inputs) if _differentiable(a)]
        diff_out = [j for j, a in enumerate(self.outputs) if _differentiable(a)]
        if mask is None:
            return [(i, j) for i in diff_in for j in diff_out]
        pairs: list[tuple[int, int]] = []
        for entry in mask:
            try:
                a, b = entry
            except (TypeError, ValueError):
                raise ValueError(f"input_output_mask entries must be (input, output) pairs, got {entry!r}") from None
            i = self._index(a, self.meta.input_labels, "input")
            j = self._index(b, self.meta.output_labels, "output")
            if i in diff_in and j in diff_out and (i, j) not in pairs:
                pairs.append((i, j))
        return pairs

    def call_function(self) -> list[Any]:
        """Run the Python function (without recording onto any active tape); returns its outputs as a list."""
        from ..runtime.recording import suspend_tapes
        from .tape import Tape

        with suspend_tapes(), Tape(check_overwrites=False):  # a throwaway tape: keeps these launches off a user's
            result = self.function(*self.inputs)
        return _as_outputs(result, self.key)

    def launch(self, adjoint: bool = False) -> None:
        from ..lang.launch import launch

        kw: dict[str, Any] = {"device": self.device, "max_blocks": self.max_blocks, "record_tape": False}
        if self.block_dim is not None:
            kw["block_dim"] = self.block_dim
        launch(self.function, self.dim, self.inputs, self.outputs, adjoint=adjoint, **kw)

    def label(self, i: int, j: int) -> tuple[str, str]:
        il = self.meta.input_labels[i] if i < len(self.meta.input_labels) else f"input_{i}"
        ol = self.meta.output_labels[j] if j < len(self.meta.output_labels) else f"output_{j}"
        return il, ol


def _as_outputs(result: Any, key: str) -> list[Any]:
    if isinstance(result, array):
        return [result]
    if isinstance(result, (list, tuple)) and all(isinstance(r, array) for r in result):
        return list(result)
    raise ValueError(f"function '{key}' must return a Warp array or a list/tuple of arrays to compute Jacobians, "
                     f"got {type(result).__name__}")


def _require_backward(kernel: Any) -> None:
    if not kernel.enable_backward:
        raise ValueError(f"Kernel must have backward pass enabled to compute Jacobians (kernel '{kernel.key}' has "
                         "enable_backward=False at kernel, module or config level)")


def _limit(n: int, max_per_var: int) -> int:
    return n if max_per_var is None or max_per_var <= 0 else min(n, int(max_per_var))


def _to_array(jac: np.ndarray, like: array) -> array:
    """Wrap a flat ``(rows, input components)`` float64 matrix as a 2-D array with the input's dtype."""
    from ..lang.creation import empty

    rows = jac.shape[0]
    out = empty((rows, int(like.size)), dtype=like.dtype, device=like.device)
    values = jac.reshape((rows, int(like.size)) + inner_shape(like.dtype)).astype(numpy_scalar_dtype(like.dtype))
    _assign(out, values)
    return out


# Jacobians ----------------------------------------------------------------------------------------------------------


def _jacobian_ad(p: _Problem, max_outputs_per_var: int) -> dict[tuple[int, int], np.ndarray]:
    """Autodiff Jacobians as flat float64 matrices (one adjoint pass per output component)."""
    result: dict[tuple[int, int], np.ndarray] = {}
    if not p.pairs:
        return result
    by_output: dict[int, list[int]] = {}
    for i, j in p.pairs:
        by_output.setdefault(j, []).append(i)
    if p.is_kernel:
        _require_backward(p.function)
        snap = _Snapshot(p.inputs + p.outputs, grads=True)
        try:
            for j, ins in by_output.items():
                out = p.outputs[j]
                n = _ncomp(out)
                mats = {i: np.full((n, _ncomp(p.inputs[i])), np.nan) for i in ins}
                for r in range(_limit(n, max_outputs_per_var)):
                    snap.restore()  # the adjoint replays the forward pass from the original values
                    snap.zero_grads()
                    _write_one(out.grad, r, 1.0)
                    p.launch(adjoint=True)
                    for i in ins:
                        mats[i][r] = _read(p.inputs[i].grad)
                result.update({(i, j): m for i, m in mats.items()})
        finally:
            snap.restore(grads=True)
        return result
    return _jacobian_ad_function(p, by_output, max_outputs_per_var)


def _jacobian_ad_function(p: _Problem, by_output: dict[int, list[int]],
                          max_outputs_per_var: int) -> dict[tuple[int, int], np.ndarray]:
    from ..runtime.recording import suspend_tapes
    from .tape import Tape, _Recorded

    result: dict[tuple[int, int], np.ndarray] = {}
    snap = _Snapshot(p.inputs, grads=True)
    try:
        tape = Tape()
        with suspend_tapes(), tape:  # a caller's tape must neither nest with ours nor record our launches
            outputs = _as_outputs(p.function(*p.inputs), p.key)
        for rec in tape.launches:
            if isinstance(rec, _Recorded):
                _require_backward(rec.kernel)
        for j, ins in by_output.items():
            if j >= len(outputs) or not _differentiable(outputs[j]):
                continue
            out = outputs[j]
            n = _ncomp(out)
            mats = {i: np.full((n, _ncomp(p.inputs[i])), np.nan) for i in ins}
            for r in range(_limit(n, max_outputs_per_var)):
                tape.zero()
                snap.zero_grads()
                for o in outputs:
                    if o.grad is not None:
                        o.grad.zero_()
                _write_one(out.grad, r, 1.0)
                tape.backward()
                for i in ins:
                    mats[i][r] = _read(p.inputs[i].grad)
            result.update({(i, j): m for i, m in mats.items()})
    finally:
        if p.restore_inputs:
            snap.restore(grads=True)
        else:
            for a, g in zip(snap.arrays, snap.grads):
                if g is not None and a.grad is not None:
                    _assign(a.grad, g)
    return result


def _jacobian_fd(p: _Problem, max_inputs_per_var: int, eps: float) -> dict[tuple[int, int], np.ndarray]:
    """Central-difference Jacobians as flat float64 matrices (two forward passes per input component)."""
    result: dict[tuple[int, int], np.ndarray] = {}
    if not p.pairs:
        return result
    by_input: dict[int, list[int]] = {}
    for i, j in p.pairs:
        by_input.setdefault(i, []).append(j)
    snap = _Snapshot(p.inputs + (p.outputs if p.is_kernel else []))

    def evaluate(outs: list[int]) -> list[np.ndarray]:
        if p.is_kernel:
            p.launch()
            return [_read(p.outputs[j]) for j in outs]
        results = p.call_function()
        return [_read(results[j]) if j < len(results) else np.full(_ncomp(p.outputs[j]), np.nan) for j in outs]

    try:
        for i, outs in by_input.items():
            x = p.inputs[i]
            n = _ncomp(x)
            mats = {j: np.full((_ncomp(p.outputs[j]), n), np.nan) for j in outs}
            for c in range(_limit(n, max_inputs_per_var)):
                if p.is_kernel or p.restore_inputs:
                    snap.restore()
                x0 = float(x.numpy().reshape(-1)[c]) if x.device.is_cpu else float(_read(x)[c])
                hi = _write_one(x, c, x0 + eps)
                f_hi = evaluate(outs)
                if p.is_kernel or p.restore_inputs:
                    snap.restore()
                lo = _write_one(x, c, x0 - eps)
                f_lo = evaluate(outs)
                _write_one(x, c, x0)
                step = hi - lo if hi != lo else 2.0 * eps  # the step actually taken in the input's precision
                for j, a, b in zip(outs, f_hi, f_lo):
                    mats[j][:, c] = (a - b) / step
            result.update({(i, j): m for j, m in mats.items()})
    finally:
        if p.is_kernel or p.restore_inputs:
            snap.restore()
    return result


def _wrap(p: _Problem, flat: dict[tuple[int, int], np.ndarray]) -> dict[tuple[int, int], array]:
    return {k: _to_array(m, p.inputs[k[0]]) for k, m in sorted(flat.items())}


def jacobian(function: Any, dim: Any = None, inputs: Sequence[Any] | None = None,
             outputs: Sequence[Any] | None = None, input_output_mask: Mask | None = None, device: Any = None,
             max_blocks: int = 0, block_dim: int | None = None, max_outputs_per_var: int = -1,
             plot_jacobians: bool = False, metadata: FunctionMetadata | None = None,
             restore_inputs: bool = True) -> dict[tuple[int, int], array]:
    """Autodiff Jacobians of a kernel or Python function for the selected (input, output) pairs.

    Args:
        function: a ``@wp.kernel`` (inputs precede outputs in its parameters) or a Python function that launches
            kernels and returns an array or a list of arrays.
        dim: launch dimensions (kernels only).
        inputs: the arguments; only float arrays with ``requires_grad=True`` are differentiated.
        outputs: the output arguments of a kernel (a Python function's outputs are what it returns).
        input_output_mask: ``(input, output)`` pairs by index (position in ``inputs`` / ``outputs``) or by name
            (parameter names of a kernel or function; ``output_<j>`` for a function's return values). Default: all.
        device: the launch device (kernels only).
        max_blocks: passed to ``wp.launch`` (kernels only).
        block_dim: passed to ``wp.launch`` (kernels only).
        max_outputs_per_var: evaluate only the first this many output components (rows) of each output (<= 0: all);
            the other rows are NaN.
        plot_jacobians: show the Jacobians with :func:`jacobian_plot` (needs matplotlib).
        metadata: labels/strides/dtypes (:class:`FunctionMetadata`); inferred when ``None``.
        restore_inputs: for Python functions, restore the top-level array inputs before returning.

    Returns:
        ``{(input index, output index): jacobian}``, each of shape ``(output components, input elements)`` with
        the input's dtype.

    Raises:
        ValueError: the kernel (or a kernel the function launches) has its backward pass disabled, or a mask name
            is unknown.
    """
    p = _Problem(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim, metadata,
                 restore_inputs)
    jacs = _wrap(p, _jacobian_ad(p, max_outputs_per_var))
    if plot_jacobians:
        from .jacobian_plot import jacobian_plot

        jacobian_plot(jacs, p.meta, p.inputs, title=f"{p.key} autodiff Jacobian")
    return jacs


def jacobian_fd(function: Any, dim: Any = None, inputs: Sequence[Any] | None = None,
                outputs: Sequence[Any] | None = None, input_output_mask: Mask | None = None, device: Any = None,
                max_blocks: int = 0, block_dim: int | None = None, max_inputs_per_var: int = -1,
                eps: float = 1e-4, plot_jacobians: bool = False, metadata: FunctionMetadata | None = None,
                restore_inputs: bool = True) -> dict[tuple[int, int], array]:
    """Finite-difference Jacobians (central differences) of a kernel or Python function.

    Each input component is perturbed by ``+eps`` and ``-eps`` in turn and the function is run forward; the column
    is ``(f(x + eps) - f(x - eps)) / (2 eps)`` (with the step actually representable in the input's precision).
    Arguments and result are as in :func:`jacobian`, except ``max_inputs_per_var``: evaluate only the first this
    many input components (columns) of each input (<= 0: all); the other columns are NaN. Kernel arguments are
    restored before every evaluation and at the end (so kernels that accumulate into outputs work); for Python
    functions ``restore_inputs`` restores the top-level array inputs before every evaluation and at the end.
    Only forward passes run, so kernels with ``enable_backward=False`` are fine.
    """
    p = _Problem(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim, metadata,
                 restore_inputs)
    jacs = _wrap(p, _jacobian_fd(p, max_inputs_per_var, eps))
    if plot_jacobians:
        from .jacobian_plot import jacobian_plot

        jacobian_plot(jacs, p.meta, p.inputs, title=f"{p.key} finite-difference Jacobian")
    return jacs


# Gradient checks ----------------------------------------------------------------------------------------------------


def _compare(ad: np.ndarray, fd: np.ndarray, rows: int, cols: int, shape: tuple[int, ...], atol: float,
             rtol: float) -> dict[str, Any]:
    """Compare the evaluated block (first ``rows`` x ``cols``) of two flat Jacobians."""
    a, f = ad[:rows, :cols], fd[:rows, :cols]
    err = np.abs(a - f)
    ok = bool(np.all(np.isfinite(a)) and np.all(err <= atol + rtol * np.abs(f)))
    stats: dict[str, Any] = {"pass": ok, "max_abs": 0.0, "index": (0,) * len(shape), "ad": 0.0, "fd": 0.0,
                             "max_rel": 0.0}
    if err.size == 0:
        return stats
    bad = ~np.isfinite(err)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        stats["max_abs"] = math.nan
    else:
        r, c = np.unravel_index(int(np.argmax(err)), err.shape)
        stats["max_abs"] = float(err[r, c])
    stats["index"] = (int(r), *(int(k) for k in np.unravel_index(int(c), shape[1:])))
    stats["ad"], stats["fd"] = float(a[r, c]), float(f[r, c])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(f) > 0, err / np.abs(f), np.where(err == 0, 0.0, np.nan))
    stats["max_rel"] = float(np.nanmax(rel)) if np.any(~np.isnan(rel)) else math.nan
    return stats


def _print_summary(rows: list[dict[str, Any]], key: str, passed: bool) -> None:
    header = ["Input", "Output", "Max Abs Error", "AD at MAE", "FD at MAE", "Max Rel Error", "Pass"]
    table = [[r["input"], r["output"], f"{r['max_abs']:.3e} at {r['index']}", f"{r['ad']:.3e}", f"{r['fd']:.3e}",
              f"{r['max_rel']:.3e}", "PASS" if r["pass"] else "FAIL"] for r in rows]
    widths = [max([len(h)] + [len(t[k]) for t in table]) for k, h in enumerate(header)]
    color = sys.stdout.isatty()

    def fmt(cells: list[str]) -> str:
        out = []
        for k, (cell, w) in enumerate(zip(cells, widths)):
            text = cell.ljust(w)
            if color and k == len(cells) - 1 and cell in ("PASS", "FAIL"):
                text = ("\033[92m" if cell == "PASS" else "\033[91m") + text + "\033[0m"
            out.append(text)
        return " | ".join(out) + " |"

    lines = [fmt(header), "-" * (sum(widths) + 3 * len(widths))]
    lines += [fmt(t) for t in table]
    lines.append(f"Gradient check for {key} {'passed' if passed else 'FAILED'}")
    print("\n".join(lines))


def gradcheck(function: Any, dim: Any = None, inputs: Sequence[Any] | None = None,
              outputs: Sequence[Any] | None = None, *, eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
              raise_exception: bool = True, input_output_mask: Mask | None = None, device: Any = None,
              max_blocks: int = 0, block_dim: int | None = None, max_inputs_per_var: int = -1,
              max_outputs_per_var: int = -1, plot_relative_error: bool = False, plot_absolute_error: bool = False,
              show_summary: bool = True, restore_inputs: bool = True) -> bool:
    """Check that the autodiff gradients of a kernel or Python function match finite differences.

    The check passes when the autodiff Jacobians contain no NaN and ``|AD - FD| <= atol + rtol * |FD|`` holds for
    every evaluated entry (see :func:`jacobian` and :func:`jacobian_fd` for the arguments; ``eps`` is the
    finite-difference step). ``show_summary`` prints a table (one row per input/output pair: largest absolute error
    and where, the two values there, largest relative error, PASS/FAIL) to stdout; ``plot_relative_error`` /
    ``plot_absolute_error`` plot the error matrices (needs matplotlib).

    Returns:
        ``True`` if every pair passes. On failure, raises ``ValueError`` if ``raise_exception`` else returns
        ``False``.
    """
    p = _Problem(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim, None,
                 restore_inputs)
    fd = _jacobian_fd(p, max_inputs_per_var, eps)
    ad = _jacobian_ad(p, max_outputs_per_var)
    rows: list[dict[str, Any]] = []
    abs_err: dict[tuple[int, int], np.ndarray] = {}
    rel_err: dict[tuple[int, int], np.ndarray] = {}
    for (i, j) in sorted(ad):
        x = p.inputs[i]
        n_out, n_in = ad[(i, j)].shape
        r, c = _limit(n_out, max_outputs_per_var), _limit(n_in, max_inputs_per_var)
        shape = (n_out, int(x.size)) + inner_shape(x.dtype)
        stats = _compare(ad[(i, j)], fd[(i, j)], r, c, shape, atol, rtol)
        stats["input"], stats["output"] = p.label(i, j)
        rows.append(stats)
        err = np.abs(ad[(i, j)] - fd[(i, j)])
        abs_err[(i, j)] = err
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_err[(i, j)] = np.where(np.abs(fd[(i, j)]) > 0, err / np.abs(fd[(i, j)]), 0.0)
    passed = all(r["pass"] for r in rows)
    what = f"kernel {p.key}" if p.is_kernel else f"function {p.key}"
    if show_summary:
        _print_summary(rows, what, passed)
    if plot_relative_error or plot_absolute_error:
        from .jacobian_plot import jacobian_plot

        if plot_relative_error:
            jacobian_plot(_wrap(p, rel_err), p.meta, p.inputs, title=f"{p.key}: relative error")
        if plot_absolute_error:
            jacobian_plot(_wrap(p, abs_err), p.meta, p.inputs, title=f"{p.key}: absolute error")
    if not passed and raise_exception:
        failed = [r for r in rows if not r["pass"]]
        detail = "; ".join(
            f"input '{r['input']}' -> output '{r['output']}': max abs error {r['max_abs']:.3e} at {r['index']} "
            f"(autodiff {r['ad']:.6g}, finite difference {r['fd']:.6g})" for r in failed)
        raise ValueError(f"Gradient check for {what} failed (atol={atol}, rtol={rtol}, eps={eps}): {detail}")
    return passed


def gradcheck_tape(tape: Any, *, eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
                   raise_exception: bool = True, input_output_masks: dict[str, Mask] | None = None,
                   blacklist_kernels: list[str] | None = None, whitelist_kernels: list[str] | None = None,
                   max_inputs_per_var: int = -1, max_outputs_per_var: int = -1, plot_relative_error: bool = False,
                   plot_absolute_error: bool = False, show_summary: bool = True, reverse_launches: bool = False,
                   skip_to_launch_index: int = 0) -> bool:
    """Run :func:`gradcheck` on every kernel launch recorded on ``tape`` (with the arrays' current values).

    Functions recorded with ``Tape.record_func`` and kernels whose backward pass is disabled are skipped.
    ``input_output_masks`` maps kernel keys to masks; ``blacklist_kernels`` / ``whitelist_kernels`` (kernel keys)
    exclude / restrict the kernels checked; ``reverse_launches`` checks the launches last to first;
    ``skip_to_launch_index`` skips the first launches (counted in checking order).

    Returns:
        ``True`` if every checked launch passes. On failure, raises ``ValueError`` (naming the failing kernels)
        if ``raise_exception`` else returns ``False``.
    """
    from .tape import _Recorded

    masks = input_output_masks or {}
    blacklist = set(blacklist_kernels or [])
    whitelist = set(whitelist_kernels or [])
    launches = [rec for rec in tape.launches if isinstance(rec, _Recorded)]
    if reverse_launches:
        launches.reverse()
    failed: list[str] = []
    for index, rec in enumerate(launches):
        if index < skip_to_launch_index:
            continue
        key = rec.kernel.key
        if key in blacklist or (whitelist and key not in whitelist) or not rec.kernel.enable_backward:
            continue
        ok = gradcheck(rec.kernel, rec.dim, rec.inputs, rec.outputs, eps=eps, atol=atol, rtol=rtol,
                       raise_exception=False, input_output_mask=masks.get(key), device=rec.device,
                       max_inputs_per_var=max_inputs_per_var, max_outputs_per_var=max_outputs_per_var,
                       plot_relative_error=plot_relative_error, plot_absolute_error=plot_absolute_error,
                       show_summary=show_summary)
        if not ok:
            failed.append(f"'{key}' (launch {index})")
    if failed and raise_exception:
        raise ValueError(f"Gradient check failed for kernel launch(es) {', '.join(failed)} recorded on the tape")
    return not failed
