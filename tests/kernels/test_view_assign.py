"""Assignments through array views: ``c[i][j] = ...`` and ``c[i][j][k] = ...`` on multi-dimensional arrays."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def view_assign(a: wp.array2d(dtype=wp.vec3), b: wp.array2d(dtype=wp.vec3), c: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    c[i][0] = a[i][0] + b[i][0]
    c[i][1][2] = 5.0
    c[i][1] += a[i][1]


def test_assign_through_views_with_gradients(device):
    rng = np.random.default_rng(2)
    a_np = rng.random((3, 2, 3)).astype(np.float32)
    b_np = rng.random((3, 2, 3)).astype(np.float32)
    a = wp.array(a_np, dtype=wp.vec3, requires_grad=True, device=device)
    b = wp.array(b_np, dtype=wp.vec3, requires_grad=True, device=device)
    c = wp.zeros((3, 2), dtype=wp.vec3, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(view_assign, dim=3, inputs=[a, b], outputs=[c], device=device)
    expected = np.zeros((3, 2, 3), dtype=np.float32)
    expected[:, 0] = a_np[:, 0] + b_np[:, 0]
    expected[:, 1, 2] = 5.0
    expected[:, 1] += a_np[:, 1]
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-6)
    c.grad = wp.full((3, 2), value=1.0, dtype=wp.vec3, device=device)
    tape.backward()
    ga = np.zeros_like(a_np)
    ga[:, 0] = 1.0
    ga[:, 1] = 1.0
    np.testing.assert_array_equal(b.grad.numpy()[:, 0], np.ones((3, 3)))
    np.testing.assert_array_equal(a.grad.numpy(), ga)


def test_assigning_a_whole_view_is_an_error():
    @wp.kernel(module="unique")
    def bad(c: wp.array2d(dtype=float)):
        c[0] = 1.0

    with pytest.raises(Exception, match="index"):
        wp.launch(bad, dim=1, inputs=[wp.zeros((2, 2), dtype=float)])
