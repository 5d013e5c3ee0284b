"""Representative kernels whose printed IR is checked in (``tests/compiler/golden/``, see ``test_golden_ir.py``).

Together they cover loops (``for`` with a run-time range, ``while``, ``break``), branches and early returns,
structs, multi-dimensional arrays and views, atomics, a ``@func`` call and vector/matrix operations.
"""

from __future__ import annotations

import treadle as wp


@wp.kernel
def loops(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = 0.0
    for j in range(n):
        s += x[j] * wp.sin(x[i])
    k = 0
    while k < n:
        if x[k] > 1.0:
            break
        s = s * 0.5
        k += 1
    out[i] = s


@wp.kernel
def branches(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    if v < 0.0:
        out[i] = -v
        return
    elif v > 10.0:
        v = wp.sqrt(v)
    else:
        v = wp.where(v > 1.0, v * v, v)
    out[i] = v


@wp.struct
class Particle:
    pos: wp.vec3
    mass: float


@wp.kernel
def structs(ps: wp.array(dtype=Particle), gravity: wp.vec3, out: wp.array(dtype=Particle)):
    i = wp.tid()
    p = ps[i]
    p.pos = p.pos + gravity * p.mass
    p.mass = p.mass * 2.0
    out[i] = p


@wp.kernel
def arrays(a: wp.array2d(dtype=float), b: wp.array(dtype=float)):
    i, j = wp.tid()
    row = a[i]
    b[i * a.shape[1] + j] = row[j] * 2.0 + a[i, j]


@wp.kernel
def atomics(x: wp.array(dtype=float), total: wp.array(dtype=float), biggest: wp.array(dtype=float),
            counts: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i] * x[i])
    wp.atomic_max(biggest, 0, x[i])
    counts[i % 4] += 1


@wp.func
def smooth_abs(v: float, eps: float) -> float:
    if v * v < eps:
        return 0.5 * v * v / eps
    return wp.abs(v)


@wp.kernel
def func_call(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = smooth_abs(x[i], 0.01) + smooth_abs(2.0 * x[i], 0.1)


@wp.kernel
def vec_mat(m: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3),
            lengths: wp.array(dtype=float)):
    i = wp.tid()
    w = m[i] * v[i]
    n = wp.normalize(wp.cross(w, v[i]))
    n[1] = wp.dot(w, v[i])
    out[i] = wp.transpose(m[i]) * n
    lengths[i] = wp.length(w) + n.x


KERNELS = {k.key if hasattr(k, "key") else k.__name__: k
           for k in (loops, branches, structs, arrays, atomics, func_call, vec_mat)}
