"""Tile linear-algebra benchmarks: Treadle's tiled kernels against NumPy (OpenBLAS / LAPACK / pocketfft) on the
same batch and warp-lang's CPU running the same kernel source.

``python -m benchmarks.tiles`` (``--quick`` for fewer repetitions, ``--batch B`` for the batch size, ``--json FILE``
for the raw figures). Workloads, one tile problem per block of a ``launch_tiled`` grid of ``B`` blocks:

- ``tile_matmul`` of 64x64 by 64x64 tiles, float32 and float64 (NumPy: ``np.matmul`` on the stacked batch);
- ``tile_cholesky`` of 32x32 SPD tiles, float64 (NumPy: ``np.linalg.cholesky`` on the stacked batch);
- ``tile_fft`` of 8 rows of 256 complex values, float32 (NumPy: ``np.fft.fft`` along the last axis).

The libraries take turns within every round of repetitions on the same inputs; the table gives each one's fastest
wall time (a launch plus synchronize, inputs already on the device) and the ratios ``peer / treadle`` (> 1: Treadle
is faster). The machine may be shared: only same-run ratios mean much.
"""

# No `from __future__ import annotations`: the kernels' annotations name a closure variable (the dtype), which
# must be evaluated when the kernel is defined.
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

Timed = Callable[[], Any]
MM = 64
CHOL = 32
FFT_ROWS, FFT_N = 8, 256


def kernels(wp: Any) -> dict[str, Any]:
    """The benchmark kernels written against one library's API (Treadle or warp-lang)."""

    def matmul_kernel(dtype: Any) -> Any:
        @wp.kernel
        def tile_mm(a: wp.array3d(dtype=dtype), b: wp.array3d(dtype=dtype), c: wp.array3d(dtype=dtype)):
            i, _lane = wp.tid()
            ta = wp.tile_load(a[i], shape=(MM, MM))
            tb = wp.tile_load(b[i], shape=(MM, MM))
            wp.tile_store(c[i], wp.tile_matmul(ta, tb))

        return tile_mm

    @wp.kernel
    def tile_chol(a: wp.array3d(dtype=wp.float64), out: wp.array3d(dtype=wp.float64)):
        i, _lane = wp.tid()
        t = wp.tile_load(a[i], shape=(CHOL, CHOL))
        wp.tile_store(out[i], wp.tile_cholesky(t))

    @wp.kernel
    def tile_fft_k(x: wp.array3d(dtype=wp.vec2f)):
        i, _lane = wp.tid()
        t = wp.tile_load(x[i], shape=(FFT_ROWS, FFT_N))
        wp.tile_fft(t)
        wp.tile_store(x[i], t)

    return {"mm32": matmul_kernel(wp.float32), "mm64": matmul_kernel(wp.float64), "chol": tile_chol,
            "fft": tile_fft_k}


