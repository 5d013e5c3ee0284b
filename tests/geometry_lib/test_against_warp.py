"""The same inputs through warp-lang's ``warp.geometry`` (CPU) and ``treadle.geometry``: equal outputs where both
define them exactly, equal geometry where only the triangulation of ambiguous cells may differ. Skipped when
warp-lang is not installed."""

from __future__ import annotations

import os

import numpy as np
import pytest
from geomlib_shapes import area_volume, box_mesh, icosphere

import treadle as wp
import treadle.geometry as geo


@pytest.fixture(scope="module")
def warp():  # noqa: ANN201 - the reference module
    mod = pytest.importorskip("warp", reason="warp-lang is not installed")
    if "treadle" in os.path.abspath(getattr(mod, "__file__", "")):
        pytest.skip("'warp' resolves to Treadle here, not to warp-lang")
    pytest.importorskip("warp.geometry", reason="this warp-lang has no warp.geometry (added in 1.19)")
    mod.config.quiet = True
    mod.init()
    return mod


def sphere_grid(n: int, center: tuple[float, float, float], radius: float) -> np.ndarray:
    x = np.linspace(-1.0, 1.0, n)
    gx, gy, gz = np.meshgrid(x - center[0], x - center[1], x - center[2], indexing="ij")
    return (np.sqrt(gx**2 + gy**2 + gz**2) - radius).astype(np.float32)


def rounded(v: np.ndarray, decimals: int = 4) -> set[tuple[float, ...]]:
    return {tuple(x) for x in np.round(v.astype(np.float64), decimals).tolist()}


def test_marching_cubes(warp) -> None:  # noqa: ANN001
    f = sphere_grid(30, (0.03, -0.02, 0.05), 0.63)
    v, i = geo.IsoSurfaceMarchingCubes.extract(wp.array(f, dtype=float), 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))
    rv, ri = warp.geometry.IsoSurfaceMarchingCubes.extract(warp.array(f, dtype=float), 0.0, lower=(-1, -1, -1),
                                                           upper=(1, 1, 1))
    assert v.shape == rv.shape  # one vertex per crossed edge in both
    np.testing.assert_allclose(np.sort(v.numpy(), axis=0), np.sort(rv.numpy(), axis=0), atol=1e-6)
    a, vol = area_volume(v.numpy(), i.numpy().reshape(-1, 3))
    ra, rvol = area_volume(rv.numpy(), ri.numpy().reshape(-1, 3))
    assert abs(a / ra - 1) < 1e-3 and abs(vol / rvol - 1) < 1e-3
    assert geo.IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS == warp.geometry.IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS
    assert geo.IsoSurfaceMarchingCubes.EDGE_TO_CORNERS == warp.geometry.IsoSurfaceMarchingCubes.EDGE_TO_CORNERS


def test_surface_nets_identical(warp) -> None:  # noqa: ANN001
    f = sphere_grid(26, (0.07, -0.11, 0.02), 0.97)  # leaves the grid: an open mesh
    f[0, 0, 0] = -1.0
    for topology in ("triangle", "quad"):
        v, i = geo.IsoSurfaceNets.extract(wp.array(f, dtype=float), 0.2, lower=(-1, 0, 0), upper=(1, 2, 3),
                                          topology=topology)
        rv, ri = warp.geometry.IsoSurfaceNets.extract(warp.array(f, dtype=float), 0.2, lower=(-1, 0, 0),
                                                      upper=(1, 2, 3), topology=topology)
        np.testing.assert_allclose(v.numpy(), rv.numpy(), atol=1e-6)
        np.testing.assert_array_equal(i.numpy(), ri.numpy())


def test_gradients_agree(warp) -> None:  # noqa: ANN001
    # d(sum of w . v)/d(field) with one weight vector for all vertices: independent of the vertices' order
    f = sphere_grid(16, (0.03, -0.02, 0.05), 0.6)
    w = np.array([0.3, -1.2, 0.7], np.float32)
    for name in ("IsoSurfaceMarchingCubes", "IsoSurfaceNets"):
        grads = []
        for lib in (wp, warp):
            field = lib.array(f, dtype=float, requires_grad=True)
            with lib.Tape() as tape:
                verts, _ = getattr(lib.geometry, name).extract(field, 0.0)
            tape.backward(grads={verts: lib.array(np.tile(w, (verts.shape[0], 1)), dtype=lib.vec3)})
            grads.append(field.grad.numpy())
        assert np.abs(grads[0]).max() > 0
        np.testing.assert_allclose(grads[0], grads[1], atol=1e-4)


class Sdf:
    def __init__(self, lib, center: tuple[float, float, float], radius: float) -> None:  # noqa: ANN001
        self.lib, self.center, self.radius = lib, np.array(center), radius

    def __call__(self, points):  # noqa: ANN001, ANN204
        p = points.numpy().astype(np.float64)
        return self.lib.array((np.linalg.norm(p - self.center, axis=1) - self.radius).astype(np.float32),
                              dtype=self.lib.float32, device=points.device)


