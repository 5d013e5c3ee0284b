"""Treadle's CPU backend against the peers of ``reference/anchors.md``, all in one run.

``python -m benchmarks`` (or ``python benchmarks/run.py``) runs every workload with Treadle, warp-lang (CPU),
NumPy, Numba (1 and 2 threads) and Taichi -- whichever are installed -- and prints a markdown table of medians with
the ratio ``warp / treadle`` (higher is better for Treadle) and the target it is checked against. The machine is
shared and noisy, so only same-run ratios mean anything. Options: ``--only saxpy,nbody`` runs a subset,
``--quick`` uses fewer repetitions, ``--json FILE`` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import peers  # noqa: E402
from benchmarks.kernels import build  # noqa: E402

PEERS = ["Treadle", "Warp CPU", "NumPy", "Numba 1T", "Numba 2T", "Taichi"]
QUICK = False


class Skip(Exception):
    """A peer that does not apply to a workload (or is not installed)."""


def timed(fn: Callable[[], Any], budget: float = 1.0, min_reps: int = 3, max_reps: int = 15) -> float:
    """Median seconds of ``fn()`` after two warm-up calls (repetitions within a time budget)."""
    fn()
    fn()
    times: list[float] = []
    t_end = time.perf_counter() + (budget * (0.3 if QUICK else 1.0))
    while len(times) < min_reps or (len(times) < max_reps and time.perf_counter() < t_end):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_call(fn: Callable[[], Any], calls: int = 2000, batches: int = 9) -> float:
    """Median over batches of the mean seconds per call (for microsecond-scale calls)."""
    for _ in range(200):
        fn()
    means = []
    for _ in range(batches if not QUICK else 3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        means.append((time.perf_counter() - t0) / calls)
    return statistics.median(means)


class Libs:
    """The libraries under test, imported and initialised once."""

    def __init__(self) -> None:
        import treadle

        self.tw = treadle
        self.tk = build(treadle)
        self.threads = treadle._src.runtime.threadpool.num_threads()
        try:
            import warp

            warp.config.quiet = True
            warp.init()
            self.wp: Any = warp
            self.wk: Any = build(warp)
        except Exception:  # noqa: BLE001 - optional peer
            self.wp = self.wk = None
        try:
            self.nb: Any = peers.numba_kernels()
        except Exception:  # noqa: BLE001
            self.nb = None
        self.ti = peers.taichi_kernels(self.threads)

    def numba(self, threads: int) -> Any:
        if self.nb is None:
            raise Skip
        self.nb["set_threads"](min(threads, self.threads))
        return self.nb

    def taichi(self) -> Any:
        if self.ti is None:
            raise Skip
        return self.ti

    def warp(self) -> tuple[Any, Any]:
        if self.wp is None:
            raise Skip
        return self.wp, self.wk


# ------------------------------------------------------------------------------------------------ workloads
def w_saxpy(L: Libs, peer: str) -> float:
    n = 16 * 1024 * 1024
    x_np = np.random.default_rng(0).random(n, dtype=np.float32)
    y_np = np.ones(n, np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        x, y = m.array(x_np, dtype=float), m.array(y_np, dtype=float)
        return timed(lambda: m.launch(k.saxpy, n, inputs=[x, y, 2.0]))
    if peer == "NumPy":
        return timed(lambda: np.add(y_np, np.float32(2.0) * x_np, out=y_np))
    if peer.startswith("Numba"):
        nb = L.numba(int(peer[6]))
        return timed(lambda: nb["saxpy"](x_np, y_np, np.float32(2.0)))
    ti = L.taichi()
    return timed(lambda: (ti["saxpy"](x_np, y_np, 2.0), ti["ti"].sync()))


def w_triad_bwd(L: Libs, peer: str) -> float:
    """The reverse sweep of the triad ``a = b + s*c`` over 4M elements: one adjoint launch (NumPy: the same sums)."""
    n = 4 * 1024 * 1024
    rng = np.random.default_rng(5)
    b_np, c_np = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        a = m.zeros(n, dtype=float, requires_grad=True)
        b, c = (m.array(v, dtype=float, requires_grad=True) for v in (b_np, c_np))
        a.grad.fill_(1.0)
        return timed(lambda: m.launch(k.triad, n, inputs=[a, b, c, 3.0], adj_inputs=[a.grad, b.grad, c.grad, 0.0],
                                      adjoint=True))
    if peer == "NumPy":
        ga, gb, gc = np.ones(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)
        tmp = np.empty_like(ga)

        def run() -> None:
            np.add(gb, ga, out=gb)
            np.multiply(ga, np.float32(3.0), out=tmp)
            np.add(gc, tmp, out=gc)

        return timed(run)
    raise Skip


def w_triad(L: Libs, peer: str) -> float:
    n = 64 * 1024 * 1024  # 256 MB per array
    b_np = np.ones(n, np.float32)
    c_np = np.full(n, 2.0, np.float32)
    a_np = np.zeros(n, np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        a, b, c = (m.array(v, dtype=float) for v in (a_np, b_np, c_np))
        t = timed(lambda: m.launch(k.triad, n, inputs=[a, b, c, 3.0]), budget=1.5)
    elif peer == "NumPy":
        tmp = np.empty_like(a_np)

        def run() -> None:
            np.multiply(c_np, np.float32(3.0), out=tmp)
            np.add(b_np, tmp, out=a_np)

        t = timed(run, budget=1.5)
    elif peer.startswith("Numba"):
        nb = L.numba(int(peer[6]))
        t = timed(lambda: nb["triad"](a_np, b_np, c_np, np.float32(3.0)), budget=1.5)
    else:
        ti = L.taichi()
        t = timed(lambda: (ti["triad"](a_np, b_np, c_np, 3.0), ti["ti"].sync()), budget=1.5)
    return 3 * n * 4 / t / 1e9  # GB/s (STREAM counting: 3 arrays)


def w_nbody(L: Libs, peer: str) -> float:
    n = 4096
    pos_np = np.random.default_rng(1).random((n, 3), dtype=np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        pos, acc = m.array(pos_np, dtype=m.vec3), m.zeros(n, dtype=m.vec3)
        return timed(lambda: m.launch(k.nbody, n, inputs=[pos, acc, n]))
    if peer == "NumPy":
        return timed(lambda: peers.np_nbody(pos_np), min_reps=2, max_reps=3)
    acc_np = np.zeros_like(pos_np)
    if peer.startswith("Numba"):
        nb = L.numba(int(peer[6]))
        return timed(lambda: nb["nbody"](pos_np, acc_np))
    ti = L.taichi()
    return timed(lambda: (ti["nbody"](pos_np, acc_np), ti["ti"].sync()))


def w_laplacian(L: Libs, peer: str) -> float:
    n = 256
    u_np = np.random.default_rng(2).random((n, n, n), dtype=np.float32)
    out_np = np.zeros_like(u_np)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        u, out = m.array(u_np, dtype=float), m.zeros((n, n, n), dtype=float)
        return timed(lambda: m.launch(k.laplacian, (n - 2, n - 2, n - 2), inputs=[u, out]))
    if peer == "NumPy":
        return timed(lambda: peers.np_laplacian(u_np, out_np))
    if peer.startswith("Numba"):
        nb = L.numba(int(peer[6]))
        return timed(lambda: nb["laplacian"](u_np, out_np))
    ti = L.taichi()
    return timed(lambda: (ti["laplacian"](u_np, out_np), ti["ti"].sync()))


def w_atomic_sum(L: Libs, peer: str) -> float:
    n = 16 * 1024 * 1024
    x_np = np.random.default_rng(3).random(n, dtype=np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        x, total = m.array(x_np, dtype=float), m.zeros(1, dtype=float)

        def run() -> None:
            total.zero_()
            m.launch(k.atomic_sum, n, inputs=[x, total])

        t = timed(run)
        got, exact = float(total.numpy()[0]), float(np.sum(x_np, dtype=np.float64))
        if abs(got - exact) > n * np.finfo(np.float32).eps * exact:
            raise AssertionError(f"{peer} atomic sum {got} is not within rounding of {exact}")
        return t
    if peer == "NumPy":
        return timed(lambda: np.sum(x_np))
    if peer.startswith("Numba"):
        nb = L.numba(int(peer[6]))
        return timed(lambda: nb["total"](x_np))
    ti = L.taichi()
    out = np.zeros(1, np.float32)
    return timed(lambda: (ti["total"](x_np, out), ti["ti"].sync()))


def _loss_fns(L: Libs, peer: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The 1M-element loss of a peer: (forward, forward+backward) callables."""
    n = 1024 * 1024
    rng = np.random.default_rng(4)
    x_np, y_np = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        x = m.array(x_np, dtype=float, requires_grad=True)
        y = m.array(y_np, dtype=float)
        out = m.zeros(1, dtype=float, requires_grad=True)

        def fwd() -> None:
            m.launch(k.loss, n, inputs=[x, y, out])

        def fwd_bwd() -> None:
            tape = m.Tape()
            with tape:
                m.launch(k.loss, n, inputs=[x, y, out])
            tape.backward(loss=out)
            tape.zero()

        return fwd, fwd_bwd
    if peer == "NumPy":
        def np_fwd() -> Any:
            return float(np.sum((np.sin(x_np) - y_np) ** 2))

        def np_fwd_bwd() -> Any:
            s = np.sin(x_np)
            d = s - y_np
            return float(np.sum(d * d)), 2.0 * d * np.cos(x_np)

        return np_fwd, np_fwd_bwd
    if peer.startswith("Numba"):
        raise Skip
    ti = L.taichi()
    tix = ti["ti"]
    tx, ty, total, loss = ti["loss_fields"](n)
    tx.from_numpy(x_np)
    ty.from_numpy(y_np)

    def ti_fwd() -> None:
        loss()
        tix.sync()

    def ti_fwd_bwd() -> None:
        with tix.ad.Tape(loss=total):
            loss()
        tix.sync()

    return ti_fwd, ti_fwd_bwd


