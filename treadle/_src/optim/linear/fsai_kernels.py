"""Kernels of the factorised sparse approximate inverse (:class:`~.fsai.FSAI`): support search, refits, commits.

One thread handles one scalar row ``i`` of the factor ``G``. The row's support ``S`` (column indices ``<= i``, kept
in insertion order with ``i`` first) grows from ``{i}``: each step merges the sorted rows of ``A`` on the support
into the residual ``r = A g`` of the current unit-diagonal row ``g`` (the gradient of the row's energy
``g A g^T``), adds the columns ``j < i`` outside ``S`` with the largest ``|r_j| / sqrt(a_jj)``, and extends the
Cholesky factorisation ``L L^T`` of the diagonally equilibrated ``D A[S, S] D`` (``D = diag(a_ss)^(-1/2)``) by the
new entries' rows, the earlier rows being unchanged. With ``i`` first, ``z = L^-1 e_0`` and ``w = L^-T z`` give
``A[S, S]^-1 e_i = d_i D w``: the unit-diagonal row is ``D w / (d_i |z|^2)``, its equilibrated energy
``1 / |z|^2``, and the factor row ``D w / |z|``. A pivot below the floor ends the row's growth before that entry.

Scalar coefficients are read from the block storage directly (block row/column ``r // bs``, entry ``r % bs``), so
block matrices need no scalar copy; columns must be sorted within each block row. Local work is float64 in
per-thread scratch rows of global arrays (``B x m`` and ``B x m x m``), the rows being processed in batches of
``B``.
"""

from __future__ import annotations

from typing import Any

import treadle as wp


@wp.func
def _find_block(columns: wp.array(dtype=int), beg: int, end: int, col: int) -> int:
    # binary search of a sorted block row; -1 when the block is not stored
    lo = beg
    hi = end
    while lo < hi:
        mid = (lo + hi) // 2
        if columns[mid] < col:
            lo = mid + 1
        else:
            hi = mid
    if lo < end:
        if columns[lo] == col:
            return lo
    return -1


@wp.func
def _row_beg(offsets: wp.array(dtype=int), br: int) -> int:
    return offsets[br]


@wp.func
def _row_end(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int, br: int) -> int:
    if has_counts != 0:
        return offsets[br] + counts[br]
    return offsets[br + 1]


@wp.func
def _coef(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int, columns: wp.array(dtype=int),
          values: wp.array3d(dtype=Any), bs: int, r: int, c: int) -> wp.float64:
    # scalar coefficient A[r, c] (0 when its block is not stored)
    br = r // bs
    bc = c // bs
    s = _find_block(columns, _row_beg(offsets, br), _row_end(offsets, counts, has_counts, br), bc)
    if s < 0:
        return wp.float64(0.0)
    return wp.float64(values[s, r - br * bs, c - bc * bs])


@wp.func
def _valid_diag(a: wp.float64) -> bool:
    return wp.isfinite(a) and a > wp.float64(0.0)


