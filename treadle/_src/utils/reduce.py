"""Scans and reductions built from Treadle kernels: ``array_scan``, ``array_sum``, ``array_inner``.

All are block-parallel (``common.blocks``): a scan sums each block (``_block_totals``), scans the block totals
(``_scan_totals``, one thread) and rescans each block from its offset (``_block_scan``); a whole-array sum or inner
product accumulates each block in float64 (``_block_partials``) and adds the blocks' partial sums in a last
one-thread kernel, so the result can be written to a device array (and replayed in a captured graph). Reductions
along an axis give each output element one thread that walks the axis.
"""

from __future__ import annotations

from typing import Any

import treadle as wp

from ..runtime.graph import capturing
from .common import (
    UtilsTypeError,
    UtilsValueError,
    block_span,
    blocks,
    check_array,
    check_count,
    check_same_device,
    components,
    flat,
    scalar_type,
    type_name,
    view2d,
)

_SCAN_SCALARS = (wp.int32, wp.int64, wp.float32, wp.float64)
_FLOAT_SCALARS = (wp.float32, wp.float64)
_MAX_COMPONENTS = 64


@wp.kernel(enable_backward=False)
def _block_totals(a: wp.array(dtype=Any), n: int, block: int, spread: int, nblocks: int,
                  totals: wp.array(dtype=Any)):
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    b = span[0]
    start = span[1]
    end = span[2]
    s = a[start]
    for i in range(start + 1, end):
        s = s + a[i]
    totals[b] = s


@wp.kernel(enable_backward=False)
def _scan_totals(totals: wp.array(dtype=Any), nblocks: int, zero: wp.array(dtype=Any)):
    # exclusive scan of the block totals, in place: the offset each block starts from
    s = zero[0]
    for b in range(nblocks):
        t = totals[b]
        totals[b] = s
        s = s + t


@wp.kernel(enable_backward=False)
def _block_scan(a: wp.array(dtype=Any), out: wp.array(dtype=Any), n: int, block: int, spread: int, nblocks: int,
                offsets: wp.array(dtype=Any), inclusive: int):
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    b = span[0]
    start = span[1]
    end = span[2]
    s = offsets[b]
    if inclusive != 0:
        # the first block starts from its first element, not 0 + it (which would turn -0.0 into +0.0)
        x = a[start]
        if b == 0:
            s = x
        else:
            s = s + x
        out[start] = s
        for i in range(start + 1, end):
            s = s + a[i]
            out[i] = s
    else:
        for i in range(start, end):
            x = a[i]
            out[i] = s
            s = s + x


@wp.func
def _narrow(v: wp.float64, like: wp.float32) -> wp.float32:
    return wp.float32(v)


@wp.func
def _narrow(v: wp.float64, like: wp.float64) -> wp.float64:  # noqa: F811 - overload by output type
    return v


@wp.kernel(enable_backward=False)
def _block_partials(a: wp.array2d(dtype=Any), b: wp.array2d(dtype=Any), use_b: int, n: int, block: int,
                    spread: int, nblocks: int, partials: wp.array2d(dtype=wp.float64)):
    # per block: float64 sums of each component (use_b == 0) or of the products a * b over all components
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    bi = span[0]
    start = span[1]
    end = span[2]
    comps = a.shape[1]
    acc = wp.zeros(64, dtype=wp.float64)
    if use_b != 0:
        s = wp.float64(0.0)
        for i in range(start, end):
            for c in range(comps):
                s = s + wp.float64(a[i, c]) * wp.float64(b[i, c])
        partials[bi, 0] = s
    else:
        for i in range(start, end):
            for c in range(comps):
                acc[c] = acc[c] + wp.float64(a[i, c])
        for c in range(comps):
            partials[bi, c] = acc[c]


