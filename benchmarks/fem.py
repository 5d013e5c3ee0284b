"""Finite-element benchmark: a 3D Poisson problem with ``treadle.fem``, against warp-lang's ``warp.fem`` (CPU) and
SciPy (``scipy.sparse`` assembly + ``cg``) in the same run.

``python -m benchmarks.fem`` (``--size N`` for an ``N^3`` hexahedral grid instead of 64^3, ``--degree 1 2``,
``--quick`` for one repetition, ``--json FILE`` for the raw figures, ``--no-warp`` without warp-lang). For each degree (Lagrange on
Gauss-Lobatto-Legendre nodes, float32 throughout):

- *assembly*: the stiffness matrix ``int grad u . grad v`` into a BSR (CSR) matrix, the load vector ``int v``, the
  boundary projector (nodal assembly on the boundary sides) and the Dirichlet projection of the system;
- *solve*: conjugate gradients with a Jacobi preconditioner, a fixed number of iterations (tolerances at zero, so
  every library does the same work).

SciPy assembles the same element matrices (tensor products of the 1D matrices, exact for the uniform grid) as COO
triplets converted to CSR, zeroes the boundary rows and columns, and runs ``scipy.sparse.linalg.cg`` with the same
preconditioner. The figures are each library's fastest wall time over the repetitions; the ratios are
``peer / treadle`` (> 1: Treadle is faster). The machine may be shared: only same-run ratios mean much. The solutions
of the three libraries are compared (relative difference printed).
"""


import argparse
import gc
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CG_ITERS = 100


def fem_workloads(wp: Any, n: int, degree: int) -> tuple[Any, Any, Any]:
    """``(assemble, solve, solution)`` callables for the library ``wp`` (``treadle`` or ``warp``)."""
    fem = importlib.import_module(wp.__name__ + ".fem")
    linear = importlib.import_module(wp.__name__ + ".optim.linear")

    @fem.integrand
    def diffusion(s: fem.Sample, u: fem.Field, v: fem.Field):
        return wp.dot(fem.grad(u, s), fem.grad(v, s))

    @fem.integrand
    def load(s: fem.Sample, v: fem.Field):
        return v(s)

    @fem.integrand
    def boundary_mass(s: fem.Sample, u: fem.Field, v: fem.Field):
        return u(s) * v(s)

    geo = fem.Grid3D(res=wp.vec3i(n))
    space = fem.make_polynomial_space(geo, degree=degree)
    cells = fem.Cells(geo)
    sides = fem.BoundarySides(geo)
    state: dict[str, Any] = {}

    def assemble() -> Any:
        A = fem.integrate(diffusion, fields={"u": fem.make_trial(space, domain=cells),
                                             "v": fem.make_test(space, domain=cells)})
        b = fem.integrate(load, fields={"v": fem.make_test(space, domain=cells)})
        P = fem.integrate(boundary_mass, fields={"u": fem.make_trial(space, domain=sides),
                                                 "v": fem.make_test(space, domain=sides)}, assembly="nodal")
        fem.normalize_dirichlet_projector(P)
        fem.project_linear_system(A, b, P)
        state.update(A=A, b=b)
        return A

    def solve() -> Any:
        x = wp.zeros_like(state["b"])
        M = linear.preconditioner(state["A"], "diag")
        linear.cg(state["A"], state["b"], x, tol=0.0, atol=0.0, maxiter=CG_ITERS, M=M, check_every=CG_ITERS)
        state["x"] = x
        return x

    def solution() -> np.ndarray:
        # by node position, so that node numberings do not matter
        pos = space.node_positions().numpy()
        order = np.lexsort((pos[:, 2], pos[:, 1], pos[:, 0]))
        return state["x"].numpy()[order].astype(np.float64)

    assemble()  # compile and warm up
    solve()
    wp.synchronize()
    return assemble, solve, solution


