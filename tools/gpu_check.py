"""The one command that checks the CUDA backend on a machine with a GPU (written without one).

    python tools/gpu_check.py [--quick] [--json PATH] [--dry-run] [--skip-suite]

Sections, each with a time limit; each prints PASS/FAIL and the run carries on (exit code 1 if any failed):

1. ``environment``: driver, NVRTC, devices.
2. ``compile+load``: every kernel of the test suite (``tests/kernels``, ``tests/autodiff``, ``tests/geometry``;
   forward and backward) compiled by NVRTC for the device's exact architecture, in parallel processes
   (``tests/cuda/compile_suite.py``), and every entry point loaded by the driver (``--quick`` and
   ``--skip-suite`` skip it).
3. ``tests/gpu``: the GPU test suite through pytest (kernels against NumPy and the CPU, atomics, streams,
   events, graph capture and replay, memory pool, interop, autodiff, HashGrid/Mesh) and the peer-access tests
   (``tests/compat/test_peer_access.py``; its two-device cases need two GPUs).
4. ``benchmarks``: ``benchmarks/gpu.py`` -- copy and saxpy bandwidth (target >= 85% of 4.3 TB/s), n-body,
   launch overhead, graph replay, for Treadle and warp-lang in the same run.

A compact summary ends the output; everything also goes to ``--json`` (default ``$OUT/gpu_check.json`` when
``$OUT`` is set). Budget: under 8 minutes on an H200 (the sections' limits add up to 7.5).

``--dry-run`` needs no GPU: the fake driver of ``tests/cuda`` stands in (launches run the CPU build, tiny
benchmark sizes). It checks this script and the host side, not CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPORT: dict[str, Any] = {"checks": [], "bench": {}}
LIMITS = {"compile+load": 150, "tests/gpu": 180, "benchmarks": 120}  # seconds


def check(name: str, fn: Any, *args: Any) -> bool:
    t0 = time.perf_counter()
    try:
        detail = fn(*args)
        ok = True
    except Exception as e:  # noqa: BLE001 - every section reports and the run carries on
        detail = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        ok = False
    dt = time.perf_counter() - t0
    text = str(detail or "")
    print(f"[{'PASS' if ok else 'FAIL'}] {name} ({dt:.1f} s){': ' + text if text else ''}", flush=True)
    REPORT["checks"].append({"name": name, "ok": ok, "detail": text[-6000:], "seconds": round(dt, 1)})
    return ok


def environment(wp: Any) -> str:
    from treadle._src.backends.cuda import build as cb
    from treadle._src.runtime import cuda_driver as cd

    devs = wp.get_cuda_devices()
    if not devs:
        raise RuntimeError(f"no CUDA device: {cd.why_unavailable()}")
    info = {"driver": wp.get_cuda_driver_version(), "nvrtc": cb.get_nvrtc().identity() if cb.nvrtc_available()
            else "unavailable", "devices": [{"alias": d.alias, "name": d.name, "arch": d.arch, "sms": d.sm_count,
                                             "memory_gib": round(d.total_memory / 2**30, 1),
                                             "mempool": d.is_mempool_supported} for d in devs]}
    REPORT["environment"] = info
    return json.dumps(info)


def compile_and_load(dev: Any, jobs: int, only: str) -> str:
    from treadle._src.runtime import cuda_driver as cd

    names = sorted(p.stem for sub in ("kernels", "autodiff", "geometry") for p in (ROOT / "tests" / sub).glob("test_*.py"))
    if only:
        names = [n for n in names if any(s in n for s in only.split(","))]
    out = Path(os.environ.get("TMPDIR", "/tmp")) / "treadle_gpu_check"
    out.mkdir(exist_ok=True)
    deadline = time.monotonic() + LIMITS["compile+load"]

    def one(name: str) -> dict[str, Any]:
        res = out / f"{name}.json"
        left = deadline - time.monotonic()
        if left < 5.0:  # out of time: report the module as not checked rather than overrun the budget
            return {"failures": [f"{name}: not compiled (time limit)"], "import_errors": [], "binaries": [],
                    "passes": 0, "cpu_too": []}
        p = subprocess.run([sys.executable, str(ROOT / "tests/cuda/compile_suite.py"), "--arch", str(dev.arch),
                            "--out", str(res), "--only", name], capture_output=True, text=True, timeout=left)
        if p.returncode != 0:
            raise RuntimeError(f"{name}: {p.stdout[-1500:]}{p.stderr[-1500:]}")
        return json.loads(res.read_text())  # type: ignore[no-any-return]

    with ThreadPoolExecutor(jobs) as ex:
        results = list(ex.map(one, names))
    failures = [f for r in results for f in r["failures"]] + [e for r in results for e in r["import_errors"]]
    loaded = 0
    for r in results:
        for b in r["binaries"]:
            cd.load_module(dev, Path(b["path"])).function(b["entry"])
            loaded += 1
    REPORT["compile"] = {"passes": sum(r["passes"] for r in results), "loaded": loaded,
                         "cpu_too": sum(len(r["cpu_too"]) for r in results), "failures": failures[:20]}
    if failures:
        raise AssertionError(f"{len(failures)} failure(s):\n" + "\n".join(f[:600] for f in failures[:5]))
    return f"{loaded} entry points compiled for sm_{dev.arch} and loaded"


def gpu_tests(dry_run: bool) -> str:
    env = dict(os.environ)
    if dry_run:
        env["TREADLE_GPU_DRY_RUN"] = "1"
    junit = Path(os.environ.get("TMPDIR", "/tmp")) / "treadle_gpu_tests.xml"
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "tests/gpu",
                        "tests/compat/test_peer_access.py", f"--junitxml={junit}"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=LIMITS["tests/gpu"])
    tail = (p.stdout + p.stderr).strip().splitlines()
    REPORT["tests_gpu"] = {"returncode": p.returncode, "tail": tail[-60:]}
    last = tail[-1] if tail else "(no output)"
    if p.returncode != 0:
        raise AssertionError("\n".join(tail[-40:]))
    return last


def benchmarks(wp: Any, quick: bool, dry_run: bool, no_warp: bool) -> str:
    from benchmarks import gpu as bench

    tr = bench.measure(wp, quick, tiny=dry_run)
    wr: Any = None
    if not no_warp and not dry_run:
        try:
            import warp

            warp.config.quiet = True
            warp.init()
            wr = bench.measure(warp, quick)
        except Exception as e:  # noqa: BLE001 - the comparison is optional
            wr = f"not measured ({type(e).__name__}: {e})"
    REPORT["bench"] = {"treadle": tr, "warp": wr}
    REPORT["bench_table"] = bench.summary(tr, wr)
    if not tr.get("saxpy_ok") or not tr.get("graph_ok"):
        raise AssertionError(f"wrong benchmark results: {tr}")
    return ""


def install_fake_driver() -> None:
    """The test suite's fake driver (launches run the CPU build; binaries are stand-ins)."""
    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    from fake_driver import FakeDriver, cpu_executor

    from treadle._src.backends.cuda import build as cb
    from treadle._src.runtime import cuda_driver as cd
    from treadle._src.runtime.cache import get_cache

    def stub_compile(items: list[Any], options: Any) -> None:
        for it in items:
            p = get_cache().root / f"dry_{it.key}.cubin"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"\x7fELF stand-in")
            it.binary_path = p

    cb.compile_cuda_batch = stub_compile  # type: ignore[assignment]
    drv = FakeDriver(ndev=1)
    drv.executor = cpu_executor()
    cd.use_driver(drv)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the compile+load section; smaller benchmarks")
    ap.add_argument("--skip-suite", action="store_true", help="skip the compile+load section")
    ap.add_argument("--suite", default="", help="compile+load: only test modules whose name contains one of these")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-warp", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the fake driver (checks this script, not CUDA)")
    a = ap.parse_args()
    t_all = time.perf_counter()
    import treadle as wp

    if a.dry_run:
        install_fake_driver()
    if not check("environment", environment, wp):
        return 1
    dev = wp.get_cuda_devices()[0]
    if not (a.quick or a.skip_suite or a.dry_run):
        check("compile+load: every test-suite kernel for this device", compile_and_load, dev, a.jobs, a.suite)
    check("tests/gpu", gpu_tests, a.dry_run)
    quick = a.quick or time.perf_counter() - t_all > 300  # keep the whole run under 8 minutes
    check("benchmarks (treadle vs warp-lang)", benchmarks, wp, quick, a.dry_run, a.no_warp)
    failed = [c["name"] for c in REPORT["checks"] if not c["ok"]]
    REPORT["seconds"] = round(time.perf_counter() - t_all, 1)
    print("\n=== summary ===")
    env = REPORT.get("environment", {})
    for d in env.get("devices", []):
        print(f"device: {d['name']} sm_{d['arch']} {d['memory_gib']} GiB; driver {env.get('driver')}; "
              f"{env.get('nvrtc')}")
    if "compile" in REPORT:
        c = REPORT["compile"]
        print(f"compile+load: {c['loaded']} entry points, {len(c['failures'])} failures")
    if "tests_gpu" in REPORT:
        print(f"tests/gpu: {REPORT['tests_gpu']['tail'][-1] if REPORT['tests_gpu']['tail'] else '?'}")
    for line in REPORT.get("bench_table", []):
        print(line)
    if a.dry_run:
        print("(dry run: fake driver, tiny sizes -- the figures above mean nothing)")
    print(f"{len(REPORT['checks']) - len(failed)} sections passed, {len(failed)} failed"
          f"{' (' + ', '.join(failed) + ')' if failed else ''}; {REPORT['seconds']:.0f} s")
    out = a.json or (os.path.join(os.environ["OUT"], "gpu_check.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).write_text(json.dumps(REPORT, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
