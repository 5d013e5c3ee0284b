"""Scaling of a Treadle kernel inside ``jax.shard_map`` over 1, 2 and 4 host CPU devices.

Run: ``python benchmarks/jax_sharding_scaling.py [n] [max_devices]``. Each device count runs in a fresh process
(JAX fixes its device count at import, ``XLA_FLAGS=--xla_force_host_platform_device_count=D``); every Treadle launch
runs on one thread (``TREADLE_NUM_THREADS=1``) so that shards, not Treadle's thread pool, provide the parallelism
(XLA runs the shards of one computation concurrently, one per device). Reported: the best of several timed calls
of a jitted forward pass (a compute-bound kernel) and of a jitted ``jax.grad`` through a differentiable kernel,
with the speed-up over one device. On an N-core machine expect at most N x.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def worker(n: int, d: int) -> None:
    """One measurement in this process (started by :func:`run` with ``d`` host devices)."""
    import time

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    import treadle as wp

    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map

    @wp.kernel
    def heavy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        v = x[i]
        acc = float(0.0)  # noqa: UP018 - a dynamic variable, reassigned in the loop
        for k in range(32):
            acc = acc + wp.sin(v * float(k + 1)) * wp.cos(v + float(k))
        y[i] = acc

    @wp.kernel
    def energy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        v = x[i]
        y[i] = wp.sin(v) * wp.exp(-v * v) + v * v * v

    kh = wp.jax_kernel(heavy)
    ke = wp.jax_kernel(energy, enable_backward=True)
    mesh = Mesh(np.array(jax.devices()[:d]), ("x",))
    x = jnp.asarray((np.arange(n, dtype=np.float32) % 1013) / 517.0)
    fwd = jax.jit(shard_map(lambda a: kh(a)[0], mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    se = shard_map(lambda a: ke(a)[0], mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    grad = jax.jit(jax.grad(lambda a: jnp.sum(se(a))))

    def best(f: Any, reps: int = 7) -> float:
        f(x).block_until_ready()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f(x).block_until_ready()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    print(json.dumps({"fwd": best(fwd), "grad": best(grad), "devices": len(jax.devices())}))



def run(devices: int, n: int) -> dict[str, float]:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu",
               TREADLE_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, __file__, "--worker", str(n), str(devices)], capture_output=True,
                          text=True, timeout=900, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    max_devices = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    try:
        import jax  # noqa: F401
    except ImportError:
        print("jax is not installed: nothing to measure")
        return
    counts = [d for d in (1, 2, 4, 8) if d <= max_devices]
    print(f"| devices | forward (ms) | speed-up | grad (ms) | speed-up |  ({n} float32, shard_map, "
          f"{os.cpu_count()} cores, one Treadle thread per shard)")
    print("|---:|---:|---:|---:|---:|")
    base = None
    for d in counts:
        r = run(d, n)
        base = base or r
        print(f"| {d} | {r['fwd'] * 1e3:.2f} | {base['fwd'] / r['fwd']:.2f}x | {r['grad'] * 1e3:.2f} | "
              f"{base['grad'] / r['grad']:.2f}x |")


if __name__ == "__main__":
    main()
