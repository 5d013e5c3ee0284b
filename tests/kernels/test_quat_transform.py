"""Quaternions, transforms and spatial vectors in kernels: values vs float64 NumPy references, host calls vs kernel
results, round trips, and gradients (tape vs central finite differences) of every quaternion, transform, spatial
and math-helper builtin."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import treadle as wp

RNG = np.random.default_rng(7)


# ------------------------------------------------------------------------------------------------ references
def rodrigues(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) * np.cos(angle) + np.sin(angle) * kx + (1 - np.cos(angle)) * np.outer(k, k)


def ref_qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Left-multiplication matrix of a acting on b (x, y, z, w order).
    x, y, z, w = a
    left = np.array([[w, -z, y, x], [z, w, -x, y], [-y, x, w, z], [-x, -y, -z, w]])
    return left @ b


def ref_qmat(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion through its axis and angle."""
    q = q / np.linalg.norm(q)
    s = np.linalg.norm(q[:3])
    if s < 1e-12:
        return np.eye(3)
    return rodrigues(q[:3] / s, 2 * np.arctan2(s, q[3]))


def close(actual, desired, atol: float = 1e-12) -> None:
    """Compare host values (flat for matrices) with arrays."""
    np.testing.assert_allclose(np.ravel(np.asarray(actual, dtype=float)), np.ravel(desired), atol=atol)


