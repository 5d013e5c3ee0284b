"""Iso-surfaces and swept volumes with ``treadle.geometry``: a torus three ways and the capsule a moving sphere sweeps.

A kernel samples the signed distance of a torus (major radius R, minor radius r) on an n^3 grid; the surface at 0 is
extracted with marching cubes (``IsoSurfaceMarchingCubes``), with surface nets (``IsoSurfaceNets``) and with sparse
marching cubes (``sparse_marching_cubes``, which evaluates a batched SDF kernel only in a Lipschitz octree's thin
shell around the surface). A sphere mesh slides along a segment; ``swept_volume_mesh`` extracts the envelope of its
poses, a capsule. The nets torus and the capsule are written as OBJ files and ray-cast from ``--frames`` viewpoints.

Sanity check: every mesh is closed and consistently oriented (each edge shared by two faces, once in each
direction); the torus's area and volume match 4 pi^2 R r and 2 pi^2 R r^2, and the capsule's volume
pi r^2 L + 4/3 pi r^3, within the discretisation error; the sparse surface equals the dense one exactly.

Run: ``python -m treadle.examples.isosurface [--out DIR] [--frames N] [--res N] [--size N]``
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import treadle as wp
import treadle.geometry as geo
from treadle.examples import _image

MAJOR, MINOR = 0.55, 0.22
SPHERE_R = 0.16
PATH = (np.array([-0.75, -0.55, -0.45]), np.array([0.75, -0.35, 0.5]))


@wp.func
def torus(p: wp.vec3, big_r: float, small_r: float) -> float:
    q = wp.vec2(wp.sqrt(p[0] * p[0] + p[2] * p[2]) - big_r, p[1])
    return wp.length(q) - small_r


@wp.kernel
def torus_grid(field: wp.array3d(dtype=float), lower: wp.vec3, spacing: wp.vec3, big_r: float, small_r: float):
    i, j, k = wp.tid()
    p = lower + wp.vec3(float(i) * spacing[0], float(j) * spacing[1], float(k) * spacing[2])
    field[i, j, k] = torus(p, big_r, small_r)


@wp.kernel
def torus_points(points: wp.array(dtype=wp.vec3), big_r: float, small_r: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = torus(points[i], big_r, small_r)


class TorusSdf:
    """The torus SDF in the batched form sparse marching cubes takes; counts the points it evaluates."""

    def __init__(self) -> None:
        self.evaluations = 0

    def __call__(self, points: wp.array) -> wp.array:
        self.evaluations += points.shape[0]
        out = wp.empty(points.shape[0], dtype=float)
        wp.launch(torus_points, dim=points.shape[0], inputs=[points, MAJOR, MINOR, out])
        return out


def closed_and_oriented(faces: np.ndarray) -> bool:
    """Every undirected edge used by exactly two faces, every directed edge by one."""
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    _, undirected = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    _, counts = np.unique(directed, axis=0, return_counts=True)
    return bool(np.all(undirected == 2) and np.all(counts == 1))


def area_volume(verts: np.ndarray, tris: np.ndarray) -> tuple[float, float]:
    """Surface area and enclosed volume (divergence theorem) in float64."""
    a, b, c = (verts[tris[:, k]].astype(np.float64) for k in range(3))
    cross = np.cross(b - a, c - a)
    return float(0.5 * np.linalg.norm(cross, axis=1).sum()), float(np.einsum("ij,ij->i", a, cross).sum() / 6.0)


def run(out: str = "out/isosurface", frames: int = 4, res: int = 96, size: int = 256,
        quiet: bool = False) -> dict[str, float]:
    wp.init()
    lo, hi = (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)
    spacing = (np.float32(1.0) - np.float32(-1.0)) / np.float32(res - 1)
    field = wp.zeros((res, res, res), dtype=float)
    wp.launch(torus_grid, dim=(res, res, res), inputs=[field, wp.vec3(*lo), wp.vec3(spacing, spacing, spacing),
                                                       MAJOR, MINOR])
    area_ref, volume_ref = 4.0 * np.pi**2 * MAJOR * MINOR, 2.0 * np.pi**2 * MAJOR * MINOR**2
    tol = 2.0 * (2.0 / (res - 1)) ** 2 / MINOR**2  # second order in the cell size
    summary: dict[str, float] = {}
    meshes = {}
    ok = True
    t0 = time.perf_counter()
    for name, cls in (("marching_cubes", geo.IsoSurfaceMarchingCubes), ("surface_nets", geo.IsoSurfaceNets)):
        v, i = cls.extract(field, 0.0, lower=lo, upper=hi)
        verts, tris = v.numpy(), i.numpy().reshape(-1, 3)
        area, volume = area_volume(verts, tris)
        area_err, volume_err = abs(area / area_ref - 1.0), abs(volume / volume_ref - 1.0)
        closed = closed_and_oriented(tris)
        ok = ok and closed and area_err < tol and volume_err < tol
        summary.update({f"{name}_area_error": area_err, f"{name}_volume_error": volume_err,
                        f"{name}_closed": float(closed), f"{name}_triangles": float(len(tris))})
        meshes[name] = (verts, tris)
    dense_s = time.perf_counter() - t0
    # sparse marching cubes: the same surface from far fewer field evaluations
    sdf = TorusSdf()
    t0 = time.perf_counter()
    sv, si = geo.sparse_marching_cubes(sdf, res, res, res, lower=lo, upper=hi)
    sparse_s = time.perf_counter() - t0
    dv, dt = meshes["marching_cubes"]
    order_s, order_d = np.lexsort(sv.numpy().T), np.lexsort(dv.T)
    same = sv.shape[0] == len(dv) and si.shape[0] == 3 * len(dt) and np.array_equal(sv.numpy()[order_s], dv[order_d])
    if same:  # the triangles too, once both vertex lists are in one order
        rank_s, rank_d = np.empty(len(dv), int), np.empty(len(dv), int)
        rank_s[order_s], rank_d[order_d] = np.arange(len(dv)), np.arange(len(dv))
        key = lambda t: sorted(map(tuple, np.sort(t, axis=1).tolist()))  # noqa: E731
        same = key(rank_s[si.numpy().reshape(-1, 3)]) == key(rank_d[dt])
    ok = ok and same
    summary.update({"sparse_equals_dense": float(same), "sparse_evaluations": float(sdf.evaluations),
                    "dense_nodes": float(res**3)})
    # the swept volume of a sphere along a segment: a capsule
    sp, st = _image.sphere_mesh((0.0, 0.0, 0.0), SPHERE_R, 24)
    sphere = wp.Mesh(wp.array(sp.astype(np.float32), dtype=wp.vec3), wp.array(st.ravel(), dtype=wp.int32),
                     support_winding_number=True)
    samples = 48
    t = np.linspace(0.0, 1.0, samples)
    poses = np.zeros((1, samples, 7), np.float32)
    poses[0, :, :3] = PATH[0] + t[:, None] * (PATH[1] - PATH[0])
    poses[0, :, 6] = 1.0
    t0 = time.perf_counter()
    cv, ci = geo.swept_volume_mesh([sphere], poses, voxel_size=min(2.0 / (res - 1), SPHERE_R / 5.0))
    swept_s = time.perf_counter() - t0
    cverts, ctris = cv.numpy(), ci.numpy().reshape(-1, 3)
    length = float(np.linalg.norm(PATH[1] - PATH[0]))
    capsule_ref = np.pi * SPHERE_R**2 * length + 4.0 / 3.0 * np.pi * SPHERE_R**3
    _, capsule_vol = area_volume(cverts, ctris)
    capsule_err = abs(capsule_vol / capsule_ref - 1.0)
    capsule_closed = closed_and_oriented(ctris)
    ok = ok and capsule_closed and capsule_err < 0.03
    summary.update({"capsule_volume_error": capsule_err, "capsule_closed": float(capsule_closed)})
    # pictures: the nets torus and the capsule
    os.makedirs(out, exist_ok=True)
    nv, nt = meshes["surface_nets"]
    _image.write_obj(os.path.join(out, "torus_nets.obj"), nv, nt)
    _image.write_obj(os.path.join(out, "capsule.obj"), cverts, ctris)
    scene_v = np.concatenate([nv, cverts])
    scene_t = np.concatenate([nt, ctris + len(nv)])
    colors = np.concatenate([np.tile([0.35, 0.65, 0.85], (len(nt), 1)), np.tile([0.9, 0.55, 0.3], (len(ctris), 1))])
    for f in range(frames):
        view = _image.View(_image.camera(360.0 * f / max(frames, 1), 30.0), (0.0, -0.1, 0.0), 2.3, size, size)
        img, _ = _image.raycast_mesh(view, scene_v, scene_t, colors)
        _image.write_png(os.path.join(out, f"frame_{f:03d}.png"), img)
    summary.update({"dense_ms": dense_s * 1e3, "sparse_ms": sparse_s * 1e3, "swept_ms": swept_s * 1e3,
                    "ok": float(ok)})
    if not quiet:
        print(f"torus on a {res}^3 grid ({dense_s * 1e3:.0f} ms for both dense extractions, incl. first-call compile):")
        for name in ("marching_cubes", "surface_nets"):
            print(f"  {name:15s} {summary[name + '_triangles']:.0f} triangles, closed and oriented: "
                  f"{bool(summary[name + '_closed'])}, area error {summary[name + '_area_error']:.2e}, volume error "
                  f"{summary[name + '_volume_error']:.2e} (bound {tol:.2e})")
        print(f"  sparse marching cubes: {sdf.evaluations} field evaluations for {res**3} grid nodes "
              f"({sdf.evaluations / res**3:.1%}); same surface as dense: {same}")
        print(f"capsule swept by a sphere ({samples} poses, {swept_s * 1e3:.0f} ms): {len(ctris)} triangles, closed: "
              f"{capsule_closed}, volume {capsule_vol:.5f} (analytic {capsule_ref:.5f}, rel. error {capsule_err:.2e})")
        print(f"torus_nets.obj, capsule.obj, {frames} frames in {out}/")
        print("OK" if ok else "FAILED")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/isosurface")
    p.add_argument("--frames", type=int, default=4)
    p.add_argument("--res", type=int, default=96)
    p.add_argument("--size", type=int, default=256)
    a = p.parse_args()
    r = run(a.out, a.frames, a.res, a.size)
    raise SystemExit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
