"""Tile construction, layout, arithmetic, tile_map, reductions, scans and sort against NumPy (one kernel each group).

Shapes are small and odd (3 x 5, primes, single elements) so that nothing relies on powers of two.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.func
def sq_plus(x: float, y: float) -> float:
    return x * x + y


@wp.func
def scale_tile(t: wp.tile[float, 3, 5], s: float):
    return t * s


@wp.kernel
def arithmetic(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    _i, _j = wp.tid()
    t = wp.tile_load(a, shape=(3, 5))
    z = wp.tile_zeros(shape=(3, 5), dtype=float)
    o = wp.tile_ones(shape=(3, 5), dtype=float)
    f = wp.tile_full(shape=(3, 5), value=2.5, dtype=float)
    m = wp.tile_map(sq_plus, t, f)  # a user function of two tiles
    m2 = wp.tile_map(wp.add, m, 1.0)  # a builtin with a broadcast value
    s = scale_tile(m2, 0.5) + z - o  # a tile through a @func
    s = -s / 2.0 + t * t
    s[1, 2] = 100.0
    s[0, 0] += 1.0
    wp.tile_axpy(2.0, o, s)
    s += wp.tile_map(wp.sin, t)
    wp.tile_store(out, s)


def test_arithmetic_map_and_functions():
    A = np.random.default_rng(3).uniform(size=(3, 5)).astype(np.float32)
    out = wp.zeros((3, 5), dtype=float)
    wp.launch_tiled(arithmetic, dim=1, inputs=[wp.array(A), out], block_dim=32)
    S = (A * A + 2.5 + 1.0) * 0.5 - 1
    S = -S / 2 + A * A
    S[1, 2] = 100
    S[0, 0] += 1
    S = S + 2 + np.sin(A)
    np.testing.assert_allclose(out.numpy(), S, rtol=1e-6, atol=1e-6)


@wp.kernel
def reductions(a: wp.array2d(dtype=float), red: wp.array(dtype=float), idx: wp.array(dtype=int),
               col: wp.array(dtype=float), row: wp.array(dtype=float)):
    _i, _j = wp.tid()
    t = wp.tile_load(a, shape=(3, 5))
    red[0] = wp.tile_sum(t)[0]
    red[1] = wp.tile_min(t)[0]
    red[2] = wp.tile_max(t)[0]
    red[3] = wp.tile_dot(t, t)[0]
    red[4] = wp.tile_reduce(wp.mul, t)[0]
    idx[0] = wp.tile_argmin(t)[0]
    idx[1] = wp.tile_argmax(t)[0]
    wp.tile_store(col, wp.tile_sum(t, axis=0))
    wp.tile_store(row, wp.tile_sum(t, axis=1))


def test_reductions():
    A = np.random.default_rng(4).uniform(-1, 1, (3, 5)).astype(np.float32)
    red = wp.zeros(5, dtype=float)
    idx = wp.zeros(2, dtype=int)
    col = wp.zeros(5, dtype=float)
    row = wp.zeros(3, dtype=float)
    wp.launch_tiled(reductions, dim=1, inputs=[wp.array(A), red, idx, col, row], block_dim=64)
    np.testing.assert_allclose(red.numpy(), [A.sum(), A.min(), A.max(), (A * A).sum(), A.prod()], rtol=1e-5)
    assert idx.numpy().tolist() == [A.argmin(), A.argmax()]
    np.testing.assert_allclose(col.numpy(), A.sum(0), rtol=1e-6)
    np.testing.assert_allclose(row.numpy(), A.sum(1), rtol=1e-6)


@wp.kernel
def layout(a: wp.array2d(dtype=float), red: wp.array(dtype=float), tr: wp.array2d(dtype=float),
           bc: wp.array2d(dtype=float), asg: wp.array2d(dtype=float)):
    _i, _j = wp.tid()
    t = wp.tile_load(a, shape=(3, 5))
    wp.tile_store(tr, wp.tile_transpose(t))
    r = wp.tile_reshape(t, shape=(5, -1))
    red[0] = r[4, 1]
    v = wp.tile_view(t, offset=(1,))  # row 1
    red[1] = v[3]
    w = wp.tile_view(t, offset=(1, 2), shape=(2, 2))
    red[2] = w[1, 1]
    wp.tile_store(bc, wp.tile_broadcast(wp.tile_view(t, offset=(2,)), shape=(4, 5)))
    c = wp.tile_zeros(shape=(4, 6), dtype=float)
    wp.tile_assign(c, w, offset=(1, 3))
    wp.tile_assign(c, wp.tile_ones(shape=(2, 2), dtype=float), offset=(3, 5))  # partly outside: clipped
    wp.tile_store(asg, c)
    x = wp.tile_astype(t, wp.float64)
    red[3] = float(x[2, 2])
    q = wp.tile_squeeze(wp.tile_view(t, offset=(0, 0), shape=(1, 5)))
    red[4] = q[4]
    red[5] = wp.tile_extract(t, 2, 4)
    d = wp.tile_diag_add(wp.tile_ones(shape=(3, 3), dtype=float), wp.tile_full(shape=3, value=4.0, dtype=float))
    red[6] = d[1, 1] + d[0, 1]


def test_layout_and_element_access():
    A = np.random.default_rng(5).uniform(size=(3, 5)).astype(np.float32)
    red = wp.zeros(7, dtype=float)
    tr = wp.zeros((5, 3), dtype=float)
    bc = wp.zeros((4, 5), dtype=float)
    asg = wp.zeros((4, 6), dtype=float)
    wp.launch_tiled(layout, dim=1, inputs=[wp.array(A), red, tr, bc, asg], block_dim=16)
    np.testing.assert_allclose(red.numpy(), [A.reshape(5, 3)[4, 1], A[1, 3], A[2, 3], A[2, 2], A[0, 4], A[2, 4],
                                             6.0], rtol=1e-6)
    np.testing.assert_array_equal(tr.numpy(), A.T)
    np.testing.assert_array_equal(bc.numpy(), np.broadcast_to(A[2], (4, 5)))
    C = np.zeros((4, 6), np.float32)
    C[1:3, 3:5] = A[1:3, 2:4]
    C[3, 5] = 1
    np.testing.assert_array_equal(asg.numpy(), C)


@wp.kernel
def construction(seed: int, vals: wp.array(dtype=float), ints: wp.array(dtype=int), rf: wp.array2d(dtype=float),
                 ri: wp.array(dtype=int)):
    i, j = wp.tid()
    ar = wp.tile_arange(0, 10, 3, dtype=float)
    vals[0] = ar[3]
    vals[1] = wp.tile_sum(wp.tile_arange(7, dtype=float))[0]
    ft = wp.tile_from_thread(shape=(2, 2), value=3.0)
    vals[2] = wp.tile_extract(ft, 1, 1)
    vals[3] = wp.untile(wp.tile(vals[2] + 1.0))
    vals[4] = wp.tile_sum(wp.tile_empty(shape=(2, 3), dtype=float))[0]
    ints[0] = wp.block_dim()
    ints[1] = i
    ints[2] = j
    ints[3] = wp.tile_sum(wp.tile_arange(1, 6))[0]
    col = wp.tile(wp.vec3(1.0, 2.0, 3.0))
    v = wp.untile(col)
    vals[5] = v[1] + wp.tile_extract(col, 2, 0)
    wp.tile_store(rf, wp.tile_randf(shape=(2, 3), rng=wp.uint32(seed), min=2.0, max=3.0))
    wp.tile_store(ri, wp.tile_randi(shape=5, rng=wp.uint32(seed), min=-4, max=4))


def test_construction_and_the_cpu_block_model():
    vals = wp.zeros(6, dtype=float)
    ints = wp.zeros(4, dtype=int)
    rf = wp.zeros((2, 3), dtype=float)
    ri = wp.zeros(5, dtype=int)
    wp.launch_tiled(construction, dim=[1], inputs=[7, vals, ints, rf, ri], block_dim=64)
    np.testing.assert_array_equal(vals.numpy(), [9.0, 21.0, 3.0, 4.0, 0.0, 5.0])
    # the reference's CPU: one thread per block (block_dim() == 1, thread index 0)
    assert ints.numpy().tolist() == [1, 0, 0, 15]
    r = rf.numpy()
    assert np.all((r >= 2) & (r < 3)) and len(np.unique(r)) == 6
    assert np.all((ri.numpy() >= -4) & (ri.numpy() < 4))
    again = wp.zeros((2, 3), dtype=float)
    wp.launch_tiled(construction, dim=[1], inputs=[7, vals, ints, again, ri], block_dim=64)
    np.testing.assert_array_equal(again.numpy(), r)  # a fixed state gives the same tile


@wp.kernel
def scans_and_sort(a: wp.array(dtype=float), inc: wp.array(dtype=float), exc: wp.array(dtype=float),
                   mx: wp.array(dtype=float), mn: wp.array(dtype=float), keys_out: wp.array(dtype=float),
                   vals_out: wp.array(dtype=int)):
    _i, _j = wp.tid()
    t = wp.tile_load(a, shape=13)
    wp.tile_store(inc, wp.tile_scan_inclusive(t))
    wp.tile_store(exc, wp.tile_scan_exclusive(t))
    wp.tile_store(mx, wp.tile_scan_max_inclusive(t))
    wp.tile_store(mn, wp.tile_scan_min_inclusive(t))
    keys = t
    vals = wp.tile_arange(13, dtype=int)
    wp.tile_sort(keys, vals)
    wp.tile_store(keys_out, keys)
    wp.tile_store(vals_out, vals)


@pytest.mark.parametrize("seed", [0, 1])
def test_scans_and_sort(seed):
    A = np.random.default_rng(seed).uniform(-1, 1, 13).astype(np.float32)
    outs = [wp.zeros(13, dtype=float) for _ in range(5)] + [wp.zeros(13, dtype=int)]
    wp.launch_tiled(scans_and_sort, dim=1, inputs=[wp.array(A), *outs], block_dim=32)
    inc, exc, mx, mn, keys, vals = (o.numpy() for o in outs)
    np.testing.assert_allclose(inc, np.cumsum(A), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exc, np.concatenate([[0], np.cumsum(A)[:-1]]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mx, np.maximum.accumulate(A))
    np.testing.assert_array_equal(mn, np.minimum.accumulate(A))
    np.testing.assert_array_equal(keys, np.sort(A))
    np.testing.assert_array_equal(A[vals], np.sort(A))


@wp.kernel
def slicing(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), r: wp.array(dtype=float)):
    _i, _ = wp.tid()
    t = wp.tile_load(a, shape=(4, 6))
    wp.tile_store(r, t[1])
    s = t[1:3, 2:]
    u = wp.tile_zeros(shape=(4, 6), dtype=float)
    u[0, :] = t[3, :]
    u[2:4, 0:4] = s
    u[1:3, 4:] += s[:, 2:]
    u[-1, -1] = t[-1, 0]
    wp.tile_store(out, u)


def test_slices_read_and_assign():
    A = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = wp.zeros((4, 6), dtype=float)
    r = wp.zeros(6, dtype=float)
    wp.launch_tiled(slicing, dim=1, inputs=[wp.array(A), out, r], block_dim=8)
    U = np.zeros((4, 6), np.float32)
    U[0] = A[3]
    U[2:4, 0:4] = A[1:3, 2:]
    U[1:3, 4:] += A[1:3, 2:][:, 2:]
    U[-1, -1] = A[-1, 0]
    np.testing.assert_array_equal(out.numpy(), U)
    np.testing.assert_array_equal(r.numpy(), A[1])


@wp.kernel
def reduce_axis(a: wp.array2d(dtype=float), rows: wp.array(dtype=float), cols: wp.array(dtype=float)):
    _i, _ = wp.tid()
    t = wp.tile_load(a, shape=(3, 5))
    wp.tile_store(rows, wp.tile_reduce(wp.max, t, axis=1))
    wp.tile_store(cols, wp.tile_reduce(wp.mul, t, axis=0))


def test_reduce_along_an_axis():
    A = np.random.default_rng(8).uniform(0.5, 2, (3, 5)).astype(np.float32)
    rows = wp.zeros(3, dtype=float)
    cols = wp.zeros(5, dtype=float)
    wp.launch_tiled(reduce_axis, dim=1, inputs=[wp.array(A), rows, cols], block_dim=8)
    np.testing.assert_array_equal(rows.numpy(), A.max(1))
    np.testing.assert_allclose(cols.numpy(), A.prod(0), rtol=1e-6)


@wp.kernel
def mixed_products(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3),
                   q: wp.array(dtype=wp.vec3)):
    _i, _ = wp.tid()
    s = wp.tile_load(a, shape=4)
    w = wp.tile_load(v, shape=4)
    wp.tile_store(out, s * wp.vec3(1.0, 2.0, 3.0) + w * s)  # float tile times a vector, vector tile times float tile
    wp.tile_store(q, w / 2.0)


def test_products_of_tiles_with_other_element_types():
    A = np.array([1, 2, 3, 4], np.float32)
    V = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = wp.zeros(4, dtype=wp.vec3)
    q = wp.zeros(4, dtype=wp.vec3)
    wp.launch_tiled(mixed_products, dim=1, inputs=[wp.array(A), wp.array(V, dtype=wp.vec3), out, q], block_dim=8)
    np.testing.assert_allclose(out.numpy(), A[:, None] * [1, 2, 3] + V * A[:, None], rtol=1e-6)
    np.testing.assert_allclose(q.numpy(), V / 2, rtol=1e-6)


@wp.kernel
def advanced_index(a: wp.array2d(dtype=float), idx: wp.array(dtype=int), rows: wp.array2d(dtype=float),
                   cols: wp.array2d(dtype=float)):
    _i, _ = wp.tid()
    t = wp.tile_load(a, shape=(4, 5))
    ind = wp.tile_load(idx, shape=3)
    wp.tile_store(rows, t[ind, :])
    wp.tile_store(cols, wp.tile_slice_indexed(t, ind, axis=1))


def test_advanced_indexing_with_index_tiles():
    A = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.array([3, -1, 0], np.int32)
    rows = wp.zeros((3, 5), dtype=float)
    cols = wp.zeros((4, 3), dtype=float)
    wp.launch_tiled(advanced_index, dim=1, inputs=[wp.array(A), wp.array(idx), rows, cols], block_dim=8)
    np.testing.assert_array_equal(rows.numpy(), A[[3, 3, 0]])
    np.testing.assert_array_equal(cols.numpy(), A[:, [3, 4, 0]])


@wp.kernel
def components(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22), out: wp.array(dtype=float),
               vout: wp.array(dtype=wp.vec3)):
    _i, _ = wp.tid()
    tv = wp.tile_load(v, shape=2)
    tm = wp.tile_load(m, shape=2)
    out[0] = tv[1, 2] + tm[0, 1, 0]
    tv[0, 1] = 10.0
    tv[1, 0] += 1.0
    tv[1][2] = tv[1][2] * 2.0  # nested subscripts, as the reference's programs write them
    wp.tile_store(vout, tv)


def test_components_of_vector_and_matrix_tiles():
    V = np.arange(6, dtype=np.float32).reshape(2, 3)
    M = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    out = wp.zeros(1, dtype=float)
    vout = wp.zeros(2, dtype=wp.vec3)
    wp.launch_tiled(components, dim=1, inputs=[wp.array(V, dtype=wp.vec3), wp.array(M, dtype=wp.mat22), out, vout],
                    block_dim=8)
    assert out.numpy()[0] == V[1, 2] + M[0, 1, 0]
    W = V.copy()
    W[0, 1] = 10
    W[1, 0] += 1
    W[1, 2] *= 2
    np.testing.assert_array_equal(vout.numpy(), W)


@wp.kernel
def strided(a: wp.array2d(dtype=float), ev: wp.array2d(dtype=float), rev: wp.array(dtype=float),
            out: wp.array2d(dtype=float)):
    _i, _ = wp.tid()
    t = wp.tile_load(a, shape=(4, 5))
    wp.tile_store(ev, t[::2, 1::2])
    wp.tile_store(rev, t[3, ::-1])
    u = wp.tile_zeros(shape=(4, 5), dtype=float)
    u[1::2, ::2] = t[0:2, 0:3]
    wp.tile_store(out, u)


def test_slices_with_steps():
    A = np.arange(20, dtype=np.float32).reshape(4, 5)
    ev = wp.zeros((2, 2), dtype=float)
    rev = wp.zeros(5, dtype=float)
    out = wp.zeros((4, 5), dtype=float)
    wp.launch_tiled(strided, dim=1, inputs=[wp.array(A), ev, rev, out], block_dim=8)
    np.testing.assert_array_equal(ev.numpy(), A[::2, 1::2])
    np.testing.assert_array_equal(rev.numpy(), A[3, ::-1])
    U = np.zeros((4, 5), np.float32)
    U[1::2, ::2] = A[0:2, 0:3]
    np.testing.assert_array_equal(out.numpy(), U)


@wp.struct
class Particle:
    x: float
    n: int


@wp.func
def twice_x(p: Particle) -> float:
    return p.x * 2.0


@wp.kernel(enable_backward=False)
def struct_tiles(a: wp.array(dtype=Particle), out: wp.array(dtype=float), cleared: wp.array(dtype=Particle)):
    _i, _ = wp.tid()
    t = wp.tile_load(a, shape=3)
    wp.tile_store(out, wp.tile_map(twice_x, t))
    wp.tile_store(cleared, wp.tile_zeros(shape=3, dtype=Particle))


def _particles(requires_grad=False):
    a = wp.zeros(3, dtype=Particle).numpy()
    a["x"], a["n"] = [1, 2, 3], [4, 5, 6]
    return wp.array(a, dtype=Particle, requires_grad=requires_grad)


def test_tiles_of_structs_forward_and_gradients():
    out = wp.zeros(3, dtype=float)
    cleared = _particles()
    wp.launch_tiled(struct_tiles, dim=1, inputs=[_particles(), out, cleared], block_dim=4)
    np.testing.assert_array_equal(out.numpy(), [2, 4, 6])
    assert cleared.numpy()["n"].tolist() == [0, 0, 0]

    @wp.kernel(module="tiles_struct_grad")
    def differentiated(a: wp.array(dtype=Particle), out: wp.array(dtype=float)):
        _i, _ = wp.tid()
        wp.tile_store(out, wp.tile_map(twice_x, wp.tile_load(a, shape=3)))

    a = _particles(requires_grad=True)
    o = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(differentiated, dim=1, inputs=[a, o], block_dim=4)
    tape.backward(grads={o: wp.ones(3, dtype=float)})
    np.testing.assert_array_equal(a.grad.numpy()["x"], [2, 2, 2])  # d(2 x)/dx; the int field gets none
