"""Interop overhead, Treadle vs warp-lang side by side (CPU): from_torch, tensors passed to launch, jax_kernel calls.

Run: ``python benchmarks/interop_overhead.py``. Every figure is the best of several batches of calls on small
arrays (16 elements, so the kernel itself costs nothing), in microseconds per call; the last column is
``warp / treadle`` (higher is better for Treadle). warp-lang, torch and jax are optional: missing ones are skipped.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

import treadle as tw  # noqa: E402

N = 16


def per_call_us(fn: Callable[[], Any], calls: int = 2000, batches: int = 7) -> float:
    fn()
    fn()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return min(times)  # the least disturbed batch: robust on a shared, loaded machine


def load_warp() -> Any:
    try:
        import warp

        warp.config.quiet = True
        warp.init()
        return warp
    except Exception as e:  # noqa: BLE001
        print(f"(warp-lang unavailable: {e})", file=sys.stderr)
        return None


def kernels(wp: Any) -> tuple[Any, Any]:
    @wp.kernel
    def scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * s

    @wp.kernel
    def add(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i] + b[i]

    return scale, add


def row(name: str, t_treadle: float | None, t_warp: float | None) -> None:
    tt = f"{t_treadle:8.2f}" if t_treadle is not None else "       -"
    tw_ = f"{t_warp:8.2f}" if t_warp is not None else "       -"
    # no ratio for differences of a few tenths of a microsecond (noise; possibly negative)
    ratio = f"{t_warp / t_treadle:6.1f}x" if t_treadle and t_warp and t_treadle >= 0.5 else "      -"
    print(f"| {name:<44} | {tt} | {tw_} | {ratio} |")


def bench_torch(warp: Any) -> None:
    try:
        import torch
    except ImportError:
        print("(torch unavailable: skipped)")
        return
    t = torch.arange(N, dtype=torch.float32)
    y = torch.zeros(N)
    tg = torch.zeros(N, requires_grad=True)
    scale_t, _ = kernels(tw)
    tw.launch(scale_t, N, inputs=[tw.from_torch(t), 2.0], outputs=[tw.from_torch(y)])
    at, ay = tw.from_torch(t), tw.from_torch(y)
    res: dict[str, tuple[float | None, float | None]] = {}
    res["from_torch(t)"] = (per_call_us(lambda: tw.from_torch(t)), None)
    res["from_torch(t, return_ctype=True)"] = (per_call_us(lambda: tw.from_torch(t, return_ctype=True)), None)
    res["from_torch(t) with requires_grad"] = (per_call_us(lambda: tw.from_torch(tg)), None)
    res["launch(3 args) on Treadle/Warp arrays"] = (
        per_call_us(lambda: tw.launch(scale_t, N, inputs=[at, 2.0], outputs=[ay])), None)
    res["launch(3 args) with torch tensors directly"] = (
        per_call_us(lambda: tw.launch(scale_t, N, inputs=[t, 2.0], outputs=[y])), None)
    res["launch(3 args) with from_torch(t) each call"] = (
        per_call_us(lambda: tw.launch(scale_t, N, inputs=[tw.from_torch(t), 2.0], outputs=[tw.from_torch(y)])), None)
    if warp is not None:
        scale_w, _ = kernels(warp)
        warp.launch(scale_w, N, inputs=[warp.from_torch(t), 2.0], outputs=[warp.from_torch(y)], device="cpu")
        wt, wy = warp.from_torch(t), warp.from_torch(y)

        def upd(key: str, value: float) -> None:
            res[key] = (res[key][0], value)

        upd("from_torch(t)", per_call_us(lambda: warp.from_torch(t)))
        upd("from_torch(t, return_ctype=True)", per_call_us(lambda: warp.from_torch(t, return_ctype=True)))
        upd("from_torch(t) with requires_grad", per_call_us(lambda: warp.from_torch(tg)))
        upd("launch(3 args) on Treadle/Warp arrays",
            per_call_us(lambda: warp.launch(scale_w, N, inputs=[wt, 2.0], outputs=[wy], device="cpu")))
        try:
            upd("launch(3 args) with torch tensors directly",
                per_call_us(lambda: warp.launch(scale_w, N, inputs=[t, 2.0], outputs=[y], device="cpu")))
        except Exception:  # noqa: BLE001 - not every warp version accepts CPU tensors
            pass
        upd("launch(3 args) with from_torch(t) each call",
            per_call_us(lambda: warp.launch(scale_w, N, inputs=[warp.from_torch(t), 2.0],
                                            outputs=[warp.from_torch(y)], device="cpu")))
    for k, (a, b) in res.items():
        row(k, a, b)
    op = tw.torch_op(scale_t)
    op(t, 2.0)
    row("torch_op(kernel)(t, 2.0), eager", per_call_us(lambda: op(t, 2.0)), None)
    row("  (reference: torch t * 2.0)", per_call_us(lambda: t * 2.0), None)

    def mul2_impl(x: Any, s: float) -> Any:
        return x * s

    mul2 = torch.library.custom_op("treadle_bench::mul2", mul2_impl, mutates_args=(),
                                   schema="(Tensor x, float s) -> Tensor")

    mul2.register_fake(lambda x, s: torch.empty_like(x))
    mul2.register_autograd(lambda ctx, g: (g * ctx.s, None), setup_context=lambda ctx, inputs, output: setattr(
        ctx, "s", inputs[1]))
    row("  (reference: a Python custom_op doing t * s)", per_call_us(lambda: mul2(t, 2.0)), None)


def bench_jax(warp: Any) -> None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("(jax unavailable: skipped)")
        return
    x = jnp.arange(N, dtype=jnp.float32)
    _, add_t = kernels(tw)
    ft = tw.jax_kernel(add_t)
    jt = jax.jit(lambda a: ft(a, a)[0])
    jt(x).block_until_ready()
    ref = jax.jit(lambda a: a + a)
    ref(x).block_until_ready()
    t_ref = per_call_us(lambda: ref(x).block_until_ready())
    t_t = per_call_us(lambda: jt(x).block_until_ready())
    t_w = t_we = None
    if warp is not None:
        try:
            _, add_w = kernels(warp)
            fw = warp.jax_kernel(add_w)
            jw = jax.jit(lambda a: fw(a, a)[0])
            jw(x).block_until_ready()
            t_w = per_call_us(lambda: jw(x).block_until_ready())
            t_we = per_call_us(lambda: fw(x, x)[0].block_until_ready(), calls=200)
        except Exception as e:  # noqa: BLE001
            print(f"(warp jax_kernel unavailable: {e})", file=sys.stderr)
    row("jit(jax_kernel) call (incl. dispatch)", t_t, t_w)
    row("  (reference: jit(a + a))", t_ref, t_ref)
    row("  FFI cost over the reference", t_t - t_ref, (t_w - t_ref) if t_w else None)
    row("eager jax_kernel call (no jit)", per_call_us(lambda: ft(x, x)[0].block_until_ready(), calls=200), t_we)

    def two(a: tw.array(dtype=float), b: tw.array(dtype=float)):
        tw.launch(add_t, a.shape, inputs=[a, a], outputs=[b])

    ct = tw.jax_callable(two)
    jc = jax.jit(lambda a: ct(a)[0])
    jc(x).block_until_ready()
    t_c = per_call_us(lambda: jc(x).block_until_ready(), calls=500)
    t_cw = None
    if warp is not None:
        try:
            def two_w(a: warp.array(dtype=float), b: warp.array(dtype=float)):
                warp.launch(add_w, a.shape, inputs=[a, a], outputs=[b])

            cw = warp.jax_callable(two_w)
            jcw = jax.jit(lambda a: cw(a)[0])
            jcw(x).block_until_ready()
            t_cw = per_call_us(lambda: jcw(x).block_until_ready(), calls=500)
        except Exception as e:  # noqa: BLE001
            print(f"(warp jax_callable unavailable: {e})", file=sys.stderr)
    row("jit(jax_callable) with one launch inside", t_c, t_cw)


def main() -> None:
    warp = load_warp()
    print(f"Interop overhead on the CPU, {N}-element arrays, microseconds per call (best batch).")
    print(f"| {'operation':<44} | {'treadle':>8} | {'warp':>8} | {'ratio':>7} |")
    print(f"|{'-' * 46}|{'-' * 10}:|{'-' * 10}:|{'-' * 8}:|")
    bench_torch(warp)
    bench_jax(warp)


if __name__ == "__main__":
    main()
