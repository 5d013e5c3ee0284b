"""Linear operators for the iterative solvers: :class:`LinearOperator` and :func:`aslinearoperator`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import treadle as wp

from ...sparse.matrix import BsrMatrix
from ...sparse.products import bsr_mv
from .dot import flat_scalars


class LinearOperator:
    """A linear map given by its matrix-vector product, as the solvers of :mod:`treadle.optim.linear` use it.

    Args:
        shape: ``(rows, columns)`` of the operator in scalar degrees of freedom.
        dtype: type of the operator's elements (a scalar, or the block type of a sparse matrix).
        device: device of the computations.
        matvec: ``matvec(x, y, z, alpha, beta)`` storing ``alpha * (A @ x) + beta * y`` in ``z`` (``z`` may be
            ``y``); it receives arrays shaped like the solver's right-hand side.
        batch_offsets: int32 array of ``B + 1`` bounds splitting the scalar degrees of freedom into ``B``
            independent subproblems (the solvers then iterate them together, with per-subproblem coefficients, and
            stop when every one has converged); degrees of freedom past the last bound are inactive. ``None``: one
            problem.
        max_batch_length: upper bound of the subproblem sizes (kept with the operator; needs ``batch_offsets``).
    """

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: Any, matvec: Callable[..., Any],
                 batch_offsets: Any = None, max_batch_length: int | None = None) -> None:
        if batch_offsets is not None:
            if not isinstance(batch_offsets, wp.array) or batch_offsets.dtype != wp.int32 or batch_offsets.ndim != 1:
                raise TypeError("batch_offsets must be a one-dimensional int32 array")
            if batch_offsets.shape[0] < 1:
                raise ValueError("batch_offsets needs at least one entry")
        if max_batch_length is not None and batch_offsets is None:
            raise ValueError("max_batch_length requires batch_offsets")
        self._shape = tuple(int(s) for s in shape)
        self._dtype = dtype
        self._device = wp.get_device(device)
        self._matvec = matvec
        self._batch_offsets = batch_offsets
        self._max_batch_length = None if max_batch_length is None else int(max_batch_length)

    @property
    def shape(self) -> tuple[int, ...]:
        """``(rows, columns)`` in scalar degrees of freedom (``(n,)`` for an operator made from a diagonal array)."""
        return self._shape

    @property
    def dtype(self) -> Any:
        """Type of the operator's elements (a scalar or block type)."""
        return self._dtype

    @property
    def device(self) -> Any:
        """Device of the computations."""
        return self._device

    @property
    def matvec(self) -> Callable[..., Any]:
        """The product ``matvec(x, y, z, alpha, beta)``: ``z = alpha * (A @ x) + beta * y``."""
        return self._matvec

    @property
    def scalar_type(self) -> Any:
        """Scalar type of the operator's coefficients."""
        return wp.types.type_scalar_type(self._dtype)

    @property
    def batch_offsets(self) -> Any:
        """Bounds of the subproblems in scalar degrees of freedom, or ``None``."""
        return self._batch_offsets

    @property
    def batch_count(self) -> int:
        """Number of subproblems (1 without ``batch_offsets``)."""
        return 1 if self._batch_offsets is None else int(self._batch_offsets.shape[0]) - 1

    @property
    def max_batch_length(self) -> int | None:
        """Upper bound of the subproblem sizes, or ``None``."""
        return self._max_batch_length

    def __repr__(self) -> str:
        return f"LinearOperator(shape={self._shape}, dtype={getattr(self._dtype, '__name__', self._dtype)})"


@wp.kernel
def _dense_matvec(A: wp.array2d(dtype=Any), x: wp.array(dtype=Any), y: wp.array(dtype=Any),
                  z: wp.array(dtype=Any), alpha: Any, beta: Any, read_y: int):
    i = wp.tid()
    acc = z.dtype(0.0)
    for j in range(A.shape[1]):
        acc += A[i, j] * x[j]
    if read_y != 0:
        z[i] = alpha * acc + beta * y[i]
    else:
        z[i] = alpha * acc


