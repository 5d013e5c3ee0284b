"""Matrix-vector and matrix-matrix products: ``bsr_mv`` and ``bsr_mm``.

``bsr_mv`` runs one thread per block row (``y[r] = alpha * sum_k A[r, k] x[k] + beta * y[r]``); its transposed form
scatters each row's contributions with atomic additions. ``bsr_mm`` expands the product row by row (row ``i`` of
``x @ y`` lists, for every block ``x[i, k]``, the blocks of row ``k`` of ``y``, then the blocks of ``z`` when
``beta`` is not zero), merges the entries with :mod:`.topology`, and computes every block with one thread summing
its products in a fixed order. With ``topology="masked"``, each block of ``z`` is computed in place from binary
searches of ``y``'s rows, without any new topology. The kernels depend on the block shapes and are built per
combination of block types (cached).
"""

import functools
from typing import Any, Literal

import treadle as wp

from .assemble import assemble
from .expressions import as_linear
from .gather import runs_args
from .matrix import (
    BsrError,
    BsrMatrix,
    BsrTypeError,
    block_key,
    block_shape_of,
    check_devices,
    check_topology,
    make_block_type,
    new_matrix,
    no_tape,
    overlaps,
    read_int,
    row_end_args,
    scalar_of,
    type_name,
    vector_type,
)
from .topology import Entries, Runs, _dummy, run_slot

# -- matrix-vector product ------------------------------------------------------------------------------------------


@functools.cache
def _mv_kernels(key: tuple[Any, ...], block_type: Any, xt: Any, yt: Any, xt_t: Any, yt_t: Any) -> tuple[Any, Any]:
    scalar = scalar_of(block_type)
    r, c = block_shape_of(block_type)
    is_mat = wp.types.type_is_matrix(block_type)
    XV = wp.types.vector(length=c, dtype=scalar)  # noqa: N806 - a type
    XVT = wp.types.vector(length=r, dtype=scalar)  # noqa: N806 - a type
    x_scalar = c == 1
    y_scalar = r == 1
    xt_scalar = r == 1
    yt_scalar = c == 1

    @wp.kernel
    def mv(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int, columns: wp.array(dtype=int),
           values: wp.array(dtype=block_type), x: wp.array(dtype=xt), y: wp.array(dtype=yt), alpha: scalar,
           beta: scalar, read_x: int, read_y: int):
        row = wp.tid()
        acc = yt(0.0)
        if read_x != 0:
            beg = offsets[row]
            end = offsets[row + 1]
            if has_counts != 0:
                end = beg + counts[row]
            for k in range(beg, end):
                if wp.static(not is_mat):
                    acc += values[k] * x[columns[k]]
                else:
                    if wp.static(x_scalar):
                        p = values[k] * XV(x[columns[k]])
                    else:
                        p = values[k] * x[columns[k]]
                    if wp.static(y_scalar):
                        acc += p[0]
                    else:
                        acc += p
        if read_y != 0:
            y[row] = alpha * acc + beta * y[row]
        else:
            y[row] = alpha * acc

    @wp.kernel
    def mv_transposed(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int,
                      columns: wp.array(dtype=int), values: wp.array(dtype=block_type), x: wp.array(dtype=xt_t),
                      y: wp.array(dtype=yt_t), alpha: scalar):
        row = wp.tid()
        beg = offsets[row]
        end = offsets[row + 1]
        if has_counts != 0:
            end = beg + counts[row]
        xr = x[row]
        for k in range(beg, end):
            if wp.static(not is_mat):
                wp.atomic_add(y, columns[k], alpha * values[k] * xr)
            else:
                if wp.static(xt_scalar):
                    p = wp.transpose(values[k]) * XVT(xr)
                else:
                    p = wp.transpose(values[k]) * xr
                if wp.static(yt_scalar):
                    wp.atomic_add(y, columns[k], alpha * p[0])
                else:
                    wp.atomic_add(y, columns[k], alpha * p)

    return mv, mv_transposed


