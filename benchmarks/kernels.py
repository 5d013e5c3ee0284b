"""The anchor workloads as kernels, written once against the Warp API: ``build(treadle)`` and ``build(warp)``.

Both libraries compile the very same source, so the comparison is between code generators and runtimes, not
between two programs.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def build(wp: Any) -> SimpleNamespace:
    """The benchmark kernels compiled by the library ``wp`` (``treadle`` or ``warp``)."""

    @wp.kernel
    def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def triad(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = b[i] + s * c[i]

    @wp.kernel
    def nbody(pos: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), n: int):
        i = wp.tid()
        p = pos[i]
        a = wp.vec3(0.0, 0.0, 0.0)
        for j in range(n):
            d = pos[j] - p
            r2 = wp.dot(d, d) + 0.01
            inv = 1.0 / wp.sqrt(r2)
            a = a + d * (inv * inv * inv)
        acc[i] = a

    @wp.kernel
    def laplacian(u: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
        # launched over the interior: (n-2)^3 threads
        i, j, k = wp.tid()
        i += 1
        j += 1
        k += 1
        out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1]
                        + u[i, j, k + 1] - 6.0 * u[i, j, k])

    @wp.kernel
    def atomic_sum(x: wp.array(dtype=float), total: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(total, 0, x[i])

    @wp.kernel
    def loss(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        d = wp.sin(x[i]) - y[i]
        wp.atomic_add(out, 0, d * d)

    @wp.kernel
    def empty():
        i = wp.tid()  # noqa: F841

    @wp.kernel
    def three_args(a: wp.array(dtype=float), s: float, n: int):
        i = wp.tid()  # noqa: F841

    @wp.kernel
    def neighbours(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float, counts: wp.array(dtype=int)):
        i = wp.tid()
        p = pts[i]
        c = int(0)  # noqa: UP018 - a dynamic variable in Warp's rules
        q = wp.hash_grid_query(grid, p, r)
        idx = int(0)  # noqa: UP018
        while wp.hash_grid_query_next(q, idx):
            if wp.length(pts[idx] - p) <= r:
                c += 1
        counts[i] = c

    return SimpleNamespace(saxpy=saxpy, triad=triad, nbody=nbody, laplacian=laplacian, atomic_sum=atomic_sum,
                           loss=loss, empty=empty, three_args=three_args, neighbours=neighbours)
