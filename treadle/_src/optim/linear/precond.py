"""Preconditioners: :func:`preconditioner` (Jacobi, absolute Jacobi, block Jacobi by three factorisations).

A Jacobi preconditioner multiplies each scalar degree of freedom by the inverse of the matrix's diagonal
coefficient (1 where that coefficient is 0). A block-Jacobi preconditioner multiplies each block row by the inverse
of its diagonal block, computed by one kernel thread per block: LU with partial pivoting (``"block_jacobi_direct"``),
an LDLᵀ factorisation (``"block_jacobi_sequential"``, symmetric positive-definite blocks) or a Cholesky
factorisation (``"block_jacobi_tile"``); a block the factorisation cannot handle (singular, or not symmetric
positive-definite where that is required) is replaced by the identity.
"""

from __future__ import annotations

from typing import Any

import treadle as wp

from ...sparse.diag import get_diag
from ...sparse.matrix import BsrMatrix, scalar_view
from .dot import flat_scalars
from .fsai import FSAI
from .operator import LinearOperator, _diag_operator


@wp.kernel(enable_backward=False)
def _inverse_diag(diag: wp.array3d(dtype=Any), use_abs: int, out: wp.array(dtype=Any)):
    # diag: the diagonal blocks (n, bs, bs); out: one inverse diagonal coefficient per scalar dof
    i = wp.tid()
    bs = diag.shape[1]
    r = i / bs
    k = i - r * bs
    a = diag[r, k, k]
    if use_abs != 0:
        a = wp.abs(a)
    if a == out.dtype(0.0):
        out[i] = out.dtype(1.0)
    else:
        out[i] = out.dtype(1.0) / a


@wp.kernel(enable_backward=False)
def _dense_diag(A: wp.array2d(dtype=Any), use_abs: int, out: wp.array(dtype=Any)):
    i = wp.tid()
    a = A[i, i]
    if use_abs != 0:
        a = wp.abs(a)
    if a == out.dtype(0.0):
        out[i] = out.dtype(1.0)
    else:
        out[i] = out.dtype(1.0) / a


@wp.func
def _set_identity(inv: wp.array3d(dtype=Any), r: int, bs: int):
    for i in range(bs):
        for j in range(bs):
            if i == j:
                inv[r, i, j] = inv.dtype(1.0)
            else:
                inv[r, i, j] = inv.dtype(0.0)


@wp.kernel(enable_backward=False)
def _invert_lu(blocks: wp.array3d(dtype=Any), work: wp.array3d(dtype=wp.float64), inv: wp.array3d(dtype=Any)):
    # Gauss-Jordan elimination with partial pivoting on [A | I] (float64 work rows)
    r = wp.tid()
    bs = blocks.shape[1]
    scale = wp.float64(0.0)
    for i in range(bs):
        for j in range(bs):
            a = wp.float64(blocks[r, i, j])
            work[r, i, j] = a
            scale = wp.max(scale, wp.abs(a))
            if i == j:
                work[r, i, bs + j] = wp.float64(1.0)
            else:
                work[r, i, bs + j] = wp.float64(0.0)
    singular = scale == wp.float64(0.0)
    eps = wp.float64(1.0e-12) * scale * wp.float64(bs)
    for c in range(bs):
        if singular:
            break
        p = c
        best = wp.abs(work[r, c, c])
        for i in range(c + 1, bs):
            v = wp.abs(work[r, i, c])
            if v > best:
                best = v
                p = i
        if best <= eps:
            singular = True
            break
        if p != c:
            for j in range(2 * bs):
                t = work[r, c, j]
                work[r, c, j] = work[r, p, j]
                work[r, p, j] = t
        piv = work[r, c, c]
        for j in range(2 * bs):
            work[r, c, j] = work[r, c, j] / piv
        for i in range(bs):
            if i != c:
                f = work[r, i, c]
                if f != wp.float64(0.0):
                    for j in range(2 * bs):
                        work[r, i, j] = work[r, i, j] - f * work[r, c, j]
    if singular:
        _set_identity(inv, r, bs)
        return
    for i in range(bs):
        for j in range(bs):
            inv[r, i, j] = inv.dtype(work[r, i, bs + j])