def w_loss_fwd(L: Libs, peer: str) -> float:
    return timed(_loss_fns(L, peer)[0])


def w_loss_bwd(L: Libs, peer: str) -> float:
    return timed(_loss_fns(L, peer)[1])


def w_loss_ratio(L: Libs, peer: str) -> float:
    """(forward+backward) / forward of the loss, the median of ratios measured in adjacent pairs.

    The two medians of the rows above are taken seconds apart, so on a shared machine a load change between them
    moves their quotient; timing a forward and a forward+backward back to back, many times, and taking the median of
    the per-pair ratios cancels most of it. Every peer is measured the same way.
    """
    fwd, fwd_bwd = _loss_fns(L, peer)
    for _ in range(2):
        fwd()
        fwd_bwd()
    ratios: list[float] = []
    t_end = time.perf_counter() + (2.0 * (0.3 if QUICK else 1.0))
    while len(ratios) < 7 or (len(ratios) < 41 and time.perf_counter() < t_end):
        t0 = time.perf_counter()
        fwd()
        t1 = time.perf_counter()
        fwd_bwd()
        t2 = time.perf_counter()
        ratios.append((t2 - t1) / (t1 - t0))
    return statistics.median(ratios)


def w_launch_empty(L: Libs, peer: str) -> float:
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        return per_call(lambda: m.launch(k.empty, 1))
    if peer.startswith("Numba"):
        if peer == "Numba 2T":
            raise Skip
        nb = L.numba(1)
        a = np.zeros(1, np.float32)
        return per_call(lambda: nb["noop"](a, 1.0, 1))
    if peer == "Taichi":
        ti = L.taichi()
        return per_call(lambda: ti["empty"](), calls=500)
    raise Skip


