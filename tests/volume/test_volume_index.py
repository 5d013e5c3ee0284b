"""Index and on-index grids: voxel indices, sampling external arrays, gradients and adjoints (uvw, data, background)."""

from __future__ import annotations

import numpy as np

import treadle as wp

from .helpers import trilinear


@wp.kernel
def lookup_index(vid: wp.uint64, ijk: wp.array(dtype=wp.vec3i), out: wp.array(dtype=int), count: wp.array(dtype=int)):
    i = wp.tid()
    c = ijk[i]
    out[i] = wp.volume_lookup_index(vid, c[0], c[1], c[2])
    if i == 0:
        count[0] = wp.volume_voxel_count(vid)


def _indices(vol, ijk):
    out = wp.zeros(len(ijk), dtype=int)
    count = wp.zeros(1, dtype=int)
    wp.launch(lookup_index, len(ijk), inputs=[vol.id, wp.array(np.asarray(ijk, np.int32), dtype=wp.vec3i), out, count])
    return out.numpy(), int(count.numpy()[0])


def test_on_index_grid_indices_follow_get_voxels():
    rng = np.random.default_rng(0)
    pts = rng.integers(-30, 30, (300, 3)).astype(np.int32)
    pts = np.concatenate([pts, pts[:50]])  # repeated points count once
    vol = wp.Volume.allocate_by_voxels(wp.array(pts, dtype=wp.vec3i), voxel_size=0.5)
    assert vol.is_index and vol.dtype is None and vol.get_grid_info().type_str == "OnIndex"
    voxels = vol.get_voxels().numpy()
    distinct = np.unique(pts, axis=0)
    assert len(voxels) == len(distinct) == vol.get_voxel_count()
    np.testing.assert_array_equal(np.unique(voxels, axis=0), distinct)
    idx, count = _indices(vol, voxels)
    assert count == len(distinct)
    np.testing.assert_array_equal(idx, np.arange(len(voxels)))
    others = np.array([p for p in rng.integers(-30, 30, (400, 3)) if not (distinct == p).all(axis=1).any()])
    assert (_indices(vol, others)[0] == -1).all()


def test_index_grid_and_value_grid_indices():
    tiles = np.array([[0, 0, 0], [9, 0, 0], [-3, 20, 5]], dtype=np.int32)
    for bg in (None, 1.5):
        vol = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.vec3i), voxel_size=1.0, bg_value=bg)
        assert vol.get_voxel_count() == 3 * 512
        origins = vol.get_tiles().numpy()
        probe = np.array([[0, 0, 0], [1, 2, 3], [8, 0, 0], [9, 0, 0], [-8, 16, 0], [-1, 23, 7], [20, 0, 0]])
        leaf = {tuple(o): n for n, o in enumerate(origins)}
        want = [leaf[tuple(p & ~7)] * 512 + ((p[0] & 7) << 6 | (p[1] & 7) << 3 | (p[2] & 7))
                if tuple(p & ~7) in leaf else -1 for p in probe]
        idx, count = _indices(vol, probe)
        np.testing.assert_array_equal(idx, want)
        assert count == 3 * 512
    vox = vol.get_voxels().numpy()
    np.testing.assert_array_equal(_indices(vol, vox)[0], np.arange(len(vox)))


@wp.kernel
def sample_index(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), mode: int, data: wp.array(dtype=float), bg: float,
                 out: wp.array(dtype=float), grads: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    g = wp.vec3()
    out[i] = wp.volume_sample_grad_index(vid, pts[i], mode, data, bg, g) + 0.0 * wp.volume_sample_index(
        vid, pts[i], mode, data, bg)
    grads[i] = g


@wp.kernel
def loss_index(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), data: wp.array(dtype=float), bg: wp.array(dtype=float),
               w: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    g = wp.vec3()
    s = wp.volume_sample_grad_index(vid, pts[i], wp.Volume.LINEAR, data, bg[0], g)
    out[i] = s + wp.dot(w, g) + 0.5 * wp.volume_sample_index(vid, pts[i], wp.Volume.LINEAR, data, bg[0])


