"""Store adjoints consume the gradient of the element they overwrite; what keeps it (retain_grad, caller-owned
adjoint buffers); the tape's per-array read flags."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def _cube(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.kernel
def _add_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = y[i] + 2.0 * x[i]


def test_explicit_adjoint_buffers_are_not_consumed():
    x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    wp.launch(_cube, dim=3, inputs=[x], outputs=[y])
    gx = wp.zeros(3, dtype=float)
    gy = wp.array(np.array([1.0, 10.0, 100.0], dtype=np.float32))  # the caller's buffer: kept as given
    wp.launch(_cube, dim=3, inputs=[x], outputs=[y], adj_inputs=[gx], adj_outputs=[gy], adjoint=True)
    np.testing.assert_allclose(gx.numpy(), 3.0 * np.array([1.0, 4.0, 9.0]) * [1.0, 10.0, 100.0], rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), [1.0, 10.0, 100.0])
    # the array's own gradient passed explicitly is consumed, as through a tape
    y.grad.assign(np.array([1.0, 1.0, 1.0], dtype=np.float32))
    wp.launch(_cube, dim=3, inputs=[x], outputs=[y], adj_inputs=[x.grad], adj_outputs=[y.grad], adjoint=True)
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.array([1.0, 4.0, 9.0]), rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), [0.0, 0.0, 0.0])


def test_retain_grad_set_after_creation_keeps_the_gradient():
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    y.retain_grad = True  # after the descriptor may have been built
    with wp.Tape() as tape:
        wp.launch(_cube, dim=2, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.array(np.array([1.0, 2.0], dtype=np.float32))})
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 24.0])


def test_in_place_accumulating_kernel_matches_finite_differences():
    # y = x0^3, then y += 2 x1 twice (in place): d(sum y)/dx0 = 3 x0^2, d/dx1 = 4
    x0 = wp.array(np.array([0.5, -1.0], dtype=np.float32), requires_grad=True)
    x1 = wp.array(np.array([2.0, 3.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(_cube, dim=2, inputs=[x0], outputs=[y])
        wp.launch(_add_into, dim=2, inputs=[x1, y])
        wp.launch(_add_into, dim=2, inputs=[x1, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    np.testing.assert_allclose(x0.grad.numpy(), 3.0 * np.array([0.25, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(x1.grad.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(y.numpy(), [0.125 + 8.0, -1.0 + 12.0])


def test_read_flags_follow_recorded_reads():
    a = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True)
    b = wp.zeros(3, dtype=float, requires_grad=True)
    assert not a._is_read and not b._is_read
    tape = wp.Tape()
    with tape:
        wp.launch(_cube, dim=3, inputs=[a], outputs=[b])
    assert a._is_read and not b._is_read
    other = wp.Tape()  # a second tape reading `a`: its backward must not clear the first tape's flag
    with other:
        wp.launch(_cube, dim=3, inputs=[a], outputs=[wp.zeros(3, dtype=float, requires_grad=True)])
    other.reset()
    assert a._is_read
    tape.backward(grads={b: wp.ones(3, dtype=float)})
    assert not a._is_read
    # copies read their source; views flag their parents
    c = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as t2:
        wp.copy(c, a)
    assert a._is_read and not c._is_read
    t2.reset()
    assert not a._is_read
    m = wp.zeros((2, 3), dtype=float)
    m[1].mark_read()
    assert m._is_read
    m.mark_init()
    assert not m._is_read


def test_retain_grad_needs_a_gradient():
    with pytest.raises(ValueError, match="requires_grad"):
        wp.zeros(3, dtype=float, retain_grad=True)
    a = wp.zeros(3, dtype=float)
    with pytest.raises(ValueError, match="requires_grad"):
        a.retain_grad = True
    a.requires_grad = True
    a.retain_grad = True
    assert a.retain_grad
    a.requires_grad = False  # dropping the gradient drops retain_grad
    assert not a.retain_grad
    assert wp.zeros(3, dtype=float, requires_grad=True, retain_grad=True).retain_grad
