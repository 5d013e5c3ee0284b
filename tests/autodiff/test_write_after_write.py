"""A kernel assigning an array that an earlier recorded kernel wrote: the last store wins, its adjoint consumes the
element's gradient, so the earlier writer receives none for the overwritten elements (unless ``retain_grad``)."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def _square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def _boundary(y: wp.array(dtype=float)):
    y[0] = 0.0


@wp.kernel
def _accumulate(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(y, i, 2.0 * x[i])


@wp.kernel
def _total(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i])


def _arrays(n: int = 4) -> tuple[wp.array, wp.array, wp.array]:
    x = wp.array(np.arange(1, n + 1, dtype=np.float32), requires_grad=True)
    return x, wp.zeros(n, dtype=float, requires_grad=True), wp.zeros(1, dtype=float, requires_grad=True)


def test_assigning_values_an_earlier_kernel_wrote_is_exact() -> None:
    for check in (None, False):
        x, y, loss = _arrays()
        with wp.Tape(check_overwrites=check) as tape:
            wp.launch(_square, dim=4, inputs=[x], outputs=[y])
            wp.launch(_boundary, dim=1, outputs=[y])  # overwrites y[0]: d loss / d x[0] must be 0, not 2
            wp.launch(_total, dim=4, inputs=[y], outputs=[loss])
        tape.backward(loss)
        np.testing.assert_allclose(x.grad.numpy(), [0.0, 4.0, 6.0, 8.0])
        np.testing.assert_allclose(y.grad.numpy(), np.zeros(4))  # every element's gradient went to its writer
        # finite differences of the whole program
        eps = 1e-2
        for k in range(4):
            vals = []
            for d in (eps, -eps):
                xp = np.arange(1, 5, dtype=np.float64)
                xp[k] += d
                yy = wp.zeros(4, dtype=float)
                ll = wp.zeros(1, dtype=float)
                wp.launch(_square, dim=4, inputs=[wp.array(xp.astype(np.float32))], outputs=[yy])
                wp.launch(_boundary, dim=1, outputs=[yy])
                wp.launch(_total, dim=4, inputs=[yy], outputs=[ll])
                vals.append(float(ll.numpy()[0]))
            np.testing.assert_allclose(x.grad.numpy()[k], (vals[0] - vals[1]) / (2 * eps), rtol=1e-2, atol=1e-2)


def test_accumulation_after_a_store_reaches_both() -> None:
    x, y, loss = _arrays()
    with wp.Tape() as tape:  # atomic updates after a store add to it: both gradients are right
        wp.launch(_square, dim=4, inputs=[x], outputs=[y])
        wp.launch(_accumulate, dim=4, inputs=[x], outputs=[y])
        wp.launch(_total, dim=4, inputs=[y], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.arange(1, 5) + 2.0)

    x, y, loss = _arrays()
    with wp.Tape(check_overwrites=False) as tape:
        wp.launch(_square, dim=4, inputs=[x], outputs=[y])
        wp.launch(_boundary, dim=1, outputs=[y])
        wp.launch(_total, dim=4, inputs=[y], outputs=[loss])
    tape.backward(loss)  # the user opted out: no error


def test_arrays_without_gradients_may_be_assigned_again() -> None:
    x, _, loss = _arrays()
    y = wp.zeros(4, dtype=float)
    with wp.Tape() as tape:
        wp.launch(_square, dim=4, inputs=[x], outputs=[y])
        wp.launch(_boundary, dim=1, outputs=[y])
    tape.backward(grads={y: wp.ones(4, dtype=float)})


def test_retain_grad_passes_the_gradient_to_every_writer() -> None:
    x, _, _ = _arrays()
    y = wp.zeros(4, dtype=float, requires_grad=True, retain_grad=True)
    with wp.Tape() as tape:
        wp.launch(_square, dim=4, inputs=[x], outputs=[y])
        wp.launch(_boundary, dim=1, outputs=[y])
    tape.backward(grads={y: wp.ones(4, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.arange(1, 5))  # the first writer sees y.grad too