def w_launch_3arg(L: Libs, peer: str) -> float:
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        a = m.zeros(16, dtype=float)
        return per_call(lambda: m.launch(k.three_args, 1, inputs=[a, 2.0, 3]))
    if peer == "Numba 1T":
        nb = L.numba(1)
        a = np.zeros(16, np.float32)
        return per_call(lambda: nb["noop"](a, 2.0, 3))
    if peer == "Taichi":
        ti = L.taichi()
        a = np.zeros(16, np.float32)
        return per_call(lambda: ti["three_args"](a, 2.0, 3), calls=500)
    raise Skip


def w_launch_recorded(L: Libs, peer: str) -> float:
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        a = m.zeros(16, dtype=float)
        cmd = m.launch(k.three_args, 1, inputs=[a, 2.0, 3], record_cmd=True)
        return per_call(cmd.launch)
    raise Skip


def w_graph(L: Libs, peer: str) -> float:
    """Per launch, 100 launches of the 3-argument kernel captured in a graph (Treadle only: Warp captures on CUDA)."""
    if peer != "Treadle":
        raise Skip
    m, k = L.tw, L.tk
    a = m.zeros(16, dtype=float)
    with m.ScopedCapture() as cap:
        for _ in range(100):
            m.launch(k.three_args, 1, inputs=[a, 2.0, 3])
    return per_call(lambda: m.capture_launch(cap.graph), calls=200) / 100


