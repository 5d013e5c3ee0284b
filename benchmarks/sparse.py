"""Sparse-matrix and linear-solver benchmarks: ``treadle.sparse`` / ``treadle.optim.linear`` against SciPy and
warp-lang (CPU).

``python -m benchmarks.sparse`` (``--quick`` for fewer repetitions, ``--size N`` for an ``N^3`` grid instead of
64^3, ``--json FILE`` for the raw figures). Workloads, on the 7-point Laplacian of an ``N^3`` grid (float64):

- ``bsr_mv`` with 1x1 blocks (CSR) and with 3x3 blocks (the Laplacian times a fixed SPD 3x3 block);
- ``bsr_mm`` (``A @ A``) with 1x1 and 3x3 blocks;
- assembly of a CSR matrix from 1M triplets (``N^3`` rows, duplicates summed);
- 100 iterations of unpreconditioned conjugate gradients on the Poisson matrix (tolerances at zero, so every
  library runs the same number of iterations);
- construction of the FSAI preconditioner of the Poisson matrix (default options; SciPy has none).

The libraries take turns within every round of repetitions on the same inputs; the table gives each one's fastest
wall time and the ratios ``peer / treadle`` (> 1: Treadle is faster). The machine may be shared: only same-run
ratios mean much.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

N_TRIPLETS = 1_000_000
CG_ITERS = 100
BLOCK3 = np.array([[2.0, 0.5, 0.0], [0.5, 2.0, 0.5], [0.0, 0.5, 2.0]])


def laplacian(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Triplets of the 7-point Laplacian of an ``n^3`` grid (Dirichlet boundaries): rows, cols, values, size."""
    idx = np.arange(n**3, dtype=np.int32).reshape(n, n, n)
    rows = [idx.ravel()]
    cols = [idx.ravel()]
    vals = [np.full(n**3, 6.0)]
    for axis in range(3):
        for shift in (-1, 1):
            src = [slice(None)] * 3
            dst = [slice(None)] * 3
            src[axis] = slice(max(0, -shift), n - max(0, shift))
            dst[axis] = slice(max(0, shift), n - max(0, -shift))
            rows.append(idx[tuple(src)].ravel())
            cols.append(idx[tuple(dst)].ravel())
            vals.append(np.full(rows[-1].shape[0], -1.0))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), n**3


