"""A 3-D 7-point Laplacian stencil (heat diffusion steps) checked against NumPy.

Run: ``python -m treadle.examples.stencil [n] [steps]``
"""

from __future__ import annotations

import sys

import numpy as np

import treadle as wp


@wp.kernel
def laplacian_step(u: wp.array3d(dtype=float), out: wp.array3d(dtype=float), k: float):
    i, j, l = wp.tid()
    nx = u.shape[0]
    ny = u.shape[1]
    nz = u.shape[2]
    if i == 0 or j == 0 or l == 0 or i == nx - 1 or j == ny - 1 or l == nz - 1:
        out[i, j, l] = u[i, j, l]
        return
    c = u[i, j, l]
    lap = u[i - 1, j, l] + u[i + 1, j, l] + u[i, j - 1, l] + u[i, j + 1, l] + u[i, j, l - 1] + u[i, j, l + 1] - 6.0 * c
    out[i, j, l] = c + k * lap


def numpy_step(u: np.ndarray, k: float) -> np.ndarray:
    out = u.copy()
    c = u[1:-1, 1:-1, 1:-1]
    lap = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2]
           + u[1:-1, 1:-1, 2:] - 6.0 * c)
    out[1:-1, 1:-1, 1:-1] = c + np.float32(k) * lap
    return out


def run(n: int = 64, steps: int = 10) -> float:
    rng = np.random.default_rng(1)
    u0 = rng.random((n, n, n), dtype=np.float32)
    a, b = wp.array(u0), wp.zeros((n, n, n), dtype=float)
    ref = u0
    for _ in range(steps):
        wp.launch(laplacian_step, dim=(n, n, n), inputs=[a, b, 0.1])
        a, b = b, a
        ref = numpy_step(ref, 0.1)
    err = float(np.max(np.abs(a.numpy() - ref)))
    print(f"stencil {n}^3 x {steps} steps: max |error| vs NumPy = {err:.2e}, mean = {a.numpy().mean():.6f}")
    return err


if __name__ == "__main__":
    run(*(int(x) for x in sys.argv[1:3]))