@wp.kernel
def _scale_vector(y: wp.array(dtype=Any), beta: Any, read_y: int):
    i = wp.tid()
    if read_y != 0:
        y[i] = beta * y[i]
    else:
        y[i] = y.dtype(0.0)


def _as_vectors(v: Any, length: int, count: int, scalar: Any, name: str) -> Any:
    """``v`` as a 1-d array of ``count`` blocks of ``length`` coefficients (a flat scalar array is viewed)."""
    want = vector_type(length, scalar)
    if not isinstance(v, wp.array):
        raise BsrTypeError(f"bsr_mv(): {name} must be a treadle array, got {type(v).__name__}")
    if v.ndim == 1 and wp.types.types_equal(v.dtype, want) and v.shape[0] == count:
        return v
    if (v.ndim == 1 and v.dtype == scalar and v.shape[0] == count * length and length > 1 and v.is_contiguous):
        out = v.reshape((count, length)).view(want)
        if v.grad is not None:
            out.grad = v.grad.reshape((count, length)).view(want)
        return out
    raise BsrError(f"Incompatible '{name}' vector for bsr_mv: expected {count} entries of {type_name(want)} (or "
                   f"{count * length} of {type_name(scalar)}), got {v.shape[0]} entries of {type_name(v.dtype)}")


def bsr_mv(A: Any, x: Any, y: Any = None, alpha: float = 1.0, beta: float = 0.0, transpose: bool = False,
           work_buffer: Any = None, tile_size: int = 0) -> Any:
    """Sparse matrix-vector product ``y := alpha * A @ x + beta * y``; return ``y``.

    ``x`` and ``y`` hold one entry per block column (row) of ``A``: vectors of the block width (height), or scalars
    for blocks of width (height) 1; a flat scalar array of the full length works too. They may be the same array.

    Args:
        A: the matrix (or a matrix expression such as ``2.0 * B``; its scale is folded into ``alpha``).
        x: the vector operand.
        y: the result, updated in place; allocated (and taken as zero) when ``None``.
        alpha: factor of ``A @ x``; when 0, ``x`` is not read.
        beta: factor of ``y``; when 0, ``y`` is not read (it may hold anything, NaNs included).
        transpose: multiply by the transpose of ``A``. Its contributions are summed with atomic additions, so the
            rounding order varies from run to run (unless ``wp.config.deterministic``).
        work_buffer: scratch array like ``y``, used when ``x`` and ``y`` alias (else a temporary is allocated).
        tile_size: accepted for compatibility; Treadle chooses its own loop structure.

    Returns:
        ``y``.
    """
    fn = "bsr_mv"
    mat, scale, transposed = as_linear(A, fn, "A")
    transpose = bool(transpose) ^ transposed
    alpha = alpha * scale
    scalar = scalar_of(mat.values.dtype)
    r, c = mat.block_shape
    in_len, in_count, out_len, out_count = (r, mat.nrow, c, mat.ncol) if transpose else (c, mat.ncol, r, mat.nrow)
    x = _as_vectors(x, in_len, in_count, scalar, "x")
    if y is None:
        y = wp.zeros(out_count, dtype=vector_type(out_len, scalar), device=mat.device,
                     requires_grad=x.requires_grad or mat.requires_grad)
        beta = 0.0
        y_user = y
    else:
        y_user = y
        y = _as_vectors(y, out_len, out_count, scalar, "y")
    check_devices(fn, A=mat.values, x=x, y=y, work_buffer=work_buffer)
    if float(alpha) != 0.0 and overlaps(x, y):
        if work_buffer is None:
            work_buffer = wp.empty_like(x)
        else:
            work_buffer = _as_vectors(work_buffer, in_len, in_count, scalar, "work_buffer")
        wp.copy(work_buffer, x)
        x = work_buffer
    bt = mat.values.dtype
    xt = vector_type(c, scalar)
    yt = vector_type(r, scalar)
    mv, mv_t = _mv_kernels(block_key(bt), bt, xt, yt, yt, xt)
    counts, has = row_end_args(mat)
    counts = counts if has else _dummy(mat.device)
    read_x = int(float(alpha) != 0.0)
    read_y = int(float(beta) != 0.0)
    if not transpose:
        if mat.nrow > 0:
            wp.launch(mv, mat.nrow, device=mat.device,
                      inputs=[mat.offsets, counts, has, mat.columns, mat.values, x, y, scalar(alpha), scalar(beta),
                              read_x, read_y])
        return y_user
    if out_count > 0 and float(beta) != 1.0:
        wp.launch(_scale_vector, out_count, inputs=[y, scalar(beta), read_y], device=mat.device)
    if read_x and mat.nrow > 0:
        wp.launch(mv_t, mat.nrow, device=mat.device,
                  inputs=[mat.offsets, counts, has, mat.columns, mat.values, x, y, scalar(alpha)])
    return y_user