@wp.kernel(enable_backward=False)
def _block_partials1(a: wp.array(dtype=Any), b: wp.array(dtype=Any), use_b: int, n: int, block: int, spread: int,
                     nblocks: int, partials: wp.array2d(dtype=wp.float64)):
    # scalar arrays: four accumulators, so that consecutive additions do not wait on each other
    span = block_span(wp.tid(), n, block, spread, nblocks)
    if span[0] < 0:
        return
    bi = span[0]
    start = span[1]
    end = span[2]
    s0 = wp.float64(0.0)
    s1 = wp.float64(0.0)
    s2 = wp.float64(0.0)
    s3 = wp.float64(0.0)
    i = start
    if use_b != 0:
        while i + 4 <= end:
            s0 = s0 + wp.float64(a[i]) * wp.float64(b[i])
            s1 = s1 + wp.float64(a[i + 1]) * wp.float64(b[i + 1])
            s2 = s2 + wp.float64(a[i + 2]) * wp.float64(b[i + 2])
            s3 = s3 + wp.float64(a[i + 3]) * wp.float64(b[i + 3])
            i = i + 4
        while i < end:
            s0 = s0 + wp.float64(a[i]) * wp.float64(b[i])
            i = i + 1
    else:
        while i + 4 <= end:
            s0 = s0 + wp.float64(a[i])
            s1 = s1 + wp.float64(a[i + 1])
            s2 = s2 + wp.float64(a[i + 2])
            s3 = s3 + wp.float64(a[i + 3])
            i = i + 4
        while i < end:
            s0 = s0 + wp.float64(a[i])
            i = i + 1
    partials[bi, 0] = (s0 + s1) + (s2 + s3)


@wp.kernel(enable_backward=False)
def _finish_partials(partials: wp.array2d(dtype=wp.float64), nblocks: int, out: wp.array2d(dtype=Any)):
    c = wp.tid()
    s = wp.float64(0.0)
    for bi in range(nblocks):
        s = s + partials[bi, c]
    out[0, c] = _narrow(s, out[0, c])


@wp.kernel(enable_backward=False)
def _axis_reduce(a: wp.array3d(dtype=Any), b: wp.array3d(dtype=Any), use_b: int, comps: int,
                 out: wp.array2d(dtype=Any)):
    # a, b: (outer, axis, inner * comps) scalars; out: (outer, inner * comps) for sums, (outer, inner) for products
    o, j = wp.tid()
    s = wp.float64(0.0)
    if use_b != 0:
        for k in range(a.shape[1]):
            for c in range(comps):
                s = s + wp.float64(a[o, k, j * comps + c]) * wp.float64(b[o, k, j * comps + c])
    else:
        for k in range(a.shape[1]):
            s = s + wp.float64(a[o, k, j])
    out[o, j] = _narrow(s, out[o, j])


def _check_scan_dtype(name: str, dtype: Any, allowed: tuple[Any, ...]) -> None:
    if scalar_type(dtype) not in allowed or (wp.types.is_matrix(dtype) and allowed is _SCAN_SCALARS):
        names = ", ".join(type_name(t) for t in allowed)
        raise UtilsTypeError(f"{name} has unsupported data type {type_name(dtype)}; supported: scalars of {names}"
                             f"{' and vectors of them' if allowed is _SCAN_SCALARS else ' and vectors/matrices of them'}")


def array_scan(in_array: Any, out_array: Any, inclusive: bool = True) -> None:
    """Write the running sum (prefix sum) of ``in_array`` to ``out_array``.

    ``out[i] = in[0] + ... + in[i]`` (inclusive) or ``in[0] + ... + in[i - 1]`` with ``out[0] = 0`` (exclusive);
    vectors are scanned component by component. Multi-dimensional (contiguous) arrays are scanned in memory order.
    ``out_array`` may be ``in_array``.

    Args:
        in_array: ``int32``, ``int64``, ``float32`` or ``float64`` scalars, or vectors of them.
        out_array: the result: same data type and number of elements.
        inclusive: inclusive (default) or exclusive scan.

    Raises:
        UtilsTypeError: unsupported or mismatched data types.
        UtilsValueError: different devices or sizes, or a strided multi-dimensional array.

    """
    check_array("in_array", in_array)
    check_array("out_array", out_array)
    check_same_device(in_array=in_array, out_array=out_array)
    _check_scan_dtype("in_array", in_array.dtype, _SCAN_SCALARS)
    if out_array.dtype != in_array.dtype:
        raise UtilsTypeError(f"in_array and out_array data types do not match ({type_name(in_array.dtype)} vs "
                             f"{type_name(out_array.dtype)})")
    if in_array.size != out_array.size:
        raise UtilsValueError(f"in_array and out_array sizes do not match ({in_array.size} vs {out_array.size})")
    a, out = flat("in_array", in_array), flat("out_array", out_array)
    n = a.shape[0]
    if n == 0:
        return
    device = a.device
    plan = blocks(n, min_block=65536)
    zero = wp.zeros(1, dtype=a.dtype, device=device)
    totals = wp.empty(plan.nblocks, dtype=a.dtype, device=device)
    shape = [n, plan.block, plan.spread, plan.nblocks]
    if plan.nblocks > 1:
        wp.launch(_block_totals, plan.dim, inputs=[a, *shape, totals], device=device)
        wp.launch(_scan_totals, 1, inputs=[totals, plan.nblocks, zero], device=device)
    else:
        wp.copy(totals, zero)
    wp.launch(_block_scan, plan.dim, inputs=[a, out, *shape, totals, int(bool(inclusive))], device=device)


