"""``warp.geometry`` benchmarks: Treadle's ``treadle.geometry`` against warp-lang's (CPU) in the same run.

``python -m benchmarks.geometry_lib`` (``--quick`` for fewer repetitions, ``--json FILE`` for the raw figures). Both
libraries get the same inputs, built by the same kernel source (``build(wp)``): iso-surfaces of a torus SDF on a
128^3 grid (marching cubes, surface nets), sparse marching cubes of the same torus on a 256^3 grid with a batched
SDF kernel, a swept volume (a sphere mesh over 16 poses, field and envelope), triangle adjacency and Delaunay flips
of a jittered 200 x 200 grid. The libraries take turns within every round; the table gives each one's fastest time
and the ratio ``warp / treadle`` (> 1: Treadle is faster). The machine may be shared: only same-run ratios mean much.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.geometry import interleaved, sphere_grid_mesh  # noqa: E402

MAJOR, MINOR = 0.55, 0.22


def build(wp: Any) -> SimpleNamespace:
    """The field kernels compiled by the library ``wp`` (``treadle`` or ``warp``)."""

    @wp.func
    def torus(p: wp.vec3) -> float:
        q = wp.vec2(wp.sqrt(p[0] * p[0] + p[2] * p[2]) - 0.55, p[1])
        return wp.length(q) - 0.22

    @wp.kernel
    def torus_grid(field: wp.array3d(dtype=float), lower: wp.vec3, h: float):
        i, j, k = wp.tid()
        field[i, j, k] = torus(lower + wp.vec3(float(i), float(j), float(k)) * h)

    @wp.kernel
    def torus_points(points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = torus(points[i])

    return SimpleNamespace(torus_grid=torus_grid, torus_points=torus_points)


def jittered_grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Points of an n x n grid jittered by 0.3, squares split along random diagonals (counter-clockwise)."""
    rng = np.random.default_rng(2)
    pts = np.array([[i, j] for j in range(n) for i in range(n)], np.float64) + rng.uniform(-0.3, 0.3, (n * n, 2))
    j, i = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (j * n + i).reshape(-1)
    b, c, d = a + 1, a + n, a + n + 1
    pick = rng.random(len(a)) < 0.5
    t1 = np.where(pick[:, None], np.stack([a, b, d], 1), np.stack([a, b, c], 1))
    t2 = np.where(pick[:, None], np.stack([a, d, c], 1), np.stack([b, d, c], 1))
    tris = np.stack([t1, t2], 1).reshape(-1, 3).astype(np.int32)
    p = pts[tris]
    area = (p[:, 1, 0] - p[:, 0, 0]) * (p[:, 2, 1] - p[:, 0, 1]) - (p[:, 1, 1] - p[:, 0, 1]) * (p[:, 2, 0] - p[:, 0, 0])
    return pts.astype(np.float32), tris[area > 0]


def workloads(m: Any, k: Any) -> dict[str, Callable[[], Any]]:
    """The workloads of one library as ready-to-time calls (inputs built and warmed up here)."""
    geo = m.geometry
    out: dict[str, Callable[[], Any]] = {}
    n = 128
    field = m.zeros((n, n, n), dtype=float)
    m.launch(k.torus_grid, dim=(n, n, n), inputs=[field, m.vec3(-1.0, -1.0, -1.0), 2.0 / (n - 1)])
    box = {"lower": (-1.0, -1.0, -1.0), "upper": (1.0, 1.0, 1.0)}
    out["mc"] = lambda: geo.IsoSurfaceMarchingCubes.extract(field, 0.0, **box)
    out["nets"] = lambda: geo.IsoSurfaceNets.extract(field, 0.0, **box)

    def sdf(points: Any) -> Any:
        values = m.empty(points.shape[0], dtype=float, device=points.device)
        m.launch(k.torus_points, dim=points.shape[0], inputs=[points, values], device=points.device)
        return values

    out["sparse"] = lambda: geo.sparse_marching_cubes(sdf, 256, 256, 256, **box)
    sp, st = sphere_grid_mesh(16)
    sphere = m.Mesh(m.array(sp - 0.5, dtype=m.vec3), m.array(st.ravel(), dtype=m.int32), support_winding_number=True)
    t = np.linspace(0.0, 1.0, 16)
    poses = np.zeros((1, 16, 7), np.float32)
    poses[0, :, 0], poses[0, :, 1], poses[0, :, 2] = 1.5 * t, 0.4 * np.sin(3 * t), 0.3 * t
    poses[0, :, 6] = 1.0
    out["swept_field"] = lambda: geo.swept_volume_field([sphere], poses, voxel_size=0.06)
    out["swept_mesh"] = lambda: geo.swept_volume_mesh([sphere], poses, voxel_size=0.06, threshold=0.02)
    pts, tris = jittered_grid(200)
    positions = m.array(pts, dtype=m.vec2)
    indices = m.array(tris, dtype=m.int32)
    out["adjacency"] = lambda: geo.tri_tri_adjacency(indices)

    def flips() -> None:
        geo.delaunay_edge_flip(positions, m.array(tris, dtype=m.int32))

    out["delaunay"] = flips
    for fn in out.values():  # compile and warm up
        fn()
    return out


ROWS = [
    ("mc", "IsoSurfaceMarchingCubes.extract, torus, 128^3"),
    ("nets", "IsoSurfaceNets.extract, torus, 128^3"),
    ("sparse", "sparse_marching_cubes, torus, 256^3 grid, batched SDF kernel"),
    ("swept_field", "swept_volume_field, sphere (1k triangles) x 16 poses, voxel 0.06"),
    ("swept_mesh", "swept_volume_mesh, same, threshold 0.02"),
    ("adjacency", "tri_tri_adjacency, 79k triangles"),
    ("delaunay", "delaunay_edge_flip, 79k triangles of a jittered grid"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import treadle
    import treadle.geometry  # noqa: F401 - the submodule under test

    treadle.init()
    libs = {"Treadle": workloads(treadle, build(treadle))}
    try:
        import warp
        import warp.geometry  # noqa: F401

        warp.config.quiet = True
        warp.init()
        libs["Warp CPU"] = workloads(warp, build(warp))
    except ImportError:
        print("warp-lang (1.19 or later) is not installed: Treadle figures only", file=sys.stderr)
    res: dict[str, dict[str, tuple[float, float]]] = {lib: {} for lib in libs}
    rounds, reps = (2, 1) if a.quick else (5, 2)
    t0 = time.perf_counter()
    for key, _ in ROWS:
        calls = {lib: w[key] for lib, w in libs.items() if key in w}
        slow = key.startswith("swept")
        for lib, t in interleaved(calls, 2 if slow else rounds, 1 if slow else reps).items():
            res[lib][key] = t
    warp_res = res.get("Warp CPU", {})
    print("| workload | Treadle ms | Warp CPU ms | Warp/Treadle | Treadle CPU ms | Warp CPU-time ms | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    nan = (float("nan"), float("nan"))
    for key, label in ROWS:
        t = res["Treadle"].get(key, nan)
        w = warp_res.get(key, nan)
        print(f"| {label} | {t[0] * 1e3:.3g} | {w[0] * 1e3:.3g} | {w[0] / t[0]:.2f}x | {t[1] * 1e3:.3g} | "
              f"{w[1] * 1e3:.3g} | {w[1] / t[1]:.2f}x |")
    print(f"Wall: the best of the repetitions; CPU: process time of all threads. {time.perf_counter() - t0:.0f} s.")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