def test_sparse_and_octree(warp) -> None:  # noqa: ANN001
    for dims, lo, hi, r in (((24, 30, 17), (-1, -1, -1), (1, 1.2, 0.9), 1.1), ((33, 33, 33), (-1, -1, -1),
                                                                                (1, 1, 1), 0.5)):
        v, i, st = geo.sparse_marching_cubes(Sdf(wp, (0.05, 0, 0), r), *dims, lower=lo, upper=hi, return_stats=True)
        rv, ri, rst = warp.geometry.sparse_marching_cubes(Sdf(warp, (0.05, 0, 0), r), *dims, lower=lo, upper=hi,
                                                          return_stats=True)
        assert st == rst
        assert v.shape == rv.shape
        np.testing.assert_allclose(np.sort(v.numpy(), axis=0), np.sort(rv.numpy(), axis=0), atol=1e-5)
    cells, w = geo.lipschitz_octree(Sdf(wp, (0.1, -0.2, 0.3), 0.6), (-1, -1, -1), 2.0, 5)
    rcells, rw = warp.geometry.lipschitz_octree(Sdf(warp, (0.1, -0.2, 0.3), 0.6), (-1, -1, -1), 2.0, 5)
    assert w == rw
    assert {tuple(c) for c in cells.numpy().tolist()} == {tuple(c) for c in rcells.numpy().tolist()}


def test_swept_volume(warp) -> None:  # noqa: ANN001
    pts, faces = box_mesh((0, 0, 0), (0.5, 0.4, 0.3))
    spts, sfaces = icosphere(2, 0.2)
    meshes = [wp.Mesh(wp.array(p, dtype=wp.vec3), wp.array(f.reshape(-1), dtype=wp.int32),
                      support_winding_number=True) for p, f in ((pts, faces), (spts, sfaces))]
    rmeshes = [warp.Mesh(warp.array(p, dtype=warp.vec3), warp.array(f.reshape(-1), dtype=warp.int32),
                         support_winding_number=True) for p, f in ((pts, faces), (spts, sfaces))]
    t = np.linspace(0, 1, 7)
    xf = np.zeros((2, 7, 7), np.float32)
    xf[0, :, 0], xf[0, :, 5], xf[0, :, 6] = t, np.sin(0.4 * t), np.cos(0.4 * t)
    xf[1, :, 1], xf[1, :, 6] = 0.8 * t + 0.5, 1.0
    b, rb = geo.swept_volume_bounds(meshes, xf, 0.05), warp.geometry.swept_volume_bounds(rmeshes, xf, 0.05)
    np.testing.assert_allclose(np.array(b), np.array(rb), atol=1e-6)
    for kw in ({"voxel_size": 0.06}, {"resolution": (20, 24, 14)}):
        for mode in geo.SweptVolumeSignMode:
            f, lo, hi = geo.swept_volume_field(meshes, xf, sign_mode=mode, **kw)
            rf, rlo, rhi = warp.geometry.swept_volume_field(rmeshes, xf, sign_mode=int(mode), **kw)
            assert f.shape == rf.shape
            np.testing.assert_allclose(np.array(lo), np.array(rlo), atol=1e-5)
            np.testing.assert_allclose(np.array(hi), np.array(rhi), atol=1e-5)
            a, r = f.numpy(), rf.numpy()
            clear = np.abs(r) > 1e-4  # nodes on a surface may take either sign
            np.testing.assert_allclose(a[clear], r[clear], atol=1e-5)
    v, _ = geo.swept_volume_mesh(meshes, xf, voxel_size=0.05, threshold=0.05)
    rv, _ = warp.geometry.swept_volume_mesh(rmeshes, xf, voxel_size=0.05, threshold=0.05)
    assert abs(v.shape[0] - rv.shape[0]) <= 0.01 * rv.shape[0]


def test_adjacency_and_delaunay(warp) -> None:  # noqa: ANN001
    rng = np.random.default_rng(4)
    n = 14
    pts = (np.array([[i, j] for j in range(n) for i in range(n)], np.float64)
           + rng.uniform(-0.4, 0.4, (n * n, 2))).astype(np.float32)
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            a, b, c, d = j * n + i, j * n + i + 1, (j + 1) * n + i, (j + 1) * n + i + 1
            tris += [[a, b, d], [a, d, c]] if rng.random() < 0.5 else [[a, b, c], [b, d, c]]
    tris = np.array(tris, np.int32)
    mine = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32))
    ref = warp.geometry.tri_tri_adjacency(warp.array(tris, dtype=warp.int32))
    for x, y in zip(mine, ref):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    m_idx, r_idx = wp.array(tris, dtype=wp.int32), warp.array(tris, dtype=warp.int32)
    geo.delaunay_edge_flip(wp.array(pts, dtype=wp.vec2), m_idx)
    warp.geometry.delaunay_edge_flip(warp.array(pts, dtype=warp.vec2), r_idx)
    assert {tuple(sorted(t)) for t in m_idx.numpy().tolist()} == {tuple(sorted(t)) for t in r_idx.numpy().tolist()}
