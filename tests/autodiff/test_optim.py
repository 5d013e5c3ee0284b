"""``treadle.optim``: Adam and SGD against NumPy float64 reference updates, and solving small problems."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle import optim


@wp.kernel
def sum_squares(params: wp.array(dtype=float), score: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(score, 0, params[i] * params[i])


@wp.kernel
def sum_squares_vec3(params: wp.array(dtype=wp.vec3), score: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(score, 0, wp.dot(params[i], params[i]))


def _adam_reference(p, grads, lr, b1, b2, eps):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return p, m, v


def test_adam_matches_reference_updates():
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(4)]
    p = wp.array(p0, dtype=wp.float64)
    opt = optim.Adam([p], lr=0.05, betas=(0.8, 0.99), eps=1e-6)
    for g in grads:
        opt.step([wp.array(g, dtype=wp.float64)])
    ref_p, ref_m, ref_v = _adam_reference(p0, grads, 0.05, 0.8, 0.99, 1e-6)
    np.testing.assert_allclose(p.numpy(), ref_p, rtol=1e-12)
    np.testing.assert_allclose(opt.m[0].numpy(), ref_m, rtol=1e-12)
    np.testing.assert_allclose(opt.v[0].numpy(), ref_v, rtol=1e-12)


@pytest.mark.parametrize("vec", [False, True])
def test_adam_minimises_with_a_tape(vec):
    start = np.array([[0.1, 0.2, -0.1], [0.3, -0.2, 0.05]]) if vec else np.array([0.1, 0.2, -0.3])
    params = wp.array(start, dtype=wp.vec3 if vec else float, requires_grad=True)
    score = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    opt = optim.Adam([params], lr=0.02, betas=(0.8, 0.999))
    for _ in range(100):
        tape.reset()
        score.zero_()
        with tape:
            wp.launch(sum_squares_vec3 if vec else sum_squares, len(params), inputs=[params, score])
        tape.backward(score)
        opt.step([tape.gradients[params]])
    assert np.abs(params.numpy()).max() < 1e-3


def test_set_params_keeps_compatible_state():
    for dt in (wp.float32, wp.float16, wp.vec3):
        p = wp.zeros(4, dtype=dt, requires_grad=True)
        opt = optim.Adam([p])
        m = opt.m[0]
        m.fill_(1.0)
        opt.set_params([p])
        assert opt.m[0] is m and (m.numpy() == 1.0).all()
        assert opt.m[0].dtype is (wp.float32 if dt is wp.float16 else dt)
    opt.set_params([wp.zeros(3, dtype=float)])  # a different shape: fresh zero state
    assert (opt.m[0].numpy() == 0.0).all()


def test_float16_parameters():
    p = wp.array(np.array([1.0, -2.0], dtype=np.float16), dtype=wp.float16)
    opt = optim.Adam([p], lr=0.1)
    opt.step([wp.array(np.array([1.0, -1.0], dtype=np.float16), dtype=wp.float16)])
    np.testing.assert_allclose(p.numpy().astype(np.float64), [0.9, -1.9], atol=2e-3)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_matches_reference(nesterov):
    rng = np.random.default_rng(2)
    p0 = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(3)]
    p = wp.array(p0, dtype=wp.float64)
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=nesterov)
    for g in grads:
        opt.step([wp.array(g, dtype=wp.float64)])
    ref, b = p0.copy(), None
    for g in grads:
        d = g + 0.01 * ref
        b = d if b is None else 0.9 * b + d
        ref = ref - 0.1 * (d + 0.9 * b if nesterov else b)
    np.testing.assert_allclose(p.numpy(), ref, rtol=1e-12)


def test_step_checks_gradients():
    opt = optim.SGD([wp.zeros(3, dtype=float)], lr=0.1)
    with pytest.raises(ValueError, match="does not match"):
        opt.step([wp.zeros(2, dtype=float)])
    with pytest.raises(ValueError, match="gradient"):
        opt.step([])
