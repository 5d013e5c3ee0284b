"""Float ``min``/``max``/``clamp``, vector reductions and ``atomic_min``/``atomic_max`` with NaN: C's fmin/fmax
(a NaN operand is missing data), checked against ``np.fmin``/``np.fmax`` in compiled and interpreted kernels and in
Python scope, gradients going to the operand the forward picked."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

NAN = float("nan")
A = [-1.0, NAN, NAN, -1.0, NAN, 2.0, 3.0]
B = [NAN, -1.0, NAN, 2.0, 2.0, NAN, 3.0]


@wp.kernel
def _pairs(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), mn: wp.array(dtype=wp.float64),
           mx: wp.array(dtype=wp.float64), cl: wp.array(dtype=wp.float64), smin: wp.array(dtype=wp.float64),
           smax: wp.array(dtype=wp.float64)):
    i = wp.tid()
    mn[i] = wp.min(a[i], b[i])
    mx[i] = wp.max(a[i], b[i])
    cl[i] = wp.clamp(a[i], wp.float64(-0.5), wp.float64(1.0))
    smin[i] = a[i]
    smax[i] = a[i]
    wp.atomic_min(smin, i, b[i])
    wp.atomic_max(smax, i, b[i])


def _same(actual: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    np.testing.assert_array_equal(actual[~np.isnan(actual)], expected[~np.isnan(expected)])


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_scalars_and_atomics_follow_fmin_fmax(mode):
    a, b = np.array(A), np.array(B)
    outs = [wp.zeros(len(A), dtype=wp.float64) for _ in range(5)]
    with wp.config.override(mode=mode):
        wp.launch(_pairs, len(A), inputs=[wp.array(a), wp.array(b), *outs])
    mn, mx, cl, smin, smax = (o.numpy() for o in outs)
    _same(mn, np.fmin(a, b))
    _same(mx, np.fmax(a, b))
    _same(cl, np.fmin(np.fmax(a, -0.5), 1.0))
    _same(smin, np.fmin(a, b))
    _same(smax, np.fmax(a, b))


def test_python_scope_agrees():
    assert wp.min(NAN, 1.0) == 1.0 and wp.min(1.0, NAN) == 1.0 and np.isnan(wp.min(NAN, NAN))
    assert wp.max(NAN, -1.0) == -1.0 and wp.clamp(NAN, -1.0, 1.0) == -1.0
    assert wp.min(wp.vec3(NAN, 2.0, -1.0)) == -1.0 and wp.max(wp.vec3(NAN, 2.0, -1.0)) == 2.0


@wp.kernel
def _reduce(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), idx: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    out[2 * i] = wp.min(v[i])
    out[2 * i + 1] = wp.max(v[i])
    idx[2 * i] = wp.argmin(v[i])
    idx[2 * i + 1] = wp.argmax(v[i])


@wp.kernel
def _clamp_loss(x: wp.array(dtype=float), lo: wp.array(dtype=float), hi: wp.array(dtype=float),
                out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.clamp(x[i], lo[i], hi[i]) + wp.min(x[i], hi[i])


def test_reductions_skip_nan_and_gradients_follow_the_pick():
    rows = np.array([[NAN, 2.0, -1.0], [3.0, NAN, 5.0], [NAN, NAN, NAN]], np.float32)
    v = wp.array(rows, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(6, dtype=float, requires_grad=True)
    idx = wp.zeros(6, dtype=wp.uint32)
    tape = wp.Tape()
    with tape:
        wp.launch(_reduce, 3, inputs=[v, out, idx])
    _same(out.numpy(), np.array([-1.0, 2.0, 3.0, 5.0, NAN, NAN], np.float32))
    np.testing.assert_array_equal(idx.numpy(), [2, 1, 0, 2, 0, 0])
    tape.backward(grads={out: wp.ones(6, dtype=float)})
    np.testing.assert_array_equal(v.grad.numpy(), [[0, 1, 1], [1, 0, 1], [2, 0, 0]])

    x = wp.array([NAN, 0.5, 3.0], dtype=float, requires_grad=True)
    lo = wp.array([-1.0, -1.0, -1.0], dtype=float, requires_grad=True)
    hi = wp.array([1.0, 1.0, 1.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_clamp_loss, 3, inputs=[x, lo, hi, y])
    tape.backward(grads={y: wp.ones(3, dtype=float)})
    # clamp(NaN, lo, hi) = lo, min(NaN, hi) = hi; clamp(0.5) = x, min(0.5, 1) = x; clamp(3) = hi, min(3, 1) = hi
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [1, 0, 2])
    np.testing.assert_array_equal(x.grad.numpy(), [0, 2, 0])


@wp.kernel
def _atomic_loss(vals: wp.array(dtype=float), slot: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_min(slot, 0, vals[i])


def test_atomic_min_gradient_goes_to_the_value_that_stayed():
    vals = wp.array([NAN, 2.0, -3.0, NAN], dtype=float, requires_grad=True)
    slot = wp.array([NAN], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_atomic_loss, 4, inputs=[vals, slot])
    assert slot.numpy()[0] == -3.0
    tape.backward(grads={slot: wp.ones(1, dtype=float)})
    np.testing.assert_array_equal(vals.grad.numpy(), [0, 0, 1, 0])
