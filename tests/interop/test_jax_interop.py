"""JAX interop: dtype/device maps, zero-copy from_jax / to_jax, vector dtypes, lifetimes."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import treadle as wp
from treadle._src.interop import dlpack as dl

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@wp.kernel
def scale_into(x: wp.array(dtype=float), out: wp.array(dtype=float), s: float):
    i = wp.tid()
    out[i] = x[i] * s


def collect() -> None:
    gc.collect()
    gc.collect()


SCALARS = [wp.bool, wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64,
           wp.float16, wp.float32, wp.float64]


def test_dtype_maps() -> None:
    for t in SCALARS:
        jt = wp.dtype_to_jax(t)
        assert np.dtype(jt) == np.dtype(wp.dtype_to_numpy(t)), t
        assert wp.dtype_from_jax(jt) is t
        assert wp.dtype_from_jax(np.dtype(jt)) is t
    assert wp.dtype_to_jax(float) is jnp.float32
    assert wp.dtype_from_jax(jnp.zeros(2, dtype=jnp.int8).dtype) is wp.int8
    assert wp.dtype_from_jax(jnp.bfloat16) is wp.bfloat16
    with pytest.raises(TypeError, match="complex64"):
        wp.dtype_from_jax(jnp.complex64)
    with pytest.raises(TypeError, match="vec3f"):
        wp.dtype_to_jax(wp.vec3)


def test_device_maps() -> None:
    cpu = jax.local_devices(backend="cpu")[0]
    assert wp.device_from_jax(cpu) == "cpu"
    assert wp.device_to_jax("cpu") == cpu
    if not wp.is_cuda_available():
        with pytest.raises(RuntimeError):
            wp.device_to_jax("cuda:0")

    class FakeTpu:
        platform = "tpu"

    with pytest.raises(RuntimeError, match="Unsupported JAX device"):
        wp.device_from_jax(FakeTpu())


def test_from_jax_is_zero_copy() -> None:
    x = jnp.arange(6, dtype=jnp.float32)
    a = wp.from_jax(x)
    assert a.ptr == x.unsafe_buffer_pointer()
    assert a.shape == (6,) and a.dtype is wp.float32 and a.device == "cpu"
    np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype=np.float32))


def test_from_jax_every_dtype() -> None:
    for t in SCALARS:
        x = jnp.asarray((np.arange(4) % 2).astype(wp.dtype_to_numpy(t)))
        if np.dtype(x.dtype) != np.dtype(wp.dtype_to_numpy(t)):
            continue  # 64-bit types are narrowed by JAX unless jax_enable_x64 is set
        a = wp.from_jax(x)
        assert a.dtype is t and a.ptr == x.unsafe_buffer_pointer(), t
        np.testing.assert_array_equal(a.numpy(), np.asarray(x))


def test_from_jax_vector_dtype() -> None:
    x = jnp.arange(12, dtype=jnp.float32).reshape(4, 3)
    a = wp.from_jax(x, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype is wp.vec3
    assert a.list()[3] == wp.vec3(9.0, 10.0, 11.0)
    with pytest.raises(TypeError, match=r"trailing dimensions must be \(3,\)"):
        wp.from_jax(jnp.zeros((4, 4), dtype=jnp.float32), dtype=wp.vec3)
    with pytest.raises(TypeError, match="jax.Array"):
        wp.from_jax([1.0, 2.0])


def test_kernel_reads_jax_input_writes_treadle_output() -> None:
    x = jnp.arange(8, dtype=jnp.float32)
    out = wp.zeros(8, device="cpu")
    wp.launch(scale_into, dim=8, inputs=[wp.from_jax(x), out, 3.0], device="cpu")
    y = wp.to_jax(out)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8, dtype=np.float32) * 3.0)
    np.testing.assert_array_equal(np.asarray(x), np.arange(8, dtype=np.float32))  # the input is untouched


def test_to_jax_is_zero_copy() -> None:
    a = wp.array(np.arange(5, dtype=np.float32), device="cpu")
    y = wp.to_jax(a)
    assert y.unsafe_buffer_pointer() == a.ptr
    assert y.dtype == jnp.float32 and y.shape == (5,)
    assert float(jnp.sum(y)) == 10.0
    assert float(jax.jit(lambda v: (v * 2.0).sum())(y)) == 20.0


def test_to_jax_vector_matrix_and_strided() -> None:
    v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device="cpu")
    yv = wp.to_jax(v)
    assert yv.shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(yv), np.arange(12, dtype=np.float32).reshape(4, 3))
    m = wp.zeros(2, dtype=wp.mat22, device="cpu")
    assert wp.to_jax(m).shape == (2, 2, 2)
    base = wp.array(np.arange(8, dtype=np.float32), device="cpu")
    ys = wp.to_jax(base[::2])  # JAX imports compact layouts only: strided views are copied
    np.testing.assert_array_equal(np.asarray(ys), np.arange(0, 8, 2, dtype=np.float32))


def test_round_trip() -> None:
    a = wp.array(np.arange(6, dtype=np.int32), device="cpu")
    b = wp.from_jax(wp.to_jax(a))
    assert b.ptr == a.ptr and b.dtype is wp.int32


def test_to_jax_keeps_array_alive_and_releases_once() -> None:
    start = dl.export_stats()
    a = wp.array(np.arange(1000, dtype=np.float32), device="cpu")
    alive = weakref.ref(a)
    y = wp.to_jax(a)
    del a
    collect()
    assert alive() is not None
    _churn = [wp.ones(1000, device="cpu") for _ in range(20)]
    np.testing.assert_array_equal(np.asarray(y), np.arange(1000, dtype=np.float32))
    del y
    collect()
    assert alive() is None  # released (JAX may release buffers of earlier tests at any time: count exports only)
    now = dl.export_stats()
    assert now["exported"] - start["exported"] == 1
    assert now["unknown_releases"] == start["unknown_releases"]


def test_from_jax_keeps_buffer_alive() -> None:
    x = jnp.arange(1000, dtype=jnp.float32) * 2.0
    a = wp.from_jax(x)
    del x
    collect()
    _churn = [jnp.ones(1000, dtype=jnp.float32) + i for i in range(20)]
    np.testing.assert_array_equal(a.numpy(), np.arange(1000, dtype=np.float32) * 2.0)