def _element_1d(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """1D mass and stiffness matrices of Lagrange shape functions on Gauss-Lobatto nodes of ``[0, 1]``."""
    nodes = np.array([0.0, 1.0]) if degree == 1 else np.array([0.0, 0.5, 1.0])
    x, w = np.polynomial.legendre.leggauss(degree + 2)
    x, w = 0.5 * (x + 1.0), 0.5 * w
    vals, ders = [], []
    for i in range(len(nodes)):
        others = np.delete(nodes, i)
        coef = np.poly(others) / np.prod(nodes[i] - others)
        vals.append(np.polyval(coef, x))
        ders.append(np.polyval(np.polyder(coef), x))
    V, G = np.array(vals), np.array(ders)
    return (V * w) @ V.T, (G * w) @ G.T


def scipy_workloads(n: int, degree: int) -> tuple[Any, Any, Any]:
    import scipy.sparse as ssp
    import scipy.sparse.linalg as sla

    M1, K1 = _element_1d(degree)
    h = 1.0 / n
    # element stiffness of a cube of side h: (Kx My Mz + Mx Ky Mz + Mx My Kz) * h^3 / h^2
    Ke = (np.kron(np.kron(K1, M1), M1) + np.kron(np.kron(M1, K1), M1) + np.kron(np.kron(M1, M1), K1)) * h
    Fe = np.kron(np.kron(M1.sum(1), M1.sum(1)), M1.sum(1)) * h**3
    m = degree * n + 1
    k = degree + 1
    loc = np.arange(k)
    la, lb, lc = np.meshgrid(loc, loc, loc, indexing="ij")
    cell = np.arange(n)
    ci, cj, ck = np.meshgrid(cell, cell, cell, indexing="ij")
    # global node (x, y, z) -> x * m^2 + y * m + z, local node order matching np.kron (x slowest)
    gx = degree * ci.reshape(-1, 1) + la.reshape(1, -1)
    gy = degree * cj.reshape(-1, 1) + lb.reshape(1, -1)
    gz = degree * ck.reshape(-1, 1) + lc.reshape(1, -1)
    dofs = (gx * m * m + gy * m + gz).astype(np.int32)
    size = m**3
    g = np.arange(m)
    bx, by, bz = np.meshgrid(g, g, g, indexing="ij")
    boundary = ((bx == 0) | (bx == m - 1) | (by == 0) | (by == m - 1) | (bz == 0) | (bz == m - 1)).reshape(-1)
    state: dict[str, Any] = {}
    ke32, fe32 = Ke.astype(np.float32).reshape(-1), Fe.astype(np.float32)

    def assemble() -> Any:
        rows = np.repeat(dofs, dofs.shape[1], axis=1).reshape(-1)
        cols = np.tile(dofs, (1, dofs.shape[1])).reshape(-1)
        vals = np.tile(ke32, dofs.shape[0])
        A = ssp.coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr()
        b = np.bincount(dofs.reshape(-1), weights=np.tile(fe32, dofs.shape[0]), minlength=size).astype(np.float32)
        # Dirichlet: zero boundary rows and columns, unit diagonal, zero right-hand side
        keep = ssp.diags((~boundary).astype(np.float32))
        A = keep @ A @ keep + ssp.diags(boundary.astype(np.float32))
        b[boundary] = 0.0
        state.update(A=A.tocsr(), b=b)
        return A

    def solve() -> Any:
        A = state["A"]
        inv_d = 1.0 / A.diagonal()
        M = sla.LinearOperator(A.shape, matvec=lambda r: inv_d * r, dtype=np.float32)
        x, _ = sla.cg(A, state["b"], x0=np.zeros(size, dtype=np.float32), rtol=0.0, atol=0.0, maxiter=CG_ITERS,
                      M=M)
        state["x"] = x
        return x

    def solution() -> np.ndarray:
        return state["x"].astype(np.float64)  # node order x, y, z: the lexicographic order of positions

    assemble()
    solve()
    return assemble, solve, solution


def best_time(run: Any, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--degree", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-warp", action="store_true", help="leave warp-lang out (its CPU solve is slow at 64^3)")
    a = ap.parse_args(argv)
    import treadle

    peers: dict[str, Any] = {"Treadle": treadle}
    try:
        if a.no_warp:
            raise ImportError
        import warp

        warp.config.quiet = True
        warp.init()
        peers["Warp CPU"] = warp
    except ImportError:
        print("warp-lang left out or not installed: no Warp column", file=sys.stderr)
    reps = 1 if a.quick else 3
    results: dict[str, Any] = {}
    print(f"3D Poisson, {a.size}^3 hexahedra, float32, Jacobi-preconditioned CG ({CG_ITERS} iterations)")
    print("| degree | step | Treadle s | SciPy s | SciPy/Treadle | Warp CPU s | Warp/Treadle |")
    print("|---|---|---|---|---|---|---|")
    for degree in a.degree:
        work = {name: fem_workloads(lib, a.size, degree) for name, lib in peers.items()}
        work["SciPy"] = scipy_workloads(a.size, degree)
        res: dict[str, dict[str, float]] = {name: {} for name in work}
        for _ in range(1 if a.quick else 2):  # libraries take turns
            for name, (assemble, solve, _sol) in work.items():
                for step, run in (("assembly", assemble), ("solve", solve)):
                    res[name][step] = min(res[name].get(step, float("inf")), best_time(run, reps))
        ref = work["Treadle"][2]()
        diffs = {name: float(np.abs(w[2]() - ref).max() / np.abs(ref).max()) for name, w in work.items()
                 if name != "Treadle"}
        nan = float("nan")
        for step in ("assembly", "solve"):
            t = res["Treadle"][step]
            s = res["SciPy"][step]
            w = res.get("Warp CPU", {}).get(step, nan)
            print(f"| {degree} | {step} | {t:.3g} | {s:.3g} | {s / t:.2f}x | {w:.3g} | {w / t:.2f}x |")
        print(f"| {degree} | solutions vs Treadle | | {diffs['SciPy']:.1e} | | {diffs.get('Warp CPU', nan):.1e} | |")
        results[f"degree_{degree}"] = {"times": res, "solution_rel_diff": diffs}
    print(f"{treadle.config.num_threads or 'all'} Treadle threads (SciPy is single-threaded).")
    if a.json:
        Path(a.json).write_text(json.dumps({"size": a.size, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
