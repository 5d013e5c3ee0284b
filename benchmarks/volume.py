"""Volume sampling benchmark: 16M trilinear samples of a 512^3 narrow-band level set, Treadle against warp-lang (CPU).

``python -m benchmarks.volume`` (``--points N`` to change the sample count, ``--quick`` for fewer repetitions).
The level set (a sphere of radius 200 voxels in a 512^3 domain, a band of +-3 voxels: about 27k tiles, 14M
voxels) is built with Treadle and saved as ``.nvdb``; warp-lang loads the same file, so both sample the identical
grid at the identical points (random, near the surface, where every sample reads stored voxels). The table gives
each library's fastest launch and the ratio ``warp / treadle`` (> 1: Treadle is faster). The machine may be shared:
only same-run ratios mean much.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import treadle as tr  # noqa: E402

N, CENTER, RADIUS, BAND = 512, 256.0, 200.0, 3.0


@tr.kernel
def _fill(vid: tr.uint64, tiles: tr.array(dtype=tr.vec3i), c: tr.vec3, r: float):
    t, n = tr.tid()
    o = tiles[t]
    i = o[0] + n // 64
    j = o[1] + (n // 8) % 8
    k = o[2] + n % 8
    p = tr.vec3(float(i), float(j), float(k))
    tr.volume_store_f(vid, i, j, k, tr.length(p - c) - r)


def level_set() -> tr.Volume:
    """The sphere's narrow band as a float volume (tiles within the band, every tile voxel holding its distance)."""
    g = np.arange(0, N, 8)
    origins = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    d = np.abs(np.linalg.norm(origins + 3.5 - CENTER, axis=1) - RADIUS)
    tiles = origins[d <= BAND + 8 * np.sqrt(3) / 2].astype(np.int32)
    vol = tr.Volume.allocate_by_tiles(tr.array(tiles, dtype=tr.vec3i), voxel_size=1.0, bg_value=BAND)
    tr.launch(_fill, (len(tiles), 512), inputs=[vol.id, tr.array(tiles, dtype=tr.vec3i), tr.vec3(CENTER, CENTER, CENTER),
                                               RADIUS])
    return vol


def points(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((n, 3)).astype(np.float32)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return (CENTER + d * (RADIUS + rng.uniform(-2.0, 2.0, (n, 1)).astype(np.float32))).astype(np.float32)


def sampler(wp: Any) -> Any:
    @wp.kernel
    def sample(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.volume_sample_f(vid, pts[i], wp.Volume.LINEAR)

    return sample


def best(fn: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    vol = level_set()
    build_s = time.perf_counter() - t0
    pts = points(args.points)
    print(f"level set: {vol.get_tile_count()} tiles, {vol.get_voxel_count()} voxels, "
          f"{vol.array().size / 2**20:.0f} MiB (built in {build_s:.2f} s); {args.points} samples")

    k = sampler(tr)
    p_tr = tr.array(pts, dtype=tr.vec3)
    out_tr = tr.zeros(args.points, dtype=float)
    tr.launch(k, args.points, inputs=[vol.id, p_tr, out_tr])  # compile and warm up
    ours = best(lambda: tr.launch(k, args.points, inputs=[vol.id, p_tr, out_tr]), 3 if args.quick else 7)
    exact = np.linalg.norm(pts.astype(np.float64) - CENTER, axis=1) - RADIUS
    err = float(np.abs(out_tr.numpy() - exact).max())
    rows = [("Treadle", ours)]

    try:
        import warp
    except ImportError:
        warp = None
    if warp is not None:
        warp.config.quiet = True
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "level_set.nvdb"
            vol.save_to_nvdb(str(path))
            wvol = warp.Volume.load_from_nvdb(path.read_bytes(), device="cpu")
        wk = sampler(warp)
        p_w = warp.array(pts, dtype=warp.vec3, device="cpu")
        out_w = warp.zeros(args.points, dtype=float, device="cpu")
        warp.launch(wk, args.points, inputs=[wvol.id, p_w, out_w], device="cpu")
        theirs = best(lambda: (warp.launch(wk, args.points, inputs=[wvol.id, p_w, out_w], device="cpu"),
                               warp.synchronize()), 1 if args.quick else 2)
        same = float(np.abs(out_w.numpy() - out_tr.numpy()).max())
        rows.append(("warp-lang (CPU)", theirs))
    print(f"\n| library | {args.points / 2**20:.0f}M trilinear samples, ms | Mpoints/s |")
    print("|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t * 1e3:.1f} | {args.points / t / 1e6:.1f} |")
    if warp is not None:
        print(f"\nwarp / treadle: {theirs / ours:.2f}x (target >= 4x); largest difference between the two: {same:.2e}")
    else:
        print("\nwarp-lang is not installed: no comparison")
    print(f"largest error against the exact distance: {err:.3f} voxels (trilinear interpolation of an SDF)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
