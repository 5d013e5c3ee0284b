"""A launch that reads elements it wrote itself earlier in the same thread differentiates without a report.

Forward kinematics along a chain stored in one array is the case: one thread walks the links root first, each link
reading its parent's value that the same thread has just written. The backward pass then needs the array's current
contents (those are the values read), not the contents before the launch. A launch that read an element's *old*
value before overwriting it (``x[i] = f(x[i])``, even an idempotent ``f``) is still reported.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def walk_chain(order: wp.array(dtype=int), parent: wp.array(dtype=int), w: wp.array(dtype=float),
               enabled: wp.array(dtype=int), x: wp.array(dtype=float)):
    _t = wp.tid()
    for n in range(order.shape[0]):
        i = order[n]
        if enabled[i] != 0:
            base = 1.0
            if parent[i] >= 0:
                base = x[parent[i]]  # written earlier by this thread (or, for node 6's parent 7, never written)
            x[i] = wp.sin(base * w[i]) + base


@wp.kernel
def summed(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, x[wp.tid()] * x[wp.tid()])


@wp.kernel
def square_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def abs_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.abs(x[i])


ORDER = np.array([0, 1, 2, 3, 4, 5, 6], dtype=np.int32)
PARENT = np.array([-1, 0, 1, 1, 3, 4, 7, -1], dtype=np.int32)  # node 7 lies outside the chain walked
ENABLED = np.array([1, 1, 1, 0, 1, 1, 1, 1], dtype=np.int32)  # node 3 is skipped: 4 reads its value from before
X0 = np.array([0.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.9], dtype=np.float32)


def _forward(w: np.ndarray, x0: np.ndarray) -> float:
    x = x0.astype(np.float64).copy()
    for i in ORDER:
        if ENABLED[i]:
            base = 1.0 if PARENT[i] < 0 else x[PARENT[i]]
            x[i] = np.sin(base * w[i]) + base
    return float(np.sum(x * x))


def _run(check: bool):
    w0 = np.linspace(0.3, 1.1, 8).astype(np.float32)
    w = wp.array(w0, requires_grad=True)
    x = wp.array(X0, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(check_overwrites=check)
    with tape:
        wp.launch(walk_chain, 1, inputs=[wp.array(ORDER), wp.array(PARENT), w, wp.array(ENABLED), x])
        wp.launch(summed, 8, inputs=[x], outputs=[loss])
    after_forward = x.numpy().copy()
    tape.backward(loss)
    return w0, w, x, loss, after_forward


def test_chain_reading_its_own_writes_differentiates_exactly():
    w0, w, x, loss, after_forward = _run(check=True)
    assert loss.numpy()[0] == pytest.approx(_forward(w0, X0), rel=1e-5)
    np.testing.assert_array_equal(x.numpy(), after_forward)  # the check left the contents as the forward made them
    h = 1e-3
    for k in range(8):
        d = np.zeros(8)
        d[k] = h
        fd_w = (_forward(w0 + d, X0) - _forward(w0 - d, X0)) / (2 * h)
        fd_x = (_forward(w0, X0 + d) - _forward(w0, X0 - d)) / (2 * h)
        assert w.grad.numpy()[k] == pytest.approx(fd_w, rel=2e-3, abs=2e-3), k
        assert x.grad.numpy()[k] == pytest.approx(fd_x, rel=2e-3, abs=2e-3), k
    assert x.grad.numpy()[7] != 0.0 and x.grad.numpy()[3] != 0.0  # the values read but never written
    unchecked = _run(check=False)
    np.testing.assert_allclose(w.grad.numpy(), unchecked[1].grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("kernel", [square_in_place, abs_in_place])
def test_reading_the_old_value_before_overwriting_it_is_still_reported(kernel):
    x = wp.array(np.array([-1.5, 2.0, -0.5], dtype=np.float32), requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(kernel, 3, inputs=[x])
        wp.launch(summed, 3, inputs=[x], outputs=[loss])
    kept = x.numpy().copy()
    with pytest.raises(wp.OverwriteError, match=f"array 'x' read by kernel '{kernel.key}' was overwritten by the "
                                                "launch itself"):
        tape.backward(loss)
    np.testing.assert_array_equal(x.numpy(), kept)  # the check restored what it changed
