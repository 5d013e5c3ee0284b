"""Element-wise and per-subproblem kernels of the iterative solvers.

Vectors are flat arrays of scalars. ``bid[i]`` is the subproblem of scalar ``i`` (``-1`` for inactive degrees of
freedom, which are never updated); without batches (``has_bid == 0``) every scalar belongs to subproblem 0.
Coefficients are float64 arrays with one entry per subproblem. ``cond[1]`` is the solver's "still iterating" flag:
every kernel returns at once when it is 0, so that an iteration launched after convergence (a device-side loop, a
replayed graph) leaves the state unchanged.
"""

from __future__ import annotations

from typing import Any

import treadle as wp


@wp.func
def batch_of(bid: wp.array(dtype=int), has_bid: int, i: int) -> int:
    """Subproblem of scalar ``i``."""
    if has_bid != 0:
        return bid[i]
    return 0


@wp.func
def safe_div(num: wp.float64, den: wp.float64) -> wp.float64:
    """``num / den``, or 0 when ``den`` is 0 (a converged or broken-down subproblem)."""
    if den == wp.float64(0.0):
        return wp.float64(0.0)
    return num / den


@wp.kernel(enable_backward=False)
def fill_batch_ids(offsets: wp.array(dtype=int), n: int, bid: wp.array(dtype=int)):
    # one thread per subproblem: mark its scalars; scalars past the last bound stay -1
    g = wp.tid()
    lo = wp.max(offsets[g], 0)
    hi = wp.min(offsets[g + 1], n)
    for i in range(lo, hi):
        bid[i] = g


@wp.kernel(enable_backward=False)
def tolerances(b_norm_sq: wp.array(dtype=wp.float64), tol: wp.float64, atol: wp.float64,
               atol_sq: wp.array(dtype=wp.float64)):
    g = wp.tid()
    t = wp.max(atol, tol * wp.sqrt(b_norm_sq[g]))
    atol_sq[g] = t * t


@wp.kernel(enable_backward=False)
def loop_start(r_norm_sq: wp.array(dtype=Any), atol_sq: wp.array(dtype=Any), count: int,
               state: wp.array(dtype=int)):
    # state[0]: iterations done, state[1]: 1 while some subproblem has not converged
    active = 0
    for g in range(count):
        if r_norm_sq[g] > atol_sq[g]:
            active = 1
    state[0] = 0
    state[1] = active


@wp.kernel(enable_backward=False)
def loop_step(r_norm_sq: wp.array(dtype=Any), atol_sq: wp.array(dtype=Any), count: int, cycle: int,
              state: wp.array(dtype=int)):
    if state[1] == 0:
        return
    state[0] = state[0] + cycle
    active = 0
    for g in range(count):
        if r_norm_sq[g] > atol_sq[g]:
            active = 1
    state[1] = active


@wp.kernel(enable_backward=False)
def set_active(state: wp.array(dtype=int)):
    state[0] = 0
    state[1] = 1


@wp.kernel(enable_backward=False)
def ratio(num: wp.array(dtype=wp.float64), den: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64),
          state: wp.array(dtype=int)):
    g = wp.tid()
    if state[1] == 0:
        return
    out[g] = safe_div(num[g], den[g])


@wp.kernel(enable_backward=False)
def ratio_shift(num: wp.array(dtype=wp.float64), den: wp.array(dtype=wp.float64),
                out: wp.array(dtype=wp.float64), state: wp.array(dtype=int)):
    # out = num / den, then den = num (the "new over old" coefficient of CG-like recurrences)
    g = wp.tid()
    if state[1] == 0:
        return
    out[g] = safe_div(num[g], den[g])
    den[g] = num[g]


@wp.kernel(enable_backward=False)
def axpy2(x: wp.array(dtype=Any), p: wp.array(dtype=Any), r: wp.array(dtype=Any), q: wp.array(dtype=Any),
          alpha: wp.array(dtype=wp.float64), bid: wp.array(dtype=int), has_bid: int, state: wp.array(dtype=int)):
    # x += alpha p ; r -= alpha q
    i = wp.tid()
    if state[1] == 0:
        return
    g = batch_of(bid, has_bid, i)
    if g < 0:
        return
    a = x.dtype(alpha[g])
    x[i] = x[i] + a * p[i]
    r[i] = r[i] - a * q[i]


@wp.kernel(enable_backward=False)
def axpy1(x: wp.array(dtype=Any), p: wp.array(dtype=Any), alpha: wp.array(dtype=wp.float64), sign: float,
          bid: wp.array(dtype=int), has_bid: int, state: wp.array(dtype=int)):
    # x += sign * alpha p
    i = wp.tid()
    if state[1] == 0:
        return
    g = batch_of(bid, has_bid, i)
    if g < 0:
        return
    x[i] = x[i] + x.dtype(wp.float64(sign) * alpha[g]) * p[i]


@wp.kernel(enable_backward=False)
def xpby(z: wp.array(dtype=Any), p: wp.array(dtype=Any), beta: wp.array(dtype=wp.float64),
         bid: wp.array(dtype=int), has_bid: int, state: wp.array(dtype=int)):
    # p = z + beta p
    i = wp.tid()
    if state[1] == 0:
        return
    g = batch_of(bid, has_bid, i)
    if g < 0:
        return
    p[i] = z[i] + p.dtype(beta[g]) * p[i]


@wp.kernel(enable_backward=False)
def bicgstab_direction(r: wp.array(dtype=Any), v: wp.array(dtype=Any), p: wp.array(dtype=Any),
                       beta: wp.array(dtype=wp.float64), omega: wp.array(dtype=wp.float64),
                       bid: wp.array(dtype=int), has_bid: int, state: wp.array(dtype=int)):
    # p = r + beta (p - omega v)
    i = wp.tid()
    if state[1] == 0:
        return
    g = batch_of(bid, has_bid, i)
    if g < 0:
        return
    p[i] = r[i] + p.dtype(beta[g]) * (p[i] - p.dtype(omega[g]) * v[i])


@wp.kernel(enable_backward=False)
def bicgstab_coeffs(rho_new: wp.array(dtype=wp.float64), rho: wp.array(dtype=wp.float64),
                    alpha: wp.array(dtype=wp.float64), omega: wp.array(dtype=wp.float64),
                    beta: wp.array(dtype=wp.float64), state: wp.array(dtype=int)):
    # beta = (rho_new / rho) (alpha / omega); rho = rho_new
    g = wp.tid()
    if state[1] == 0:
        return
    beta[g] = safe_div(rho_new[g], rho[g]) * safe_div(alpha[g], omega[g])
    rho[g] = rho_new[g]


@wp.kernel(enable_backward=False)
def fill_coeffs(out: wp.array(dtype=wp.float64), value: wp.float64):
    out[wp.tid()] = value


@wp.kernel(enable_backward=False)
def zero_inactive(x: wp.array(dtype=Any), bid: wp.array(dtype=int)):
    # scalars outside every subproblem take no part in the recurrences
    i = wp.tid()
    if bid[i] < 0:
        x[i] = x.dtype(0.0)
