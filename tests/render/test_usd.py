"""UsdRenderer: the stages it writes, read back with ``pxr.Usd.Stage.Open``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import treadle as wp
import treadle.render as render


def _world(stage, path, t):
    from pxr import UsdGeom

    m = UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(t)
    return np.array(m, dtype=np.float64)  # row-vector convention: p' = p @ m


def _apply(m, p):
    return np.append(np.asarray(p, np.float64), 1.0) @ m


def test_stage_metadata_and_root(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    path = str(tmp_path / "meta.usda")
    r = render.UsdRenderer(path, up_axis="z", fps=30, scaling=2.5)
    for f in range(4):
        r.begin_frame(f / 30.0)
        r.render_sphere("s", (0.0, 0.0, f), (0.0, 0.0, 0.0, 1.0), 0.5)
        r.end_frame()
    assert r.save()
    stage = Usd.Stage.Open(path)
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert stage.GetFramesPerSecond() == 30 and stage.GetTimeCodesPerSecond() == 30
    assert stage.GetStartTimeCode() == 0 and stage.GetEndTimeCode() == 3
    assert stage.GetDefaultPrim().GetPath() == "/root"
    # the root carries the scaling: the sphere at (0, 0, 2) lands at (0, 0, 5)
    np.testing.assert_allclose(_apply(_world(stage, "/root/s", 2.0), (0, 0, 0))[:3], (0, 0, 5.0), atol=1e-6)
    assert stage.GetPrimAtPath("/root/s").GetAttribute("xformOp:translate").GetTimeSamples() == [0, 1, 2, 3]


def test_points_are_animated_instanced_spheres(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    path = str(tmp_path / "points.usd")  # binary crate file
    r = render.UsdRenderer(path, fps=10)
    rng = np.random.default_rng(0)
    frames = [rng.standard_normal((n, 3)).astype(np.float32) for n in (5, 5, 7)]
    for f, pts in enumerate(frames):
        r.begin_frame(f * 0.1)
        r.render_points("pts", wp.array(pts, dtype=wp.vec3), radius=0.25, colors=(1.0, 0.5, 0.0))
        r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    inst = UsdGeom.PointInstancer(stage.GetPrimAtPath("/root/pts"))
    assert inst and inst.GetPrototypesRel().GetTargets() == ["/root/pts/sphere"]
    assert stage.GetPrimAtPath("/root/pts/sphere").IsA(UsdGeom.Sphere)
    assert inst.GetPositionsAttr().GetTimeSamples() == [0, 1, 2]
    for f, pts in enumerate(frames):
        np.testing.assert_array_equal(np.array(inst.GetPositionsAttr().Get(f)), pts)
        scales = np.array(inst.GetScalesAttr().Get(f))
        assert scales.shape == (len(pts), 3) and np.all(scales == np.float32(0.25))
        assert list(inst.GetProtoIndicesAttr().Get(f)) == [0] * len(pts)
    # the shared radius is written when the count changes, not every frame
    assert inst.GetScalesAttr().GetTimeSamples() == [0, 2]
    color = UsdGeom.PrimvarsAPI(inst.GetPrim()).GetPrimvar("displayColor")
    assert color.GetInterpolation() == UsdGeom.Tokens.constant
    np.testing.assert_allclose(np.array(color.Get(1)), [[1.0, 0.5, 0.0]])


def test_points_per_point_radius_colors_and_cloud(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    path = str(tmp_path / "cloud.usda")
    r = render.UsdRenderer(path)
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0]], np.float32)
    radii = np.array([0.1, 0.2, 0.3], np.float32)
    cols = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    r.begin_frame(0.0)
    r.render_points("spheres", pts, radius=radii, colors=cols)
    r.render_points("cloud", [wp.vec3(*p) for p in pts], radius=radii, colors=cols, as_spheres=False)
    r.render_points("hidden", pts, radius=0.1, visible=False)
    r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    inst = UsdGeom.PointInstancer(stage.GetPrimAtPath("/root/spheres"))
    np.testing.assert_allclose(np.array(inst.GetScalesAttr().Get(0))[:, 0], radii)
    pv = UsdGeom.PrimvarsAPI(inst.GetPrim()).GetPrimvar("displayColor")
    assert pv.GetInterpolation() == UsdGeom.Tokens.vertex
    np.testing.assert_allclose(np.array(pv.Get(0)), cols)
    cloud = UsdGeom.Points(stage.GetPrimAtPath("/root/cloud"))
    np.testing.assert_allclose(np.array(cloud.GetPointsAttr().Get(0)), pts)
    np.testing.assert_allclose(np.array(cloud.GetWidthsAttr().Get(0)), 2 * radii)
    assert cloud.GetWidthsInterpolation() == UsdGeom.Tokens.vertex
    hidden = UsdGeom.Imageable(stage.GetPrimAtPath("/root/hidden"))
    assert hidden.ComputeVisibility(0) == UsdGeom.Tokens.invisible


def test_shapes_have_expected_prims_and_attributes(pxr, tmp_path):
    from pxr import Gf, Usd, UsdGeom

    path = str(tmp_path / "shapes.usda")
    r = render.UsdRenderer(path)
    q = np.array(wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), 0.5 * np.pi))  # 90 degrees about z
    r.begin_frame(0.0)
    r.render_sphere("sphere", (1, 2, 3), q, 0.5, color=(0, 1, 0))
    r.render_box("box", (0, 0, 0), q, (1, 2, 3))
    r.render_capsule("capsule", (0, 0, 0), (0, 0, 0, 1), 0.2, 0.5, up_axis=2)
    r.render_cylinder("cylinder", (0, 0, 0), (0, 0, 0, 1), 0.3, 0.7, up_axis=0)
    r.render_cone("cone", (0, 0, 0), (0, 0, 0, 1), 0.4, 0.6)
    r.render_arrow("arrow", (0, 0, 0), (0, 0, 0, 1), 0.1, 1.0)
    r.render_plane("plane", (0, 1, 0), (0, 0, 0, 1), 2.0, 3.0)
    r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    sphere = UsdGeom.Sphere(stage.GetPrimAtPath("/root/sphere"))
    assert sphere.GetRadiusAttr().Get(0) == 0.5
    np.testing.assert_allclose(np.array(sphere.GetDisplayColorAttr().Get(0)), [[0, 1, 0]])
    # the quaternion (x, y, z, w) became the orient op: +x turns to +y, then the translation
    m = _world(stage, "/root/sphere", 0)
    np.testing.assert_allclose(_apply(m, (1, 0, 0))[:3], (1, 3, 3), atol=1e-6)
    box = stage.GetPrimAtPath("/root/box")
    assert box.IsA(UsdGeom.Cube) and UsdGeom.Cube(box).GetSizeAttr().Get() == 2.0
    bound = UsdGeom.BBoxCache(0, ["default"]).ComputeWorldBound(box).ComputeAlignedRange()
    np.testing.assert_allclose(np.array(bound.GetMax()), (2, 1, 3), atol=1e-6)  # half-extents (1, 2, 3), turned
    for name, schema, radius, height, axis in (("capsule", UsdGeom.Capsule, 0.2, 1.0, "Z"),
                                               ("cylinder", UsdGeom.Cylinder, 0.3, 1.4, "X"),
                                               ("cone", UsdGeom.Cone, 0.4, 1.2, "Y")):
        prim = schema(stage.GetPrimAtPath(f"/root/{name}"))
        assert prim, name
        assert prim.GetRadiusAttr().Get(0) == pytest.approx(radius)
        assert prim.GetHeightAttr().Get(0) == pytest.approx(height)
        assert prim.GetAxisAttr().Get() == axis
    shaft = UsdGeom.Cylinder(stage.GetPrimAtPath("/root/arrow/base"))
    cap = UsdGeom.Cone(stage.GetPrimAtPath("/root/arrow/cap"))
    assert shaft.GetHeightAttr().Get(0) == pytest.approx(1.0) and cap.GetRadiusAttr().Get(0) == pytest.approx(0.18)
    arrow_bound = UsdGeom.BBoxCache(0, ["default"]).ComputeWorldBound(stage.GetPrimAtPath("/root/arrow"))
    assert arrow_bound.ComputeAlignedRange().GetMax()[1] == pytest.approx(1.18)  # shaft + 0.18 cap
    plane = UsdGeom.Mesh(stage.GetPrimAtPath("/root/plane"))
    pts = np.array(plane.GetPointsAttr().Get())
    np.testing.assert_allclose(np.abs(pts), [[2, 0, 3]] * 4)
    # counter-clockwise seen from +Y: the polygon's normal by Newell's method points up
    idx = list(plane.GetFaceVertexIndicesAttr().Get())
    poly = pts[idx]
    normal = np.cross(poly[1] - poly[0], poly[2] - poly[0])
    assert normal[1] > 0
    assert isinstance(Gf.Vec3f(0), Gf.Vec3f)


def test_mesh_topology_and_animation(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    path = str(tmp_path / "mesh.usda")
    r = render.UsdRenderer(path)
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    for f in range(3):
        r.begin_frame(f / 60.0)
        r.render_mesh("m", pts + np.float32(f), tris, colors=(0.2, 0.4, 0.8))
        r.end_frame()
    r.begin_frame(3 / 60.0)
    r.render_mesh("m", pts[:3], [0, 1, 2], update_topology=True, smooth_shading=False)
    r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/root/m"))
    assert mesh.GetPointsAttr().GetTimeSamples() == [0, 1, 2, 3]
    np.testing.assert_allclose(np.array(mesh.GetPointsAttr().Get(2)), pts + 2)
    assert list(mesh.GetFaceVertexIndicesAttr().Get(1)) == [0, 1, 2, 0, 2, 3]
    assert list(mesh.GetFaceVertexIndicesAttr().Get(3)) == [0, 1, 2]
    assert list(mesh.GetFaceVertexCountsAttr().Get(3)) == [3]
    normals = np.array(mesh.GetNormalsAttr().Get(0))
    np.testing.assert_allclose(normals, [[0, 0, 1]] * 4, atol=1e-6)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        r.render_mesh("bad", pts, [0, 1, 4])
    with pytest.raises(ValueError, match="multiple of 3"):
        r.render_mesh("bad2", pts, [0, 1])


def test_lines_become_oriented_tubes(pxr, tmp_path):
    from pxr import Gf, Usd, UsdGeom

    path = str(tmp_path / "lines.usda")
    r = render.UsdRenderer(path)
    verts = np.array([[0, 0, 0], [2, 0, 0], [2, 0, 3], [0, 0, -1]], np.float32)
    r.begin_frame(0.0)
    r.render_line_list("list", verts, [0, 1, 1, 2, 0, 3], color=(1, 0, 1), radius=0.05)
    r.render_line_strip("strip", verts, radius=0.02)
    r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    for name, starts, ends in (("list", verts[[0, 1, 0]], verts[[1, 2, 3]]), ("strip", verts[:-1], verts[1:])):
        inst = UsdGeom.PointInstancer(stage.GetPrimAtPath(f"/root/{name}"))
        proto = UsdGeom.Cylinder(stage.GetPrimAtPath(inst.GetPrototypesRel().GetTargets()[0]))
        assert proto.GetAxisAttr().Get() == "Z" and proto.GetHeightAttr().Get() == 1.0
        pos = np.array(inst.GetPositionsAttr().Get(0))
        np.testing.assert_allclose(pos, 0.5 * (starts + ends), atol=1e-6)
        lengths = np.array(inst.GetScalesAttr().Get(0))[:, 2]
        np.testing.assert_allclose(lengths, np.linalg.norm(ends - starts, axis=1), rtol=1e-6)
        for q, a, b in zip(inst.GetOrientationsAttr().Get(0), starts, ends):
            axis = np.array(Gf.Rotation(Gf.Quatd(q)).TransformDir(Gf.Vec3d(0, 0, 1)))
            np.testing.assert_allclose(axis, (b - a) / np.linalg.norm(b - a), atol=2e-3)  # half-precision quats
    list_proto = UsdGeom.Cylinder(stage.GetPrimAtPath("/root/list/segment"))
    assert list_proto.GetRadiusAttr().Get(0) == pytest.approx(0.05)
    np.testing.assert_allclose(np.array(list_proto.GetDisplayColorAttr().Get(0)), [[1, 0, 1]])
    with pytest.raises(ValueError, match="pairs"):
        r.render_line_list("odd", verts, [0, 1, 2])


def test_templates_instances_and_bodies(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    path = str(tmp_path / "instances.usda")
    r = render.UsdRenderer(path)
    r.begin_frame(0.0)
    body = r.register_body("body0")
    template = r.render_sphere("unit_ball", (0, 0, 0), (0, 0, 0, 1), 0.5, is_template=True, color=(1, 0, 0))
    a = r.add_shape_instance("a", template, "body0", (1, 2, 3), (0, 0, 0, 1), scale=(2, 2, 2))
    b = r.add_shape_instance("b", template, None, (-1, 0, 0), (0, 0, 0, 1), color1=(0, 0, 1))
    r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    assert body == "/root/body0" and a == "/root/body0/a" and b == "/root/b"
    assert stage.GetPrimAtPath(template).IsAbstract()  # a class: only its instances are drawn
    assert not any(p.GetPath() == template for p in stage.Traverse())
    cache = UsdGeom.BBoxCache(0, ["default"])
    box = cache.ComputeWorldBound(stage.GetPrimAtPath(a)).ComputeAlignedRange()
    np.testing.assert_allclose(np.array(box.GetMin()), (0, 1, 2), atol=1e-6)  # radius 0.5 scaled by 2
    np.testing.assert_allclose(np.array(box.GetMax()), (2, 3, 4), atol=1e-6)
    colour = UsdGeom.Sphere(stage.GetPrimAtPath(f"{b}/shape")).GetDisplayColorAttr().Get(0)
    np.testing.assert_allclose(np.array(colour), [[0, 0, 1]])
    with pytest.raises(ValueError, match="template"):
        r.add_shape_instance("c", "/root/nothing", None, (0, 0, 0), (0, 0, 0, 1))


def test_ground_ref_and_visibility(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    asset = str(tmp_path / "asset.usda")
    a = render.UsdRenderer(asset)
    a.begin_frame(0.0)
    a.render_box("cube", (0, 0, 0), (0, 0, 0, 1), (0.5, 0.5, 0.5))
    a.end_frame()
    a.save()
    path = str(tmp_path / "scene.usda")
    r = render.UsdRenderer(path, up_axis="Z")
    r.render_ground(size=10.0, plane=(0.0, 0.0, 1.0, 2.0))
    for f, vis in enumerate((True, False, True)):
        r.begin_frame(f / 60.0)
        r.render_ref("crate", asset, (0, 0, f), (0, 0, 0, 1), (2, 2, 2), color=(0.5, 0.5, 0.5))
        r.render_sphere("blink", (0, 0, 0), (0, 0, 0, 1), 1.0, visible=vis)
        r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)
    ground = UsdGeom.Mesh(stage.GetPrimAtPath("/root/ground"))
    pts = np.array(ground.GetPointsAttr().Get())
    assert np.all(pts[:, 2] == 0) and np.abs(pts[:, :2]).max() == 10.0  # normal to z, the up axis
    m = _world(stage, "/root/ground", 0)
    assert _apply(m, (3, 4, 0))[2] == pytest.approx(2.0)  # lifted onto the plane z = 2
    cube = stage.GetPrimAtPath("/root/crate/cube")
    assert cube.IsA(UsdGeom.Cube)
    box = UsdGeom.BBoxCache(2, ["default"]).ComputeWorldBound(cube).ComputeAlignedRange()
    np.testing.assert_allclose(np.array(box.GetMax()), (1, 1, 3), atol=1e-6)
    blink = UsdGeom.Imageable(stage.GetPrimAtPath("/root/blink"))
    assert [blink.ComputeVisibility(t) for t in (0, 1, 2)] == ["inherited", "invisible", "inherited"]


def test_in_memory_stage_and_bad_arguments(pxr):
    from pxr import Usd

    stage = Usd.Stage.CreateInMemory()
    r = render.UsdRenderer(stage, up_axis="X")
    r.begin_frame(0.0)
    r.render_sphere("s", (0, 0, 0), (0, 0, 0, 1), 1.0)
    r.end_frame()
    assert stage.GetPrimAtPath("/root/s") and r.save() is False  # nothing to write a memory stage to
    # an X-up scene sits on a Z-up stage, turned so that its x axis points up
    from pxr import UsdGeom

    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    m = _world(stage, "/root", 0)
    np.testing.assert_allclose(_apply(m, (1, 0, 0))[:3], (0, 0, 1), atol=1e-6)
    np.testing.assert_allclose(_apply(m, (0, 1, 0))[:3], (1, 0, 0), atol=1e-6)
    with pytest.raises(ValueError, match="up_axis"):
        render.UsdRenderer(Usd.Stage.CreateInMemory(), up_axis="W")
    with pytest.raises(TypeError, match="stage"):
        render.UsdRenderer(42)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        r.render_points("p", np.zeros((4, 2)), 0.1)
    with pytest.raises(ValueError, match="quaternion"):
        r.render_sphere("q", (0, 0, 0), (0, 0, 0, 0), 1.0)
    with pytest.raises(ValueError, match="one value per point"):
        r.render_points("p", np.zeros((4, 3)), [0.1, 0.2])


def test_missing_usd_core_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['pxr'] = None\n"
            "import treadle.render as r\n"
            "try:\n    r.UsdRenderer('x.usda')\nexcept ImportError as e:\n    print(e)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(wp.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert "usd-core" in out.stdout and "treadle[render]" in out.stdout, out.stdout + out.stderr


def test_two_coloured_plane_and_ground_are_checker_grids(pxr, tmp_path):
    from pxr import Usd, UsdGeom

    path = str(tmp_path / "checker.usda")
    r = render.UsdRenderer(path, up_axis="Z")
    r.begin_frame(0.0)
    r.render_plane("tiles", (0, 0, 0), (0, 0, 0, 1), 2.0, 1.0, color=(1, 0, 0), color2=(0, 0, 1),
                   u_scaling=2.5, v_scaling=1.0)
    r.render_plane("plain", (0, 0, 0), (0, 0, 0, 1), 1.0, 1.0, color=(0, 1, 0), color2=(0, 1, 0))
    r.render_ground(size=3.0)
    r.end_frame()
    r.save()
    stage = Usd.Stage.Open(path)

    def faces(prim_path):
        mesh = UsdGeom.Mesh(stage.GetPrimAtPath(prim_path))
        pts = np.array(mesh.GetPointsAttr().Get())
        idx = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 4)
        normals = np.cross(pts[idx[:, 1]] - pts[idx[:, 0]], pts[idx[:, 2]] - pts[idx[:, 0]])
        colours = np.array(mesh.GetDisplayColorAttr().Get(0))
        return pts, idx, normals / np.linalg.norm(normals, axis=1, keepdims=True), colours, mesh

    pts, idx, normals, colours, mesh = faces("/root/tiles")
    # 2.5 repeats over the width 4: cells 1.6 wide, the last one cut to 0.8; one repeat along the length
    np.testing.assert_allclose(np.unique(pts[:, 0]), [-2.0, -0.4, 1.2, 2.0], atol=1e-6)
    np.testing.assert_allclose(np.unique(pts[:, 2]), [-1.0, 1.0])
    assert len(idx) == 3 and mesh.GetDisplayColorPrimvar().GetInterpolation() == UsdGeom.Tokens.uniform
    np.testing.assert_allclose(colours, [[1, 0, 0], [0, 0, 1], [1, 0, 0]])
    np.testing.assert_allclose(normals, np.tile([0.0, 1.0, 0.0], (3, 1)), atol=1e-6)  # the plane's +Y side
    pts, idx, _, colours, _ = faces("/root/plain")
    assert len(idx) == 1 and len(colours) == 1  # one colour: a single quad
    pts, idx, normals, colours, _ = faces("/root/ground")
    assert len(idx) == 9 and np.all(pts[:, 2] == 0)  # 3 x 3 unit-scaled cells, normal to the up axis z
    np.testing.assert_allclose(normals, np.tile([0.0, 0.0, 1.0], (9, 1)), atol=1e-6)
    cells = np.rint((pts[idx].mean(axis=1)[:, :2] + 3.0) / 2.0 - 0.5).astype(int)
    parity = cells.sum(axis=1) % 2
    assert np.all(colours[parity == 0] == colours[0]) and np.all(colours[parity == 1] != colours[0])


def test_checker_edges_limits_and_bad_scaling():
    from treadle._src.render.common import MAX_CHECKER_CELLS, checker_edges

    np.testing.assert_allclose(checker_edges(0.0, 1.0, 1.0), [0.0, 1.0])
    np.testing.assert_allclose(checker_edges(-1.0, 1.0, 4.0), [-1.0, -0.5, 0.0, 0.5, 1.0])
    assert len(checker_edges(0.0, 1.0, 1e6)) == MAX_CHECKER_CELLS + 1
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="checker scaling"):
            checker_edges(0.0, 1.0, bad)
