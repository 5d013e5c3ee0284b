"""Run the reference's warp.fem example programs on warp-lang or on Treadle and compare a figure of each.

Each example runs on warp-lang or on Treadle (through the Warp alias); the script prints whether it ran and the
norms of the discrete fields the example object holds.

    python tools/run_fem_examples.py treadle [names...]    # Treadle through the Warp alias
    python tools/run_fem_examples.py warp [names...]       # warp-lang itself (CPU)

Each example runs in its own process with the options below (small resolutions, few frames, headless, quiet).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

OPTIONS = {
    "example_adaptive_grid": ["--resolution", "8", "--level-count", "2"],
    "example_apic_fluid": ["--num-frames", "2"],
    "example_apic_fluid_multi_env": ["--num-frames", "2"],
    "example_burgers": ["--resolution", "10", "--num-frames", "5"],
    "example_cantilever_topology_optimization": ["--nx", "12", "--ny", "4", "--nz", "4", "--max-evals", "2"],
    "example_convection_diffusion": ["--resolution", "20", "--num-frames", "5"],
    "example_convection_diffusion_dg": ["--resolution", "10", "--num-frames", "5"],
    "example_darcy_ls_optimization": ["--resolution", "16", "--num-iters", "3"],
    "example_deformed_geometry": ["--resolution", "16"],
    "example_diffusion": ["--resolution", "16"],
    "example_diffusion_3d": ["--resolution", "8"],
    "example_diffusion_mgpu": [],
    "example_distortion_energy": ["--resolution", "8"],
    "example_elastic_shape_optimization": ["--resolution", "8", "--num-iters", "3"],
    "example_kelvin_helmholtz": ["--resolution", "12", "--num-frames", "3"],
    "example_magnetostatics": ["--resolution", "8"],
    "example_mixed_elasticity": ["--resolution", "10"],
    "example_navier_stokes": ["--resolution", "10", "--num-frames", "3"],
    "example_nonconforming_contact": ["--resolution", "8", "--num-steps", "2"],
    "example_shallow_water": ["--resolution", "12", "--num-frames", "3"],
    "example_stokes": ["--resolution", "10"],
    "example_stokes_transfer": ["--resolution", "10"],
    "example_streamlines": ["--resolution", "8"],
    "example_taylor_green": ["--resolution", "10", "--num-frames", "3"],
}

CHILD = r'''
import json, os, runpy, sys, time
mode, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if mode == "treadle":
    import treadle
    treadle.install_warp_alias()
import numpy as np
import warp as wp
wp.config.quiet = True
if mode == "treadle":
    # examples import sibling example programs (warp.examples.fem.example_*): load those from the reference's tree
    import importlib.util, glob
    for sib in glob.glob(os.path.join(os.path.dirname(path), "example_*.py")):
        mod = "warp.examples.fem." + os.path.basename(sib)[:-3]
        spec = importlib.util.spec_from_file_location(mod, sib)
        m = importlib.util.module_from_spec(spec)
        sys.modules[mod] = m
    for sib in list(sys.modules):
        if sib.startswith("warp.examples.fem.example_") and getattr(sys.modules[sib], "__spec__", None) is not None \
                and not hasattr(sys.modules[sib], "Example"):
            try:
                sys.modules[sib].__spec__.loader.exec_module(sys.modules[sib])
            except Exception as e:
                sys.modules.pop(sib, None)
sys.argv = [path] + args + ["--headless", "--quiet"]
t = time.perf_counter()
g = runpy.run_path(path, run_name="__main__")
elapsed = time.perf_counter() - t
import warp.fem as fem
ex = g.get("example")
figures = {}
if ex is not None:
    for name in sorted(vars(ex)):
        v = getattr(ex, name)
        if isinstance(v, fem.DiscreteField):
            d = v.dof_values.numpy().astype(np.float64)
            figures[name] = float(np.sqrt((d * d).sum()))
print("@@RESULT" + json.dumps({"seconds": elapsed, "figures": figures}))
'''


def run(mode: str, name: str, timeout: float) -> dict:
    if mode == "warp":
        import importlib.util

        spec = importlib.util.find_spec("warp")
        root = os.path.dirname(spec.origin)  # type: ignore[union-attr, arg-type]
    else:
        root = os.environ.get("WARP_EXAMPLES", "")
        if not root:
            out = subprocess.run([sys.executable, "-c", "import importlib.util, os; "
                                  "print(os.path.dirname(importlib.util.find_spec('warp').origin))"],
                                 capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                                       if k != "PYTHONPATH"})
            root = out.stdout.strip()
    path = os.path.join(root, "examples", "fem", name + ".py")
    env = dict(os.environ)
    if mode == "treadle":
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, mode, path, *OPTIONS.get(name, [])], capture_output=True,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": time.perf_counter() - t}
    for line in p.stdout.splitlines():
        if line.startswith("@@RESULT"):
            r = json.loads(line[8:])
            r["status"] = "ok"
            return r
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    return {"status": "failed", "seconds": time.perf_counter() - t, "error": " | ".join(tail)[-400:]}


def main() -> None:
    mode = sys.argv[1]
    names = sys.argv[2:] or sorted(OPTIONS)
    timeout = float(os.environ.get("FEM_EXAMPLE_TIMEOUT", "600"))
    results = {}
    for name in names:
        r = run(mode, name, timeout)
        results[name] = r
        figs = " ".join(f"{k}={v:.6g}" for k, v in r.get("figures", {}).items())
        print(f"{name}: {r['status']} ({r['seconds']:.1f}s) {figs} {r.get('error', '')}", flush=True)
    out = os.environ.get("FEM_EXAMPLE_JSON")
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
