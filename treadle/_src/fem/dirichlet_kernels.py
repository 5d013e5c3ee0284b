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
