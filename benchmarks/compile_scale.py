"""Compile time at scale: a generated program of many differentiated kernels, cold and warm, against warp-lang.

The program has ``n`` distinct kernels (vector, matrix and quaternion math, a loop, a branch; half in float32,
half in float64). The driver launches each kernel once under a ``Tape`` and runs its backward pass once, so both
the forward and the adjoint code of every kernel are built. Every figure is one fresh process, timed from after
``wp.init()`` to the last gradient read back; imports and device discovery are excluded for both Warp-API peers.
Cold rows also give each process's CPU time (user + system, its compiler processes and imports included): a
shared machine's load changes it far less than the wall time.

Rows:

* ``cold``: empty kernel cache, the default toolchain (Treadle prefers clang++ when installed);
* ``cold g++``: empty kernel cache, Treadle forced to g++ only (``TREADLE_CXX=g++``), as on a machine without clang;
* ``warm``: the same program again over the cache the cold run left (median of several processes).

Each process also prints a checksum of the gradients; the Treadle and warp-lang checksums must agree, so a fast but
wrong build cannot pass for a fast one.

Usage: ``python -m benchmarks.compile_time [--kernels 100] [--peers treadle,warp] [--warm-runs 5] [--json F]``
(``python -m benchmarks.compile_scale`` is the same).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from .compile_time import _child_env

#: Kernel bodies; ``{T}`` is the scalar type, ``{V}`` the 3-vector type, ``{M}`` the 3x3 matrix type, ``{Q}`` the
#: quaternion type, ``{c}`` a constant that makes every kernel distinct.
_BODIES = [
    # vector algebra
    """
    v = x[i]
    w = wp.cross(v, {V}({T}({c}), {T}(1.0), {T}(2.0)))
    out[i] = wp.dot(w, v) + wp.length(v + w) * {T}({c})
""",
    # matrices
    """
    v = x[i]
    m = wp.outer(v, v) + wp.identity(n=3, dtype={T}) * {T}({c})
    out[i] = wp.determinant(m) + wp.trace(m * wp.transpose(m))
""",
    # quaternions
    """
    v = x[i]
    axis = wp.normalize(v + {V}({T}(0.5), {T}({c}), {T}(0.25)))
    q = wp.quat_from_axis_angle(axis, {T}(0.3) + {T}({c}) * {T}(0.01))
    r = wp.quat_rotate(q, v)
    out[i] = wp.length(r) + wp.dot(r, axis)
""",
    # a loop
    """
    v = x[i]
    s = {T}(0.0)
    for k in range(4):
        s = s + wp.sin(v[0] * {T}(k) + {T}({c})) * v[1] + wp.cos(v[2]) * {T}(0.5)
    out[i] = s
""",
    # a branch
    """
    v = x[i]
    if v[0] > {T}({c}) * {T}(0.01):
        out[i] = wp.length_sq(v) * {T}(1.5)
    else:
        out[i] = wp.abs(v[1]) * {T}({c}) + wp.exp(v[2] * {T}(0.1))
""",
]

_TYPES = {
    "f32": {"T": "wp.float32", "V": "wp.vec3f", "M": "wp.mat33f", "Q": "wp.quatf"},
    "f64": {"T": "wp.float64", "V": "wp.vec3d", "M": "wp.mat33d", "Q": "wp.quatd"},
}


def program_source(lib: str, n: int) -> str:
    """A module of ``n`` distinct differentiable kernels written for ``lib`` (``treadle`` or ``warp``)."""
    out = [f"import {lib} as wp\n"]
    for i in range(n):
        kind = "f32" if i % 2 == 0 else "f64"
        t = _TYPES[kind]
        body = _BODIES[(i // 2) % len(_BODIES)].format(c=f"{1.0 + 0.25 * i:.2f}", **t)
        out.append(
            f"\n\n@wp.kernel\ndef k{i}_{kind}(x: wp.array(dtype={t['V']}), out: wp.array(dtype={t['T']})):\n"
            f"    i = wp.tid()\n{textwrap.indent(textwrap.dedent(body).strip(), '    ')}\n"
        )
    return "".join(out)


_DRIVER = """
import json, os, sys, time
import numpy as np
import LIB as wp
wp.config.kernel_cache_dir = os.environ["BENCH_CACHE"]
if LIB_IS_WARP:
    wp.config.quiet = True
