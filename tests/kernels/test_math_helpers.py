"""The reference's math helpers (norms, Euler angles, twists, transform/matrix conversions, spatial frame changes):
kernels vs float64 references, host calls vs kernel results, round trips and documented values. Gradients of these
helpers are checked in test_quat_transform.py (and, for the norms, by tests/autodiff/test_builtin_adjoints.py)."""

from __future__ import annotations

import itertools

import numpy as np

import treadle as wp

RNG = np.random.default_rng(11)
SEQUENCES = [s for s in itertools.product(range(3), repeat=3) if s[0] != s[1] and s[1] != s[2]]


def rot(axis: int, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    m = np.eye(3)
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def qmat(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def unit_quat() -> np.ndarray:
    q = RNG.normal(size=4)
    return q / np.linalg.norm(q)


@wp.kernel
def norms(v: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64, ndim=2), out_v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    x = v[i]
    out[i, 0] = wp.norm_l1(x)
    out[i, 1] = wp.norm_l2(x)
    out[i, 2] = wp.norm_huber(x)
    out[i, 3] = wp.norm_huber(x, delta=wp.float64(2.0))
    out[i, 4] = wp.norm_pseudo_huber(x)
    out[i, 5] = wp.norm_pseudo_huber(x, wp.float64(0.5))
    out_v[i] = wp.smooth_normalize(x) + wp.smooth_normalize(x, 0.5)


def test_norms():
    v = RNG.normal(size=(8, 3)) * np.linspace(0.1, 2, 8)[:, None]
    out, out_v = wp.zeros((8, 6), dtype=wp.float64), wp.zeros(8, dtype=wp.vec3d)
    wp.launch(norms, 8, inputs=[wp.array(v, dtype=wp.vec3d), out, out_v])

    def huber(x, d):
        n = np.linalg.norm(x)
        return 0.5 * n * n if n <= d else d * (n - 0.5 * d)

    def pseudo(x, d):
        return d * np.sqrt(1 + x @ x / (d * d))

    for i, x in enumerate(v):
        want = [np.abs(x).sum(), np.linalg.norm(x), huber(x, 1), huber(x, 2), pseudo(x, 1), pseudo(x, 0.5)]
        np.testing.assert_allclose(out.numpy()[i], want, rtol=1e-13)
        np.testing.assert_allclose(out_v.numpy()[i], x / pseudo(x, 1) + x / pseudo(x, 0.5), rtol=1e-13)
        hx = wp.vec3d(*x)
        np.testing.assert_allclose([wp.norm_l1(hx), wp.norm_huber(hx, wp.float64(2.0)), wp.norm_pseudo_huber(hx)],
                                   [want[0], want[3], want[4]], rtol=1e-13)
        np.testing.assert_allclose(wp.smooth_normalize(hx), x / pseudo(x, 1), rtol=1e-13)
    # the reference's values (float32)
    assert abs(wp.norm_huber(wp.vec3(1.0, 2.0, 3.0)) - 3.2416575) < 1e-6
    assert abs(wp.norm_pseudo_huber(wp.vec3(1.0, 2.0, 3.0), 2.0) - 4.2426405) < 1e-6


@wp.kernel
def euler(e: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), seq: wp.array(dtype=wp.vec3i),
          out_q: wp.array(dtype=wp.quatd), out_e: wp.array(dtype=wp.vec3d), out_rpy: wp.array(dtype=wp.vec3d)):
    n = wp.tid()
    s = seq[n]
    out_q[n] = wp.quat_from_euler(e[n], s[0], s[1], s[2])
    out_e[n] = wp.quat_to_euler(q[n], s[0], s[1], s[2])
    out_rpy[n] = wp.quat_to_rpy(q[n])


def test_euler_angles_all_sequences():
    seqs = np.array(SEQUENCES * 2, dtype=np.int32)
    n = len(seqs)
    e = RNG.uniform(-1.4, 1.4, size=(n, 3))
    q = np.array([unit_quat() for _ in range(n)])
    out_q, out_e, out_rpy = wp.zeros(n, dtype=wp.quatd), wp.zeros(n, dtype=wp.vec3d), wp.zeros(n, dtype=wp.vec3d)
    wp.launch(euler, n, inputs=[wp.array(e, dtype=wp.vec3d), wp.array(q, dtype=wp.quatd),
                                wp.array(seqs, dtype=wp.vec3i), out_q, out_e, out_rpy])
    for m in range(n):
        i, j, k = (int(x) for x in seqs[m])
        # quat_from_euler: fixed axes i, j, k in that order, e[i] twice for proper sequences
        want = rot(k, e[m, k]) @ rot(j, e[m, j]) @ rot(i, e[m, i])
        np.testing.assert_allclose(qmat(out_q.numpy()[m]), want, atol=1e-12)
        # quat_to_euler: Tait-Bryan angles rebuild q through quat_from_euler; proper ones store the third angle in
        # e[3 - i - j]
        a = out_e.numpy()[m]
        third = a[k] if i != k else a[3 - i - j]
        np.testing.assert_allclose(rot(k, third) @ rot(j, a[j]) @ rot(i, a[i]), qmat(q[m]), atol=1e-12)
        if i != k:
            assert abs(a[j]) <= np.pi / 2 + 1e-12
        else:
            assert -1e-12 <= a[j] <= np.pi + 1e-12
        hq = wp.quatd(*q[m])
        np.testing.assert_allclose(wp.quat_to_euler(hq, i, j, k), a, atol=1e-12)
        np.testing.assert_allclose(wp.quat_from_euler(wp.vec3d(*e[m]), i, j, k), out_q.numpy()[m], atol=1e-14)
        # quat_to_rpy inverts quat_rpy
        r = out_rpy.numpy()[m]
        np.testing.assert_allclose(qmat(np.array(wp.quat_rpy(*(wp.float64(x) for x in r)))), qmat(q[m]), atol=1e-12)
        np.testing.assert_allclose(wp.quat_to_rpy(hq), r, atol=1e-13)


def test_euler_gimbal_lock_and_documented_values():
    q = wp.quat_rpy(0.3, np.pi / 2, 0.2)
    e = wp.quat_to_euler(q, 0, 1, 2)
    assert e[0] == 0.0  # the first angle is set to zero at gimbal lock
    np.testing.assert_allclose(qmat(np.array(wp.quat_from_euler(e, 0, 1, 2))), qmat(np.array(q)), atol=1e-6)
    np.testing.assert_allclose(wp.quat_to_euler(wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), 0.7), 0, 1, 0),
                               [0.0, 0.0, 0.7], atol=1e-6)
    # quat_from_euler(e, 0, 1, 2) == quat_rpy(e[0], e[1], e[2])
    np.testing.assert_allclose(wp.quat_from_euler(wp.vec3(0.1, 0.2, 0.3), 0, 1, 2), wp.quat_rpy(0.1, 0.2, 0.3),
                               atol=1e-7)
    np.testing.assert_allclose(wp.quat_to_rpy(wp.quat(0.1, 0.2, 0.3, 0.9)), [0.3217506, 0.3046926, 0.6647745],
                               atol=1e-6)


