"""Per-step time of the reference's tile example programs that run on its CPU, unchanged, on Treadle and warp-lang.

``python -m benchmarks.tile_examples`` (``--quick`` for fewer repetitions, ``--json FILE`` for the raw figures).
The example files are the ones in the installed warp-lang wheel (``warp/examples/tile``), loaded as modules. Each
peer runs in a process of its own: Treadle's with ``import warp`` resolved to Treadle (``treadle.install_warp_alias``,
as ``python -m treadle.warp_compat`` does), warp-lang's plainly, both on the CPU. A step is what the program repeats
(``Example.step()``, ``Example.render(slice)``) or, for programs that launch once, that launch with the program's own
inputs:

- ``nbody``: ``example_tile_nbody.Example(headless=True, num_bodies=4096).step()`` (all-pairs forces by tiles);
- ``mcgp``: ``example_tile_mcgp.Example(...).render(i)`` (walk-on-spheres over a mesh, a 64x64 slice of 64-walk tiles);
- ``matmul``: the program's ``tile_gemm`` launch under a ``Tape`` (float32 x float16 -> float64 tiles);
- ``cholesky``: the program's 32x32 ``cholesky`` solve launch;
- ``block_cholesky``: ``BlockCholeskySolver.factorize`` + ``solve`` of a 256x256 system (blocks of 16).

Each figure is the fastest of several timed steps after one untimed step (kernel loading); ``peer / treadle`` > 1
means Treadle is faster. The machine may be shared: only same-run ratios mean much. Examples that need CUDA
(fft, convolution, filtering, stream compaction, the graph-captured MLP) are not part of it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

PEERS = ("treadle", "warp-lang")
STEPS = ("nbody", "mcgp", "matmul", "cholesky", "block_cholesky")


def examples_dir() -> Path:
    """``warp/examples/tile`` of the installed warp-lang wheel (found without importing it)."""
    dist = importlib.metadata.distribution("warp-lang")
    return Path(str(dist.locate_file("warp/examples/tile")))


def load_example(name: str) -> ModuleType:
    """Load ``example_tile_<name>.py`` as a module (its ``__main__`` block does not run)."""
    path = examples_dir() / f"example_tile_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_tile_{name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def make_steps(wp: Any) -> dict[str, Callable[[], Any]]:
    """One step callable per example, its state built (the example's own classes and inputs)."""
    steps: dict[str, Callable[[], Any]] = {}

    nbody = load_example("nbody").Example(headless=True, num_bodies=4096)
    steps["nbody"] = nbody.step

    mcgp = load_example("mcgp").Example(42, height=64, slices=8, sphere_resolution=32)
    slice_i = [0]

    def mcgp_step() -> None:
        with contextlib.redirect_stdout(io.StringIO()):  # the example prints each slice
            mcgp.render(slice_i[0] % mcgp.slices)
        slice_i[0] += 1

    steps["mcgp"] = mcgp_step

    mm = load_example("matmul")
    m, k, n = mm.TILE_M * 7, mm.TILE_K * 6, mm.TILE_N * 5
    rng = np.random.default_rng(42)
    a_np = rng.random((m, k), dtype=np.float32)
    b_np = rng.random((k, n), dtype=np.float32).astype(np.float16)
    a = wp.array(a_np, requires_grad=True)
    b = wp.array(b_np, requires_grad=True)
    c = wp.array(np.zeros((m, n), dtype=np.float64), requires_grad=True)

    def matmul_step() -> None:
        with wp.Tape():
            wp.launch_tiled(mm.tile_gemm, dim=(m // mm.TILE_M, n // mm.TILE_N), inputs=[a, b], outputs=[c],
                            block_dim=mm.TILE_THREADS)

    steps["matmul"] = matmul_step

    ch = load_example("cholesky")
    t = ch.TILE
    a_h = np.ones((t, t), dtype=ch.np_type) + 5 * np.eye(t, dtype=ch.np_type)
    cargs = [wp.array2d(a_h, dtype=ch.wp_type), wp.array2d(np.zeros_like(a_h), dtype=ch.wp_type),
             wp.array1d(np.arange(t, dtype=ch.np_type), dtype=ch.wp_type),
             wp.array1d(np.zeros(t, dtype=ch.np_type), dtype=ch.wp_type)]
    steps["cholesky"] = lambda: wp.launch_tiled(ch.cholesky, dim=[1, 1], inputs=cargs, block_dim=ch.BLOCK_DIM)

    bc = load_example("block_cholesky")
    size = 256
    spd = rng.standard_normal((size, size))
    spd = spd @ spd.T + size * np.eye(size)
    solver = bc.BlockCholeskySolver(size, block_size=16, device="cpu")
    a_wp = wp.array(spd.astype(np.float32), dtype=float)
    rhs = wp.array(rng.standard_normal((size, 1)).astype(np.float32), dtype=float)
    x = wp.zeros((size, 1), dtype=float)

    def block_cholesky_step() -> None:
        solver.factorize(a_wp, size)
        solver.solve(rhs, x)

    steps["block_cholesky"] = block_cholesky_step
    return steps


def worker(peer: str, reps: int, out: Path) -> None:
    """Time every step with one peer (run in a process of its own) and write ``{step: seconds}`` to ``out``."""
    if peer == "treadle":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        import treadle

        treadle.install_warp_alias()
    import warp as wp

    wp.config.quiet = True
    wp.init()
    with wp.ScopedDevice("cpu"):
        steps = make_steps(wp)
        res: dict[str, float] = {}
        for name, step in steps.items():
            step()  # loads the kernels
            wp.synchronize()
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                step()
                wp.synchronize()
                best = min(best, time.perf_counter() - t0)
            res[name] = best
    out.write_text(json.dumps(res))


def run(reps: int) -> dict[str, dict[str, float]]:
    """Every peer's step times, each peer in a fresh process (``{peer: {step: seconds}}``)."""
    import tempfile

    res: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for peer in PEERS:
            out = Path(tmp) / f"{peer}.json"
            cmd = [sys.executable, "-m", "benchmarks.tile_examples", "--worker", peer, "--reps", str(reps),
                   "--out", str(out)]
            proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{peer} worker failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            res[peer] = json.loads(out.read_text())
    return res


def table(res: dict[str, dict[str, float]]) -> str:
    """A Markdown table of the step times (ms) and the ratio warp-lang / Treadle."""
    lines = ["| example step | Treadle ms | warp-lang CPU ms | warp/Treadle |", "|---|---|---|---|"]
    for name in STEPS:
        t, w = res["treadle"][name] * 1e3, res["warp-lang"][name] * 1e3
        lines.append(f"| {name} | {t:.3g} | {w:.3g} | {w / t:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer timed steps")
    ap.add_argument("--json", type=Path, help="write the raw figures here")
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    reps = args.reps or (3 if args.quick else 7)
    if args.worker:
        worker(args.worker, reps, args.out)
        return
    res = run(reps)
    print(table(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
