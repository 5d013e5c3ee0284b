"""Stress Treadle's runtime from several threads and processes at once (not part of the test suite).

Each round writes fresh Python modules whose kernels nobody has compiled yet (a constant unique to the run and the
round is part of their code), imports them, and has every thread launch them at the same moment (a barrier):

- a plain kernel and a reduction, forward and backward under a ``wp.Tape`` of the thread's own;
- a generic kernel instantiated for a dtype chosen by the thread (float32, float64, float16, int32), its
  floating-point instances differentiated too;
- a kernel of a second module that calls a ``@wp.func`` and loops at run time.

Every result is checked against NumPy, every gradient against its closed form, and every tape must hold exactly
the launches of its own thread. A *phase* starts ``--processes`` processes at once over one kernel cache directory:
``cold`` compiles every round's kernels (the processes race to compile the same ones), ``warm`` runs the same
rounds again in new processes, which find them in the cache and the warm-start index. The last line is a summary::

    python tools/stress_threads.py --threads 8 --rounds 50 --processes 3
    stress_threads: 8 threads x 50 rounds x 3 processes, phases cold+warm: 2400 thread-rounds, 0 failures (...)

Exit status 0 when nothing failed. ``--cache DIR`` keeps the cache (default: a fresh temporary directory, removed
afterwards). ``--tsan`` builds every native part (kernels, thread-pool runtime, launch extension) with
``-fsanitize=thread`` (``TREADLE_SANITIZE=thread``, with g++), preloads g++'s ThreadSanitizer runtime into the
workers and prints the distinct reports it wrote (``docs/threads.md``); a report does not fail a round, but the
summary line counts them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

_MODULE_A = '''\
import typing

import treadle as wp

SCALE = wp.constant({scale!r})


@wp.kernel
def affine(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * SCALE + 1.0


@wp.kernel
def square_sum(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i] * y[i])


@wp.kernel
def generic_affine(x: wp.array(dtype=typing.Any), y: wp.array(dtype=typing.Any)):
    i = wp.tid()
    y[i] = x[i] * x.dtype(SCALE) + x.dtype(1)


@wp.kernel
def generic_sum(y: wp.array(dtype=typing.Any), loss: wp.array(dtype=typing.Any)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i] * y[i])
'''

_MODULE_B = '''\
import treadle as wp

OFFSET = wp.constant({offset!r})


@wp.func
def powsum(v: float, n: int):
    s = float(0.0)
    p = float(1.0)
    for _k in range(n):
        p = p * v
        s = s + p
    return s + OFFSET


@wp.kernel
def series(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = powsum(x[i], n)
'''

#: the dtype each thread instantiates the generic kernels for (thread index modulo 4)
_DTYPES = ("float32", "float64", "float16", "int32")
_N = 64
_BIG = 1 << 15  # above the thread pool's serial threshold


def _modules(root: Path, tag: str, rnd: int) -> tuple[object, object]:
    """Write and import round ``rnd``'s two modules (their code is unique to ``tag`` and the round)."""
    scale = 1.0 + ((int(tag, 16) + 37 * rnd) % 64) / 64.0  # the same in every process; exact in float16
    offset = float(rnd % 7) + 0.5
    names = (f"stress_a_{tag}_{rnd}", f"stress_b_{tag}_{rnd}")
    texts = (_MODULE_A.format(scale=scale), _MODULE_B.format(offset=offset))
    mods = []
    for name, text in zip(names, texts):
        path = root / f"{name}.py"
        tmp = root / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(text)
        os.replace(tmp, path)  # several processes write the same text: publish atomically
        mods.append(importlib.import_module(name))
    return mods[0], mods[1]


