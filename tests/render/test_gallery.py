"""The gallery examples through warp.render: a USD stage of the animation and PNG frames from the OpenGL renderer,
with their physical sanity figures unchanged."""

from __future__ import annotations

import os

import numpy as np

from treadle.examples import _image


def _pngs(folder, count):
    names = sorted(n for n in os.listdir(folder) if n.endswith(".png"))
    assert len(names) == count
    images = [_image.read_png(os.path.join(folder, n)) for n in names]
    assert all(img.std() > 5.0 for img in images)  # not blank
    return images


def test_dem_writes_usd_and_opengl_frames(tmp_path, pxr, gl_available):
    from pxr import Usd, UsdGeom

    from treadle.examples import dem

    usd = str(tmp_path / "dem.usd")
    r = dem.run(str(tmp_path / "png"), frames=2, count=300, seconds=1.2, size=64, quiet=True, usd=usd, png="opengl")
    assert r["ok"] and r["max_overlap"] < 0.05 and r["energy_end"] < r["energy_start"]
    _pngs(str(tmp_path / "png"), 3)
    stage = Usd.Stage.Open(usd)
    inst = UsdGeom.PointInstancer(stage.GetPrimAtPath("/root/particles"))
    assert inst.GetPositionsAttr().GetTimeSamples() == [0.0, 1.0, 2.0]  # one frame per time code
    assert len(inst.GetPositionsAttr().Get(2)) == int(r["particles"])
    assert stage.GetPrimAtPath("/root/floor").IsA(UsdGeom.Cube)


def test_cloth_and_marching_cubes_through_the_renderers(tmp_path, pxr, gl_available):
    from pxr import Usd, UsdGeom

    from treadle.examples import cloth, marching_cubes

    r = cloth.run(str(tmp_path / "cloth"), frames=1, res=12, seconds=0.3, size=48, quiet=True,
                  usd=str(tmp_path / "cloth.usda"), png="opengl")
    assert r["ok"] and r["max_strain"] < 0.1
    _pngs(str(tmp_path / "cloth"), 2)
    cloth_stage = Usd.Stage.Open(str(tmp_path / "cloth.usda"))  # kept: prims do not keep their stage alive
    mesh = UsdGeom.Mesh(cloth_stage.GetPrimAtPath("/root/cloth"))
    assert len(mesh.GetPointsAttr().Get(1)) == 144 and mesh.GetPointsAttr().GetTimeSamples() == [0.0, 1.0]
    r = marching_cubes.run(str(tmp_path / "mc"), frames=2, res=32, size=48, quiet=True,
                           usd=str(tmp_path / "mc.usda"), png="opengl")
    assert r["ok"] and r["closed"]
    a, b = _pngs(str(tmp_path / "mc"), 2)
    stage = Usd.Stage.Open(str(tmp_path / "mc.usda"))
    torus = UsdGeom.Mesh(stage.GetPrimAtPath("/root/torus"))
    assert len(torus.GetFaceVertexIndicesAttr().Get(0)) == 3 * int(r["triangles"])
    turn = np.array(UsdGeom.Xformable(torus).ComputeLocalToWorldTransform(1.0))[:3, :3]
    np.testing.assert_allclose(turn @ turn.T, np.eye(3), atol=1e-5)  # frame 1 turns the torus half a turn
    assert abs(turn[0, 0] + 1.0) < 1e-5 and abs(turn[1, 1] - 1.0) < 1e-5