def _check_reduce_dtype(name: str, a: Any) -> None:
    if scalar_type(a.dtype) not in _FLOAT_SCALARS:
        raise UtilsTypeError(f"{name} has unsupported data type {type_name(a.dtype)}; its scalar type must be "
                             "float32 or float64")
    comps = components(a.dtype)
    if comps > _MAX_COMPONENTS:
        raise UtilsTypeError(f"{name} has {comps} components per element; at most {_MAX_COMPONENTS} are supported")


def _normalize_axis(axis: Any, ndim: int, fname: str) -> int:
    ax = int(axis)
    if ax < -ndim or ax >= ndim:
        raise IndexError(f"{fname}() axis {axis} is out of bounds for an array with {ndim} dimensions")
    return ax % ndim


def _reduce(fname: str, a: Any, b: Any, out: Any, count: Any, axis: Any) -> Any:
    is_inner = b is not None
    out_dtype = scalar_type(a.dtype) if is_inner else a.dtype
    device = a.device
    if axis is None:
        if out is not None:
            check_array("out", out)
            check_same_device(values=a, out=out)
            if out.dtype != out_dtype:
                raise UtilsTypeError(f"out array should have type {type_name(out_dtype)}, got {type_name(out.dtype)}")
            if out.shape != (1,):
                raise UtilsValueError(f"out array should have shape (1,), got {out.shape}")
        arrays = [a] if b is None else [a, b]
        flats = [x if x.ndim == 1 else (x if x.is_contiguous else x.contiguous()).flatten() for x in arrays]
        n = flats[0].shape[0]
        if count is not None:
            c = check_count("count" if is_inner else "value_count", count)
            if c > n:
                raise UtilsValueError(f"{'count' if is_inner else 'value_count'} ({c}) exceeds the number of "
                                      f"elements ({n})")
            n = c
            flats = [x[:n] for x in flats]
        if out is None and n > 0 and capturing():
            raise NotImplementedError(f"{fname}() returns its result to the host, which a graph capture cannot "
                                      "replay; pass out= (a 1-element array) while capturing")
        result = out if out is not None else wp.empty(1, dtype=out_dtype, device=device)
        views = [view2d(x) for x in flats]
        res2d = view2d(result)
        plan = blocks(n, min_block=65536)
        partials = wp.zeros((plan.nblocks, views[0].shape[1]), dtype=wp.float64, device=device)
        if n > 0 and components(a.dtype) == 1:
            wp.launch(_block_partials1, plan.dim, device=device,
                      inputs=[flats[0], flats[-1], int(is_inner), n, plan.block, plan.spread, plan.nblocks, partials])
        elif n > 0:
            wp.launch(_block_partials, plan.dim, device=device,
                      inputs=[views[0], views[-1], int(is_inner), n, plan.block, plan.spread, plan.nblocks, partials])
        wp.launch(_finish_partials, res2d.shape[1], inputs=[partials, plan.nblocks if n > 0 else 0, res2d],
                  device=device)
        del views, flats
        if out is not None:
            return out
        return result.numpy()[0]

    ax = _normalize_axis(axis, a.ndim, fname)
    if count is not None:
        raise UtilsValueError(f"{fname}() takes either axis or {'count' if is_inner else 'value_count'}, not both")
    keep = tuple(1 if d == ax else s for d, s in enumerate(a.shape))
    if out is None:
        out = wp.empty(keep, dtype=out_dtype, device=device)
    else:
        check_array("out", out)
        check_same_device(values=a, out=out)
        if out.dtype != out_dtype:
            raise UtilsTypeError(f"out array should have type {type_name(out_dtype)}, got {type_name(out.dtype)}")
        if tuple(out.shape) != keep:
            raise UtilsValueError(f"out array should have shape {keep}, got {tuple(out.shape)}")
    if a.size == 0:
        out.zero_()
        return out
    ncomp = components(a.dtype)
    outer = 1
    for s in a.shape[:ax]:
        outer *= s
    inner = a.size // (outer * a.shape[ax])
    st = scalar_type(a.dtype)
    size = wp.types.type_size_in_bytes(st)

    def as3d(x: Any) -> tuple[Any, Any]:
        base = x if x.is_contiguous else x.contiguous()
        return base, wp.array(ptr=base.ptr, shape=(outer, a.shape[ax], inner * ncomp), dtype=st, device=device,
                              strides=(a.shape[ax] * inner * ncomp * size, inner * ncomp * size, size))

    a_base, a3 = as3d(a)
    b_base, b3 = as3d(b) if b is not None else (a_base, a3)
    target = out if out.is_contiguous else wp.empty(keep, dtype=out_dtype, device=device)
    width = inner if is_inner else inner * ncomp
    out_size = wp.types.type_size_in_bytes(scalar_type(out_dtype))
    o2 = wp.array(ptr=target.ptr, shape=(outer, width), strides=(width * out_size, out_size),
                  dtype=scalar_type(out_dtype), device=device)
    wp.launch(_axis_reduce, (outer, width), inputs=[a3, b3, int(is_inner), ncomp, o2], device=device)
    del a3, b3, o2, a_base, b_base
    if target is not out:
        wp.copy(out, target)
    return out


