"""Start-up benchmark: ``python -c "import treadle"`` against ``python -c "import warp"`` (warp-lang, when installed).

``python -m benchmarks.startup`` (``--runs N``, ``--json FILE``). Each run starts a fresh interpreter; the two imports
take turns, and the table gives the median wall time and the median CPU time (user + system of the child, less
disturbed by other load on a shared machine) of each, with the ratio ``treadle / warp`` (< 1: Treadle starts
faster). Kernel caches are not touched: this is the cost of the import alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _once(module: str, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(runs: int) -> dict[str, Any]:
    """Median wall and CPU seconds of each import over ``runs`` interleaved runs."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    peers = ["treadle"] + (["warp"] if importlib.util.find_spec("warp") is not None else [])
    samples: dict[str, list[tuple[float, float]]] = {p: [] for p in peers}
    for p in peers:  # one warm-up each: the first start also reads files into the page cache
        _once(p, env)
    for _ in range(runs):
        for p in peers:
            samples[p].append(_once(p, env))
    return {p: {"wall_s": statistics.median(w for w, _ in s), "cpu_s": statistics.median(c for _, c in s)}
            for p, s in samples.items()}


def main() -> None:
    """Print the start-up table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    res = run(args.runs)
    print(f"{'import':<10} {'wall ms':>9} {'CPU ms':>9}")
    for p, r in res.items():
        print(f"{p:<10} {r['wall_s'] * 1e3:9.0f} {r['cpu_s'] * 1e3:9.0f}")
    if "warp" in res:
        t, w = res["treadle"], res["warp"]
        print(f"treadle / warp: wall {t['wall_s'] / w['wall_s']:.2f}x, CPU {t['cpu_s'] / w['cpu_s']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
