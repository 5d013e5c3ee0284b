"""Paddle interop (runs only where paddle is installed): maps, zero-copy both ways, lifetimes."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import treadle as wp

paddle = pytest.importorskip("paddle")


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


def test_dtype_maps() -> None:
    for t, name in ((wp.bool, "bool"), (wp.int8, "int8"), (wp.uint8, "uint8"), (wp.int16, "int16"),
                    (wp.int32, "int32"), (wp.int64, "int64"), (wp.float16, "float16"), (wp.float32, "float32"),
                    (wp.float64, "float64")):
        assert wp.dtype_to_paddle(t) == getattr(paddle, name)
        assert wp.dtype_from_paddle(getattr(paddle, name)) is t
    assert wp.dtype_to_paddle(wp.uint32) == paddle.int32
    assert wp.dtype_from_paddle(paddle.bfloat16) is wp.bfloat16
    with pytest.raises(TypeError):
        wp.dtype_from_paddle(paddle.complex64)


def test_device_maps() -> None:
    assert wp.device_from_paddle("cpu") == "cpu"
    assert wp.device_from_paddle(paddle.CPUPlace()) == "cpu"
    assert wp.device_to_paddle("cpu") == "cpu"
    with pytest.raises(RuntimeError):
        wp.stream_from_paddle("cpu")


def test_from_paddle_is_zero_copy() -> None:
    t = paddle.arange(6, dtype="float32").cpu()
    a = wp.from_paddle(t)
    assert a.dtype is wp.float32 and a.shape == (6,) and a.device == "cpu"
    wp.launch(scale, dim=6, inputs=[a, 2.0], device="cpu")
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32) * 2.0)
    v = wp.from_paddle(paddle.zeros([4, 3], dtype="float32").cpu(), dtype=wp.vec3)
    assert v.shape == (4,)


def test_to_paddle_is_zero_copy_and_keeps_array_alive() -> None:
    a = wp.array(np.arange(5, dtype=np.float32), device="cpu")
    t = wp.to_paddle(a)
    a.fill_(3.0)
    np.testing.assert_array_equal(t.numpy(), np.full(5, 3.0, dtype=np.float32))
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.full(5, 3.0, dtype=np.float32))


def test_requires_grad() -> None:
    t = paddle.zeros([4], dtype="float32").cpu()
    t.stop_gradient = False
    a = wp.from_paddle(t)
    assert a.requires_grad and a.grad is not None
    b = wp.zeros(3, requires_grad=True, device="cpu")
    assert not wp.to_paddle(b).stop_gradient
