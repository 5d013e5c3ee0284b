"""Conjugate gradient, conjugate residual and BiCGSTAB: the solver states and functions.

Every coefficient of the recurrences is computed per subproblem on the device (float64 dot products, see
:mod:`.dot`), so a batched operator's subproblems iterate together without host round trips; only the convergence
checks read the residuals back, every ``check_every`` iterations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import vectors as vk
from .dot import flat_scalars
from .state import LinearSolverState, check_restart


class _Restartable(LinearSolverState):
    def __init__(self, A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
                 maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
                 check_every: int = 10, use_cuda_graph: bool = True, *, restart: int | None = None) -> None:
        self.restart = check_restart(restart)
        self.cycle_size = self.restart or 1
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)

    def _cycle(self) -> None:
        if self.restart is None:
            self._iterate()
            return
        for _ in range(self.restart):
            self._iterate()
        self._start()  # a restart: the true residual, a fresh search direction

    def _iterate(self) -> None:
        raise NotImplementedError


class CG(_Restartable):
    """Preallocated state of the (preconditioned) conjugate gradient solver, for symmetric positive-definite systems.

    Takes the arguments of :class:`LinearSolverState`, and:

    Args:
        restart: iterations between restarts (``None``: never). A restart recomputes ``b - A x`` and resets the
            search direction, which bounds the drift between the recursive and the true residual; checks and
            callbacks then happen at restart boundaries, and the reported residual is the true one.

    The preconditioner may be changed, given or removed between calls.
    """

    def _alloc(self) -> None:
        self._r, self._fr = self._vector()
        self._p, self._fp = self._vector()
        self._q, self._fq = self._vector()
        self._z = self._fz = None
        self._on_new_m()
        # r.z of the current and the previous iteration, swapped every iteration
        self._rz = self._scalars()
        self._rz_old = self._scalars()
        self._pq = self._scalars()

    def _on_new_m(self) -> None:
        if self._M is not None and self._z is None:
            self._z, self._fz = self._vector()

    def _fx(self) -> Any:
        return flat_scalars(self._x)

    def _precondition(self) -> tuple[Any, Any]:
        if self._M is None:
            return self._r, self._fr
        self._apply_M(self._M, self._r, self._z)
        self._clear_outside(self._fz)
        return self._z, self._fz

    def _start(self) -> None:
        self._residual(self._r, self._fr)
        z, fz = self._precondition()
        self._copy(fz, self._fp)
        if self._M is None:
            self._dot_into(self._r, self._r, self._rz, copy=self._r_norm_sq)
        else:
            self._dot2(self._fr, fz, self._fr, self._fr, self._rz, self._r_norm_sq)

    def _iterate(self) -> None:
        dot = self._dot
        self._apply_A(self._p, self._q, self._q, 1.0, 0.0)
        self._dot_into(self._p, self._q, self._pq)
        self._rz, self._rz_old = self._rz_old, self._rz
        # x += a p; r -= a q with a = rz / pq (and the tiles' |r|^2)
        self._tiles(vk.update_xr, self._fx(), self._fp, self._fr, self._fq, self._rz_old, self._pq, 1.0,
                    partial=dot.partials)
        if self._M is None:
            dot.sum_partials(dot.partials, self._rz, self._r_norm_sq)
            fz = self._fr
        else:
            dot.sum_partials(dot.partials, self._r_norm_sq)
            z, fz = self._precondition()
            self._dot_into(self._r, z, self._rz)
        self._tiles(vk.direction, fz, self._fp, self._rz, self._rz_old)


class CR(CG):
    """Preallocated state of the (preconditioned) conjugate residual solver, for symmetric systems.

    The preconditioner, if any, must be symmetric positive-definite. Takes the arguments of
    :class:`LinearSolverState`, and ``restart`` as :class:`CG`. The preconditioner may be changed, given or removed
    between calls.
    """

    def _alloc(self) -> None:
        self._y = self._fy = None
        super()._alloc()
        self._az, self._faz = self._vector()
        self._zaz = self._scalars()
        self._zaz_old = self._scalars()
        self._qy = self._scalars()

    def _on_new_m(self) -> None:
        super()._on_new_m()
        if self._M is not None and self._y is None:
            self._y, self._fy = self._vector()

    def _z_vec(self) -> tuple[Any, Any]:
        return (self._r, self._fr) if self._M is None else (self._z, self._fz)

    def _start(self) -> None:
        self._residual(self._r, self._fr)
        z, fz = self._precondition()
        self._copy(fz, self._fp)
        self._apply_A(z, self._az, self._az, 1.0, 0.0)
        self._clear_outside(self._faz)
        self._copy(self._faz, self._fq)  # q = A p
        self._dot2(fz, self._faz, self._fr, self._fr, self._zaz, self._r_norm_sq)

    def _iterate(self) -> None:
        dot = self._dot
        if self._M is None:
            y, fy = self._q, self._fq
        else:
            self._apply_M(self._M, self._q, self._y)
            y, fy = self._y, self._fy
        self._dot_into(self._q, y, self._qy)
        self._zaz, self._zaz_old = self._zaz_old, self._zaz
        self._tiles(vk.update_xr, self._fx(), self._fp, self._fr, self._fq, self._zaz_old, self._qy, 1.0,
                    partial=dot.partials)
        dot.sum_partials(dot.partials, self._r_norm_sq)
        if self._M is not None:
            self._tiles(vk.update_x, self._fz, fy, self._zaz_old, self._qy, -1.0)
        z, fz = self._z_vec()
        self._apply_A(z, self._az, self._az, 1.0, 0.0)
        self._clear_outside(self._faz)
        self._dot_into(z, self._az, self._zaz)
        self._tiles(vk.direction2, fz, self._fp, self._faz, self._fq, self._zaz, self._zaz_old)


class BiCGSTAB(LinearSolverState):
    """Preallocated state of the (preconditioned) biconjugate gradient stabilized solver, for general systems.

    Takes the arguments of :class:`LinearSolverState`, and:

    Args:
        is_left_preconditioner: apply ``M`` on the left (iterate on ``M A x = M b``) instead of the right
            (``A M u = b``, ``x = M u``). Convergence is always measured on the true residual ``b - A x``.

    Whether a preconditioner is used is fixed at construction: later calls must pass one exactly when the first did.
    """

    _fixed_m = True

    def __init__(self, A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
                 maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
                 check_every: int = 10, use_cuda_graph: bool = True, is_left_preconditioner: bool = False) -> None:
        self.is_left_preconditioner = bool(is_left_preconditioner)
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)

    def _alloc(self) -> None:
        for name in ("r", "r0", "p", "v", "t", "y", "z", "av", "at", "rh"):
            v, f = self._vector()
            setattr(self, f"_{name}", v)
            setattr(self, f"_f{name}", f)
        for name in ("rho", "rho_old", "alpha", "omega", "r0v", "ts", "tt"):
            setattr(self, f"_{name}", self._scalars())

    def _fx(self) -> Any:
        return flat_scalars(self._x)

    def _left(self) -> bool:
        return self._M is not None and self.is_left_preconditioner

    def _start(self) -> None:
        self._residual(self._r, self._fr)
        if self._left():
            self._apply_M(self._M, self._r, self._rh)
            self._clear_outside(self._frh)
        else:
            self._copy(self._fr, self._frh)
        self._copy(self._frh, self._fr0)
        self._fp.zero_()
        self._fv.zero_()
        for a in (self._rho, self._alpha, self._omega):
            a.fill_(1.0)
        self._dot_into(self._r, self._r, self._r_norm_sq)

    def _cycle(self) -> None:
        dot = self._dot
        M = self._M
        left = self._left()
        right = M is not None and not left
        # rh is the residual the recurrence works on: M r on the left, r itself otherwise
        self._rho, self._rho_old = self._rho_old, self._rho
        self._dot_into(self._r0, self._rh, self._rho)
        self._tiles(vk.bicgstab_direction, self._frh, self._fv, self._fp, self._rho, self._rho_old, self._alpha,
                    self._omega)
        if right:
            self._apply_M(M, self._p, self._y)
            self._clear_outside(self._fy)
            y, fy = self._y, self._fy
        else:
            y, fy = self._p, self._fp
        self._apply_A(y, self._av, self._av, 1.0, 0.0)
        self._clear_outside(self._fav)
        if left:
            self._apply_M(M, self._av, self._v)
            self._clear_outside(self._fv)
        else:
            self._copy(self._fav, self._fv)
        self._dot_into(self._r0, self._v, self._r0v)
        self._per_batch(vk.ratio, self._rho, self._r0v, self._alpha)
        # x += alpha y; rh -= alpha v (the tiles' |rh|^2 are not needed)
        self._tiles(vk.update_xr, self._fx(), fy, self._frh, self._fv, self._rho, self._r0v, 1.0,
                    partial=dot.partials2)
        if left:
            self._tiles(vk.update_x, self._fr, self._fav, self._rho, self._r0v, -1.0)
        if right:
            self._apply_M(M, self._rh, self._z)
            self._clear_outside(self._fz)
            z, fz = self._z, self._fz
        else:
            z, fz = self._rh, self._frh
        self._apply_A(z, self._at, self._at, 1.0, 0.0)
        self._clear_outside(self._fat)
        if left:
            self._apply_M(M, self._at, self._t)
            self._clear_outside(self._ft)
            ft = self._ft
        else:
            ft = self._fat
        self._dot2(ft, self._frh, ft, ft, self._ts, self._tt)
        self._per_batch(vk.ratio, self._ts, self._tt, self._omega)
        # x += omega z; rh -= omega t; r -= omega A z on the left; then |r|^2
        self._tiles(vk.bicgstab_finish, self._fx(), fz, self._frh, ft, self._fr, self._fat, int(left), self._omega,
                    partial=dot.partials)
        dot.sum_partials(dot.partials, self._r_norm_sq)


def _run_or_state(state: LinearSolverState, run: bool) -> Any:
    return state() if run else state


def cg(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None, maxiter: float | None = 0,
       M: Any = None, callback: Callable[..., Any] | None = None, check_every: int = 10, use_cuda_graph: bool = True,
       run: bool = True, *, restart: int | None = None) -> Any:
    """Solve a symmetric positive-definite system ``A x = b`` with the (preconditioned) conjugate gradient method.

    ``A`` may be a batched :class:`LinearOperator` (``batch_offsets``): the subproblems then iterate together, with
    their own coefficients and tolerances, until every one has converged.

    Args:
        A: the system matrix (a :class:`treadle.sparse.BsrMatrix`, a 2-d dense or 1-d diagonal array, or a
            :class:`LinearOperator`); square.
        b: right-hand side.
        x: initial guess, overwritten by the solution.
        tol: relative tolerance (default: 1e-12 for float64, 1e-6 for float32, 1e-3 for float16 systems, or
            ``atol`` when only that is given).
        atol: absolute tolerance; the solver stops when ``norm(r) <= max(atol, tol * norm(b))``.
        maxiter: iteration limit (0: the system size). With ``restart``, whole restart cycles are run.
        M: preconditioner (an operator approximating the inverse of ``A``, e.g. from :func:`preconditioner`).
        callback: ``callback(iteration, residual, tolerance)``, called at every check.
        check_every: iterations between residual checks. 0 makes the loop check on the device only (no host reads
            between iterations, as inside a graph capture): it stops launching work once converged, or runs to
            ``maxiter`` while capturing.
        use_cuda_graph: capture iterations in CUDA graphs on CUDA devices; accepted and ignored on the CPU.
        run: solve now (``True``) or return the preallocated :class:`CG` state, to be called later.
        restart: iterations between restarts (see :class:`CG`).

    Returns:
        With ``check_every > 0``: ``(iterations, residual_norm, absolute_tolerance)`` (the recursive residual; the
        true one with ``restart``). With ``check_every == 0``: device arrays ``(iterations, squared residual norms,
        squared tolerances)``. With ``run=False``: the :class:`CG` state.

    Raises:
        TypeError: ``restart`` is not an integer or ``None``; an operand is not an array or matrix.
        ValueError: ``restart`` is not positive; the matrix is not square; ``b`` or ``x`` do not match it in size,
            scalar type or device.
    """
    return _run_or_state(CG(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph,
                            restart=restart), run)


def cr(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None, maxiter: float | None = 0,
       M: Any = None, callback: Callable[..., Any] | None = None, check_every: int = 10, use_cuda_graph: bool = True,
       run: bool = True, *, restart: int | None = None) -> Any:
    """Solve a symmetric system ``A x = b`` with the (preconditioned) conjugate residual method.

    The arguments, results and errors are those of :func:`cg`; with ``run=False`` it returns a :class:`CR` state.
    The residual norm decreases monotonically.
    """
    return _run_or_state(CR(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph,
                            restart=restart), run)


def bicgstab(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
             maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
             check_every: int = 10, use_cuda_graph: bool = True, is_left_preconditioner: bool = False,
             run: bool = True) -> Any:
    """Solve a general (non-symmetric) system ``A x = b`` with the biconjugate gradient stabilized method.

    The arguments, results and errors are those of :func:`cg` (without ``restart``), and:

    Args:
        A: the system matrix.
        b: right-hand side.
        x: initial guess, overwritten by the solution.
        tol: relative tolerance.
        atol: absolute tolerance.
        maxiter: iteration limit (0: the system size).
        M: preconditioner.
        callback: called at every check.
        check_every: iterations between checks.
        use_cuda_graph: ignored on the CPU.
        is_left_preconditioner: apply ``M`` on the left rather than the right.
        run: solve now, or return the :class:`BiCGSTAB` state (whose preconditioner presence is then fixed).

    Returns:
        As :func:`cg`; the residual is that of the true system ``b - A x``.
    """
    return _run_or_state(BiCGSTAB(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph,
                                  is_left_preconditioner), run)
