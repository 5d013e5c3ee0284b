"""Restarted GMRES: the solver state and function.

Each cycle builds an orthonormal Krylov basis of ``restart`` vectors with classical Gram-Schmidt applied twice
(all projections of a step in one pass, then a second pass to restore orthogonality lost to rounding), reduces the
Hessenberg matrix with Givens rotations as it grows, then solves the small triangular system and updates ``x``.
All of it runs per subproblem on the device: the basis coefficients, rotations and triangular solves of subproblem
``g`` live in its own slices of small float64 arrays, one kernel thread per subproblem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import treadle as wp

from . import vectors as vk
from .dot import add_compensated, flat_scalars, tile_index
from .state import LinearSolverState, check_restart
from .vectors import safe_div


@wp.kernel(enable_backward=False)
def _multi_partials(V: wp.array2d(dtype=Any), w: wp.array(dtype=Any), count: int, tile_start: wp.array(dtype=int),
                    tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int), ntiles: int, spread: int,
                    state: wp.array(dtype=int), partials: wp.array2d(dtype=wp.float64)):
    # partials[m, k] = V[m].w over tile k, for m < count
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    for m in range(count):
        s = wp.vec2d(0.0, 0.0)
        for i in range(tile_start[k], tile_end[k]):
            s = add_compensated(s, wp.float64(V[m, i]) * wp.float64(w[i]))
        partials[m, k] = s[0] + s[1]


@wp.kernel(enable_backward=False)
def _multi_sums(partials: wp.array2d(dtype=wp.float64), seg_tiles: wp.array(dtype=int), count: int,
                out: wp.array2d(dtype=wp.float64), accumulate: int, state: wp.array(dtype=int)):
    # out[g, m] (+)= sum of the tiles of subproblem g, for m < count
    tid = wp.tid()
    if state[1] == 0:
        return
    g = tid / count
    m = tid - g * count
    s = wp.float64(0.0)
    for k in range(seg_tiles[g], seg_tiles[g + 1]):
        s += partials[m, k]
    if accumulate != 0:
        out[g, m] = out[g, m] + s
    else:
        out[g, m] = s


@wp.kernel(enable_backward=False)
def _subtract_basis(w: wp.array(dtype=Any), V: wp.array2d(dtype=Any), h: wp.array2d(dtype=wp.float64),
                    count: int, tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int),
                    tile_batch: wp.array(dtype=int), ntiles: int, spread: int, state: wp.array(dtype=int)):
    # w -= sum_m h[g, m] V[m], for m < count
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    for m in range(count):
        c = w.dtype(h[g, m])
        for i in range(tile_start[k], tile_end[k]):
            w[i] = w[i] - c * V[m, i]


@wp.kernel(enable_backward=False)
def _normalize(w: wp.array(dtype=Any), norm_sq: wp.array(dtype=wp.float64), out: wp.array(dtype=Any),
               tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int),
               ntiles: int, spread: int, state: wp.array(dtype=int)):
    # out = w / |w| (0 for a zero vector: a breakdown)
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    c = out.dtype(safe_div(wp.float64(1.0), wp.sqrt(norm_sq[g])))
    for i in range(tile_start[k], tile_end[k]):
        out[i] = c * w[i]


@wp.kernel(enable_backward=False)
def _combine(V: wp.array2d(dtype=Any), y: wp.array2d(dtype=wp.float64), count: int, out: wp.array(dtype=Any),
             accumulate: int, tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int),
             tile_batch: wp.array(dtype=int), ntiles: int, spread: int, state: wp.array(dtype=int)):
    # out (+)= sum_m y[g, m] V[m]
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    if accumulate == 0:
        for i in range(tile_start[k], tile_end[k]):
            out[i] = out.dtype(0.0)
    for m in range(count):
        c = out.dtype(y[g, m])
        for i in range(tile_start[k], tile_end[k]):
            out[i] = out[i] + c * V[m, i]


@wp.kernel(enable_backward=False)
def _add_h(first: wp.array2d(dtype=wp.float64), h: wp.array2d(dtype=wp.float64), state: wp.array(dtype=int)):
    b, m = wp.tid()
    if state[1] == 0:
        return
    h[b, m] = h[b, m] + first[b, m]


@wp.kernel(enable_backward=False)
def _cycle_start(beta_sq: wp.array(dtype=wp.float64), g: wp.array2d(dtype=wp.float64), k: int,
                 state: wp.array(dtype=int)):
    b = wp.tid()
    if state[1] == 0:
        return
    g[b, 0] = wp.sqrt(beta_sq[b])
    for m in range(1, k + 1):
        g[b, m] = wp.float64(0.0)


@wp.kernel(enable_backward=False)
def _givens(hcol: wp.array2d(dtype=wp.float64), hnorm_sq: wp.array(dtype=wp.float64), j: int, k: int,
            H: wp.array3d(dtype=wp.float64), g: wp.array2d(dtype=wp.float64), cs: wp.array2d(dtype=wp.float64),
            sn: wp.array2d(dtype=wp.float64), state: wp.array(dtype=int)):
    # column j of the Hessenberg matrix of subproblem b: apply the earlier rotations, make and apply a new one
    b = wp.tid()
    if state[1] == 0:
        return
    for m in range(j + 1):
        H[b, m, j] = hcol[b, m]
    for m in range(j):
        a0 = H[b, m, j]
        a1 = H[b, m + 1, j]
        H[b, m, j] = cs[b, m] * a0 + sn[b, m] * a1
        H[b, m + 1, j] = -sn[b, m] * a0 + cs[b, m] * a1
    a = H[b, j, j]
    c = wp.sqrt(hnorm_sq[b])
    r = wp.sqrt(a * a + c * c)
    cj = wp.float64(1.0)
    sj = wp.float64(0.0)
    if r > wp.float64(0.0):
        cj = a / r
        sj = c / r
    cs[b, j] = cj
    sn[b, j] = sj
    H[b, j, j] = r
    gj = g[b, j]
    g[b, j] = cj * gj
    g[b, j + 1] = -sj * gj


@wp.kernel(enable_backward=False)
def _back_substitute(H: wp.array3d(dtype=wp.float64), g: wp.array2d(dtype=wp.float64), k: int,
                     y: wp.array2d(dtype=wp.float64), state: wp.array(dtype=int)):
    b = wp.tid()
    if state[1] == 0:
        return
    for jj in range(k):
        j = k - 1 - jj
        s = g[b, j]
        for m in range(j + 1, k):
            s -= H[b, j, m] * y[b, m]
        y[b, j] = safe_div(s, H[b, j, j])


class GMRES(LinearSolverState):
    """Preallocated state of the restarted generalized minimal residual solver GMRES(k), for general systems.

    Takes the arguments of :class:`LinearSolverState`, and:

    Args:
        restart: ``k``, the size of the Krylov basis of a cycle (more memory, usually fewer iterations). Whole cycles
            are run, so up to ``k - 1`` iterations past ``maxiter`` may be done.
        is_left_preconditioner: apply ``M`` on the left (minimise the preconditioned residual) instead of the right.
            Convergence is measured on the true residual ``b - A x``.

    The preconditioner may be changed, given or removed between calls.
    """

    def __init__(self, A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None,
                 restart: int = 31, maxiter: float | None = 0, M: Any = None,
                 callback: Callable[..., Any] | None = None, check_every: int = 31, use_cuda_graph: bool = True,
                 is_left_preconditioner: bool = False) -> None:
        k = check_restart(restart)
        if k is None:
            raise TypeError("gmres(): restart must be a positive integer")
        self.restart = k
        self.cycle_size = k
        self.is_left_preconditioner = bool(is_left_preconditioner)
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)

    def _alloc(self) -> None:
        k, n, d = self.restart, self._n, self._device
        B = max(self._batch_count, 1)
        self._V = wp.zeros((k + 1, n), dtype=self._scalar, device=d)
        self._V_flat = [self._V[m] for m in range(k + 1)]
        if wp.types.type_is_vector(self._b_dtype):
            length = int(self._b_dtype._length_)
            self._V_rows = [v.reshape((n // length, length)).view(self._b_dtype) for v in self._V_flat]
        else:
            self._V_rows = list(self._V_flat)
        self._r, self._fr = self._vector()
        self._w, self._fw = self._vector()
        self._u, self._fu = self._vector()
        self._mu, self._fmu = self._vector()
        self._partials = wp.zeros((k + 1, max(self._dot.ntiles, 1)), dtype=wp.float64, device=d)
        self._h = wp.zeros((B, k + 1), dtype=wp.float64, device=d)
        self._h_first = wp.zeros((B, k + 1), dtype=wp.float64, device=d)
        self._H = wp.zeros((B, k + 1, k), dtype=wp.float64, device=d)
        self._g = wp.zeros((B, k + 1), dtype=wp.float64, device=d)
        self._cs = wp.zeros((B, k), dtype=wp.float64, device=d)
        self._sn = wp.zeros((B, k), dtype=wp.float64, device=d)
        self._y = wp.zeros((B, k), dtype=wp.float64, device=d)
        self._beta_sq = self._scalars()
        self._wnorm_sq = self._scalars()
        self._one = self._scalars(1.0)

    def _left(self) -> bool:
        return self._M is not None and self.is_left_preconditioner

    def _start(self) -> None:
        self._residual(self._r, self._fr)
        self._dot_into(self._r, self._r, self._r_norm_sq)

    def _project(self, count: int) -> None:
        """``h[g, :count]`` = the projections of ``w`` on ``v_0 .. v_{count-1}``."""
        dot = self._dot
        state = self._cur_iter_and_condition
        if dot.ntiles == 0:
            return
        wp.launch(_multi_partials, dot.launch_dim, device=self._device,
                  inputs=[self._V, self._fw, count, *dot.tile_args(), state, self._partials])
        if self._batch_count > 0:
            wp.launch(_multi_sums, self._batch_count * count, device=self._device,
                      inputs=[self._partials, dot.seg_tiles, count, self._h, 0, state])

    def _krylov_vector(self, j: int) -> None:
        """``w`` = the operator applied to ``v_j`` (``A M v_j`` on the right, ``M A v_j`` on the left)."""
        M = self._M
        vj = self._V_rows[j]
        if M is None:
            self._apply_A(vj, self._w, self._w, 1.0, 0.0)
        elif self._left():
            self._apply_A(vj, self._u, self._u, 1.0, 0.0)
            self._apply_M(M, self._u, self._w)
        else:
            self._apply_M(M, vj, self._mu)
            self._clear_outside(self._fmu)
            self._apply_A(self._mu, self._w, self._w, 1.0, 0.0)
        self._clear_outside(self._fw)

    def _cycle(self) -> None:
        k = self.restart
        M = self._M
        # v0 = r / |r| (the preconditioned residual on the left)
        fstart = self._fr
        if self._left():
            self._apply_M(M, self._r, self._w)
            self._clear_outside(self._fw)
            fstart = self._fw
        self._dot_into(fstart, fstart, self._beta_sq)
        self._tiles(_normalize, fstart, self._beta_sq, self._V_flat[0])
        self._per_batch(_cycle_start, self._beta_sq, self._g, k)
        for j in range(k):
            self._krylov_vector(j)
            # classical Gram-Schmidt against v0..vj, twice; the coefficients of both passes add up in h
            self._project(j + 1)
            self._tiles(_subtract_basis, self._fw, self._V, self._h, j + 1)
            wp.copy(self._h_first, self._h)
            self._project(j + 1)
            self._tiles(_subtract_basis, self._fw, self._V, self._h, j + 1)
            if self._batch_count > 0:
                wp.launch(_add_h, (self._batch_count, j + 1), device=self._device,
                          inputs=[self._h_first, self._h, self._cur_iter_and_condition])
            self._dot_into(self._w, self._w, self._wnorm_sq)
            self._tiles(_normalize, self._fw, self._wnorm_sq, self._V_flat[j + 1])
            self._per_batch(_givens, self._h, self._wnorm_sq, j, k, self._H, self._g, self._cs, self._sn)
        self._per_batch(_back_substitute, self._H, self._g, k, self._y)
        fx = flat_scalars(self._x)
        if M is not None and not self._left():
            self._tiles(_combine, self._V, self._y, k, self._fu, 0)
            self._apply_M(M, self._u, self._mu)
            self._tiles(vk.update_x, fx, self._fmu, self._one, self._one, 1.0)
        else:
            self._tiles(_combine, self._V, self._y, k, fx, 1)
        self._start()


def gmres(A: Any, b: Any, x: Any, tol: float | None = None, atol: float | None = None, restart: int = 31,
          maxiter: float | None = 0, M: Any = None, callback: Callable[..., Any] | None = None,
          check_every: int = 31, use_cuda_graph: bool = True, is_left_preconditioner: bool = False,
          run: bool = True) -> Any:
    """Solve a general system ``A x = b`` with restarted GMRES(``restart``).

    The arguments, results and errors are those of :func:`cg` (without ``restart`` as a keyword), and:

    Args:
        A: the system matrix.
        b: right-hand side.
        x: initial guess, overwritten by the solution.
        tol: relative tolerance.
        atol: absolute tolerance.
        restart: size of the Krylov basis of a cycle; checks happen after whole cycles.
        maxiter: iteration limit (0: the system size); whole cycles are run.
        M: preconditioner.
        callback: called at every check.
        check_every: iterations between checks (rounded up to whole cycles).
        use_cuda_graph: ignored on the CPU.
        is_left_preconditioner: apply ``M`` on the left rather than the right.
        run: solve now, or return the :class:`GMRES` state.

    Returns:
        As :func:`cg`; the residual is the true ``norm(b - A x)``.
    """
    state = GMRES(A, b, x, tol, atol, restart, maxiter, M, callback, check_every, use_cuda_graph,
                  is_left_preconditioner)
    return state() if run else state
