"""Vectors and matrices in kernels: construction, components, arithmetic and builtins vs NumPy."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def vec_ops(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out_v: wp.array(dtype=wp.vec3),
            out_s: wp.array(dtype=float)):
    i = wp.tid()
    u = a[i]
    v = b[i]
    w = wp.cross(u, v) + 2.0 * u - v / 2.0
    w[1] = w[1] + wp.length(u)
    w.z = w.z * 3.0
    out_v[i] = w
    out_s[i] = wp.dot(u, v) + wp.length_sq(v) + u.x + u[2] + wp.normalize(v)[0] + wp.min(u) + wp.max(v)


@wp.kernel
def mat_ops(m: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3), out_m: wp.array(dtype=wp.mat33),
            out_v: wp.array(dtype=wp.vec3), out_s: wp.array(dtype=float)):
    i = wp.tid()
    a = m[i]
    x = v[i]
    b = wp.transpose(a) * a + wp.outer(x, x) - wp.identity(n=3, dtype=float)
    b[0, 1] = 5.0
    b[2] = wp.vec3(1.0, 2.0, 3.0)
    out_m[i] = b * 0.5
    out_v[i] = a * x + x * a
    out_s[i] = wp.determinant(a) + wp.trace(a) + a[1, 2] + a[0][1]


@wp.kernel
def inv_kernel(m: wp.array(dtype=wp.mat44d), out: wp.array(dtype=wp.mat44d)):
    i = wp.tid()
    out[i] = wp.inverse(m[i])


@wp.kernel
def construct(out: wp.array(dtype=wp.vec4), outm: wp.array(dtype=wp.mat22), outi: wp.array(dtype=wp.vec2i)):
    i = wp.tid()
    f = float(i)
    z = wp.vec4()
    s = wp.vec4(f)
    out[i] = z + s + wp.vec4(1.0, 2.0, 3.0, f)
    outm[i] = wp.mat22(f, 1.0, 2.0, 3.0) + wp.mat22(wp.vec2(1.0, 1.0), wp.vec2(f, f))
    outi[i] = wp.vec2i(i, 2 * i)


@wp.kernel
def component_loops(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    total = 0.0
    for c in v[i]:
        total += c * c
    out[i] = total


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_vector_ops(device):
    n = 16
    an, bn = _rand((n, 3), 1), _rand((n, 3), 2)
    a = wp.array(an, dtype=wp.vec3, device=device)
    b = wp.array(bn, dtype=wp.vec3, device=device)
    ov = wp.zeros(n, dtype=wp.vec3, device=device)
    os_ = wp.zeros(n, dtype=float, device=device)
    wp.launch(vec_ops, dim=n, inputs=[a, b, ov, os_], device=device)
    w = np.cross(an, bn) + 2.0 * an - bn / 2.0
    w[:, 1] += np.linalg.norm(an, axis=1)
    w[:, 2] *= 3.0
    np.testing.assert_allclose(ov.numpy(), w, rtol=1e-5, atol=1e-5)
    s = (np.sum(an * bn, 1) + np.sum(bn * bn, 1) + an[:, 0] + an[:, 2] + bn[:, 0] / np.linalg.norm(bn, axis=1)
         + an.min(1) + bn.max(1))
    np.testing.assert_allclose(os_.numpy(), s, rtol=1e-5, atol=1e-5)


def test_matrix_ops(device):
    n = 8
    mn, vn = _rand((n, 3, 3), 3), _rand((n, 3), 4)
    m = wp.array(mn, dtype=wp.mat33, device=device)
    v = wp.array(vn, dtype=wp.vec3, device=device)
    om = wp.zeros(n, dtype=wp.mat33, device=device)
    ov = wp.zeros(n, dtype=wp.vec3, device=device)
    os_ = wp.zeros(n, dtype=float, device=device)
    wp.launch(mat_ops, dim=n, inputs=[m, v, om, ov, os_], device=device)
    b = np.transpose(mn, (0, 2, 1)) @ mn + np.einsum("ni,nj->nij", vn, vn) - np.eye(3)
    b[:, 0, 1] = 5.0
    b[:, 2] = [1.0, 2.0, 3.0]
    np.testing.assert_allclose(om.numpy(), 0.5 * b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ov.numpy(), np.einsum("nij,nj->ni", mn, vn) + np.einsum("ni,nij->nj", vn, mn),
                               rtol=1e-5, atol=1e-5)
    s = np.linalg.det(mn) + np.trace(mn, axis1=1, axis2=2) + mn[:, 1, 2] + mn[:, 0, 1]
    np.testing.assert_allclose(os_.numpy(), s, rtol=1e-4, atol=1e-5)


def test_inverse_float64(device):
    rng = np.random.default_rng(5)
    mn = rng.standard_normal((6, 4, 4)) + 4 * np.eye(4)
    m = wp.array(mn, dtype=wp.mat44d, device=device)
    out = wp.zeros(6, dtype=wp.mat44d, device=device)
    wp.launch(inv_kernel, dim=6, inputs=[m, out], device=device)
    np.testing.assert_allclose(out.numpy(), np.linalg.inv(mn), rtol=1e-10, atol=1e-12)


def test_constructors(device):
    n = 4
    out = wp.zeros(n, dtype=wp.vec4, device=device)
    outm = wp.zeros(n, dtype=wp.mat22, device=device)
    outi = wp.zeros(n, dtype=wp.vec2i, device=device)
    wp.launch(construct, dim=n, inputs=[out, outm, outi], device=device)
    i = np.arange(n, dtype=np.float32)
    np.testing.assert_allclose(out.numpy(), np.stack([i + 1, i + 2, i + 3, 2 * i], 1))
    ref = np.stack([np.stack([i + 1, np.full(n, 2.0)], 1), np.stack([2 + i, 3 + i], 1)], 1)
    np.testing.assert_allclose(outm.numpy(), ref)
    np.testing.assert_array_equal(outi.numpy(), np.stack([np.arange(n), 2 * np.arange(n)], 1))


def test_iterate_components(device):
    vn = _rand((5, 3), 7)
    v = wp.array(vn, dtype=wp.vec3, device=device)
    out = wp.zeros(5, dtype=float, device=device)
    wp.launch(component_loops, dim=5, inputs=[v, out], device=device)
    np.testing.assert_allclose(out.numpy(), np.sum(vn * vn, 1), rtol=1e-6)


@wp.kernel
def transform_parts(out: wp.array(dtype=wp.transform), outp: wp.array(dtype=wp.vec3), outs: wp.array(dtype=wp.spatial_vector)):
    q = wp.quat(wp.vec3(0.0, 0.0, 0.0), 1.0)
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), q)
    t.p = t.p + wp.vec3(1.0, 1.0, 1.0)
    t.p[2] = 10.0
    out[0] = t
    outp[0] = t.p
    outs[0] = wp.spatial_vector(wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0))


def test_transform_parts_and_constructors(device):
    out = wp.zeros(1, dtype=wp.transform, device=device)
    outp = wp.zeros(1, dtype=wp.vec3, device=device)
    outs = wp.zeros(1, dtype=wp.spatial_vector, device=device)
    wp.launch(transform_parts, dim=1, inputs=[out, outp, outs], device=device)
    np.testing.assert_allclose(out.numpy()[0], [2.0, 3.0, 10.0, 0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(outp.numpy()[0], [2.0, 3.0, 10.0])
    np.testing.assert_allclose(outs.numpy()[0], [1, 2, 3, 4, 5, 6])
