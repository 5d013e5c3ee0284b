"""Sampling value grids in kernels: analytic sphere SDF, NumPy lookups, nearest/trilinear modes, gradients and
their adjoints against finite differences, stores, transforms, wrong grid types and build-time errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenError

from .helpers import BAND, SPHERE_C, SPHERE_R, VOXEL, dense_float, sphere_sdf, sphere_volume, trilinear


@wp.kernel
def sample_f(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), mode: int, out: wp.array(dtype=float),
             grads: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    g = wp.vec3()
    out[i] = wp.volume_sample_grad_f(vid, pts[i], mode, g)
    grads[i] = g


@wp.kernel
def sample_plain(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), mode: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(vid, pts[i], mode)


@wp.kernel
def sample_world(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(vid, wp.volume_world_to_index(vid, pts[i]), wp.Volume.LINEAR)


@wp.kernel
def lookup_f(vid: wp.uint64, ijk: wp.array(dtype=wp.vec3i), out: wp.array(dtype=float)):
    i = wp.tid()
    c = ijk[i]
    out[i] = wp.volume_lookup_f(vid, c[0], c[1], c[2])


def _run_f(vol, pts, mode=wp.Volume.LINEAR):
    p = wp.array(np.asarray(pts, np.float32), dtype=wp.vec3)
    out = wp.zeros(len(pts), dtype=float)
    g = wp.zeros(len(pts), dtype=wp.vec3)
    wp.launch(sample_f, len(pts), inputs=[vol.id, p, mode, out, g])
    return out.numpy().astype(np.float64), g.numpy().astype(np.float64)


def test_sphere_level_set_at_known_points():
    vol, dense = sphere_volume()
    rng = np.random.default_rng(3)
    dirs = rng.standard_normal((400, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    dist = rng.uniform(-1.5, 1.5, (400, 1))  # well inside the band: all 8 corners stored
    pts = SPHERE_C + dirs * (SPHERE_R + dist)
    val, grad = _run_f(vol, pts)
    exact = sphere_sdf(pts) * VOXEL
    # the interpolant of the stored voxels, and the SDF within trilinear error (h^2/8 times the curvature 2/R)
    np.testing.assert_allclose(val, trilinear(dense, np.nan, pts) * VOXEL, atol=1e-6)
    assert np.abs(val - exact).max() < 0.03 * VOXEL
    # the gradient of a distance field is the unit normal (in index space: times the voxel size)
    np.testing.assert_allclose(grad / VOXEL, dirs, atol=0.1)  # first-order error: h times the curvature
    # far away: the background (outside the band)
    far, _ = _run_f(vol, [SPHERE_C, SPHERE_C + 100.0])
    np.testing.assert_allclose(far, BAND * VOXEL)
    # world positions through volume_world_to_index
    out = wp.zeros(len(pts), dtype=float)
    wp.launch(sample_world, len(pts), inputs=[vol.id, wp.array((pts * VOXEL).astype(np.float32), dtype=wp.vec3),
                                              out])
    np.testing.assert_allclose(out.numpy(), val, atol=1e-5)


def test_trilinear_and_lookup_match_numpy():
    dense = dense_float()
    vol = wp.Volume.load_from_numpy(dense, voxel_size=0.5, bg_value=-3.0)
    rng = np.random.default_rng(0)
    pts = rng.uniform(-1.5, np.array(dense.shape) + 0.5, (2000, 3))
    val, grad = _run_f(vol, pts)
    # voxels of the covering leaves beyond the array hold the background, voxels beyond the leaves too
    np.testing.assert_allclose(val, trilinear(dense, -3.0, pts), rtol=1e-5, atol=1e-5)
    eps = 1e-3
    for a in range(3):
        d = np.zeros(3)
        d[a] = eps
        fd = (trilinear(dense, -3.0, pts + d) - trilinear(dense, -3.0, pts - d)) / (2 * eps)
        near_plane = np.abs(pts[:, a] - np.round(pts[:, a])) < 2 * eps
        np.testing.assert_allclose(grad[~near_plane, a], fd[~near_plane], rtol=1e-3, atol=1e-3)
    ijk = np.stack(np.meshgrid(*(np.arange(-2, n + 10) for n in dense.shape), indexing="ij"), -1).reshape(-1, 3)
    out = wp.zeros(len(ijk), dtype=float)
    wp.launch(lookup_f, len(ijk), inputs=[vol.id, wp.array(ijk.astype(np.int32), dtype=wp.vec3i), out])
    inside = np.all((ijk >= 0) & (ijk < np.array(dense.shape)), axis=1)
    ref = np.where(inside, dense[tuple(np.clip(ijk, 0, np.array(dense.shape) - 1).T)], -3.0)
    np.testing.assert_array_equal(out.numpy(), ref.astype(np.float32))


def test_closest_rounds_halfway_away_from_zero():
    dense = np.arange(64, dtype=np.float32).reshape(4, 4, 4)
    vol = wp.Volume.load_from_numpy(dense, bg_value=-1.0)
    pts = np.array([[1.5, 0.0, 0.0], [1.49, 0.0, 0.0], [0.0, 2.5, 0.0], [-0.5, 0.0, 0.0], [-0.49, 0.0, 0.0],
                    [2.2, 2.7, 0.6]])
    val, grad = _run_f(vol, pts, wp.Volume.CLOSEST)
    np.testing.assert_array_equal(val, [dense[2, 0, 0], dense[1, 0, 0], dense[0, 3, 0], -1.0, dense[0, 0, 0],
                                        dense[2, 3, 1]])
    np.testing.assert_array_equal(grad, 0.0)  # CLOSEST: zero gradient


@wp.kernel
def typed(vf: wp.uint64, vi: wp.uint64, vv: wp.uint64, p: wp.vec3, out_f: wp.array(dtype=float),
          out_i: wp.array(dtype=int), out_v: wp.array(dtype=wp.vec3)):
    out_i[0] = wp.volume_sample_i(vi, p)
    out_i[1] = wp.volume_lookup_i(vi, 1, 2, 0)
    out_v[0] = wp.volume_sample_v(vv, p, wp.Volume.LINEAR)
    out_v[1] = wp.volume_lookup_v(vv, 1, 2, 0)
    out_v[2] = wp.volume_sample_v(vv, p, wp.Volume.CLOSEST)
    # a grid of another type reads as zero
    out_f[0] = wp.volume_sample_f(vv, p, wp.Volume.LINEAR)
    out_f[1] = wp.volume_lookup_f(vi, 1, 2, 0)
    out_i[2] = wp.volume_sample_i(vf, p)
    out_v[3] = wp.volume_sample_v(vf, p, wp.Volume.LINEAR)


def test_int_and_vec3_volumes():
    rng = np.random.default_rng(1)
    di = rng.integers(-100, 100, (5, 6, 7)).astype(np.int32)
    dv = rng.standard_normal((5, 6, 7, 3)).astype(np.float32)
    vi = wp.Volume.load_from_numpy(di, bg_value=-7)
    vv = wp.Volume.load_from_numpy(dv, bg_value=wp.vec3(1.0, 2.0, 3.0))
    vf = wp.Volume.load_from_numpy(dense_float(), bg_value=0.0)
    assert (vi.dtype, vv.dtype, vf.dtype) == (wp.int32, wp.vec3f, wp.float32)
    p = np.array([1.3, 2.6, 0.4])
    out_f, out_i, out_v = wp.zeros(2, dtype=float), wp.zeros(3, dtype=int), wp.zeros(4, dtype=wp.vec3)
    wp.launch(typed, 1, inputs=[vf.id, vi.id, vv.id, wp.vec3(*p), out_f, out_i, out_v])
    i, v = out_i.numpy(), out_v.numpy()
    assert (i[0], i[1]) == (di[1, 3, 0], di[1, 2, 0])
    np.testing.assert_allclose(v[0], trilinear(dv, np.array([1.0, 2.0, 3.0]), p), rtol=1e-5)
    np.testing.assert_array_equal(v[1], dv[1, 2, 0])
    np.testing.assert_array_equal(v[2], dv[1, 3, 0])
    np.testing.assert_array_equal(out_f.numpy(), 0.0)
    assert i[2] == 0
    np.testing.assert_array_equal(v[3], 0.0)


@wp.kernel
def loss_sample(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(vid, pts[i], wp.Volume.LINEAR) * 2.0


@wp.kernel
def loss_grad(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), w: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    g = wp.vec3()
    s = wp.volume_sample_grad_f(vid, pts[i], wp.Volume.LINEAR, g)
    out[i] = 0.5 * s + wp.dot(w, g)


@wp.kernel
def loss_v(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), w: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.dot(w, wp.volume_sample_v(vid, pts[i], wp.Volume.LINEAR))


def _tape_grad(kernel, vol, pts, *extra):
    p = wp.array(np.asarray(pts, np.float32), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(len(pts), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, len(pts), inputs=[vol.id, p, *extra, out])
    tape.backward(grads={out: wp.ones(len(pts), dtype=float)})
    return out.numpy().astype(np.float64), p.grad.numpy().astype(np.float64)


def _fd(kernel, vol, pts, *extra, eps=1e-3):
    cols = []
    for a in range(3):
        d = np.zeros(3, np.float32)
        d[a] = eps
        hi, _ = _tape_grad(kernel, vol, pts + d, *extra)
        lo, _ = _tape_grad(kernel, vol, pts - d, *extra)
        cols.append((hi - lo) / (2 * eps))
    return np.stack(cols, 1)


def _interior_points(n, hi, seed=0):
    """Random points away from integer planes (where the trilinear field is not differentiable)."""
    p = np.random.default_rng(seed).uniform(0.2, hi - 1.2, (n, 3))
    return (np.floor(p) + 0.1 + 0.8 * (p - np.floor(p))).astype(np.float32)


def test_adjoints_match_finite_differences():
    dense = dense_float((9, 9, 9))
    vol = wp.Volume.load_from_numpy(dense, bg_value=0.0)
    pts = _interior_points(64, 9)
    _, g = _tape_grad(loss_sample, vol, pts)
    np.testing.assert_allclose(g, _fd(loss_sample, vol, pts), rtol=2e-2, atol=2e-2)
    # the gradient form is differentiated through the value and through grad (mixed second derivatives)
    w = wp.vec3(0.3, -1.1, 0.7)
    _, g2 = _tape_grad(loss_grad, vol, pts, w)
    np.testing.assert_allclose(g2, _fd(loss_grad, vol, pts, w), rtol=2e-2, atol=2e-2)
    dv = np.random.default_rng(2).standard_normal((9, 9, 9, 3)).astype(np.float32)
    vv = wp.Volume.load_from_numpy(dv, bg_value=wp.vec3(0.0, 0.0, 0.0))
    _, g3 = _tape_grad(loss_v, vv, pts, w)
    np.testing.assert_allclose(g3, _fd(loss_v, vv, pts, w), rtol=2e-2, atol=2e-2)


@wp.kernel
def store(vid: wp.uint64, ijk: wp.array(dtype=wp.vec3i), v: wp.array(dtype=float), vi: wp.uint64):
    i = wp.tid()
    c = ijk[i]
    wp.volume_store_f(vid, c[0], c[1], c[2], v[i])
    wp.volume_store(vid, c[0], c[1], c[2] + 1, v[i] * 2.0)
    wp.volume_store_i(vid, c[0], c[1], c[2], 5)  # a float volume: nothing happens
    wp.volume_store_i(vi, c[0], c[1], c[2], i)


def test_stores_reach_tiles_only():
    tiles = np.array([[0, 0, 0], [16, 0, 0]], dtype=np.int32)
    vol = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.vec3i), voxel_size=1.0, bg_value=-1.0)
    vi = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.vec3i), voxel_size=1.0, bg_value=0)
    ijk = np.array([[1, 2, 3], [17, 5, 0], [9, 0, 0], [-4, 0, 0]], dtype=np.int32)  # the last two: no tile
    vals = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    wp.launch(store, len(ijk), inputs=[vol.id, wp.array(ijk, dtype=wp.vec3i), wp.array(vals), vi.id])
    look = np.concatenate([ijk, ijk + [0, 0, 1]])
    out = wp.zeros(len(look), dtype=float)
    wp.launch(lookup_f, len(look), inputs=[vol.id, wp.array(look, dtype=wp.vec3i), out])
    np.testing.assert_array_equal(out.numpy(), [10.0, 20.0, -1.0, -1.0, 20.0, 40.0, -1.0, -1.0])


def test_transforms_and_their_adjoints():
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    m = rot @ np.diag([0.5, 2.0, 1.5])
    t = np.array([1.0, -2.0, 3.0])
    vol = wp.Volume.allocate_by_tiles(wp.array([wp.vec3i(0, 0, 0)], dtype=wp.vec3i), transform=wp.mat33(*m.reshape(-1)),
                                      translation=tuple(t), bg_value=0.0)
    np.testing.assert_allclose(vol.get_voxel_size(), m @ np.ones(3))
    p = np.random.default_rng(0).standard_normal((16, 3))

    @wp.kernel
    def maps(vid: wp.uint64, a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3d), out: wp.array(dtype=float),
             outd: wp.array(dtype=wp.vec3d), o4: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        w = wp.volume_index_to_world(vid, a[i])
        x = wp.volume_world_to_index(vid, a[i])
        d = wp.volume_index_to_world_dir(vid, a[i])
        e = wp.volume_world_to_index_dir(vid, a[i])
        o4[4 * i + 0] = w
        o4[4 * i + 1] = x
        o4[4 * i + 2] = d
        o4[4 * i + 3] = e
        outd[i] = wp.volume_world_to_index(vid, wp.volume_index_to_world(vid, b[i]))
        out[i] = wp.dot(w, wp.vec3(1.0, 2.0, 3.0)) + wp.dot(x + d + e, wp.vec3(-1.0, 0.5, 0.25))

    a = wp.array(p.astype(np.float32), dtype=wp.vec3, requires_grad=True)
    b = wp.array(p, dtype=wp.vec3d)
    out = wp.zeros(16, dtype=float, requires_grad=True)
    outd = wp.zeros(16, dtype=wp.vec3d)
    o4 = wp.zeros(64, dtype=wp.vec3)
    tape = wp.Tape()
    with tape:
        wp.launch(maps, 16, inputs=[vol.id, a, b, out, outd, o4])
    r = o4.numpy().reshape(16, 4, 3)
    inv = np.linalg.inv(m)
    np.testing.assert_allclose(r[:, 0], p @ m.T + t, atol=1e-5)
    np.testing.assert_allclose(r[:, 1], (p - t) @ inv.T, atol=1e-5)
    np.testing.assert_allclose(r[:, 2], p @ m.T, atol=1e-5)
    np.testing.assert_allclose(r[:, 3], p @ inv.T, atol=1e-5)
    np.testing.assert_allclose(outd.numpy(), p, atol=1e-12)  # float64 maps round-trip in float64
    tape.backward(grads={out: wp.ones(16, dtype=float)})
    want = m.T @ [1.0, 2.0, 3.0] + (inv.T + m.T + inv.T) @ [-1.0, 0.5, 0.25]
    np.testing.assert_allclose(a.grad.numpy(), np.tile(want, (16, 1)), rtol=1e-5)


def _marked(fn) -> int:
    lines, first = inspect.getsourcelines(fn.func)
    return first + next(i for i, t in enumerate(lines) if "# <-" in t)


@wp.kernel
def bad_grad(vid: wp.uint64, out: wp.array(dtype=float)):
    g = wp.vec3d()
    out[0] = wp.volume_sample_grad_f(vid, wp.vec3(0.0), wp.Volume.LINEAR, g)  # <-


@wp.kernel
def bad_store(vid: wp.uint64):
    wp.volume_store_v(vid, 0, 0, 0, 1.0)  # <-


@wp.kernel
def bad_point(vid: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.volume_sample_f(vid, wp.vec3d(0.0, 0.0, 0.0), wp.Volume.LINEAR)  # <-


@wp.kernel
def bad_index_data(vid: wp.uint64, d: wp.array(dtype=wp.mat22), out: wp.array(dtype=float)):
    out[0] = wp.volume_sample_index(vid, wp.vec3(0.0), wp.Volume.LINEAR, d, 0.0)  # <-


@pytest.mark.parametrize("k, args, words", [
    (bad_grad, lambda v: [v.id, wp.zeros(1, dtype=float)], "'grad' must be a vec3f"),
    (bad_store, lambda v: [v.id], "'value' must be a vec3f"),
    (bad_point, lambda v: [v.id, wp.zeros(1, dtype=float)], "'uvw' must be a vec3f"),
    (bad_index_data, lambda v: [v.id, wp.zeros(1, dtype=wp.mat22), wp.zeros(1, dtype=float)], "'voxel_data'"),
])
def test_argument_errors_at_the_users_line(k, args, words):
    vol = wp.Volume.load_from_numpy(np.zeros((2, 2, 2), np.float32))
    with pytest.raises(CodegenError) as info:
        wp.launch(k, 1, inputs=args(vol))
    e = info.value
    assert e.loc is not None and e.loc.file == __file__ and e.loc.line == _marked(k), str(e)
    assert words in str(e), str(e)