def array_sum(values: Any, out: Any = None, value_count: int | None = None, axis: int | None = None) -> Any:
    """Sum the elements of an array, or along one axis.

    Sums accumulate in float64 and are rounded to the array's type at the end.

    Args:
        values: an array of ``float32``/``float64`` scalars, vectors or matrices.
        out: where to write the result: shape ``(1,)`` without ``axis``, else ``values.shape`` with 1 at ``axis``;
            created when ``None``.
        value_count: sum only the first ``value_count`` elements (in memory order; without ``axis``).
        axis: the axis to sum along (negative counts from the end), or ``None`` for all elements.

    Returns:
        The sum (a NumPy scalar, or an ndarray for vector types) when ``out`` and ``axis`` are ``None``; else the
        ``out`` array.

    Raises:
        IndexError: ``axis`` is out of range.
        UtilsTypeError: unsupported data type, or an ``out`` of the wrong type.
        UtilsValueError: ``out`` of the wrong shape or device, or ``value_count`` larger than the array.
        NotImplementedError: ``out`` is ``None`` (a host result) during a graph capture.

    """
    check_array("values", values)
    _check_reduce_dtype("values", values)
    return _reduce("array_sum", values, None, out, value_count, axis)


def array_inner(a: Any, b: Any, out: Any = None, count: int | None = None, axis: int | None = None) -> Any:
    """Inner product of two arrays of the same shape and type: the sum of ``dot(a[i], b[i])``.

    For vectors and matrices every component pair is multiplied (``dot``/``ddot``); products accumulate in float64.

    Args:
        a: an array of ``float32``/``float64`` scalars, vectors or matrices.
        b: an array of the same shape and data type.
        out: where to write the result (scalar type of ``a``): shape ``(1,)`` without ``axis``, else ``a.shape`` with
            1 at ``axis``; created when ``None``.
        count: use only the first ``count`` elements (in memory order; without ``axis``).
        axis: the axis to reduce along, or ``None`` for all elements.

    Returns:
        The inner product (a NumPy scalar) when ``out`` and ``axis`` are ``None``; else the ``out`` array.

    Raises:
        ValueError: ``a`` and ``b`` have different shapes.
        IndexError: ``axis`` is out of range.
        UtilsTypeError: unsupported or different data types, or an ``out`` of the wrong type.
        UtilsValueError: different devices, ``out`` of the wrong shape, or ``count`` larger than the arrays.
        NotImplementedError: ``out`` is ``None`` (a host result) during a graph capture.

    """
    check_array("a", a)
    check_array("b", b)
    check_same_device(a=a, b=b)
    _check_reduce_dtype("a", a)
    if a.dtype != b.dtype:
        raise UtilsTypeError(f"a and b data types do not match ({type_name(a.dtype)} vs {type_name(b.dtype)})")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"array_inner() arguments must have the same shape, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return _reduce("array_inner", a, b, out, count, axis)
