"""Lazy matrix expressions (``alpha * A``, ``A.transpose()`` of a scaled matrix); the operators are in :mod:`.operators`.

``2.0 * A``, ``A / 3``, ``-A`` make a :class:`BsrExpression`: nothing is computed until it is used, and the
functions that take matrices fold the scale into their own coefficients (``bsr_mv(2 * A, x)`` is one product).
``A + B``, ``A - B`` and ``A @ B`` make new matrices; ``A += B``, ``A -= B``, ``A *= s`` and ``A @= B`` update
``A``; ``A @ x`` and ``x @ A`` (``x`` an array) are matrix-vector products.
"""

from __future__ import annotations

import numbers
import typing
from typing import Any

import numpy as np

import treadle as wp

from .matrix import BsrMatrix, BsrTypeError, MatrixOperators, operation, transposed_block_type, type_name


def is_scalar(x: Any) -> bool:
    """Whether ``x`` is a number usable as a matrix coefficient."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (numbers.Number, np.number)):
        return True
    return wp.types.type_is_scalar(type(x)) and hasattr(x, "value")


def number(x: Any) -> Any:
    """The Python value of a coefficient (a Treadle scalar gives its ``value``)."""
    return x.value if hasattr(x, "value") and not isinstance(x, (numbers.Number, np.number)) else x


_BlockType = typing.TypeVar("_BlockType")


class BsrExpression(MatrixOperators, typing.Generic[_BlockType]):
    """A scaled, possibly transposed, :class:`BsrMatrix` evaluated lazily.

    Accepted wherever the functions of :mod:`treadle.sparse` take a read-only matrix. :meth:`eval` makes a matrix.

    Attributes:
        mat: the underlying matrix.
        scale: the factor applied to it.
        transposed: whether the expression is the transpose of ``scale * mat``.
    """

    def __init__(self, mat: BsrMatrix, scale: Any = 1.0, transposed: bool = False) -> None:
        self.mat = mat
        self.scale = scale
        self.transposed = transposed

    @property
    def nrow(self) -> int:
        """Number of rows of blocks."""
        return self.mat.ncol if self.transposed else self.mat.nrow

    @property
    def ncol(self) -> int:
        """Number of columns of blocks."""
        return self.mat.nrow if self.transposed else self.mat.ncol

    @property
    def nnz(self) -> int:
        """Upper bound of the stored blocks of the underlying matrix."""
        return self.mat.nnz

    @property
    def block_shape(self) -> tuple[int, int]:
        """Shape of one block."""
        r, c = self.mat.block_shape
        return (c, r) if self.transposed else (r, c)

    @property
    def shape(self) -> tuple[int, int]:
        """Shape in coefficients."""
        r, c = self.mat.shape
        return (c, r) if self.transposed else (r, c)

    @property
    def dtype(self) -> Any:
        """Block type."""
        if self.transposed:
            return transposed_block_type(self.mat.dtype)
        return self.mat.dtype

    @property
    def scalar_type(self) -> Any:
        """Scalar type of the coefficients."""
        return self.mat.scalar_type

    @property
    def block_size(self) -> int:
        """Coefficients per block."""
        return self.mat.block_size

    @property
    def device(self) -> Any:
        """Device of the underlying matrix."""
        return self.mat.device

    @property
    def requires_grad(self) -> bool:
        """Whether the underlying matrix's values have a gradient."""
        return self.mat.requires_grad

    @property
    def offsets(self) -> Any:
        """The underlying matrix's offsets (of the untransposed matrix)."""
        return self.mat.offsets

    @property
    def columns(self) -> Any:
        """The underlying matrix's columns (of the untransposed matrix)."""
        return self.mat.columns

    @property
    def row_counts(self) -> Any:
        """The underlying matrix's row counts (of the untransposed matrix)."""
        return self.mat.row_counts

    def eval(self) -> BsrMatrix:
        """A new matrix holding the expression's value."""
        if self.transposed:
            return operation("transposed")(self.mat, self.scale)
        return operation("bsr_copy")(self)

    def transpose(self) -> BsrExpression:
        """The transposed expression (still lazy)."""
        return BsrExpression(self.mat, self.scale, not self.transposed)

    def __repr__(self) -> str:
        t = ".T" if self.transposed else ""
        return f"BsrExpression({self.scale!r} * {self.mat!r}{t})"


def as_operand(x: Any, fn: str, name: str) -> tuple[BsrMatrix, Any]:
    """``(matrix, scale)`` for a matrix or expression argument (a transposed expression is evaluated first)."""
    if isinstance(x, BsrMatrix):
        return x, 1.0
    if isinstance(x, BsrExpression):
        if x.transposed:
            return operation("transposed")(x.mat), x.scale
        return x.mat, x.scale
    raise BsrTypeError(f"{fn}(): {name} must be a BsrMatrix or a matrix expression (such as 2.0 * A), got "
                       f"{type(x).__name__}")


def as_linear(x: Any, fn: str, name: str) -> tuple[BsrMatrix, Any, bool]:
    """``(matrix, scale, transposed)`` for a matrix or expression argument (nothing evaluated)."""
    if isinstance(x, BsrMatrix):
        return x, 1.0, False
    if isinstance(x, BsrExpression):
        return x.mat, x.scale, x.transposed
    raise BsrTypeError(f"{fn}(): {name} must be a BsrMatrix or a matrix expression (such as 2.0 * A), got "
                       f"{type(x).__name__}")


def scaled(x: Any, s: Any) -> BsrExpression:
    """``s * x`` as an expression."""
    if isinstance(x, BsrExpression):
        return BsrExpression(x.mat, number(x.scale) * number(s), x.transposed)
    return BsrExpression(x, number(s))


def describe(x: Any) -> str:
    """A short description of a matrix operand for error messages."""
    if isinstance(x, (BsrMatrix, BsrExpression)):
        return f"{x.nrow} x {x.ncol} blocks of {type_name(x.dtype)}"
    return type(x).__name__

