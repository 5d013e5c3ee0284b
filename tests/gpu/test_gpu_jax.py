"""``jax_kernel`` on a real GPU JAX: the CUDA handler of the FFI dispatcher under ``jit``, ``grad`` and ``vmap``.

Skipped unless JAX itself has a CUDA device (a CUDA jaxlib) as well as Treadle. Without a GPU the same code paths
are checked against the fake driver in ``tests/interop/test_jax_cuda.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402


def _jax_gpus() -> list:
    try:
        return list(jax.devices("gpu"))
    except Exception:  # noqa: BLE001 - no GPU backend in this jaxlib
        return []


pytestmark = pytest.mark.skipif(not _jax_gpus(), reason="JAX has no CUDA device (needs a CUDA jaxlib and a GPU)")


@wp.kernel(module="gpu_jax_tests")
def cube_add(x: wp.array(dtype=float), y: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s * x[i] * x[i] * x[i] + wp.sin(y[i])


@wp.kernel(module="gpu_jax_tests")
def vec_norm2(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.dot(v[i], v[i])


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_jit_forward_runs_on_the_gpu():
    n = 100_003
    xh, yh = _data(n)
    f = wp.jax_kernel(cube_add)
    x, y = jax.device_put(xh, _jax_gpus()[0]), jax.device_put(yh, _jax_gpus()[0])
    (out,) = jax.jit(lambda a, b: f(a, b, 0.5))(x, y)
    assert next(iter(out.devices())).platform == "gpu"
    np.testing.assert_allclose(np.asarray(out), 0.5 * xh.astype(np.float64) ** 3 + np.sin(yh), rtol=1e-5,
                               atol=1e-6)
    (lp,) = [lp for lp in f._launches.values() if lp.platform == "cuda"]
    assert lp.forward_plan()._plan.kind == 2


def test_eager_call_and_vector_elements():
    rng = np.random.default_rng(1)
    vh = rng.standard_normal((257, 3)).astype(np.float32)
    (out,) = wp.jax_kernel(vec_norm2)(jax.device_put(vh, _jax_gpus()[0]))
    np.testing.assert_allclose(np.asarray(out), (vh.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)


def test_grad_under_jit_matches_analytic():
    n = 4096
    xh, yh = _data(n, 2)
    f = wp.jax_kernel(cube_add, enable_backward=True)

    def loss(a, b):
        (o,) = f(a, b, 2.0)
        return jnp.sum(o * o)

    gx, gy = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(xh), jnp.asarray(yh))
    x64, y64 = xh.astype(np.float64), yh.astype(np.float64)
    o = 2.0 * x64**3 + np.sin(y64)
    np.testing.assert_allclose(np.asarray(gx), 2 * o * 6.0 * x64**2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gy), 2 * o * np.cos(y64), rtol=1e-4, atol=1e-4)


def test_vmap_batches_on_the_gpu():
    rng = np.random.default_rng(3)
    xh, yh = rng.standard_normal((4, 300)).astype(np.float32), rng.standard_normal((4, 300)).astype(np.float32)
    f = wp.jax_kernel(cube_add)
    out = jax.jit(jax.vmap(lambda a, b: f(a, b, 1.0)[0]))(jnp.asarray(xh), jnp.asarray(yh))
    np.testing.assert_allclose(np.asarray(out), xh.astype(np.float64) ** 3 + np.sin(yh), rtol=1e-5, atol=1e-6)


def test_second_gpu_uses_its_own_ordinal():
    gpus = _jax_gpus()
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    xh, yh = _data(1000, 4)
    f = wp.jax_kernel(cube_add)
    (out,) = f(jax.device_put(xh, gpus[1]), jax.device_put(yh, gpus[1]), 1.0)
    assert next(iter(out.devices())) == gpus[1]
    np.testing.assert_allclose(np.asarray(out), xh.astype(np.float64) ** 3 + np.sin(yh), rtol=1e-5, atol=1e-6)