# -- matrix-matrix product ------------------------------------------------------------------------------------------


@wp.func
def _row_range(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int, row: int) -> wp.vec2i:
    beg = offsets[row]
    end = offsets[row + 1]
    if has_counts != 0:
        end = beg + counts[row]
    return wp.vec2i(beg, end)


@wp.kernel(enable_backward=False)
def _mm_count(x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int), x_has: int,
              x_columns: wp.array(dtype=int), y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int),
              y_has: int, z_offsets: wp.array(dtype=int), z_counts: wp.array(dtype=int), z_has: int, use_z: int,
              nrow: int, counts: wp.array(dtype=int)):
    i = wp.tid()
    if i >= nrow:
        counts[i] = 0
        return
    xr = _row_range(x_offsets, x_counts, x_has, i)
    n = 0
    for a in range(xr[0], xr[1]):
        yr = _row_range(y_offsets, y_counts, y_has, x_columns[a])
        n += yr[1] - yr[0]
    if use_z != 0:
        zr = _row_range(z_offsets, z_counts, z_has, i)
        n += zr[1] - zr[0]
    counts[i] = n


@wp.kernel(enable_backward=False)
def _mm_fill(x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int), x_has: int,
             x_columns: wp.array(dtype=int), y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int),
             y_has: int, y_columns: wp.array(dtype=int), z_offsets: wp.array(dtype=int),
             z_counts: wp.array(dtype=int), z_has: int, z_columns: wp.array(dtype=int), use_z: int,
             seg_beg: wp.array(dtype=int), seg_end: wp.array(dtype=int), cap: int, cols: wp.array(dtype=int),
             srcs: wp.array(dtype=int), a_slot: wp.array(dtype=int), b_slot: wp.array(dtype=int)):
    i = wp.tid()
    p = wp.min(seg_beg[i], cap)
    seg_beg[i] = p
    xr = _row_range(x_offsets, x_counts, x_has, i)
    for a in range(xr[0], xr[1]):
        yr = _row_range(y_offsets, y_counts, y_has, x_columns[a])
        for b in range(yr[0], yr[1]):
            if p < cap:
                cols[p] = y_columns[b]
                srcs[p] = p
                a_slot[p] = a
                b_slot[p] = b
                p += 1
    if use_z != 0:
        zr = _row_range(z_offsets, z_counts, z_has, i)
        for b in range(zr[0], zr[1]):
            if p < cap:
                cols[p] = z_columns[b]
                srcs[p] = p
                a_slot[p] = -1
                b_slot[p] = b
                p += 1
    seg_end[i] = p


@wp.kernel(enable_backward=False)
def _clamp_offsets(offsets: wp.array(dtype=int), cap: int, max_new: int, nrow: int):
    r = wp.tid()
    if r == nrow:
        if offsets[nrow] > cap:
            wp.printf("bsr_mm: the product has %d blocks, more than max_new_nnz=%d (plus the blocks of z) allows; "
                      "the blocks past %d were dropped, as the max_new_nnz limit was exceeded\n", offsets[nrow],
                      max_new, cap)
    offsets[r] = wp.min(offsets[r], cap)