@wp.kernel(enable_backward=False)
def _invert_spd(blocks: wp.array3d(dtype=Any), work: wp.array3d(dtype=wp.float64), use_ldl: int,
                inv: wp.array3d(dtype=Any)):
    # Cholesky (L L^T) or LDL^T factorisation of a symmetric positive-definite block, then its inverse by solving
    # against the identity; the identity when the block is not symmetric positive-definite
    r = wp.tid()
    bs = blocks.shape[1]
    scale = wp.float64(0.0)
    for i in range(bs):
        for j in range(bs):
            scale = wp.max(scale, wp.abs(wp.float64(blocks[r, i, j])))
    ok = scale > wp.float64(0.0)
    tol = wp.float64(1.0e-10) * scale
    for i in range(bs):
        for j in range(i + 1, bs):
            if wp.abs(wp.float64(blocks[r, i, j]) - wp.float64(blocks[r, j, i])) > tol:
                ok = False
    # L in work[:, :, :bs] (unit lower for LDL^T), D in work[:, i, bs]
    for j in range(bs):
        if not ok:
            break
        d = wp.float64(blocks[r, j, j])
        for k in range(j):
            if use_ldl != 0:
                d -= work[r, j, k] * work[r, j, k] * work[r, k, bs]
            else:
                d -= work[r, j, k] * work[r, j, k]
        if d <= wp.float64(1.0e-14) * scale:
            ok = False
            break
        if use_ldl != 0:
            work[r, j, bs] = d
            work[r, j, j] = wp.float64(1.0)
        else:
            work[r, j, j] = wp.sqrt(d)
        for i in range(j + 1, bs):
            s = wp.float64(blocks[r, i, j])
            for k in range(j):
                if use_ldl != 0:
                    s -= work[r, i, k] * work[r, j, k] * work[r, k, bs]
                else:
                    s -= work[r, i, k] * work[r, j, k]
            if use_ldl != 0:
                work[r, i, j] = s / d
            else:
                work[r, i, j] = s / work[r, j, j]
    if not ok:
        _set_identity(inv, r, bs)
        return
    # columns of the inverse: solve L (D) L^T x = e_c
    for c in range(bs):
        for i in range(bs):
            s = wp.float64(0.0)
            if i == c:
                s = wp.float64(1.0)
            for k in range(i):
                s -= work[r, i, k] * work[r, k, bs + 1]
            if use_ldl != 0:
                work[r, i, bs + 1] = s
            else:
                work[r, i, bs + 1] = s / work[r, i, i]
        if use_ldl != 0:
            for i in range(bs):
                work[r, i, bs + 1] = work[r, i, bs + 1] / work[r, i, bs]
        for ii in range(bs):
            i = bs - 1 - ii
            s = work[r, i, bs + 1]
            for k in range(i + 1, bs):
                s -= work[r, k, i] * work[r, k, bs + 1]
            if use_ldl == 0:
                s = s / work[r, i, i]
            work[r, i, bs + 1] = s
        for i in range(bs):
            inv[r, i, c] = inv.dtype(work[r, i, bs + 1])


@wp.kernel(enable_backward=False)
def _block_apply(inv: wp.array3d(dtype=Any), x: wp.array(dtype=Any), y: wp.array(dtype=Any),
                 z: wp.array(dtype=Any), alpha: Any, beta: Any, read_y: int):
    # z = alpha * blockdiag(inv) x + beta y over flat scalars
    i = wp.tid()
    bs = inv.shape[1]
    r = i / bs
    k = i - r * bs
    acc = z.dtype(0.0)
    for j in range(bs):
        acc += inv[r, k, j] * x[r * bs + j]
    if read_y != 0:
        z[i] = alpha * acc + beta * y[i]
    else:
        z[i] = alpha * acc


def _jacobi(A: Any, use_abs: bool) -> LinearOperator:
    if isinstance(A, BsrMatrix):
        r, c = A.block_shape
        if A.nrow != A.ncol or r != c:
            raise ValueError(f"preconditioner(): a diagonal preconditioner needs a square matrix of square blocks, got "
                             f"{A.nrow} x {A.ncol} blocks of {r} x {c}")
        diag = get_diag(A, None, 1.0)
        n = A.nrow * r
        d = wp.empty(n, dtype=A.scalar_type, device=A.device)
        if n > 0:
            wp.launch(_inverse_diag, n, inputs=[scalar_view(diag), int(use_abs), d], device=A.device)
        return LinearOperator(A.shape, A.dtype, A.device, _diag_operator(d))
    if isinstance(A, wp.array) and A.ndim == 2:
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"preconditioner(): a diagonal preconditioner needs a square matrix, got shape {A.shape}")
        d = wp.empty(A.shape[0], dtype=A.dtype, device=A.device)
        if A.shape[0] > 0:
            wp.launch(_dense_diag, A.shape[0], inputs=[A, int(use_abs), d], device=A.device)
        return LinearOperator(A.shape, A.dtype, A.device, _diag_operator(d))
    if isinstance(A, wp.array) and A.ndim == 1:
        fa = flat_scalars(A)
        d = wp.empty(fa.shape[0], dtype=fa.dtype, device=A.device)
        if fa.shape[0] > 0:
            wp.launch(_dense_diag_1d, fa.shape[0], inputs=[fa, int(use_abs), d], device=A.device)
        return LinearOperator(A.shape, A.dtype, A.device, _diag_operator(d))
    raise ValueError(f"preconditioner(): cannot build a diagonal preconditioner from {type(A).__name__}; pass a "
                     "BsrMatrix or an array (a LinearOperator does not expose its diagonal)")


