"""Small dense decompositions: ``svd3``, ``svd2``, ``qr3``, ``eig3``, and ``inverse_approx``.

The decompositions return tuples (``U, sigma, V = wp.svd3(A)``) or, in kernels, store into output variables
(``wp.svd3(A, U, sigma, V)``, no gradient through that form). The host implementations run the same algorithms as
``treadle/native/linalg.h`` (one-sided Jacobi SVD, Gram-Schmidt QR, cyclic Jacobi eigendecomposition), so the signs
and orders of singular vectors and eigenvectors agree with kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types.typesys import is_float, is_matrix, scalar_of, type_str
from .quat import f64, forms, host_value
from .registry import Interp, arity, builtin, need
from .vector_math import np_linalg_host

GROUP = "Vector Math"


def _eps(like: Any) -> float:
    dt = np.asarray(like).dtype
    return float(np.finfo(np.float32 if dt == np.float16 else dt).eps)


def _orthogonalize_columns(a: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray, bool]:
    b, n = a.copy(), a.shape[0]
    v = np.eye(n)
    for _ in range(20):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                alpha, beta, gamma = b[:, p] @ b[:, p], b[:, q] @ b[:, q], b[:, p] @ b[:, q]
                if abs(gamma) <= eps * np.sqrt(alpha * beta) or gamma == 0:
                    continue
                rotated = True
                zeta = (beta - alpha) / (2 * gamma)
                t = (1.0 if zeta >= 0 else -1.0) / (abs(zeta) + np.sqrt(1 + zeta * zeta))
                c = 1 / np.sqrt(1 + t * t)
                s = c * t
                for m in (b, v):
                    mp, mq = m[:, p].copy(), m[:, q].copy()
                    m[:, p], m[:, q] = c * mp - s * mq, s * mp + c * mq
        if not rotated:
            break
    odd = False
    for i in range(n):
        best = i
        for j in range(i + 1, n):
            if b[:, j] @ b[:, j] > b[:, best] @ b[:, best]:
                best = j
        if best != i:
            b[:, [i, best]] = b[:, [best, i]]
            v[:, [i, best]] = v[:, [best, i]]
            odd = not odd
    return b, v, odd


def _perp(u: np.ndarray) -> np.ndarray:
    e = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.6 else np.array([0.0, 1.0, 0.0])
    c = np.cross(u, e)
    return c / np.linalg.norm(c)


def np_svd3(a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``svd3``: U, sigma, V with det(U) = det(V) = +1 and sigma sorted by decreasing magnitude."""
    eps = _eps(a)
    b, v, odd = _orthogonalize_columns(f64(a), eps)
    if odd:
        b[:, 2], v[:, 2] = -b[:, 2], -v[:, 2]
    s0 = np.linalg.norm(b[:, 0])
    u0 = b[:, 0] / s0 if s0 > 0 else np.array([1.0, 0.0, 0.0])
    u1 = b[:, 1] - u0 * (u0 @ b[:, 1])
    s1 = np.linalg.norm(u1)
    if s1 > 64 * eps * s0 and s1 > 0:
        u1 = u1 / s1
    else:
        u1 = _perp(u0)
        s1 = u1 @ b[:, 1]
        if s1 < 0:
            u1, s1 = -u1, -s1
    u2 = np.cross(u0, u1)
    return np.stack([u0, u1, u2], axis=1), np.array([s0, s1, u2 @ b[:, 2]]), v


