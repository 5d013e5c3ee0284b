"""Builtins with output arguments (``svd3(A, U, sigma, V)``, ``eig3(A, Q, d)``, ``quat_to_axis_angle(q, axis, angle)``)
give the same values as their tuple forms, and gradients flow through the outputs.

References: NumPy float64 (the nuclear norm's gradient is ``U @ V^T``; the sum of eigenvalues is the trace).
"""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def svd_out_args(a: wp.array(dtype=wp.mat33d), loss: wp.array(dtype=wp.float64), sv: wp.array(dtype=wp.vec3d)):
    U = wp.mat33d()
    s = wp.vec3d()
    V = wp.mat33d()
    wp.svd3(a[0], U, s, V)
    sv[0] = s
    loss[0] = s[0] + s[1] + s[2]


@wp.kernel
def eig_out_args(a: wp.array(dtype=wp.mat33d), loss: wp.array(dtype=wp.float64), dv: wp.array(dtype=wp.vec3d)):
    Q = wp.mat33d()
    d = wp.vec3d()
    wp.eig3(a[0] + wp.transpose(a[0]), Q, d)
    dv[0] = d
    loss[0] = d[0] + d[1] + d[2]


@wp.kernel
def axis_angle_out_args(q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.float64)):
    axis = wp.vec3d()
    angle = wp.float64(0.0)
    wp.quat_to_axis_angle(q[0], axis, angle)
    out[0] = angle
    out[1] = axis[2]


def _run(kernel, a_np, n_out):
    a = wp.array(a_np[None], dtype=wp.mat33d, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    vals = wp.zeros(1, dtype=wp.vec3d)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=1, inputs=[a, loss, vals])
    tape.backward(loss=loss)
    return vals.numpy()[0], a.grad.numpy()[0]


def test_svd3_output_arguments_values_and_gradient():
    rng = np.random.default_rng(4)
    a_np = rng.standard_normal((3, 3))
    if np.linalg.det(a_np) < 0:  # svd3 returns rotations U, V (signed singular values otherwise)
        a_np[0] = -a_np[0]
    s, g = _run(svd_out_args, a_np, 3)
    u, s_ref, vt = np.linalg.svd(a_np)
    np.testing.assert_allclose(np.sort(s), np.sort(s_ref), rtol=1e-9)
    np.testing.assert_allclose(g, u @ vt, rtol=1e-6, atol=1e-9)


def test_eig3_output_arguments_values_and_gradient():
    rng = np.random.default_rng(5)
    a_np = rng.standard_normal((3, 3))
    d, g = _run(eig_out_args, a_np, 3)
    np.testing.assert_allclose(np.sort(d), np.sort(np.linalg.eigvalsh(a_np + a_np.T)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g, 2.0 * np.eye(3), atol=1e-9)  # d trace(A + A^T) / dA


def test_quat_to_axis_angle_output_arguments():
    angle = 1.2
    axis = np.array([0.0, 0.6, 0.8])
    q = np.concatenate([axis * np.sin(angle / 2), [np.cos(angle / 2)]])
    out = wp.zeros(2, dtype=wp.float64)
    wp.launch(axis_angle_out_args, dim=1, inputs=[wp.array(q[None], dtype=wp.quatd), out])
    np.testing.assert_allclose(out.numpy(), [angle, 0.8], rtol=1e-12)
