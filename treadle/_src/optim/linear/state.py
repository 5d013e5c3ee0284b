"""What the iterative solvers share: argument checks, tolerances, the iteration loop, :class:`LinearSolverState`."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

import treadle as wp

from ...runtime.graph import capturing
from . import vectors as vk
from .dot import TiledDot, flat_scalars
from .operator import LinearOperator, aslinearoperator

#: Relative tolerance used when neither ``tol`` nor ``atol`` is given, by scalar type.
DEFAULT_TOL = {wp.float16: 1.0e-3, wp.float32: 1.0e-6, wp.float64: 1.0e-12}


def _status(r_norm_sq: Any, atol_sq: Any) -> tuple[bool, float, float]:
    """``(converged, residual, tolerance)`` of the worst subproblem (largest residual-to-tolerance ratio)."""
    r = np.asarray(r_norm_sq.numpy(), dtype=np.float64).reshape(-1)
    a = np.asarray(atol_sq.numpy(), dtype=np.float64).reshape(-1)
    if r.size == 0:
        return True, 0.0, 0.0
    converged = bool(np.all(r <= a))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(a > 0.0, r / np.where(a > 0.0, a, 1.0), np.where(r > 0.0, np.inf, 0.0))
    ratio = np.where(np.isnan(r), np.inf, ratio)
    w = int(np.argmax(ratio))
    return converged, math.sqrt(max(float(r[w]), 0.0)) if not np.isnan(r[w]) else float("nan"), \
        math.sqrt(max(float(a[w]), 0.0))


def _run_solver_loop(do_cycle: Callable[[], None], cycle_size: int, r_norm_sq: Any, maxiter: float,
                     atol_sq: Any, callback: Callable[..., Any] | None, check_every: int, use_cuda_graph: bool,
                     device: Any) -> tuple[int, float, float]:
    """Run ``do_cycle`` (``cycle_size`` iterations each) until every subproblem has converged or ``maxiter``.

    The residuals are checked (and ``callback(iteration, residual, tolerance)`` called) before the first cycle and
    then after every ``check_every`` iterations, rounded up to whole cycles. A subproblem has converged when its
    squared residual ``r_norm_sq[i]`` is at most ``atol_sq[i]``.

    Returns:
        ``(iterations, residual, tolerance)``, the last two for the subproblem furthest from convergence.
    """
    iteration = 0
    converged, err, atol = _status(r_norm_sq, atol_sq)
    if callback is not None:
        callback(iteration, err, atol)
    if converged:
        return iteration, err, atol
    cycles_per_check = max(1, -(-max(int(check_every), 1) // max(int(cycle_size), 1)))
    while iteration < maxiter:
        for _ in range(cycles_per_check):
            do_cycle()
            iteration += cycle_size
            if iteration >= maxiter:
                break
        converged, err, atol = _status(r_norm_sq, atol_sq)
        if callback is not None:
            callback(iteration, err, atol)
        if converged:
            break
    return iteration, err, atol


def _run_device_loop(do_cycle: Callable[[], None], cycle_size: int, r_norm_sq: Any, maxiter: float, atol_sq: Any,
                     state: Any, device: Any) -> tuple[Any, Any, Any]:
    """Run cycles with the convergence test on the device (``check_every=0``); return the device-side results.

    ``state[0]`` counts the iterations and ``state[1]`` stays 1 while some subproblem has not converged; the
    solver's kernels do nothing once it is 0. Outside a graph capture on the CPU, the loop stops as soon as the flag
    drops; otherwise it launches every cycle up to ``maxiter``.
    """
    count = int(r_norm_sq.shape[0])
    wp.launch(vk.loop_start, 1, inputs=[r_norm_sq, atol_sq, count, state], device=device)
    cycles = max(0, math.ceil(float(maxiter) / max(cycle_size, 1)))
    early_exit = device.is_cpu and not capturing()
    for _ in range(cycles):
        if early_exit and int(state.numpy()[1]) == 0:
            break
        do_cycle()
        wp.launch(vk.loop_step, 1, inputs=[r_norm_sq, atol_sq, count, cycle_size, state], device=device)
    return state[0:1], r_norm_sq, atol_sq


def scalar_size(op: LinearOperator) -> int:
    """Scalar degrees of freedom of an operator (a diagonal operator's shape counts entries, maybe vectors)."""
    shape = op.shape
    if len(shape) == 1:
        length = int(op.dtype._length_) if wp.types.type_is_vector(op.dtype) else 1
        return int(shape[0]) * length
    return int(shape[0])


def check_restart(restart: Any) -> int | None:
    """Validate a ``restart`` argument (``None`` or a positive integer)."""
    if restart is None:
        return None
    if isinstance(restart, bool) or not isinstance(restart, (numbers.Integral, np.integer)):
        raise TypeError(f"restart must be a positive integer or None, got {type(restart).__name__} {restart!r}")
    if int(restart) <= 0:
        raise ValueError(f"restart must be positive, got {int(restart)}")
    return int(restart)


class LinearSolverState:
    """Preallocated state of an iterative solver, reusable for compatible systems.

    Holds the temporary vectors of one solver and the problem it was built for (``A``, ``b``, ``x``, ``M``).
    Calling the state runs the solver, optionally on a replacement matrix, right-hand side, solution vector or
    preconditioner, which must have the shapes, scalar type, device and batch layout of the originals (a
    :class:`ValueError` otherwise). Made by the solver classes :class:`CG`, :class:`CR`, :class:`BiCGSTAB` and
    :class:`GMRES`, or by the solver functions with ``run=False``; this base class cannot be instantiated.

    Args:
        A: the system matrix: a :class:`treadle.sparse.BsrMatrix`, a 2-d array (dense), a 1-d array (diagonal) or a
            :class:`LinearOperator`. It must be square.
        b: right-hand side.
        x: initial guess, overwritten by the solution.
        tol: relative tolerance on the residual norm (a fraction of ``norm(b)``).
        atol: absolute tolerance; the solver stops when ``norm(r) <= max(atol, tol * norm(b))``.
        maxiter: iteration limit (0: the system size).
        M: preconditioner (same kinds as ``A``), or ``None``.
        callback: ``callback(iteration, residual, tolerance)`` called at every check.
        check_every: iterations between residual checks (0: checks on the device only, see the solver functions).
        use_cuda_graph: capture iterations in CUDA graphs on CUDA devices; accepted and ignored on the CPU, where
            launches are already cheap.
    """

    #: whether a preconditioner must be present on every call exactly when it was at construction
    _fixed_m = False
    cycle_size = 1

    def __init__(self, A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
                 maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
                 check_every: int = 10, use_cuda_graph: bool = True) -> None:
        if type(self) is LinearSolverState:
            raise TypeError("LinearSolverState cannot be instantiated: use CG, CR, BiCGSTAB or GMRES, or a solver "
                            "function with run=False")
        self._name = type(self).__name__
        A = self._operator(A, "A")
        self._check_square(A)
        n = self._n = scalar_size(A)
        self._scalar = A.scalar_type
        self._device = A.device
        self._b = self._check_vector(b, "b")
        self._x = self._check_vector(x, "x")
        self._b_shape, self._b_dtype = tuple(b.shape), b.dtype
        self._A = A
        self._offsets = A.batch_offsets
        self._max_batch_length = A.max_batch_length
        self._batch_count = A.batch_count
        self._M = None if M is None else self._check_M(M)
        self._had_m = M is not None
        self._tol = tol
        self._atol = atol
        self._maxiter = maxiter
        self._callback = callback
        if isinstance(check_every, bool) or not isinstance(check_every, (numbers.Integral, np.integer)) or \
                int(check_every) < 0:
            raise ValueError(f"check_every must be a non-negative integer, got {check_every!r}")
        self._check_every = int(check_every)
        self.use_cuda_graph = bool(use_cuda_graph)
        d = self._device
        self._dot = TiledDot(n, self._scalar, d, self._offsets, self._max_batch_length)
        # the active range of the degrees of freedom (all of them without batches)
        self._active = (0, n)
        if self._offsets is not None:
            bounds = self._offsets.numpy()
            self._active = (max(int(bounds[0]), 0), min(int(bounds[-1]), n)) if len(bounds) > 1 else (0, 0)
        self._cur_iter_and_condition = wp.zeros(2, dtype=int, device=d)
        self._b_norm_sq = self._scalars()
        self._atol_sq = self._scalars()
        self._r_norm_sq = self._scalars()
        self._alloc()

    # -- checks ------------------------------------------------------------------------------------------------------
    def _operator(self, A: Any, name: str) -> LinearOperator:
        try:
            return aslinearoperator(A)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{type(self).__name__.lower()}(): {name}: {e}") from None

    def _check_square(self, A: LinearOperator) -> None:
        shape = A.shape
        if len(shape) == 2 and shape[0] != shape[1]:
            raise ValueError(f"{self._name}: the system matrix must be square, got shape {shape}; an iterative "
                             "solver of this module solves A x = b for square A")

    def _check_vector(self, v: Any, name: str) -> Any:
        if not isinstance(v, wp.array):
            raise TypeError(f"{self._name}: {name} must be a treadle array, got {type(v).__name__}")
        if v.device != self._device:
            raise ValueError(f"{self._name}: {name} is on device '{v.device}' but the matrix is on "
                             f"'{self._device}'")
        try:
            f = flat_scalars(v)
        except ValueError as e:
            raise ValueError(f"{self._name}: {name}: {e}") from None
        if f.dtype != self._scalar:
            raise ValueError(f"{self._name}: {name} holds {getattr(f.dtype, '__name__', f.dtype)} values but the "
                             f"matrix {getattr(self._scalar, '__name__', self._scalar)} values")
        if f.shape[0] != self._n:
            raise ValueError(f"{self._name}: {name} has {f.shape[0]} scalar entries, the {self._n} x {self._n} "
                             "matrix needs as many")
        return v

    def _check_M(self, M: Any) -> LinearOperator:
        op = self._operator(M, "M")
        if op.device != self._device:
            raise ValueError(f"{self._name}: the preconditioner is on device '{op.device}', the matrix on "
                             f"'{self._device}'")
        if op.scalar_type != self._scalar:
            raise ValueError(f"{self._name}: the preconditioner has {op.scalar_type.__name__} coefficients, the "
                             f"matrix {self._scalar.__name__}")
        if scalar_size(op) != self._n:
            raise ValueError(f"{self._name}: the preconditioner has shape {op.shape}, the matrix "
                             f"{self._A.shape}")
        return op

    def _check_replacement(self, A: Any) -> LinearOperator:
        op = self._operator(A, "A")
        if tuple(op.shape) != tuple(self._A.shape):
            raise ValueError(f"{self._name}: the replacement matrix has shape {op.shape}, the state was built for "
                             f"{self._A.shape}")
        if op.scalar_type != self._scalar:
            raise ValueError(f"{self._name}: the replacement matrix has {op.scalar_type.__name__} coefficients, "
                             f"the state was built for {self._scalar.__name__}")
        if op.device != self._device:
            raise ValueError(f"{self._name}: the replacement matrix is on device '{op.device}', the state on "
                             f"'{self._device}'")
        if (op.batch_offsets is None) != (self._offsets is None) or (
                op.batch_offsets is not None and op.batch_offsets is not self._offsets):
            raise ValueError(f"{self._name}: the replacement matrix's batch_offsets differ from the state's (the "
                             "batch layout is fixed at construction: pass the same batch_offsets array)")
        if op.max_batch_length != self._max_batch_length:
            raise ValueError(f"{self._name}: the replacement matrix's max_batch_length ({op.max_batch_length}) "
                             f"differs from the state's ({self._max_batch_length})")
        return op

    # -- helpers -----------------------------------------------------------------------------------------------------
    def _scalars(self, value: float | None = None) -> Any:
        a = wp.zeros(max(self._batch_count, 1), dtype=wp.float64, device=self._device)
        if value is not None:
            a.fill_(value)
        return a

    def _vector(self) -> tuple[Any, Any]:
        """A new temporary vector shaped like ``b``, and its flat scalar view."""
        v = wp.zeros(self._b_shape, dtype=self._b_dtype, device=self._device)
        return v, flat_scalars(v)

    def _dot_into(self, a: Any, b: Any, out: Any, copy: Any = None) -> None:
        self._dot.compute(a, b, out, copy)

    def _apply_A(self, x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        self._A.matvec(x, y, z, alpha, beta)

    def _apply_M(self, M: LinearOperator, x: Any, z: Any) -> None:
        M.matvec(x, z, z, 1.0, 0.0)

    def _residual(self, r: Any, fr: Any) -> None:
        """``r = b - A x``, zero outside the subproblems."""
        self._apply_A(self._x, self._b, r, -1.0, 1.0)
        self._clear_outside(fr)

    def _clear_outside(self, f: Any) -> None:
        lo, hi = self._active
        if (lo, hi) != (0, self._n) and self._n > 0:
            wp.launch(vk.zero_outside, self._n, inputs=[f, lo, hi], device=self._device)

    def _tiles(self, kernel: Any, *args: Any, partial: Any = None) -> None:
        """Launch a tile kernel: ``args``, the tile arguments, the state flag, and ``partial`` when given."""
        dot = self._dot
        if dot.ntiles == 0:
            return
        extra = [self._cur_iter_and_condition] + ([partial] if partial is not None else [])
        wp.launch(kernel, dot.launch_dim, inputs=[*args, *dot.tile_args(), *extra], device=self._device)

    def _copy(self, src: Any, dst: Any) -> None:
        """``dst = src`` over the subproblems' degrees of freedom (flat views)."""
        dot = self._dot
        if dot.ntiles > 0:
            wp.launch(vk.copy_tiles, dot.launch_dim, inputs=[src, dst, *dot.tile_args()], device=self._device)

    def _per_batch(self, kernel: Any, *args: Any) -> None:
        if self._batch_count > 0:
            wp.launch(kernel, self._batch_count, inputs=[*args, self._cur_iter_and_condition], device=self._device)

    def _dot2(self, a: Any, b: Any, c: Any, d: Any, out_ab: Any, out_cd: Any) -> None:
        """``out_ab = a.b`` and ``out_cd = c.d`` per subproblem, in one pass (flat views)."""
        dot = self._dot
        if dot.ntiles == 0:
            return
        wp.launch(vk.dot2, dot.launch_dim, inputs=[a, b, c, d, *dot.tile_args(), dot.partials, dot.partials2],
                  device=self._device)
        dot.sum_partials(dot.partials, out_ab)
        dot.sum_partials(dot.partials2, out_cd)

    def _tolerances(self) -> None:
        tol = self._tol
        if tol is None:
            tol = self._atol if self._atol is not None else DEFAULT_TOL.get(self._scalar, 1.0e-6)
        atol = 0.0 if self._atol is None else float(self._atol)
        self._dot_into(self._b, self._b, self._b_norm_sq)
        if self._batch_count > 0:
            wp.launch(vk.tolerances, self._batch_count, device=self._device,
                      inputs=[self._b_norm_sq, wp.float64(float(tol)), wp.float64(atol), self._atol_sq])

    def _maxiter_value(self) -> float:
        m = self._maxiter
        if m is None or float(m) == 0.0:
            return float(self._n)
        return float(m)

    # -- running -----------------------------------------------------------------------------------------------------
    def __call__(self, A: Any = None, b: Any = None, x: Any = None, M: Any = None) -> Any:
        """Run the solver, on replacements of the construction-time operands where given.

        Returns:
            With ``check_every > 0``: ``(iterations, residual_norm, absolute_tolerance)``. With ``check_every == 0``:
            device arrays ``(iterations, squared residual norms, squared tolerances)`` (one entry per subproblem for
            the last two).
        """
        if A is not None:
            self._A = self._check_replacement(A)
        if b is not None:
            self._b = self._check_same(b, "b")
        if x is not None:
            self._x = self._check_same(x, "x")
        if M is not None:
            if self._fixed_m and not self._had_m:
                raise ValueError(f"{self._name}: the state was built without a preconditioner, so it cannot take "
                                 "one now (build it with M given)")
            self._M = self._check_M(M)
            self._on_new_m()
        return self._solve()

    def _on_new_m(self) -> None:
        """Allocate what a newly given preconditioner needs."""

    def _check_same(self, v: Any, name: str) -> Any:
        if not isinstance(v, wp.array) or tuple(v.shape) != self._b_shape or v.dtype != self._b_dtype:
            got = f"shape {tuple(v.shape)} of {v.dtype.__name__}" if isinstance(v, wp.array) else type(v).__name__
            raise ValueError(f"{self._name}: the replacement {name} must have shape {self._b_shape} and dtype "
                             f"{self._b_dtype.__name__} like the original, got {got}")
        return self._check_vector(v, name)

    def _solve(self) -> Any:
        d = self._device
        self._tolerances()
        wp.launch(vk.set_active, 1, inputs=[self._cur_iter_and_condition], device=d)
        self._start()
        maxiter = self._maxiter_value()
        if self._check_every == 0:
            return _run_device_loop(self._cycle, self.cycle_size, self._r_norm_sq, maxiter, self._atol_sq,
                                    self._cur_iter_and_condition, d)
        return _run_solver_loop(self._cycle, self.cycle_size, self._r_norm_sq, maxiter, self._atol_sq,
                                self._callback, self._check_every, self.use_cuda_graph, d)

    # -- implemented by each solver ------------------------------------------------------------------------------------
    def _alloc(self) -> None:
        raise NotImplementedError

    def _start(self) -> None:
        raise NotImplementedError

    def _cycle(self) -> None:
        raise NotImplementedError
