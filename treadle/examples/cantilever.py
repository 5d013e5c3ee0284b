"""Linear elasticity: a cantilever beam clamped at one end bends under a load on the other (``treadle.fem``).

The beam is ``[0, L] x [0, H]`` in plane stress (Young's modulus E, Poisson ratio nu, unit thickness), meshed by a
``fem.Grid2D`` with a vector Lagrange space (degree 2 by default). The weak form is
``int 2 mu eps(u) : eps(v) + lambda div(u) div(v) = int_right t . v`` with the plane-stress Lame coefficients and a
uniform shear traction ``t = (0, -P / H)`` on the free end (total load P). The clamped end ``x = 0`` is a Dirichlet
condition imposed by projection (``fem.project_linear_system``); the system is solved by conjugate gradients.

Sanity check: the tip deflection (mean vertical displacement of the free end) matches beam theory. Euler-Bernoulli
gives ``d_EB = P L^3 / (3 E I)`` with ``I = H^3 / 12``; Timoshenko adds the shear deflection ``P L / (k G A)``
(``k = 5/6``, ``G = E / (2 (1 + nu))``, ``A = H``; under 1% here). The finite-element value is within 2% of
``d_EB`` (the clamped end, fixed in both directions, is a little stiffer than beam theory's).

Run: ``python -m treadle.examples.cantilever [--out DIR] [--nx N] [--ny N] [--degree D] [--size W]`` (writes
``cantilever.png``: the deformed beam, displacement magnified, coloured by the von Mises stress).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

import treadle as wp
import treadle.fem as fem
from treadle.examples import _image
from treadle.optim import linear

LENGTH = 10.0
HEIGHT = 1.0
YOUNG = 1000.0
POISSON = 0.3
LOAD = 1.0


@fem.integrand
def elasticity_form(s: fem.Sample, u: fem.Field, v: fem.Field, mu: float, lam: float):
    return 2.0 * mu * wp.ddot(fem.D(u, s), fem.D(v, s)) + lam * fem.div(u, s) * fem.div(v, s)


@fem.integrand
def end_traction(s: fem.Sample, domain: fem.Domain, v: fem.Field, length: float, traction: wp.vec2):
    # the boundary sides of the free end x = L
    x = domain(s)
    if x[0] > length * 0.999:
        return wp.dot(traction, v(s))
    return 0.0


@fem.integrand
def clamp_projector(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field, length: float):
    x = domain(s)
    if x[0] < length * 0.001:
        return wp.dot(u(s), v(s))
    return 0.0


def beam_theory() -> dict[str, float]:
    """Tip deflections of Euler-Bernoulli and Timoshenko beam theory for the module's beam."""
    inertia = HEIGHT**3 / 12.0
    bending = LOAD * LENGTH**3 / (3.0 * YOUNG * inertia)
    shear_modulus = YOUNG / (2.0 * (1.0 + POISSON))
    shear = LOAD * LENGTH / (5.0 / 6.0 * shear_modulus * HEIGHT)
    return {"euler_bernoulli": bending, "timoshenko": bending + shear}


def solve(nx: int, ny: int, degree: int, quiet: bool = True) -> dict[str, Any]:
    """Assemble and solve the cantilever problem; the displacement at the nodes and the tip deflection."""
    geo = fem.Grid2D(res=wp.vec2i(nx, ny), bounds_lo=wp.vec2(0.0, 0.0), bounds_hi=wp.vec2(LENGTH, HEIGHT))
    space = fem.make_polynomial_space(geo, degree=degree, dtype=wp.vec2)
    mu = YOUNG / (2.0 * (1.0 + POISSON))
    lam = YOUNG * POISSON / (1.0 - POISSON * POISSON)  # plane stress
    t0 = time.perf_counter()
    A = fem.integrate(elasticity_form, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
                      values={"mu": mu, "lam": lam})
    sides = fem.BoundarySides(geo)
    b = fem.integrate(end_traction, fields={"v": fem.make_test(space, domain=sides)},
                      values={"length": LENGTH, "traction": wp.vec2(0.0, -LOAD / HEIGHT)})
    P = fem.integrate(clamp_projector, fields={"u": fem.make_trial(space, domain=sides),
                                               "v": fem.make_test(space, domain=sides)},
                      values={"length": LENGTH}, assembly="nodal")
    fem.project_linear_system(A, b, P)
    t1 = time.perf_counter()
    x = wp.zeros_like(b)
    M = linear.preconditioner(A, "diag")
    _, residual, _ = linear.cg(A, b, x, tol=1e-10, maxiter=20 * space.node_count(), M=M, check_every=50)
    wp.synchronize()
    t2 = time.perf_counter()
    pos = space.node_positions().numpy().astype(np.float64)
    disp = x.numpy().astype(np.float64)
    tip = np.abs(pos[:, 0] - LENGTH) < 1e-4 * LENGTH
    out = {"positions": pos, "displacement": disp, "tip_deflection": float(-disp[tip, 1].mean()),
           "residual": float(residual), "nodes": space.node_count(), "assembly_s": t1 - t0, "solve_s": t2 - t1}
    if not quiet:
        print(f"{nx}x{ny} cells, degree {degree}: {space.node_count()} nodes, assembly {t1 - t0:.3f} s, "
              f"solve {t2 - t1:.3f} s (residual {float(residual):.1e})")
    return out