@wp.kernel(enable_backward=False)
def select_rows(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int,
                columns: wp.array(dtype=int), values: wp.array3d(dtype=Any), bs: int, n: int, m: int, step: int,
                kap_tol: wp.float64, floor: wp.float64, row0: int, sup: wp.array2d(dtype=int),
                cur: wp.array2d(dtype=int), cend: wp.array2d(dtype=int), gt: wp.array2d(dtype=wp.float64),
                dinv: wp.array2d(dtype=wp.float64),
                work: wp.array3d(dtype=wp.float64), out_cols: wp.array2d(dtype=int),
                out_vals: wp.array2d(dtype=wp.float64), out_rank: wp.array2d(dtype=int), out_cnt: wp.array(dtype=int),
                flags: wp.array(dtype=int)):
    t = wp.tid()
    i = row0 + t
    if i >= n:
        return
    aii = _coef(offsets, counts, has_counts, columns, values, bs, i, i)
    if not _valid_diag(aii):
        flags[i] = 2
        out_cnt[i] = 1
        out_cols[i, 0] = i
        out_vals[i, 0] = wp.float64(0.0)
        out_rank[i, 0] = 0
        return
    di = wp.float64(1.0) / wp.sqrt(aii)
    sup[t, 0] = i
    gt[t, 0] = wp.float64(1.0)
    dinv[t, 0] = di
    work[t, 0, 0] = wp.float64(1.0)
    k = 1
    lll = wp.float64(1.0)  # sqrt of the row's equilibrated energy 1 / |L^-1 e_0|^2 (1 for S = {i})
    truncated = 0
    while k < m:
        k0 = k
        # -- pick up to `step` new columns by the scaled residual of the current row
        for _s in range(step):
            if k >= m:
                break
            best = -1
            bestv = wp.float64(0.0)
            bestd = wp.float64(0.0)
            # merge the sorted rows of the support: r_j = sum_q g_q A[s_q, j] for every column j < i they hold,
            # in ascending j (cursor = slot * bs + column within the block)
            for q in range(k0):
                br = sup[t, q] // bs
                cur[t, q] = _row_beg(offsets, br) * bs
                cend[t, q] = _row_end(offsets, counts, has_counts, br) * bs
            while True:
                jmin = i
                for q in range(k0):
                    c = cur[t, q]
                    if c < cend[t, q]:
                        j = columns[c // bs] * bs + c % bs
                        if j < jmin:
                            jmin = j
                if jmin >= i:
                    break
                rj = wp.float64(0.0)
                for q in range(k0):
                    c = cur[t, q]
                    if c < cend[t, q]:
                        if columns[c // bs] * bs + c % bs == jmin:
                            r = sup[t, q]
                            rj += gt[t, q] * wp.float64(values[c // bs, r % bs, c % bs])
                            cur[t, q] = c + 1
                ins = 0
                for p in range(k):
                    if sup[t, p] == jmin:
                        ins = 1
                if ins == 0:
                    ajj = _coef(offsets, counts, has_counts, columns, values, bs, jmin, jmin)
                    if _valid_diag(ajj):
                        v = wp.abs(rj) / wp.sqrt(ajj)
                        if v > bestv:
                            bestv = v
                            best = jmin
                            bestd = ajj
            if best < 0:
                break
            sup[t, k] = best
            dinv[t, k] = wp.float64(1.0) / wp.sqrt(bestd)
            k += 1
        if k == k0:
            break
        # -- Cholesky of the equilibrated A[S, S] in support order (i first): the rows of the earlier entries are
        # kept, each new entry appends one; a pivot below the floor ends the row before that entry
        for p in range(k0, k):
            ip = sup[t, p]
            for q in range(p + 1):
                a = _coef(offsets, counts, has_counts, columns, values, bs, ip, sup[t, q]) * dinv[t, p] * dinv[t, q]
                for s in range(q):
                    a -= work[t, p, s] * work[t, q, s]
                if q == p:
                    if not (a >= floor and wp.isfinite(a)):
                        truncated = 1
                    else:
                        work[t, p, p] = wp.sqrt(a)
                else:
                    work[t, p, q] = a / work[t, q, q]
            if truncated != 0:
                k = p
                break
        # -- z = L^-1 e_0, w = L^-T z: y = A[S, S]^-1 e_i = D w d_i, so the unit-diagonal row is
        # g = D w / (d_i |z|^2) and its equilibrated energy 1 / |z|^2
        zz = wp.float64(0.0)
        for p in range(k):
            acc = wp.float64(0.0)
            if p == 0:
                acc = wp.float64(1.0)
            for q in range(p):
                acc -= work[t, p, q] * gt[t, q]
            gt[t, p] = acc / work[t, p, p]
            zz += gt[t, p] * gt[t, p]
        for pp in range(k):
            p = k - 1 - pp
            acc = gt[t, p]
            for q in range(p + 1, k):
                acc -= work[t, q, p] * gt[t, q]
            gt[t, p] = acc / work[t, p, p]
        for p in range(k):
            gt[t, p] = gt[t, p] * dinv[t, p] / (di * zz)
        nl = wp.float64(1.0) / wp.sqrt(zz)
        if truncated != 0:
            lll = nl
            break
        old = lll * lll
        lll = nl
        if kap_tol > wp.float64(0.0):
            if (old - nl * nl) < kap_tol * old:
                break
    # -- write the factor row g_unit * d_i |z| with ascending columns
    scale = di / lll
    prev = -1
    for o in range(k):
        pick = -1
        for p in range(k):
            c = sup[t, p]
            if c > prev:
                if pick < 0:
                    pick = p
                elif c < sup[t, pick]:
                    pick = p
        prev = sup[t, pick]
        out_cols[i, o] = prev
        out_vals[i, o] = gt[t, pick] * scale
        out_rank[i, pick] = o
    out_cnt[i] = k
    flags[i] = truncated


@wp.kernel(enable_backward=False)
def slot_rows(offsets: wp.array(dtype=int), rows: wp.array(dtype=int)):
    # the row of every slot of a compact CSR matrix
    i = wp.tid()
    for s in range(offsets[i], offsets[i + 1]):
        rows[s] = i


@wp.kernel(enable_backward=False)
def gather_rows(offsets: wp.array(dtype=int), out_cols: wp.array2d(dtype=int),
                out_vals: wp.array2d(dtype=wp.float64), out_rank: wp.array2d(dtype=int), cols: wp.array(dtype=int),
                vals: wp.array(dtype=Any), index: wp.array(dtype=wp.float64), order: wp.array(dtype=int)):
    # compact rows; order[beg + p] is the slot of the row's p-th support entry in insertion order (refits factor
    # in that order, as the construction did)
    i = wp.tid()
    beg = offsets[i]
    for o in range(offsets[i + 1] - beg):
        cols[beg + o] = out_cols[i, o]
        vals[beg + o] = vals.dtype(out_vals[i, o])
        index[beg + o] = wp.float64(beg + o)
        order[beg + o] = beg + out_rank[i, o]


@wp.kernel(enable_backward=False)
def check_topology(offsets: wp.array(dtype=int), columns: wp.array(dtype=int), ref_offsets: wp.array(dtype=int),
                   ref_columns: wp.array(dtype=int), status: wp.array(dtype=int)):
    # one thread per block row: a row whose bounds or columns differ counts as one mismatch
    r = wp.tid()
    beg = offsets[r]
    end = offsets[r + 1]
    if beg != ref_offsets[r] or end != ref_offsets[r + 1]:
        wp.atomic_add(status, 0, 1)
        return
    for s in range(beg, end):
        if columns[s] != ref_columns[s]:
            wp.atomic_add(status, 0, 1)
            return


@wp.kernel(enable_backward=False)
def refit_rows(offsets: wp.array(dtype=int), counts: wp.array(dtype=int), has_counts: int,
               columns: wp.array(dtype=int), values: wp.array3d(dtype=Any), bs: int, n: int,
               g_offsets: wp.array(dtype=int), g_columns: wp.array(dtype=int), order: wp.array(dtype=int),
               floor: wp.float64,
               regularize: int, limit: wp.float64, row0: int, work: wp.array3d(dtype=wp.float64),
               dinv: wp.array2d(dtype=wp.float64), zw: wp.array2d(dtype=wp.float64),
               stage: wp.array(dtype=wp.float64), status: wp.array(dtype=int)):
    # the factor row on its fixed support (sorted columns, i last); status: [1] invalid diagonals, [2] failed
    # local factorisations, [3] regularised rows
    t = wp.tid()
    i = row0 + t
    if i >= n:
        return
    beg = g_offsets[i]
    k = g_offsets[i + 1] - beg
    aii = _coef(offsets, counts, has_counts, columns, values, bs, i, i)
    if not _valid_diag(aii):
        wp.atomic_add(status, 1, 1)
        for p in range(k - 1):
            stage[beg + p] = wp.float64(0.0)
        stage[beg + k - 1] = wp.float64(1.0)
        return
    # positions of the local factorisation: the support entries in the order the construction added them (i first)
    bad = 0
    raised = 0
    for p in range(k):
        sp = order[beg + p]
        ajj = _coef(offsets, counts, has_counts, columns, values, bs, g_columns[sp], g_columns[sp])
        if _valid_diag(ajj):
            dinv[t, p] = wp.float64(1.0) / wp.sqrt(ajj)
        else:
            bad = 1
    if bad == 0:
        for p in range(k):
            if bad != 0:
                break
            sp = order[beg + p]
            for q in range(p + 1):
                sq = order[beg + q]
                a = _coef(offsets, counts, has_counts, columns, values, bs, g_columns[sp], g_columns[sq])
                a = a * dinv[t, p] * dinv[t, q]
                for s in range(q):
                    a -= work[t, p, s] * work[t, q, s]
                if q == p:
                    if not wp.isfinite(a):
                        bad = 1
                    elif a < floor:
                        if regularize != 0:
                            a = floor
                            raised = 1
                        else:
                            bad = 1
                    if bad == 0:
                        work[t, p, p] = wp.sqrt(a)
                else:
                    work[t, p, q] = a / work[t, q, q]
    if bad == 0:
        # z = L^-1 e_0, w = L^-T z, g = D w / |z|
        zz = wp.float64(0.0)
        for p in range(k):
            acc = wp.float64(0.0)
            if p == 0:
                acc = wp.float64(1.0)
            for q in range(p):
                acc -= work[t, p, q] * zw[t, q]
            zw[t, p] = acc / work[t, p, p]
            zz += zw[t, p] * zw[t, p]
        for pp in range(k):
            p = k - 1 - pp
            acc = zw[t, p]
            for q in range(p + 1, k):
                acc -= work[t, q, p] * zw[t, q]
            zw[t, p] = acc / work[t, p, p]
        nz = wp.sqrt(zz)
        for p in range(k):
            v = zw[t, p] * dinv[t, p] / nz
            if not (wp.isfinite(v) and wp.abs(v) <= limit):
                bad = 1
            stage[order[beg + p]] = v
        if not (stage[beg + k - 1] > wp.float64(0.0)):
            bad = 1
    if bad != 0:
        wp.atomic_add(status, 2, 1)
        # the scaled diagonal stands in for the row (used only when failures are regularised)
        for p in range(k - 1):
            stage[beg + p] = wp.float64(0.0)
        stage[beg + k - 1] = wp.float64(1.0) / wp.sqrt(aii)
    elif raised != 0:
        wp.atomic_add(status, 3, 1)


@wp.kernel(enable_backward=False)
def commit_values(status: wp.array(dtype=int), regularize: int, stage: wp.array(dtype=wp.float64),
                  g_values: wp.array(dtype=Any), gt_values: wp.array(dtype=Any), perm: wp.array(dtype=int),
                  apply_g: wp.array(dtype=Any), apply_gt: wp.array(dtype=Any)):
    # applied only when the refit is accepted (decided on the device, so that a captured update needs no readback)
    s = wp.tid()
    if status[0] != 0:
        return
    if regularize == 0 and (status[1] != 0 or status[2] != 0):
        return
    g_values[s] = g_values.dtype(stage[s])
    gt_values[s] = gt_values.dtype(stage[perm[s]])
    # the applied copies hold the rounded factor in the matrix scalar type
    apply_g[s] = apply_g.dtype(g_values.dtype(stage[s]))
    apply_gt[s] = apply_gt.dtype(gt_values.dtype(stage[perm[s]]))
