"""Discrete element method: a block of spheres falls into a box and piles up, with contacts found by ``wp.HashGrid``.

Every step rebuilds the hash grid over the particle centres, then one kernel thread per particle walks its
neighbours (``for j in wp.hash_grid_query(grid, x, 2 r)``), sums linear spring-dashpot normal forces and Coulomb-capped
viscous friction, adds the floor and the walls, and integrates with semi-implicit Euler into a second buffer.

Sanity check: the pile settles (kinetic energy near zero at the end, total mechanical energy below its start:
contacts only dissipate), no particle leaves the box, and the largest overlap between two particles stays a small
fraction of the radius.

Run: ``python -m treadle.examples.dem [--out DIR] [--frames N] [--count N] [--seconds S] [--usd PATH]
[--png builtin|opengl]`` (``--usd`` writes the animation as a USD stage through ``warp.render.UsdRenderer``;
``--png opengl`` draws the PNG frames with ``warp.render.OpenGLRenderer``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import treadle as wp
from treadle.examples import _frames, _image

RADIUS = 0.035
BOX = 1.0  # half-width of the box in x and z; the floor is y = 0
GRAVITY = 9.81


@wp.func
def contact(dn: float, n: wp.vec3, rel_v: wp.vec3, kn: float, cn: float, ct: float, mu: float) -> wp.vec3:
    """Force on a particle overlapping by ``dn`` > 0 along ``n`` (pointing towards it) with relative velocity."""
    if dn <= 0.0:
        return wp.vec3(0.0)
    vn = wp.dot(rel_v, n)
    fn = wp.max(kn * dn - cn * vn, 0.0)
    vt = rel_v - n * vn
    ft = -vt * ct
    ft_len = wp.length(ft)
    if ft_len > mu * fn:
        ft = ft * (mu * fn / ft_len)
    return n * fn + ft


@wp.kernel
def step(grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), x_out: wp.array(dtype=wp.vec3),
         v_out: wp.array(dtype=wp.vec3), radius: float, kn: float, cn: float, ct: float, mu: float, mass: float,
         box: float, dt: float):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    f = wp.vec3(0.0, -9.81 * mass, 0.0)
    for j in wp.hash_grid_query(grid, xi, 2.0 * radius):
        if j != i:
            d = xi - x[j]
            dist = wp.length(d)
            if dist < 2.0 * radius and dist > 1.0e-9:
                f += contact(2.0 * radius - dist, d / dist, vi - v[j], kn, cn, ct, mu)
    # floor and walls (twice as stiff: a particle meets them alone)
    f += contact(wp.max(radius - xi[1], 0.0), wp.vec3(0.0, 1.0, 0.0), vi, 2.0 * kn, cn, ct, mu)
    for axis in range(3):
        if axis != 1:
            n = wp.vec3(0.0)
            n[axis] = 1.0
            lo = radius - box - xi[axis]
            if lo > 0.0:
                f += contact(lo, n, vi, 2.0 * kn, cn, ct, mu)
            hi = xi[axis] + radius - box
            if hi > 0.0:
                f += contact(hi, -n, vi, 2.0 * kn, cn, ct, mu)
    vn = vi + f * (dt / mass)
    v_out[i] = vn
    x_out[i] = xi + vn * dt


def initial_block(count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` particles on a jittered lattice filling a ball above the floor (it splashes and piles up)."""
    spacing = 2.3 * RADIUS
    ball = 0.5 * spacing * (6.0 * count / np.pi) ** (1.0 / 3.0) + spacing  # enough room for count sites
    g = np.arange(-ball, ball + 1e-9, spacing)
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    pts = pts[np.argsort(np.linalg.norm(pts, axis=1), kind="stable")][:count]
    pts += rng.uniform(-0.1, 0.1, pts.shape) * RADIUS
    return pts + np.array([0.15, 0.6 + ball, -0.1])


def energy(x: np.ndarray, v: np.ndarray, mass: float) -> tuple[float, float]:
    """(kinetic, kinetic + gravitational potential) in float64."""
    ke = 0.5 * mass * float(np.sum(v.astype(np.float64) ** 2))
    return ke, ke + mass * GRAVITY * float(np.sum(x[:, 1].astype(np.float64)))


def max_overlap(x: np.ndarray) -> float:
    """Largest pairwise overlap 2r - |xi - xj| over all pairs (brute force in float64, in row blocks)."""
    p = x.astype(np.float64)
    worst = 0.0
    for lo in range(0, len(p), 256):
        d = np.sqrt(np.sum((p[lo:lo + 256, None, :] - p[None, :, :]) ** 2, axis=-1))
        rows = np.arange(lo, min(lo + 256, len(p)))
        d[rows - lo, rows] = np.inf
        worst = max(worst, 2.0 * RADIUS - float(d.min()))
    return worst