def _von_mises(pos: np.ndarray, disp: np.ndarray, nx: int, ny: int, degree: int) -> np.ndarray:
    """The von Mises stress at the nodes, from finite differences of the displacement on the node lattice."""
    mx, my = degree * nx + 1, degree * ny + 1
    order = np.lexsort((pos[:, 1], pos[:, 0]))  # x slowest: lattice (mx, my)
    u = disp[order].reshape(mx, my, 2)
    hx, hy = LENGTH / (mx - 1), HEIGHT / (my - 1)
    dux = np.gradient(u[..., 0], hx, hy)
    duy = np.gradient(u[..., 1], hx, hy)
    exx, eyy, exy = dux[0], duy[1], 0.5 * (dux[1] + duy[0])
    mu = YOUNG / (2.0 * (1.0 + POISSON))
    lam = YOUNG * POISSON / (1.0 - POISSON * POISSON)
    sxx = 2 * mu * exx + lam * (exx + eyy)
    syy = 2 * mu * eyy + lam * (exx + eyy)
    sxy = 2 * mu * exy
    vm = np.sqrt(sxx * sxx - sxx * syy + syy * syy + 3.0 * sxy * sxy)
    flat = np.empty(mx * my)
    flat[order] = vm.reshape(-1)
    return flat


def picture(result: dict[str, Any], nx: int, ny: int, degree: int, width: int = 640) -> np.ndarray:
    """The deformed beam (displacement magnified to a tenth of the length) over its outline, coloured by stress."""
    pos, disp = result["positions"], result["displacement"]
    vm = _von_mises(pos, disp, nx, ny, degree)
    scale = 0.1 * LENGTH / max(result["tip_deflection"], 1e-12)
    height = int(width * 0.45)
    img = _image.background(width, height).copy()
    margin = 0.05 * width
    ppu = (width - 2 * margin) / LENGTH  # pixels per unit length
    y0 = height * 0.3

    def to_px(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (margin + p[:, 0] * ppu).astype(int), (y0 + (HEIGHT - p[:, 1]) * ppu).astype(int)

    # the undeformed beam, grey
    gx, gy = np.meshgrid(np.linspace(0, LENGTH, 4 * width), np.linspace(0, HEIGHT, max(8, int(4 * HEIGHT * ppu))))
    px, py = to_px(np.stack([gx.ravel(), gy.ravel()], 1))
    ok = (px >= 0) & (px < width) & (py >= 0) & (py < height)
    img[py[ok], px[ok]] = img[py[ok], px[ok]] * 0.6 + 0.1
    # the deformed beam: the node lattice refined by bilinear interpolation, coloured by the von Mises stress
    mx, my = degree * nx + 1, degree * ny + 1
    order = np.lexsort((pos[:, 1], pos[:, 0]))
    lat = (pos + scale * disp)[order].reshape(mx, my, 2)
    val = vm[order].reshape(mx, my)
    fx, fy = 6 * width, max(16, int(6 * HEIGHT * ppu))
    sx, sy = np.linspace(0, mx - 1, fx), np.linspace(0, my - 1, fy)
    ix, iy = np.minimum(sx.astype(int), mx - 2), np.minimum(sy.astype(int), my - 2)
    ax, ay = (sx - ix)[:, None, None], (sy - iy)[None, :, None]
    ixx, iyy = ix[:, None], iy[None, :]
    pts = ((1 - ax) * (1 - ay) * lat[ixx, iyy] + ax * (1 - ay) * lat[ixx + 1, iyy] + (1 - ax) * ay * lat[ixx, iyy + 1]
           + ax * ay * lat[ixx + 1, iyy + 1])
    v = ((1 - ax[..., 0]) * (1 - ay[..., 0]) * val[ixx, iyy] + ax[..., 0] * (1 - ay[..., 0]) * val[ixx + 1, iyy]
         + (1 - ax[..., 0]) * ay[..., 0] * val[ixx, iyy + 1] + ax[..., 0] * ay[..., 0] * val[ixx + 1, iyy + 1])
    t = np.clip(v / max(np.percentile(vm, 99), 1e-12), 0.0, 1.0).reshape(-1)
    colors = np.stack([t, (1 - np.abs(2 * t - 1)) * 0.8 + 0.15, 1 - t], 1)  # blue (low) to red (high)
    px, py = to_px(pts.reshape(-1, 2))
    ok = (px >= 0) & (px < width) & (py >= 0) & (py < height)
    img[py[ok], px[ok]] = colors[ok]
    return img


def run(out: str | None = None, nx: int = 40, ny: int = 4, degree: int = 2, size: int = 640,
        quiet: bool = False) -> dict[str, Any]:
    """Solve, compare with beam theory, write ``cantilever.png`` into ``out`` (when given); the figures."""
    result = solve(nx, ny, degree, quiet=quiet)
    theory = beam_theory()
    d = result["tip_deflection"]
    figures = {"tip_deflection": d, **theory, "ratio_euler_bernoulli": d / theory["euler_bernoulli"],
               "ratio_timoshenko": d / theory["timoshenko"], "residual": result["residual"],
               "nodes": result["nodes"], "assembly_s": result["assembly_s"], "solve_s": result["solve_s"]}
    if out is not None:
        os.makedirs(out, exist_ok=True)
        figures["png"] = _image.write_png(os.path.join(out, "cantilever.png"), picture(result, nx, ny, degree, size))
    if not quiet:
        print(f"tip deflection {d:.5f}: Euler-Bernoulli {theory['euler_bernoulli']:.5f} (ratio "
              f"{figures['ratio_euler_bernoulli']:.4f}), Timoshenko {theory['timoshenko']:.5f} (ratio "
              f"{figures['ratio_timoshenko']:.4f})")
    return figures


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="cantilever_out")
    ap.add_argument("--nx", type=int, default=40)
    ap.add_argument("--ny", type=int, default=4)
    ap.add_argument("--degree", type=int, default=2)
    ap.add_argument("--size", type=int, default=640)
    a = ap.parse_args(argv)
    r = run(a.out, a.nx, a.ny, a.degree, a.size)
    return 0 if abs(r["ratio_euler_bernoulli"] - 1.0) < 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main())