@wp.kernel
def _diag_matvec(d: wp.array(dtype=Any), x: wp.array(dtype=Any), y: wp.array(dtype=Any), z: wp.array(dtype=Any),
                 alpha: Any, beta: Any, read_y: int):
    i = wp.tid()
    if read_y != 0:
        z[i] = alpha * d[i] * x[i] + beta * y[i]
    else:
        z[i] = alpha * d[i] * x[i]


def _check_vector(name: str, v: Any, n: int, scalar: Any) -> Any:
    if not isinstance(v, wp.array):
        raise TypeError(f"matvec: {name} must be a treadle array, got {type(v).__name__}")
    f = flat_scalars(v)
    if f.shape[0] != n:
        raise ValueError(f"matvec: {name} has {f.shape[0]} scalar entries, the operator needs {n}")
    if f.dtype != scalar:
        raise ValueError(f"matvec: {name} has scalars of {f.dtype.__name__}, the operator "
                         f"{getattr(scalar, '__name__', scalar)}")
    return f


def _dense_operator(A: Any) -> Callable[..., Any]:
    scalar = A.dtype
    n_rows, n_cols = int(A.shape[0]), int(A.shape[1])

    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        fx = _check_vector("x", x, n_cols, scalar)
        fy = _check_vector("y", y, n_rows, scalar)
        fz = _check_vector("z", z, n_rows, scalar)
        if fz.ptr == fx.ptr:
            fx = wp.clone(fx)
        wp.launch(_dense_matvec, n_rows, device=A.device,
                  inputs=[A, fx, fy, fz, scalar(alpha), scalar(beta), int(float(beta) != 0.0)])

    return matvec


def _diag_operator(d: Any) -> Callable[..., Any]:
    fd = flat_scalars(d)
    scalar = fd.dtype
    n = int(fd.shape[0])

    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        fx = _check_vector("x", x, n, scalar)
        fy = _check_vector("y", y, n, scalar)
        fz = _check_vector("z", z, n, scalar)
        wp.launch(_diag_matvec, n, device=d.device,
                  inputs=[fd, fx, fy, fz, scalar(alpha), scalar(beta), int(float(beta) != 0.0)])

    return matvec


def _bsr_operator(A: BsrMatrix) -> Callable[..., Any]:
    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        if float(beta) != 0.0 and y.ptr != z.ptr:
            wp.copy(z, y)
        bsr_mv(A, x, z, alpha=alpha, beta=beta)

    return matvec


def aslinearoperator(A: Any, batch_offsets: Any = None, max_batch_length: int | None = None) -> LinearOperator:
    """``A`` as a :class:`LinearOperator`.

    ``A`` is a :class:`treadle.sparse.BsrMatrix`, a two-dimensional array (a dense matrix), a one-dimensional array
    (a diagonal matrix, applied entry by entry; vector entries are applied component by component) or a
    :class:`LinearOperator` (returned as it is; the batch arguments are then ignored).

    Args:
        A: the matrix.
        batch_offsets: bounds of independent subproblems (see :class:`LinearOperator`).
        max_batch_length: upper bound of the subproblem sizes; needs ``batch_offsets``.
    """
    if isinstance(A, LinearOperator):
        return A
    if max_batch_length is not None and batch_offsets is None:
        raise ValueError("aslinearoperator(): max_batch_length requires batch_offsets")
    if isinstance(A, BsrMatrix):
        return LinearOperator(A.shape, A.dtype, A.device, _bsr_operator(A), batch_offsets, max_batch_length)
    if isinstance(A, wp.array):
        if A.ndim == 2:
            if not wp.types.type_is_scalar(A.dtype):
                raise TypeError(f"aslinearoperator(): a dense matrix must hold scalars, got {A.dtype.__name__}")
            return LinearOperator(A.shape, A.dtype, A.device, _dense_operator(A), batch_offsets, max_batch_length)
        if A.ndim == 1:
            return LinearOperator(A.shape, A.dtype, A.device, _diag_operator(A), batch_offsets, max_batch_length)
        raise ValueError(f"aslinearoperator(): an array operator must be 1-d (diagonal) or 2-d (dense), got "
                         f"{A.ndim} dimensions")
    raise TypeError(f"aslinearoperator(): cannot make a linear operator from {type(A).__name__}; pass a BsrMatrix, "
                    "a 1-d or 2-d array, or a LinearOperator")