@wp.kernel
def twists(axis: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), out_q: wp.array(dtype=wp.quat),
           out_s: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    out_q[i] = wp.quat_twist(axis[i], q[i])
    out_s[i, 0] = wp.quat_twist_angle(axis[i], q[i])
    out_s[i, 1] = wp.quat_twist_angle_signed(axis[i], q[i])


def test_swing_twist():
    n = 8
    axis = RNG.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angles = RNG.uniform(-3, 3, size=n)
    swing_axes = np.cross(axis, RNG.normal(size=(n, 3)))
    q = []
    for a, th, s in zip(axis, angles, swing_axes):  # q = swing * twist, the swing perpendicular to the axis
        twist = np.concatenate([a * np.sin(th / 2), [np.cos(th / 2)]])
        sw = np.concatenate([s / np.linalg.norm(s) * np.sin(0.4), [np.cos(0.4)]])
        q.append(np.array(wp.quat(*sw) * wp.quat(*twist)))
    q = np.array(q)
    q[1] = -q[1]  # w < 0: angles beyond pi
    out_q, out_s = wp.zeros(n, dtype=wp.quat), wp.zeros((n, 2), dtype=float)
    wp.launch(twists, n, inputs=[wp.array(axis, dtype=wp.vec3), wp.array(q, dtype=wp.quat), out_q, out_s])
    for i in range(n):
        sign = -1.0 if i == 1 else 1.0
        want = sign * np.concatenate([axis[i] * np.sin(angles[i] / 2), [np.cos(angles[i] / 2)]])
        np.testing.assert_allclose(out_q.numpy()[i], want, atol=1e-5)
        tw = out_q.numpy()[i]
        np.testing.assert_allclose(out_s.numpy()[i, 0], 2 * np.arccos(np.clip(tw[3], -1, 1)), atol=1e-5)
        np.testing.assert_allclose(out_s.numpy()[i, 1], 2 * np.arctan2(tw[:3] @ axis[i], tw[3]), atol=1e-5)
        if i != 1:
            np.testing.assert_allclose(out_s.numpy()[i, 1], angles[i], atol=1e-5)
            np.testing.assert_allclose(out_s.numpy()[i, 0], abs(angles[i]), atol=1e-5)
        ha, hq = wp.vec3(*axis[i]), wp.quat(*q[i])
        np.testing.assert_allclose(wp.quat_twist(ha, hq), tw, atol=1e-6)
        np.testing.assert_allclose([wp.quat_twist_angle(ha, hq), wp.quat_twist_angle_signed(ha, hq)],
                                   out_s.numpy()[i], atol=1e-5)
    # the reference's values for q.w < 0
    assert abs(wp.quat_twist_angle(wp.vec3(0.0, 0.0, 1.0), wp.quat(0.1, 0.2, 0.3, -0.9)) - 5.6396842) < 1e-5
    assert abs(wp.quat_twist_angle_signed(wp.vec3(0.0, 0.0, 1.0), wp.quat(0.1, 0.2, -0.3, 0.9)) + 0.6435011) < 1e-6


