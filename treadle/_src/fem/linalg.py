"""Small dense linear algebra for kernels (tensor parts, generalized products, QR, eigenvalues) and ``array_axpy``."""

import typing
from typing import Any

import treadle as wp

_Mat = wp.types.matrix(shape=(typing.Any, typing.Any), dtype=wp.Float)
_Vec = wp.types.vector(length=typing.Any, dtype=wp.Float)


@wp.func
def symmetric_part(A: Any):
    """``(A + A^T) / 2``."""
    return type(A[0, 0])(0.5) * (A + wp.transpose(A))


@wp.func
def skew_part(A: Any):
    """``(A - A^T) / 2``."""
    return type(A[0, 0])(0.5) * (A - wp.transpose(A))


@wp.func
def spherical_part(A: _Mat):
    """``trace(A) / n`` times the identity."""
    n = len(A)
    t = wp.trace(A) / type(A[0, 0])(n)
    B = A - A
    for i in range(n):
        B[i, i] = t
    return B


@wp.func
def skew_vector(A: wp.mat22) -> wp.float32:
    """Axial value of the skew part of a 2x2 matrix: ``(A[1, 0] - A[0, 1]) / 2``."""
    return 0.5 * (A[1, 0] - A[0, 1])


@wp.func
def skew_vector(A: wp.mat22d) -> wp.float64:  # noqa: F811 - overload
    """Axial value of the skew part of a 2x2 matrix (double precision)."""
    return wp.float64(0.5) * (A[1, 0] - A[0, 1])


@wp.func
def skew_vector(A: wp.mat33) -> wp.vec3:  # noqa: F811 - overload
    """Axial vector ``w`` of the skew part of ``A``: ``cross(w, v) = skew_part(A) v``."""
    return 0.5 * wp.vec3(A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1])


@wp.func
def skew_vector(A: wp.mat33d) -> wp.vec3d:  # noqa: F811 - overload
    """Axial vector of the skew part of ``A`` (double precision)."""
    return wp.float64(0.5) * wp.vec3d(A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1])


@wp.func
def generalized_outer(x: wp.Float, y: Any):
    """``x * y`` for a scalar ``x``."""
    return x * y


@wp.func
def generalized_outer(x: _Vec, y: _Vec):  # noqa: F811 - overload
    """``outer(x, y)`` for vectors."""
    return wp.outer(x, y)


@wp.func
def generalized_inner(x: wp.Float, y: wp.Float):
    """``x * y`` for scalars."""
    return x * y


@wp.func
def generalized_inner(x: _Vec, y: _Vec):  # noqa: F811 - overload
    """``dot(x, y)`` for vectors."""
    return wp.dot(x, y)


@wp.func
def generalized_inner(x: _Mat, y: _Mat):  # noqa: F811 - overload
    """``ddot(x, y)`` (sum of entry products) for matrices."""
    return wp.ddot(x, y)


@wp.func
def generalized_inner(x: _Mat, y: _Vec):  # noqa: F811 - overload
    """``x y`` (matrix times vector)."""
    return x * y


@wp.kernel
def _axpy(x: wp.array(dtype=Any), y: wp.array(dtype=Any), alpha: Any, beta: Any):
    i = wp.tid()
    y[i] = alpha * y.dtype(x[i]) + beta * y[i]


def _scalar(t: Any) -> Any:
    return getattr(t, "_wp_scalar_type_", t)


def array_axpy(x: Any, y: Any, alpha: float = 1.0, beta: float = 1.0) -> None:
    """``y = alpha * x + beta * y`` for two arrays of the same shape (recorded on a tape).

    ``x`` may have another scalar type than ``y`` (``float32`` into ``float64``): its values are converted.

    Args:
        x: the added array.
        y: the updated array.
        alpha: factor of ``x``.
        beta: factor of ``y``.

    """
    if tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"array_axpy: x has shape {tuple(x.shape)}, y has {tuple(y.shape)}")
    if getattr(x.dtype, "_shape_", None) != getattr(y.dtype, "_shape_", None):
        raise TypeError(f"array_axpy: x has dtype {x.dtype.__name__}, y has {y.dtype.__name__} (different shapes)")
    if x.device != y.device:
        raise ValueError(f"array_axpy: x is on {x.device}, y on {y.device}")
    from ..runtime.recording import active_tape, suspend_tapes

    def flat(a: Any) -> Any:
        return a.flatten() if a.ndim > 1 else a

    def axpy(src: Any, dst: Any, a: float, b: float) -> None:
        S = _scalar(dst.dtype)
        wp.launch(_axpy, dim=src.size, inputs=[flat(src), flat(dst), S(a), S(b)], device=dst.device)

    tape = active_tape()
    # y is updated in place; its adjoint (linear in y) needs no old value, so the tape gets the adjoint directly
    with suspend_tapes():
        axpy(x, y, alpha, beta)
    if tape is not None and (x.requires_grad or y.requires_grad):
        def backward() -> None:
            if y.grad is None:
                return
            if x.grad is not None:
                axpy(y.grad, x.grad, alpha, 1.0)
            axpy(y.grad, y.grad, 0.0, beta)

        tape.record_func(backward, arrays=[x, y], name="array_axpy")


