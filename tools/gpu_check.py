"""One-shot check of the CUDA backend on a machine with a GPU (written without one: run it when a GPU is lent).

    python tools/gpu_check.py [--quick] [--json PATH]

Sections (each prints PASS/FAIL and carries on; the exit code is 1 if any check failed):

1. environment: driver, NVRTC, devices;
2. load: every kernel of the test suite (forward and backward) compiled for the device's exact architecture and
   loaded by the driver (``--quick`` skips it);
3. runtime: streams, events, timing, transfers, memset, memory pool, pinned memory;
4. kernels: a set of kernels launched on CUDA through ``load_cuda_kernel`` + ``CudaFunction.launch`` and compared
   with the CPU backend (1-d/3-d launches, vectors/matrices, structs, float/int atomics, random numbers, loops with
   break/continue, float16, a backward pass through a dynamic loop, checkpoint overflow and checked-mode reports);
5. benchmarks: device-to-device copy bandwidth, saxpy bandwidth (target: >= 85% of copy), n-body, host launch
   overhead (ctypes and cuda.bindings paths), and the same workloads with warp-lang when it is installed.

Results also go to ``--json`` (default ``$OUT/gpu_check.json`` when ``$OUT`` is set).
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import treadle as wp  # noqa: E402
from treadle._src.backends import cuda as cb  # noqa: E402
from treadle._src.lang.abi import LaunchBounds  # noqa: E402
from treadle._src.lang.launch import launch_bounds, make_packer  # noqa: E402
from treadle._src.runtime import cuda_driver as cd  # noqa: E402

REPORT: dict = {"checks": [], "bench": {}}
DRY_RUN = False


def check(name: str):
    def deco(fn):
        def run(*a, **kw):
            t0 = time.perf_counter()
            try:
                detail = fn(*a, **kw)
                ok = True
            except Exception as e:  # noqa: BLE001
                detail = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
                ok = False
            dt = time.perf_counter() - t0
            print(f"[{'PASS' if ok else 'FAIL'}] {name} ({dt:.2f} s){': ' + str(detail) if detail else ''}", flush=True)
            REPORT["checks"].append({"name": name, "ok": ok, "detail": str(detail or ""), "seconds": round(dt, 3)})
            return ok

        return run

    return deco


# ---------------------------------------------------------------------------------------------------------------
# Launching on CUDA before wp.launch knows CUDA: pack like the launcher, run through the backend
# ---------------------------------------------------------------------------------------------------------------


def pack(kernel, inputs, device):
    inst = kernel.get_instance(None)
    args = inst.args_type()
    for name, t, v in zip(kernel.param_names, inst.types, inputs):
        setattr(args, name, make_packer(name, t, kernel)(v, device))
    return inst, args


def cuda_launch(kernel, dim, inputs, device, adjoint=False, stream=None):
    inst, args = pack(kernel, inputs, device)
    fn = cb.load_cuda_kernel(inst, device, adjoint=adjoint)
    fn.launch(launch_bounds(dim), args, stream=stream)
    return fn


def to_dev(a, device):
    return wp.array(a.numpy(), dtype=a.dtype, device=device)


# ---------------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------------


@wp.struct
class Params:
    scale: float
    offset: wp.vec3


@wp.kernel(module="gpu_check")
def k_saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel(module="gpu_check")
def k_stencil(u: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    n0, n1, n2 = u.shape[0], u.shape[1], u.shape[2]
    if i > 0 and j > 0 and k > 0 and i < n0 - 1 and j < n1 - 1 and k < n2 - 1:
        out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1]
                        + u[i, j, k + 1] - 6.0 * u[i, j, k])


@wp.kernel(module="gpu_check")
def k_vec(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33), p: Params, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a = wp.normalize(v[i])
    out[i] = m[i] @ a * p.scale + wp.cross(a, p.offset) + p.offset


@wp.kernel(module="gpu_check")
def k_atomics(x: wp.array(dtype=float), keys: wp.array(dtype=wp.int32), total: wp.array(dtype=float),
              bins: wp.array(dtype=wp.int32), mx: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])
    wp.atomic_add(bins, keys[i] % 16, 1)
    wp.atomic_max(mx, 0, keys[i])


@wp.kernel(module="gpu_check")
def k_random(seed: int, out: wp.array(dtype=float), outi: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i] = wp.randf(s) + wp.randn(s)
    outi[i] = wp.randi(s)


@wp.kernel(module="gpu_check")
def k_loops(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    acc = wp.float32(0.0)
    j = wp.int32(0)
    while j < n:
        j += 1
        if j % 3 == 0:
            continue
        acc += x[i] * float(j)
        if acc > 1.0e6:
            break
    out[i] = acc


@wp.kernel(module="gpu_check")
def k_half(x: wp.array(dtype=wp.float16), out: wp.array(dtype=wp.float16)):
    i = wp.tid()
    out[i] = x[i] * wp.float16(2.0) + wp.float16(1.0)


@wp.kernel(module="gpu_check")
def k_loss(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.float32(0.0)
    for j in range(n):
        s = s + wp.sin(x[i] * float(j + 1)) * 0.5 + s * 0.01
    y[i] = s


@wp.kernel(module="gpu_check_debug", module_options={"mode": "debug"})
def k_oob(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i + 1]


@wp.kernel(module="gpu_check")
def k_empty(a: wp.array(dtype=float), s: float, n: int):
    pass


@wp.kernel(module="gpu_check")
def k_nbody(p: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    pi = p[i]
    a = wp.vec3()
    for j in range(p.shape[0]):
        d = p[j] - pi
        r2 = wp.dot(d, d) + 0.01
        a += d * (1.0 / (r2 * wp.sqrt(r2)))
    acc[i] = a


def compare(name, cpu, gpu, rtol=1e-5, atol=1e-6):
    c, g = cpu.numpy(), gpu.numpy()
    if not np.allclose(c.astype(np.float64), g.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True):
        err = np.max(np.abs(c.astype(np.float64) - g.astype(np.float64)))
        raise AssertionError(f"{name}: CPU and CUDA differ (max abs diff {err})")


def run_both(kernel, dim, make_inputs, outputs_idx, dev, **tol):
    """``make_inputs`` builds the arguments (CPU arrays: the current device is the CPU); the CUDA run gets copies."""
    cpu_in = make_inputs("cpu")
    wp.launch(kernel, dim, inputs=cpu_in, device="cpu")
    gpu_in = [to_dev(v, dev) if isinstance(v, wp.array) else v for v in make_inputs("cpu")]
    cuda_launch(kernel, dim, gpu_in, dev)
    dev.synchronize()
    for i in outputs_idx:
        compare(f"{kernel.key} output {i}", cpu_in[i], gpu_in[i], **tol)


# ---------------------------------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------------------------------


@check("environment")
def environment():
    devs = wp.get_cuda_devices()
    if not devs:
        raise RuntimeError(f"no CUDA device: {cd.why_unavailable()}")
    info = {"driver": wp.get_cuda_driver_version(), "nvrtc": cb.get_nvrtc().identity(),
            "devices": [{"alias": d.alias, "name": d.name, "arch": d.arch, "sms": d.sm_count,
                         "memory_gib": round(d.total_memory / 2**30, 1), "mempool": d.is_mempool_supported}
                        for d in devs]}
    REPORT["environment"] = info
    return json.dumps(info)


@check("load every test-suite kernel (forward + backward) on the device")
def load_suite(dev, jobs, only=""):
    modules = [f"tests/{sub}" for sub in ("kernels", "autodiff", "geometry")]
    names = sorted(str(p.relative_to(ROOT).with_suffix("")).split("/")[-1] for m in modules
                   for p in (ROOT / m).glob("test_*.py"))
    if only:
        names = [n for n in names if any(s in n for s in only.split(","))]
    out = Path(os.environ.get("TMPDIR", "/tmp")) / "treadle_gpu_check"
    out.mkdir(exist_ok=True)

    def one(name):
        res = out / f"{name}.json"
        p = subprocess.run([sys.executable, str(ROOT / "tests/cuda/compile_suite.py"), "--arch", str(dev.arch),
                            "--out", str(res), "--only", name], capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(p.stdout[-2000:] + p.stderr[-2000:])
        return json.loads(res.read_text())

    with ThreadPoolExecutor(jobs) as ex:
        results = list(ex.map(one, names))
    failures = [f for r in results for f in r["failures"]]
    loaded = 0
    for r in results:
        for b in r["binaries"]:
            mod = cd.load_module(dev, Path(b["path"]))
            mod.function(b["entry"])
            loaded += 1
    if failures:
        raise AssertionError("\n".join(failures[:5]))
    return f"{loaded} entry points loaded; CPU-side failures too: {sum(len(r['cpu_too']) for r in results)}"


@check("runtime: streams, events, transfers, memory pool, pinned memory")
def runtime(dev):
    s1, s2 = wp.Stream(dev), wp.Stream(dev, priority=-1)
    assert s2.priority == -1 and s1.is_blocking
    n = 1 << 20
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    for pooled in (False, True):
        if pooled and not dev.is_mempool_supported:
            continue
        wp.set_mempool_enabled(dev, pooled)
        with wp.ScopedStream(s1):
            a = wp.array(host, device=dev)
            b = wp.zeros(n, dtype=float, device=dev)
            wp.copy(b, a)
            e0, e1 = wp.Event(dev, enable_timing=True), wp.Event(dev, enable_timing=True)
            s1.record_event(e0)
            cuda_launch(k_saxpy, n, [2.0, a, b], dev, stream=s1)
            s1.record_event(e1)
        s2.wait_stream(s1)
        ms = wp.get_event_elapsed_time(e0, e1)
        assert ms > 0.0, ms
        assert np.allclose(b.numpy(), 3.0 * host), "saxpy after copy on a side stream"
        b.zero_()
        assert not b.numpy().any()
    wp.set_mempool_enabled(dev, dev.is_mempool_supported)
    if dev.is_mempool_supported:
        used = wp.get_mempool_used_mem_current(dev)
        wp.set_mempool_release_threshold(dev, 0.25)
        assert wp.get_mempool_release_threshold(dev) > 0
    else:
        used = 0
    pinned = wp.empty(n, dtype=float, device="cpu", pinned=True)
    d = wp.array(host, device=dev)
    wp.copy(pinned, d)
    wp.synchronize_device(dev)
    assert np.array_equal(pinned.numpy(), host)
    return f"pool in use {used} bytes"


@check("kernels: CUDA results match the CPU backend")
def kernels(dev):
    rng = np.random.default_rng(1)
    n = 100_003
    done = []
    xs = rng.standard_normal(n).astype(np.float32)
    run_both(k_saxpy, n, lambda d: [1.5, wp.array(xs), wp.array(np.ones(n, np.float32))], [2], dev)
    done.append("saxpy")
    u = rng.standard_normal((40, 50, 60)).astype(np.float32)
    run_both(k_stencil, u.shape, lambda d: [wp.array(u), wp.zeros(u.shape, dtype=float)], [1], dev, rtol=1e-4,
             atol=1e-5)
    done.append("stencil3d")
    v = rng.standard_normal((n, 3)).astype(np.float32)
    m = rng.standard_normal((n, 3, 3)).astype(np.float32)
    p = Params()
    p.scale, p.offset = 2.0, wp.vec3(1.0, 2.0, 3.0)
    run_both(k_vec, n, lambda d: [wp.array(v, dtype=wp.vec3), wp.array(m, dtype=wp.mat33), p,
                                  wp.zeros(n, dtype=wp.vec3)], [3], dev, rtol=1e-4, atol=1e-5)
    done.append("vec/mat/struct")
    x = rng.random(n).astype(np.float32)
    keys = rng.integers(0, 1000, n).astype(np.int32)
    run_both(k_atomics, n, lambda d: [wp.array(x), wp.array(keys), wp.zeros(1, dtype=float),
                                      wp.zeros(16, dtype=wp.int32), wp.zeros(1, dtype=wp.int32)], [2, 3, 4], dev,
             rtol=1e-4)
    done.append("atomics")
    run_both(k_random, n, lambda d: [42, wp.zeros(n, dtype=float), wp.zeros(n, dtype=wp.int32)], [1, 2], dev,
             rtol=1e-5, atol=1e-5)
    done.append("random")
    run_both(k_loops, n, lambda d: [wp.array(x), 37, wp.zeros(n, dtype=float)], [2], dev, rtol=1e-5)
    done.append("while/break/continue")
    h = rng.random(n).astype(np.float16)
    run_both(k_half, n, lambda d: [wp.array(h, dtype=wp.float16), wp.zeros(n, dtype=wp.float16)], [1], dev,
             rtol=0, atol=0)
    done.append("float16")
    return ", ".join(done)


@check("backward through a dynamic loop matches the CPU; checkpoint overflow is reported")
def backward(dev):
    n, iters = 10_000, 40
    x0 = np.random.default_rng(2).random(n).astype(np.float32)
    xc = wp.array(x0, requires_grad=True)
    yc = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_loss, n, inputs=[xc, iters, yc])
    yc.grad.fill_(1.0)
    tape.backward()
    xg = wp.array(x0, device=dev, requires_grad=True)
    yg = wp.zeros(n, dtype=float, device=dev, requires_grad=True)
    cuda_launch(k_loss, n, [xg, iters, yg], dev)
    yg.grad.fill_(1.0)
    fn = cuda_launch(k_loss, n, [xg, iters, yg], dev, adjoint=True)
    fn.check_errors()
    compare("forward", yc, yg, rtol=1e-4, atol=1e-4)
    compare("gradient", xc.grad, xg.grad, rtol=1e-3, atol=1e-3)
    if DRY_RUN:
        return "gradients match (overflow report needs a GPU: skipped in the dry run)"
    # far more iterations than the default capacity holds: an error, never a silent wrong gradient
    xg.grad.zero_()
    cuda_launch(k_loss, n, [xg, 5000, yg], dev, adjoint=True)
    try:
        fn.check_errors()
    except wp.LaunchError as e:
        return f"overflow reported: {str(e)[:120]}..."
    raise AssertionError("checkpoint overflow was not reported")


@check("checked mode: out-of-bounds access reported at the Python line")
def checked(dev):
    a = wp.zeros(64, dtype=float, device=dev)
    fn = cuda_launch(k_oob, 64, [a], dev)
    if DRY_RUN:
        return "skipped in the dry run (the record is written by device code)"
    try:
        fn.check_errors()
    except wp.CheckedModeError as e:
        assert "gpu_check.py" in str(e) and "index 64" in str(e), str(e)
        return str(e).splitlines()[0]
    raise AssertionError("no error reported")


def timed(dev, fn, reps):
    s = dev.stream
    e0, e1 = wp.Event(dev, enable_timing=True), wp.Event(dev, enable_timing=True)
    fn()
    s.record_event(e0)
    for _ in range(reps):
        fn()
    s.record_event(e1)
    return wp.get_event_elapsed_time(e0, e1) / reps


@check("benchmarks")
def benchmarks(dev, quick):
    b = REPORT["bench"]
    n = 1 << (26 if quick else 28)
    x = wp.full(n, 1.0, dtype=float, device=dev)
    y = wp.full(n, 2.0, dtype=float, device=dev)
    ms = timed(dev, lambda: dev.allocator.memcpy(y.ptr, x.ptr, 4 * n), 20)
    b["copy_GBps"] = 2 * 4 * n / ms / 1e6
    inst, args = pack(k_saxpy, [2.0, x, y], dev)
    fn = cb.load_cuda_kernel(inst, dev)
    bounds = launch_bounds(n)
    ms = timed(dev, lambda: fn.launch(bounds, args), 20)
    b["saxpy_GBps"] = 3 * 4 * n / ms / 1e6
    b["saxpy_vs_copy"] = b["saxpy_GBps"] / b["copy_GBps"]
    nb = 32768 if not quick else 8192
    pos = wp.array(np.random.default_rng(3).random((nb, 3)).astype(np.float32), dtype=wp.vec3, device=dev)
    acc = wp.zeros(nb, dtype=wp.vec3, device=dev)
    inst2, args2 = pack(k_nbody, [pos, acc], dev)
    fn2 = cb.load_cuda_kernel(inst2, dev)
    b["nbody_ms"] = timed(dev, lambda: fn2.launch(launch_bounds(nb), args2), 5)
    inst3, args3 = pack(k_empty, [x, 1.0, 3], dev)
    fn3 = cb.load_cuda_kernel(inst3, dev)
    one = LaunchBounds()
    one.shape[0], one.ndim, one.size = 1, 1, 1
    for label, lib in (("ctypes", cd._STATE.lib), ("cuda.bindings", None)):
        saved, cd._STATE.lib = cd._STATE.lib, lib
        try:
            for _ in range(100):
                fn3.launch(one, args3)
            dev.synchronize()
            t0 = time.perf_counter()
            for _ in range(20000):
                fn3.launch(one, args3)
            b[f"launch_us_{label}"] = (time.perf_counter() - t0) / 20000 * 1e6
            dev.synchronize()
        finally:
            cd._STATE.lib = saved
    try:
        b.update(warp_reference(n, nb, quick))
    except Exception as e:  # noqa: BLE001
        b["warp"] = f"not measured: {type(e).__name__}: {e}"
    REPORT["bench"] = b
    return json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in b.items()})


def warp_reference(n, nb, quick):
    import warp

    warp.config.quiet = True
    warp.init()
    wd = warp.get_cuda_device(0)

    @warp.kernel
    def w_saxpy(a: float, x: warp.array(dtype=float), y: warp.array(dtype=float)):
        i = warp.tid()
        y[i] = a * x[i] + y[i]

    @warp.kernel
    def w_nbody(p: warp.array(dtype=warp.vec3), acc: warp.array(dtype=warp.vec3)):
        i = warp.tid()
        pi = p[i]
        a = warp.vec3()
        for j in range(p.shape[0]):
            d = p[j] - pi
            r2 = warp.dot(d, d) + 0.01
            a += d * (1.0 / (r2 * warp.sqrt(r2)))
        acc[i] = a

    @warp.kernel
    def w_empty(a: warp.array(dtype=float), s: float, k: int):
        pass

    x = warp.full(n, 1.0, dtype=float, device=wd)
    y = warp.full(n, 2.0, dtype=float, device=wd)
    pos = warp.array(np.random.default_rng(3).random((nb, 3)).astype(np.float32), dtype=warp.vec3, device=wd)
    acc = warp.zeros(nb, dtype=warp.vec3, device=wd)

    def wtimed(f, reps):
        f()
        e0, e1 = warp.Event(wd, enable_timing=True), warp.Event(wd, enable_timing=True)
        warp.record_event(e0)
        for _ in range(reps):
            f()
        warp.record_event(e1)
        return warp.get_event_elapsed_time(e0, e1) / reps

    out = {"warp_saxpy_GBps": 3 * 4 * n / wtimed(lambda: warp.launch(w_saxpy, n, inputs=[2.0, x, y], device=wd),
                                                 20) / 1e6,
           "warp_nbody_ms": wtimed(lambda: warp.launch(w_nbody, nb, inputs=[pos, acc], device=wd), 5)}
    for _ in range(100):
        warp.launch(w_empty, 1, inputs=[x, 1.0, 3], device=wd)
    warp.synchronize_device(wd)
    t0 = time.perf_counter()
    for _ in range(20000):
        warp.launch(w_empty, 1, inputs=[x, 1.0, 3], device=wd)
    out["warp_launch_us"] = (time.perf_counter() - t0) / 20000 * 1e6
    warp.synchronize_device(wd)
    return out


def dry_run_driver() -> None:
    """Install the test suite's fake driver; its launches run the same kernels' CPU entry points."""
    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    import ctypes

    from fake_driver import FakeDriver

    from treadle._src.lang.kernel import modules

    def execute(entry: str, bounds: int, args: int) -> None:
        sym, kind = entry.rsplit("_cuda_", 1)
        for mod in modules().modules.values():
            for k in mod.kernels:
                for inst in k.instances.values():
                    if kind == "forward" and inst.built is not None and inst.built.symbol == sym:
                        inst.ensure_loaded()
                        inst.entry(ctypes.c_void_p(bounds), ctypes.c_void_p(args), 1)
                        return
                    bb = getattr(inst, "_bwd_built", None)
                    if kind == "backward" and bb is not None and bb.symbol == sym:
                        inst.ensure_backward()(ctypes.c_void_p(bounds), ctypes.c_void_p(args), 1)
                        return
        raise RuntimeError(f"dry run: no CPU build for {entry}")

    drv = FakeDriver(ndev=1)
    drv.executor = execute
    cd.use_driver(drv)
    # the CUDA symbols equal the CPU ones: emit both so the executor can find them
    for k in (k_saxpy, k_stencil, k_vec, k_atomics, k_random, k_loops, k_half, k_loss, k_oob, k_empty, k_nbody):
        inst = k.get_instance(None)
        inst.prepare()
        if k.enable_backward:
            inst.backward_built()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the test-suite load check; smaller benchmarks")
    ap.add_argument("--json", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--suite", default="", help="load check: only test modules whose name contains one of these")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: a fake driver whose launches run the CPU build (checks this script, not CUDA)")
    a = ap.parse_args()
    if a.dry_run:
        global DRY_RUN
        DRY_RUN = True
        dry_run_driver()
        a.quick = a.quick or not a.suite
    if not environment():
        return 1
    dev = wp.get_cuda_devices()[0]
    # CPU by default: reference results come from wp.launch on the CPU; CUDA arrays and launches name the device.
    wp.set_device("cpu")
    if not a.quick:
        load_suite(dev, a.jobs, a.suite)
    runtime(dev)
    kernels(dev)
    backward(dev)
    checked(dev)
    benchmarks(dev, a.quick)
    out = a.json or (os.path.join(os.environ["OUT"], "gpu_check.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).write_text(json.dumps(REPORT, indent=1, default=str))
    failed = [c["name"] for c in REPORT["checks"] if not c["ok"]]
    print(f"{len(REPORT['checks']) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
