"""Matrices from coordinate (COO) triplets, reusable triplet maps, and compression of a matrix's own rows."""

from __future__ import annotations

from typing import Any, Literal

import treadle as wp

from .assemble import assemble
from .gather import gather
from .matrix import (
    BsrError,
    BsrMatrix,
    BsrTypeError,
    block_shape_of,
    block_view,
    check_block_type,
    check_devices,
    check_topology,
    new_matrix,
    no_tape,
    row_end_args,
    scalar_of,
    type_name,
)
from .topology import Entries, Runs, _dummy, group_triplets


def check_triplet_values(values: Any, block_type: Any, n: int, fn: str) -> Any:
    """``values`` as a 1-d array of ``block_type`` (3-d scalar arrays are viewed as blocks), checked."""
    if not isinstance(values, wp.array):
        raise BsrTypeError(f"{fn}(): values must be a treadle array, got {type(values).__name__}")
    shape = block_shape_of(block_type)
    scalar = scalar_of(block_type)
    if values.ndim == 3:
        if tuple(values.shape[1:]) != shape:
            raise BsrError(f"Last two dimensions in values array ({tuple(values.shape[1:])}) should correspond to "
                           f"matrix block shape {shape})")
        if values.dtype != scalar:
            raise BsrError(f"Scalar type of values array ({type_name(values.dtype)}) should correspond to that of "
                           f"matrix ({type_name(scalar)})")
        if not values.is_contiguous:
            raise BsrError(f"{fn}(): values must be a contiguous array")
        values = block_view(values, block_type)
    elif values.ndim == 1:
        if not wp.types.types_equal(values.dtype, block_type):
            if values.dtype == scalar and shape == (1, 1):
                pass
            else:
                raise BsrError(f"Values array type must correspond to that of the dest matrix, got "
                               f"{type_name(values.dtype)} and {type_name(block_type)}")
    else:
        raise BsrError(f"{fn}(): values must be a 1-d array of blocks or a 3-d array of scalars, got a "
                       f"{values.ndim}-d array")
    if values.shape[0] < n:
        raise BsrError(f"{fn}(): values has {values.shape[0]} entries for {n} triplets")
    return values


def _check_indices(rows: Any, columns: Any, fn: str) -> int:
    for a in (rows, columns):
        if not isinstance(a, wp.array):
            raise BsrTypeError(f"{fn}(): rows and columns must be treadle arrays, got {type(a).__name__}")
    if rows.dtype != wp.int32 or columns.dtype != wp.int32:
        raise BsrTypeError("Rows and columns arrays must be of type int32")
    if rows.ndim != 1 or columns.ndim != 1:
        raise BsrError(f"{fn}(): rows and columns must be one-dimensional arrays")
    if rows.shape[0] != columns.shape[0]:
        raise BsrError(f"Rows and columns arrays must have the same length, got {rows.shape[0]} and "
                       f"{columns.shape[0]}")
    return int(rows.shape[0])