@wp.kernel(enable_backward=False)
def _dense_diag_1d(a: wp.array(dtype=Any), use_abs: int, out: wp.array(dtype=Any)):
    i = wp.tid()
    v = a[i]
    if use_abs != 0:
        v = wp.abs(v)
    if v == out.dtype(0.0):
        out[i] = out.dtype(1.0)
    else:
        out[i] = out.dtype(1.0) / v


def _block_jacobi(A: Any, ptype: str) -> LinearOperator:
    if not isinstance(A, BsrMatrix):
        raise ValueError(f"preconditioner(): {ptype!r} needs a BsrMatrix, got {type(A).__name__}")
    r, c = A.block_shape
    if A.nrow != A.ncol or r != c:
        raise ValueError(f"preconditioner(): {ptype!r} needs a square matrix of square blocks, got {A.nrow} x "
                         f"{A.ncol} blocks of {r} x {c}")
    if ptype == "block_jacobi_tile" and A.scalar_type not in (wp.float32, wp.float64):
        raise ValueError(f"preconditioner(): 'block_jacobi_tile' needs float32 or float64 coefficients, got "
                         f"{A.scalar_type.__name__}")
    if r == 1:
        return _jacobi(A, use_abs=False)
    device = A.device
    diag = scalar_view(get_diag(A, None, 1.0))
    inv = wp.empty((A.nrow, r, r), dtype=A.scalar_type, device=device)
    work = wp.zeros((A.nrow, r, 2 * r + 2), dtype=wp.float64, device=device)
    if A.nrow > 0:
        if ptype == "block_jacobi_direct":
            wp.launch(_invert_lu, A.nrow, inputs=[diag, work, inv], device=device)
        else:
            inv.zero_()
            wp.launch(_invert_spd, A.nrow, inputs=[diag, work, int(ptype == "block_jacobi_sequential"), inv],
                      device=device)
    n = A.nrow * r
    scalar = A.scalar_type

    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        fx, fy, fz = flat_scalars(x), flat_scalars(y), flat_scalars(z)
        if fz.ptr == fx.ptr:
            fx = wp.clone(fx)
        wp.launch(_block_apply, n, device=device,
                  inputs=[inv, fx, fy, fz, scalar(alpha), scalar(beta), int(float(beta) != 0.0)])

    return LinearOperator(A.shape, A.dtype, device, matvec)


_TYPES = ("diag", "diag_abs", "block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile", "fsai", "id")


def preconditioner(A: Any, ptype: str = "diag") -> LinearOperator | None:
    """A preconditioner for ``A``, as a :class:`LinearOperator` to pass as ``M`` to the solvers.

    Args:
        A: the matrix: a :class:`treadle.sparse.BsrMatrix` or an array (2-d dense, or 1-d diagonal for the Jacobi
            variants).
        ptype: the kind of preconditioner:

            - ``"diag"``: Jacobi, the inverse of the diagonal (1 where a diagonal coefficient is 0);
            - ``"diag_abs"``: the inverse of the absolute values of the diagonal;
            - ``"block_jacobi_direct"``: the inverse of each diagonal block, by LU factorisation with partial
              pivoting (a singular block becomes the identity);
            - ``"block_jacobi_sequential"``: the same by LDLᵀ factorisation (symmetric positive-definite blocks; others
              become the identity);
            - ``"block_jacobi_tile"``: the same by Cholesky factorisation (float32 or float64 coefficients);
            - ``"fsai"``: the adaptive factorised sparse approximate inverse of a symmetric positive-definite
              BsrMatrix with its default options (use :class:`FSAI` to choose them);
            - ``"id"``: no preconditioner (returns ``None``).

            The block variants need a square BsrMatrix with square blocks, and are the diagonal one for 1x1 blocks.

    Returns:
        The preconditioner, or ``None`` for ``"id"``.

    Raises:
        ValueError: an unknown ``ptype``, or a matrix the chosen kind cannot handle.
        TypeError: ``ptype="fsai"`` with a matrix that is not a float16/float32/float64 BsrMatrix.
    """
    if ptype == "id":
        return None
    if ptype in ("diag", "diag_abs"):
        return _jacobi(A, use_abs=ptype == "diag_abs")
    if ptype in ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile"):
        return _block_jacobi(A, ptype)
    if ptype == "fsai":
        return FSAI(A)
    raise ValueError(f"Unsupported preconditioner type {ptype!r}; expected one of {', '.join(map(repr, _TYPES))}")