def np_svd2(a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``svd2``: U, sigma >= 0 sorted, V."""
    eps = _eps(a)
    b, v, _ = _orthogonalize_columns(f64(a), eps)
    s0, s1 = np.linalg.norm(b[:, 0]), np.linalg.norm(b[:, 1])
    u0 = b[:, 0] / s0 if s0 > 0 else np.array([1.0, 0.0])
    u1 = b[:, 1] / s1 if s1 > 64 * eps * s0 and s1 > 0 else np.array([-u0[1], u0[0]])
    return np.stack([u0, u1], axis=1), np.array([s0, s1]), v


def np_qr3(a: Any) -> tuple[np.ndarray, np.ndarray]:
    """``qr3``: Q with det +1 (Gram-Schmidt, third column a cross product), R = Q^T A upper triangular."""
    eps = _eps(a)  # of the argument's precision (before the float64 copy), as the kernel's threshold
    a = f64(a)
    n0 = np.linalg.norm(a[:, 0])
    q0 = a[:, 0] / n0 if n0 > 0 else np.array([1.0, 0.0, 0.0])
    q1 = a[:, 1] - q0 * (q0 @ a[:, 1])
    n1 = np.linalg.norm(q1)
    q1 = q1 / n1 if n1 > 64 * eps * n0 and n1 > 0 else _perp(q0)
    q = np.stack([q0, q1, np.cross(q0, q1)], axis=1)
    return q, np.triu(q.T @ a)


def np_eig3(a: Any) -> tuple[np.ndarray, np.ndarray]:
    """``eig3``: cyclic Jacobi on the symmetric part; Q is a product of rotations (det +1), d unsorted."""
    eps = _eps(a)
    s = 0.5 * (f64(a) + f64(a).T)
    q = np.eye(3)
    for _ in range(20):
        off = s[0, 1] ** 2 + s[0, 2] ** 2 + s[1, 2] ** 2
        if off <= eps * eps * np.sum(np.diag(s) ** 2) or off == 0:
            break
        for p in range(2):
            for r in range(p + 1, 3):
                if s[p, r] == 0:
                    continue
                theta = (s[r, r] - s[p, p]) / (2 * s[p, r])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1))
                c = 1 / np.sqrt(t * t + 1)
                j = np.eye(3)
                j[p, p] = j[r, r] = c
                j[p, r], j[r, p] = t * c, -t * c
                s = j.T @ s @ j
                q = q @ j
    return q, np.diag(s).copy()


def _host(fn: Any, kinds: tuple[str, ...]) -> Any:
    def impl(a: Any, *out: Any) -> Any:
        if out:
            raise TypeError("output arguments work in kernels only; use the tuple form, e.g. 'U, s, V = wp.svd3(A)'")
        return tuple(host_value(k, x, a) for k, x in zip(kinds, fn(a)))

    return impl


def _inverse_approx_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(is_matrix(t) and t._shape_[0] == t._shape_[1] and t._shape_[0] in (2, 3, 4) and is_float(scalar_of(t)),
         f"expected a 2x2, 3x3 or 4x4 float matrix, got {type_str(t)}")
    return t


builtin("svd3", group=GROUP, rule=forms((("m33",), ("m33", "v3", "m33")), (("m33", "m33", "v3", "m33"), None)),
        ref_args=(1, 2, 3), host=_host(np_svd3, ("m33", "v3", "m33")),
        signature="svd3(A: mat33) -> tuple(mat33, vec3, mat33) | svd3(A, U, sigma, V)",
        doc="Singular value decomposition ``A = U diag(sigma) V^T``: U and V rotations (det +1), sigma sorted by "
            "decreasing magnitude, the last one carrying the sign of det(A).")
builtin("svd2", group=GROUP, rule=forms((("m22",), ("m22", "v2", "m22")), (("m22", "m22", "v2", "m22"), None)),
        ref_args=(1, 2, 3), host=_host(np_svd2, ("m22", "v2", "m22")),
        signature="svd2(A: mat22) -> tuple(mat22, vec2, mat22) | svd2(A, U, sigma, V)",
        doc="Singular value decomposition ``A = U diag(sigma) V^T`` with sigma >= 0 sorted decreasingly.")
builtin("qr3", group=GROUP, rule=forms((("m33",), ("m33", "m33")), (("m33", "m33", "m33"), None)),
        ref_args=(1, 2), host=_host(np_qr3, ("m33", "m33")),
        signature="qr3(A: mat33) -> tuple(mat33, mat33) | qr3(A, Q, R)",
        doc="QR decomposition ``A = Q R``: Q a rotation (det +1), R upper triangular (gradients need full rank).")
builtin("eig3", group=GROUP, rule=forms((("m33",), ("m33", "v3")), (("m33", "m33", "v3"), None)),
        ref_args=(1, 2), host=_host(np_eig3, ("m33", "v3")),
        signature="eig3(A: mat33) -> tuple(mat33, vec3) | eig3(A, Q, d)",
        doc="Eigendecomposition ``A = Q diag(d) Q^T`` of a symmetric matrix (of its symmetric part): Q's columns "
            "form a right-handed orthonormal basis; the order of the eigenvalues is unspecified.")
builtin("inverse_approx", group=GROUP, rule=_inverse_approx_rule, interpret=Interp.INVERSE, host=np_linalg_host(np.linalg.inv),
        signature="inverse_approx(a: Matrix) -> Matrix",
        doc="An approximate inverse of a 2x2, 3x3 or 4x4 matrix (on the CPU, the same as ``inverse``).")
