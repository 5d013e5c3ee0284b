"""Cold and warm compile times of a module of small kernels, each measured in a fresh process.

Cold: empty kernel cache. Warm: the same program again with the cache kept. Treadle's runtime library and
precompiled header are not kernels: they live in the per-user default cache directory, shared by every kernel cache,
and are built once per installation (here by the priming run below, as warp-lang ships its runtime prebuilt). The time is from after ``import`` of
the library to every kernel having run once on small arrays (defining the kernels, ``load_module`` and one launch
of each: a library whose loading is deferred to the first launch is counted, as Numba and Taichi compile at the
first call); imports are excluded for every peer, and so is ``wp.init()`` (device discovery) for both Warp-API peers,
which run the same driver. ``wp.init()`` loads each Warp-API peer's native runtime (warp-lang: its libraries;
Treadle: its thread-pool library and launch extension, with the toolchain facts of the environment memo), so a
second warm figure adds it back: the start from ``wp.init()`` to every kernel having run. Child processes write Python bytecode caches to a private directory, so Treadle's own lazily
imported modules do not get recompiled from source on every start (a normal installation caches bytecode too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

_KERNEL_TEMPLATES = [
    """
@wp.kernel
def k_saxpy{i}(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i] + {c}
""",
    """
@wp.kernel
def k_scale{i}(x: wp.array(dtype=wp.vec3), s: float):
    i = wp.tid()
    x[i] = x[i] * (s + {c})
""",
    """
@wp.kernel
def k_norm{i}(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[i]) + {c}
""",
    """
@wp.kernel
def k_sum{i}(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i] * {c})
""",
    """