def _thread_round(wp: object, np: object, a: object, b: object, t: int) -> None:
    """One thread's work in one round (raises on any wrong result)."""
    import numpy as np  # noqa: F811 - the real module, for type checkers too

    scale = float(a.SCALE)  # type: ignore[attr-defined]
    base = np.linspace(0.5, 1.5, _N) + t
    # plain kernels, forward and backward, on this thread's tape
    x = wp.array(base.astype(np.float32), requires_grad=True)  # type: ignore[attr-defined]
    y = wp.zeros(_N, dtype=float, requires_grad=True)  # type: ignore[attr-defined]
    loss = wp.zeros(1, dtype=float, requires_grad=True)  # type: ignore[attr-defined]
    tape = wp.Tape()  # type: ignore[attr-defined]
    with tape:
        wp.launch(a.affine, dim=_N, inputs=[x], outputs=[y])  # type: ignore[attr-defined]
        wp.launch(a.square_sum, dim=_N, inputs=[y], outputs=[loss])  # type: ignore[attr-defined]
    if len(tape.launches) != 2:
        raise AssertionError(f"thread {t}: its tape recorded {len(tape.launches)} launches, expected its own 2")
    yv = base.astype(np.float32) * np.float32(scale) + 1.0
    np.testing.assert_allclose(y.numpy(), yv, rtol=1e-5)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(yv.astype(np.float64) ** 2), rtol=1e-4)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * yv * scale, rtol=1e-4)
    # a launch big enough for the thread pool (smaller ones run on the calling thread), from every thread at once
    big = np.arange(_BIG, dtype=np.float32) * np.float32(1e-3)
    bx = wp.array(big)  # type: ignore[attr-defined]
    byy = wp.zeros(_BIG, dtype=float)  # type: ignore[attr-defined]
    wp.launch(a.affine, dim=_BIG, inputs=[bx], outputs=[byy])  # type: ignore[attr-defined]
    np.testing.assert_allclose(byy.numpy(), big * np.float32(scale) + 1.0, rtol=1e-5)
    # the generic kernels for this thread's dtype
    dname = _DTYPES[t % len(_DTYPES)]
    dt = getattr(np, dname)
    xs = base.astype(dt) if dname != "int32" else (np.arange(_N) + t).astype(dt)
    grad = dname != "int32"
    gx = wp.array(xs, requires_grad=grad)  # type: ignore[attr-defined]
    gy = wp.zeros(_N, dtype=gx.dtype, requires_grad=grad)  # type: ignore[attr-defined]
    gl = wp.zeros(1, dtype=gx.dtype, requires_grad=grad)  # type: ignore[attr-defined]
    gtape = wp.Tape()  # type: ignore[attr-defined]
    with gtape:
        wp.launch(a.generic_affine, dim=_N, inputs=[gx], outputs=[gy])  # type: ignore[attr-defined]
        wp.launch(a.generic_sum, dim=_N, inputs=[gy], outputs=[gl])  # type: ignore[attr-defined]
    if len(gtape.launches) != 2:
        raise AssertionError(f"thread {t}: its generic tape recorded {len(gtape.launches)} launches, expected 2")
    s = dt(scale) if dname != "int32" else dt(int(scale))
    want = xs * s + dt(1)
    tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12, "int32": 0}[dname]
    np.testing.assert_allclose(gy.numpy(), want, rtol=tol)
    if grad:
        gtape.backward(gl)
        np.testing.assert_allclose(gx.grad.numpy().astype(np.float64),
                                   (2.0 * want.astype(np.float64) * float(s)), rtol=max(tol, 1e-6) * 10)
    # the second module: a function with a run-time loop
    n = 3 + t % 3
    bx = wp.array((np.linspace(0.1, 0.9, _N)).astype(np.float32))  # type: ignore[attr-defined]
    by = wp.zeros(_N, dtype=float)  # type: ignore[attr-defined]
    wp.launch(b.series, dim=_N, inputs=[bx, n], outputs=[by])  # type: ignore[attr-defined]
    v = np.linspace(0.1, 0.9, _N).astype(np.float64)
    ref = sum(v ** k for k in range(1, n + 1)) + float(b.OFFSET)  # type: ignore[attr-defined]
    np.testing.assert_allclose(by.numpy(), ref, rtol=1e-5)


def _run_thread(wp: object, np: object, a: object, b: object, t: int, rnd: int, barrier: threading.Barrier,
                errors: list[str]) -> None:
    """A thread's body: wait for the others, then run the round (failures are appended to ``errors``)."""
    try:
        barrier.wait()
        _thread_round(wp, np, a, b, t)
    except BaseException:  # noqa: BLE001 - counted and reported
        errors.append(f"round {rnd} thread {t}: {traceback.format_exc()}")