def run(out: str = "out/dem", frames: int = 6, count: int = 2500, seconds: float = 1.5, size: int = 256,
        quiet: bool = False, usd: str | None = None, png: str = "builtin") -> dict[str, float]:
    wp.init()
    rng = np.random.default_rng(3)
    x0 = initial_block(count, rng).astype(np.float32)
    n = len(x0)
    mass = 1.0
    kn = 2.0e5
    cn = 2.0 * 0.3 * np.sqrt(kn * mass / 2.0)  # damping ratio 0.3 for a pair (reduced mass m/2)
    ct, mu = 0.5 * cn, 0.4
    dt = 0.15 * np.pi * np.sqrt(mass / (2.0 * kn))  # about 7 steps per contact duration
    substeps = int(np.ceil(seconds / dt / max(frames, 1)))
    dt = seconds / (substeps * max(frames, 1))
    x = [wp.array(x0, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)]
    v = [wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)]
    grid = wp.HashGrid(64, 64, 64)
    _, e0 = energy(x0, np.zeros_like(x0), mass)
    colors = np.stack([0.25 + 0.6 * (x0[:, 1] - x0[:, 1].min()) / np.ptp(x0[:, 1]), np.full(n, 0.45),
                       0.85 - 0.5 * (x0[:, 1] - x0[:, 1].min()) / np.ptp(x0[:, 1])], axis=1)
    view = _image.View(_image.camera(30.0, 25.0), (0.0, 0.7, 0.0), 2.9, size, size)
    box_pts = np.array([[-BOX, 0, -BOX], [BOX, 0, -BOX], [BOX, 0, BOX], [-BOX, 0, BOX]], np.float64)
    writer = _frames.Frames(out, view, usd, png, fps=max(frames, 1) / seconds)
    cur, steps, sim_s = 0, 0, 0.0
    for f in range(frames + 1):
        if f > 0:
            t0 = time.perf_counter()
            for _ in range(substeps):
                grid.build(x[cur], RADIUS * 2.0)
                wp.launch(step, dim=n, inputs=[grid.id, x[cur], v[cur], x[1 - cur], v[1 - cur], RADIUS, kn, cn, ct,
                                               mu, mass, BOX, dt])
                cur = 1 - cur
                steps += 1
            sim_s += time.perf_counter() - t0
        pts = x[cur]

        def scene(r, pts=pts):
            r.render_box("floor", (0.0, -0.01, 0.0), (0.0, 0.0, 0.0, 1.0), (BOX, 0.01, BOX), color=(0.75, 0.78, 0.8))
            r.render_points("particles", pts, RADIUS, colors=colors)

        def picture(pts=pts):
            floor, _ = _image.raycast_mesh(view, box_pts, np.array([[0, 2, 1], [0, 3, 2]]), (0.75, 0.78, 0.8))
            return _image.splat_spheres(view, pts.numpy(), RADIUS, colors, floor)

        writer.frame(f, scene, picture)
    writer.close()
    xs, vs = x[cur].numpy(), v[cur].numpy()
    ke, e1 = energy(xs, vs, mass)
    overlap = max_overlap(xs) / RADIUS
    inside = bool(np.all(np.abs(xs[:, [0, 2]]) < BOX + 0.1 * RADIUS) and np.all(xs[:, 1] > 0.9 * RADIUS))
    ok = bool(np.all(np.isfinite(xs))) and inside and e1 < e0 and ke < 1e-2 * (e0 - e1) and overlap < 0.05
    summary = {"particles": float(n), "steps": float(steps), "energy_start": e0, "energy_end": e1,
               "kinetic_end": ke, "max_overlap": overlap, "sim_seconds": sim_s, "ok": float(ok)}
    if not quiet:
        print(f"dem: {n} particles, {steps} steps of {dt * 1e3:.3f} ms ({seconds:.2f} s simulated, hash grid rebuilt "
              f"every step) in {sim_s:.2f} s; {frames + 1} frames in {out}/")
        print(f"energy {e0:.3f} -> {e1:.3f} J (kinetic at the end {ke:.2e} J), max overlap {overlap * 100:.2f}% of "
              f"the radius, all inside the box: {inside}")
        print("OK" if ok else "FAILED")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/dem")
    p.add_argument("--frames", type=int, default=6)
    p.add_argument("--count", type=int, default=2500)
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--size", type=int, default=256)
    _frames.add_arguments(p)
    a = p.parse_args()
    r = run(a.out, a.frames, a.count, a.seconds, a.size, usd=a.usd, png=a.png)
    raise SystemExit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
