"""Array-utility benchmarks: ``wp.utils`` sorts, scans and reductions, Treadle against NumPy and warp-lang (CPU).

``python -m benchmarks.utils`` (``--quick`` for fewer repetitions, ``--json FILE`` for the raw figures). The three
take turns within every round of repetitions on the same inputs; the table gives each one's fastest wall time and
the ratios ``peer / treadle`` (> 1: Treadle is faster). In-place sorts get fresh inputs before every timed call
(not timed). The machine may be shared: only same-run ratios mean much.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

N_SORT = 1 << 22  # 4M pairs
N_SCAN = 1 << 24  # 16M values

Timed = tuple[Callable[[], Any], Callable[[], Any]]  # (prepare, run)


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "int_keys": rng.integers(-2**31, 2**31 - 1, N_SORT, dtype=np.int32),
        "float_keys": rng.standard_normal(N_SORT).astype(np.float32),
        "small_keys": rng.integers(0, 1 << 16, N_SORT, dtype=np.int32),
        "scan_f32": rng.random(N_SCAN, dtype=np.float32),
        "scan_i32": rng.integers(0, 100, N_SCAN, dtype=np.int32),
        "runs": np.sort(rng.integers(0, N_SORT // 8, N_SORT, dtype=np.int32)),
        "segments": np.concatenate([[0], np.sort(rng.choice(np.arange(1, N_SORT), 4095, replace=False)),
                                    [N_SORT]]).astype(np.int32),
    }


def library(wp: Any, data: dict[str, np.ndarray]) -> dict[str, Timed]:
    """Workloads of ``wp.utils`` for the library ``wp`` (``treadle`` or ``warp``)."""
    out: dict[str, Timed] = {}
    vals = wp.array(np.arange(2 * N_SORT, dtype=np.int32), device="cpu")
    for key in ("int_keys", "float_keys", "small_keys"):
        host = np.concatenate([data[key], data[key]])
        keys = wp.array(host, device="cpu")

        def prep(keys: Any = keys, host: np.ndarray = host) -> None:
            keys.assign(host)

        out[f"sort_{key}"] = (prep, lambda keys=keys: wp.utils.radix_sort_pairs(keys, vals, N_SORT))
    seg_keys = wp.array(np.concatenate([data["int_keys"], data["int_keys"]]), device="cpu")
    starts = wp.array(data["segments"], device="cpu")
    out["segmented_sort"] = (lambda: seg_keys.assign(np.concatenate([data["int_keys"], data["int_keys"]])),
                             lambda: wp.utils.segmented_sort_pairs(seg_keys, vals, N_SORT, starts))
    for key, inclusive in (("scan_f32", True), ("scan_i32", False)):
        a = wp.array(data[key], device="cpu")
        o = wp.empty_like(a)
        out[key] = (lambda: None, lambda a=a, o=o, inc=inclusive: wp.utils.array_scan(a, o, inclusive=inc))
    s = wp.array(data["scan_f32"], device="cpu")
    out["sum_f32"] = (lambda: None, lambda: wp.utils.array_sum(s))
    out["inner_f32"] = (lambda: None, lambda: wp.utils.array_inner(s, s))
    r = wp.array(data["runs"], device="cpu")
    rv, rl = wp.empty(N_SORT, dtype=wp.int32, device="cpu"), wp.empty(N_SORT, dtype=wp.int32, device="cpu")
    out["rle"] = (lambda: None, lambda: wp.utils.runlength_encode(r, rv, rl))
    for prep, run in out.values():  # compile and warm up
        prep()
        run()
    return out


def numpy_workloads(data: dict[str, np.ndarray]) -> dict[str, Timed]:
    vals = np.arange(N_SORT, dtype=np.int32)

    def sort(keys: np.ndarray) -> Callable[[], Any]:
        def run() -> Any:
            order = np.argsort(keys, kind="stable")
            return keys[order], vals[order]

        return run

    out: dict[str, Timed] = {f"sort_{k}": (lambda: None, sort(data[k])) for k in ("int_keys", "float_keys",
                                                                                   "small_keys")}
    scan_out = {k: np.empty_like(data[k]) for k in ("scan_f32", "scan_i32")}
    out["scan_f32"] = (lambda: None, lambda: np.cumsum(data["scan_f32"], out=scan_out["scan_f32"]))

    def exclusive() -> None:
        o = scan_out["scan_i32"]
        np.cumsum(data["scan_i32"][:-1], out=o[1:])
        o[0] = 0

    out["scan_i32"] = (lambda: None, exclusive)
    out["sum_f32"] = (lambda: None, lambda: np.sum(data["scan_f32"]))
    out["inner_f32"] = (lambda: None, lambda: np.dot(data["scan_f32"], data["scan_f32"]))

    def rle() -> Any:
        x = data["runs"]
        heads = np.flatnonzero(np.concatenate([[True], x[1:] != x[:-1]]))
        return x[heads], np.diff(np.append(heads, len(x)))

    out["rle"] = (lambda: None, rle)
    return out


ROWS = [
    ("sort_int_keys", "radix_sort_pairs, 4M int32 keys (random)"),
    ("sort_float_keys", "radix_sort_pairs, 4M float32 keys"),
    ("sort_small_keys", "radix_sort_pairs, 4M int32 keys < 2^16"),
    ("segmented_sort", "segmented_sort_pairs, 4M int32 keys, 4096 segments"),
    ("scan_f32", "array_scan inclusive, 16M float32"),
    ("scan_i32", "array_scan exclusive, 16M int32"),
    ("sum_f32", "array_sum, 16M float32"),
    ("inner_f32", "array_inner, 16M float32"),
    ("rle", "runlength_encode, 4M int32 (sorted, ~8 per run)"),
]


def interleaved(calls: dict[str, Timed], rounds: int, reps: int) -> dict[str, float]:
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, (prep, run) in calls.items():
            for _ in range(reps):
                prep()
                t0 = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import treadle
    import treadle.utils  # noqa: F401 - loaded on first use otherwise

    data = inputs()
    libs: dict[str, dict[str, Timed]] = {"Treadle": library(treadle, data), "NumPy": numpy_workloads(data)}
    try:
        import warp
        import warp.utils  # noqa: F401

        warp.config.quiet = True
        warp.init()
        libs["Warp CPU"] = library(warp, data)
    except ImportError:
        print("warp-lang is not installed: no Warp column", file=sys.stderr)
    rounds, reps = (2, 2) if a.quick else (5, 3)
    res: dict[str, dict[str, float]] = {lib: {} for lib in libs}
    for key, _ in ROWS:
        calls = {lib: w[key] for lib, w in libs.items() if key in w}
        for lib, t in interleaved(calls, rounds, reps).items():
            res[lib][key] = t
    print("| workload | Treadle ms | NumPy ms | NumPy/Treadle | Warp CPU ms | Warp/Treadle |")
    print("|---|---|---|---|---|---|")
    nan = float("nan")
    for key, label in ROWS:
        t = res["Treadle"][key]
        n = res["NumPy"].get(key, nan)
        w = res.get("Warp CPU", {}).get(key, nan)
        print(f"| {label} | {t * 1e3:.3g} | {n * 1e3:.3g} | {n / t:.2f}x | {w * 1e3:.3g} | {w / t:.2f}x |")
    print(f"{treadle.config.num_threads or 'all'} Treadle threads; NumPy sorts with argsort(kind='stable') + gather.")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
