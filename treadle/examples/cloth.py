"""A square of cloth (a spring-mass grid) drapes over a sphere.

Each particle is joined to its neighbours by structural, shear and bending springs (with damping along the
spring). One kernel thread per particle gathers its spring forces, integrates with semi-implicit Euler (double
buffered, so the step is deterministic) and resolves contact with the sphere: a particle inside the sphere's
collision shell is moved to its surface and loses its inward normal velocity and some tangential velocity (friction).

Sanity check: no particle ends up inside the sphere (max penetration ~ 0) and the structural springs stay close to
their rest length (max strain a few percent).

Run: ``python -m treadle.examples.cloth [--out DIR] [--frames N] [--res N] [--seconds S] [--usd PATH] [--png builtin|opengl]``
(``--usd`` writes the animation as a USD stage through ``warp.render.UsdRenderer``; ``--png opengl`` draws the PNG
frames with ``warp.render.OpenGLRenderer``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import treadle as wp
from treadle.examples import _frames, _image

SPHERE_R = 0.5
THICKNESS = 0.015


@wp.func
def spring_force(xi: wp.vec3, vi: wp.vec3, xj: wp.vec3, vj: wp.vec3, rest: float, k: float, kd: float) -> wp.vec3:
    d = xj - xi
    length = wp.length(d)
    if length < 1.0e-9:
        return wp.vec3(0.0)
    n = d / length
    return n * (k * (length - rest) + kd * wp.dot(vj - vi, n))


@wp.kernel
def step(x: wp.array2d(dtype=wp.vec3), v: wp.array2d(dtype=wp.vec3), x_out: wp.array2d(dtype=wp.vec3),
         v_out: wp.array2d(dtype=wp.vec3), spacing: float, k: float, kd: float, mass: float, dt: float,
         center: wp.vec3, radius: float, thickness: float, friction: float):
    i, j = wp.tid()
    n = x.shape[0]
    xi = x[i, j]
    vi = v[i, j]
    f = wp.vec3(0.0, -9.81 * mass, 0.0) - vi * (0.02 * mass)
    # 12 neighbours: structural (|di| + |dj| = 1), shear (diagonal), bending (two apart along a row or column)
    for di in range(-2, 3):
        for dj in range(-2, 3):
            ai = wp.abs(di)
            aj = wp.abs(dj)
            use = (ai + aj == 1) or (ai == 1 and aj == 1) or (ai + aj == 2 and ai * aj == 0)
            ni = i + di
            nj = j + dj
            if use and ni >= 0 and ni < n and nj >= 0 and nj < n:
                rest = spacing * wp.sqrt(float(di * di + dj * dj))
                f += spring_force(xi, vi, x[ni, nj], v[ni, nj], rest, k, kd)
    vn = vi + f * (dt / mass)
    xn = xi + vn * dt
    d = xn - center
    dist = wp.length(d)
    shell = radius + thickness
    if dist < shell:
        nrm = d / dist
        xn = center + nrm * shell
        vdot = wp.dot(vn, nrm)
        if vdot < 0.0:
            vn = vn - nrm * vdot
        vn = vn * (1.0 - friction)
    x_out[i, j] = xn
    v_out[i, j] = vn


def cloth_triangles(n: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a, b, c, d = i * n + j, i * n + j + 1, (i + 1) * n + j, (i + 1) * n + j + 1
    return np.stack([np.stack([a, c, b], -1), np.stack([b, c, d], -1)], axis=2).reshape(-1, 3).astype(np.int32)


def structural_strain(x: np.ndarray, spacing: float) -> float:
    du = np.linalg.norm(x[1:, :] - x[:-1, :], axis=-1)
    dv = np.linalg.norm(x[:, 1:] - x[:, :-1], axis=-1)
    return float(max(np.max(np.abs(du - spacing)), np.max(np.abs(dv - spacing))) / spacing)


def run(out: str = "out/cloth", frames: int = 6, res: int = 40, seconds: float = 1.6, size: int = 256,
        quiet: bool = False, usd: str | None = None, png: str = "builtin") -> dict[str, float]:
    wp.init()
    width = 1.8
    spacing = width / (res - 1)
    mass = 0.3 * width * width / (res * res)
    k = 4000.0 * spacing / 0.045  # same stretch stiffness per unit length at every resolution
    kd = 0.02 * np.sqrt(k * mass) * 10.0
    dt = 0.25 * np.sqrt(mass / k)
    substeps = int(np.ceil(seconds / dt / max(frames, 1)))
    dt = seconds / (substeps * max(frames, 1))
    g = np.linspace(-0.5 * width, 0.5 * width, res)
    gx, gz = np.meshgrid(g, g, indexing="ij")
    x0 = np.stack([gx + 0.01, np.full_like(gx, 0.75), gz - 0.01], axis=-1).astype(np.float32)
    x = [wp.array(x0, dtype=wp.vec3), wp.zeros((res, res), dtype=wp.vec3)]
    v = [wp.zeros((res, res), dtype=wp.vec3), wp.zeros((res, res), dtype=wp.vec3)]
    center = wp.vec3(0.0, 0.0, 0.0)
    tris = cloth_triangles(res)
    checker = ((np.arange(len(tris)) // 2) // (res - 1) // 3 + (np.arange(len(tris)) // 2) % (res - 1) // 3) % 2
    cloth_colors = np.where(checker[:, None] == 0, [0.85, 0.25, 0.2], [0.95, 0.85, 0.75])
    sphere_pts, sphere_tris = _image.sphere_mesh((0.0, 0.0, 0.0), SPHERE_R, 20)
    ground_colors = np.tile([0.6, 0.65, 0.7], (len(sphere_tris), 1))
    view = _image.View(_image.camera(25.0, 25.0), (0.0, 0.0, 0.0), 2.6, size, size)
    writer = _frames.Frames(out, view, usd, png, fps=max(frames, 1) / seconds)
    cur, steps, sim_s = 0, 0, 0.0
    max_pen = 0.0
    for f in range(frames + 1):
        if f > 0:
            t0 = time.perf_counter()
            for _ in range(substeps):
                wp.launch(step, dim=(res, res), inputs=[x[cur], v[cur], x[1 - cur], v[1 - cur], spacing, k, kd,
                                                        mass, dt, center, SPHERE_R, THICKNESS, 0.01])
                cur = 1 - cur
                steps += 1
            sim_s += time.perf_counter() - t0
        pos = x[cur].numpy().astype(np.float64)
        max_pen = max(max_pen, float(np.max(SPHERE_R - np.linalg.norm(pos, axis=-1))))
        def scene(r, pos=pos):
            r.render_sphere("sphere", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), SPHERE_R, color=(0.6, 0.65, 0.7))
            r.render_mesh("cloth", pos.reshape(-1, 3), tris, colors=(0.85, 0.25, 0.2))

        def picture(pos=pos):
            pts = np.concatenate([pos.reshape(-1, 3), sphere_pts])
            all_tris = np.concatenate([tris, sphere_tris + res * res])
            return _image.raycast_mesh(view, pts, all_tris, np.concatenate([cloth_colors, ground_colors]))[0]

        writer.frame(f, scene, picture)
    writer.close()
    pos = x[cur].numpy().astype(np.float64)
    strain = structural_strain(pos, spacing)
    penetration = max(max_pen, 0.0)
    speed = float(np.max(np.linalg.norm(v[cur].numpy(), axis=-1)))
    finite = bool(np.all(np.isfinite(pos)))
    ok = finite and penetration < 1e-3 * SPHERE_R and strain < 0.1
    summary = {"particles": float(res * res), "steps": float(steps), "max_penetration": penetration,
               "max_strain": strain, "max_speed": speed, "sim_seconds": sim_s, "ok": float(ok)}
    if not quiet:
        print(f"cloth: {res}x{res} particles, {steps} steps of {dt * 1e3:.3f} ms ({seconds:.2f} s simulated) in "
              f"{sim_s:.2f} s; {frames + 1} frames in {out}/")
        print(f"max penetration into the sphere {penetration:.2e} (radius {SPHERE_R}), max structural strain "
              f"{strain * 100:.2f}%, max speed at the end {speed:.3f} m/s")
        print("OK" if ok else "FAILED")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/cloth")
    p.add_argument("--frames", type=int, default=6)
    p.add_argument("--res", type=int, default=40)
    p.add_argument("--seconds", type=float, default=1.6)
    p.add_argument("--size", type=int, default=256)
    _frames.add_arguments(p)
    a = p.parse_args()
    r = run(a.out, a.frames, a.res, a.seconds, a.size, usd=a.usd, png=a.png)
    raise SystemExit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