@wp.kernel
def k_step{i}(p: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    v[i] = v[i] + wp.vec3(0.0, -9.8 + {c}, 0.0) * dt
    p[i] = p[i] + v[i] * dt
""",
]

_NUMBA_TEMPLATES = [
    "def f_saxpy{i}(x, y, a):\n    for i in range(x.shape[0]):\n        y[i] = a * x[i] + y[i] + {c}\n",
    "def f_scale{i}(x, s):\n    for i in range(x.shape[0]):\n        x[i] *= s + {c}\n",
    "def f_norm{i}(x, out):\n    for i in range(x.shape[0]):\n        out[i] = np.sqrt(x[i, 0]**2 + x[i, 1]**2 + x[i, 2]**2) + {c}\n",
    "def f_sum{i}(x):\n    s = 0.0\n    for i in range(x.shape[0]):\n        s += x[i] * {c}\n    return s\n",
    "def f_step{i}(p, v, dt):\n    for i in range(p.shape[0]):\n        v[i, 1] += (-9.8 + {c}) * dt\n        p[i] += v[i] * dt\n",
]


def module_source(lib: str, n: int) -> str:
    """A module of ``n`` distinct small kernels written for ``lib`` (``treadle``, ``warp``)."""
    out = [f"import {lib} as wp\n"]
    for i in range(n):
        out.append(_KERNEL_TEMPLATES[i % len(_KERNEL_TEMPLATES)].format(i=i, c=float(i) * 0.5))
    return "".join(out)


#: Both Warp-API drivers run every kernel once after ``load_module`` (same code for Treadle and warp-lang).
_LAUNCH_EACH_KERNEL = """
        x = wp.ones(16, dtype=float); y = wp.ones(16, dtype=float); t = wp.zeros(1, dtype=float)
        v = wp.ones(16, dtype=wp.vec3); w = wp.ones(16, dtype=wp.vec3)
        args = {"k_saxpy": [x, y, 2.0], "k_scale": [v, 2.0], "k_norm": [v, x], "k_sum": [x, t], "k_step": [v, w, 0.1]}
        for name, k in sorted(vars(kmod).items()):
            if isinstance(k, wp.Kernel):
                wp.launch(k, 16, inputs=args[name.rstrip("0123456789")], device="cpu")
        wp.synchronize()"""

_DRIVERS = {
    "treadle": """
        import os, sys, time, json
        import treadle as wp
        wp.config.kernel_cache_dir = os.environ["BENCH_CACHE"]
        ti = time.perf_counter()
        wp.init()
        t0 = time.perf_counter()
        sys.path.insert(0, os.environ["BENCH_DIR"])
        import kmod
        wp.load_module(kmod)
        LAUNCH_EACH_KERNEL
        t1 = time.perf_counter()
        n = sum(1 for k in kmod.__dict__.values() if isinstance(k, wp.Kernel) and k.get_instance(None).entry)
        print(json.dumps({"seconds": t1 - t0, "init": t0 - ti, "ready": n}))
    """,
    "warp": """
        import os, sys, time, json
        import warp as wp
        wp.config.kernel_cache_dir = os.environ["BENCH_CACHE"]
        wp.config.quiet = True
        ti = time.perf_counter()
        wp.init()
        t0 = time.perf_counter()
        sys.path.insert(0, os.environ["BENCH_DIR"])
        import kmod
        wp.load_module(kmod, device="cpu")
        LAUNCH_EACH_KERNEL
        t1 = time.perf_counter()
        print(json.dumps({"seconds": t1 - t0, "init": t0 - ti, "ready": -1}))
    """,
    "numba": """
        import os, sys, time, json
        import numpy as np
        import numba
        t0 = time.perf_counter()
        sys.path.insert(0, os.environ["BENCH_DIR"])
        import nmod
        x = np.ones(16, np.float32); y = np.ones(16, np.float32); v = np.ones((16, 3), np.float32)
        for name, f in sorted(vars(nmod).items()):
            if name.startswith("f_saxpy"): f(x, y, np.float32(2.0))
            elif name.startswith("f_scale"): f(v, np.float32(2.0))
            elif name.startswith("f_norm"): f(v, x)
            elif name.startswith("f_sum"): f(x)
            elif name.startswith("f_step"): f(v, v.copy(), np.float32(0.1))
        t1 = time.perf_counter()
        print(json.dumps({"seconds": t1 - t0, "ready": -1}))
    """,
    "taichi": """
        import os, sys, time, json
        import numpy as np
        import taichi as ti
        ti.init(arch=ti.cpu, offline_cache=True, offline_cache_file_path=os.environ["BENCH_CACHE"],
                log_level=ti.ERROR)
        t0 = time.perf_counter()
        sys.path.insert(0, os.environ["BENCH_DIR"])
        import tmod
        tmod.run_all()
        t1 = time.perf_counter()
        print(json.dumps({"seconds": t1 - t0, "ready": -1}))
    """,
}

_TAICHI_MODULE = '''
import numpy as np
import taichi as ti
nd = ti.types.ndarray()

@ti.kernel
def k_saxpy(x: nd, y: nd, a: ti.f32):
    for i in x:
        y[i] = a * x[i] + y[i]

@ti.kernel
def k_scale(x: nd, s: ti.f32):
    for i in x:
        x[i] = x[i] * s

@ti.kernel
def k_norm(x: nd, out: nd):
    for i in out:
        out[i] = ti.sqrt(x[i, 0] ** 2 + x[i, 1] ** 2 + x[i, 2] ** 2)

@ti.kernel
def k_sum(x: nd, total: nd):
    for i in x:
        total[0] += x[i]

@ti.kernel
def k_step(p: nd, v: nd, dt: ti.f32):
    for i in range(p.shape[0]):
        v[i, 1] += -9.8 * dt
        for c in ti.static(range(3)):
            p[i, c] += v[i, c] * dt

def run_all():
    x = np.ones(16, np.float32); y = np.ones(16, np.float32); v = np.ones((16, 3), np.float32)
    k_saxpy(x, y, 2.0); k_scale(x, 2.0); k_norm(v, x); k_sum(x, y); k_step(v, v.copy(), 0.1)
    ti.sync()
'''


def _child_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    return env


def _run(peer: str, work: Path, cache: Path, env: dict[str, str]) -> tuple[float, float | None]:
    env = dict(env, BENCH_DIR=str(work), BENCH_CACHE=str(cache), NUMBA_CACHE_DIR=str(cache))
    driver = textwrap.dedent(_DRIVERS[peer].replace("\n        LAUNCH_EACH_KERNEL", _LAUNCH_EACH_KERNEL))
    proc = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{peer} compile benchmark failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(out["seconds"]), (float(out["init"]) if "init" in out else None)


def cold_warm(peer: str, n_kernels: int = 5, warm_runs: int = 9) -> tuple[float, float, float | None]:
    """``(cold seconds, median warm seconds, median warm seconds with init)`` for ``peer`` and ``n_kernels`` kernels.

    Warm starts take a few milliseconds, so one busy moment of a shared machine moves a single run by several: the
    median of ``warm_runs`` fresh processes is taken. The third figure adds ``wp.init()`` to each warm start (Warp-API
    peers; ``None`` for the others).
    """
    with tempfile.TemporaryDirectory(prefix=f"bench-compile-{peer}-") as d:
        tmp = Path(d)
        work = tmp / "src"
        work.mkdir()
        if peer in ("treadle", "warp"):
            (work / "kmod.py").write_text(module_source(peer, n_kernels))
        elif peer == "numba":
            body = "".join(_NUMBA_TEMPLATES[i % 5].format(i=i, c=float(i) * 0.5) for i in range(n_kernels))
            (work / "nmod.py").write_text("import numpy as np\nfrom numba import njit\n"
                                          + body.replace("def f_", "@njit(cache=True)\ndef f_"))
        else:
            (work / "tmod.py").write_text(_TAICHI_MODULE)
        env = _child_env(tmp)
        # prime bytecode caches of the library itself with a throwaway cache, then measure with an empty one
        _run(peer, work, tmp / "prime-cache", env)
        cache = tmp / "cache"
        cold = _run(peer, work, cache, env)[0]
        runs = [_run(peer, work, cache, env) for _ in range(warm_runs)]
        warm = sorted(r[0] for r in runs)[warm_runs // 2]
        with_init = sorted(r[0] + r[1] for r in runs if r[1] is not None)
        return cold, warm, (with_init[len(with_init) // 2] if len(with_init) == warm_runs else None)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.compile_time [--kernels 100]``: the compile-at-scale rows (``compile_scale.py``).

    A generated program of N differentiated kernels, cold with the default toolchain (clang++ when installed), cold
    with g++ only, and warm over the cache, each in fresh processes with empty caches, against warp-lang in the same
    run; the 5- and 50-kernel module rows run with the other workloads (``python -m benchmarks``).
    """
    from .compile_scale import main as scale_main

    return scale_main(argv)


if __name__ == "__main__":
    sys.exit(main())
