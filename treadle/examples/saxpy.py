"""``y = a*x + y`` over 16M floats on the CPU, checked against NumPy.

Run: ``python -m treadle.examples.saxpy [n]``
"""

from __future__ import annotations

import sys
import time

import numpy as np

import treadle as wp


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def run(n: int = 1 << 24) -> float:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(n, dtype=np.float32)
    ys = rng.standard_normal(n, dtype=np.float32)
    x, y = wp.array(xs), wp.array(ys)
    wp.launch(saxpy, dim=n, inputs=[x, y, 2.0])
    err = float(np.max(np.abs(y.numpy() - (2.0 * xs + ys))))
    t0 = time.perf_counter()
    wp.launch(saxpy, dim=n, inputs=[x, y, 2.0])
    dt = time.perf_counter() - t0
    print(f"saxpy n={n}: max |error| vs NumPy = {err:.2e}, time {dt * 1e3:.2f} ms ({3 * 4 * n / dt / 1e9:.1f} GB/s)")
    return err


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 24)