def _compile(peer: str, n: int) -> tuple[float, float, float | None]:
    from benchmarks.compile_time import cold_warm

    name = {"Treadle": "treadle", "Warp CPU": "warp", "Numba 1T": "numba", "Taichi": "taichi"}.get(peer)
    if name is None or (name == "taichi" and n != 5):
        raise Skip
    if name == "warp" and L_GLOBAL.wp is None or name == "taichi" and L_GLOBAL.ti is None:
        raise Skip
    key = (name, n)
    if key not in _COMPILE_CACHE:
        _COMPILE_CACHE[key] = cold_warm(name, n)
    return _COMPILE_CACHE[key]


_COMPILE_CACHE: dict[Any, tuple[float, float, float | None]] = {}
L_GLOBAL: Any = None


def w_compile_cold(L: Libs, peer: str) -> float:
    return _compile(peer, 5)[0]


def w_compile_warm(L: Libs, peer: str) -> float:
    return _compile(peer, 5)[1]


def w_compile_warm_init(L: Libs, peer: str) -> float:
    v = _compile(peer, 5)[2]
    if v is None:
        raise Skip
    return v


def w_compile_50(L: Libs, peer: str) -> float:
    if peer not in ("Treadle", "Warp CPU"):
        raise Skip
    return _compile(peer, 50)[0]


def w_hashgrid(L: Libs, peer: str, part: str) -> float:
    n = 100_000
    r = peers.neighbour_radius(n, 30.0)
    pts_np = np.random.default_rng(5).random((n, 3), dtype=np.float32)
    if peer in ("Treadle", "Warp CPU"):
        m, k = (L.tw, L.tk) if peer == "Treadle" else L.warp()
        if not hasattr(m, "HashGrid"):
            raise Skip
        dims = int(1.0 / r) + 1
        grid = m.HashGrid(dims, dims, dims, device="cpu")
        pts = m.array(pts_np, dtype=m.vec3)
        counts = m.zeros(n, dtype=int)
        if part == "build":
            return timed(lambda: grid.build(pts, r))
        grid.build(pts, r)
        return timed(lambda: m.launch(k.neighbours, n, inputs=[grid.id, pts, r, counts]))
    if peer == "NumPy":
        try:
            from scipy.spatial import cKDTree
        except ImportError:
            raise Skip from None
        if part == "build":
            return timed(lambda: cKDTree(pts_np))
        tree = cKDTree(pts_np)
        return timed(lambda: tree.query_ball_point(pts_np, r, return_length=True), min_reps=2, max_reps=3)
    if peer.startswith("Numba"):
        nb = L.numba(int(peer[6]))
        dims = int(1.0 / r)
        if part == "build":
            return timed(lambda: nb["build_cells"](pts_np, np.float32(1.0 / dims), dims))
        order, starts = nb["build_cells"](pts_np, np.float32(1.0 / dims), dims)
        counts_np = np.zeros(n, np.int32)
        return timed(lambda: nb["count_cells"](pts_np, order, starts, np.float32(r), dims, counts_np))
    raise Skip


