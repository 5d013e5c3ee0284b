"""Element types across the interop paths: bfloat16, same-width integer views, bool as bytes, refused devices.

bfloat16 data is made by the foreign library (torch / jax) and read by a Treadle kernel, so every check compares
Treadle's conversion with the library's own ``bfloat16 -> float32`` conversion.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

VALUES = np.array([1.0, 2.5, -3.0, 4.0, 0.15625, -1e-3, 3.0e4, 7.5], dtype=np.float32)


@wp.kernel
def bf16_to_f32(x: wp.array(dtype=wp.bfloat16), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = wp.float32(x[i])


@wp.kernel
def f32_to_bf16(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    y[i] = wp.bfloat16(x[i])


def read_bf16(a: wp.array) -> np.ndarray:
    out = wp.zeros(a.shape[0], dtype=wp.float32)
    wp.launch(bf16_to_f32, a.shape[0], inputs=[a], outputs=[out])
    return out.numpy()


# ------------------------------------------------------------------------------------------------- bfloat16


def test_bf16_from_and_to_torch() -> None:
    torch = pytest.importorskip("torch")
    assert wp.dtype_from_torch(torch.bfloat16) is wp.bfloat16
    assert wp.dtype_to_torch(wp.bfloat16) == torch.bfloat16
    t = torch.tensor(VALUES).to(torch.bfloat16)
    a = wp.from_torch(t)
    assert a.dtype is wp.bfloat16 and a.ptr == t.data_ptr()
    np.testing.assert_array_equal(read_bf16(a), t.float().numpy())
    # a kernel writes bfloat16 into a Treadle array; torch sees it through to_torch without a copy
    out = wp.from_torch(torch.zeros(len(VALUES), dtype=torch.bfloat16))
    wp.launch(f32_to_bf16, len(VALUES), inputs=[wp.array(VALUES)], outputs=[out])
    back = wp.to_torch(out)
    assert back.dtype == torch.bfloat16 and back.data_ptr() == out.ptr
    np.testing.assert_array_equal(back.float().numpy(), t.float().numpy())


def test_bf16_vectors_and_matrices_through_torch() -> None:
    torch = pytest.importorskip("torch")
    vec3_bf16 = wp.types.vector(3, dtype=wp.bfloat16)
    mat22_bf16 = wp.types.matrix(shape=(2, 2), dtype=wp.bfloat16)
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(torch.bfloat16)
    v = wp.from_torch(t, dtype=vec3_bf16)
    assert v.shape == (2,) and v.ptr == t.data_ptr()
    tv = wp.to_torch(v)
    assert tv.dtype == torch.bfloat16 and tuple(tv.shape) == (2, 3) and tv.data_ptr() == t.data_ptr()
    m = wp.from_torch(torch.ones(4, 2, 2, dtype=torch.bfloat16), dtype=mat22_bf16)
    assert m.shape == (4,) and tuple(wp.to_torch(m).shape) == (4, 2, 2)


def test_bf16_through_dlpack_and_jax() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor(VALUES).to(torch.bfloat16)
    a = wp.from_dlpack(t)
    assert a.dtype is wp.bfloat16 and a.ptr == t.data_ptr()
    b = wp.from_dlpack(wp.to_dlpack(a))  # Treadle -> Treadle keeps the type
    assert b.dtype is wp.bfloat16 and b.ptr == a.ptr
    back = torch.utils.dlpack.from_dlpack(a)
    assert back.dtype == torch.bfloat16 and back.data_ptr() == t.data_ptr()
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    assert wp.dtype_to_jax(wp.bfloat16) == jnp.bfloat16
    j = jnp.asarray(VALUES, dtype=jnp.bfloat16)
    aj = wp.from_jax(j)
    assert aj.dtype is wp.bfloat16
    np.testing.assert_array_equal(read_bf16(aj), np.asarray(j.astype(jnp.float32)))
    tj = wp.to_jax(a)
    assert tj.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(tj.astype(jnp.float32)), t.float().numpy())
    del jax


# ------------------------------------------------------------------------------------------------- integer views

INT_PAIRS = [("int8", "uint8"), ("int16", "uint16"), ("int32", "uint32"), ("int64", "uint64")]


@pytest.mark.parametrize("signed,unsigned", INT_PAIRS)
def test_same_width_integers_view_each_other(signed: str, unsigned: str) -> None:
    data = np.array([-3, -1, 0, 1, 100], dtype=signed)
    for src, dst in ((signed, unsigned), (unsigned, signed)):
        n = data.view(src)
        a = wp.from_dlpack(n, dtype=getattr(wp, dst))
        assert a.dtype is getattr(wp, dst) and a.ptr == n.ctypes.data
        np.testing.assert_array_equal(a.numpy(), n.view(dst))  # the same bits, reinterpreted


def test_torch_int64_as_uint64_and_bool_as_bytes() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor([-1, 0, 5], dtype=torch.int64)
    a = wp.from_torch(t, dtype=wp.uint64)
    assert a.dtype is wp.uint64 and a.ptr == t.data_ptr()
    np.testing.assert_array_equal(a.numpy(), t.numpy().view(np.uint64))
    desc = wp.from_torch(t, dtype=wp.uint64, return_ctype=True)
    assert desc.data == t.data_ptr()
    flags = torch.tensor([True, False, True])
    for dt in (wp.int8, wp.uint8, wp.bool):
        b = wp.from_torch(flags, dtype=dt)
        assert b.dtype is dt and b.ptr == flags.data_ptr()
        np.testing.assert_array_equal(b.numpy().astype(np.int64), [1, 0, 1])


def test_bool_dlpack_as_int8_uint8() -> None:
    src = wp.array(np.array([True, False, True, True]), dtype=wp.bool)
    for dt in (wp.int8, wp.uint8):
        a = wp.from_dlpack(wp.to_dlpack(src), dtype=dt)
        assert a.dtype is dt and a.ptr == src.ptr and a.strides == src.strides
        np.testing.assert_array_equal(a.numpy(), [1, 0, 1, 1])


def test_different_kinds_or_widths_are_refused() -> None:
    for data, dt in ((np.zeros(3, np.bool_), wp.float32), (np.zeros(3, np.int32), wp.float32),
                     (np.zeros(3, np.float32), wp.int32), (np.zeros(3, np.int32), wp.uint64),
                     (np.zeros(3, np.bool_), wp.int16), (np.zeros(3, np.float16), wp.bfloat16)):
        with pytest.raises(TypeError, match="scalar types differ"):
            wp.from_dlpack(data, dtype=dt)


# ------------------------------------------------------------------------------------------------- devices


def test_unsupported_source_device_is_refused_before_export() -> None:
    class OnAnotherDevice:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (123, 7)

        def __dlpack__(self, stream: object = None, **kwargs: object) -> object:
            raise AssertionError("__dlpack__ must not be called for a device Treadle cannot read")

    with pytest.raises(TypeError, match="Unsupported source device for DLPack: device_type=123, device_id=7"):
        wp.from_dlpack(OnAnotherDevice())

    class OnVulkan(OnAnotherDevice):
        def __dlpack_device__(self) -> tuple[int, int]:
            return (7, 0)

    with pytest.raises(TypeError, match="kDLVulkan"):
        wp.from_dlpack(OnVulkan())


def test_bf16_array_from_float_data_reaches_torch() -> None:
    torch = pytest.importorskip("torch")
    a = wp.array(VALUES, dtype=wp.bfloat16)
    np.testing.assert_array_equal(wp.to_torch(a).float().numpy(), torch.tensor(VALUES).to(torch.bfloat16).float())
