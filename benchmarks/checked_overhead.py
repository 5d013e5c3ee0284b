"""Cost of checked mode on the saxpy and stencil (3-d Laplacian) benchmarks.

``python benchmarks/checked_overhead.py`` times each kernel built four ways and prints a markdown table:

- ``release``: the optimised build (``-O3``, no checks);
- ``checked``: ``wp.config.mode = "debug"`` as is (``-O1 -g``, bounds and division checks, statement tracking);
- ``checked -O3``: the same checks compiled with ``wp.config.optimization_level = 3`` (the optimised checked mode);
- ``checked -O3 + verify_fp``: also ``wp.config.verify_fp = True`` (NaN/Inf checks on every float store).

Options: ``--n`` (saxpy length), ``--grid`` (stencil edge), ``--threads``, ``--json FILE``. The machine may be
shared and noisy: compare ratios from the same run only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.kernels import build  # noqa: E402
from benchmarks.run import timed  # noqa: E402

VARIANTS = [
    ("release", {"mode": "release", "optimization_level": None, "verify_fp": False}),
    ("checked", {"mode": "debug", "optimization_level": None, "verify_fp": False}),
    ("checked -O3", {"mode": "debug", "optimization_level": 3, "verify_fp": False}),
    ("checked -O3 + verify_fp", {"mode": "debug", "optimization_level": 3, "verify_fp": True}),
]


def measure(n: int, grid: int, budget: float) -> dict[str, dict[str, float]]:
    import treadle as wp

    x = wp.array(np.random.default_rng(0).random(n, dtype=np.float32))
    y = wp.zeros(n, dtype=float)
    u = wp.array(np.random.default_rng(1).random((grid, grid, grid), dtype=np.float32))
    out = wp.zeros((grid, grid, grid), dtype=float)
    inner = (grid - 2,) * 3
    results: dict[str, dict[str, float]] = {}
    ref: dict[str, np.ndarray] = {}
    for name, settings in VARIANTS:
        with wp.config.override(**settings):
            k = build(wp)  # fresh kernels: each variant is its own build (the optimisation level included)
            wp.launch(k.saxpy, dim=n, inputs=[x, y, 2.0])  # compile and warm up
            wp.launch(k.laplacian, dim=inner, inputs=[u, out])
            saxpy = timed(lambda k=k: wp.launch(k.saxpy, dim=n, inputs=[x, y, 2.0]), budget)
            stencil = timed(lambda k=k: wp.launch(k.laplacian, dim=inner, inputs=[u, out]), budget)
            result = out.numpy().copy()
        if "stencil" in ref:  # every build computes the same thing
            np.testing.assert_allclose(result, ref["stencil"], rtol=1e-6)
        ref["stencil"] = result
        results[name] = {"saxpy_ms": saxpy * 1e3, "stencil_ms": stencil * 1e3}
    return results


def table(results: dict[str, dict[str, float]], n: int, grid: int) -> str:
    base = results["release"]
    rows = [f"| build | saxpy n={n} (ms) | x release | stencil {grid}^3 (ms) | x release |",
            "|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        rows.append(f"| {name} | {r['saxpy_ms']:.3f} | {r['saxpy_ms'] / base['saxpy_ms']:.2f} | "
                    f"{r['stencil_ms']:.3f} | {r['stencil_ms'] / base['stencil_ms']:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22, help="saxpy length (default 4M)")
    ap.add_argument("--grid", type=int, default=128, help="stencil grid edge (default 128)")
    ap.add_argument("--threads", type=int, default=0, help="CPU worker threads (0: all cores)")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds per measurement")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    import treadle as wp

    if args.threads:
        wp.config.num_threads = args.threads
    results = measure(args.n, args.grid, args.budget)
    print(table(results, args.n, args.grid))
    if args.json:
        Path(args.json).write_text(json.dumps({"n": args.n, "grid": args.grid, "results": results}, indent=2))
    return results


if __name__ == "__main__":
    main()
