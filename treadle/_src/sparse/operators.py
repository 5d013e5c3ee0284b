"""The matrix operators (``+``, ``-``, ``@``, ``*``, ``/``, unary ``-``, and the in-place ``+=``, ``-=``, ``*=``, ``@=``).

``2.0 * A``, ``A / 3``, ``-A`` make a lazy :class:`~.expressions.BsrExpression`; ``A + B``, ``A - B`` and
``A @ B`` make new matrices; the in-place forms update ``A``; ``A @ x`` and ``x @ A`` (``x`` an array) are
matrix-vector products. :class:`~.matrix.BsrMatrix` delegates to these functions through the registry of
:mod:`.matrix` (filled at the end of this module), so that the matrix module imports none of the operations.
"""

from __future__ import annotations

from typing import Any

import treadle as wp

from .axpy import bsr_axpy
from .diag import scale
from .expressions import BsrExpression, is_scalar, number, scaled
from .matrix import BsrMatrix, register_operations
from .products import bsr_mm, bsr_mv
from .transpose import bsr_copy, bsr_transposed, transposed


def add(x: Any, y: Any, sign: float) -> Any:
    if not isinstance(y, (BsrMatrix, BsrExpression)):
        return NotImplemented
    z = x.eval() if isinstance(x, BsrExpression) else bsr_copy(x)
    return bsr_axpy(y, z, alpha=sign)


def matmul(x: Any, y: Any) -> Any:
    if isinstance(y, (BsrMatrix, BsrExpression)):
        return bsr_mm(x, y)
    if isinstance(y, wp.array):
        return bsr_mv(x, y)
    return NotImplemented


def rmatmul(x: Any, y: Any) -> Any:
    # y @ x with y an array: the transposed product
    if isinstance(y, wp.array):
        return bsr_mv(x, y, transpose=True)
    return NotImplemented


def mul(x: Any, s: Any) -> Any:
    if is_scalar(s):
        return scaled(x, s)
    return NotImplemented


def truediv(x: Any, s: Any) -> Any:
    if is_scalar(s):
        return scaled(x, 1.0 / number(s))
    return NotImplemented


def neg(x: Any) -> Any:
    return scaled(x, -1.0)


def iadd(x: BsrMatrix, y: Any) -> Any:
    if not isinstance(y, (BsrMatrix, BsrExpression)):
        return NotImplemented
    return bsr_axpy(y, x)


def isub(x: BsrMatrix, y: Any) -> Any:
    if not isinstance(y, (BsrMatrix, BsrExpression)):
        return NotImplemented
    return bsr_axpy(y, x, alpha=-1.0)


def imul(x: BsrMatrix, s: Any) -> Any:
    if not is_scalar(s):
        return NotImplemented
    scale(x, number(s))
    return x


def imatmul(x: BsrMatrix, y: Any) -> Any:
    if not isinstance(y, (BsrMatrix, BsrExpression)):
        return NotImplemented
    return bsr_mm(x, y, x)


register_operations(add=add, matmul=matmul, rmatmul=rmatmul, mul=mul, truediv=truediv, neg=neg, iadd=iadd,
                    isub=isub, imul=imul, imatmul=imatmul, bsr_transposed=bsr_transposed, transposed=transposed,
                    bsr_copy=bsr_copy)
