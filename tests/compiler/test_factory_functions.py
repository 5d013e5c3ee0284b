"""Functions made by a factory share their source: each copy is emitted once per kernel under a name of its own.

A library that builds ``@wp.func`` objects in a factory (one per configuration) gets functions with one source and
one signature. Copies whose code is the same must be emitted once (the C++ compiler refuses a redefinition); copies
whose captured values differ must each keep their own code.
"""

from __future__ import annotations

import numpy as np

import treadle as wp


def make_scale(factor: float, offset: float):
    @wp.func
    def scale(x: float) -> float:
        return x * factor + offset

    return scale


def make_apply(fn):
    @wp.func
    def apply(x: float) -> float:
        return fn(x) + 1.0

    return apply


same_a, same_b = make_scale(2.0, 0.5), make_scale(2.0, 0.5)
other = make_scale(-3.0, 0.25)
apply_same, apply_other = make_apply(same_a), make_apply(other)  # one source, different callees


@wp.kernel
def use_all(x: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = same_a(x[i])
    out[i, 1] = same_b(x[i])
    out[i, 2] = other(x[i])
    out[i, 3] = apply_same(x[i])
    out[i, 4] = apply_other(x[i])


def test_factory_copies_emitted_once_or_kept_apart():
    x = np.array([0.0, 1.5, -2.0], dtype=np.float32)
    out = wp.zeros((3, 5), dtype=float)
    wp.launch(use_all, 3, inputs=[wp.array(x), out])
    want = np.stack([x * 2 + 0.5, x * 2 + 0.5, x * -3 + 0.25, x * 2 + 1.5, x * -3 + 1.25], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@wp.kernel
def grad_through(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, apply_same(x[i]) * apply_other(x[i]))


def test_factory_copies_differentiate():
    x0 = np.array([0.3, -1.1], dtype=np.float32)
    x = wp.array(x0, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(grad_through, 2, inputs=[x, loss])
    tape.backward(loss)
    xd = x0.astype(np.float64)
    # d/dx (2x + 1.5)(-3x + 1.25) = 2(-3x + 1.25) - 3(2x + 1.5)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (-3 * xd + 1.25) - 3 * (2 * xd + 1.5), rtol=1e-5)
