"""The adaptive factorised sparse approximate inverse preconditioner (:class:`FSAI`).

For a symmetric positive-definite ``A`` it builds a sparse lower-triangular ``G`` with ``G A G^T`` close to the
identity, and applies ``M = G^T G`` (two sparse products). Each row of ``G`` is found independently on the matrix's
device (see :mod:`.fsai_kernels` for the support search and the local factorisations); square blocks are read as
their scalar entries, so the factor is scalar even for block matrices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

from ...runtime.graph import capturing
from ...sparse.matrix import BsrMatrix, check_capture, row_end_args, scalar_view
from ...sparse.products import bsr_mv
from ...sparse.transpose import bsr_copy, bsr_transposed
from ...sparse.triplets import bsr_from_triplets
from . import fsai_kernels as fk
from .dot import flat_scalars
from .operator import LinearOperator

#: Default pivot floor of the equilibrated local factorisations, per scalar type.
_FLOORS = {wp.float16: 1.0e-3, wp.float32: 1.0e-6, wp.float64: 1.0e-12}
#: Largest finite magnitude of each factor storage type.
_LIMITS = {wp.float16: 65504.0, wp.float32: float(np.finfo(np.float32).max), wp.float64: float(np.finfo(np.float64).max)}
#: Scratch entries (float64) the per-thread local systems may use at once; rows are processed in batches below it.
_SCRATCH = 1 << 22


def _batch(n: int, m: int) -> int:
    return max(1, min(n, _SCRATCH // max(1, m * m)))


class FSAI(LinearOperator):
    """Adaptive factorised sparse approximate inverse of a symmetric positive-definite BSR matrix.

    A :class:`LinearOperator` applying ``G^T G``, to pass as ``M`` to :func:`cg` or :func:`cr`. Row ``i`` of the
    lower-triangular factor ``G`` starts from the diagonal and grows, up to ``max_row_size`` entries, by the columns
    ``j < i`` with the largest scaled residual ``|(A g)_j| / sqrt(a_jj)`` of the current row (``max_step_size`` of
    them per step), until the relative decrease of the row's energy falls below ``kap_tolerance``. Each step solves
    the row's local system by a Cholesky factorisation of the diagonally equilibrated submatrix, in the order the
    entries were added (the diagonal first); an entry whose pivot falls below ``pivot_floor`` ends the row's growth
    before it (the row is counted in :attr:`truncated_rows`). Rows are scaled so that ``G A G^T`` has a unit
    diagonal. :meth:`update` refits in the same order.

    Args:
        A: square :class:`treadle.sparse.BsrMatrix` with square blocks and float16, float32 or float64
            coefficients; both triangles stored, columns sorted and unique within each row (as every construction
            function of :mod:`treadle.sparse` leaves them). Symmetry and definiteness are not checked.
        max_row_size: most scalar entries of a factor row, its diagonal included, in [1, 64] (1 gives a Jacobi
            preconditioner scaled as ``diag(A)^(-1)``).
        kap_tolerance: relative energy decrease below which a row stops growing, in [0, 1) (0: grow up to
            ``max_row_size``).
        pivot_floor: smallest accepted pivot of the equilibrated local factorisations, in (0, 1); ``None``: 1e-3
            for float16, 1e-6 for float32, 1e-12 for float64.
        factor_dtype: storage type of ``G`` and ``GT``: the matrix's scalar type, or float32 for a float64 matrix.
            Products then use a copy of the rounded factor in the matrix's scalar type (so they accumulate in it).
        reuse_pattern: keep what :meth:`update` needs to refit the factor on its supports after ``A``'s values
            change. Needs a compact matrix (``bsr_compress(A, prune_numerical_zeros=False)`` makes one).
        max_step_size: columns added per growth step, in [1, 64].
        regularize_refit: with ``reuse_pattern``, :meth:`update` refits every row it can: a pivot below the floor
            is raised to it (the row counted as regularised), a row that cannot be factorised is replaced by its
            scaled diagonal (counted as failed), and only a changed topology rejects the update.
        validate_topology: with ``reuse_pattern``, :meth:`update` compares the matrix's topology with the
            original on the device and rejects a mismatch (``False`` skips the comparison).
        defer_pattern: selecting the supports at the first :meth:`update` is not provided; ``True`` raises
            :class:`NotImplementedError`.

    Attributes:
        G: the factor (compact scalar BsrMatrix, lower-triangular, positive diagonal).
        GT: its transpose.
        truncated_rows: rows whose growth a rejected pivot stopped.
        pattern_ready: ``None`` (deferred patterns are not provided).
        pattern_status: ``None``.
        source: the matrix of the last construction or successful update.
        update_status: ``None`` without ``reuse_pattern``; else an int32 array of four counts from the last
            :meth:`update`: topology mismatches (block rows), invalid diagonals, failed local factorisations,
            regularised rows.

    Raises:
        TypeError: ``A`` is not a BsrMatrix, or its scalar type is not float16/float32/float64.
        ValueError: a non-square matrix or block, an option out of range, a missing, nonpositive or nonfinite
            diagonal coefficient, or a factor that the storage type cannot hold with finite entries.
    """

    def __init__(self, A: BsrMatrix, max_row_size: int = 8, kap_tolerance: float = 0.001,
                 pivot_floor: float | None = None, factor_dtype: type | None = None, reuse_pattern: bool = False,
                 max_step_size: int = 1, regularize_refit: bool = False, validate_topology: bool = True,
                 defer_pattern: bool = False) -> None:
        if not isinstance(A, BsrMatrix):
            raise TypeError(f"FSAI: A must be a treadle.sparse.BsrMatrix, got {type(A).__name__}")
        scalar = A.scalar_type
        if scalar not in _FLOORS:
            raise TypeError(f"FSAI: the matrix scalar type must be float16, float32 or float64, got "
                            f"{getattr(scalar, '__name__', scalar)}")
        bs, bc = A.block_shape
        if bs != bc:
            raise ValueError(f"FSAI: the matrix blocks must be square, got {A.block_shape}")
        if A.nrow != A.ncol:
            raise ValueError(f"FSAI: the matrix must be square, got {A.nrow} x {A.ncol} blocks")
        if isinstance(max_row_size, bool) or not isinstance(max_row_size, (int, np.integer)) \
                or not 1 <= max_row_size <= 64:
            raise ValueError(f"FSAI: max_row_size must be an int in [1, 64], got {max_row_size!r}")
        if isinstance(max_step_size, bool) or not isinstance(max_step_size, (int, np.integer)) \
                or not 1 <= max_step_size <= 64:
            raise ValueError(f"FSAI: max_step_size must be an int in [1, 64], got {max_step_size!r}")
        if not 0.0 <= float(kap_tolerance) < 1.0:
            raise ValueError(f"FSAI: kap_tolerance must be in [0, 1), got {kap_tolerance!r}")
        floor = _FLOORS[scalar] if pivot_floor is None else float(pivot_floor)
        if not 0.0 < floor < 1.0:
            raise ValueError(f"FSAI: pivot_floor must be in (0, 1), got {pivot_floor!r}")
        fdt = scalar if factor_dtype is None else factor_dtype
        if fdt is not scalar and not (fdt is wp.float32 and scalar is wp.float64):
            raise ValueError(f"FSAI: factor_dtype must be the matrix scalar type or float32 for a float64 matrix, "
                             f"got {getattr(fdt, '__name__', fdt)}")
        if defer_pattern:
            if not reuse_pattern:
                raise ValueError("FSAI: defer_pattern requires reuse_pattern=True")
            raise NotImplementedError("FSAI: defer_pattern (selecting the supports at the first update) is not "
                                      "provided by Treadle; build the preconditioner from the matrix values")
        if reuse_pattern and A.row_counts is not None:
            raise ValueError("FSAI: reuse_pattern needs a compact matrix; use "
                             "bsr_compress(A, prune_numerical_zeros=False) first")
        check_capture("FSAI construction")
        n = A.nrow * bs
        super().__init__((n, n), A.dtype, A.device, self._apply)
        self._n = n
        self._bs = bs
        self._m = int(max_row_size)
        self._floor = floor
        self._scalar = scalar
        self._factor_dtype = fdt
        self._regularize = bool(regularize_refit)
        self._validate = bool(validate_topology)
        self._block_shape = A.block_shape
        self._nrow = A.nrow
        self.pattern_ready = None
        self.pattern_status = None
        self.update_status = None
        self.source = A
        self._build(A, float(kap_tolerance), int(max_step_size))
        if reuse_pattern:
            self.update_status = wp.zeros(4, dtype=wp.int32, device=self.device)
            self._ref_offsets = wp.clone(A.offsets[: A.nrow + 1])
            self._ref_nnz = int(A.offsets.numpy()[A.nrow])
            self._ref_columns = wp.clone(A.columns[: self._ref_nnz]) if self._ref_nnz > 0 else \
                wp.zeros(1, dtype=wp.int32, device=self.device)
            self._stage = wp.empty(max(1, self._nnz), dtype=wp.float64, device=self.device)
            # allocated once, so that an update allocates nothing (it may be captured in a graph)
            b = _batch(n, self._m)
            self._refit_scratch = (wp.empty(1, dtype=int, device=self.device),
                                   wp.empty((b, self._m, self._m), dtype=wp.float64, device=self.device),
                                   wp.empty((b, self._m), dtype=wp.float64, device=self.device),
                                   wp.empty((b, self._m), dtype=wp.float64, device=self.device))

    # -- construction -----------------------------------------------------------------------------------------------

    def _build(self, A: BsrMatrix, kap_tol: float, step: int) -> None:
        n, m, device = self._n, self._m, self.device
        counts, has = row_end_args(A)
        counts = counts if counts is not None else wp.empty(1, dtype=int, device=device)
        values = scalar_view(A.values)
        out_cols = wp.empty((max(1, n), m), dtype=int, device=device)
        out_vals = wp.empty((max(1, n), m), dtype=wp.float64, device=device)
        out_rank = wp.empty((max(1, n), m), dtype=int, device=device)
        out_cnt = wp.zeros(n + 1, dtype=int, device=device)
        flags = wp.zeros(max(1, n), dtype=int, device=device)
        b = _batch(n, m)
        sup = wp.empty((b, m), dtype=int, device=device)
        cur = wp.empty((b, m), dtype=int, device=device)
        cend = wp.empty((b, m), dtype=int, device=device)
        gt = wp.empty((b, m), dtype=wp.float64, device=device)
        dinv = wp.empty((b, m), dtype=wp.float64, device=device)
        work = wp.empty((b, m, m), dtype=wp.float64, device=device)
        for row0 in range(0, n, b):
            wp.launch(fk.select_rows, min(b, n - row0), device=device,
                      inputs=[A.offsets, counts, has, A.columns, values, self._bs, n, m, step, wp.float64(kap_tol),
                              wp.float64(self._floor), row0, sup, cur, cend, gt, dinv, work, out_cols, out_vals,
                              out_rank, out_cnt, flags])
        fl = flags.numpy()[:n]
        bad = np.flatnonzero(fl == 2)
        if bad.size:
            raise ValueError(f"FSAI: the diagonal coefficient of scalar row {int(bad[0])} is missing, nonpositive or "
                             f"nonfinite ({bad.size} row(s)); the matrix must be symmetric positive-definite")
        self.truncated_rows = int(np.count_nonzero(fl == 1))
        offsets = wp.empty(n + 1, dtype=int, device=device)
        wp.utils.array_scan(out_cnt, offsets, inclusive=False)
        nnz = int(offsets.numpy()[n]) if n else 0
        self._nnz = nnz
        rows = wp.empty(max(1, nnz), dtype=int, device=device)
        cols = wp.empty(max(1, nnz), dtype=int, device=device)
        vals = wp.empty(max(1, nnz), dtype=self._factor_dtype, device=device)
        index = wp.empty(max(1, nnz), dtype=wp.float64, device=device)
        self._order = wp.empty(max(1, nnz), dtype=int, device=device)
        if n:
            wp.launch(fk.slot_rows, n, inputs=[offsets, rows], device=device)
            wp.launch(fk.gather_rows, n, device=device,
                      inputs=[offsets, out_cols, out_vals, out_rank, cols, vals, index, self._order])
        if nnz:
            v = vals.numpy()[:nnz]
            if not np.all(np.isfinite(v)):
                raise ValueError(f"FSAI: the factor has entries that {self._factor_dtype.__name__} cannot hold "
                                 "(infinite); use a wider factor_dtype")
        self.G = bsr_from_triplets(n, n, rows[:nnz], cols[:nnz], vals[:nnz], prune_numerical_zeros=False)
        self.G.nnz_sync()
        self.GT = bsr_transposed(self.G)
        # GT slot s holds G slot perm[s]: the transpose of a matrix whose values are its slot numbers
        idx = bsr_transposed(bsr_from_triplets(n, n, rows[:nnz], cols[:nnz], index[:nnz],
                                               prune_numerical_zeros=False))
        self._perm = wp.array(idx.values.numpy()[:nnz].astype(np.int32) if nnz else np.zeros(1, np.int32),
                              dtype=wp.int32, device=device)
        if self._factor_dtype is self._scalar:
            self._apply_G, self._apply_GT = self.G, self.GT
        else:
            self._apply_G = bsr_copy(self.G, scalar_type=self._scalar)
            self._apply_GT = bsr_copy(self.GT, scalar_type=self._scalar)
        self._tmp = wp.empty(max(1, n), dtype=self._scalar, device=device)

    # -- application ------------------------------------------------------------------------------------------------

    def _flat(self, vector: Any) -> Any:
        """A flat scalar view of a solver vector, checked against the operator's size and scalar type."""
        f = flat_scalars(vector)
        if f.shape[0] != self._n or f.dtype != self._scalar:
            raise ValueError(f"FSAI: expected vectors of {self._n} {self._scalar.__name__} scalars, got "
                             f"{f.shape[0]} of {getattr(f.dtype, '__name__', f.dtype)}")
        return f

    def _apply(self, x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        fx, fy, fz = self._flat(x), self._flat(y), self._flat(z)
        tmp = self._tmp[: self._n]
        bsr_mv(self._apply_G, fx, tmp)  # x is read completely before z is written, so z may alias it
        if float(beta) != 0.0 and fy.ptr != fz.ptr:
            wp.copy(fz, fy)
        bsr_mv(self._apply_GT, tmp, fz, alpha=alpha, beta=beta)

    # -- refits -----------------------------------------------------------------------------------------------------

    def update(self, A: BsrMatrix | None = None) -> FSAI:
        """Refit the factor on its supports to the matrix's current values (``reuse_pattern=True`` only).

        The supports are not searched again (rebuild the preconditioner for that); a bad pivot is not truncated
        but rejects the update (or is raised to the floor with ``regularize_refit``). The new factors replace the
        old ones in place (the arrays of ``G`` and ``GT`` are kept) only if the update is accepted, decided on the
        device from :attr:`update_status`. Outside a graph capture the status is read back and a rejected update
        raises; while capturing nothing is read back (inspect :attr:`update_status` after a replay).

        Args:
            A: the matrix with new values (same block type, shape and storage); ``None`` reuses :attr:`source`.

        Returns:
            This preconditioner.

        Raises:
            ValueError: no reuse plan (``reuse_pattern=False``), changed matrix metadata or sizes, or (not
                capturing) a changed topology or a failed local factorisation.
        """
        if self.update_status is None:
            raise ValueError("FSAI.update(): the preconditioner was built without reuse_pattern=True; rebuild it")
        A = self.source if A is None else A
        if not isinstance(A, BsrMatrix):
            raise TypeError(f"FSAI.update(): A must be a BsrMatrix, got {type(A).__name__}")
        if (A.nrow, A.ncol, A.block_shape, A.scalar_type) != (self._nrow, self._nrow, self._block_shape,
                                                              self._scalar):
            raise ValueError("FSAI.update(): the matrix shape, block shape or scalar type changed; rebuild the "
                             "preconditioner")
        if A.row_counts is not None or A.device != self.device or A.columns.shape[0] < self._ref_nnz \
                or A.values.shape[0] < self._ref_nnz:
            raise ValueError("FSAI.update(): the matrix storage changed (padded rows, fewer stored blocks or another "
                             "device); rebuild the preconditioner")
        n, device, status = self._n, self.device, self.update_status
        status.zero_()
        if self._validate and self._nrow:
            wp.launch(fk.check_topology, self._nrow, device=device,
                      inputs=[A.offsets, A.columns, self._ref_offsets, self._ref_columns, status])
        counts, work, dinv, zw = self._refit_scratch
        values = scalar_view(A.values)
        b = int(work.shape[0])
        for row0 in range(0, n, b):
            wp.launch(fk.refit_rows, min(b, n - row0), device=device,
                      inputs=[A.offsets, counts, 0, A.columns, values, self._bs, n, self.G.offsets, self.G.columns,
                              self._order, wp.float64(self._floor), int(self._regularize),
                              wp.float64(_LIMITS[self._factor_dtype]), row0, work, dinv, zw, self._stage, status])
        if self._nnz:
            wp.launch(fk.commit_values, self._nnz, device=device,
                      inputs=[status, int(self._regularize), self._stage, self.G.values, self.GT.values, self._perm,
                              self._apply_G.values, self._apply_GT.values])
        if not capturing():
            st = status.numpy()
            if st[0]:
                raise ValueError(f"FSAI.update(): the matrix topology changed ({int(st[0])} block row(s)); rebuild "
                                 "the preconditioner")
            if not self._regularize and (st[1] or st[2]):
                raise ValueError(f"FSAI.update(): {int(st[1])} invalid diagonal coefficient(s) and {int(st[2])} "
                                 "failed local factorisation(s); the previous factors are kept (rebuild, or pass "
                                 "regularize_refit=True)")
        self.source = A
        return self
