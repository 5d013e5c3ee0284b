"""Block-sparse row (BSR) matrices and their operations (the ``warp.sparse`` module of the reference API).

A :class:`BsrMatrix` stores blocks of any shape (scalars for CSR matrices) and any scalar type, on any device.
Build one from coordinate triplets (:func:`bsr_from_triplets`, :func:`bsr_set_from_triplets`), as a zero, identity
or diagonal matrix (:func:`bsr_zeros`, :func:`bsr_identity`, :func:`bsr_diag`), or by copying and transposing
another; multiply with :func:`bsr_mv` and :func:`bsr_mm`, add with :func:`bsr_axpy`, or use the operators
(``A @ x``, ``A @ B``, ``A + B``, ``2.0 * A``, ``A += B``...). Every operation runs as Treadle kernels on the
matrix's device; those that compute values are differentiable through a :class:`treadle.Tape`.
:func:`bsr_block_index` and :func:`bsr_row_index` are functions for kernels.
"""

from __future__ import annotations

from ._src.sparse.axpy import bsr_axpy as bsr_axpy
from ._src.sparse.axpy import bsr_axpy_work_arrays as bsr_axpy_work_arrays
from ._src.sparse.axpy import bsr_scale as bsr_scale
from ._src.sparse.diag import bsr_diag as bsr_diag
from ._src.sparse.diag import bsr_get_diag as bsr_get_diag
from ._src.sparse.diag import bsr_identity as bsr_identity
from ._src.sparse.diag import bsr_set_diag as bsr_set_diag
from ._src.sparse.diag import bsr_set_identity as bsr_set_identity
from ._src.sparse.diag import bsr_set_zero as bsr_set_zero
from ._src.sparse.expressions import BsrExpression as BsrExpression
from ._src.sparse.matrix import BSR_STATUS_ROW_CAPACITY_EXCEEDED as BSR_STATUS_ROW_CAPACITY_EXCEEDED
from ._src.sparse.matrix import BSR_STATUS_SUCCESS as BSR_STATUS_SUCCESS
from ._src.sparse.matrix import BsrMatrix as BsrMatrix
from ._src.sparse.matrix import bsr_block_index as bsr_block_index
from ._src.sparse.matrix import bsr_matrix_t as bsr_matrix_t
from ._src.sparse.matrix import bsr_row_index as bsr_row_index
from ._src.sparse.matrix import bsr_zeros as bsr_zeros
from ._src.sparse.products import bsr_mm as bsr_mm
from ._src.sparse.products import bsr_mm_work_arrays as bsr_mm_work_arrays
from ._src.sparse.products import bsr_mv as bsr_mv
from ._src.sparse.transpose import bsr_assign as bsr_assign
from ._src.sparse.transpose import bsr_copy as bsr_copy
from ._src.sparse.transpose import bsr_set_transpose as bsr_set_transpose
from ._src.sparse.transpose import bsr_transposed as bsr_transposed
from ._src.sparse.triplets import BsrTripletMap as BsrTripletMap
from ._src.sparse.triplets import bsr_compress as bsr_compress
from ._src.sparse.triplets import bsr_from_triplets as bsr_from_triplets
from ._src.sparse.triplets import bsr_set_from_mapped_values as bsr_set_from_mapped_values
from ._src.sparse.triplets import bsr_set_from_triplets as bsr_set_from_triplets

__all__ = [
    "BSR_STATUS_ROW_CAPACITY_EXCEEDED",
    "BSR_STATUS_SUCCESS",
    "BsrExpression",
    "BsrMatrix",
    "BsrTripletMap",
    "bsr_assign",
    "bsr_axpy",
    "bsr_axpy_work_arrays",
    "bsr_block_index",
    "bsr_compress",
    "bsr_copy",
    "bsr_diag",
    "bsr_from_triplets",
    "bsr_get_diag",
    "bsr_identity",
    "bsr_matrix_t",
    "bsr_mm",
    "bsr_mm_work_arrays",
    "bsr_mv",
    "bsr_row_index",
    "bsr_scale",
    "bsr_set_diag",
    "bsr_set_from_mapped_values",
    "bsr_set_from_triplets",
    "bsr_set_identity",
    "bsr_set_transpose",
    "bsr_set_zero",
    "bsr_transposed",
    "bsr_zeros",
]