wp.init()
t0 = time.perf_counter()
sys.path.insert(0, os.environ["BENCH_DIR"])
import kprog
rng = np.random.default_rng(3)
pts = rng.random((32, 3)) - 0.5
checksum = 0.0
for name in sorted(k for k in vars(kprog) if k.startswith("k")):
    kernel = getattr(kprog, name)
    f64 = name.endswith("f64")
    x = wp.array(pts, dtype=wp.vec3d if f64 else wp.vec3f, requires_grad=True, device="cpu")
    out = wp.zeros(32, dtype=wp.float64 if f64 else wp.float32, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=32, inputs=[x], outputs=[out], device="cpu")
    tape.backward(grads={out: wp.ones(32, dtype=out.dtype, device="cpu")})
    checksum += float(np.abs(x.grad.numpy()).sum()) + float(np.abs(out.numpy()).sum())
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "checksum": checksum}))
"""


def _cpu_of_children() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(lib: str, work: Path, cache: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """``(seconds, checksum, CPU seconds)`` of one fresh process; the CPU time is the whole process's, compilers
    included (what a loaded machine changes least)."""
    env = dict(env, BENCH_DIR=str(work), BENCH_CACHE=str(cache))
    code = _DRIVER.replace("LIB_IS_WARP", str(lib == "warp")).replace("LIB", lib)
    cpu0 = _cpu_of_children()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=3600)
    cpu = _cpu_of_children() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"{lib} compile-scale run failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(out["seconds"]), float(out["checksum"]), cpu


def measure(lib: str, n: int, warm_runs: int, gxx_only: bool = False) -> dict[str, float]:
    """Cold seconds, median warm seconds and the gradient checksum of ``lib`` on an ``n``-kernel program."""
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{lib}-") as d:
        tmp = Path(d)
        work = tmp / "src"
        work.mkdir()
        (work / "kprog.py").write_text(program_source(lib, n))
        env = _child_env(tmp)
        if gxx_only:
            env["TREADLE_CXX"] = "g++"
        # prime the library's own bytecode and runtime with a one-kernel program and a throwaway cache
        (tmp / "prime").mkdir()
        (tmp / "prime" / "kprog.py").write_text(program_source(lib, 1))
        _run(lib, tmp / "prime", tmp / "prime-cache", env)
        cache = tmp / "cache"
        cold, checksum, cold_cpu = _run(lib, work, cache, env)
        warm = sorted(_run(lib, work, cache, env)[0] for _ in range(warm_runs))[warm_runs // 2] if warm_runs else 0.0
        return {"cold": cold, "warm": warm, "checksum": checksum, "cold_cpu": cold_cpu}


def main(argv: list[str] | None = None) -> int:
    """Run the rows for the chosen peers and print a table with the Treadle / warp-lang ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--peers", default="treadle,warp")
    ap.add_argument("--warm-runs", type=int, default=5)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    res: dict[str, dict[str, float]] = {}
    for peer in peers:
        if peer == "warp":
            try:
                import warp  # noqa: F401  (a peer, only to see that it is installed)
            except ImportError:
                print("warp-lang is not installed: skipping the warp-lang rows", file=sys.stderr)
                continue
        res[peer] = measure(peer, args.kernels, args.warm_runs)
        if peer == "treadle":
            res["treadle g++"] = measure(peer, args.kernels, 0, gxx_only=True)
    print(f"compile at scale: {args.kernels} differentiated kernels, {started}, load {load:.2f}")
    warp = res.get("warp")
    import shutil

    default = "cold, clang++ installed" if shutil.which("clang++") else "cold (default toolchain)"
    rows = [(default, "treadle", "cold"), ("cold, g++ only", "treadle g++", "cold"),
            ("warm start over the cache", "treadle", "warm")]
    print(f"{'row':32s} {'Treadle s':>10s} {'warp-lang s':>12s} {'ratio':>7s}   CPU s of the process (ratio)")
    for label, key, field in rows:
        if key not in res:
            continue
        t = res[key][field]
        w = warp[field] if warp else None
        ratio = f"{t / w:.2f}x" if w else "-"
        cpu = ""
        if field == "cold":
            tc, wc = res[key]["cold_cpu"], (warp["cold_cpu"] if warp else None)
            cpu = f"   {tc:.2f} vs {wc:.2f} ({tc / wc:.2f}x)" if wc else f"   {tc:.2f}"
        print(f"{label:32s} {t:10.3f} {w if w is not None else float('nan'):12.3f} {ratio:>7s}{cpu}")
    if warp and "treadle" in res:
        a, b = res["treadle"]["checksum"], warp["checksum"]
        agree = abs(a - b) <= 1e-4 * max(1.0, abs(b))
        print(f"gradient checksum: Treadle {a:.6g}, warp-lang {b:.6g} ({'agree' if agree else 'DIFFER'})")
        if not agree:
            return 1
    if args.json:
        Path(args.json).write_text(json.dumps({"date": started, "load": load, "kernels": args.kernels,
                                               "results": res}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