def _worker(args: argparse.Namespace) -> int:
    """One process: ``--rounds`` rounds of ``--threads`` threads; prints one ``result`` line."""
    root = Path(args.modules)
    sys.path.insert(0, str(root))
    import numpy as np

    import treadle as wp

    wp.config.quiet = True
    failures = 0
    first: str | None = None
    t0 = time.perf_counter()
    for rnd in range(args.rounds):
        a, b = _modules(root, args.tag, rnd)
        barrier = threading.Barrier(args.threads)
        errors: list[str] = []

        threads = [threading.Thread(target=_run_thread, args=(wp, np, a, b, t, rnd, barrier, errors))
                   for t in range(args.threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        failures += len(errors)
        if errors and first is None:
            first = errors[0]
        if errors:
            print(f"stress_threads[{os.getpid()}]: {len(errors)} failure(s) in round {rnd}", file=sys.stderr)
    if first is not None:
        print(first, file=sys.stderr)
    print(f"result {args.threads * args.rounds} {failures} {time.perf_counter() - t0:.1f}", flush=True)
    return 0


def _tsan_env(logs: Path) -> dict[str, str]:
    """The workers' environment for ``--tsan``: instrumented g++ builds, the runtime preloaded, reports to ``logs``."""
    cxx = shutil.which("g++")
    if cxx is None:
        raise SystemExit("stress_threads: --tsan needs g++ (its ThreadSanitizer runtime, libtsan)")
    lib = subprocess.run([cxx, "-print-file-name=libtsan.so"], capture_output=True, text=True).stdout.strip()
    if not lib or not os.path.exists(lib):
        raise SystemExit("stress_threads: g++ has no libtsan.so (apt-get install libtsan2 or the gcc package)")
    logs.mkdir(parents=True, exist_ok=True)
    return {"TREADLE_SANITIZE": "thread", "TREADLE_CXX": cxx, "LD_PRELOAD": os.path.realpath(lib),
            "TSAN_OPTIONS": f"halt_on_error=0 report_signal_unsafe=0 log_path={logs}/tsan"}


def _tsan_reports(logs: Path) -> list[str]:
    """The distinct ``SUMMARY:`` lines of the ThreadSanitizer reports under ``logs`` (with their counts)."""
    counts: dict[str, int] = {}
    for f in sorted(logs.glob("tsan*")):
        for line in f.read_text(errors="replace").splitlines():
            if line.startswith("SUMMARY: ThreadSanitizer"):
                counts[line] = counts.get(line, 0) + 1
    return [f"{n} x {line}" for line, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def _phase(args: argparse.Namespace, name: str, cache: Path, modules: Path, tag: str,
           extra_env: dict[str, str]) -> tuple[int, int, float]:
    """Run ``--processes`` workers at once over ``cache``: (thread-rounds, failures, seconds)."""
    env = dict(os.environ, TREADLE_CACHE_PATH=str(cache), **extra_env)
    here = Path(__file__).resolve()
    env["PYTHONPATH"] = os.pathsep.join([str(here.parent.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, str(here), "--worker", "--threads", str(args.threads), "--rounds", str(args.rounds),
           "--modules", str(modules), "--tag", tag]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in range(args.processes)]
    total = failed = 0
    for p in procs:
        out, _ = p.communicate()
        line = next((ln for ln in out.splitlines() if ln.startswith("result ")), None)
        if p.returncode != 0 or line is None:
            print(f"stress_threads: a {name} worker exited with status {p.returncode} and no result", file=sys.stderr)
            total += args.threads * args.rounds
            failed += args.threads * args.rounds
            continue
        _, n, f, _s = line.split()
        total += int(n)
        failed += int(f)
    seconds = time.perf_counter() - t0
    print(f"stress_threads: {name}: {args.processes} processes x {args.threads} threads x {args.rounds} rounds, "
          f"{failed} failures, {seconds:.1f} s", flush=True)
    return total, failed, seconds


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the phases (or, with ``--worker``, one worker process)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--phases", default="cold,warm", help="comma-separated: cold, warm (in that order)")
    ap.add_argument("--cache", default=None, help="kernel cache directory (default: a fresh temporary one)")
    ap.add_argument("--tsan", action="store_true", help="ThreadSanitizer-instrumented native code (g++)")
    ap.add_argument("--tsan-logs", default=None, help="where --tsan reports go (default: a temporary directory)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--modules", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tag", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args)
    phases = [p for p in args.phases.split(",") if p]
    if any(p not in ("cold", "warm") for p in phases):
        ap.error("--phases takes cold and/or warm")
    scratch = Path(tempfile.mkdtemp(prefix="treadle-stress-"))
    cache = Path(args.cache) if args.cache else scratch / "cache"
    modules = scratch / "modules"
    modules.mkdir()
    tag = uuid.uuid4().hex[:10]  # one tag for all phases: warm runs the kernels the cold phase compiled
    logs = Path(args.tsan_logs) if args.tsan_logs else scratch / "tsan"
    extra_env = _tsan_env(logs) if args.tsan else {}
    total = failed = 0
    seconds = 0.0
    reports: list[str] = []
    try:
        for name in phases:
            n, f, s = _phase(args, name, cache, modules, tag, extra_env)
            total, failed, seconds = total + n, failed + f, seconds + s
        if args.tsan:
            reports = _tsan_reports(logs)
            for line in reports:
                print(f"stress_threads: tsan: {line}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    tsan = f", {sum(int(r.split(' x ')[0]) for r in reports)} ThreadSanitizer reports" if args.tsan else ""
    print(f"stress_threads: {args.threads} threads x {args.rounds} rounds x {args.processes} processes, phases "
          f"{'+'.join(phases)}: {total} thread-rounds, {failed} failures{tsan} ({seconds:.1f} s, cache {cache})")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