class BsrTripletMap:
    """A reusable mapping from COO triplets to the blocks of the matrix they were assembled into.

    Build it with ``bsr_set_from_triplets(..., build_mapping=True)`` (or pass an existing map to rebuild it in place),
    then refresh the matrix values from new triplet values with :func:`bsr_set_from_mapped_values`, which does no
    sorting. The map keeps, for every block, the run of triplets that sum into it (sorted as the assembly sums
    them) and, for every triplet, its block. The destination's topology must stay unchanged while the map is used;
    its values may change freely.

    Args:
        capacity: number of triplets to reserve storage for (the storage grows when a map is built for more).
        device: device of the storage.
    """

    def __init__(self, capacity: int = 0, device: Any = None) -> None:
        self._device = wp.get_device(device)
        self._capacity = 0
        self._reserve(int(capacity))
        self._count = 0
        self._nrow = -1
        self._ncol = -1
        self._runs: Runs | None = None
        self._ids: tuple[int, int] = (0, 0)

    def _reserve(self, capacity: int) -> None:
        if capacity <= self._capacity and self._capacity > 0:
            return
        c = max(capacity, 1)
        d = self._device
        self._cols = wp.empty(c, dtype=int, device=d)
        self._srcs = wp.empty(c, dtype=int, device=d)
        self._sorted_cols = wp.empty(c, dtype=int, device=d)
        self._sorted_srcs = wp.empty(c, dtype=int, device=d)
        self._run_beg = wp.empty(c, dtype=int, device=d)
        self._run_end = wp.empty(c, dtype=int, device=d)
        self._blocks = wp.empty(c, dtype=int, device=d)
        self._capacity = max(capacity, self._capacity)

    @property
    def capacity(self) -> int:
        """Number of triplets the map can be built for without reallocating its storage."""
        return self._capacity

    @property
    def device(self) -> Any:
        """Device of the map's storage."""
        return self._device

    def _bind(self, dest: BsrMatrix, count: int, runs: Runs) -> None:
        self._count = count
        self._nrow, self._ncol = dest.nrow, dest.ncol
        self._runs = runs
        self._ids = (id(dest.offsets), id(dest.columns))
        self._dest_offsets = dest.offsets

    def validate(self, dest: BsrMatrix) -> None:
        """Raise if ``dest``'s dimensions or topology arrays are not those the map was built for.

        Only the dimensions and the identity of the arrays are compared: topology changed in place is not detected.
        """
        if self._runs is None:
            raise BsrError("this BsrTripletMap has not been built yet: pass it as build_mapping= to "
                           "bsr_set_from_triplets() first")
        if (dest.nrow, dest.ncol) != (self._nrow, self._ncol):
            raise BsrError(f"the BsrTripletMap was built for a {self._nrow} x {self._ncol} matrix of blocks, not "
                           f"{dest.nrow} x {dest.ncol}")
        if (id(dest.offsets), id(dest.columns)) != self._ids or dest.row_counts is not None:
            raise BsrError("the matrix's topology changed since the BsrTripletMap was built (its offsets or "
                           "columns arrays were replaced); rebuild the map with bsr_set_from_triplets()")


def bsr_set_from_triplets(dest: BsrMatrix, rows: Any, columns: Any, values: Any = None, count: Any = None,
                          prune_numerical_zeros: bool = True,
                          topology: Literal["compact", "masked", "padded"] | None = None,
                          build_mapping: BsrTripletMap | bool | None = None) -> BsrTripletMap | None:
    """Fill ``dest`` from coordinate (COO) triplets, replacing its blocks; duplicate coordinates are summed.

    Triplet ``i`` adds block ``values[i]`` at block row ``rows[i]``, block column ``columns[i]``. Triplets with a
    row or column out of range are ignored. Duplicates are summed in the order of their indices (reproducible
    results, whatever the thread count). Each row's blocks end up sorted by column.

    Args:
        dest: the matrix to fill (its shape and block type are kept).
        rows: int32 block row of each triplet.
        columns: int32 block column of each triplet (same length as ``rows``).
        values: the blocks: a contiguous 1-d array of ``dest``'s block type, or a contiguous 3-d array of its scalar
            type shaped ``(n, block rows, block cols)``. ``None`` builds the topology only (values uninitialised).
        count: one-element int32 device array holding the number of triplets to use (the first ones), or ``None`` for
            all of them.
        prune_numerical_zeros: ignore triplets whose block is all zeros.
        topology: ``"compact"`` (default: rebuild ``dest``'s storage), ``"masked"`` (keep ``dest``'s blocks, update
            only those; triplets elsewhere are dropped) or ``"padded"`` (write each row into ``dest``'s existing row
            capacity; see :meth:`BsrMatrix.status_sync` for overflow).
        build_mapping: ``True`` to build and return a :class:`BsrTripletMap` for :func:`bsr_set_from_mapped_values`,
            or a map to rebuild in place; only with the compact topology and ``prune_numerical_zeros=False``.

    Returns:
        The map when ``build_mapping`` is given, else ``None``.
    """
    fn = "bsr_set_from_triplets"
    if not isinstance(dest, BsrMatrix):
        raise BsrTypeError(f"{fn}(): dest must be a BsrMatrix, got {type(dest).__name__}")
    n = _check_indices(rows, columns, fn)
    topology = check_topology("compact" if topology is None else topology, ("compact", "masked", "padded"), fn)
    block_type = dest.values.dtype
    vals = None if values is None else check_triplet_values(values, block_type, n, fn)
    if count is not None:
        if not isinstance(count, wp.array) or count.dtype != wp.int32 or count.size < 1:
            raise BsrTypeError(f"{fn}(): count must be a one-element int32 array")
    check_devices(fn, dest=dest.offsets, rows=rows, columns=columns, values=vals, count=count)
    mapping = None
    if build_mapping is not None and build_mapping is not False:
        if topology != "compact" or prune_numerical_zeros:
            raise BsrError(f"{fn}(): build_mapping needs topology='compact' and prune_numerical_zeros=False")
        mapping = build_mapping if isinstance(build_mapping, BsrTripletMap) else BsrTripletMap(n, dest.device)
        if mapping.device != dest.device:
            raise BsrError(f"{fn}(): the triplet map is on device '{mapping.device}', the matrix on '{dest.device}'")
        mapping._reserve(n)
    prune = bool(prune_numerical_zeros) and vals is not None
    out = (mapping._cols, mapping._srcs) if mapping is not None else None
    entries = group_triplets(rows, columns, n, dest.nrow, dest.ncol, count=count, values=vals, prune=prune, out=out)

    def values_fn(runs: Runs, out_values: Any) -> None:
        gather(runs, vals, out_values)

    runs_out = (mapping._run_beg, mapping._run_end, mapping._blocks) if mapping is not None else None
    sorted_out = (mapping._sorted_cols, mapping._sorted_srcs) if mapping is not None else None
    runs = assemble(dest, entries, topology, values_fn if vals is not None else None,
                    sources=[rows, columns, vals, count], requires_grad=vals is not None and vals.requires_grad,
                    want_blocks=mapping is not None, runs_out=runs_out, sorted_out=sorted_out, fn=fn)
    if mapping is not None:
        mapping._bind(dest, n, runs)
    return mapping


