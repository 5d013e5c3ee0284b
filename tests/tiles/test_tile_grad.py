"""Gradients through tile operations (Tape, adjoint launches) against central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

M, N = 3, 5


@wp.func
def softplus(x: wp.float64) -> wp.float64:
    return wp.log(wp.float64(1.0) + wp.exp(x))


@wp.kernel
def loss_elementwise(x: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64),
                     out: wp.array2d(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i, _ = wp.tid()
    a = wp.tile_load(x, shape=(M, N))
    b = wp.tile_load(y, shape=(M, N))
    c = a * b + a / (b + wp.tile_full(shape=(M, N), value=wp.float64(2.0), dtype=wp.float64)) - wp.float64(0.5) * a
    c = wp.tile_map(wp.sin, c) + wp.tile_map(softplus, b)
    d = wp.tile_transpose(c)
    e = wp.tile_reshape(d, shape=(M * N,))
    f = wp.tile_scan_inclusive(e)
    g = wp.tile_broadcast(wp.tile_view(c, offset=(1,)), shape=(2, N))
    wp.tile_axpy(wp.float64(3.0), a, b)
    h = wp.tile_diag_add(wp.tile_view(b, offset=(0, 0), shape=(M, M)), wp.tile_reshape(wp.tile_view(a, offset=(2, 1), shape=(1, M)), shape=M))
    wp.tile_store(out, c * c)
    s = wp.tile_sum(f) + wp.tile_dot(g, g) + wp.tile_sum(h * h) + wp.tile_max(a) - wp.tile_min(b)
    s += wp.tile_sum(wp.tile_sum(b * a, axis=0) * wp.tile_arange(N, dtype=wp.float64))
    s += wp.tile_sum(wp.tile_scan_exclusive(wp.tile_reshape(b, shape=(-1,))))
    k = wp.tile_zeros(shape=(2, 2), dtype=wp.float64)
    wp.tile_assign(k, wp.tile_view(a, offset=(1, 3), shape=(2, 2)))
    k[0, 1] = a[0, 0] * b[2, 4]
    s += wp.tile_sum(k * k) + wp.untile(wp.tile(a[2, 2] * b[1, 1]))
    k2 = a * wp.float64(1.0)
    k2[1, :] = b[2]  # a row replaced through a slice
    s += wp.tile_sum(k2 * k2) + wp.tile_sum(c[1:3, 2:] * b[0:2, 0:3])
    loss[i] = s[0] + wp.tile_extract(wp.tile_astype(a, wp.float64), 1, 1)


def _loss(X, Y):
    x = wp.array(X, dtype=wp.float64, requires_grad=True)
    y = wp.array(Y, dtype=wp.float64, requires_grad=True)
    out = wp.zeros((M, N), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    return x, y, out, loss


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(6)
    X = rng.uniform(0.5, 1.5, (M, N))
    Y = rng.uniform(0.5, 1.5, (M, N))
    x, y, out, loss = _loss(X, Y)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(loss_elementwise, dim=1, inputs=[x, y, out, loss], block_dim=32)
    # both outputs seed the backward pass: the stored tile (weights W) and the scalar loss
    W = rng.uniform(-1, 1, (M, N))
    tape.backward(grads={loss: wp.array([1.0], dtype=wp.float64), out: wp.array(W, dtype=wp.float64)})
    gx, gy = x.grad.numpy(), y.grad.numpy()

    def f(Xv, Yv):
        xx, yy, oo, ll = _loss(Xv, Yv)
        wp.launch_tiled(loss_elementwise, dim=1, inputs=[xx, yy, oo, ll], block_dim=32)
        return ll.numpy()[0] + (W * oo.numpy()).sum()

    h = 1e-6
    for G, which in ((gx, 0), (gy, 1)):
        fd = np.zeros((M, N))
        for idx in np.ndindex(M, N):
            P = [X.copy(), Y.copy()]
            Q = [X.copy(), Y.copy()]
            P[which][idx] += h
            Q[which][idx] -= h
            fd[idx] = (f(*P) - f(*Q)) / (2 * h)
        np.testing.assert_allclose(G, fd, rtol=1e-5, atol=1e-6)


@wp.kernel
def gather_add(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i, _ = wp.tid()
    t = wp.tile_load(src, shape=4, offset=i * 2)  # overlapping windows: gradients add up
    wp.tile_atomic_add(dst, t * t, offset=0)


@pytest.mark.parametrize("blocks", [1, 3])
def test_gradient_of_overlapping_loads_and_atomic_adds(blocks):
    S = np.arange(1, 10, dtype=np.float32)
    src = wp.array(S, requires_grad=True)
    dst = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gather_add, dim=blocks, inputs=[src, dst], block_dim=16)
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    tape.backward(grads={dst: wp.array(w)})
    ref = np.zeros(9, np.float32)
    for b in range(blocks):
        for k in range(4):
            if b * 2 + k < 9:
                ref[b * 2 + k] += 2 * S[b * 2 + k] * w[k]
    np.testing.assert_allclose(src.grad.numpy(), ref, rtol=1e-6)


def test_an_op_without_adjoint_is_loud():
    # A kernel of its own: the warning is given once per kernel, and a module-level kernel may already have had
    # its backward pass emitted by an earlier test (the CUDA compile checks emit every kernel the suite defines).
    @wp.kernel(module="unique")
    def not_differentiable(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        _i, _ = wp.tid()
        t = wp.tile_load(x, shape=4)
        out[0] = wp.tile_reduce(wp.max, t)[0]

    x = wp.array(np.ones(4, np.float32), requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(not_differentiable, dim=1, inputs=[x, out], block_dim=8)
    with pytest.warns(wp.DroppedGradientWarning if hasattr(wp, "DroppedGradientWarning") else Warning,
                      match="tile_reduce.*no adjoint"):
        tape.backward(grads={out: wp.ones(1, dtype=float)})


@wp.kernel
def gather_loss(x: wp.array2d(dtype=float), idx: wp.array(dtype=int), out: wp.array2d(dtype=float)):
    _i, _ = wp.tid()
    rows = wp.tile_load_indexed(x, indices=wp.tile_load(idx, shape=3), shape=(3, 2), axis=0)
    wp.tile_store_indexed(out, wp.tile_arange(3, dtype=int), rows * rows, axis=0)


def test_gradient_of_indexed_loads_and_stores():
    X = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    x = wp.array(X, requires_grad=True)
    out = wp.zeros((3, 2), dtype=float, requires_grad=True)
    idx = wp.array(np.array([2, 0, 2], np.int32))  # row 2 twice: its gradients add up
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gather_loss, dim=1, inputs=[x, idx, out], block_dim=8)
    W = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    tape.backward(grads={out: wp.array(W)})
    ref = np.zeros_like(X)
    for k, r in enumerate([2, 0, 2]):
        ref[r] += 2 * X[r] * W[k]
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6)


@wp.kernel
def vec_dot(v: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i, _ = wp.tid()
    a = wp.tile_load(v, shape=3)
    b = wp.tile_load(w, shape=3)
    out[i] = wp.tile_dot(a, b * 2.0)[0]


def test_dot_of_vector_tiles_and_its_gradient():
    V = np.arange(9, dtype=np.float32).reshape(3, 3)
    W = np.ones((3, 3), np.float32) * 0.5
    v = wp.array(V, dtype=wp.vec3, requires_grad=True)
    w = wp.array(W, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(vec_dot, dim=1, inputs=[v, w, out], block_dim=8)
    assert out.numpy()[0] == (V * W * 2).sum()
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    np.testing.assert_allclose(v.grad.numpy(), 2 * W)
    np.testing.assert_allclose(w.grad.numpy(), 2 * V)