@wp.kernel
def matrices(p: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), s: wp.array(dtype=wp.vec3d),
             out_m: wp.array(dtype=wp.mat44d, ndim=2), out_t: wp.array(dtype=wp.transformd),
             out_p: wp.array(dtype=wp.vec3d, ndim=2), out_q: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    m = wp.transform_compose(p[i], q[i], s[i])
    out_m[i, 0] = m
    out_m[i, 1] = wp.transform_to_matrix(wp.transformation(p[i], q[i]))
    out_t[i] = wp.transform_from_matrix(out_m[i, 1])
    pos, rot, scale = wp.transform_decompose(m)
    out_p[i, 0] = pos
    out_p[i, 1] = scale
    out_q[i] = rot


def test_transform_matrix_conversions():
    n = 6
    p, s = RNG.normal(size=(n, 3)), RNG.uniform(0.5, 2.0, size=(n, 3))
    q = np.array([unit_quat() for _ in range(n)])
    outs = [wp.zeros((n, 2), dtype=wp.mat44d), wp.zeros(n, dtype=wp.transformd), wp.zeros((n, 2), dtype=wp.vec3d),
            wp.zeros(n, dtype=wp.quatd)]
    wp.launch(matrices, n, inputs=[wp.array(p, dtype=wp.vec3d), wp.array(q, dtype=wp.quatd),
                                   wp.array(s, dtype=wp.vec3d), *outs])
    om, ot, op, oq = (o.numpy() for o in outs)
    for i in range(n):
        want = np.eye(4)
        want[:3, :3] = qmat(q[i]) * s[i][None, :]
        want[:3, 3] = p[i]
        np.testing.assert_allclose(om[i, 0], want, atol=1e-12)
        want[:3, :3] = qmat(q[i])
        np.testing.assert_allclose(om[i, 1], want, atol=1e-12)
        np.testing.assert_allclose(ot[i, :3], p[i])
        assert abs(abs(ot[i, 3:] @ q[i]) - 1) < 1e-12
        np.testing.assert_allclose(op[i], [p[i], s[i]], atol=1e-12)
        assert abs(abs(oq[i] @ q[i]) - 1) < 1e-12
        hm = wp.transform_compose(wp.vec3d(*p[i]), wp.quatd(*q[i]), wp.vec3d(*s[i]))
        np.testing.assert_allclose(np.reshape(np.asarray(hm, dtype=float), (4, 4)), om[i, 0], atol=1e-14)
        for got, expect in zip(wp.transform_decompose(hm), (op[i, 0], oq[i], op[i, 1])):
            np.testing.assert_allclose(got, expect, atol=1e-12)
        np.testing.assert_allclose(wp.transform_from_matrix(wp.mat44d(*om[i, 1].reshape(-1))), ot[i], atol=1e-12)
    # the reference's values for a matrix that is not a scaled rotation
    pos, rot, scale = wp.transform_decompose(wp.mat44(1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 0, 0, 0, 1))
    np.testing.assert_allclose(pos, [4, 8, 3])
    np.testing.assert_allclose(rot, [-0.2982051, -0.1990114, 0.0695925, 0.9309271], atol=1e-6)
    np.testing.assert_allclose(scale, [10.344080, 6.403124, 7.874008], atol=1e-5)
    np.testing.assert_allclose(wp.transform_from_matrix(wp.mat44(1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 0, 0, 0, 1)),
                               [4, 8, 3, -0.4459765, -0.4459765, 0.2229882, 0.7432942], atol=1e-6)