def inputs(batch: int) -> dict[str, tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(1)
    a32 = rng.uniform(-1, 1, (batch, MM, MM)).astype(np.float32)
    b32 = rng.uniform(-1, 1, (batch, MM, MM)).astype(np.float32)
    x = rng.uniform(-1, 1, (batch, CHOL, CHOL))
    spd = x @ x.transpose(0, 2, 1) + CHOL * np.eye(CHOL)
    sig = rng.uniform(-1, 1, (batch, FFT_ROWS, FFT_N, 2)).astype(np.float32)
    return {"mm32": (a32, b32), "mm64": (a32.astype(np.float64), b32.astype(np.float64)), "chol": (spd,),
            "fft": (sig,)}


def library(wp: Any, data: dict[str, tuple[np.ndarray, ...]], batch: int) -> dict[str, Timed]:
    """Timed launches of one library, checked once against NumPy first."""
    ks = kernels(wp)
    dev = "cpu"
    calls: dict[str, Timed] = {}

    def launch(kernel: Any, args: list[Any]) -> Timed:
        def run() -> None:
            wp.launch_tiled(kernel, dim=[batch], inputs=args, block_dim=64, device=dev)
            wp.synchronize_device(dev)

        return run

    for key in ("mm32", "mm64"):
        a, b = data[key]
        aa, bb = wp.array(a, device=dev), wp.array(b, device=dev)
        cc = wp.zeros(a.shape, dtype=wp.float32 if a.dtype == np.float32 else wp.float64, device=dev)
        calls[key] = launch(ks[key], [aa, bb, cc])
        calls[key]()
        tol = 1e-3 if a.dtype == np.float32 else 1e-10
        assert np.allclose(cc.numpy(), a @ b, atol=tol), f"{key}: wrong product"
    (spd,) = data["chol"]
    aa = wp.array(spd, dtype=wp.float64, device=dev)
    ll = wp.zeros(spd.shape, dtype=wp.float64, device=dev)
    calls["chol"] = launch(ks["chol"], [aa, ll])
    calls["chol"]()
    assert np.allclose(ll.numpy(), np.linalg.cholesky(spd), atol=1e-10), "chol: wrong factor"
    (sig,) = data["fft"]
    xx = wp.array(sig.copy(), dtype=wp.vec2f, device=dev)
    calls["fft_check"] = launch(ks["fft"], [xx])
    calls["fft_check"]()
    got = xx.numpy()
    want = np.fft.fft(sig[..., 0] + 1j * sig[..., 1], axis=-1)
    assert np.allclose(got[..., 0] + 1j * got[..., 1], want, atol=1e-3), "fft: wrong transform"
    calls["fft"] = calls.pop("fft_check")  # in place: timing transforms the buffer again, which is fine
    return calls


def numpy_workloads(data: dict[str, tuple[np.ndarray, ...]]) -> dict[str, Timed]:
    out32 = np.empty_like(data["mm32"][0])
    out64 = np.empty_like(data["mm64"][0])
    sig = data["fft"][0]
    z = (sig[..., 0] + 1j * sig[..., 1]).astype(np.complex64)
    return {
        "mm32": lambda: np.matmul(*data["mm32"], out=out32),
        "mm64": lambda: np.matmul(*data["mm64"], out=out64),
        "chol": lambda: np.linalg.cholesky(data["chol"][0]),
        "fft": lambda: np.fft.fft(z, axis=-1),
    }


ROWS = [
    ("mm32", f"tile_matmul {MM}x{MM}x{MM}, float32"),
    ("mm64", f"tile_matmul {MM}x{MM}x{MM}, float64"),
    ("chol", f"tile_cholesky {CHOL}x{CHOL}, float64"),
    ("fft", f"tile_fft {FFT_ROWS}x{FFT_N}, vec2f"),
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
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import treadle

    data = inputs(a.batch)
    libs: dict[str, dict[str, Timed]] = {"Treadle": library(treadle, data, a.batch), "NumPy": numpy_workloads(data)}
    try:
        import warp

        warp.config.quiet = True
        warp.init()
        libs["Warp CPU"] = library(warp, data, a.batch)
    except ImportError:
        print("warp-lang is not installed: no Warp column", file=sys.stderr)
    rounds, reps = (1, 2) if a.quick else (3, 5)
    res: dict[str, dict[str, float]] = {lib: {} for lib in libs}
    for key, _ in ROWS:
        calls = {lib: w[key] for lib, w in libs.items() if key in w}
        for lib, t in timed(calls, rounds, reps).items():
            res[lib][key] = t
    print(f"batch {a.batch}, one tile problem per block")
    print("| workload | Treadle ms | NumPy ms | NumPy/Treadle | Warp CPU ms | Warp/Treadle |")
    print("|---|---|---|---|---|---|")
    nan = float("nan")
    for key, label in ROWS:
        t = res["Treadle"].get(key, nan)
        s = res["NumPy"].get(key, nan)
        w = res.get("Warp CPU", {}).get(key, nan)
        print(f"| {label} | {t * 1e3:.3g} | {s * 1e3:.3g} | {s / t:.2f}x | {w * 1e3:.3g} | {w / t:.2f}x |")
    print(f"{treadle.config.num_threads or 'all'} Treadle threads; NumPy's BLAS uses its own thread count.")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