def unit_quats(n: int) -> np.ndarray:
    q = RNG.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def tf_mat(t: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = ref_qmat(t[3:])
    m[:3, 3] = t[:3]
    return m


# ------------------------------------------------------------------------------------------------ values
@wp.kernel
def quat_kernel(q: wp.array(dtype=wp.quatd), r: wp.array(dtype=wp.quatd), v: wp.array(dtype=wp.vec3d),
                ang: wp.array(dtype=wp.float64), out_q: wp.array(dtype=wp.quatd, ndim=2),
                out_v: wp.array(dtype=wp.vec3d, ndim=2), out_m: wp.array(dtype=wp.mat33d, ndim=2),
                out_s: wp.array(dtype=wp.float64, ndim=2)):
    i = wp.tid()
    a = q[i]
    b = r[i]
    out_q[i, 0] = a * b
    out_q[i, 1] = wp.quat_inverse(a)
    out_q[i, 2] = wp.quat_from_axis_angle(v[i], ang[i])
    out_q[i, 3] = wp.quat_from_matrix(wp.quat_to_matrix(a))
    out_q[i, 4] = wp.quat_slerp(a, b, wp.float64(0.25))
    out_q[i, 5] = wp.quat_rpy(ang[i], wp.float64(0.5), wp.float64(-0.25))
    out_q[i, 6] = a + b * wp.float64(2.0) - wp.normalize(b) / wp.float64(4.0)
    out_q[i, 7] = wp.quat_between_vectors(v[i], wp.quat_rotate(a, v[i]))
    out_q[i, 8] = wp.quaternion(v[i], ang[i])
    out_v[i, 0] = wp.quat_rotate(a, v[i])
    out_v[i, 1] = wp.quat_rotate_inv(a, v[i])
    axis, angle = wp.quat_to_axis_angle(a)
    out_v[i, 2] = axis
    out_m[i, 0] = wp.quat_to_matrix(a)
    out_s[i, 0] = angle
    out_s[i, 1] = wp.dot(a, b)
    out_s[i, 2] = a.x + a[1] * a.w + wp.float64(wp.quat_identity()[3])


def test_quaternion_builtins_match_references():
    n = 16
    q, r = unit_quats(n), unit_quats(n)
    v = RNG.normal(size=(n, 3))
    ang = RNG.uniform(-3, 3, size=n)
    outs = [wp.zeros((n, 9), dtype=wp.quatd), wp.zeros((n, 3), dtype=wp.vec3d), wp.zeros((n, 1), dtype=wp.mat33d),
            wp.zeros((n, 3), dtype=wp.float64)]
    ins = [wp.array(q, dtype=wp.quatd), wp.array(r, dtype=wp.quatd), wp.array(v, dtype=wp.vec3d),
           wp.array(ang, dtype=wp.float64)]
    wp.launch(quat_kernel, n, inputs=ins + outs)
    oq, ov, om, osc = (o.numpy() for o in outs)
    for i in range(n):
        rq = ref_qmat(q[i])
        np.testing.assert_allclose(ref_qmat(oq[i, 0]), rq @ ref_qmat(r[i]), atol=1e-12)
        np.testing.assert_allclose(oq[i, 0], ref_qmul(q[i], r[i]), atol=1e-12)
        np.testing.assert_allclose(oq[i, 1], [-q[i, 0], -q[i, 1], -q[i, 2], q[i, 3]])
        np.testing.assert_allclose(oq[i, 2][:3] / np.sin(ang[i] / 2), v[i], rtol=1e-9)
        assert abs(abs(np.dot(oq[i, 3], q[i])) - 1) < 1e-12  # same rotation, sign unspecified
        np.testing.assert_allclose(om[i, 0], rq, atol=1e-12)
        np.testing.assert_allclose(ov[i, 0], rq @ v[i], atol=1e-12)
        np.testing.assert_allclose(ov[i, 1], rq.T @ v[i], atol=1e-12)
        # to_axis_angle: angle in [0, pi] and it rebuilds +-q
        assert 0 <= osc[i, 0] <= np.pi
        np.testing.assert_allclose(ref_qmat(np.concatenate([ov[i, 2] * np.sin(osc[i, 0] / 2), [np.cos(osc[i, 0] / 2)]])),
                                   rq, atol=1e-12)
        np.testing.assert_allclose(osc[i, 1], np.dot(q[i], r[i]), atol=1e-14)
        np.testing.assert_allclose(osc[i, 2], q[i, 0] + q[i, 1] * q[i, 3] + 1)
        np.testing.assert_allclose(oq[i, 6], q[i] + 2 * r[i] - r[i] / 4, atol=1e-14)
        # slerp: a constant-rate rotation towards the nearer of +-r
        rel = ref_qmat(r[i]) @ rq.T
        ang_full = np.arccos(np.clip((np.trace(rel) - 1) / 2, -1, 1))
        rel_q = ref_qmat(oq[i, 4]) @ rq.T
        np.testing.assert_allclose(np.arccos(np.clip((np.trace(rel_q) - 1) / 2, -1, 1)), 0.25 * ang_full, atol=1e-9)
        rpy = rodrigues(np.array([0, 0, 1.0]), -0.25) @ rodrigues(np.array([0, 1.0, 0]), 0.5) @ \
            rodrigues(np.array([1.0, 0, 0]), ang[i])
        np.testing.assert_allclose(ref_qmat(oq[i, 5]), rpy, atol=1e-12)
        u, w = v[i] / np.linalg.norm(v[i]), rq @ v[i] / np.linalg.norm(v[i])
        np.testing.assert_allclose(ref_qmat(oq[i, 7]) @ u, w, atol=1e-12)
        np.testing.assert_allclose(oq[i, 8], [*v[i], ang[i]])
    # host-scope calls equal kernel results
    for i in range(3):
        hq, hr, hv = wp.quatd(*q[i]), wp.quatd(*r[i]), wp.vec3d(*v[i])
        close(hq * hr, oq[i, 0], atol=1e-14)
        close(wp.quat_slerp(hq, hr, wp.float64(0.25)), oq[i, 4], atol=1e-12)
        close(wp.quat_rotate(hq, hv), ov[i, 0], atol=1e-12)
        close(wp.quat_to_matrix(hq), om[i, 0], atol=1e-12)
        close(wp.quat_from_matrix(wp.quat_to_matrix(hq)), oq[i, 3], atol=1e-12)
        h_axis, h_angle = wp.quat_to_axis_angle(hq)
        close(h_axis, ov[i, 2], atol=1e-12)
        assert abs(h_angle - osc[i, 0]) < 1e-12
        close(wp.quat_between_vectors(hv, wp.quat_rotate(hq, hv)), oq[i, 7], atol=1e-12)


def test_quat_from_matrix_round_trip_all_branches():
    # Rotations near pi about each axis exercise the x, y and z branches of the conversion.
    axes = [np.array(a, dtype=float) for a in ([1, 0.05, 0], [0.02, 1, 0.1], [0.1, 0, 1], [1, 1, 1])]
    mats = [rodrigues(a, 3.0) for a in axes] + [rodrigues(RNG.normal(size=3), RNG.uniform(0, 3)) for _ in range(4)]
    for m in mats:
        for t in (wp.mat33d, wp.mat33f):
            q = wp.quat_from_matrix(t(*m.reshape(-1)))
            close(wp.quat_to_matrix(q), m, atol=1e-5 if t is wp.mat33f else 1e-12)
        m4 = np.eye(4)
        m4[:3, :3] = m
        assert abs(abs(np.dot(wp.quat_from_matrix(wp.mat44d(*m4.reshape(-1))), wp.quat_from_matrix(wp.mat33d(
            *m.reshape(-1))))) - 1) < 1e-12


@wp.kernel
def transform_kernel(t: wp.array(dtype=wp.transformd), s: wp.array(dtype=wp.transformd), x: wp.array(dtype=wp.vec3d),
                     out_t: wp.array(dtype=wp.transformd, ndim=2), out_v: wp.array(dtype=wp.vec3d, ndim=2),
                     out_m: wp.array(dtype=wp.mat44d)):
    i = wp.tid()
    a = t[i]
    b = s[i]
    out_t[i, 0] = a * b
    out_t[i, 1] = wp.transform_multiply(a, wp.transform_inverse(a))
    out_t[i, 2] = wp.transformation(a.p, b.q)
    c = a
    c[0] = wp.float64(5.0)
    wp.transform_set_rotation(c, b.q)
    out_t[i, 3] = c
    out_t[i, 4] = wp.transform_from_matrix(wp.transform_to_matrix(a))
    out_t[i, 5] = wp.transform_set_translation_copy(a, x[i])
    out_v[i, 0] = wp.transform_point(a, x[i])
    out_v[i, 1] = wp.transform_vector(a, x[i])
    out_v[i, 2] = wp.transform_point(wp.transform_to_matrix(a), x[i])
    out_v[i, 3] = wp.transform_get_translation(a) + wp.transform_vector(wp.transform_to_matrix(b), x[i])
    out_m[i] = wp.transform_to_matrix(a)


def random_transforms(n: int) -> np.ndarray:
    return np.concatenate([RNG.normal(size=(n, 3)), unit_quats(n)], axis=1)


def test_transform_builtins_match_references():
    n = 8
    t, s, x = random_transforms(n), random_transforms(n), RNG.normal(size=(n, 3))
    out_t, out_v = wp.zeros((n, 6), dtype=wp.transformd), wp.zeros((n, 4), dtype=wp.vec3d)
    out_m = wp.zeros(n, dtype=wp.mat44d)
    wp.launch(transform_kernel, n, inputs=[wp.array(t, dtype=wp.transformd), wp.array(s, dtype=wp.transformd),
                                           wp.array(x, dtype=wp.vec3d), out_t, out_v, out_m])
    ot, ov, om = out_t.numpy(), out_v.numpy(), out_m.numpy()
    identity = np.array([0, 0, 0, 0, 0, 0, 1.0])
    for i in range(n):
        ta, tb = tf_mat(t[i]), tf_mat(s[i])
        np.testing.assert_allclose(tf_mat(ot[i, 0]), ta @ tb, atol=1e-12)
        np.testing.assert_allclose(ot[i, 1], identity, atol=1e-12)
        np.testing.assert_allclose(ot[i, 2], [*t[i, :3], *s[i, 3:]])
        np.testing.assert_allclose(ot[i, 3], [5.0, *t[i, 1:3], *s[i, 3:]])
        np.testing.assert_allclose(tf_mat(ot[i, 4]), ta, atol=1e-12)
        np.testing.assert_allclose(ot[i, 5], [*x[i], *t[i, 3:]])
        np.testing.assert_allclose(ov[i, 0], ta[:3, :3] @ x[i] + t[i, :3], atol=1e-12)
        np.testing.assert_allclose(ov[i, 1], ta[:3, :3] @ x[i], atol=1e-12)
        np.testing.assert_allclose(ov[i, 2], ov[i, 0], atol=1e-12)
        np.testing.assert_allclose(ov[i, 3], t[i, :3] + tb[:3, :3] @ x[i], atol=1e-12)
        np.testing.assert_allclose(om[i], ta, atol=1e-12)
        # host scope
        ht, hs, hx = wp.transformd(*t[i]), wp.transformd(*s[i]), wp.vec3d(*x[i])
        close(wp.transform_multiply(ht, hs), ot[i, 0], atol=1e-14)
        close(wp.transform_multiply(ht, wp.transform_inverse(ht)), ot[i, 1], atol=1e-14)
        close(wp.transform_point(ht, hx), ov[i, 0], atol=1e-14)
        close(wp.transform_point(wp.transform_to_matrix(ht), hx), ov[i, 2], atol=1e-14)
        close(wp.transform_to_matrix(ht), om[i], atol=1e-14)
        close(wp.transform_get_rotation(ht), t[i, 3:])
    assert wp.transform_identity() == wp.transform(0, 0, 0, 0, 0, 0, 1)
    assert wp.quat_identity(wp.float64) == wp.quatd(0, 0, 0, 1)
    assert wp.transform_expand([1, 2, 3, 0, 0, 0, 1]) == wp.transformf(1, 2, 3, 0, 0, 0, 1)


@wp.kernel
def spatial_kernel(a: wp.array(dtype=wp.spatial_vectord), b: wp.array(dtype=wp.spatial_vectord),
                   t: wp.array(dtype=wp.transformd), r: wp.array(dtype=wp.mat33d),
                   out: wp.array(dtype=wp.spatial_vectord, ndim=2), out_v: wp.array(dtype=wp.vec3d, ndim=2),
                   out_s: wp.array(dtype=wp.float64), out_m: wp.array(dtype=wp.spatial_matrixd)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = wp.spatial_cross(x, y)
    out[i, 1] = wp.spatial_cross_dual(x, y)
    out[i, 2] = wp.transform_twist(t[i], x)
    out[i, 3] = wp.transform_wrench(t[i], x)
    out[i, 4] = wp.spatial_vectord(x[0], x[1], x[2], y[3], y[4], y[5])
    out_v[i, 0] = wp.spatial_top(x)
    out_v[i, 1] = wp.spatial_bottom(x)
    out_v[i, 2] = wp.velocity_at_point(x, wp.spatial_top(y))
    out_s[i] = wp.spatial_dot(x, y)
    out_m[i] = wp.spatial_adjoint(r[i], r[i] * wp.float64(2.0))


def test_spatial_builtins_match_references():
    n = 6
    a, b, t = RNG.normal(size=(n, 6)), RNG.normal(size=(n, 6)), random_transforms(n)
    r = RNG.normal(size=(n, 3, 3))
    out, out_v = wp.zeros((n, 5), dtype=wp.spatial_vectord), wp.zeros((n, 3), dtype=wp.vec3d)
    out_s, out_m = wp.zeros(n, dtype=wp.float64), wp.zeros(n, dtype=wp.spatial_matrixd)
    wp.launch(spatial_kernel, n, inputs=[wp.array(a, dtype=wp.spatial_vectord), wp.array(b, dtype=wp.spatial_vectord),
                                         wp.array(t, dtype=wp.transformd), wp.array(r, dtype=wp.mat33d), out, out_v,
                                         out_s, out_m])
    o, ov, os_, om = out.numpy(), out_v.numpy(), out_s.numpy(), out_m.numpy()
    cr = np.cross
    for i in range(n):
        wa, va, wb, vb = a[i, :3], a[i, 3:], b[i, :3], b[i, 3:]
        rot, p = tf_mat(t[i])[:3, :3], t[i, :3]
        # spatial_cross is the commutator of the 6x6 motion matrices; spatial_cross_dual its negative transpose
        motion = np.block([[cr(np.eye(3), wa), np.zeros((3, 3))], [cr(np.eye(3), va), cr(np.eye(3), wa)]])
        np.testing.assert_allclose(o[i, 0], motion @ b[i], atol=1e-12)
        np.testing.assert_allclose(o[i, 1], -motion.T @ b[i], atol=1e-12)
        np.testing.assert_allclose(o[i, 2], [*(rot @ wa), *(rot @ va + cr(p, rot @ wa))], atol=1e-12)
        np.testing.assert_allclose(o[i, 3], [*(rot @ wa + cr(p, rot @ va)), *(rot @ va)], atol=1e-12)
        np.testing.assert_allclose(o[i, 4], [*wa, *vb])
        np.testing.assert_allclose(ov[i], [wa, va, va + cr(wa, wb)], atol=1e-12)
        np.testing.assert_allclose(os_[i], a[i] @ b[i], atol=1e-12)
        np.testing.assert_allclose(om[i], np.block([[r[i], np.zeros((3, 3))], [2 * r[i], r[i]]]))
        # power is frame independent: wrench . twist
        np.testing.assert_allclose(o[i, 3] @ o[i, 2], a[i] @ a[i], atol=1e-10)
        hx, hy = wp.spatial_vectord(*a[i]), wp.spatial_vectord(*b[i])
        close(wp.spatial_cross(hx, hy), o[i, 0], atol=1e-14)
        close(wp.transform_wrench(wp.transformd(*t[i]), hx), o[i, 3], atol=1e-14)
        close(wp.velocity_at_point(hx, wp.spatial_top(hy)), ov[i, 2], atol=1e-14)


@wp.kernel
def float32_kernel(q: wp.array(dtype=wp.quat), t: wp.array(dtype=wp.transform), out: wp.array(dtype=wp.vec3),
                   out_t: wp.array(dtype=wp.transform)):
    i = wp.tid()
    out[i] = wp.quat_rotate(q[i], wp.vec3(1.0, 2.0, 3.0)) + wp.transform_point(t[i], wp.vec3(1.0, 0.0, 0.0))
    out_t[i] = t[i] * wp.transformation(wp.vec3(1.0, 2.0, 3.0), q[i])
    wp.atomic_add(out_t, i, wp.transform_identity())


def test_float32_kernel_and_atomics():
    q, t = unit_quats(4), random_transforms(4)
    out, out_t = wp.zeros(4, dtype=wp.vec3), wp.zeros(4, dtype=wp.transform)
    wp.launch(float32_kernel, 4, inputs=[wp.array(q, dtype=wp.quat), wp.array(t, dtype=wp.transform), out, out_t])
    for i in range(4):
        expect = ref_qmat(q[i]) @ [1, 2, 3] + tf_mat(t[i])[:3, :3] @ [1, 0, 0] + t[i, :3]
        np.testing.assert_allclose(out.numpy()[i], expect, rtol=1e-5, atol=1e-5)
        composed = np.concatenate([[1, 2, 3.0], q[i]])
        np.testing.assert_allclose(tf_mat(out_t.numpy()[i] - [0, 0, 0, 0, 0, 0, 1]), tf_mat(t[i]) @ tf_mat(composed),
                                   atol=1e-5)


# ------------------------------------------------------------------------------------------------ gradients
KINDS = {"s": wp.float64, "v3": wp.vec3d, "v6": wp.spatial_vectord, "q": wp.quatd, "t": wp.transformd,
         "m33": wp.mat33d, "m44": wp.mat44d}
SIZES = {"s": 1, "v3": 3, "v6": 6, "q": 4, "t": 7, "m33": 9, "m44": 16}
# (expression over a0, a1, ...; argument kinds; result kinds: several for tuple results)
GRAD_CASES = [
    ("a0 * a1", ("q", "q"), ("q",)),
    ("wp.quat_inverse(a0)", ("q",), ("q",)),
    ("wp.quat_rotate(a0, a1)", ("q", "v3"), ("v3",)),
    ("wp.quat_rotate_inv(a0, a1)", ("q", "v3"), ("v3",)),
    ("wp.quat_to_matrix(a0)", ("q",), ("m33",)),
    ("wp.quat_from_matrix(wp.quat_to_matrix(a0))", ("q",), ("q",)),
    ("wp.quat_to_axis_angle(a0)", ("q",), ("v3", "s")),
    ("wp.quat_slerp(a0, a1, a2)", ("q", "q", "s"), ("q",)),
    ("wp.normalize(a0) * a1[2] + a0 / (a1[0] * a1[0] + wp.float64(1.0)) - a0", ("q", "v3"), ("q",)),
    ("wp.quat_to_euler(a0, 0, 1, 2)", ("q",), ("v3",)),
    ("wp.quat_to_euler(a0, 2, 1, 2)", ("q",), ("v3",)),
    ("wp.quat_from_euler(a0, 1, 2, 0)", ("v3",), ("q",)),
    ("wp.quat_to_rpy(a0)", ("q",), ("v3",)),
    ("wp.quat_twist(a0, a1)", ("v3", "q"), ("q",)),
    ("wp.quat_twist_angle(a0, a1)", ("v3", "q"), ("s",)),
    ("wp.quat_twist_angle_signed(a0, a1)", ("v3", "q"), ("s",)),
    ("a0 * a1", ("t", "t"), ("t",)),
    ("wp.transform_inverse(a0)", ("t",), ("t",)),
    ("wp.transform_point(a0, a1)", ("t", "v3"), ("v3",)),
    ("wp.transform_vector(a0, a1)", ("t", "v3"), ("v3",)),
    ("wp.transform_point(a0, a1)", ("m44", "v3"), ("v3",)),
    ("wp.transform_vector(a0, a1)", ("m44", "v3"), ("v3",)),
    ("wp.transformation(a0.p, a1.q)", ("t", "t"), ("t",)),
    ("wp.transform_set_rotation_copy(a0, a1)", ("t", "q"), ("t",)),
    ("wp.transform_set_translation_copy(a0, a1)", ("t", "v3"), ("t",)),
    ("wp.transform_to_matrix(a0)", ("t",), ("m44",)),
    ("wp.transform_compose(a0, a1, a2)", ("v3", "q", "v3"), ("m44",)),
    ("wp.transform_decompose(a0)", ("m44",), ("v3", "q", "v3")),
    ("wp.transform_twist(a0, a1)", ("t", "v6"), ("v6",)),
    ("wp.transform_wrench(a0, a1)", ("t", "v6"), ("v6",)),
    ("wp.velocity_at_point(a0, a1)", ("v6", "v3"), ("v3",)),
    ("wp.spatial_cross(a0, a1)", ("v6", "v6"), ("v6",)),
    ("wp.spatial_cross_dual(a0, a1)", ("v6", "v6"), ("v6",)),
    ("wp.spatial_top(a0) * a1[2] + wp.spatial_bottom(a1)", ("v6", "v6"), ("v3",)),
    ("wp.spatial_dot(a0, a1)", ("v6", "v6"), ("s",)),
]


def _flat(var: str, kind: str, offset: int) -> str:
    if kind == "s":
        return f"{var} * w[{offset}]"
    if kind in ("m33", "m44"):
        n = int(kind[1])
        return " + ".join(f"{var}[{i}, {j}] * w[{offset + i * n + j}]" for i in range(n) for j in range(n))
    return " + ".join(f"{var}[{i}] * w[{offset + i}]" for i in range(SIZES[kind]))


@pytest.fixture(scope="module")
def grad_module(tmp_path_factory):
    lines = ["import treadle as wp", ""]
    for n, (expr, args, rets) in enumerate(GRAD_CASES):
        params = ", ".join(f"a{j}_in: wp.array(dtype=wp.{KINDS[k].__name__})" for j, k in enumerate(args))
        loads = [f"    a{j} = a{j}_in[0]" for j in range(len(args))]
        names = [f"r{m}" for m in range(len(rets))]
        terms, off = [], 0
        for name, kind in zip(names, rets):
            terms.append(_flat(name, kind, off))
            off += SIZES[kind]
        lines += ["@wp.kernel(module='quat_grad_cases')",
                  f"def g{n}({params}, w: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):",
                  *loads, f"    {', '.join(names)} = {expr}", f"    out[0] = {' + '.join(terms)}", ""]
    path = tmp_path_factory.mktemp("quatgrad") / "quat_grad_cases.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("quat_grad_cases", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["quat_grad_cases"] = mod
    spec.loader.exec_module(mod)
    return mod


def _sample(kind: str) -> np.ndarray:
    if kind == "q":
        return unit_quats(1)[0]
    if kind == "t":
        return random_transforms(1)[0]
    if kind == "s":
        return np.array(RNG.uniform(0.2, 0.8))
    if kind == "m44":  # a rigid transform with scale (columns 0.5-1.5 long)
        m = tf_mat(random_transforms(1)[0])
        m[:3, :3] *= RNG.uniform(0.5, 1.5, size=3)
        return m
    if kind == "m33":
        return ref_qmat(unit_quats(1)[0])
    return RNG.normal(size=SIZES[kind])


def check_gradient(kernel, kinds, xs, n_out, rtol=1e-5, atol=1e-6, what=""):
    """Tape gradient of dot(w, flatten(result)) vs central differences, all in float64."""
    w = wp.array(RNG.standard_normal(n_out), dtype=wp.float64)

    def run(vals, grad=False):
        arrs = [wp.array([v], dtype=KINDS[k], requires_grad=grad) for v, k in zip(vals, kinds)]
        out = wp.zeros(1, dtype=wp.float64, requires_grad=grad)
        if not grad:
            wp.launch(kernel, 1, inputs=[*arrs, w, out])
            return out.numpy()[0]
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, 1, inputs=[*arrs, w, out])
        tape.backward(out)
        return [a.grad.numpy()[0] for a in arrs]

    grads = run(xs, grad=True)
    h = 1e-6
    for j, x in enumerate(xs):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            xp, xm = [v.copy() for v in xs], [v.copy() for v in xs]
            xp[j][idx] += h
            xm[j][idx] -= h
            num[idx] = (run(xp) - run(xm)) / (2 * h)
        np.testing.assert_allclose(grads[j], num, rtol=rtol, atol=atol, err_msg=f"{what} argument {j}")


@pytest.mark.parametrize("case", range(len(GRAD_CASES)), ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_finite_differences(grad_module, case):
    expr, kinds, rets = GRAD_CASES[case]
    xs = [_sample(k) for k in kinds]
    if "quat_twist" in expr:  # keep away from the unspecified 180-degree swing
        xs[0] = xs[0] / np.linalg.norm(xs[0])
        xs[1][3] = abs(xs[1][3]) + 0.5
    check_gradient(getattr(grad_module, f"g{case}"), kinds, xs, sum(SIZES[r] for r in rets), what=expr)