def bsr_from_triplets(rows_of_blocks: int, cols_of_blocks: int, rows: Any, columns: Any, values: Any,
                      prune_numerical_zeros: bool = True) -> BsrMatrix:
    """A new compact matrix from coordinate (COO) triplets (duplicates summed; see :func:`bsr_set_from_triplets`).

    The block type is the dtype of ``values`` (a 1-d array of blocks or scalars), or a matrix type of its last two
    dimensions for a 3-d scalar array. The matrix's ``nnz`` is left at the triplet count (an upper bound); call
    :meth:`BsrMatrix.nnz_sync` for the exact block count.

    Args:
        rows_of_blocks: number of rows of blocks.
        cols_of_blocks: number of columns of blocks.
        rows: int32 block row of each triplet.
        columns: int32 block column of each triplet.
        values: block of each triplet.
        prune_numerical_zeros: ignore triplets whose block is all zeros.
    """
    if not isinstance(values, wp.array):
        raise BsrTypeError(f"bsr_from_triplets(): values must be a treadle array, got {type(values).__name__}")
    if values.ndim == 3:
        block_type = wp.types.matrix(shape=(int(values.shape[1]), int(values.shape[2])), dtype=values.dtype)
    else:
        block_type = check_block_type(values.dtype, "values dtype")
    m = new_matrix(rows_of_blocks, cols_of_blocks, block_type, values.device)
    bsr_set_from_triplets(m, rows, columns, values, prune_numerical_zeros=prune_numerical_zeros)
    return m


@wp.kernel(enable_backward=False)
def _zero_blocks(values: wp.array(dtype=Any)):
    values[wp.tid()] = values.dtype(0.0)


