"""Zero, identity and (block-)diagonal matrices, diagonal extraction and scaling."""

from __future__ import annotations

from typing import Any, Literal

import treadle as wp

from .gather import scale_slots
from .matrix import (
    BsrError,
    BsrMatrix,
    BsrTypeError,
    block_shape_of,
    check_block_type,
    check_devices,
    check_topology,
    new_matrix,
    no_tape,
    reserve,
    row_end_args,
    scalar_of,
    set_padded_offsets,
    type_name,
)
from .topology import _dummy


@wp.kernel(enable_backward=False)
def _retained_capacity(old_offsets: wp.array(dtype=int), old_nrow: int, nrow: int, counts: wp.array(dtype=int)):
    r = wp.tid()
    c = 0
    if r < nrow and r < old_nrow:
        c = old_offsets[r + 1] - old_offsets[r]
    counts[r] = c


@wp.kernel(enable_backward=False)
def _diag_topology(ndiag: int, offsets: wp.array(dtype=int), columns: wp.array(dtype=int)):
    r = wp.tid()
    offsets[r] = wp.min(r, ndiag)
    if r < ndiag:
        columns[r] = r


@wp.kernel
def _diag_from_array(diag: wp.array(dtype=Any), values: wp.array(dtype=Any)):
    r = wp.tid()
    values[r] = values.dtype(diag[r])


@wp.kernel
def _diag_from_value(diag: Any, values: wp.array(dtype=Any)):
    values[wp.tid()] = diag


@wp.kernel
def _get_diag(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int,
              columns: wp.array(dtype=int), values: wp.array(dtype=Any), alpha: Any, out: wp.array(dtype=Any)):
    r = wp.tid()
    b = offsets[r]
    e = offsets[r + 1]
    if has_counts != 0:
        e = b + counts[r]
    acc = out.dtype(0.0)
    for k in range(b, e):
        if columns[k] == r:
            acc += values[k]
    out[r] = alpha * acc


@wp.kernel(enable_backward=False)
def _zero_values(values: wp.array(dtype=Any)):
    values[wp.tid()] = values.dtype(0.0)


def _resize(bsr: BsrMatrix, rows: int | None, cols: int | None) -> tuple[int, int]:
    nrow = bsr.nrow if rows is None else int(rows)
    ncol = bsr.ncol if cols is None else int(cols)
    if nrow < 0 or ncol < 0:
        raise BsrError(f"the numbers of rows and columns of blocks must be non-negative, got {nrow} x {ncol}")
    return nrow, ncol


