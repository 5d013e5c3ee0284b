"""Smoothed particle hydrodynamics: a dam of water collapses in a box (position-based SPH fluid, ``wp.HashGrid``).

Densities are SPH sums (poly6 kernel) over the neighbours within the smoothing length h found by the hash grid.
Each step predicts positions under gravity, rebuilds the grid, and runs a few Jacobi iterations that project the
particles onto the incompressibility constraint rho_i / rho0 = 1 (compression only, spiky-kernel gradients, the
"position based fluids" scheme); velocities are the position change over the step, walls clamp the positions.

Sanity check: the fluid stays nearly incompressible -- the mean density error |rho / rho0 - 1| over the particles
with a full neighbourhood is below 3% -- no particle leaves the box, and the mechanical energy decreases.

Run: ``python -m treadle.examples.sph [--out DIR] [--frames N] [--spacing DX] [--seconds S] [--usd PATH] [--png builtin|opengl]``
(``--usd`` writes the animation as a USD stage through ``warp.render.UsdRenderer``; ``--png opengl`` draws the PNG
frames with ``warp.render.OpenGLRenderer``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import treadle as wp
from treadle.examples import _frames, _image

BOX = (1.2, 0.9, 0.5)  # the box spans [0, BOX[k]] on each axis
REST_DENSITY = 1000.0
GRAVITY = 9.81


@wp.kernel
def density(grid: wp.uint64, x: wp.array(dtype=wp.vec3), rho: wp.array(dtype=float), count: wp.array(dtype=int),
            mass: float, h: float):
    i = wp.tid()
    xi = x[i]
    poly6 = 315.0 / (64.0 * 3.14159265 * wp.pow(h, 9.0))
    s = 0.0
    c = 0
    for j in wp.hash_grid_query(grid, xi, h):
        d = x[j] - xi
        r2 = wp.dot(d, d)
        if r2 < h * h:
            w = h * h - r2
            s += w * w * w
            c += 1
    rho[i] = mass * poly6 * s
    count[i] = c


@wp.func
def spiky_grad(d: wp.vec3, r: float, h: float) -> wp.vec3:
    """Gradient of the spiky kernel with respect to x_i, for d = x_i - x_j at distance r < h."""
    return d * (-45.0 / (3.14159265 * wp.pow(h, 6.0)) * (h - r) * (h - r) / r)


@wp.func
def keep_inside(p: wp.vec3, box: wp.vec3, margin: float) -> wp.vec3:
    q = p
    for k in range(3):
        q[k] = wp.clamp(q[k], margin, box[k] - margin)
    return q


@wp.kernel
def predict(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), xp: wp.array(dtype=wp.vec3), dt: float,
            box: wp.vec3, margin: float):
    i = wp.tid()
    vi = v[i] + wp.vec3(0.0, -9.81, 0.0) * dt
    xp[i] = keep_inside(x[i] + vi * dt, box, margin)


@wp.kernel
def constraint(grid: wp.uint64, xp: wp.array(dtype=wp.vec3), lam: wp.array(dtype=float), mass: float, h: float,
               rest: float, relax: float):
    """The density constraint C_i = rho_i / rho0 - 1 (only compression) and its multiplier lambda_i."""
    i = wp.tid()
    xi = xp[i]
    poly6 = 315.0 / (64.0 * 3.14159265 * wp.pow(h, 9.0))
    rho = 0.0
    grad_i = wp.vec3(0.0)
    sum_sq = 0.0
    for j in wp.hash_grid_query(grid, xi, h):
        d = xi - xp[j]
        r2 = wp.dot(d, d)
        if r2 < h * h:
            w = h * h - r2
            rho += mass * poly6 * w * w * w
            r = wp.sqrt(r2)
            if j != i and r > 1.0e-9:
                g = spiky_grad(d, r, h) * (mass / rest)
                grad_i += g
                sum_sq += wp.dot(g, g)
    c = wp.max(rho / rest - 1.0, 0.0)
    lam[i] = -c / (sum_sq + wp.dot(grad_i, grad_i) + relax)


@wp.kernel
def correct(grid: wp.uint64, xp: wp.array(dtype=wp.vec3), lam: wp.array(dtype=float), xp_out: wp.array(dtype=wp.vec3),
            mass: float, h: float, rest: float, box: wp.vec3, margin: float):
    """Move each particle along the constraint gradients (Jacobi iteration)."""
    i = wp.tid()
    xi = xp[i]
    li = lam[i]
    dx = wp.vec3(0.0)
    for j in wp.hash_grid_query(grid, xi, h):
        if j != i:
            d = xi - xp[j]
            r = wp.length(d)
            if r < h and r > 1.0e-9:
                dx += spiky_grad(d, r, h) * (li + lam[j])
    xp_out[i] = keep_inside(xi + dx * (mass / rest), box, margin)


@wp.kernel
def finish(x: wp.array(dtype=wp.vec3), xp: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), inv_dt: float):
    i = wp.tid()
    v[i] = (xp[i] - x[i]) * inv_dt
    x[i] = xp[i]


def dam(dx: float, rng: np.random.Generator) -> np.ndarray:
    """A block of particles on a lattice of spacing ``dx`` against the x = 0 wall."""
    nx, ny, nz = int(0.4 * BOX[0] / dx), int(0.7 * BOX[1] / dx), int((BOX[2] - dx) / dx)
    g = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), axis=-1).reshape(-1, 3)
    return (g + 0.5) * dx + rng.uniform(-0.01, 0.01, g.shape) * dx


def run(out: str = "out/sph", frames: int = 6, spacing: float = 0.04, seconds: float = 1.2, size: int = 256,
        iterations: int = 4, quiet: bool = False, usd: str | None = None, png: str = "builtin") -> dict[str, float]:
    wp.init()
    rng = np.random.default_rng(5)
    x0 = dam(spacing, rng).astype(np.float32)
    n = len(x0)
    h = 2.0 * spacing
    dt_target = 1.0 / 200.0
    substeps = int(np.ceil(seconds / dt_target / max(frames, 1)))
    dt = seconds / (substeps * max(frames, 1))
    x, xp = wp.array(x0, dtype=wp.vec3), [wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)]
    v = wp.zeros(n, dtype=wp.vec3)
    rho, count, lam = wp.zeros(n, dtype=float), wp.zeros(n, dtype=int), wp.zeros(n, dtype=float)
    grid = wp.HashGrid(64, 64, 64)
    # calibrate the particle mass so that the interior of the initial lattice is exactly at the rest density
    grid.build(x, h)
    wp.launch(density, dim=n, inputs=[grid.id, x, rho, count, 1.0, h])
    full = int(np.percentile(count.numpy(), 90))
    mass = REST_DENSITY / float(np.median(rho.numpy()[count.numpy() >= full]))
    box, margin = wp.vec3(*BOX), 0.5 * spacing
    e0 = GRAVITY * mass * float(np.sum(x0[:, 1].astype(np.float64)))
    view = _image.View(_image.camera(25.0, 30.0), (0.5 * BOX[0], 0.3 * BOX[1], 0.5 * BOX[2]), 1.5, size, size)
    floor_pts = np.array([[0, 0, 0], [BOX[0], 0, 0], [BOX[0], 0, BOX[2]], [0, 0, BOX[2]]], np.float64)
    back_pts = np.array([[0, 0, 0], [BOX[0], 0, 0], [BOX[0], BOX[1], 0], [0, BOX[1], 0]], np.float64)
    scene_pts = np.concatenate([floor_pts, back_pts])
    scene_tris = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7]])
    scene_colors = np.array([[0.75, 0.78, 0.8]] * 2 + [[0.85, 0.86, 0.88]] * 2)
    writer = _frames.Frames(out, view, usd, png, fps=max(frames, 1) / seconds)
    steps, sim_s = 0, 0.0
    errors = []
    for f in range(frames + 1):
        if f > 0:
            t0 = time.perf_counter()
            for _ in range(substeps):
                wp.launch(predict, dim=n, inputs=[x, v, xp[0], dt, box, margin])
                grid.build(xp[0], h)
                cur = 0
                for _ in range(iterations):
                    wp.launch(constraint, dim=n, inputs=[grid.id, xp[cur], lam, mass, h, REST_DENSITY, 100.0])
                    wp.launch(correct, dim=n, inputs=[grid.id, xp[cur], lam, xp[1 - cur], mass, h, REST_DENSITY,
                                                      box, margin])
                    cur = 1 - cur
                wp.launch(finish, dim=n, inputs=[x, xp[cur], v, 1.0 / dt])
                steps += 1
            sim_s += time.perf_counter() - t0
            grid.build(x, h)
            wp.launch(density, dim=n, inputs=[grid.id, x, rho, count, mass, h])
            interior = count.numpy() >= full
            if np.any(interior):
                errors.append(float(np.mean(np.abs(rho.numpy()[interior] / REST_DENSITY - 1.0))))
        speed = np.linalg.norm(v.numpy(), axis=1)
        t = np.clip(speed / 3.0, 0.0, 1.0)[:, None]
        colors = (1.0 - t) * np.array([0.1, 0.35, 0.85]) + t * np.array([0.8, 0.95, 1.0])
        def scene(r, colors=colors):
            r.render_mesh("walls", scene_pts, scene_tris, colors=(0.8, 0.82, 0.84))
            r.render_points("water", x, 0.6 * spacing, colors=colors)

        def picture(colors=colors):
            floor, _ = _image.raycast_mesh(view, scene_pts, scene_tris, scene_colors)
            return _image.splat_spheres(view, x.numpy(), 0.6 * spacing, colors, floor)

        writer.frame(f, scene, picture)
    writer.close()
    xs, vs = x.numpy().astype(np.float64), v.numpy().astype(np.float64)
    e1 = GRAVITY * mass * float(np.sum(xs[:, 1])) + 0.5 * mass * float(np.sum(vs * vs))
    inside = bool(np.all(xs >= 0.0) and np.all(xs <= np.array(BOX)))
    density_error = float(np.mean(errors)) if errors else 0.0
    ok = bool(np.all(np.isfinite(xs))) and inside and density_error < 0.03 and e1 < e0
    summary = {"particles": float(n), "steps": float(steps), "density_error": density_error, "energy_start": e0,
               "energy_end": e1, "sim_seconds": sim_s, "ok": float(ok)}
    if not quiet:
        print(f"sph: {n} particles, h = {h:.3f} m, {steps} steps of {dt * 1e3:.2f} ms x {iterations} density "
              f"iterations ({seconds:.2f} s simulated) in {sim_s:.2f} s; {frames + 1} frames in {out}/")
        print(f"mean density error {density_error * 100:.2f}% (particles with a full neighbourhood, averaged over "
              f"frames); energy {e0:.1f} -> {e1:.1f} J; all inside the box: {inside}")
        print("OK" if ok else "FAILED")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/sph")
    p.add_argument("--frames", type=int, default=6)
    p.add_argument("--spacing", type=float, default=0.04)
    p.add_argument("--seconds", type=float, default=1.2)
    p.add_argument("--size", type=int, default=256)
    _frames.add_arguments(p)
    a = p.parse_args()
    r = run(a.out, a.frames, a.spacing, a.seconds, a.size, usd=a.usd, png=a.png)
    raise SystemExit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
