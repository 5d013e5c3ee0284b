"""Views of tile variables (``row = t[i]``, ``t[1:3, ::2]``, ``tile_view``): updates through them reach the tile."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def through_views(src: wp.array2d(dtype=float), copy: wp.array2d(dtype=float), other: wp.array2d(dtype=float),
                  off: int):
    a = wp.tile_load(src, shape=(5, 6))
    b = wp.tile_zeros(dtype=float, shape=(5, 6))
    for i in range(5):
        row_dst = b[i]
        wp.tile_assign(row_dst, a[i] * 2.0)  # a view updated by an in-place builtin
    wp.tile_store(copy, b)
    c = wp.tile_zeros(dtype=float, shape=(5, 6))
    blk = c[1:3, ::2]
    blk += a[0:2, 0:3]  # augmented assignment on a strided view
    blk[0, 1] = 7.0
    if off > 0:
        v = wp.tile_view(c, offset=(off,))  # a runtime offset, updated in another block
        v[5] = 9.0
    w = c[-1]  # a row counted from the end
    w[0] = a[4, 0]
    wp.tile_store(other, c)


def test_updates_through_views_reach_the_tile_with_gradients():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((5, 6)).astype(np.float32)
    src = wp.array(A, requires_grad=True)
    copy = wp.zeros((5, 6), dtype=float, requires_grad=True)
    other = wp.zeros((5, 6), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(through_views, dim=1, inputs=[src, copy, other, 3], block_dim=8)
    np.testing.assert_allclose(copy.numpy(), 2 * A, rtol=1e-6)
    want = np.zeros((5, 6), np.float32)
    want[1:3, ::2] += A[0:2, 0:3]
    want[1, 2] = 7
    want[3, 5] = 9
    want[4, 0] = A[4, 0]
    np.testing.assert_allclose(other.numpy(), want, rtol=1e-6)

    tape.backward(grads={copy: wp.ones((5, 6), dtype=float), other: wp.ones((5, 6), dtype=float)})
    g = np.full((5, 6), 2.0, np.float32)
    g[0:2, 0:3] += 1.0
    g[0, 1] -= 1.0  # its sum was overwritten by 7.0
    g[4, 0] += 1.0
    np.testing.assert_allclose(src.grad.numpy(), g)


def test_rebinding_ends_a_view():
    @wp.kernel(module="tile_view_rebind")
    def rebind(out: wp.array2d(dtype=float)):
        t = wp.tile_zeros(dtype=float, shape=(2, 3))
        r = t[0]
        r = wp.tile_ones(dtype=float, shape=(3,))  # a new value: no longer a view of t
        r += r
        wp.tile_store(out, t)

    out = wp.full((2, 3), 5.0, dtype=float)
    wp.launch_tiled(rebind, dim=1, inputs=[out], block_dim=8)
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))
