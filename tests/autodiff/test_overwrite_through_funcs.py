"""The tape's overwrite check looks through ``@wp.func`` calls: a parameter the function only passes on (``+``,
``-``, copies) to what it returns -- such as a ``wp.ref`` updated in place -- does not make the caller's array a
value its backward pass needs; a parameter the function multiplies, compares or indexes with does."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.func
def _bump(x: wp.ref[float], v: float):
    x = x + v * v


@wp.func
def _scale(x: wp.ref[float], v: float):
    x = x * v


@wp.func
def _shifted(x: float, v: float) -> float:
    return x - v * v


@wp.kernel
def _bump_in_place(y: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    _bump(y[i], v[i])


@wp.kernel
def _scale_in_place(y: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    _scale(y[i], v[i])


@wp.kernel
def _shift_in_place(y: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = _shifted(y[i], v[i])


@wp.kernel
def _shift_squared(y: wp.array(dtype=float), v: wp.array(dtype=float)):
    i = wp.tid()
    s = _shifted(y[i], v[i])
    y[i] = s * s


def _arrays():
    v0 = np.array([0.5, -1.0, 2.0, 3.0], np.float32)
    y = wp.array(np.ones(4, np.float32), requires_grad=True)
    v = wp.array(v0, requires_grad=True)
    return y, v, v0


@pytest.mark.parametrize("kernel,sign", [(_bump_in_place, 1.0), (_shift_in_place, -1.0)])
def test_passed_on_parameter_updated_in_place_has_exact_gradients(kernel, sign):
    y, v, v0 = _arrays()
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 4, inputs=[y, v])
    np.testing.assert_allclose(y.numpy(), 1.0 + sign * v0 * v0, rtol=1e-6)
    tape.backward(grads={y: wp.array(np.ones(4, np.float32))})
    np.testing.assert_allclose(v.grad.numpy(), sign * 2.0 * v0, rtol=1e-6)  # d(y_new)/dv
    np.testing.assert_allclose(y.grad.numpy(), np.ones(4), rtol=1e-6)  # d(y_new)/d(y_old)


@pytest.mark.parametrize("kernel", [_scale_in_place, _shift_squared])
def test_parameter_whose_value_the_gradient_needs_still_raises(kernel):
    y, v, _ = _arrays()
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 4, inputs=[y, v])
    with pytest.raises(wp.OverwriteError, match="'y'"):
        tape.backward(grads={y: wp.array(np.ones(4, np.float32))})
