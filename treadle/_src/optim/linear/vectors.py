"""Vector kernels of the iterative solvers, one thread per tile (see :mod:`.dot`).

Vectors are flat arrays of scalars; coefficients are float64 arrays with one entry per subproblem, read once per
tile. ``state[1]`` is the solver's "still iterating" flag: every kernel returns at once when it is 0, so that an
iteration launched after convergence (a device-side loop, a replayed graph) leaves the solution unchanged. Kernels
that end with ``partial`` also write each tile's sum of squares of the vector they update (the first level of a
dot product), saving a pass over memory.
"""

from __future__ import annotations

from typing import Any

import treadle as wp

from .dot import add_compensated, tile_index


@wp.func
def safe_div(num: wp.float64, den: wp.float64) -> wp.float64:
    """``num / den``, or 0 when ``den`` is 0 (a converged or broken-down subproblem)."""
    if den == wp.float64(0.0):
        return wp.float64(0.0)
    return num / den


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
def fill_coeffs(out: wp.array(dtype=wp.float64), value: wp.float64):
    out[wp.tid()] = value


@wp.kernel(enable_backward=False)
def copy_tiles(src: wp.array(dtype=Any), dst: wp.array(dtype=Any), tile_start: wp.array(dtype=int),
               tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int), ntiles: int, spread: int):
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    for i in range(tile_start[k], tile_end[k]):
        dst[i] = src[i]


@wp.kernel(enable_backward=False)
def dot2(a: wp.array(dtype=Any), b: wp.array(dtype=Any), c: wp.array(dtype=Any), d: wp.array(dtype=Any),
         tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int),
         ntiles: int, spread: int, out_ab: wp.array(dtype=wp.float64), out_cd: wp.array(dtype=wp.float64)):
    # tile partials of a.b and c.d in one pass
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    s = wp.vec2d(0.0, 0.0)
    t = wp.vec2d(0.0, 0.0)
    for i in range(tile_start[k], tile_end[k]):
        s = add_compensated(s, wp.float64(a[i]) * wp.float64(b[i]))
        t = add_compensated(t, wp.float64(c[i]) * wp.float64(d[i]))
    out_ab[k] = s[0] + s[1]
    out_cd[k] = t[0] + t[1]


@wp.kernel(enable_backward=False)
def update_xr(x: wp.array(dtype=Any), p: wp.array(dtype=Any), r: wp.array(dtype=Any), q: wp.array(dtype=Any),
              num: wp.array(dtype=wp.float64), den: wp.array(dtype=wp.float64), sign: float,
              tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int),
              ntiles: int, spread: int, state: wp.array(dtype=int), partial: wp.array(dtype=wp.float64)):
    # a = sign * num / den; x += a p; r -= a q; partial = |r|^2 over the tile
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    a = x.dtype(wp.float64(sign) * safe_div(num[g], den[g]))
    s = wp.vec2d(0.0, 0.0)
    for i in range(tile_start[k], tile_end[k]):
        x[i] = x[i] + a * p[i]
        ri = r[i] - a * q[i]
        r[i] = ri
        s = add_compensated(s, wp.float64(ri) * wp.float64(ri))
    partial[k] = s[0] + s[1]


@wp.kernel(enable_backward=False)
def update_x(x: wp.array(dtype=Any), p: wp.array(dtype=Any), num: wp.array(dtype=wp.float64),
             den: wp.array(dtype=wp.float64), sign: float, tile_start: wp.array(dtype=int),
             tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int), ntiles: int, spread: int,
             state: wp.array(dtype=int)):
    # x += sign * num / den * p
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    a = x.dtype(wp.float64(sign) * safe_div(num[g], den[g]))
    for i in range(tile_start[k], tile_end[k]):
        x[i] = x[i] + a * p[i]


@wp.kernel(enable_backward=False)
def direction(z: wp.array(dtype=Any), p: wp.array(dtype=Any), num: wp.array(dtype=wp.float64),
              den: wp.array(dtype=wp.float64), tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int),
              tile_batch: wp.array(dtype=int), ntiles: int, spread: int, state: wp.array(dtype=int)):
    # p = z + (num / den) p
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    b = p.dtype(safe_div(num[g], den[g]))
    for i in range(tile_start[k], tile_end[k]):
        p[i] = z[i] + b * p[i]


@wp.kernel(enable_backward=False)
def direction2(z: wp.array(dtype=Any), p: wp.array(dtype=Any), az: wp.array(dtype=Any), q: wp.array(dtype=Any),
               num: wp.array(dtype=wp.float64), den: wp.array(dtype=wp.float64), tile_start: wp.array(dtype=int),
               tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int), ntiles: int, spread: int,
               state: wp.array(dtype=int)):
    # b = num / den; p = z + b p; q = az + b q
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    b = p.dtype(safe_div(num[g], den[g]))
    for i in range(tile_start[k], tile_end[k]):
        p[i] = z[i] + b * p[i]
        q[i] = az[i] + b * q[i]


@wp.kernel(enable_backward=False)
def bicgstab_direction(r: wp.array(dtype=Any), v: wp.array(dtype=Any), p: wp.array(dtype=Any),
                       rho_new: wp.array(dtype=wp.float64), rho: wp.array(dtype=wp.float64),
                       alpha: wp.array(dtype=wp.float64), omega: wp.array(dtype=wp.float64),
                       tile_start: wp.array(dtype=int), tile_end: wp.array(dtype=int),
                       tile_batch: wp.array(dtype=int), ntiles: int, spread: int, state: wp.array(dtype=int)):
    # p = r + beta (p - omega v), beta = (rho_new / rho) (alpha / omega)
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    b = p.dtype(safe_div(rho_new[g], rho[g]) * safe_div(alpha[g], omega[g]))
    w = p.dtype(omega[g])
    for i in range(tile_start[k], tile_end[k]):
        p[i] = r[i] + b * (p[i] - w * v[i])


@wp.kernel(enable_backward=False)
def bicgstab_finish(x: wp.array(dtype=Any), z: wp.array(dtype=Any), s: wp.array(dtype=Any),
                    t: wp.array(dtype=Any), r: wp.array(dtype=Any), at: wp.array(dtype=Any), left: int,
                    omega: wp.array(dtype=wp.float64), tile_start: wp.array(dtype=int),
                    tile_end: wp.array(dtype=int), tile_batch: wp.array(dtype=int), ntiles: int, spread: int,
                    state: wp.array(dtype=int), partial: wp.array(dtype=wp.float64)):
    # x += omega z; s -= omega t; on the left also r -= omega at; partial = |r|^2 (|s|^2 when s is the residual)
    k = tile_index(wp.tid(), spread, ntiles)
    if k < 0:
        return
    if state[1] == 0:
        return
    g = tile_batch[k]
    w = x.dtype(omega[g])
    acc = wp.vec2d(0.0, 0.0)
    for i in range(tile_start[k], tile_end[k]):
        x[i] = x[i] + w * z[i]
        si = s[i] - w * t[i]
        s[i] = si
        if left != 0:
            ri = r[i] - w * at[i]
            r[i] = ri
            acc = add_compensated(acc, wp.float64(ri) * wp.float64(ri))
        else:
            acc = add_compensated(acc, wp.float64(si) * wp.float64(si))
    partial[k] = acc[0] + acc[1]


@wp.kernel(enable_backward=False)
def zero_outside(x: wp.array(dtype=Any), lo: int, hi: int):
    # scalars outside every subproblem (past the last bound) take no part in the recurrences
    i = wp.tid()
    if i < lo or i >= hi:
        x[i] = x.dtype(0.0)