def w_hash_build(L: Libs, peer: str) -> float:
    return w_hashgrid(L, peer, "build")


def w_hash_query(L: Libs, peer: str) -> float:
    return w_hashgrid(L, peer, "query")


# name, function, unit, scale, target text, check(treadle, warp) -> bool
WORKLOADS: list[tuple[str, str, Callable[[Libs, str], float], str, float, str, Any]] = [
    ("saxpy", "saxpy y=a*x+y, 16M f32", w_saxpy, "ms", 1e3, "≥ 3.5x Warp, ≤ 8 ms",
     lambda t, w, r: w / t >= 3.5),
    ("nbody", "n-body all pairs, N=4096", w_nbody, "ms", 1e3, "≥ 4x Warp, ≤ 10 ms", lambda t, w, r: w / t >= 4.0),
    ("laplacian", "7-point Laplacian 256³ f32", w_laplacian, "ms", 1e3, "≥ 10x Warp, ≤ 12 ms",
     lambda t, w, r: w / t >= 10.0),
    ("atomic_sum", "sum 16M f32 by atomic_add to one cell", w_atomic_sum, "ms", 1e3, "≥ 3x Warp, ≤ 8 ms",
     lambda t, w, r: w / t >= 3.0),
    ("loss_fwd", "loss over 1M elements: forward", w_loss_fwd, "ms", 1e3, "", None),
    ("loss_bwd", "loss: Tape forward+backward", w_loss_bwd, "ms", 1e3, "", None),
    ("loss_ratio", "loss: (fwd+bwd)/fwd, median of paired runs", w_loss_ratio, "x", 1.0, "≤ 2.5x",
     lambda t, w, r: t <= 2.5),
    ("triad_bwd", "backward of a=b+s*c, 4M f32 (one adjoint launch)", w_triad_bwd, "ms", 1e3, "", None),
    ("hash_build", "HashGrid build, 100k points", w_hash_build, "ms", 1e3, "≤ 3 ms", None),
    ("hash_query", "neighbour count, 100k points, ~30 nbrs", w_hash_query, "ms", 1e3, "≤ 35 ms", None),
    ("launch_empty", "launch, empty kernel dim=1", w_launch_empty, "µs", 1e6, "≤ 1.0 µs, ≤ 0.25x Warp",
     lambda t, w, r: t / w <= 0.25),
    ("launch_3arg", "launch, 3 args (array, float, int)", w_launch_3arg, "µs", 1e6, "≤ 1.5 µs, ≤ 0.25x Warp",
     lambda t, w, r: t / w <= 0.25),
    ("launch_recorded", "recorded Launch.launch()", w_launch_recorded, "µs", 1e6, "≤ 0.5 µs",
     lambda t, w, r: t * 1e6 <= 0.5),
    ("graph", "captured graph, per launch (100 launches)", w_graph, "µs", 1e6, "≤ 0.5 µs",
     lambda t, w, r: t * 1e6 <= 0.5),
    ("compile_cold", "cold compile, 5-kernel module (fresh process)", w_compile_cold, "s", 1.0,
     "≤ 0.5 s, ≤ 0.3x Warp", lambda t, w, r: t / w <= 0.3),
    ("compile_warm", "warm start, same module (cache kept)", w_compile_warm, "ms", 1e3, "≤ 5 ms",
     lambda t, w, r: t <= 0.005),
    ("compile_warm_init", "warm start including wp.init()", w_compile_warm_init, "ms", 1e3, "", None),
    ("compile_50", "cold compile, 50 kernels", w_compile_50, "s", 1.0, "≤ 2 s", lambda t, w, r: t <= 2.0),
    ("triad", "bandwidth triad a=b+s*c, 256 MB arrays", w_triad, "GB/s", 1.0, "≥ 25 GB/s", lambda t, w, r: t >= 25),
]