# ---------------------------------------------------------------------------------------------- QR, eigenvalues
@wp.func
def householder_qr_decomposition(A: _Mat):
    """QR decomposition of a square matrix by Householder reflections: ``(Q, R)`` with ``A = Q R``."""
    n = len(A)
    S = type(A[0, 0])
    Q = A - A
    for i in range(n):
        Q[i, i] = S(1.0)
    R = A
    for k in range(n - 1):
        norm = S(0.0)
        for i in range(k, n):
            norm += R[i, k] * R[i, k]
        norm = wp.sqrt(norm)
        if norm > S(0.0):
            alpha = wp.where(R[k, k] > S(0.0), -norm, norm)
            v = R[0] - R[0]
            for i in range(k, n):
                v[i] = R[i, k]
            v[k] = v[k] - alpha
            vv = wp.dot(v, v)
            if vv > S(0.0):
                H = A - A
                for i in range(n):
                    H[i, i] = S(1.0)
                H = H - (S(2.0) / vv) * wp.outer(v, v)
                R = H * R
                Q = Q * H
    return Q, R


@wp.func
def householder_make_hessenberg(A: _Mat):
    """Reduce a square matrix to upper Hessenberg form by similarity: ``(Q, H)`` with ``A = Q H Q^T``."""
    n = len(A)
    S = type(A[0, 0])
    Q = A - A
    for i in range(n):
        Q[i, i] = S(1.0)
    H = A
    for k in range(n - 2):
        norm = S(0.0)
        for i in range(k + 1, n):
            norm += H[i, k] * H[i, k]
        norm = wp.sqrt(norm)
        if norm > S(0.0):
            alpha = wp.where(H[k + 1, k] > S(0.0), -norm, norm)
            v = H[0] - H[0]
            for i in range(k + 1, n):
                v[i] = H[i, k]
            v[k + 1] = v[k + 1] - alpha
            vv = wp.dot(v, v)
            if vv > S(0.0):
                P = A - A
                for i in range(n):
                    P[i, i] = S(1.0)
                P = P - (S(2.0) / vv) * wp.outer(v, v)
                H = P * H * P
                Q = Q * P
    return Q, H


@wp.func
def solve_triangular(R: _Mat, b: _Vec):
    """Solve ``R x = b`` for an upper-triangular ``R`` by back substitution."""
    n = len(b)
    x = b - b
    for ii in range(n):
        i = n - 1 - ii
        acc = b[i]
        for j in range(i + 1, n):
            acc -= R[i, j] * x[j]
        x[i] = acc / R[i, i]
    return x


@wp.func
def inverse_qr(A: _Mat):
    """Inverse of a square matrix through its QR decomposition."""
    n = len(A)
    qr = householder_qr_decomposition(A)
    Q = qr[0]
    R = qr[1]
    inv = A - A
    for j in range(n):
        # A x = e_j  <=>  R x = Q^T e_j, the j-th row of Q
        col = solve_triangular(R, Q[j])
        for i in range(n):
            inv[i, j] = col[i]
    return inv


@wp.func
def symmetric_eigenvalues_qr(A: _Mat, tol: Any):
    """Eigenvalues and eigenvectors of a symmetric matrix.

    Returns ``(D, P)``: the vector of eigenvalues and the orthogonal matrix whose rows are the eigenvectors, so that
    ``transpose(P) * diag(D) * P == A``. Cyclic Jacobi rotations (which converge for any symmetric input, clustered
    eigenvalues included) run until the squared norm of the off-diagonal entries is at most ``tol``, for at most 32
    sweeps; ``tol = 0`` asks for full precision.
    """
    n = len(A)
    S = type(A[0, 0])
    P = A - A
    for i in range(n):
        P[i, i] = S(1.0)
    T = A
    for _sweep in range(32):
        off = S(0.0)
        for i in range(n):
            for j in range(n):
                if i != j:
                    off += T[i, j] * T[i, j]
        if off <= S(tol):
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = T[p, q]
                if apq != S(0.0):
                    theta = (T[q, q] - T[p, p]) / (S(2.0) * apq)
                    sgn = wp.where(theta >= S(0.0), S(1.0), S(-1.0))
                    t = sgn / (wp.abs(theta) + wp.sqrt(theta * theta + S(1.0)))
                    c = S(1.0) / wp.sqrt(t * t + S(1.0))
                    s = t * c
                    # T <- J^T T J, P <- J^T P with J the rotation of the (p, q) plane
                    for k in range(n):
                        tkp = T[k, p]
                        tkq = T[k, q]
                        T[k, p] = c * tkp - s * tkq
                        T[k, q] = s * tkp + c * tkq
                    for k in range(n):
                        tpk = T[p, k]
                        tqk = T[q, k]
                        T[p, k] = c * tpk - s * tqk
                        T[q, k] = s * tpk + c * tqk
                        ppk = P[p, k]
                        pqk = P[q, k]
                        P[p, k] = c * ppk - s * pqk
                        P[q, k] = s * ppk + c * pqk
                    T[p, q] = S(0.0)
                    T[q, p] = S(0.0)
    vals = A[0] - A[0]
    for i in range(n):
        vals[i] = T[i, i]
    return vals, P


@wp.func
def tridiagonal_symmetric_eigenvalues_qr(D: _Vec, L: _Vec, Q: _Mat, tol: Any):
    """Eigen-decomposition of ``Q^T T Q``, ``T`` a symmetric tridiagonal matrix.

    ``T`` has diagonal ``D`` and sub-diagonal ``L`` (``T[i + 1, i] = L[i]``; the last entry of ``L`` is unused).

    Returns ``(values, P)`` with ``transpose(P) * diag(values) * P == transpose(Q) * T * Q`` (pass the identity as
    ``Q`` to get the eigenvectors of ``T`` as the rows of ``P``).
    """
    n = len(D)
    A = Q - Q
    for i in range(n):
        A[i, i] = D[i]
        if i + 1 < n:
            A[i + 1, i] = L[i]
            A[i, i + 1] = L[i]
    r = symmetric_eigenvalues_qr(A, tol)
    return r[0], r[1] * Q
