"""Worker for test_jax_sharding.py: jax_kernel / jax_callable inside shard_map and pmap over 4 host CPU devices.

Run as a script (``python jax_sharding_worker.py OUT.json``): it forces 4 host devices through ``XLA_FLAGS`` before
JAX is imported, runs every check and writes ``{check: "ok" | error text}`` to OUT.json, so the (slow) JAX import and
kernel compilation happen once for all the tests. Every sharded result is compared with the same Treadle call on one
device and with a NumPy / ``jax.numpy`` reference.
"""

from __future__ import annotations

import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import json  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import treadle as wp  # noqa: E402

if hasattr(jax, "shard_map"):
    shard_map = jax.shard_map
else:  # JAX before 0.6
    from jax.experimental.shard_map import shard_map

N_DEV = 4


@wp.kernel
def scale_sq(a: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i] * s


@wp.kernel
def weighted(x: wp.array(dtype=float), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * w[i] + wp.sin(w[i])


@wp.kernel
def vec_stats(v: wp.array(dtype=wp.vec3), d: wp.vec3, dots: wp.array(dtype=float), lens: wp.array(dtype=float)):
    i = wp.tid()
    dots[i] = wp.dot(v[i], d)
    lens[i] = wp.length(v[i])


@wp.kernel
def rowsum(m: wp.array2d(dtype=float), sums: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(sums, i, m[i, j])


@wp.kernel
def accumulate(a: wp.array(dtype=float), acc: wp.array(dtype=float)):
    i = wp.tid()
    acc[i] = acc[i] + 2.0 * a[i]


@wp.kernel
def heavy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # enough work per element that 4 shards launching at once overlap in time
    i = wp.tid()
    v = x[i]
    acc = float(0.0)  # noqa: UP018 - a dynamic variable, reassigned in the loop
    for k in range(16):
        acc = acc + wp.sin(v * float(k + 1)) * wp.cos(v + float(k))
    y[i] = acc


@wp.kernel
def add_into(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + b[i]


@wp.kernel
def global_index(offset: wp.array(dtype=int), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] + float(offset[0] + i) * 1000.0


@wp.kernel
def twice_any(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = a[i] + a[i]


MESH = Mesh(np.array(jax.devices()[:N_DEV]), ("x",))
X = np.linspace(-1.0, 2.0, 64, dtype=np.float32)
XB = np.stack([X, X * 0.5 + 1.0, -X])


def same(a: Any, b: Any) -> None:
    """Bitwise equality (elementwise kernels run the same code on each shard as on one device)."""
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def close(a: Any, b: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def smap(f: Callable[..., Any], in_specs: Any, out_specs: Any) -> Any:
    return jax.jit(shard_map(f, mesh=MESH, in_specs=in_specs, out_specs=out_specs))


def on_shards(y: Any) -> None:
    """The result lives on the 4 devices, one shard each."""
    devs = {s.device for s in y.addressable_shards}
    assert len(devs) == N_DEV, devs


# ----------------------------------------------------------------------------------------------------- checks


def check_forward() -> None:
    k = wp.jax_kernel(scale_sq)
    f = smap(lambda a: k(a, 3.0)[0], P("x"), P("x"))
    y = f(X)
    on_shards(y)
    same(y, jax.jit(lambda a: k(a, 3.0)[0])(X))
    close(y, X * X * 3.0)
    same(f(X + 1.0), (jax.jit(lambda a: k(a, 3.0)[0]))(X + 1.0))  # same executable, new buffers


def check_result_varies_over_the_mesh() -> None:
    """Results are typed as varying over the mesh axes of their inputs: claiming they are replicated is refused."""
    k = wp.jax_kernel(scale_sq)
    try:
        smap(lambda a: k(a, 3.0)[0], P("x"), P())(X)
    except Exception as e:  # noqa: BLE001 - JAX's check_vma error type varies between releases
        assert "vary" in str(e) or "replicat" in str(e) or "out_specs" in str(e), e
    else:
        raise AssertionError("a per-shard result passed as replicated (only shard 0 would be returned)")
    # without the check (check_vma=False) each shard still computes its own block
    try:
        f = shard_map(lambda a: k(a, 3.0)[0], mesh=MESH, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    except TypeError:  # JAX before check_vma
        f = shard_map(lambda a: k(a, 3.0)[0], mesh=MESH, in_specs=P("x"), out_specs=P("x"), check_rep=False)
    close(jax.jit(f)(X), X * X * 3.0)


def check_shard_offset_as_array() -> None:
    """A shard learns its global position from lax.axis_index passed as a one-element array (scalars are static)."""
    k = wp.jax_kernel(global_index)

    def body(a: Any) -> Any:
        off = jnp.full((1,), jax.lax.axis_index("x") * a.shape[0], dtype=jnp.int32)
        return k(off, a, launch_dims=a.shape)[0]

    y = smap(body, P("x"), P("x"))(X)
    close(y, X + np.arange(64, dtype=np.float32) * 1000.0)


def check_sharded_input_without_shard_map() -> None:
    """Plain jit over a sharded array: XLA gathers it for the custom call; the result is right (and replicated)."""
    k = wp.jax_kernel(scale_sq, enable_backward=True)
    xs = jax.device_put(X, NamedSharding(MESH, P("x")))
    close(k(xs, 2.0)[0], X * X * 2.0)
    close(jax.jit(lambda a: k(a, 2.0)[0])(xs), X * X * 2.0)
    close(jax.jit(jax.grad(lambda a: jnp.sum(k(a, 2.0)[0])))(xs), 4.0 * X)


def check_vectors_two_outputs() -> None:
    k = wp.jax_kernel(vec_stats, num_outputs=2)
    v = np.arange(64 * 3, dtype=np.float32).reshape(64, 3) / 50.0 - 1.0
    d = wp.vec3(1.0, -2.0, 0.5)
    f = smap(lambda v: tuple(k(v, d)), P("x", None), (P("x"), P("x")))
    dots, lens = f(v)
    ref_d, ref_l = jax.jit(lambda v: tuple(k(v, d)))(v)
    same(dots, ref_d)
    same(lens, ref_l)
    close(dots, v @ np.array([1.0, -2.0, 0.5], np.float32))
    close(lens, np.linalg.norm(v, axis=1))


def check_2d_rows_and_atomics() -> None:
    k = wp.jax_kernel(rowsum, output_dims=16)  # per shard: 16 rows
    m = np.arange(64 * 5, dtype=np.float32).reshape(64, 5) / 7.0
    (s,) = smap(lambda m: tuple(k(m, output_dims=m.shape[0])), P("x", None), (P("x"),))(m)
    close(s, m.sum(axis=1))
    (s1,) = jax.jit(lambda m: tuple(k(m, output_dims=64)))(m)
    close(s, s1)


def check_in_out() -> None:
    k = wp.jax_kernel(accumulate, num_outputs=1, in_out_argnames=["acc"])
    acc = np.ones(64, np.float32)
    (r,) = smap(lambda a, c: tuple(k(a, c)), (P("x"), P("x")), (P("x"),))(X, acc)
    same(r, jax.jit(lambda a, c: tuple(k(a, c)))(X, acc)[0])
    close(r, 1.0 + 2.0 * X)


def check_grad_sharded() -> None:
    k = wp.jax_kernel(scale_sq, enable_backward=True)
    sk = shard_map(lambda a: k(a, 1.5)[0], mesh=MESH, in_specs=P("x"), out_specs=P("x"))

    def loss(a: Any) -> Any:
        return jnp.sum(jnp.sin(sk(a)))

    def loss1(a: Any) -> Any:
        return jnp.sum(jnp.sin(k(a, 1.5)[0]))

    g = jax.jit(jax.grad(loss))(X)
    on_shards(g)
    same(g, jax.jit(jax.grad(loss1))(X))
    close(g, jax.grad(lambda a: jnp.sum(jnp.sin(1.5 * a * a)))(X))
    # the loss reduced inside the shards (psum) and differentiated there
    inner = smap(lambda a: jax.grad(lambda b: jax.lax.psum(jnp.sum(k(b, 1.5)[0]), "x"))(a), P("x"), P("x"))
    close(inner(X), 3.0 * X)


def check_grad_replicated_input() -> None:
    """x sharded, w replicated: w's gradient is the sum of the per-shard gradients (a psum over the mesh)."""
    k = wp.jax_kernel(weighted, enable_backward=True)
    w = np.linspace(0.5, 1.5, 16, dtype=np.float32)
    sk = shard_map(lambda x, w: k(x, w)[0], mesh=MESH, in_specs=(P("x"), P()), out_specs=P("x"))

    def loss(x: Any, w: Any) -> Any:
        return jnp.sum(sk(x, w) ** 2)

    def loss1(x: Any, w: Any) -> Any:  # one device: w tiled over the 4 blocks of x
        return jnp.sum(k(x, jnp.tile(w, N_DEV))[0] ** 2)

    def ref(x: Any, w: Any) -> Any:
        wt = jnp.tile(w, N_DEV)
        return jnp.sum((x * wt + jnp.sin(wt)) ** 2)

    gx, gw = jax.jit(jax.grad(loss, argnums=(0, 1)))(X, w)
    rx, rw = jax.grad(loss1, argnums=(0, 1))(X, w)
    close(gx, rx)
    close(gw, rw, 1e-4)
    ex, ew = jax.grad(ref, argnums=(0, 1))(X, w)
    close(gx, ex, 1e-4)
    close(gw, ew, 1e-4)


def check_vmap_inside_shard_map() -> None:
    k = wp.jax_kernel(scale_sq, enable_backward=True)
    f = smap(jax.vmap(lambda a: k(a, 2.0)[0]), P(None, "x"), P(None, "x"))
    y = f(XB)
    same(y, jax.jit(jax.vmap(lambda a: k(a, 2.0)[0]))(XB))
    close(y, XB * XB * 2.0)
    gl = smap(jax.vmap(jax.grad(lambda a: jax.lax.psum(jnp.sum(k(a, 2.0)[0]), "x"))), P(None, "x"), P(None, "x"))
    close(gl(XB), 4.0 * XB)


def check_shard_map_inside_vmap() -> None:
    k = wp.jax_kernel(scale_sq, enable_backward=True)
    sk = shard_map(lambda a: k(a, 2.0)[0], mesh=MESH, in_specs=P("x"), out_specs=P("x"))
    y = jax.jit(jax.vmap(sk))(XB)
    close(y, XB * XB * 2.0)
    g = jax.jit(jax.vmap(jax.grad(lambda a: jnp.sum(sk(a) ** 2))))(XB)
    close(g, 16.0 * XB ** 3, 1e-4)


def check_callable() -> None:
    def two_launches(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
        tmp = wp.empty(a.shape, dtype=float)
        wp.launch(scale_sq, a.shape, inputs=[a, 0.5], outputs=[tmp])
        wp.launch(add_into, a.shape, inputs=[tmp, b], outputs=[out])

    c = wp.jax_callable(two_launches)
    b = np.cos(X)
    f = smap(lambda a, b: c(a, b)[0], (P("x"), P("x")), P("x"))
    y = f(X, b)
    on_shards(y)
    same(y, jax.jit(lambda a, b: c(a, b)[0])(X, b))
    close(y, 0.5 * X * X + b)
    yb = smap(jax.vmap(lambda a: c(a, a)[0]), P(None, "x"), P(None, "x"))(XB)
    close(yb, 0.5 * XB * XB + XB)


def check_callable_zero_copy_per_shard() -> None:
    """Each shard's callback sees that shard's own buffer: 4 distinct pointers, 4 threads' worth of calls."""
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def record(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        with lock:
            seen.append((a.ptr, threading.get_ident()))
        wp.launch(scale_sq, a.shape, inputs=[a, 1.0], outputs=[out])

    c = wp.jax_callable(record)
    xs = jax.device_put(X, NamedSharding(MESH, P("x")))
    y = smap(lambda a: c(a)[0], P("x"), P("x"))(xs)
    close(y, X * X)
    assert len(seen) == N_DEV, seen
    ptrs = {p for p, _ in seen}
    assert len(ptrs) == N_DEV, "shards did not get distinct buffers"
    shard_ptrs = {s.data.unsafe_buffer_pointer() for s in xs.addressable_shards}
    # XLA on the CPU passes entry parameters through without a copy: the kernel reads the shards in place
    assert ptrs == shard_ptrs, (ptrs, shard_ptrs)


def check_concurrent_shards_stress() -> None:
    """Big shards (thread-pool launches, run concurrently by XLA's per-device threads), forward and backward."""
    n = N_DEV * 65536
    x = (np.arange(n, dtype=np.float32) % 977) / 311.0
    kh = wp.jax_kernel(heavy)
    ks = wp.jax_kernel(scale_sq, enable_backward=True)
    f = smap(lambda a: kh(a)[0], P("x"), P("x"))
    g = jax.jit(jax.grad(lambda a: jnp.sum(shard_map(lambda b: ks(b, 0.25)[0], mesh=MESH, in_specs=P("x"),
                                                     out_specs=P("x"))(a))))
    ref_f = np.asarray(jax.jit(lambda a: kh(a)[0])(x))
    ref_g = 0.5 * x
    for _ in range(10):
        same(f(x), ref_f)
        close(g(x), ref_g)


def check_generic_kernel_compiled_in_callbacks() -> None:
    """A generic kernel first instantiated inside 4 concurrent shard callbacks (no preload) compiles once."""

    def twice(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
        wp.launch(twice_any, a.shape, inputs=[a], outputs=[out])

    c = wp.jax_callable(twice, module_preload_mode=wp.JaxModulePreloadMode.NONE)
    with jax.enable_x64(True) if hasattr(jax, "enable_x64") else _x64():
        x = np.arange(64, dtype=np.float64) / 3.0
        y = smap(lambda a: c(a)[0], P("x"), P("x"))(x)
        close(y, 2.0 * x, 0.0)


class _x64:
    def __enter__(self) -> None:
        jax.config.update("jax_enable_x64", True)

    def __exit__(self, *a: Any) -> None:
        jax.config.update("jax_enable_x64", False)


def check_explicit_mesh() -> None:
    """The explicit-sharding style of recent JAX: make_mesh + set_mesh + device_put(NamedSharding)."""
    if not (hasattr(jax, "set_mesh") and hasattr(jax, "make_mesh")):
        raise _Skip("this JAX has no jax.set_mesh")
    k = wp.jax_kernel(scale_sq, enable_backward=True)
    mesh = jax.make_mesh((N_DEV,), ("x",))
    with jax.set_mesh(mesh):
        xs = jax.device_put(X, NamedSharding(mesh, P("x")))
        sk = shard_map(lambda a: k(a, 3.0)[0], mesh=mesh, in_specs=P("x"), out_specs=P("x"))
        y = jax.jit(sk)(xs)
        g = jax.jit(jax.grad(lambda a: jnp.sum(sk(a))))(xs)
    close(y, X * X * 3.0)
    close(g, 6.0 * X)


def check_pmap() -> None:
    if not hasattr(jax, "pmap"):
        raise _Skip("this JAX has no jax.pmap")
    k = wp.jax_kernel(scale_sq, enable_backward=True)

    def cube3(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        wp.launch(scale_sq, a.shape, inputs=[a, 3.0], outputs=[out])

    c = wp.jax_callable(cube3)
    xs = X.reshape(N_DEV, -1)
    close(jax.pmap(lambda a: k(a, 3.0)[0])(xs), xs * xs * 3.0)
    close(jax.pmap(jax.grad(lambda a: jnp.sum(k(a, 3.0)[0])))(xs), 6.0 * xs)
    close(jax.pmap(lambda a: c(a)[0])(xs), xs * xs * 3.0)


class _Skip(Exception):
    pass


CHECKS = {name[len("check_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("check_")}


def main(out_path: str) -> None:
    assert len(jax.devices()) >= N_DEV, jax.devices()
    results: dict[str, str] = {}
    only = set(sys.argv[2:])
    for name, fn in CHECKS.items():
        if only and name not in only:
            continue
        try:
            fn()
            results[name] = "ok"
        except _Skip as e:
            results[name] = f"skip: {e}"
        except BaseException:  # noqa: BLE001 - reported per check
            results[name] = traceback.format_exc()
    results["_jax_version"] = jax.__version__
    with open(out_path, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
