"""Explicit adjoint launches whose adjoint arrays are laid out differently from the primal arrays."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def _scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i] * x[i]


def test_strided_and_expanded_adjoint_arrays() -> None:
    n = 8
    xs = np.linspace(0.5, 2.0, n).astype(np.float32)
    x = wp.array(xs)
    y = wp.zeros(n, dtype=float)
    wp.launch(_scale, dim=n, inputs=[x], outputs=[y])
    # Adjoint of y: every other element of a longer buffer (stride 8 bytes); adjoint of x: strided as well.
    ybar_host = np.arange(2 * n, dtype=np.float32)
    ybar = wp.array(ybar_host)[::2]
    xbar_base = wp.zeros(3 * n, dtype=float)
    xbar = xbar_base[::3]
    wp.launch(_scale, dim=n, inputs=[x], outputs=[y], adj_inputs=[xbar], adj_outputs=[ybar], adjoint=True)
    np.testing.assert_allclose(xbar.numpy(), 6.0 * xs * ybar_host[::2], rtol=1e-6)
    np.testing.assert_array_equal(xbar_base.numpy()[1::3], 0.0)  # nothing written between the strided elements
    np.testing.assert_array_equal(ybar.numpy(), ybar_host[::2])  # the incoming adjoint is left as it was

    # An expanded adjoint (stride 0: one value seen n times), as torch hands out for y.sum().
    one = np.ones(1, dtype=np.float32)
    expanded = wp.array(np.lib.stride_tricks.as_strided(one, shape=(n,), strides=(0,)), copy=False)
    xbar2 = wp.zeros(n, dtype=float)
    wp.launch(_scale, dim=n, inputs=[x], outputs=[y], adj_inputs=[xbar2], adj_outputs=[expanded], adjoint=True)
    np.testing.assert_allclose(xbar2.numpy(), 6.0 * xs, rtol=1e-6)
    assert one[0] == 1.0
