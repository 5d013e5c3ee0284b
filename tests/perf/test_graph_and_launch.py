"""Recorded launches (``record_cmd=True``) and CPU graph capture replay exactly what direct launches do."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

N = 50_000


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    v[i] = v[i] + wp.vec3(0.0, -9.8, 0.0) * dt
    x[i] = x[i] + v[i] * dt


@wp.kernel
def bounce(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    if x[i][1] < 0.0:
        x[i] = wp.vec3(x[i][0], -x[i][1], x[i][2])
        v[i] = wp.vec3(v[i][0], -v[i][1] * 0.9, v[i][2])


@wp.kernel
def energy(v: wp.array(dtype=wp.vec3), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, wp.dot(v[i], v[i]))


@wp.kernel
def add_const(a: wp.array(dtype=float), c: float, n: int):
    i = wp.tid()
    a[i] = a[i] + c * float(n)


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def _state(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = wp.array(rng.random((N, 3)).astype(np.float32), dtype=wp.vec3)
    v = wp.array(rng.random((N, 3)).astype(np.float32) - 0.5, dtype=wp.vec3)
    return x, v


def _step(x, v, e):
    wp.launch(integrate, N, inputs=[x, v, 0.01])
    wp.launch(bounce, N, inputs=[x, v])
    wp.launch(energy, N, inputs=[v, e])


def test_capture_replays_equal_direct_launches():
    with wp.config.override(deterministic=True):
        x1, v1 = _state()
        e1 = wp.zeros(1, dtype=float)
        for _ in range(10):
            _step(x1, v1, e1)

        x2, v2 = _state()
        e2 = wp.zeros(1, dtype=float)
        with wp.ScopedCapture() as cap:
            _step(x2, v2, e2)
        assert np.array_equal(e2.numpy(), [0.0])  # nothing ran while capturing
        for _ in range(10):
            wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(x1.numpy(), x2.numpy())
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())
    np.testing.assert_array_equal(e1.numpy(), e2.numpy())


def test_capture_begin_end_and_recorded_launches():
    a = wp.zeros(N, dtype=float)
    cmd = wp.launch(add_const, N, inputs=[a, 1.0, 2], record_cmd=True)
    wp.capture_begin()
    try:
        wp.launch(add_const, N, inputs=[a, 0.5, 1])
        cmd.launch()  # a recorded launch inside a capture is captured too
    finally:
        g = wp.capture_end()
    assert isinstance(g, wp.Graph) and len(g) == 2
    np.testing.assert_array_equal(a.numpy(), 0.0)
    cmd.set_param_at_index(1, 100.0)  # changing the Launch later does not change the captured copy
    wp.capture_launch(g)
    np.testing.assert_array_equal(a.numpy(), 2.5)
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), 202.5)


def test_recorded_launch_set_params_and_dim():
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float)
    y = wp.zeros(N, dtype=float)
    cmd = wp.launch(square, N, inputs=[x], outputs=[y], record_cmd=True)
    np.testing.assert_array_equal(y.numpy(), 0.0)  # record_cmd does not run
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), np.arange(N, dtype=np.float32) ** 2)
    y2 = wp.zeros(N, dtype=float)
    cmd.set_param_by_name("y", y2)
    cmd.set_dim(N // 2)
    cmd.launch()
    ref = np.zeros(N, np.float32)
    ref[: N // 2] = np.arange(N // 2, dtype=np.float32) ** 2
    np.testing.assert_array_equal(y2.numpy(), ref)


def test_capture_of_tape_backward():
    @wp.kernel
    def sq_sum(x: wp.array(dtype=float), l: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(l, 0, x[i] * x[i])

    x = wp.array(np.linspace(-1, 1, N).astype(np.float32), dtype=float, requires_grad=True)
    l = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sq_sum, N, inputs=[x, l])
    with wp.ScopedCapture() as cap:
        tape.backward(loss=l)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    wp.capture_launch(cap.graph)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy(), rtol=1e-6)


def test_capture_errors():
    with pytest.raises(RuntimeError):
        wp.capture_end()
    wp.capture_begin()
    try:
        with pytest.raises(RuntimeError):
            wp.capture_begin()
    finally:
        wp.capture_end()
    with pytest.raises(TypeError):
        wp.capture_launch(object())


def test_repeated_launch_sees_new_scalars_and_arrays():
    """The launch fast path skips re-packing unchanged arguments; changed ones must be seen."""
    a = wp.zeros(N, dtype=float)
    b = wp.zeros(N, dtype=float)
    for k in range(5):
        wp.launch(add_const, N, inputs=[a, float(k), 1])
    np.testing.assert_array_equal(a.numpy(), 10.0)
    wp.launch(add_const, N, inputs=[b, 1.0, 1])
    wp.launch(add_const, N, inputs=[a, 1.0, 3])
    np.testing.assert_array_equal(b.numpy(), 1.0)
    np.testing.assert_array_equal(a.numpy(), 13.0)
    c = wp.zeros(N, dtype=float, requires_grad=True)
    wp.launch(add_const, N, inputs=[c, 1.0, 1])
    c.grad = wp.zeros(N, dtype=float)  # a new descriptor for the same array object
    wp.launch(add_const, N, inputs=[c, 1.0, 1])
    np.testing.assert_array_equal(c.numpy(), 2.0)
    for size in (N, 10, 0, N // 3):
        d = wp.zeros(N, dtype=float)
        wp.launch(add_const, size, inputs=[d, 1.0, 1])
        assert d.numpy().sum() == size