def _sparse_setup():
    rng = np.random.default_rng(5)
    n = 10
    mask = rng.random((n, n, n)) < 0.6
    ijk = np.argwhere(mask).astype(np.int32)
    vol = wp.Volume.allocate_by_voxels(wp.array(ijk, dtype=wp.vec3i), voxel_size=1.0)
    idx, _ = _indices(vol, ijk)
    values = rng.standard_normal(len(ijk)).astype(np.float32)
    data = np.zeros(vol.get_voxel_count(), np.float32)
    data[idx] = values
    dense = np.full((n, n, n), np.nan, np.float32)
    dense[tuple(ijk.T)] = values
    return vol, data, dense


def test_sample_index_matches_numpy():
    vol, data, dense = _sparse_setup()
    bg = 0.75
    ref_dense = np.where(np.isnan(dense), bg, dense)
    pts = np.random.default_rng(1).uniform(-1, 11, (1000, 3)).astype(np.float32)
    for mode in (wp.Volume.LINEAR, wp.Volume.CLOSEST):
        out = wp.zeros(len(pts), dtype=float)
        grads = wp.zeros(len(pts), dtype=wp.vec3)
        wp.launch(sample_index, len(pts), inputs=[vol.id, wp.array(pts, dtype=wp.vec3), mode, wp.array(data), bg, out,
                                                  grads])
        if mode == wp.Volume.LINEAR:
            np.testing.assert_allclose(out.numpy(), trilinear(ref_dense, bg, pts), rtol=1e-5, atol=1e-5)
        else:
            c = np.floor(np.abs(pts) + 0.5) * np.sign(pts)  # halfway away from zero
            inside = np.all((c >= 0) & (c < 10), axis=1)
            ci = np.clip(c, 0, 9).astype(int)
            np.testing.assert_array_equal(out.numpy(), np.where(inside, ref_dense[tuple(ci.T)], bg))
            np.testing.assert_array_equal(grads.numpy(), 0.0)
    # a data array shorter than the voxel count reads the background beyond its end (never out of bounds)
    out = wp.zeros(len(pts), dtype=float)
    wp.launch(sample_index, len(pts), inputs=[vol.id, wp.array(pts, dtype=wp.vec3), wp.Volume.CLOSEST,
                                              wp.array(data[:5]), -9.0, out, wp.zeros(len(pts), dtype=wp.vec3)])
    assert np.isin(out.numpy(), np.concatenate([data[:5], [-9.0]])).all()


def test_index_adjoints_match_finite_differences():
    vol, data, _ = _sparse_setup()
    p0 = np.random.default_rng(2).uniform(0.2, 8.8, (40, 3))
    p0 = (np.floor(p0) + 0.15 + 0.7 * (p0 - np.floor(p0))).astype(np.float32)
    w = wp.vec3(0.4, -0.8, 1.2)

    def run(pts, d, bg, grad=False):
        p = wp.array(pts, dtype=wp.vec3, requires_grad=grad)
        da = wp.array(d, dtype=float, requires_grad=grad)
        ba = wp.array([bg], dtype=float, requires_grad=grad)
        out = wp.zeros(len(pts), dtype=float, requires_grad=grad)
        tape = wp.Tape()
        with tape:
            wp.launch(loss_index, len(pts), inputs=[vol.id, p, da, ba, w, out])
        if grad:
            tape.backward(grads={out: wp.ones(len(pts), dtype=float)})
            return out.numpy().sum(), p.grad.numpy(), da.grad.numpy(), ba.grad.numpy()[0]
        return float(out.numpy().astype(np.float64).sum())

    _, gp, gd, gb = run(p0, data, 0.3, True)
    eps = 1e-3
    for a in range(3):
        d = np.zeros(3, np.float32)
        d[a] = eps
        fd = np.array([(run(p0[i:i + 1] + d, data, 0.3) - run(p0[i:i + 1] - d, data, 0.3)) / (2 * eps)
                       for i in range(len(p0))])
        np.testing.assert_allclose(gp[:, a], fd, rtol=2e-2, atol=2e-2)
    # the loss is linear in the data and the background: central differences are exact up to rounding
    for k in np.random.default_rng(3).choice(len(data), 12, replace=False):
        hi, lo = data.copy(), data.copy()
        hi[k] += 0.5
        lo[k] -= 0.5
        np.testing.assert_allclose(gd[k], run(p0, hi, 0.3) - run(p0, lo, 0.3), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(gb, run(p0, data, 0.8) - run(p0, data, -0.2), rtol=1e-3, atol=1e-3)