def _product_type(x_type: Any, y_type: Any) -> Any:
    return make_block_type((block_shape_of(x_type)[0], block_shape_of(y_type)[1]), scalar_of(x_type))


@functools.cache
def _block_product(key: tuple[Any, ...], x_type: Any, y_type: Any, z_type: Any) -> Any:
    prod_is_mat = wp.types.type_is_matrix(x_type) or wp.types.type_is_matrix(y_type)
    z_is_mat = wp.types.type_is_matrix(z_type)
    to_scalar = prod_is_mat and not z_is_mat
    to_matrix = z_is_mat and not prod_is_mat

    @wp.func
    def prod(a: x_type, b: y_type) -> z_type:
        if wp.static(to_scalar):
            return (a * b)[0, 0]
        elif wp.static(to_matrix):
            return z_type(a * b)
        else:
            return a * b

    return prod


def block_product(x_type: Any, y_type: Any, z_type: Any) -> Any:
    """The ``@func`` multiplying an ``x_type`` block by a ``y_type`` block into a ``z_type`` block (cached)."""
    return _block_product((block_key(x_type), block_key(y_type), block_key(z_type)), x_type, y_type, z_type)


@functools.cache
def _mm_kernels(key: tuple[Any, ...], x_type: Any, y_type: Any, z_type: Any) -> tuple[Any, Any]:
    scalar = scalar_of(z_type)
    prod = block_product(x_type, y_type, z_type)

    @wp.kernel
    def gather_mm(run_beg: wp.array(dtype=int), run_end: wp.array(dtype=int), srcs: wp.array(dtype=int),
                  uoff: wp.array(dtype=int), nrow: int, slot: wp.array(dtype=int), use_slot: int,
                  a_slot: wp.array(dtype=int), b_slot: wp.array(dtype=int), x: wp.array(dtype=x_type),
                  y: wp.array(dtype=y_type), alpha: scalar, z_old: wp.array(dtype=z_type), beta: scalar,
                  z_mode: int, out: wp.array(dtype=z_type)):
        # z_mode 0: z's blocks are entries of the runs; 1: z already has the product's topology (slot u);
        # 2: z is not read
        u = wp.tid()
        s = run_slot(u, uoff, nrow, slot, use_slot)
        if s < 0:
            return
        acc = z_type(0.0)
        acc_z = z_type(0.0)
        for p in range(run_beg[u], run_end[u]):
            k = srcs[p]
            a = a_slot[k]
            if a >= 0:
                acc += prod(x[a], y[b_slot[k]])
            elif z_mode == 0:
                acc_z += z_old[b_slot[k]]
        if z_mode == 1:
            acc_z = z_old[s]
        if z_mode == 2:
            out[s] = alpha * acc
        else:
            out[s] = alpha * acc + beta * acc_z

    @wp.kernel
    def masked_mm(z_offsets: wp.array(dtype=int), z_counts: wp.array(dtype=int), z_has: int,
                  z_columns: wp.array(dtype=int), x_offsets: wp.array(dtype=int), x_counts: wp.array(dtype=int),
                  x_has: int, x_columns: wp.array(dtype=int), x: wp.array(dtype=x_type),
                  y_offsets: wp.array(dtype=int), y_counts: wp.array(dtype=int), y_has: int,
                  y_columns: wp.array(dtype=int), y: wp.array(dtype=y_type), alpha: scalar,
                  z_old: wp.array(dtype=z_type), beta: scalar, read_z: int, out: wp.array(dtype=z_type)):
        i = wp.tid()
        zr = _row_range(z_offsets, z_counts, z_has, i)
        xr = _row_range(x_offsets, x_counts, x_has, i)
        for b in range(zr[0], zr[1]):
            col = z_columns[b]
            acc = z_type(0.0)
            for a in range(xr[0], xr[1]):
                yr = _row_range(y_offsets, y_counts, y_has, x_columns[a])
                lo = yr[0]
                hi = yr[1]
                while lo < hi:
                    mid = (lo + hi) / 2
                    if y_columns[mid] < col:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo < yr[1]:
                    if y_columns[lo] == col:
                        acc += prod(x[a], y[lo])
            if read_z != 0:
                out[b] = alpha * acc + beta * z_old[b]
            else:
                out[b] = alpha * acc

    return gather_mm, masked_mm