@wp.kernel
def _scatter_mapped(blocks: wp.array(dtype=int), src: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    b = blocks[i]
    if b >= 0:
        wp.atomic_add(out, b, src[i])


def bsr_set_from_mapped_values(dest: BsrMatrix, mapping: BsrTripletMap, values: Any,
                               reduction: Literal["gather", "atomic"] = "gather") -> None:
    """Refresh ``dest``'s block values from new triplet values, through a map built by :func:`bsr_set_from_triplets`.

    No topology work is done. ``"gather"`` (one thread per block, sums in the same order as the assembly, no atomics)
    or ``"atomic"`` (one thread per triplet, atomic sums: rounding order varies).

    Args:
        dest: the matrix the map was built for (same topology arrays).
        mapping: the :class:`BsrTripletMap`.
        values: the current value of every mapped triplet (as for :func:`bsr_set_from_triplets`).
        reduction: ``"gather"`` or ``"atomic"``.
    """
    fn = "bsr_set_from_mapped_values"
    if not isinstance(mapping, BsrTripletMap):
        raise BsrTypeError(f"{fn}(): mapping must be a BsrTripletMap, got {type(mapping).__name__}")
    mapping.validate(dest)
    if reduction not in ("gather", "atomic"):
        raise BsrError(f"{fn}(): reduction must be 'gather' or 'atomic', got {reduction!r}")
    n = mapping._count
    vals = check_triplet_values(values, dest.values.dtype, n, fn)
    check_devices(fn, dest=dest.values, values=vals)
    runs = mapping._runs
    assert runs is not None
    if reduction == "gather":
        gather(runs, vals, dest.values)
        return
    cap = min(int(dest.nnz), dest.values.shape[0])
    if cap > 0:
        wp.launch(_zero_blocks, cap, inputs=[dest.values], device=dest.device)
    if n > 0:
        wp.launch(_scatter_mapped, n, inputs=[mapping._blocks, vals, dest.values], device=dest.device)


# -- compression ------------------------------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _row_entries(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int,
                 columns: wp.array(dtype=int), values: wp.array(dtype=Any), prune: int, ncol: int,
                 seg_end: wp.array(dtype=int), out_cols: wp.array(dtype=int), out_srcs: wp.array(dtype=int)):
    r = wp.tid()
    b = offsets[r]
    e = offsets[r + 1]
    if has_counts != 0:
        e = b + counts[r]
    seg_end[r] = e
    for k in range(b, e):
        c = columns[k]
        if c < 0 or c >= ncol:
            c = -1
        elif prune != 0:
            if values[k] == values.dtype(0.0):
                c = -1
        out_cols[k] = c
        out_srcs[k] = k


def row_entries(m: BsrMatrix, prune: bool) -> Entries:
    """The active blocks of ``m`` as entries grouped by row (positions are ``m``'s slots; bad columns skipped)."""
    device = m.device
    cap = int(m.columns.shape[0])
    cols = wp.empty(max(cap, 1), dtype=int, device=device)
    srcs = wp.empty(max(cap, 1), dtype=int, device=device)
    seg_end = wp.empty(max(m.nrow, 1), dtype=int, device=device)
    counts, has = row_end_args(m)
    if m.nrow > 0:
        with no_tape():
            wp.launch(_row_entries, m.nrow, device=device,
                      inputs=[m.offsets, counts if has else _dummy(device), has, m.columns,
                              m.values if prune else _dummy(device, m.values.dtype), int(prune), m.ncol, seg_end,
                              cols, srcs])
    return Entries(m.nrow, cols, srcs, m.offsets, seg_end, max(min(int(m.nnz), cap), 0))


def bsr_compress(src: BsrMatrix, prune_numerical_zeros: bool = True, inplace: bool = False,
                 topology: Literal["compact", "padded"] | None = None, structure_only: bool = False) -> BsrMatrix:
    """Sort, merge and (optionally) prune the active blocks of ``src``, in ``src``; return it.

    Within each row, blocks with the same column are summed, columns come out sorted, and blocks with a negative
    or out-of-range column (and, with ``prune_numerical_zeros``, all-zero blocks) are dropped. Slack storage of padded
    rows is ignored. The values are computed by differentiable kernels in every case (``inplace`` is accepted for
    compatibility: the arrays of ``src`` may be replaced whichever value it has).

    Args:
        src: the matrix to compress.
        prune_numerical_zeros: drop all-zero blocks.
        inplace: accepted for compatibility; the result does not depend on it.
        topology: ``"compact"`` (default: pack the rows, ``row_counts`` becomes ``None``) or ``"padded"`` (keep
            ``src``'s row capacity, update ``row_counts``).
        structure_only: sort and merge the columns only, without reading or moving values (the values no longer
            correspond to the columns afterwards).
    """
    fn = "bsr_compress"
    if not isinstance(src, BsrMatrix):
        raise BsrTypeError(f"{fn}(): src must be a BsrMatrix, got {type(src).__name__}")
    topology = check_topology("compact" if topology is None else topology, ("compact", "padded"), fn)
    if topology == "padded" and src.row_counts is None:
        raise BsrError(f"{fn}(): topology='padded' needs a matrix with row capacity (row_counts)")
    prune = bool(prune_numerical_zeros) and not structure_only
    entries = row_entries(src, prune)
    vals = src.values

    def values_fn(runs: Runs, out_values: Any) -> None:
        gather(runs, vals, out_values)

    assemble(src, entries, topology, None if structure_only else values_fn, sources=[src.values, src.columns],
             requires_grad=vals.requires_grad, fn=fn)
    return src