def bsr_set_zero(bsr: BsrMatrix, rows_of_blocks: int | None = None, cols_of_blocks: int | None = None, *,
                 topology: Literal["compact", "padded", "masked"] = "compact", row_capacity: Any = None,
                 nnz_capacity: int | None = None) -> None:
    """Make ``bsr`` the zero matrix, optionally changing its number of rows and columns of blocks.

    Args:
        bsr: the matrix.
        rows_of_blocks: new number of rows of blocks (default: unchanged).
        cols_of_blocks: new number of columns of blocks (default: unchanged).
        topology: ``"compact"`` (drop every stored block), ``"padded"`` (keep each retained row's capacity, or
            lay out ``row_capacity``, with every row empty) or ``"masked"`` (keep the active blocks, zero their
            values; the size cannot change).
        row_capacity: with ``"padded"``, the new capacity of every row (an integer) or of each row (an int32
            array of ``rows_of_blocks`` entries). ``None`` keeps the capacity of retained rows; added rows get none.
        nnz_capacity: slots to allocate in ``columns`` and ``values`` (not with ``"masked"``).
    """
    fn = "bsr_set_zero"
    if not isinstance(bsr, BsrMatrix):
        raise BsrTypeError(f"{fn}(): bsr must be a BsrMatrix, got {type(bsr).__name__}")
    topology = check_topology(topology, ("compact", "padded", "masked"), fn)
    nrow, ncol = _resize(bsr, rows_of_blocks, cols_of_blocks)
    device = bsr.offsets.device
    if topology == "masked":
        if (nrow, ncol) != (bsr.nrow, bsr.ncol):
            raise BsrError(f"{fn}(): topology='masked' keeps the blocks, so the size cannot change")
        n = min(int(bsr.nnz), bsr.values.shape[0])
        if n > 0:
            wp.launch(_zero_values, n, inputs=[bsr.values], device=device)
        return
    if topology == "compact":
        if bsr.offsets is None or bsr.offsets.shape[0] < nrow + 1:
            bsr.offsets = wp.empty(nrow + 1, dtype=int, device=device)
        bsr.offsets[:nrow + 1].zero_()
        bsr.nrow, bsr.ncol, bsr.nnz = nrow, ncol, 0
        bsr.row_counts = None
        if nnz_capacity is not None:
            reserve(bsr, int(nnz_capacity))
        return
    # padded
    old_offsets, old_nrow = bsr.offsets, bsr.nrow
    new_offsets = wp.empty(nrow + 1, dtype=int, device=device)
    bsr.nrow, bsr.ncol = nrow, ncol
    if row_capacity is not None:
        bsr.offsets = new_offsets
        cap = set_padded_offsets(bsr, row_capacity, nnz_capacity, fn)
    elif nrow == old_nrow:
        cap = int(bsr.nnz) if nnz_capacity is None else max(int(nnz_capacity), int(bsr.nnz))
        if bsr.row_counts is None:
            cap = max(cap, int(bsr.columns.shape[0]) if bsr.columns is not None else 0)
            cap = min(cap, bsr.columns.shape[0], bsr.values.shape[0])
    else:
        counts = wp.empty(nrow + 1, dtype=int, device=device)
        with no_tape():
            wp.launch(_retained_capacity, nrow + 1, inputs=[old_offsets, old_nrow, nrow, counts], device=device)
            wp.utils.array_scan(counts, new_offsets, inclusive=False)
        bsr.offsets = new_offsets
        cap = int(nnz_capacity) if nnz_capacity is not None else min(int(bsr.nnz), bsr.columns.shape[0])
    if bsr.row_counts is None or bsr.row_counts.shape[0] != nrow:
        bsr.row_counts = wp.empty(nrow, dtype=int, device=device)
    bsr.row_counts.zero_()
    reserve(bsr, cap)
    bsr.nnz = cap
    bsr._ensure_status()


def _diag_shape(diag: Any, rows: int | None, cols: int | None, current: tuple[int, int] | None) -> tuple[int, int]:
    if rows is not None or cols is not None:
        nrow = int(rows) if rows is not None else int(cols)  # type: ignore[arg-type]
        ncol = int(cols) if cols is not None else nrow
    elif isinstance(diag, wp.array):
        nrow = ncol = int(diag.shape[0])
    elif current is not None:
        nrow, ncol = current
    else:
        raise BsrError("bsr_diag(): give rows_of_blocks (and cols_of_blocks), or a diag array")
    if nrow < 0 or ncol < 0:
        raise BsrError(f"the numbers of rows and columns of blocks must be non-negative, got {nrow} x {ncol}")
    return nrow, ncol


def _set_diag(A: BsrMatrix, diag: Any, nrow: int, ncol: int) -> None:
    fn = "bsr_set_diag"
    device = A.offsets.device
    block_type = A.values.dtype
    ndiag = min(nrow, ncol)
    if isinstance(diag, wp.array):
        check_devices(fn, A=A.offsets, diag=diag)
        if diag.ndim != 1:
            raise BsrError(f"{fn}(): diag must be a 1-d array of blocks, got a {diag.ndim}-d array")
        if not wp.types.types_equal(diag.dtype, block_type):
            raise BsrError(f"{fn}(): diag has blocks of {type_name(diag.dtype)}, the matrix {type_name(block_type)}")
        if diag.shape[0] < ndiag:
            raise BsrError(f"{fn}(): diag holds {diag.shape[0]} blocks for the {ndiag} diagonal blocks of a "
                           f"{nrow} x {ncol} matrix of blocks")
    A.nrow, A.ncol = nrow, ncol
    if A.offsets.shape[0] != nrow + 1:
        A.offsets = wp.empty(nrow + 1, dtype=int, device=device)
    A.row_counts = None
    reserve(A, ndiag)
    with no_tape():
        wp.launch(_diag_topology, nrow + 1, inputs=[ndiag, A.offsets, A.columns], device=device)
    A.nnz = ndiag
    if diag is None or ndiag == 0:
        return
    if isinstance(diag, wp.array):
        wp.launch(_diag_from_array, ndiag, inputs=[diag, A.values], device=device)
    else:
        wp.launch(_diag_from_value, ndiag, inputs=[_block_value(diag, block_type), A.values], device=device)


