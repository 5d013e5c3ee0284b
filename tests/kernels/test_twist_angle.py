"""``quat_twist_angle`` is accurate for small angles in float32 (2 atan2(|v|, w), not 2 acos(w)); gradients agree
with finite differences."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def twist_angles(angles: wp.array(dtype=float), unsigned: wp.array(dtype=float), signed: wp.array(dtype=float)):
    i = wp.tid()
    axis = wp.vec3(0.0, 0.0, 1.0)
    q = wp.quat_from_axis_angle(axis, angles[i])
    unsigned[i] = wp.quat_twist_angle(axis, q)
    signed[i] = wp.quat_twist_angle_signed(axis, q)


@wp.kernel
def twist_loss(q: wp.array(dtype=wp.quatd), loss: wp.array(dtype=wp.float64)):
    loss[0] = wp.quat_twist_angle(wp.vec3d(0.3, 0.4, 0.5), q[0])


def test_twist_angles_small_and_large(device):
    a = np.array([-4.0, -0.0006, -0.0001, 0.0001, 0.0005, 4.0], dtype=np.float32)
    angles = wp.array(a, device=device)
    u = wp.empty_like(angles)
    s = wp.empty_like(angles)
    wp.launch(twist_angles, dim=len(a), inputs=[angles, u, s], device=device)
    np.testing.assert_allclose(u.numpy(), np.abs(a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s.numpy(), a, rtol=1e-6, atol=1e-7)


def test_twist_angle_gradient_matches_finite_differences(device):
    q0 = np.array([0.1, -0.2, 0.3, 0.9])
    q0 /= np.linalg.norm(q0)
    q = wp.array(q0[None], dtype=wp.quatd, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(twist_loss, dim=1, inputs=[q, loss], device=device)
    tape.backward(loss)
    grad = q.grad.numpy()[0]
    eps = 1e-6
    fd = np.zeros(4)
    for k in range(4):
        for sgn in (1.0, -1.0):
            qq = q0.copy()
            qq[k] += sgn * eps
            out = wp.zeros(1, dtype=wp.float64, device=device)
            wp.launch(twist_loss, dim=1, inputs=[wp.array(qq[None], dtype=wp.quatd, device=device), out],
                      device=device)
            fd[k] += sgn * out.numpy()[0] / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)
