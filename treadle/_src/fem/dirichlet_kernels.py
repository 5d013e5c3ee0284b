"""Kernels of projector normalization.

A diagonal block of a projector assembled from ``u . v`` terms is ``w Q`` with ``Q`` an orthogonal projector (the
identity for full Dirichlet conditions, ``n n^T`` for slip conditions) and ``w > 0`` a quadrature weight. Then
``B^2 = w B``, so ``w = trace(B^2) / trace(B)``, and dividing the row by ``w`` makes the block ``Q``: idempotent.
"""

import typing
from typing import Any

import treadle as wp

_Mat = wp.types.matrix(shape=(typing.Any, typing.Any), dtype=wp.Float)


@wp.func
def block_weight(b: wp.Float):
    return b


@wp.func
def block_weight(b: _Mat):  # noqa: F811 - overload
    t = wp.trace(b)
    if t == type(t)(0.0):
        return t
    return wp.ddot(b, wp.transpose(b)) / t


@wp.kernel
def _normalize(offsets: wp.array(dtype=int), columns: wp.array(dtype=int), values: wp.array(dtype=Any),
               fixed: wp.array(dtype=Any), has_fixed: int):
    row = wp.tid()
    beg = offsets[row]
    end = offsets[row + 1]
    if end > beg:  # an empty row (possibly of a matrix without any block) has no diagonal block to read
        w = block_weight(values[beg] - values[beg])
        for k in range(beg, end):
            if columns[k] == row:
                w = block_weight(values[k])
        if w != type(w)(0.0):
            inv = type(w)(1.0) / w
            for k in range(beg, end):
                values[k] = values[k] * inv
            if has_fixed != 0:
                fixed[row] = fixed[row] * inv


def normalize_projector(P: Any, fixed_value: Any) -> None:
    """Divide each row of ``P`` (and ``fixed_value``) by the weight of its diagonal block."""
    if P.nrow != P.ncol:
        raise ValueError(f"normalize_dirichlet_projector: the projector is {P.nrow}x{P.ncol} blocks; it must be square")
    if P.nrow == 0:
        return
    fixed = fixed_value
    if fixed is None:
        fixed = wp.zeros(1, dtype=wp.types.vector(P.block_shape[0], P.scalar_type) if P.block_shape[0] > 1 else
                         P.scalar_type, device=P.device)
    elif fixed.shape[0] != P.nrow:
        raise ValueError(f"normalize_dirichlet_projector: fixed_value has {fixed.shape[0]} entries, the projector "
                         f"{P.nrow} rows")
    wp.launch(_normalize, dim=P.nrow, inputs=[P.offsets, P.columns, P.values, fixed, 0 if fixed_value is None else 1],
              device=P.device)


@wp.kernel
def _diagonal_projector_check(p_offsets: wp.array(dtype=int), p_columns: wp.array(dtype=int),
                              a_offsets: wp.array(dtype=int), a_columns: wp.array(dtype=int),
                              bad: wp.array(dtype=int)):
    row = wp.tid()
    beg = p_offsets[row]
    end = p_offsets[row + 1]
    for k in range(beg, end):
        if p_columns[k] != row:
            bad[0] = 1
    if end > beg:
        found = 0
        for k in range(a_offsets[row], a_offsets[row + 1]):
            if a_columns[k] == row:
                found = 1
        if found == 0:
            bad[0] = 1


def _project_kernel(block_type: Any) -> Any:
    """``A_rc <- (I - D_r) A_rc (I - D_c) (+ D_r on the diagonal)`` for the block diagonal ``D`` of a projector."""
    k = _PROJECT.get(block_type)
    if k is not None:
        return k
    B = block_type
    shape = getattr(B, "_shape_", None)
    if shape is None:
        def one() -> B:
            return B(1.0)
    else:
        N = shape[0]
        S = B._wp_scalar_type_

        def one() -> B:
            return wp.identity(n=N, dtype=S)

    from . import codegen

    one_f = codegen.func(one, "dirichlet_one", codegen.type_key(B))

    def project_diagonal(offsets: wp.array(dtype=int), columns: wp.array(dtype=int), values: wp.array(dtype=B),
                         diag: wp.array(dtype=B)):
        row = wp.tid()
        d_row = diag[row]
        keep_row = one_f() - d_row
        for k in range(offsets[row], offsets[row + 1]):
            col = columns[k]
            v = keep_row * values[k] * (one_f() - diag[col])
            if col == row:
                v = v + d_row
            values[k] = v

    k = _PROJECT[block_type] = codegen.kernel(project_diagonal, key=f"project_diagonal_{codegen.digest(codegen.type_key(B))}")
    return k


_PROJECT: dict[Any, Any] = {}


def project_with_diagonal_projector(A: Any, P: Any) -> bool:
    """``A <- (I - P) A (I - P) + P`` in place, keeping the pattern of ``A``, when ``P`` is block diagonal.

    Returns ``False`` (and does nothing) when ``P`` has off-diagonal blocks or ``A`` lacks a diagonal block of a
    row ``P`` constrains.
    """
    import treadle.sparse as sp

    if A.nrow == 0:
        return True
    if A.values.dtype != P.values.dtype:
        return False
    bad = wp.zeros(1, dtype=int, device=A.device)
    wp.launch(_diagonal_projector_check, dim=P.nrow, inputs=[P.offsets, P.columns, A.offsets, A.columns, bad],
              device=A.device)
    if int(bad.numpy()[0]) != 0:
        return False
    diag = sp.bsr_get_diag(P)
    wp.launch(_project_kernel(A.values.dtype), dim=A.nrow, inputs=[A.offsets, A.columns, A.values, diag],
              device=A.device)
    return True