def _block_value(value: Any, block_type: Any) -> Any:
    """A constant block of ``block_type`` from a Treadle value, a number or nested sequence."""
    if wp.types.type_is_matrix(block_type):
        if isinstance(value, block_type):
            return value
        if wp.types.type_is_vector(type(value)):
            raise BsrError(f"BsrMatrix block type must be either warp matrix or scalar; got {type_name(type(value))}")
        try:
            return block_type(value)
        except Exception as e:
            raise BsrError(f"cannot make a {type_name(block_type)} block from {value!r}: {e}") from None
    try:
        return block_type(value)
    except Exception as e:
        raise BsrError(f"cannot make a {type_name(block_type)} block from {value!r}: {e}") from None


def bsr_set_diag(A: BsrMatrix, diag: Any, rows_of_blocks: int | None = None,
                 cols_of_blocks: int | None = None) -> None:
    """Make ``A`` block-diagonal.

    Args:
        A: the matrix to modify (its block type is kept).
        diag: the diagonal blocks: an array of ``A``'s block type (one block per diagonal entry), one block value
            used for every diagonal entry, or ``None`` (diagonal blocks left uninitialised).
        rows_of_blocks: new number of rows of blocks.
        cols_of_blocks: new number of columns of blocks.

    The size is ``rows_of_blocks`` x ``cols_of_blocks`` when either is given (the other defaults to the same), else
    the length of ``diag`` when it is an array, else ``A``'s current size. There are ``min(rows, cols)`` diagonal
    blocks.
    """
    if not isinstance(A, BsrMatrix):
        raise BsrTypeError(f"bsr_set_diag(): A must be a BsrMatrix, got {type(A).__name__}")
    nrow, ncol = _diag_shape(diag, rows_of_blocks, cols_of_blocks, (A.nrow, A.ncol))
    _set_diag(A, diag, nrow, ncol)


def bsr_diag(diag: Any = None, rows_of_blocks: int | None = None, cols_of_blocks: int | None = None,
             block_type: Any = None, device: Any = None) -> BsrMatrix:
    """A new block-diagonal matrix.

    Args:
        diag: an array of blocks (one per diagonal entry), one block value for every diagonal entry, or ``None``
            (diagonal blocks uninitialised; give ``block_type``).
        rows_of_blocks: number of rows of blocks (see :func:`bsr_set_diag` for the size rules).
        cols_of_blocks: number of columns of blocks.
        block_type: block type when ``diag`` is ``None`` (otherwise deduced from ``diag``).
        device: device when ``diag`` is not an array (otherwise ``diag``'s).
    """
    if isinstance(diag, wp.array):
        bt = check_block_type(diag.dtype, "diag dtype")
        device = diag.device
    elif diag is None:
        if block_type is None:
            raise BsrError("bsr_diag(): give diag or block_type")
        bt = check_block_type(block_type)
    else:
        t = type(diag)
        if t is float:
            bt = wp.float32
        elif t is int:
            bt = wp.int32
        else:
            bt = check_block_type(t, "diag")
        if block_type is not None:
            bt = check_block_type(block_type)
    nrow, ncol = _diag_shape(diag, rows_of_blocks, cols_of_blocks, None)
    A = new_matrix(nrow, ncol, bt, wp.get_device(device))
    _set_diag(A, diag, nrow, ncol)
    return A


