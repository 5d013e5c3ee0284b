"""Tape: multi-launch simulations, optimisation, overwrite safety, explicit adjoint launches."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def spring_step(x: wp.array(dtype=wp.vec2d), v: wp.array(dtype=wp.vec2d), rest: wp.float64, k: wp.float64,
                dt: wp.float64, x_out: wp.array(dtype=wp.vec2d), v_out: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    n = x.shape[0]
    f = wp.vec2d(wp.float64(0.0), wp.float64(-9.8))
    if i > 0:
        d = x[i] - x[i - 1]
        L = wp.length(d)
        f = f - k * (L - rest) * d / L
    if i < n - 1:
        d = x[i] - x[i + 1]
        L = wp.length(d)
        f = f - k * (L - rest) * d / L
    if i == 0:
        f = wp.vec2d()
    vn = v[i] + f * dt
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


@wp.kernel
def end_loss(x: wp.array(dtype=wp.vec2d), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if i == x.shape[0] - 1:
        loss[0] = wp.dot(x[i], x[i])


def simulate(v0: np.ndarray, steps: int = 50, record: bool = True):
    n = len(v0)
    x0 = np.stack([np.arange(n) * 0.5, np.zeros(n)], 1)
    xs = [wp.array(x0, dtype=wp.vec2d, requires_grad=True)]
    vs = [wp.array(v0, dtype=wp.vec2d, requires_grad=True)]
    for _ in range(steps):
        xs.append(wp.zeros(n, dtype=wp.vec2d, requires_grad=True))
        vs.append(wp.zeros(n, dtype=wp.vec2d, requires_grad=True))
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for s in range(steps):
            wp.launch(spring_step, dim=n, inputs=[xs[s], vs[s], 0.5, 40.0, 0.01], outputs=[xs[s + 1], vs[s + 1]])
        wp.launch(end_loss, dim=n, inputs=[xs[-1]], outputs=[loss])
    return tape, loss, vs[0]


def test_spring_mass_50_steps_matches_finite_differences():
    rng = np.random.default_rng(0)
    v0 = rng.standard_normal((5, 2))
    tape, loss, v = simulate(v0)
    tape.backward(loss)
    g = v.grad.numpy()
    num = np.zeros_like(v0)
    for i in range(5):
        for c in range(2):
            e = np.zeros_like(v0)
            e[i, c] = 1e-6
            lp = simulate(v0 + e)[1].numpy()[0]
            lm = simulate(v0 - e)[1].numpy()[0]
            num[i, c] = (lp - lm) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)
    assert np.abs(g).max() > 0


@wp.kernel
def projectile(v0: wp.array(dtype=wp.vec2), target: wp.vec2, steps: int, dt: float, loss: wp.array(dtype=float)):
    p = wp.vec2(0.0, 0.0)
    v = v0[0]
    for _s in range(steps):
        v = v + wp.vec2(0.0, -9.8) * dt - v * (0.1 * dt)
        p = p + v * dt
        if p[1] < 0.0:  # bounce off the ground
            p = wp.vec2(p[0], -p[1])
            v = wp.vec2(v[0], -0.8 * v[1])
    d = p - target
    loss[0] = wp.dot(d, d)


def test_optimisation_loop_converges():
    # The target is where a throw at (2, 4) lands after 0.6 s; gradient descent must recover that velocity.
    # (Over windows that include a bounce the discretised contact makes the loss discontinuous in v0.)
    steps, dt = 60, 0.01
    target = _final_position(2.0, 4.0, steps, dt)
    v0 = wp.array([wp.vec2(1.0, 3.6)], dtype=wp.vec2, requires_grad=True)  # starts in the no-bounce basin
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    first = None
    for _ in range(150):
        tape = wp.Tape()
        with tape:
            wp.launch(projectile, dim=1, inputs=[v0, target, steps, dt], outputs=[loss])
        tape.backward(loss)
        if first is None:
            first = float(loss.numpy()[0])
        v0.assign(v0.numpy() - 0.5 * v0.grad.numpy())
        tape.zero()
    final = float(loss.numpy()[0])
    assert final < 1e-6 * first
    np.testing.assert_allclose(v0.numpy()[0], [2.0, 4.0], atol=1e-2)


def _final_position(vx: float, vy: float, steps: int, dt: float) -> wp.vec2:
    p, v = np.zeros(2, np.float32), np.array([vx, vy], np.float32)
    for _ in range(steps):
        v = v + np.array([0.0, -9.8], np.float32) * dt - v * np.float32(0.1 * dt)
        p = p + v * dt
        if p[1] < 0:
            p[1], v[1] = -p[1], -0.8 * v[1]
    return wp.vec2(float(p[0]), float(p[1]))


@wp.kernel
def scale_inplace(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def total(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i])


@wp.kernel
def square_inplace(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * x[i]


def test_overwrite_of_own_input_is_caught():
    x = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square_inplace, dim=4, inputs=[x])
        wp.launch(total, dim=4, inputs=[x], outputs=[loss])
    with pytest.raises(wp.OverwriteError, match="array 'x' read by kernel 'square_inplace' was overwritten by the "
                                                "launch itself"):
        tape.backward(loss)


def test_own_overwrite_that_leaves_the_gradients_exact_proceeds():
    # x's gradient through x * s needs only s; s is a scalar argument (its gradient is not kept), so the values the
    # launch overwrote change no gradient: d(sum(2 x))/dx = 2
    x = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(scale_inplace, dim=4, inputs=[x, 2.0])
        wp.launch(total, dim=4, inputs=[x], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), [2.0] * 4)


def test_overwrite_by_later_kernel_is_caught_and_opt_out_works():
    x = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square, dim=4, inputs=[x], outputs=[y])
        wp.launch(scale_inplace, dim=4, inputs=[x, 3.0])
        wp.launch(total, dim=4, inputs=[y], outputs=[loss])
    with pytest.raises(wp.OverwriteError, match="kernel 'square' was overwritten by kernel 'scale_inplace'"):
        tape.backward(loss)
    tape2 = wp.Tape(check_overwrites=False)
    with tape2:
        wp.launch(square, dim=4, inputs=[x], outputs=[y])
    tape2.backward(grads={y: np.ones(4, dtype=np.float32)})


def test_correct_programs_pass_the_check():
    x = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square, dim=4, inputs=[x], outputs=[y])
        wp.launch(total, dim=4, inputs=[y], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.arange(4))
    assert set(tape.gradients) >= {x, y, loss}
    tape.zero()
    assert not x.grad.numpy().any()
    tape.reset()
    assert tape.launches == []


def test_explicit_adjoint_launch_with_adj_arrays():
    x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    y = wp.zeros(3, dtype=float)
    adj_x = wp.zeros(3, dtype=float)
    adj_y = wp.array(np.array([1.0, 10.0, 100.0], dtype=np.float32))
    wp.launch(square, dim=3, inputs=[x], outputs=[y], adj_inputs=[adj_x], adj_outputs=[adj_y], adjoint=True)
    np.testing.assert_allclose(adj_x.numpy(), [2.0, 40.0, 600.0])


def test_record_func_runs_in_reverse_order():
    order = []
    tape = wp.Tape()
    tape.record_func(lambda: order.append(1), [])
    tape.record_func(lambda: order.append(2), [])
    tape.backward()
    assert order == [2, 1]


@wp.kernel(enable_backward=False)
def no_backward(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i]


def test_enable_backward_false_gives_a_clear_error():
    x = wp.zeros(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(no_backward, dim=2, inputs=[x], outputs=[y])
    with pytest.raises(wp.TreadleError, match="enable_backward=False"):
        tape.backward(grads={y: np.ones(2, dtype=np.float32)})