def random_triplets(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    rows = rng.integers(0, size, N_TRIPLETS, dtype=np.int32)
    offsets = np.array([0, 1, -1, 64, -64, 4096, -4096], dtype=np.int32)
    cols = np.clip(rows + offsets[rng.integers(0, 7, N_TRIPLETS)], 0, size - 1).astype(np.int32)
    return rows, cols, rng.random(N_TRIPLETS)


Timed = Callable[[], Any]


def library(wp: Any, tri: tuple[np.ndarray, ...], size: int, rand: tuple[np.ndarray, ...]) -> dict[str, Timed]:
    """Workloads for the library ``wp`` (``treadle`` or ``warp``)."""
    import importlib

    sparse = importlib.import_module(wp.__name__ + ".sparse")
    linear = importlib.import_module(wp.__name__ + ".optim.linear")
    r, c, v, n = tri
    rows, cols = wp.array(r, dtype=wp.int32, device="cpu"), wp.array(c, dtype=wp.int32, device="cpu")
    A1 = sparse.bsr_from_triplets(n, n, rows, cols, wp.array(v, dtype=wp.float64, device="cpu"))
    A1.nnz_sync()
    v3 = (v[:, None, None] * BLOCK3[None]).astype(np.float64)
    A3 = sparse.bsr_from_triplets(n, n, rows, cols, wp.array(v3, dtype=wp.float64, device="cpu"))
    A3.nnz_sync()
    x1 = wp.array(np.ones(n), dtype=wp.float64, device="cpu")
    y1 = wp.zeros(n, dtype=wp.float64, device="cpu")
    x3 = wp.array(np.ones((n, 3)), dtype=wp.vec3d, device="cpu")
    y3 = wp.zeros(n, dtype=wp.vec3d, device="cpu")
    rr = wp.array(rand[0], dtype=wp.int32, device="cpu")
    rc = wp.array(rand[1], dtype=wp.int32, device="cpu")
    rv = wp.array(rand[2], dtype=wp.float64, device="cpu")
    assembled = sparse.bsr_zeros(n, n, wp.float64, device="cpu")
    b = wp.array(np.ones(n), dtype=wp.float64, device="cpu")
    x = wp.zeros(n, dtype=wp.float64, device="cpu")

    def run_cg() -> Any:
        x.zero_()
        return linear.cg(A1, b, x, tol=0.0, atol=0.0, maxiter=CG_ITERS, check_every=CG_ITERS)

    mm1 = sparse.bsr_mm_work_arrays()
    mm3 = sparse.bsr_mm_work_arrays()
    out: dict[str, Timed] = {
        "mv_1x1": lambda: sparse.bsr_mv(A1, x1, y1),
        "mv_3x3": lambda: sparse.bsr_mv(A3, x3, y3),
        "mm_1x1": lambda: sparse.bsr_mm(A1, A1, work_arrays=mm1),
        "mm_3x3": lambda: sparse.bsr_mm(A3, A3, work_arrays=mm3),
        "assembly": lambda: sparse.bsr_set_from_triplets(assembled, rr, rc, rv, prune_numerical_zeros=False),
        "cg": run_cg,
    }
    if hasattr(linear, "FSAI"):
        out["fsai"] = lambda: linear.FSAI(A1)
    for run in out.values():  # compile and warm up
        run()
    wp.synchronize()
    return out


def scipy_workloads(tri: tuple[np.ndarray, ...], rand: tuple[np.ndarray, ...]) -> dict[str, Timed]:
    import scipy.sparse as ssp
    import scipy.sparse.linalg as sla

    r, c, v, n = tri
    A1 = ssp.csr_matrix((v, (r, c)), shape=(n, n))
    A3 = ssp.bsr_matrix(ssp.kron(A1, BLOCK3).tocsr(), blocksize=(3, 3))
    x1, x3 = np.ones(n), np.ones(3 * n)
    b = np.ones(n)

    def run_cg() -> Any:
        return sla.cg(A1, b, x0=np.zeros(n), rtol=0.0, atol=0.0, maxiter=CG_ITERS)

    return {
        "mv_1x1": lambda: A1 @ x1,
        "mv_3x3": lambda: A3 @ x3,
        "mm_1x1": lambda: A1 @ A1,
        "mm_3x3": lambda: A3 @ A3,
        "assembly": lambda: ssp.coo_matrix((rand[2], (rand[0], rand[1])), shape=(n, n)).tocsr(),
        "cg": run_cg,
    }


ROWS = [
    ("mv_1x1", "bsr_mv, 1x1 blocks (CSR)"),
    ("mv_3x3", "bsr_mv, 3x3 blocks"),
    ("mm_1x1", "bsr_mm A @ A, 1x1 blocks"),
    ("mm_3x3", "bsr_mm A @ A, 3x3 blocks"),
    ("assembly", "CSR from 1M triplets (duplicates summed)"),
    ("cg", f"cg, {CG_ITERS} iterations, Poisson (CSR)"),
    ("fsai", "FSAI setup, Poisson (CSR), default options"),
]


def timed(calls: dict[str, Timed], rounds: int, reps: int) -> dict[str, float]:
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, run in calls.items():
            for _ in range(reps):
                gc.collect()
                t0 = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import treadle
    import treadle.optim.linear  # noqa: F401
    import treadle.sparse  # noqa: F401

    tri = laplacian(a.size)
    rand = random_triplets(tri[3])
    libs: dict[str, dict[str, Timed]] = {"Treadle": library(treadle, tri, tri[3], rand),
                                         "SciPy": scipy_workloads(tri, rand)}
    try:
        import warp
        import warp.optim.linear  # noqa: F401
        import warp.sparse  # noqa: F401

        warp.config.quiet = True
        warp.init()
        libs["Warp CPU"] = library(warp, tri, tri[3], rand)
    except ImportError:
        print("warp-lang is not installed: no Warp column", file=sys.stderr)
    rounds, reps = (1, 2) if a.quick else (3, 3)
    res: dict[str, dict[str, float]] = {lib: {} for lib in libs}
    for key, _ in ROWS:
        calls = {lib: w[key] for lib, w in libs.items() if key in w}
        for lib, t in timed(calls, rounds, reps).items():
            res[lib][key] = t
    n = a.size
    print(f"grid {n}^3 ({n**3} rows), float64")
    print("| workload | Treadle ms | SciPy ms | SciPy/Treadle | Warp CPU ms | Warp/Treadle |")
    print("|---|---|---|---|---|---|")
    nan = float("nan")
    for key, label in ROWS:
        t = res["Treadle"].get(key, nan)
        s = res["SciPy"].get(key, nan)
        w = res.get("Warp CPU", {}).get(key, nan)
        print(f"| {label} | {t * 1e3:.3g} | {s * 1e3:.3g} | {s / t:.2f}x | {w * 1e3:.3g} | {w / t:.2f}x |")
    print(f"{treadle.config.num_threads or 'all'} Treadle threads (SciPy is single-threaded).")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
