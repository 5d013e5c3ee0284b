"""GPU benchmarks: Treadle and warp-lang on the same CUDA device, in the same process, with the same kernel source.

    python -m benchmarks.gpu [--quick] [--json PATH] [--no-warp]

Workloads (kernels from ``benchmarks/kernels.py``, compiled by each library):

- ``copy``: device-to-device copy bandwidth (read + write bytes / time), the device's practical peak;
- ``saxpy``: ``y = a*x + y`` over 2^28 floats, bandwidth (3 x 4 bytes per element) against the H200's measured
  4.3 TB/s copy bandwidth (target: >= 85%), and against this run's own copy bandwidth;
- ``nbody``: all-pairs accelerations (O(n^2)), milliseconds per step;
- ``launch``: host cost of one ``wp.launch`` of a 3-argument kernel over one thread (microseconds; GPU work
  negligible), for ``wp.launch`` and for a recorded launch (``record_cmd=True``);
- ``graph``: replaying a captured graph of 100 small launches versus launching them one by one (microseconds per
  launch inside the graph).

Device times come from CUDA events (median of repeats); host times from ``time.perf_counter``. Without a GPU the
script says so and exits 0 (nothing to measure).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

H200_COPY_TBPS = 4.3  # measured H200 device-to-device copy bandwidth (the reference figure)


def events_ms(lib: Any, dev: Any, fn: Any, reps: int, repeats: int = 5) -> float:
    """Median over ``repeats`` of the mean device time of ``fn`` (ms), measured with CUDA events."""
    fn()
    out = []
    for _ in range(repeats):
        e0, e1 = lib.Event(dev, enable_timing=True), lib.Event(dev, enable_timing=True)
        lib.record_event(e0)
        for _ in range(reps):
            fn()
        lib.record_event(e1)
        out.append(lib.get_event_elapsed_time(e0, e1) / reps)
    return float(statistics.median(out))


def host_us(fn: Any, sync: Any, n: int) -> float:
    """Best of three of the mean host time of ``fn`` over ``n`` calls (microseconds); ``sync`` waits for the device."""
    for _ in range(min(n, 200)):
        fn()
    sync()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
        sync()
    return best


def _host_us(lib: Any, dev: Any, fn: Any, n: int) -> float:
    return host_us(fn, lambda: lib.synchronize_device(dev), n)


def _bandwidth(lib: Any, k: Any, dev: Any, n: int, reps: int) -> dict[str, float]:
    """Copy and saxpy bandwidth over ``n`` floats (the arrays are freed on return)."""
    r: dict[str, float] = {}
    x = lib.full(n, 1.0, dtype=float, device=dev)
    y = lib.full(n, 2.0, dtype=float, device=dev)
    ms = events_ms(lib, dev, lambda: lib.copy(y, x), reps)
    r["copy_GBps"] = 2 * 4 * n / ms / 1e6
    ms = events_ms(lib, dev, lambda: lib.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev), reps)
    r["saxpy_GBps"] = 3 * 4 * n / ms / 1e6
    r["saxpy_vs_copy"] = r["saxpy_GBps"] / r["copy_GBps"]
    r["saxpy_vs_h200"] = r["saxpy_GBps"] / (H200_COPY_TBPS * 1e3)
    y.fill_(2.0)
    lib.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev)
    probe = y.numpy()[:: max(1, n // 1024)]
    r["saxpy_ok"] = float(np.all(probe == 4.0))
    return r


def measure(lib: Any, quick: bool, tiny: bool = False) -> dict[str, float]:
    """Every workload with one library (``treadle`` or ``warp``) on its first CUDA device (``tiny``: dry runs)."""
    from benchmarks.kernels import build

    k = build(lib)
    dev = lib.get_device("cuda:0")
    r: dict[str, float] = {}
    with lib.ScopedDevice(dev):
        r.update(_bandwidth(lib, k, dev, 1 << (16 if tiny else 26 if quick else 28), 10 if quick else 20))
        nb = 256 if tiny else 8192 if quick else 32768
        pos = lib.array(np.random.default_rng(3).random((nb, 3)).astype(np.float32), dtype=lib.vec3, device=dev)
        acc = lib.zeros(nb, dtype=lib.vec3, device=dev)
        r["nbody_n"] = float(nb)
        r["nbody_ms"] = events_ms(lib, dev, lambda: lib.launch(k.nbody, nb, inputs=[pos, acc, nb], device=dev), 3)
        a = lib.zeros(1, dtype=float, device=dev)
        calls = 200 if tiny else 5000 if quick else 20000
        r["launch_us"] = _host_us(lib, dev, lambda: lib.launch(k.three_args, 1, inputs=[a, 1.0, 3], device=dev),
                                  calls)
        cmd = lib.launch(k.three_args, 1, inputs=[a, 1.0, 3], device=dev, record_cmd=True)
        r["recorded_launch_us"] = _host_us(lib, dev, cmd.launch, calls)
        small = lib.zeros(1024, dtype=float, device=dev)
        ones = lib.full(1024, 1.0, dtype=float, device=dev)

        def hundred() -> None:
            for _ in range(100):
                lib.launch(k.saxpy, 1024, inputs=[ones, small, 1.0], device=dev)

        with lib.ScopedCapture(device=dev) as cap:
            hundred()
        graph = cap.graph
        small.zero_()
        lib.capture_launch(graph)
        lib.synchronize_device(dev)
        r["graph_ok"] = float(small.numpy()[0] == 100.0)
        r["graph_us_per_launch"] = events_ms(lib, dev, lambda: lib.capture_launch(graph), 20) * 1e3 / 100
        r["stream_us_per_launch"] = events_ms(lib, dev, hundred, 3) * 1e3 / 100
    return r


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def summary(tr: dict[str, Any], wr: dict[str, Any] | str | None) -> list[str]:
    """The compact table: one line per figure, Treadle next to warp-lang."""
    rows = [("copy_GBps", "D2D copy GB/s"), ("saxpy_GBps", "saxpy GB/s"), ("saxpy_vs_h200", "saxpy / 4.3 TB/s"),
            ("saxpy_vs_copy", "saxpy / copy"), ("nbody_ms", "n-body ms/step"), ("launch_us", "wp.launch us"),
            ("recorded_launch_us", "recorded launch us"), ("graph_us_per_launch", "graph us/launch"),
            ("stream_us_per_launch", "stream us/launch")]
    lines = [f"{'':24s}{'treadle':>12s}{'warp-lang':>12s}"]
    for key, label in rows:
        w = wr.get(key, "-") if isinstance(wr, dict) else "-"
        lines.append(f"{label:24s}{_fmt(tr.get(key, '-')):>12s}{_fmt(w):>12s}")
    target = tr.get("saxpy_vs_h200")
    if isinstance(target, float):
        lines.append(f"saxpy target (>= 85% of 4.3 TB/s): {'MET' if target >= 0.85 else 'NOT MET'} "
                     f"({100 * target:.1f}%)")
    if isinstance(wr, str):
        lines.append(f"warp-lang: {wr}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="smaller problems, fewer repeats")
    ap.add_argument("--json", default=None, help="write the figures here (default: $OUT/gpu_bench.json if $OUT)")
    ap.add_argument("--no-warp", action="store_true", help="skip the warp-lang comparison")
    a = ap.parse_args(argv)
    import treadle

    if not treadle.is_cuda_available():
        from treadle._src.runtime.cuda_driver import why_unavailable

        print(f"benchmarks/gpu.py: no CUDA device ({why_unavailable()}); nothing to measure")
        return 0
    t0 = time.perf_counter()
    tr = measure(treadle, a.quick)
    wr: dict[str, Any] | str | None = None
    if not a.no_warp:
        try:
            import warp

            warp.config.quiet = True
            warp.init()
            wr = measure(warp, a.quick)
        except Exception as e:  # noqa: BLE001 - the comparison is optional
            wr = f"not measured ({type(e).__name__}: {e})"
    dev = treadle.get_device("cuda:0")
    print(f"GPU benchmarks on {dev.name} (sm_{dev.arch}), {time.perf_counter() - t0:.0f} s")
    for line in summary(tr, wr):
        print(line)
    out = a.json or (os.path.join(os.environ["OUT"], "gpu_bench.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).write_text(json.dumps({"treadle": tr, "warp": wr, "device": dev.name, "arch": dev.arch}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