def fmt(v: float | None, unit: str, scale: float) -> str:
    if v is None:
        return "–"
    x = v * scale
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def main(argv: list[str] | None = None) -> int:
    global QUICK, L_GLOBAL
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated workload keys: " + ",".join(w[0] for w in WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--json", default="", help="also write the raw figures to this file")
    ap.add_argument("--peers", default="", help="comma-separated subset of: " + ", ".join(PEERS))
    ap.add_argument("--table", default="", help="only print the table of a file written by --json")
    args = ap.parse_args(argv)
    if args.table:
        saved = json.loads(Path(args.table).read_text())
        print(table(saved["results"], saved["meta"], saved["seconds"], saved["date"]))
        return 0
    QUICK = args.quick
    only = {s for s in args.only.split(",") if s}
    use_peers = [p for p in PEERS if not args.peers or p in args.peers.split(",")]
    t_start = time.perf_counter()
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    L = L_GLOBAL = Libs()
    results: dict[str, dict[str, float | None]] = {}
    for key, _label, fn, unit, scale, _target, _check in WORKLOADS:
        if only and key not in only:
            continue
        row: dict[str, float | None] = {}
        for peer in use_peers:
            try:
                row[peer] = fn(L, peer)
            except Skip:
                row[peer] = None
            except Exception as e:  # noqa: BLE001 - one failing peer must not stop the table
                print(f"  {key} / {peer}: failed: {e}", file=sys.stderr)
                row[peer] = None
        results[key] = row
        print(f"  {key}: " + ", ".join(f"{p} {fmt(v, unit, scale)}" for p, v in row.items()), file=sys.stderr)
    import treadle

    backend = treadle._src.runtime.native.get_native_compiler()
    compiler = backend.toolchain().version
    loop_cxx = backend.loop_compiler()
    if loop_cxx:
        compiler += "; kernels with loops and backward passes: " + backend.toolchain(treadle._src.runtime.native.CompileOptions(
            cxx=loop_cxx)).version
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    meta = {"threads": L.threads, "compiler": compiler, "load": f"{load_start:.1f} at the start, {load_end:.1f} at the end",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version()}
    seconds = time.perf_counter() - t_start
    date = datetime.date.today().isoformat()
    print(table(results, meta, seconds, date))
    if args.json:
        Path(args.json).write_text(json.dumps({"date": date, "meta": meta, "seconds": seconds, "results": results},
                                              indent=1))
    return 0


def table(results: dict[str, dict[str, float | None]], meta: dict[str, Any], seconds: float, date: str) -> str:
    """The markdown table (and a line saying where and when it was measured)."""
    cols = [p for p in PEERS if any(results[k].get(p) is not None for k in results)]
    head = ["workload", "unit", *cols, "Warp/Treadle", "target", "issue check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, _fn, unit, scale, target, check in WORKLOADS:
        if key not in results:
            continue
        row = results[key]
        t, w = row.get("Treadle"), row.get("Warp CPU")
        ratio = "–"
        met = ""
        if t is not None and w is not None and t > 0:
            r = (t / w) if unit == "GB/s" else (w / t)
            ratio = f"{r:.2f}x" if r < 10 else f"{r:.0f}x"
        if t is not None and check is not None:
            try:
                met = "yes" if check(t, w, results) else "no"
            except TypeError:  # a ratio check without the Warp figure
                met = ""
        lines.append("| " + " | ".join([label, unit, *(fmt(row.get(c), unit, scale) for c in cols), ratio, target,
                                        met]) + " |")
    lines.append("")
    lines.append(f"{date}, {meta['machine']}, Treadle on {meta['threads']} threads ({meta['compiler']}), Python "
                 f"{meta['python']}; medians; {seconds:.0f} s in all; 1-minute load average "
                 f"{meta.get('load', 'not recorded')}. Warp/Treadle > 1: Treadle is faster (for GB/s: Treadle / Warp).")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
