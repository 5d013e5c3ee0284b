"""svd3, svd2, qr3, eig3 and inverse_approx in kernels: factorization properties, the conventions of the reference
(determinants, ordering, signs), host calls vs kernel results, output-argument forms, and gradients vs central
finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

RNG = np.random.default_rng(3)


@wp.kernel
def decompose(a3: wp.array(dtype=wp.mat33d), a2: wp.array(dtype=wp.mat22d), u3: wp.array(dtype=wp.mat33d),
              s3: wp.array(dtype=wp.vec3d), v3: wp.array(dtype=wp.mat33d), u2: wp.array(dtype=wp.mat22d),
              s2: wp.array(dtype=wp.vec2d), v2: wp.array(dtype=wp.mat22d), q: wp.array(dtype=wp.mat33d),
              r: wp.array(dtype=wp.mat33d), eq: wp.array(dtype=wp.mat33d), ed: wp.array(dtype=wp.vec3d),
              inv: wp.array(dtype=wp.mat33d)):
    i = wp.tid()
    A = a3[i]
    U, sigma, V = wp.svd3(A)
    u3[i] = U
    s3[i] = sigma
    v3[i] = V
    U2, sigma2, V2 = wp.svd2(a2[i])
    u2[i] = U2
    s2[i] = sigma2
    v2[i] = V2
    Q, R = wp.qr3(A)
    q[i] = Q
    r[i] = R
    S = A + wp.transpose(A)
    E, d = wp.eig3(S)
    eq[i] = E
    ed[i] = d
    inv[i] = wp.inverse_approx(A)


def _matrices(n: int) -> np.ndarray:
    a = RNG.normal(size=(n, 3, 3))
    a[0] = np.diag([3.0, -1.0, 2.0])  # already diagonal, one negative entry
    a[1] = np.outer([1.0, 2.0, 3.0], [0.5, -1.0, 2.0])  # rank 1
    a[2] = [[2.598076, -1.0, 0.0], [1.5, 1.732051, 0.0], [0.0, 0.0, -1.0]]  # the reference's documented example
    return a


def test_decompositions_properties_and_host_agreement():
    n = 12
    a3 = _matrices(n)
    a2 = RNG.normal(size=(n, 2, 2))
    a2[0] = [[3.0, 0.0], [4.0, 5.0]]
    outs = {k: wp.zeros(n, dtype=t) for k, t in [("u3", wp.mat33d), ("s3", wp.vec3d), ("v3", wp.mat33d),
                                                  ("u2", wp.mat22d), ("s2", wp.vec2d), ("v2", wp.mat22d),
                                                  ("q", wp.mat33d), ("r", wp.mat33d), ("eq", wp.mat33d),
                                                  ("ed", wp.vec3d), ("inv", wp.mat33d)]}
    wp.launch(decompose, n, inputs=[wp.array(a3, dtype=wp.mat33d), wp.array(a2, dtype=wp.mat22d), *outs.values()])
    o = {k: v.numpy() for k, v in outs.items()}
    eye3 = np.eye(3)
    for i in range(n):
        A, U, s, V = a3[i], o["u3"][i], o["s3"][i], o["v3"][i]
        np.testing.assert_allclose(U @ np.diag(s) @ V.T, A, atol=1e-12)
        np.testing.assert_allclose(U.T @ U, eye3, atol=1e-12)
        np.testing.assert_allclose(V.T @ V, eye3, atol=1e-12)
        assert np.linalg.det(U) > 0 and np.linalg.det(V) > 0
        assert s[0] >= abs(s[1]) - 1e-12 >= abs(s[2]) - 2e-12 and s[0] >= 0 and s[1] >= 0
        if abs(np.linalg.det(A)) > 1e-9:
            assert np.sign(s[2]) == np.sign(np.linalg.det(A))
        np.testing.assert_allclose(np.abs(s), np.linalg.svd(A, compute_uv=False), atol=1e-12)
        U2, s2, V2 = o["u2"][i], o["s2"][i], o["v2"][i]
        np.testing.assert_allclose(U2 @ np.diag(s2) @ V2.T, a2[i], atol=1e-12)
        np.testing.assert_allclose(U2.T @ U2, np.eye(2), atol=1e-12)
        np.testing.assert_allclose(s2, np.linalg.svd(a2[i], compute_uv=False), atol=1e-12)
        Q, R = o["q"][i], o["r"][i]
        np.testing.assert_allclose(Q @ R, A, atol=1e-12)
        np.testing.assert_allclose(Q.T @ Q, eye3, atol=1e-12)
        assert np.linalg.det(Q) > 0 and np.allclose(np.tril(R, -1), 0)
        S, E, d = A + A.T, o["eq"][i], o["ed"][i]
        np.testing.assert_allclose(S @ E, E * d[None, :], atol=1e-11)  # A v = lambda v for every column
        np.testing.assert_allclose(E.T @ E, eye3, atol=1e-12)
        assert np.linalg.det(E) > 0
        np.testing.assert_allclose(np.sort(d), np.linalg.eigvalsh(S), atol=1e-11)
        if abs(np.linalg.det(A)) > 1e-6:
            np.testing.assert_allclose(o["inv"][i] @ A, eye3, atol=1e-9)
        if i in (0, 2, 3, 4):  # host scope runs the same algorithms (not compared on the rank-1 matrix)
            hA = wp.mat33d(*A.reshape(-1))
            for got, want in zip(wp.svd3(hA), (U, s, V)):
                np.testing.assert_allclose(np.reshape(np.asarray(got, dtype=float), np.shape(want)), want, atol=1e-12)
            for got, want in zip(wp.qr3(hA), (Q, R)):
                np.testing.assert_allclose(np.reshape(np.asarray(got, dtype=float), np.shape(want)), want, atol=1e-12)
            for got, want in zip(wp.eig3(wp.mat33d(*S.reshape(-1))), (E, d)):
                np.testing.assert_allclose(np.reshape(np.asarray(got, dtype=float), np.shape(want)), want, atol=1e-11)
            for got, want in zip(wp.svd2(wp.mat22d(*a2[i].reshape(-1))), (U2, s2, V2)):
                np.testing.assert_allclose(np.reshape(np.asarray(got, dtype=float), np.shape(want)), want, atol=1e-12)
    # the reference's documented examples
    np.testing.assert_allclose(o["s3"][2], [3.0, 2.0, -1.0], atol=1e-5)
    np.testing.assert_allclose(o["u3"][2] @ o["v3"][2].T, [[0.866025, -0.5, 0], [0.5, 0.866025, 0], [0, 0, 1]],
                               atol=1e-5)
    np.testing.assert_allclose(o["s2"][0], [6.708204, 2.236068], atol=1e-6)
    np.testing.assert_allclose(o["u2"][0] @ o["v2"][0].T, [[0.894427, -0.447214], [0.447214, 0.894427]], atol=1e-6)


@wp.kernel
def out_args(a: wp.array(dtype=wp.mat33), u: wp.array(dtype=wp.mat33), s: wp.array(dtype=wp.vec3),
             q: wp.array(dtype=wp.mat33), d: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    U = wp.mat33()
    sigma = wp.vec3()
    V = wp.mat33()
    wp.svd3(a[i], U, sigma, V)
    u[i] = U * wp.diag(sigma) * wp.transpose(V)
    s[i] = sigma
    Q = wp.mat33()
    R = wp.mat33()
    wp.qr3(a[i], Q, R)
    q[i] = Q * R
    E = wp.mat33()
    e = wp.vec3()
    wp.eig3(a[i] * wp.transpose(a[i]), E, e)
    d[i] = e


def test_output_argument_forms_float32():
    a = RNG.normal(size=(4, 3, 3)).astype(np.float32)
    u, s, q, d = (wp.zeros(4, dtype=t) for t in (wp.mat33, wp.vec3, wp.mat33, wp.vec3))
    wp.launch(out_args, 4, inputs=[wp.array(a, dtype=wp.mat33), u, s, q, d])
    for i in range(4):
        np.testing.assert_allclose(u.numpy()[i], a[i], atol=2e-5)
        np.testing.assert_allclose(q.numpy()[i], a[i], atol=2e-5)
        np.testing.assert_allclose(np.abs(s.numpy()[i]), np.linalg.svd(a[i], compute_uv=False), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.sort(d.numpy()[i]), np.linalg.eigvalsh(a[i] @ a[i].T), rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="kernels only"):
        wp.svd3(wp.mat33(), wp.mat33(), wp.vec3(), wp.mat33())


# ------------------------------------------------------------------------------------------------ gradients
@wp.kernel
def svd3_loss(a: wp.array(dtype=wp.mat33d), w: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.float64)):
    U, s, V = wp.svd3(a[0])
    W = w[0]
    # sign-independent in U and V: products of matched column pairs, plus the singular values
    out[0] = wp.ddot(W, U * wp.diag(wp.vec3d(W[0, 0], W[1, 1], W[2, 2])) * wp.transpose(V)) + wp.dot(s, W[2])


@wp.kernel
def svd2_loss(a: wp.array(dtype=wp.mat22d), w: wp.array(dtype=wp.mat22d), out: wp.array(dtype=wp.float64)):
    U, s, V = wp.svd2(a[0])
    W = w[0]
    out[0] = wp.ddot(W, U * wp.diag(wp.vec2d(W[0, 0], W[1, 1])) * wp.transpose(V)) + wp.dot(s, W[1])


@wp.kernel
def qr3_loss(a: wp.array(dtype=wp.mat33d), w: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.float64)):
    Q, R = wp.qr3(a[0])
    out[0] = wp.ddot(w[0], Q) + wp.ddot(wp.transpose(w[0]), R)


@wp.kernel
def eig3_loss(a: wp.array(dtype=wp.mat33d), w: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.float64)):
    Q, d = wp.eig3(a[0])
    W = w[0]
    # squares of eigenvector entries (sign independent) plus the eigenvalues
    out[0] = wp.ddot(W, wp.cw_mul(Q, Q)) + wp.dot(d, W[1]) + wp.length_sq(d)


def _fd_check(kernel, a: np.ndarray, dtype, sym: bool = False) -> None:
    w = wp.array([RNG.normal(size=a.shape)], dtype=dtype)

    def loss(x: np.ndarray) -> float:
        out = wp.zeros(1, dtype=wp.float64)
        wp.launch(kernel, 1, inputs=[wp.array([x], dtype=dtype), w, out])
        return out.numpy()[0]

    arr = wp.array([a], dtype=dtype, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 1, inputs=[arr, w, out])
    tape.backward(out)
    grad = arr.grad.numpy()[0]
    h = 1e-6
    num = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[idx] = h
        if sym:  # eig3 reads the symmetric part: perturb symmetrically and compare directional derivatives
            d = 0.5 * (d + d.T)
        num[idx] = (loss(a + d) - loss(a - d)) / (2 * h)
    if sym:  # the directional derivative along (E_ij + E_ji) / 2
        grad = 0.5 * (grad + grad.T)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_svd_qr_gradients(seed):
    a = RNG.normal(size=(3, 3)) + np.diag([3.0, 1.5, -0.5])  # well separated singular values
    _fd_check(svd3_loss, a, wp.mat33d)
    _fd_check(svd2_loss, RNG.normal(size=(2, 2)) + np.diag([2.0, -0.5]), wp.mat22d)
    _fd_check(qr3_loss, a, wp.mat33d)


@pytest.mark.parametrize("seed", range(3))
def test_eig3_gradients(seed):
    b = RNG.normal(size=(3, 3))
    _fd_check(eig3_loss, b + b.T + np.diag([4.0, 0.0, -4.0]), wp.mat33d, sym=True)


@wp.kernel
def eig_repeated(a: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.float64)):
    Q, d = wp.eig3(a[0])
    out[0] = d[0] + d[1] + d[2] + wp.length_sq(d)


def test_eig3_eigenvalue_loss_with_repeated_eigenvalues():
    # sum(d) + sum(d^2) = trace(A) + |A|_F^2: gradient I + 2A even though two eigenvalues coincide
    rot = np.linalg.qr(RNG.normal(size=(3, 3)))[0]
    a = rot @ np.diag([2.0, 2.0, -1.0]) @ rot.T
    arr = wp.array([a], dtype=wp.mat33d, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(eig_repeated, 1, inputs=[arr, out])
    tape.backward(out)
    np.testing.assert_allclose(arr.grad.numpy()[0], np.eye(3) + 2 * a, atol=1e-9)
