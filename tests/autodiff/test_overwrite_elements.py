"""The tape's overwrite check looks at the gradients: writes to other elements than the ones a launch read pass.

A kernel launched level by level over one array (each level reads what the previous one wrote and writes other
elements, as forward kinematics does) differentiates exactly and must not be reported; overwriting an element a
launch read, by a kernel or a copy, changes that launch's gradients and is reported.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def level(q: wp.array(dtype=float), w: wp.array(dtype=float), parent: wp.array(dtype=int), start: int):
    i = wp.tid() + start
    q[i] = q[parent[i]] * q[parent[i]] * w[i]


@wp.kernel
def set_value(q: wp.array(dtype=float), i: int, v: float):
    q[i] = v


@wp.kernel
def total(q: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, q[wp.tid()])


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


PARENT = np.array([0, 0, 0, 1, 1, 2], dtype=np.int32)
LEVELS = [(1, 2), (3, 3)]  # (first index, count): nodes 1-2 hang from 0, nodes 3-5 from 1 and 2


def _forward(q0: np.ndarray, w: np.ndarray) -> float:
    q = q0.astype(np.float64).copy()
    for start, n in LEVELS:
        for i in range(start, start + n):
            q[i] = q[PARENT[i]] ** 2 * w[i]
    return float(q.sum())


def _fd(f, x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    g = np.zeros(x.size)
    for k in range(x.size):
        xp, xm = x.astype(np.float64).copy(), x.astype(np.float64).copy()
        xp[k] += h
        xm[k] -= h
        g[k] = (f(xp) - f(xm)) / (2 * h)
    return g


def _levels_tape(q0: np.ndarray, w0: np.ndarray, **tape_args):
    q = wp.array(q0, dtype=float, requires_grad=True)
    w = wp.array(w0, dtype=float, requires_grad=True)
    parent = wp.array(PARENT)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape(**tape_args)
    with tape:
        for start, n in LEVELS:
            wp.launch(level, n, inputs=[q, w, parent, start])
        wp.launch(total, 6, inputs=[q], outputs=[loss])
    return tape, q, w, loss


def test_level_by_level_updates_of_one_array_differentiate_exactly():
    q0 = np.array([1.2, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    w0 = np.array([1.0, 0.9, 1.1, 0.8, 1.3, 0.7], dtype=np.float32)
    tape, q, w, loss = _levels_tape(q0, w0)
    tape.backward(loss)  # no OverwriteError: each level writes other elements than the ones before it read
    assert loss.numpy()[0] == pytest.approx(_forward(q0, w0), rel=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), _fd(lambda x: _forward(q0, x), w0), rtol=2e-3, atol=1e-4)
    # q's own gradient: the stores consumed the gradients of the overwritten zeros, q[0] is the only input
    np.testing.assert_allclose(q.grad.numpy()[0], _fd(lambda x: _forward(np.r_[x, q0[1:]], w0), q0[:1])[0],
                               rtol=2e-3)
    unchecked = _levels_tape(q0, w0, check_overwrites=False)
    unchecked[0].backward(unchecked[3])
    np.testing.assert_allclose(w.grad.numpy(), unchecked[2].grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(q.grad.numpy(), unchecked[1].grad.numpy(), rtol=1e-6)


def test_overwriting_an_element_a_level_read_is_reported():
    q0 = np.array([1.2, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    q = wp.array(q0, dtype=float, requires_grad=True)
    w = wp.array(np.ones(6, np.float32), dtype=float, requires_grad=True)
    parent = wp.array(PARENT)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(level, 2, inputs=[q, w, parent, 1])  # reads q[0]
        wp.launch(set_value, 1, inputs=[q, 0, 3.0])  # overwrites q[0]
        wp.launch(total, 6, inputs=[q], outputs=[loss])
    with pytest.raises(wp.OverwriteError, match="array 'q' read by kernel 'level' was overwritten by kernel "
                                                "'set_value'.*different gradients"):
        tape.backward(loss)


def test_overwrite_with_the_same_values_changes_no_gradient():
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 2, inputs=[x], outputs=[y])
        wp.launch(set_value, 1, inputs=[x, 1, 2.0])  # x[1] was 2.0 already
    tape.backward(grads={y: wp.array(np.ones(2, np.float32))})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])  # d(sum x**2)/dx at the values square read


def test_copies_into_elements_not_read_pass_and_into_read_ones_are_reported():
    def run(dest_offset: int):
        x = wp.array(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32), requires_grad=True)
        y = wp.zeros(2, dtype=float, requires_grad=True)
        src = wp.array(np.array([7.0, 8.0], dtype=np.float32), requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(square, 2, inputs=[x], outputs=[y])  # reads x[0], x[1]
            wp.copy(x, src, dest_offset=dest_offset, count=2)
        tape.backward(grads={y: wp.array(np.ones(2, np.float32))})
        return x

    np.testing.assert_allclose(run(2).grad.numpy(), [2.0, 4.0, 0.0, 0.0])
    with pytest.raises(wp.OverwriteError, match="overwritten by kernel 'copy'"):
        run(1)


def test_assign_before_backward_is_checked_the_same_way():
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square, 2, inputs=[x], outputs=[y])
        x.assign(wp.array(np.array([5.0, 6.0], dtype=np.float32), requires_grad=True))
    with pytest.raises(wp.OverwriteError, match="'square'"):
        tape.backward(grads={y: wp.array(np.ones(2, np.float32))})


def test_a_later_launch_of_the_same_kernel_is_named_as_such():
    q = wp.array(np.array([1.2, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32), requires_grad=True)
    w = wp.array(np.ones(6, np.float32), dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(level, 2, inputs=[q, w, wp.array(PARENT), 1])  # reads q[0], writes q[1], q[2]
        # writes q[0] from q[1]: its own read is untouched, the first launch's is not
        wp.launch(level, 1, inputs=[q, w, wp.array(np.ones(6, dtype=np.int32)), 0])
        wp.launch(total, 6, inputs=[q], outputs=[loss])
    with pytest.raises(wp.OverwriteError, match="read by kernel 'level' was overwritten by kernel 'level' later"):
        tape.backward(loss)
