"""NumPy, Numba and Taichi versions of the anchor workloads (each imported only when available)."""

import math
from typing import Any

import numpy as np


# ------------------------------------------------------------------------------------------------ NumPy
def np_nbody(pos: np.ndarray) -> np.ndarray:
    d = pos[None, :, :] - pos[:, None, :]
    r2 = np.einsum("ijk,ijk->ij", d, d) + np.float32(0.01)
    inv = 1.0 / np.sqrt(r2)
    return np.einsum("ijk,ij->ik", d, inv * inv * inv)


def np_laplacian(u: np.ndarray, out: np.ndarray) -> None:
    out[1:-1, 1:-1, 1:-1] = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
                             + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - np.float32(6.0) * u[1:-1, 1:-1, 1:-1])


# ------------------------------------------------------------------------------------------------ Numba
_numba: Any = None


def numba_kernels() -> Any:
    """Numba versions (``parallel=True``; the thread count is set with ``numba.set_num_threads``)."""
    global _numba
    if _numba is not None:
        return _numba
    import numba
    from numba import njit, prange

    @njit(parallel=True, fastmath=False, cache=False)
    def saxpy(x, y, a):
        for i in prange(x.shape[0]):
            y[i] = a * x[i] + y[i]

    @njit(parallel=True, cache=False)
    def triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @njit(parallel=True, cache=False)
    def nbody(pos, acc):
        n = pos.shape[0]
        for i in prange(n):
            px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]
            ax = np.float32(0.0)
            ay = np.float32(0.0)
            az = np.float32(0.0)
            for j in range(n):
                dx = pos[j, 0] - px
                dy = pos[j, 1] - py
                dz = pos[j, 2] - pz
                r2 = dx * dx + dy * dy + dz * dz + np.float32(0.01)
                inv = np.float32(1.0) / np.sqrt(r2)
                s = inv * inv * inv
                ax += dx * s
                ay += dy * s
                az += dz * s
            acc[i, 0] = ax
            acc[i, 1] = ay
            acc[i, 2] = az

    @njit(parallel=True, cache=False)
    def laplacian(u, out):
        n0, n1, n2 = u.shape
        for i in prange(1, n0 - 1):
            for j in range(1, n1 - 1):
                for k in range(1, n2 - 1):
                    out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k]
                                    + u[i, j, k - 1] + u[i, j, k + 1] - np.float32(6.0) * u[i, j, k])

    @njit(parallel=True, cache=False)
    def total(x):
        s = np.float32(0.0)
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    @njit(cache=False)
    def noop(a, s, n):
        return None

    @njit(cache=False)
    def build_cells(pts, r, dims):
        n = pts.shape[0]
        cell = np.empty(n, np.int64)
        for i in range(n):
            cx = min(max(int(pts[i, 0] / r), 0), dims - 1)
            cy = min(max(int(pts[i, 1] / r), 0), dims - 1)
            cz = min(max(int(pts[i, 2] / r), 0), dims - 1)
            cell[i] = (cz * dims + cy) * dims + cx
        order = np.argsort(cell)
        starts = np.zeros(dims * dims * dims + 1, np.int64)
        for i in range(n):
            starts[cell[i] + 1] += 1
        for c in range(dims * dims * dims):
            starts[c + 1] += starts[c]
        return order, starts

    @njit(parallel=True, cache=False)
    def count_cells(pts, order, starts, r, dims, counts):
        r2 = r * r
        for i in prange(pts.shape[0]):
            px, py, pz = pts[i, 0], pts[i, 1], pts[i, 2]
            cx = min(max(int(px / r), 0), dims - 1)
            cy = min(max(int(py / r), 0), dims - 1)
            cz = min(max(int(pz / r), 0), dims - 1)
            c = 0
            for z in range(max(cz - 1, 0), min(cz + 2, dims)):
                for y in range(max(cy - 1, 0), min(cy + 2, dims)):
                    for x in range(max(cx - 1, 0), min(cx + 2, dims)):
                        cell = (z * dims + y) * dims + x
                        for s in range(starts[cell], starts[cell + 1]):
                            j = order[s]
                            dx = pts[j, 0] - px
                            dy = pts[j, 1] - py
                            dz = pts[j, 2] - pz
                            if dx * dx + dy * dy + dz * dz <= r2:
                                c += 1
            counts[i] = c

    _numba = dict(saxpy=saxpy, triad=triad, nbody=nbody, laplacian=laplacian, total=total, noop=noop,
                  build_cells=build_cells, count_cells=count_cells, set_threads=numba.set_num_threads)
    return _numba


# ------------------------------------------------------------------------------------------------ Taichi
_taichi: Any = None


def taichi_kernels(threads: int) -> Any:
    """Taichi (CPU backend) versions; ``None`` when Taichi is not installed."""
    global _taichi
    if _taichi is not None:
        return _taichi
    try:
        import taichi as ti
    except Exception:  # noqa: BLE001 - optional peer
        return None
    ti.init(arch=ti.cpu, cpu_max_num_threads=threads, offline_cache=False, log_level=ti.ERROR)
    nd = ti.types.ndarray()

    @ti.kernel
    def saxpy(x: nd, y: nd, a: ti.f32):
        for i in x:
            y[i] = a * x[i] + y[i]

    @ti.kernel
    def triad(a: nd, b: nd, c: nd, s: ti.f32):
        for i in a:
            a[i] = b[i] + s * c[i]

    @ti.kernel
    def nbody(pos: nd, acc: nd):
        n = pos.shape[0]
        for i in range(n):
            p = ti.Vector([pos[i, 0], pos[i, 1], pos[i, 2]])
            a = ti.Vector([0.0, 0.0, 0.0])
            for j in range(n):
                d = ti.Vector([pos[j, 0], pos[j, 1], pos[j, 2]]) - p
                r2 = d.dot(d) + 0.01
                inv = 1.0 / ti.sqrt(r2)
                a += d * (inv * inv * inv)
            for c in ti.static(range(3)):
                acc[i, c] = a[c]

    @ti.kernel
    def laplacian(u: nd, out: nd):
        for i, j, k in ti.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1), (1, u.shape[2] - 1)):
            out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1]
                            + u[i, j, k + 1] - 6.0 * u[i, j, k])

    @ti.kernel
    def total(x: nd, out: nd):
        for i in x:
            out[0] += x[i]

    @ti.kernel
    def three_args(a: nd, s: ti.f32, n: ti.i32):
        pass

    @ti.kernel
    def empty():
        pass

    def loss_fields(n: int) -> Any:
        x = ti.field(ti.f32, shape=n, needs_grad=True)
        y = ti.field(ti.f32, shape=n)
        total = ti.field(ti.f32, shape=(), needs_grad=True)

        @ti.kernel
        def loss():
            for i in x:
                d = ti.sin(x[i]) - y[i]
                total[None] += d * d

        return x, y, total, loss

    _taichi = dict(ti=ti, saxpy=saxpy, triad=triad, nbody=nbody, laplacian=laplacian, total=total,
                   three_args=three_args, empty=empty, loss_fields=loss_fields)
    return _taichi


def neighbour_radius(n: int, mean_neighbours: float) -> float:
    """Radius that gives ``mean_neighbours`` on average for ``n`` uniform points in the unit cube."""
    return (3.0 * mean_neighbours / (4.0 * math.pi * n)) ** (1.0 / 3.0)