def _identity_value(block_type: Any) -> Any:
    r, c = block_shape_of(block_type)
    if r != c:
        raise BsrError(f"an identity matrix needs square blocks, got {r} x {c} blocks")
    if wp.types.type_is_matrix(block_type):
        return block_type(*[1.0 if i == j else 0.0 for i in range(r) for j in range(c)])
    return block_type(1)


def bsr_set_identity(A: BsrMatrix, rows_of_blocks: int | None = None) -> None:
    """Make ``A`` the identity matrix (square, of ``rows_of_blocks`` rows of blocks when given).

    Args:
        A: the matrix (square blocks).
        rows_of_blocks: new number of rows and columns of blocks.
    """
    if not isinstance(A, BsrMatrix):
        raise BsrTypeError(f"bsr_set_identity(): A must be a BsrMatrix, got {type(A).__name__}")
    one = _identity_value(A.values.dtype)
    n = A.nrow if rows_of_blocks is None else int(rows_of_blocks)
    if rows_of_blocks is None and A.nrow != A.ncol:
        raise BsrError(f"bsr_set_identity(): the matrix is {A.nrow} x {A.ncol} blocks; give rows_of_blocks to make "
                       "it square")
    _set_diag(A, one, n, n)


def bsr_identity(rows_of_blocks: int, block_type: Any, device: Any = None) -> BsrMatrix:
    """A new square identity matrix.

    Args:
        rows_of_blocks: number of rows and columns of blocks.
        block_type: block type (square blocks).
        device: device to allocate on.
    """
    bt = check_block_type(block_type)
    A = new_matrix(int(rows_of_blocks), int(rows_of_blocks), bt, wp.get_device(device))
    _set_diag(A, _identity_value(bt), int(rows_of_blocks), int(rows_of_blocks))
    return A


def get_diag(A: BsrMatrix, out: Any, alpha: Any) -> Any:
    """The diagonal blocks of ``alpha * A`` (``min(nrow, ncol)`` of them) in ``out`` (allocated when ``None``)."""
    fn = "bsr_get_diag"
    ndiag = min(A.nrow, A.ncol)
    if out is None:
        out = wp.empty(ndiag, dtype=A.values.dtype, device=A.device, requires_grad=A.requires_grad)
    else:
        if not isinstance(out, wp.array):
            raise BsrTypeError(f"{fn}(): out must be a treadle array, got {type(out).__name__}")
        check_devices(fn, A=A.values, out=out)
        if not wp.types.types_equal(out.dtype, A.values.dtype):
            raise BsrError(f"{fn}(): out has blocks of {type_name(out.dtype)}, the matrix "
                           f"{type_name(A.values.dtype)}")
        if out.shape[0] < ndiag:
            raise BsrError(f"{fn}(): out holds {out.shape[0]} blocks for {ndiag} diagonal blocks")
    if ndiag > 0:
        counts, has = row_end_args(A)
        wp.launch(_get_diag, ndiag, device=A.device,
                  inputs=[A.offsets, counts if has else _dummy(A.device), has, A.columns, A.values,
                          scalar_of(A.values.dtype)(alpha), out])
    return out


def scale(A: BsrMatrix, alpha: Any) -> None:
    """``A.values *= alpha`` over the stored slots (written as zeros when ``alpha`` is 0)."""
    n = min(int(A.nnz), A.values.shape[0])
    if n <= 0:
        return
    if float(alpha) == 0.0:
        wp.launch(_zero_values, n, inputs=[A.values], device=A.device)
    elif float(alpha) != 1.0:
        scale_slots(A.values, n, alpha)


def bsr_get_diag(A: Any, out: Any = None) -> Any:
    """The diagonal blocks of ``A`` (a matrix or matrix expression).

    There are ``min(nrow, ncol)`` of them, zero where ``A`` stores no diagonal block.

    Args:
        A: the matrix.
        out: array of ``A``'s block type to write the blocks into (allocated when ``None``).
    """
    from .expressions import as_operand

    mat, alpha = as_operand(A, "bsr_get_diag", "A")
    return get_diag(mat, out, alpha)
