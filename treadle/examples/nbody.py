"""Gravitational n-body simulation (all pairs, leapfrog) on the CPU -- the README's demo.

Prints the total energy as the system evolves (a symplectic integrator keeps it nearly constant) and compares the
final positions with a float64 NumPy simulation of the same steps.

Run: ``python -m treadle.examples.nbody [n] [steps]``
"""

from __future__ import annotations

import sys
import time

import numpy as np

import treadle as wp

SOFTENING = 0.05


@wp.kernel
def accelerations(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float), acc: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = pos[i]
    a = wp.vec3(0.0)
    for j in range(pos.shape[0]):
        d = pos[j] - p
        r2 = wp.dot(d, d) + SOFTENING * SOFTENING
        inv = 1.0 / wp.sqrt(r2)
        a += d * (mass[j] * inv * inv * inv)
    acc[i] = a


@wp.kernel
def kick_drift(pos: wp.array(dtype=wp.vec3), vel: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    v = vel[i] + acc[i] * (0.5 * dt)
    vel[i] = v
    pos[i] = pos[i] + v * dt


@wp.kernel
def kick(vel: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    vel[i] = vel[i] + acc[i] * (0.5 * dt)


def energy(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray) -> float:
    p = pos.astype(np.float64)
    kinetic = 0.5 * np.sum(mass * np.sum(vel.astype(np.float64) ** 2, axis=1))
    d = p[None, :, :] - p[:, None, :]
    r = np.sqrt(np.sum(d * d, axis=2) + SOFTENING**2)
    pot = -0.5 * np.sum(mass[:, None] * mass[None, :] / r) + 0.5 * np.sum(mass * mass / SOFTENING)
    return float(kinetic + pot)


def numpy_reference(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray, dt: float, steps: int) -> np.ndarray:
    p, v, m = pos.astype(np.float64), vel.astype(np.float64), mass.astype(np.float64)

    def acc(p: np.ndarray) -> np.ndarray:
        d = p[None, :, :] - p[:, None, :]
        inv = 1.0 / np.sqrt(np.sum(d * d, axis=2) + SOFTENING**2)
        return np.sum(d * (m[None, :] * inv**3)[:, :, None], axis=1)

    a = acc(p)
    for _ in range(steps):
        v = v + a * 0.5 * dt
        p = p + v * dt
        a = acc(p)
        v = v + a * 0.5 * dt
    return p


def run(n: int = 1024, steps: int = 100, dt: float = 0.001, quiet: bool = False) -> dict[str, float]:
    rng = np.random.default_rng(42)
    pos0 = rng.standard_normal((n, 3)).astype(np.float32)
    vel0 = (0.1 * rng.standard_normal((n, 3))).astype(np.float32)
    mass0 = rng.uniform(0.5, 1.5, n).astype(np.float32) / n
    pos, vel, mass = wp.array(pos0, dtype=wp.vec3), wp.array(vel0, dtype=wp.vec3), wp.array(mass0)
    acc = wp.zeros(n, dtype=wp.vec3)
    e0 = energy(pos0, vel0, mass0)
    if not quiet:
        print(f"n-body: {n} bodies, {steps} leapfrog steps of dt={dt} on {wp.get_device()}")
        print(f"{'step':>6} {'energy':>14} {'relative drift':>16}")
        print(f"{0:>6} {e0:>14.8f} {0.0:>16.2e}")
    wp.launch(accelerations, dim=n, inputs=[pos, mass, acc])
    t0 = time.perf_counter()
    for s in range(1, steps + 1):
        wp.launch(kick_drift, dim=n, inputs=[pos, vel, acc, dt])
        wp.launch(accelerations, dim=n, inputs=[pos, mass, acc])
        wp.launch(kick, dim=n, inputs=[vel, acc, dt])
        if not quiet and (s % max(steps // 5, 1) == 0):
            e = energy(pos.numpy(), vel.numpy(), mass0)
            print(f"{s:>6} {e:>14.8f} {abs(e - e0) / abs(e0):>16.2e}")
    elapsed = time.perf_counter() - t0
    ref = numpy_reference(pos0, vel0, mass0, dt, steps)
    err = float(np.max(np.abs(pos.numpy() - ref)))
    drift = abs(energy(pos.numpy(), vel.numpy(), mass0) - e0) / abs(e0)
    if not quiet:
        print(f"max |position - float64 NumPy reference| = {err:.2e}")
        print(f"simulation time {elapsed:.3f} s ({elapsed / steps * 1e3:.2f} ms/step)")
        print("OK" if err < 1e-3 and drift < 1e-3 else "MISMATCH")
    return {"error": err, "drift": drift, "seconds": elapsed}


if __name__ == "__main__":
    args = [int(x) for x in sys.argv[1:3]]
    run(*args)
