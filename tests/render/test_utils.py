"""Colour maps, solidify_mesh and the primitive meshes of the OpenGL renderer (NumPy only: no display needed)."""

from __future__ import annotations

import numpy as np
import pytest

import treadle.render as render
from treadle._src.render import meshes


def test_bourke_color_map_ramp():
    f = render.bourke_color_map
    assert f(0.0, 1.0, 0.0) == (0.0, 0.0, 1.0)  # blue
    assert f(0.0, 1.0, 0.25) == (0.0, 1.0, 1.0)  # cyan
    assert f(0.0, 1.0, 0.5) == (0.0, 1.0, 0.0)  # green
    assert f(0.0, 1.0, 0.75) == (1.0, 1.0, 0.0)  # yellow
    assert f(0.0, 1.0, 1.0) == (1.0, 0.0, 0.0)  # red
    assert f(0.0, 1.0, -3.0) == f(0.0, 1.0, 0.0) and f(0.0, 1.0, 7.0) == f(0.0, 1.0, 1.0)  # clamped
    r, g, b = f(2.0, 6.0, 3.2)  # t = 0.3: second quarter, blue falling
    assert (r, g) == (0.0, 1.0) and b == pytest.approx(0.8)
    v = np.linspace(-1.0, 2.0, 31)
    arr = f(0.0, 1.0, v)
    assert arr.shape == (31, 3)
    np.testing.assert_allclose(arr, [f(0.0, 1.0, float(x)) for x in v])
    assert np.all(arr.max(axis=1) == 1.0)  # a fully saturated ramp everywhere


def test_tab10_color_map():
    assert render.tab10_color_map(0) == pytest.approx((31 / 255, 119 / 255, 180 / 255))
    assert render.tab10_color_map(3) == pytest.approx((214 / 255, 39 / 255, 40 / 255))
    assert render.tab10_color_map(13) == render.tab10_color_map(3)
    assert len({render.tab10_color_map(i) for i in range(10)}) == 10


def _edges_closed(faces):
    """Every directed edge of a closed, consistently oriented surface is matched by as many reversed ones."""
    from collections import Counter

    e = Counter(map(tuple, np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]).tolist()))
    return all(e[(b, a)] == n for (a, b), n in e.items())


def _signed_volume(verts, faces):
    v = verts[faces]
    return float(np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])).sum() / 6.0)


def test_solidify_mesh_makes_a_closed_outward_shell():
    verts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3]])
    out_f, out_v = render.solidify_mesh(faces, verts, 0.1)
    assert out_f.shape == (16, 3) and out_v.shape == (8, 3)
    np.testing.assert_allclose(out_v[0::2], verts + [0, 0, 0.1], atol=1e-7)  # along the +z normal
    np.testing.assert_allclose(out_v[1::2], verts - [0, 0, 0.1], atol=1e-7)
    assert _edges_closed(out_f)  # (the walls along the shared diagonal cancel in pairs)
    assert _signed_volume(out_v.astype(float), out_f) == pytest.approx(1.0 * 0.2, rel=1e-6)  # area x thickness
    _, v2 = render.solidify_mesh(faces, verts, [0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(v2[0::2, 2], [0.1, 0.2, 0.3, 0.4], rtol=1e-6)
    with pytest.raises(ValueError, match="one value per vertex"):
        render.solidify_mesh(faces, verts, [0.1, 0.2])
    with pytest.raises(ValueError, match="index"):
        render.solidify_mesh(np.array([[0, 1, 9]]), verts, 0.1)


@pytest.mark.parametrize("name,build,volume,lo,hi", [
    ("sphere", lambda: meshes.sphere(1.5, 48), 4 / 3 * np.pi * 1.5**3, (-1.5,) * 3, (1.5,) * 3),
    ("box", lambda: meshes.box((1, 2, 3)), 48.0, (-1, -2, -3), (1, 2, 3)),
    ("capsule z", lambda: meshes.capsule(0.5, 1.0, 2, 48), np.pi * 0.25 * 2 + 4 / 3 * np.pi * 0.125,
     (-0.5, -0.5, -1.5), (0.5, 0.5, 1.5)),
    ("cylinder x", lambda: meshes.cylinder(0.5, 1.0, 0, 48), np.pi * 0.25 * 2, (-1, -0.5, -0.5), (1, 0.5, 0.5)),
    ("cone", lambda: meshes.cone(0.5, 1.0, 1, 48), np.pi * 0.25 * 2 / 3, (-0.5, -1, -0.5), (0.5, 1, 0.5)),
    ("arrow", lambda: meshes.arrow(0.1, 1.0, 0.2, 0.3, 1, 48), np.pi * 0.01 + np.pi * 0.04 * 0.3 / 3,
     (-0.2, 0, -0.2), (0.2, 1.3, 0.2)),
])
def test_primitive_meshes_are_closed_outward_and_sized(name, build, volume, lo, hi):
    v, i = build()
    assert v.shape[1] == 8 and v.dtype == np.float32 and i.dtype == np.uint32
    pos, normal, faces = v[:, :3].astype(float), v[:, 3:6], i.reshape(-1, 3).astype(np.int64)
    np.testing.assert_allclose(pos.min(axis=0), lo, atol=1e-6)
    np.testing.assert_allclose(pos.max(axis=0), hi, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-5)
    # outward: the divergence theorem gives the volume (polygon approximations of curves fall slightly short)
    assert _signed_volume(pos, faces) == pytest.approx(volume, rel=0.01)
    # each triangle's winding agrees with its vertex normals (counter-clockwise seen from outside)
    tri_n = np.cross(pos[faces[:, 1]] - pos[faces[:, 0]], pos[faces[:, 2]] - pos[faces[:, 0]])
    big = np.linalg.norm(tri_n, axis=1) > 1e-9
    assert np.all(np.einsum("ij,ij->i", tri_n[big], normal[faces[big, 0]]) > 0)


def test_plane_mesh_is_two_sided():
    v, i = meshes.plane(2.0, 3.0, 4.0, 5.0)
    faces = i.reshape(-1, 3)
    pos = v[:, :3]
    n = np.cross(pos[faces[:, 1]] - pos[faces[:, 0]], pos[faces[:, 2]] - pos[faces[:, 0]])
    assert sorted(np.sign(n[:, 1]).tolist()) == [-1, -1, 1, 1]
    assert v[:, 6].max() == 4.0 and v[:, 7].max() == 5.0  # checker cells
    np.testing.assert_allclose(np.abs(pos).max(axis=0), (2, 0, 3))
