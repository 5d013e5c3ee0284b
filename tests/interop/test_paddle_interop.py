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


def test_attached_gradient_is_the_one_paddle_accumulates_into() -> None:
    t = paddle.zeros([4], dtype="float32").cpu()
    t.stop_gradient = False
    a = wp.from_paddle(t)
    a.grad.fill_(3.0)  # written through the mapped gradient ...
    (t * 2.0).sum().backward()  # ... and Paddle adds its own gradient to the same buffer
    np.testing.assert_array_equal(t.grad.numpy(), np.full(4, 5.0, dtype=np.float32))


@wp.kernel
def _loss(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] * x[i])


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64", "bool"])
def test_every_dtype_family_round_trips_without_copies(name: str) -> None:
    host = (np.arange(12) % 2).astype(name) if name == "bool" else np.arange(12).astype(name)
    t = paddle.to_tensor(host).cpu()
    a = wp.from_paddle(t)
    assert a.dtype is wp.dtype_from_paddle(getattr(paddle, name)) and a.shape == (12,)
    assert a.ptr == t.data_ptr()  # same memory
    np.testing.assert_array_equal(a.numpy(), host)
    back = wp.to_paddle(a)
    assert back.data_ptr() == a.ptr
    np.testing.assert_array_equal(back.numpy(), host)


def test_matrix_elements_consume_trailing_dimensions() -> None:
    host = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    m = wp.from_paddle(paddle.to_tensor(host).cpu(), dtype=wp.mat33)
    assert m.shape == (2,) and m.dtype is wp.mat33
    np.testing.assert_array_equal(m.numpy(), host)
    assert tuple(wp.to_paddle(m).shape) == (2, 3, 3)


def test_tape_gradient_lands_in_the_paddle_tensor() -> None:
    t = paddle.to_tensor(np.array([1.0, -2.0, 3.0], dtype=np.float32)).cpu()
    t.stop_gradient = False
    x = wp.from_paddle(t)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(_loss, dim=3, inputs=[x], outputs=[out])
    tape.backward(out)
    np.testing.assert_allclose(t.grad.numpy(), [2.0, -4.0, 6.0])  # d(sum x^2)/dx, seen by Paddle without a copy
    assert float(out.numpy()[0]) == pytest.approx(14.0)


def test_to_paddle_shares_the_gradient_with_the_tape() -> None:
    x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True, device="cpu")
    t = wp.to_paddle(x)
    assert t.grad is not None and t.grad.data_ptr() == x.grad.ptr  # one buffer
    out = wp.zeros(1, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(_loss, dim=3, inputs=[x, out], device="cpu")
    tape.backward(out)
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 4.0, 6.0])
    v = wp.zeros(2, dtype=wp.vec3, requires_grad=True, device="cpu")
    v.grad.fill_(1.5)
    tv = wp.to_paddle(v)
    assert v.grad.dtype is wp.vec3 and v.grad.shape == (2,)  # re-pointed, same type and values
    np.testing.assert_array_equal(tv.grad.numpy(), np.full((2, 3), 1.5, dtype=np.float32))


@wp.kernel
def _distance(x: wp.array(dtype=float), target: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - target[i]
    wp.atomic_add(loss, 0, d * d)


def test_paddle_optimizer_converges_on_a_treadle_loss() -> None:
    x = wp.zeros(4, requires_grad=True, device="cpu")
    goal = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    target = wp.array(goal, device="cpu")
    t = wp.to_paddle(x)
    opt = paddle.optimizer.Adam(learning_rate=0.1, parameters=[t])
    for _ in range(300):
        loss = wp.zeros(1, requires_grad=True, device="cpu")
        tape = wp.Tape()
        with tape:
            wp.launch(_distance, dim=4, inputs=[x, target, loss], device="cpu")
        tape.backward(loss)
        opt.step()  # reads t.grad, which the tape wrote, and updates x through the shared memory
        opt.clear_grad()
    np.testing.assert_allclose(x.numpy(), goal, atol=1e-4)
    assert loss.numpy()[0] < 1e-8
