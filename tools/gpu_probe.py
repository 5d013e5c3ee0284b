"""Where GPU launch time and memory bandwidth go: Treadle's layers against the raw driver and PyTorch.

    python tools/gpu_probe.py [--json PATH] [--ncu-target]

Run on a machine with a GPU (written for one short device session, under a minute). It measures

- the host cost of one launch, layer by layer: a raw ``cuLaunchKernel`` through ctypes with prepared parameters,
  ``CudaFunction.launch``, ``CudaPlan.run``, a recorded ``Launch.launch()``, ``wp.launch``, and PyTorch's smallest
  in-place op on the same device for scale;
- saxpy bandwidth over 2^28 floats: Treadle's kernel (default block size, 128 threads, a capped grid), the same
  arithmetic as a hand-written CUDA kernel through the same NVRTC and driver (plain pointers, then byte strides as
  Treadle's arrays use), and PyTorch's ``add_``; plus device-to-device copies by both.

``--ncu-target`` runs only one Treadle saxpy launch (for ``ncu -k regex:cuda_forward``). The SASS of Treadle's saxpy
is written next to the JSON (``saxpy.cubin``) for ``cuobjdump --dump-sass``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RAW = r"""
extern "C" __global__ void raw_saxpy(const float* __restrict__ x, float* __restrict__ y, float a, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void strided_saxpy(const char* x, char* y, float a, long long n, long long sx, long long sy)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float* py = (float*)(y + i * sy);
        *py = a * *(const float*)(x + i * sx) + *py;
    }
}
"""


def host_us(fn: Any, sync: Any, n: int = 20000) -> float:
    from benchmarks.gpu import host_us as timed

    return timed(fn, sync, n)


def events_ms(wp: Any, dev: Any, fn: Any, reps: int = 10) -> float:
    from benchmarks.gpu import events_ms as timed

    return timed(wp, dev, fn, reps)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--ncu-target", action="store_true")
    a = ap.parse_args()
    import numpy as np

    import treadle as wp
    from benchmarks.kernels import build
    from treadle._src.backends.cuda import build as cb
    from treadle._src.runtime import cuda_driver as cd

    k = build(wp)
    dev = wp.get_device("cuda:0")
    out_dir = Path(a.json).parent if a.json else Path(os.environ.get("OUT", "."))
    n = 1 << 28
    x = wp.full(n, 1.0, dtype=float, device=dev)
    y = wp.full(n, 2.0, dtype=float, device=dev)
    if a.ncu_target:
        wp.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev)
        wp.synchronize_device(dev)
        return 0
    r: dict[str, Any] = {}
    sync = lambda: wp.synchronize_device(dev)  # noqa: E731

    # ---- launch overhead, layer by layer
    try:
        z = wp.zeros(1, dtype=float, device=dev)
        cmd = wp.launch(k.three_args, 1, inputs=[z, 1.0, 3], device=dev, record_cmd=True)
        plan, fn = cmd.plan, cmd.plan.fn
        lib = cd._STATE.lib
        bounds, args = cmd.bounds, cmd.args
        s = dev.stream.cuda_stream
        p = (ctypes.c_void_p * 2)(ctypes.addressof(bounds), ctypes.addressof(args))
        pp = ctypes.addressof(p)
        h = fn.handle
        r["us_python_noop"] = host_us(lambda: None, sync)
        r["us_raw_ctypes_launch"] = host_us(lambda: lib.cuLaunchKernel(h, 1, 1, 1, 256, 1, 1, 0, s, pp, None), sync)
        r["us_ensure_current"] = host_us(dev.ensure_current, sync)
        r["us_stream_handle"] = host_us(lambda: dev.stream.cuda_stream, sync)
        r["us_fn_launch"] = host_us(lambda: fn.launch(bounds, args), sync)
        r["us_plan_run"] = host_us(lambda: plan.run(bounds, args), sync)
        r["us_recorded_launch"] = host_us(cmd.launch, sync)
        r["us_wp_launch"] = host_us(lambda: wp.launch(k.three_args, 1, inputs=[z, 1.0, 3], device=dev), sync)
    except Exception as e:  # noqa: BLE001
        r["launch"] = f"{type(e).__name__}: {e}"
    try:
        import torch

        t = torch.zeros(1, device="cuda")
        r["us_torch_add_"] = host_us(lambda: t.add_(1.0), torch.cuda.synchronize)
    except Exception as e:  # noqa: BLE001
        r["torch"] = f"{type(e).__name__}: {e}"

    # ---- bandwidth
    gb = 3 * 4 * n / 1e6
    r["saxpy_treadle"] = gb / events_ms(wp, dev, lambda: wp.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev))
    r["saxpy_treadle_b128"] = gb / events_ms(wp, dev, lambda: wp.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev,
                                                                        block_dim=128))
    from treadle._src.backends.cuda.launch import forward_plan as _forward_plan

    resident = _forward_plan(k.saxpy, [x, y, 2.0], dev).fn.resident_blocks(256)
    r["resident_blocks"] = resident
    for name, mb in (("waves1", resident), ("waves2", 2 * resident), ("waves4", 4 * resident),
                     ("waves16", 16 * resident), ("uncapped", 2**31 - 1)):
        r[f"saxpy_treadle_{name}"] = gb / events_ms(
            wp, dev, lambda mb=mb: wp.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev, max_blocks=mb))
    nb = 32768
    pos = wp.array(np.random.default_rng(3).random((nb, 3)).astype(np.float32), dtype=wp.vec3, device=dev)
    acc = wp.zeros(nb, dtype=wp.vec3, device=dev)
    for bd in (256, 128, 64):
        r[f"nbody_ms_b{bd}"] = events_ms(
            wp, dev, lambda bd=bd: wp.launch(k.nbody, nb, inputs=[pos, acc, nb], device=dev, block_dim=bd), 3)
    r["copy_treadle"] = 2 * 4 * n / 1e6 / events_ms(wp, dev, lambda: wp.copy(y, x))

    @wp.kernel(module="probe_no_prefetch", module_options={"cuda_prefetch": False})
    def saxpy_np(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel(module="probe_no_prefetch", module_options={"cuda_prefetch": False})
    def triad_np(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = b[i] + s * c[i]

    r["saxpy_treadle_no_prefetch"] = gb / events_ms(wp, dev, lambda: wp.launch(saxpy_np, n, inputs=[x, y, 2.0]))
    c = wp.full(n, 3.0, dtype=float, device=dev)
    r["triad_treadle"] = gb / events_ms(wp, dev, lambda: wp.launch(k.triad, n, inputs=[c, x, y, 2.0]))
    r["triad_treadle_no_prefetch"] = gb / events_ms(wp, dev, lambda: wp.launch(triad_np, n, inputs=[c, x, y, 2.0]))
    try:
        binary, _ = cb.get_nvrtc().compile(RAW, "raw.cu", [f"-arch=sm_{dev.arch}"], "cubin")
        mod = cd.load_module(dev, binary)
        for name in ("raw_saxpy", "strided_saxpy"):
            f = cd.call("cuModuleGetFunction", mod.handle, name.encode())
            fh = cd.handle(f)
            xa, ya = ctypes.c_void_p(x.ptr), ctypes.c_void_p(y.ptr)
            av, nv = ctypes.c_float(2.0), ctypes.c_longlong(n)
            s4 = ctypes.c_longlong(4)
            vals = [xa, ya, av, nv] + ([s4, s4] if name == "strided_saxpy" else [])
            params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
            blocks = (n + 255) // 256

            def go(fh: int = fh, params: Any = params, blocks: int = blocks) -> None:
                dev.ensure_current()
                err = lib.cuLaunchKernel(fh, blocks, 1, 1, 256, 1, 1, 0, dev.stream.cuda_stream, ctypes.addressof(params),
                                         None)
                assert err == 0, err

            r[f"saxpy_{name}"] = gb / events_ms(wp, dev, go)
    except Exception as e:  # noqa: BLE001
        r["raw"] = f"{type(e).__name__}: {e}"
    try:
        import torch

        tx = torch.ones(n, device="cuda")
        ty = torch.full((n,), 2.0, device="cuda")
        ms = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                ty.add_(tx, alpha=2.0)
            e1.record()
            torch.cuda.synchronize()
            ms.append(e0.elapsed_time(e1) / 10)
        r["saxpy_torch"] = gb / statistics.median(ms)
        ms = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                ty.copy_(tx)
            e1.record()
            torch.cuda.synchronize()
            ms.append(e0.elapsed_time(e1) / 10)
        r["copy_torch"] = 2 * 4 * n / 1e6 / statistics.median(ms)
        del tx, ty
    except Exception as e:  # noqa: BLE001
        r["torch_bw"] = f"{type(e).__name__}: {e}"
    y.fill_(2.0)
    wp.launch(k.saxpy, n, inputs=[x, y, 2.0], device=dev)
    r["saxpy_ok"] = bool(np.all(y.numpy()[::4096] == 4.0))
    try:
        shutil.copy(plan_path(wp, k, x, y, dev), out_dir / "saxpy.cubin")
    except Exception as e:  # noqa: BLE001
        r["cubin"] = f"{type(e).__name__}: {e}"
    try:
        geometry_builds(wp, dev, r)
    except Exception as e:  # noqa: BLE001
        r["geometry"] = f"{type(e).__name__}: {e}"
    for key, v in r.items():
        print(f"{key:28s} {v:.3f}" if isinstance(v, float) else f"{key:28s} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))
    return 0


def _grid_mesh(m: int) -> tuple[Any, Any]:
    import numpy as np

    u, v = np.meshgrid(np.linspace(0, 1, m + 1), np.linspace(0, 1, m + 1), indexing="ij")
    pts = np.stack([u.ravel(), v.ravel(), 0.1 * np.sin(7 * u.ravel()) * np.cos(5 * v.ravel())], 1).astype(np.float32)
    q = (np.arange(m)[:, None] * (m + 1) + np.arange(m)[None, :]).ravel()
    tris = np.concatenate([np.stack([q, q + m + 1, q + 1], 1), np.stack([q + 1, q + m + 1, q + m + 2], 1)])
    return pts, tris.astype(np.int32).ravel()


def geometry_builds(wp: Any, dev: Any, r: dict[str, Any]) -> None:
    """Wall time of Mesh (BVH) and HashGrid builds on the GPU and on the CPU (ms, after a warm-up build)."""
    import numpy as np

    def timed(fn: Any, device: Any) -> float:
        fn()
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        fn()
        wp.synchronize_device(device)
        return (time.perf_counter() - t0) * 1e3

    for m in (100, 300):  # 20k and 180k triangles
        pts, tris = _grid_mesh(m)
        for d in ("cpu", dev):
            p = wp.array(pts, dtype=wp.vec3, device=d)
            ix = wp.array(tris, dtype=wp.int32, device=d)
            for c in ("sah", "median", "lbvh"):
                key = f"mesh{len(tris) // 3}_{c}_{'cpu' if d == 'cpu' else 'gpu'}_ms"
                r[key] = timed(lambda p=p, ix=ix, c=c: wp.Mesh(points=p, indices=ix, bvh_constructor=c),
                               d if d == "cpu" else dev)
            mesh = wp.Mesh(points=p, indices=ix)
            r[f"mesh{len(tris) // 3}_refit_{'cpu' if d == 'cpu' else 'gpu'}_ms"] = timed(mesh.refit, d)
        if r.get(f"mesh{len(tris) // 3}_sah_gpu_ms", 0) > 3000:
            break  # the larger size would run for minutes
    pts = np.random.default_rng(1).random((1 << 20, 3)).astype(np.float32)
    for d in ("cpu", dev):
        grid = wp.HashGrid(128, 128, 128, device=d)
        p = wp.array(pts, dtype=wp.vec3, device=d)
        r[f"hashgrid1M_build_{'cpu' if d == 'cpu' else 'gpu'}_ms"] = timed(lambda g=grid, p=p: g.build(p, 0.01), d)


def plan_path(wp: Any, k: Any, x: Any, y: Any, dev: Any) -> Path:
    from treadle._src.backends.cuda.launch import forward_plan as _forward_plan

    plan = _forward_plan(k.saxpy, [x, y, 2.0], dev)
    return Path(plan.fn.module.label)


if __name__ == "__main__":
    sys.exit(main())
