"""``tile_scatter_masked`` / ``tile_scatter_add``: per-thread writes into tiles, against NumPy, their gradients
against finite differences, and the calls that are refused."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenError


@wp.kernel
def scatter_1d(src: wp.array(dtype=float), idx: wp.array(dtype=int), keep: wp.array(dtype=int),
               out: wp.array(dtype=float), acc: wp.array(dtype=float)):
    _b = wp.tid()
    t = wp.tile_full(shape=6, value=-1.0, dtype=float)
    s = wp.tile_zeros(shape=6, dtype=float)
    for n in range(src.shape[0]):
        wp.tile_scatter_masked(t, idx[n], src[n], keep[n] != 0)
        wp.tile_scatter_add(s, idx[n], src[n], keep[n] != 0)
    wp.tile_scatter_add(s, 0, 10.0, True, False)  # atomic given as a compile-time constant
    wp.tile_store(out, t)
    wp.tile_store(acc, s)


def test_scatter_1d_matches_numpy():
    rng = np.random.default_rng(4)
    src = rng.uniform(-2, 2, size=9).astype(np.float32)
    idx = np.array([0, 3, 3, 5, 1, 7, -1, 2, 5], dtype=np.int32)  # 7 and -1 lie outside the tile: skipped
    keep = np.array([1, 1, 0, 1, 1, 1, 1, 0, 1], dtype=np.int32)
    out, acc = wp.zeros(6, dtype=float), wp.zeros(6, dtype=float)
    wp.launch_tiled(scatter_1d, dim=1, inputs=[wp.array(src), wp.array(idx), wp.array(keep), out, acc], block_dim=1)
    want_t, want_s = np.full(6, -1.0, np.float32), np.zeros(6, np.float32)
    for v, i, k in zip(src, idx, keep):
        if k and 0 <= i < 6:
            want_t[i] = v
            want_s[i] += v
    want_s[0] += 10.0
    np.testing.assert_array_equal(out.numpy(), want_t)
    np.testing.assert_allclose(acc.numpy(), want_s, rtol=1e-6)


@wp.kernel
def scatter_2d_vec(rows: wp.array(dtype=int), cols: wp.array(dtype=int), v: wp.array(dtype=wp.vec3),
                   out: wp.array2d(dtype=wp.vec3)):
    _b = wp.tid()
    t = wp.tile_zeros(shape=(2, 3), dtype=wp.vec3)
    for n in range(v.shape[0]):
        wp.tile_scatter_masked(t, rows[n], cols[n], v[n], True)
        wp.tile_scatter_add(t, i=rows[n], j=cols[n], value=v[n], has_value=n % 2 == 0)
    wp.tile_store(out, t)


def test_scatter_2d_vectors_and_keywords():
    rows, cols = np.array([0, 1, 1], np.int32), np.array([2, 0, 1], np.int32)
    v = np.arange(9, dtype=np.float32).reshape(3, 3) + 0.5
    out = wp.zeros((2, 3), dtype=wp.vec3)
    wp.launch_tiled(scatter_2d_vec, dim=1, inputs=[wp.array(rows), wp.array(cols), wp.array(v, dtype=wp.vec3), out],
                    block_dim=1)
    want = np.zeros((2, 3, 3), np.float32)
    for n in range(3):
        want[rows[n], cols[n]] = v[n] * (2 if n % 2 == 0 else 1)
    np.testing.assert_array_equal(out.numpy(), want)


@wp.kernel
def scatter_loss(x: wp.array(dtype=float), w: wp.array(dtype=float), loss: wp.array(dtype=float)):
    _b = wp.tid()
    t = wp.tile_load(w, shape=4)
    wp.tile_scatter_masked(t, 1, x[0] * x[0], True)  # replaces w[1]: its gradient stops there
    wp.tile_scatter_masked(t, 2, x[1], False)  # not written: w[2] keeps its gradient, x[1] gets none from it
    wp.tile_scatter_add(t, 3, x[1] * 3.0, True)  # added to w[3]: both receive the gradient
    sq = wp.tile_map(wp.mul, t, t)
    wp.tile_atomic_add(loss, wp.tile_sum(sq))


def _loss(x: np.ndarray, w: np.ndarray) -> float:
    t = w.astype(np.float64).copy()
    t[1] = x[0] * x[0]
    t[3] += 3.0 * x[1]
    return float(np.sum(t * t))


def test_scatter_gradients_match_finite_differences():
    x0 = np.array([0.7, -0.4], np.float32)
    w0 = np.array([0.3, 1.1, -0.6, 0.9], np.float32)
    x, w = wp.array(x0, requires_grad=True), wp.array(w0, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(scatter_loss, dim=1, inputs=[x, w, loss], block_dim=1)
    tape.backward(loss)
    assert loss.numpy()[0] == pytest.approx(_loss(x0, w0), rel=1e-6)
    eps = 1e-3
    for arr, base, grad in ((x0, "x", x.grad.numpy()), (w0, "w", w.grad.numpy())):
        for k in range(arr.size):
            d = np.zeros_like(arr, dtype=np.float64)
            d[k] = eps
            plus = _loss(x0 + d, w0) if base == "x" else _loss(x0, w0 + d)
            minus = _loss(x0 - d, w0) if base == "x" else _loss(x0, w0 - d)
            assert grad[k] == pytest.approx((plus - minus) / (2 * eps), abs=1e-3), (base, k)
    assert w.grad.numpy()[1] == 0.0  # the replaced element's gradient is consumed


def _build(fn):
    k = wp.kernel(fn, module=f"tile_scatter_err_{fn.__name__}")
    wp.launch_tiled(k, dim=1, inputs=[wp.zeros(4, dtype=float), wp.zeros(1, dtype=wp.int32)], block_dim=1)


def too_few_indices(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_masked(t, 0, 1.0, True)
    wp.tile_store(a, wp.tile_reshape(t, 4))


def wrong_value_type(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_masked(t, 0, 1, 2, True)
    wp.tile_store(a, wp.tile_reshape(t, 4))


def int_flag(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_add(t, 0, 1, 2.0, b[0])
    wp.tile_store(a, wp.tile_reshape(t, 4))


def float_index(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_masked(t, 0, 1.5, 2.0, True)
    wp.tile_store(a, wp.tile_reshape(t, 4))


def runtime_atomic(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_add(t, 0, 1, 2.0, True, b[0] == 0)
    wp.tile_store(a, wp.tile_reshape(t, 4))


def not_a_variable(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    wp.tile_scatter_masked(wp.tile_zeros(shape=4, dtype=float), 0, 2.0, True)


def bool_add(a: wp.array(dtype=float), b: wp.array(dtype=wp.int32)):
    t = wp.tile_zeros(shape=4, dtype=bool)
    wp.tile_scatter_add(t, 0, True, True)


@pytest.mark.parametrize("fn, message, line_text", [
    (too_few_indices, r"on a 2-d tile takes 2 indices, then value and has_value: got 3", "(t, 0, 1.0, True)"),
    (wrong_value_type, r"'value' must match the tile's dtype float32, got int32", "(t, 0, 1, 2, True)"),
    (int_flag, r"'has_value' must be a bool, got int32", "(t, 0, 1, 2.0, b[0])"),
    (float_index, r"indices must be integers, got float32", "(t, 0, 1.5, 2.0, True)"),
    (runtime_atomic, r"'atomic' must be a compile-time constant", "b[0] == 0"),
    (not_a_variable, r"'a' of tile_scatter_masked\(\) must be a tile variable", "tile_zeros(shape=4"),
    (bool_add, r"adds numbers, vectors or matrices, not bool", "(t, 0, True, True)"),
])
def test_scatter_refusals_point_at_the_user_line(fn, message, line_text):
    with pytest.raises(CodegenError, match=message) as info:
        _build(fn)
    text = str(info.value)
    assert "test_tile_scatter.py" in text and line_text in text
