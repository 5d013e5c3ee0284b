"""MarchingCubes: a sphere SDF gives a closed, consistently oriented surface on the sphere whose area and volume match
the analytic values; domain bounds, empty output, the case table, gradients to the field, argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.geometry.marching_cubes import EDGES, case_tables


@wp.kernel
def sphere_sdf(field: wp.array3d(dtype=float), lower: wp.vec3, spacing: float, center: wp.vec3,
               radius: wp.array(dtype=float)):
    i, j, k = wp.tid()
    p = lower + spacing * wp.vec3(float(i), float(j), float(k))
    field[i, j, k] = wp.length(p - center) - radius[0]


@wp.kernel
def surface_area(verts: wp.array(dtype=wp.vec3), tris: wp.array(dtype=int), area: wp.array(dtype=float)):
    t = wp.tid()
    a = verts[tris[3 * t]]
    b = verts[tris[3 * t + 1]]
    c = verts[tris[3 * t + 2]]
    wp.atomic_add(area, 0, 0.5 * wp.length(wp.cross(b - a, c - a)))


def sphere_field(n: int, lower: float, spacing: float, center: tuple[float, float, float], radius: float,
                 device: str, requires_grad: bool = False) -> tuple[wp.array, wp.array]:
    r = wp.array([radius], dtype=float, device=device, requires_grad=requires_grad)
    field = wp.zeros((n, n, n), dtype=float, device=device, requires_grad=requires_grad)
    wp.launch(sphere_sdf, dim=(n, n, n), inputs=[field, wp.vec3(lower, lower, lower), spacing, wp.vec3(*center), r],
              device=device)
    return field, r


def check_closed_oriented(verts: np.ndarray, tris: np.ndarray) -> None:
    assert tris.shape[1] == 3 and len(tris) > 0
    assert (tris[:, 0] != tris[:, 1]).all() and (tris[:, 1] != tris[:, 2]).all() and (tris[:, 0] != tris[:, 2]).all()
    assert (np.unique(tris) == np.arange(len(verts))).all()  # every vertex used
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    _, counts = np.unique(directed, axis=0, return_counts=True)
    assert (counts == 1).all()  # no directed edge twice: consistent orientation
    reverse = {tuple(e) for e in directed[:, ::-1].tolist()}
    assert all(tuple(e) in reverse for e in directed.tolist())  # every edge has its twin: closed


def test_sphere_is_closed_and_accurate(device: str) -> None:
    n, lower, spacing, radius = 40, -1.0, 2.0 / 39, 0.62
    center = (0.03, -0.05, 0.02)
    field, _ = sphere_field(n, lower, spacing, center, radius, device)
    mc = wp.MarchingCubes(n, n, n, domain_bounds_lower_corner=(-1.0, -1.0, -1.0),
                          domain_bounds_upper_corner=(1.0, 1.0, 1.0), device=device)
    assert mc.verts is None
    mc.surface(field, 0.0)
    verts = mc.verts.numpy()
    tris = mc.indices.numpy().reshape(-1, 3)
    assert mc.indices.dtype == wp.int32
    check_closed_oriented(verts, tris)
    dist = np.linalg.norm(verts - np.array(center), axis=1)
    assert np.abs(dist - radius).max() < spacing  # on the sphere within a cell
    v = verts[tris].astype(np.float64)
    volume = np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])).sum() / 6.0
    area = 0.5 * np.linalg.norm(np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0]), axis=1).sum()
    assert volume > 0  # normals point out (toward larger field values)
    np.testing.assert_allclose(volume, 4.0 / 3.0 * np.pi * radius**3, rtol=0.02)
    np.testing.assert_allclose(area, 4.0 * np.pi * radius**2, rtol=0.02)


def test_default_bounds_nonuniform_grid_and_reuse(device: str) -> None:
    x, y, z = np.meshgrid(np.arange(20), np.arange(14), np.arange(26), indexing="ij")
    f = np.sqrt((x - 9.5) ** 2 + (y - 6.7) ** 2 + (z - 12.2) ** 2) - 5.0
    field = wp.array(f.astype(np.float32), dtype=float, device=device)
    mc = wp.MarchingCubes(20, 14, 26, device=device)
    mc.surface(field, 0.0)
    verts, tris = mc.verts.numpy(), mc.indices.numpy().reshape(-1, 3)
    check_closed_oriented(verts, tris)
    assert np.abs(np.linalg.norm(verts - [9.5, 6.7, 12.2], axis=1) - 5.0).max() < 1.0
    # the field's threshold shifts the surface: f = 1 is the sphere of radius 6
    mc.surface(field, 1.0)
    assert np.abs(np.linalg.norm(mc.verts.numpy() - [9.5, 6.7, 12.2], axis=1) - 6.0).max() < 1.0
    mc.resize(8, 8, 8)
    with pytest.raises(ValueError):
        mc.surface(field, 0.0)
    verts2, tris2 = wp.MarchingCubes.extract(field, 0.0, lower=(0.0, 0.0, 0.0), upper=(19.0, 13.0, 25.0))
    np.testing.assert_allclose(verts2.numpy(), verts, atol=1e-5)


def test_empty_and_constant_fields(device: str) -> None:
    field = wp.zeros((6, 7, 8), dtype=float, device=device)
    mc = wp.MarchingCubes(6, 7, 8, device=device)
    mc.surface(field, 1.0)  # everything inside
    assert mc.verts.shape[0] == 0 and mc.indices.shape[0] == 0
    mc.surface(field, -1.0)  # everything outside
    assert mc.verts.shape[0] == 0 and mc.indices.shape[0] == 0


def test_case_table_properties() -> None:
    tri_edges, tri_counts = case_tables()
    assert tri_counts[0] == 0 and tri_counts[255] == 0
    assert tri_counts.max() == 5
    # the triangles of each case use exactly the cell edges whose corners differ
    for case in range(256):
        crossed = {e for e, (a, b) in enumerate(EDGES) if (case >> a & 1) != (case >> b & 1)}
        used = set(tri_edges[case, : 3 * tri_counts[case]].tolist())
        assert used == crossed, case
    # a single inside corner: one triangle on its three edges
    for corner in range(8):
        case = 1 << corner
        assert tri_counts[case] == 1
        edges = set(tri_edges[case, :3].tolist())
        assert len(edges) == 3


def test_gradient_flows_to_the_field(device: str) -> None:
    n, radius = 48, 0.5
    with wp.Tape(check_overwrites=False) as tape:
        field, r = sphere_field(n, -1.0, 2.0 / (n - 1), (0.0, 0.0, 0.0), radius, device, requires_grad=True)
        verts, tris = wp.MarchingCubes.extract_surface_marching_cubes(
            field, threshold=0.0, domain_bounds_lower_corner=wp.vec3(-1.0, -1.0, -1.0),
            domain_bounds_upper_corner=wp.vec3(1.0, 1.0, 1.0))
        area = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        wp.launch(surface_area, dim=tris.shape[0] // 3, inputs=[verts, tris, area], device=device)
    np.testing.assert_allclose(area.numpy()[0], 4.0 * np.pi * radius**2, rtol=5e-3)
    tape.backward(area)
    np.testing.assert_allclose(r.grad.numpy()[0], 8.0 * np.pi * radius, rtol=5e-3)


def test_argument_errors(device: str) -> None:
    with pytest.raises(ValueError):
        wp.MarchingCubes.extract(wp.zeros((4, 4), dtype=float, device=device))
    with pytest.raises(ValueError):
        wp.MarchingCubes.extract(wp.zeros((4, 1, 4), dtype=float, device=device))
    with pytest.raises(TypeError):
        wp.MarchingCubes.extract(wp.zeros((4, 4, 4), dtype=wp.float64, device=device))
    # the older positional form (nx, ny, nz, max_verts, max_tris)
    mc = wp.MarchingCubes(4, 4, 4, 100, 200)
    assert mc.max_verts == 100 and mc.max_tris == 200 and mc.lower is None
