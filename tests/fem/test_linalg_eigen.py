"""fem.linalg eigen-decompositions against NumPy, and matrices built from five or more vectors."""

from __future__ import annotations

import numpy as np

import treadle as wp
import treadle.fem as fem
from treadle.fem.linalg import symmetric_eigenvalues_qr, tridiagonal_symmetric_eigenvalues_qr

vec6d = wp.types.vector(6, wp.float64)
mat66d = wp.types.matrix((6, 6), wp.float64)
vec6f = wp.types.vector(6, float)


@wp.kernel
def _eig6(a: wp.array(dtype=mat66d), tol: float, d: wp.array(dtype=vec6d), p: wp.array(dtype=mat66d)):
    i = wp.tid()
    r = symmetric_eigenvalues_qr(a[i], wp.float64(tol))
    d[i] = r[0]
    p[i] = r[1]


@wp.kernel
def _tridiag(diag: wp.array(dtype=wp.vec4d), sub: wp.array(dtype=wp.vec4d), q: wp.array(dtype=wp.mat44d),
             d: wp.array(dtype=wp.vec4d), p: wp.array(dtype=wp.mat44d)):
    i = wp.tid()
    r = tridiagonal_symmetric_eigenvalues_qr(diag[i], sub[i], q[i], wp.float64(0.0))
    d[i] = r[0]
    p[i] = r[1]


def test_symmetric_eigenvalues_reconstruct_the_matrix() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(size=(8, 6, 6))
    a = m + np.transpose(m, (0, 2, 1))
    a[0] = np.diag([2.0, 2.0, 2.0, 1.0, 1.0, 0.0])  # repeated eigenvalues
    a[1] = 1.7e-3 * np.eye(6) + 3.0e-5 * (m[1] + m[1].T)  # clustered ones
    d = wp.zeros(8, dtype=vec6d)
    p = wp.zeros(8, dtype=mat66d)
    wp.launch(_eig6, dim=8, inputs=[wp.array(a, dtype=mat66d), 0.0, d, p])
    dn, pn = d.numpy(), p.numpy()
    for k in range(8):
        # rows of P are the eigenvectors: A = P^T diag(D) P, P orthogonal
        np.testing.assert_allclose(pn[k].T @ np.diag(dn[k]) @ pn[k], a[k], atol=1e-10 * max(1.0, abs(a[k]).max()))
        np.testing.assert_allclose(pn[k] @ pn[k].T, np.eye(6), atol=1e-10)
        np.testing.assert_allclose(np.sort(dn[k]), np.linalg.eigvalsh(a[k]), atol=1e-10)


def test_tridiagonal_eigenvalues_with_a_basis() -> None:
    rng = np.random.default_rng(4)
    diag = rng.normal(size=(3, 4))
    sub = rng.normal(size=(3, 4))
    q = np.stack([np.linalg.qr(rng.normal(size=(4, 4)))[0] for _ in range(3)])
    d = wp.zeros(3, dtype=wp.vec4d)
    p = wp.zeros(3, dtype=wp.mat44d)
    wp.launch(_tridiag, dim=3, inputs=[wp.array(diag, dtype=wp.vec4d), wp.array(sub, dtype=wp.vec4d),
                                       wp.array(q, dtype=wp.mat44d), d, p])
    for k in range(3):
        t = np.diag(diag[k]) + np.diag(sub[k, :3], -1) + np.diag(sub[k, :3], 1)  # T[i + 1, i] = L[i]
        pk, dk = p.numpy()[k], d.numpy()[k]
        np.testing.assert_allclose(pk.T @ np.diag(dk) @ pk, q[k].T @ t @ q[k], atol=1e-10)
        np.testing.assert_allclose(np.sort(dk), np.linalg.eigvalsh(t), atol=1e-10)


@wp.kernel
def _from_vectors(x: wp.array(dtype=vec6f), w: wp.array(dtype=wp.types.matrix((6, 6), float)),
                  out: wp.array(dtype=float)):
    c = wp.matrix_from_cols(x[0], x[1], x[2], x[3], x[4], x[5])
    r = wp.matrix_from_rows(x[0], x[1], x[2], x[3], x[4], x[5])
    out[0] = wp.ddot(c, w[0]) + 2.0 * wp.ddot(r, w[0])


def test_matrices_from_six_vectors_and_their_gradients() -> None:
    rng = np.random.default_rng(5)
    xs = rng.normal(size=(6, 6)).astype(np.float32)
    ws = rng.normal(size=(6, 6)).astype(np.float32)
    x = wp.array(xs, dtype=vec6f, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_from_vectors, dim=1, inputs=[x, wp.array([ws], dtype=wp.types.matrix((6, 6), float)), out])
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    x64, w64 = xs.astype(np.float64), ws.astype(np.float64)
    # matrix_from_cols(x) = X^T (columns are the vectors), matrix_from_rows(x) = X
    np.testing.assert_allclose(out.numpy()[0], np.sum(x64.T * w64) + 2.0 * np.sum(x64 * w64), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), w64.T + 2.0 * w64, rtol=1e-6)
    host = wp.matrix_from_cols(*[vec6f(*v) for v in xs])
    np.testing.assert_allclose(np.array(host).reshape(6, 6), xs.T)


def test_skew_mapper_2d_dof_is_a_python_float() -> None:
    mapper = fem.SkewSymmetricTensorMapper(wp.mat22)
    assert mapper.dof_dtype is float
    assert fem.SkewSymmetricTensorMapper(wp.mat22d).dof_dtype is wp.float64
    m = mapper.dof_to_value(1.5)
    np.testing.assert_allclose(np.array(m).reshape(2, 2), [[0.0, -1.5], [1.5, 0.0]])
    assert mapper.value_to_dof(m) == 1.5
    space = fem.make_polynomial_space(fem.Grid2D(res=wp.vec2i(1)), dtype=wp.mat22, dof_mapper=mapper)
    assert space.dof_dtype is wp.float32
    assert space.make_field().dof_values.dtype is wp.float32