def _mm_kernel_pair(x: BsrMatrix, y: BsrMatrix, z: BsrMatrix) -> tuple[Any, Any]:
    xt, yt, zt = x.values.dtype, y.values.dtype, z.values.dtype
    return _mm_kernels((block_key(xt), block_key(yt), block_key(zt)), xt, yt, zt)


class bsr_mm_work_arrays:  # noqa: N801 - the reference's name
    """Reusable temporary storage of :func:`bsr_mm`.

    Passing the same instance to successive products reuses its arrays, and lets ``reuse_topology=True`` skip the
    symbolic phase (counting, expanding and merging the product's entries) when the operands keep their topology.
    """

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, device: Any) -> None:
        self._device = device
        self._entries: Entries | None = None
        self._runs: Runs | None = None
        self._a_slot: Any = None
        self._b_slot: Any = None
        self._offsets: Any = None
        self._columns: Any = None
        self._shape: tuple[int, ...] = ()
        self._rowwise: Any = None

    def _buffer(self, name: str, size: int, device: Any) -> Any:
        cur = getattr(self, name, None)
        if cur is None or cur.shape[0] < size or cur.device != device:
            cur = wp.empty(max(size, 1), dtype=int, device=device)
            setattr(self, name, cur)
        return cur


def _check_mm(x: BsrMatrix, y: BsrMatrix, z: BsrMatrix | None) -> None:
    (xr, xc), (yr, yc) = x.block_shape, y.block_shape
    zshape = (xr, yc)
    if xc != yr or (z is not None and z.block_shape != zshape):
        got = z.block_shape if z is not None else zshape
        raise BsrError(f"Incompatible block sizes for matrix multiplication, got ({x.block_shape}, {y.block_shape}) "
                       f"and ({got})")
    if x.ncol != y.nrow or (z is not None and (z.nrow, z.ncol) != (x.nrow, y.ncol)):
        zs = f", z is {z.nrow} x {z.ncol}" if z is not None else ""
        raise BsrError(f"Incompatible number of rows/columns for matrix multiplication: x is {x.nrow} x {x.ncol} "
                       f"blocks, y is {y.nrow} x {y.ncol}{zs}")
    scalars = {scalar_of(x.values.dtype), scalar_of(y.values.dtype)}
    if z is not None:
        scalars.add(scalar_of(z.values.dtype))
    if len(scalars) > 1:
        names = ", ".join(type_name(s) for s in (scalar_of(x.values.dtype), scalar_of(y.values.dtype)) +
                          ((scalar_of(z.values.dtype),) if z is not None else ()))
        raise BsrError(f"Matrices must have the same scalar type, got {names}")


