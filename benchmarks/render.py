"""Renderer benchmarks: ``render_points`` of 1M points per frame into USD and into OpenGL.

``python -m benchmarks.render`` (``--points N``, ``--frames N``, ``--quick``, ``--json FILE``). USD rows time
``begin_frame`` + ``render_points`` + ``end_frame`` per frame, and the ``save`` of the whole animation into a binary
``.usd`` file, for Treadle's ``UsdRenderer`` and warp-lang's in the same run, on the same NumPy inputs (warp-lang's
USD renderer takes NumPy arrays; Treadle's also takes Treadle arrays, one more row). The two libraries take turns
within every frame; the table gives each one's median time per frame and the ratio ``warp / treadle`` (> 1:
Treadle is faster). The OpenGL row times Treadle's renderer headless (upload + draw + ``glFinish`` through
``get_pixels``); warp-lang's OpenGL renderer needs CUDA, so it has no peer on a CPU-only machine. The machine may be
shared: only same-run ratios mean much.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _frames(n: int, count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(-10.0, 10.0, (n, 3)).astype(np.float32)
    return [base + np.float32(0.01 * f) * rng.standard_normal((n, 3)).astype(np.float32) for f in range(count)]


def _usd_case(renderers: dict[str, Any], frames: list[np.ndarray], radius: Any, colors: Any,
              as_arrays: dict[str, Any] | None = None) -> dict[str, dict[str, float]]:
    """Per library: median seconds per frame and the save time."""
    per_frame: dict[str, list[float]] = {k: [] for k in renderers}
    for f, pts in enumerate(frames):
        for name, r in renderers.items():  # take turns within a frame
            p = as_arrays[name][f] if as_arrays and name in as_arrays else pts
            t0 = time.perf_counter()
            r.begin_frame(f / 60.0)
            r.render_points("points", p, radius=radius, colors=colors)
            r.end_frame()
            per_frame[name].append(time.perf_counter() - t0)
    out = {}
    for name, r in renderers.items():
        t0 = time.perf_counter()
        r.save()
        out[name] = {"frame_s": statistics.median(per_frame[name]), "save_s": time.perf_counter() - t0}
    return out


def bench_usd(n: int, count: int, tmp: str) -> list[dict[str, Any]]:
    import treadle as tp
    import treadle.render as trender

    try:
        import warp as wl
        import warp.render as wrender

        wl.config.quiet = True
        wl.init()
    except ImportError:
        wl = wrender = None
    frames = _frames(n, count)
    rows = []
    cases = [("1 radius, 1 colour", 0.05, (0.8, 0.3, 0.2)),
             ("radius + colour per point", np.full(n, 0.05, np.float32),
              np.random.default_rng(1).uniform(0, 1, (n, 3)).astype(np.float32))]
    for label, radius, colors in cases:
        renderers: dict[str, Any] = {"treadle": trender.UsdRenderer(os.path.join(tmp, f"t_{len(rows)}.usd")),
                                     "treadle (wp.array)": trender.UsdRenderer(os.path.join(tmp, f"a_{len(rows)}.usd"))}
        arrays = {"treadle (wp.array)": [tp.array(p, dtype=tp.vec3) for p in frames]}
        if wrender is not None:
            renderers["warp"] = wrender.UsdRenderer(os.path.join(tmp, f"w_{len(rows)}.usd"))
        res = _usd_case(renderers, frames, radius, colors, arrays)
        rows.append({"case": f"USD render_points, {label}", "n": n, **{k: v for k, v in res.items()}})
    return rows


def bench_opengl(n: int, count: int) -> dict[str, Any]:
    import treadle as tp
    import treadle.render as trender

    try:
        r = trender.OpenGLRenderer(screen_width=512, screen_height=384, headless=True, draw_grid=False,
                                   show_info=False, camera_pos=(0.0, 0.0, 40.0), far_plane=200.0)
    except (ImportError, RuntimeError) as exc:
        return {"case": "OpenGL render_points", "n": n, "skipped": str(exc)}
    frames = _frames(n, count)
    pixels = tp.zeros((r.screen_height, r.screen_width, 3), dtype=float)
    upload, total = [], []
    for f, pts in enumerate(frames):
        t0 = time.perf_counter()
        r.begin_frame(f / 60.0)
        r.render_points("points", pts, radius=0.05, colors=(0.8, 0.3, 0.2))
        t1 = time.perf_counter()
        r.end_frame()
        r.get_pixels(pixels)  # waits for the frame to finish
        total.append(time.perf_counter() - t0)
        upload.append(t1 - t0)
    covered = float((pixels.numpy().sum(axis=-1) > 0).mean())
    r.clear()
    return {"case": "OpenGL render_points (headless)", "n": n,
            "treadle": {"frame_s": statistics.median(total), "upload_s": statistics.median(upload)},
            "warp": "needs CUDA", "image_nonblank": covered}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--frames", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="3 frames")
    p.add_argument("--json", default=None, help="write the raw figures here")
    a = p.parse_args(argv)
    frames = 3 if a.quick else a.frames
    with tempfile.TemporaryDirectory(prefix="treadle-render-bench-") as tmp:
        rows = bench_usd(a.points, frames, tmp)
    rows.append(bench_opengl(a.points, frames))
    print(f"render_points of {a.points:,} points, {frames} frames (median per frame; the machine may be shared)")
    print(f"{'case':<48} {'treadle':>12} {'treadle wp.array':>17} {'warp':>12} {'warp/treadle':>13}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['case']:<48} skipped: {row['skipped']}")
            continue
        t = row["treadle"]["frame_s"]
        ta = row.get("treadle (wp.array)", {}).get("frame_s")
        w = row.get("warp")
        w_s = w["frame_s"] if isinstance(w, dict) else None
        print(f"{row['case']:<48} {t * 1e3:>10.1f}ms {'' if ta is None else f'{ta * 1e3:.1f}ms':>17} "
              f"{(f'{w_s * 1e3:.1f}ms' if w_s else str(w or 'absent')):>12} "
              f"{(f'{w_s / t:.2f}x' if w_s else '-'):>13}")
        if "save_s" in row["treadle"]:
            t_save = row["treadle"]["save_s"]
            w_save = w["save_s"] if isinstance(w, dict) else None
            print(f"{'  save() of the animation':<48} {t_save * 1e3:>10.1f}ms {'':>17} "
                  f"{(f'{w_save * 1e3:.1f}ms' if w_save else '-'):>12} "
                  f"{(f'{w_save / t_save:.2f}x' if w_save else '-'):>13}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