def bsr_mm(x: Any, y: Any, z: BsrMatrix | None = None, alpha: float = 1.0, beta: float = 0.0,
           work_arrays: bsr_mm_work_arrays | None = None, reuse_topology: bool = False, tile_size: int = 0,
           max_new_nnz: int | None = None,
           topology: Literal["compact", "masked", "padded"] | None = None) -> BsrMatrix:
    """Sparse matrix-matrix product ``z := alpha * x @ y + beta * z``; return ``z``.

    Any two (or all three) of the matrices may be the same object. Each block of the result sums its products in a
    fixed order (reproducible results).

    Args:
        x: left operand (a matrix or matrix expression; scales are folded into ``alpha``).
        y: right operand.
        z: result, updated in place; allocated (and taken as zero) when ``None``.
        alpha: factor of ``x @ y``.
        beta: factor of ``z``; when 0, ``z``'s values are not read.
        work_arrays: a :class:`bsr_mm_work_arrays` whose storage is reused between calls.
        reuse_topology: skip the symbolic phase and reuse the product topology stored in ``work_arrays`` by an
            earlier call with operands of the same topology (compact topology only); ``z`` must be the result of that
            call.
        tile_size: accepted for compatibility; Treadle chooses its own loop structure.
        max_new_nnz: upper bound of the product's blocks (not counting ``z``'s own); blocks beyond it are dropped
            with a message on stdout.
        topology: ``"compact"`` (default), ``"masked"`` (keep ``z``'s blocks; no allocation, no host read) or
            ``"padded"`` (write into ``z``'s row capacity).

    Returns:
        ``z``.

    Sizing a compact or padded product reads its number of entries back to the host, so under graph capture only
    the masked and ``reuse_topology`` forms are available.
    """
    fn = "bsr_mm"
    xm, xs, xt = as_linear(x, fn, "x")
    ym, ys, yt = as_linear(y, fn, "y")
    if xt or yt:
        from .transpose import bsr_transposed

        if xt:
            xm = bsr_transposed(xm)
        if yt:
            ym = bsr_transposed(ym)
    alpha = alpha * xs * ys
    if z is not None and not isinstance(z, BsrMatrix):
        raise BsrTypeError(f"{fn}(): z must be a BsrMatrix, got {type(z).__name__}")
    _check_mm(xm, ym, z)
    topology = check_topology("compact" if topology is None else topology, ("compact", "masked", "padded"), fn)
    device = check_devices(fn, x=xm.values, y=ym.values, z=None if z is None else z.values)
    if z is None:
        z = new_matrix(xm.nrow, ym.ncol, _product_type(xm.values.dtype, ym.values.dtype), device,
                       requires_grad=xm.requires_grad or ym.requires_grad)
        beta = 0.0
        if topology != "compact":
            raise BsrError(f"{fn}(): topology={topology!r} needs an existing z")
    scalar = scalar_of(z.values.dtype)
    gather_mm, masked_mm = _mm_kernel_pair(xm, ym, z)
    xc, xh = row_end_args(xm)
    yc, yh = row_end_args(ym)
    d = _dummy(device)
    xc, yc = (xc if xh else d), (yc if yh else d)
    use_z = float(beta) != 0.0

    if topology == "masked":
        zc, zh = row_end_args(z)
        z_old = z.values
        out = z.values
        if overlaps(z.values, xm.values) or overlaps(z.values, ym.values):
            out = wp.empty_like(z.values)
        if z.nrow > 0:
            wp.launch(masked_mm, z.nrow, device=device,
                      inputs=[z.offsets, zc if zh else d, zh, z.columns, xm.offsets, xc, xh, xm.columns, xm.values,
                              ym.offsets, yc, yh, ym.columns, ym.values, scalar(alpha), z_old, scalar(beta),
                              int(use_z), out])
        z.values = out
        return z

    if reuse_topology:
        if topology != "compact":
            raise BsrError(f"{fn}(): reuse_topology=True only works with topology='compact'")
        wa = work_arrays
        if wa is not None and wa._rowwise is not None and wa._runs is None:
            from .rowwise import rowwise_product

            wa._rowwise = rowwise_product(xm, ym, z, alpha, beta, wa._rowwise)
            return z
        if wa is None or wa._runs is None or wa._shape != (xm.nrow, xm.ncol, ym.ncol):
            raise BsrError(f"{fn}(): reuse_topology=True needs work_arrays filled by an earlier product of matrices "
                           "of the same shapes")
        runs = wa._runs
        out = z.values
        if overlaps(out, xm.values) or overlaps(out, ym.values) or out.shape[0] < runs.capacity:
            out = wp.empty(max(runs.capacity, out.shape[0]), dtype=z.values.dtype, device=device,
                           requires_grad=z.values.requires_grad)
        if runs.capacity > 0:
            wp.launch(gather_mm, runs.capacity, device=device,
                      inputs=[*runs_args(runs), wa._a_slot, wa._b_slot, xm.values, ym.values, scalar(alpha),
                              z.values, scalar(beta), 1 if float(beta) != 0.0 else 2, out])
        z.values = out
        return z

    if (device.is_cpu and topology == "compact" and max_new_nnz is None
            and not (xm.requires_grad or ym.requires_grad or z.values.requires_grad)):
        # no gradient needed: the row-wise product (Gustavson's), much faster on a CPU
        from .rowwise import rowwise_product

        wa = work_arrays if work_arrays is not None else bsr_mm_work_arrays()
        wa._rowwise = rowwise_product(xm, ym, z, alpha, beta, None)
        wa._runs = None
        return z

    # symbolic phase: per-row entry counts, then the expanded entries
    zc, zh = row_end_args(z)
    zc = zc if zh else d
    nrow = xm.nrow
    wa = work_arrays if work_arrays is not None else bsr_mm_work_arrays()
    counts = wa._buffer("_counts", nrow + 1, device)
    seg_beg = wa._buffer("_seg_beg", nrow + 1, device)
    with no_tape():
        wp.launch(_mm_count, nrow + 1, device=device,
                  inputs=[xm.offsets, xc, xh, xm.columns, ym.offsets, yc, yh, z.offsets, zc, zh, int(use_z), nrow,
                          counts])
        wp.utils.array_scan(counts[:nrow + 1], seg_beg[:nrow + 1], inclusive=False)
    total = read_int(seg_beg, nrow, f"{fn}() (sizing the product)")
    cap = total
    seg_end = wa._buffer("_seg_end", max(nrow, 1), device)
    cols = wa._buffer("_cols", cap, device)
    srcs = wa._buffer("_srcs", cap, device)
    a_slot = wa._buffer("_a", cap, device)
    b_slot = wa._buffer("_b", cap, device)
    if nrow > 0:
        with no_tape():
            wp.launch(_mm_fill, nrow, device=device,
                      inputs=[xm.offsets, xc, xh, xm.columns, ym.offsets, yc, yh, ym.columns, z.offsets, zc, zh,
                              z.columns, int(use_z), seg_beg, seg_end, cap, cols, srcs, a_slot, b_slot])
    entries = Entries(nrow, cols, srcs, seg_beg, seg_end, cap)
    z_old = z.values
    ncol = ym.ncol

    def values_fn(runs: Runs, out_values: Any) -> None:
        if runs.capacity == 0:
            return
        wp.launch(gather_mm, runs.capacity, device=device,
                  inputs=[*runs_args(runs), a_slot, b_slot, xm.values, ym.values, scalar(alpha), z_old,
                          scalar(beta), 0 if use_z else 2, out_values])

    z.ncol = ncol
    clamp = None
    if max_new_nnz is not None and topology == "compact":
        clamp = int(max_new_nnz) + (int(z.nnz) if use_z else 0)

    def clamped_values(runs: Runs, out_values: Any) -> None:
        if clamp is not None and clamp < runs.capacity:
            with no_tape():
                wp.launch(_clamp_offsets, nrow + 1, inputs=[runs.uoff, clamp, int(max_new_nnz), nrow],
                          device=device)
        values_fn(runs, out_values)

    runs = assemble(z, entries, topology, clamped_values,
                    sources=[xm.values, ym.values, z.values, xm.columns, ym.columns, z.columns, xm.offsets,
                             ym.offsets, z.offsets], requires_grad=xm.requires_grad or ym.requires_grad, fn=fn)
    if clamp is not None:
        z.nnz = min(z.nnz, clamp)
    if topology == "compact":
        wa._runs, wa._a_slot, wa._b_slot = runs, a_slot, b_slot
        wa._shape = (xm.nrow, xm.ncol, ym.ncol)
        wa._rowwise = None
    return z
