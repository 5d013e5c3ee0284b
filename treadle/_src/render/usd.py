"""``UsdRenderer``: animated USD stages through Pixar's USD library (PyPI ``usd-core``).

Every shape is a prim under ``/root`` (an Xform carrying the scene ``scaling``); what changes per frame (positions,
transforms, radii, colours, visibility) is written as time samples at ``time * fps``, the frame's time code. Large
arrays go from NumPy to USD through ``Vt.*Array.FromNumpy`` (one copy, no Python loop), and values that stay the
same from frame to frame (a shared point radius, prototype indices) are written only when they change: USD holds
a sample's value until the next one, so the stage reads the same at every time code.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .common import (
    GROUND_COLORS,
    all_rows_equal,
    as_color,
    as_colors,
    as_points,
    as_quat,
    as_radii,
    as_triangles,
    as_vec,
    check_up_axis,
    checker_edges,
    ground_plane_transform,
    line_list_segments,
    line_strip_segments,
    segment_frames,
    shape_axis,
    to_numpy,
)
from .deps import usd_modules

_TEMPLATES = "_template_shapes"


class UsdRenderer:
    """Writes a scene, frame by frame, into a USD stage (open it in usdview, Omniverse, Blender, Houdini).

    Call :meth:`begin_frame` with the simulation time, then ``render_*`` methods (each names its prim, so calling
    it again in a later frame animates the same prim), then :meth:`end_frame`; :meth:`save` writes the file.

    Args:
        stage: A file path (a new stage is created there; ``.usda`` is text, ``.usd``/``.usdc`` binary) or an
            open ``pxr.Usd.Stage``.
        up_axis: The scene's up axis, ``"X"``, ``"Y"`` or ``"Z"`` (USD stages are Y- or Z-up: an X-up scene is
            written to a Z-up stage under a ``/root`` rotated to take the scene's x onto z).
        fps: Frames (time codes) per second: a frame at time ``t`` seconds is written at time code ``t * fps``.
        scaling: A uniform scale applied to the whole scene (on the ``/root`` prim).

    Raises:
        ImportError: ``usd-core`` is not installed (the message names the ``treadle[render]`` extra).
        ValueError: a bad ``up_axis``, a non-positive ``fps``.
    """

    def __init__(self, stage: Any, up_axis: str = "Y", fps: int = 60, scaling: float = 1.0) -> None:
        self._usd, self._geom, self._lux, self._gf, self._vt = usd_modules()
        Usd, UsdGeom = self._usd, self._geom
        self.up_axis = check_up_axis(up_axis)
        if not fps or fps <= 0:
            raise ValueError(f"fps must be positive, got {fps!r}")
        self.fps = fps
        self.scaling = float(scaling)
        self.time = 0.0
        self._frame_open = False
        if isinstance(stage, str):
            path = os.path.abspath(stage)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            from pxr import Sdf  # noqa: PLC0415 - the optional package, loaded by usd_modules above

            layer = Sdf.Layer.Find(path)
            if layer is not None:  # already open in this process (a second renderer on the same file)
                layer.Clear()
                self.stage = Usd.Stage.Open(layer)
            else:
                self.stage = Usd.Stage.CreateNew(path)
        elif isinstance(stage, Usd.Stage):
            self.stage = stage
        else:
            raise TypeError(f"stage must be a file path or a pxr.Usd.Stage, got {type(stage).__name__}")
        self.stage.SetStartTimeCode(0.0)
        self.stage.SetEndTimeCode(0.0)
        self.stage.SetFramesPerSecond(fps)
        self.stage.SetTimeCodesPerSecond(fps)
        # USD knows only Y and Z as up axes: an X-up scene goes onto a Z-up stage under a root turned by a third
        # of a turn about (1, 1, 1), which takes the scene's x to z (and y to x, z to y).
        UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.y if self.up_axis == "Y" else UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(self.stage, 1.0)
        self.root = UsdGeom.Xform.Define(self.stage, "/root")
        self.stage.SetDefaultPrim(self.root.GetPrim())
        if self.up_axis == "X":
            self.root.AddOrientOp().Set(self._gf.Quatf(0.5, -0.5, -0.5, -0.5))
        self.root.AddScaleOp().Set(self._gf.Vec3f(self.scaling), 0.0)
        self._add_lights()
        self._bodies: dict[str, str] = {}
        self._last: dict[tuple[str, str], Any] = {}  # values written once and held (see the module docstring)
        self._topology: set[str] = set()

    # ----------------------------------------------------------------------------------------------- frames
    def begin_frame(self, time: float) -> None:
        """Start the frame at ``time`` seconds: later ``render_*`` calls write at time code ``time * fps``."""
        self.time = round(float(time) * self.fps, 6)
        self._frame_open = True
        self.stage.SetEndTimeCode(max(self.stage.GetEndTimeCode(), self.time))

    def end_frame(self) -> None:
        """End the current frame."""
        self._frame_open = False

    def save(self) -> bool:
        """Write the stage to its file (a stage made in memory has none: export it with ``stage.Export``).

        Returns:
            True when the file was written.
        """
        layer = self.stage.GetRootLayer()
        if layer.anonymous:
            return False
        return bool(layer.Save())

    # ------------------------------------------------------------------------------------------ prim paths
    def register_body(self, body_name: str) -> str:
        """Create an Xform for a body under ``/root``; shapes given ``parent_body=body_name`` live inside it.

        Returns:
            The body's prim path.
        """
        path = f"/root/{body_name}"
        self._geom.Xform.Define(self.stage, path)
        self._bodies[body_name] = path
        return path

    def _path(self, name: str, parent_body: str | None = None, is_template: bool = False) -> str:
        if is_template:
            return f"/root/{_TEMPLATES}/{name}"
        if parent_body is None:
            return f"/root/{name}"
        if parent_body not in self._bodies:
            self.register_body(parent_body)
        return f"{self._bodies[parent_body]}/{name}"

    def _shape_prim(self, schema: Any, name: str, parent_body: str | None, is_template: bool) -> tuple[Any, str]:
        """Define the shape prim (inside a class Scope for templates); returns (schema object, returned path)."""
        path = self._path(name, parent_body, is_template)
        if is_template:
            # a class prim: not drawn itself, only through the instances that reference it
            self.stage.CreateClassPrim(path).SetTypeName("Scope")
            return schema.Define(self.stage, f"{path}/shape"), path
        return schema.Define(self.stage, path), path

    # ---------------------------------------------------------------------------------------- attributes
    def _set_xform(self, xformable: Any, pos: Any, rot: Any, scale: Any = (1.0, 1.0, 1.0),
                   time: float | None = None) -> None:
        Gf, UsdGeom = self._gf, self._geom
        t = self.time if time is None else time
        p = as_vec(pos, 3, "pos")
        q = as_quat(rot)
        s = as_vec(scale, 3, "scale")
        ops = {op.GetOpName(): op for op in xformable.GetOrderedXformOps()}
        if "xformOp:translate" not in ops:
            xformable.ClearXformOpOrder()
            ops = {"xformOp:translate": xformable.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble),
                   "xformOp:orient": xformable.AddOrientOp(UsdGeom.XformOp.PrecisionFloat),
                   "xformOp:scale": xformable.AddScaleOp(UsdGeom.XformOp.PrecisionFloat)}
        ops["xformOp:translate"].Set(Gf.Vec3d(*p), t)
        ops["xformOp:orient"].Set(Gf.Quatf(float(q[3]), float(q[0]), float(q[1]), float(q[2])), t)
        ops["xformOp:scale"].Set(Gf.Vec3f(*(float(c) for c in s)), t)

    def _set_visible(self, imageable: Any, visible: bool) -> None:
        tokens = self._geom.Tokens
        imageable.GetVisibilityAttr().Set(tokens.inherited if visible else tokens.invisible, self.time)

    def _set_color(self, gprim: Any, color: Any) -> None:
        c = as_color(color)
        if c is None:
            return
        pv = gprim.CreateDisplayColorPrimvar(self._geom.Tokens.constant)
        pv.Set(self._vt.Vec3fArray([self._gf.Vec3f(*c)]), self.time)

    def _set_colors(self, gprim: Any, colors: np.ndarray | None, count: int) -> None:
        """Per-vertex colours, or one constant colour when all rows are equal (or one was given)."""
        if colors is None:
            return
        UsdGeom, Vt = self._geom, self._vt
        pv = gprim.CreateDisplayColorPrimvar()
        if all_rows_equal(colors):
            pv.SetInterpolation(UsdGeom.Tokens.constant)
            pv.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(colors[:1], np.float32)), self.time)
        else:
            pv.SetInterpolation(UsdGeom.Tokens.vertex)
            pv.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(colors, np.float32)), self.time)

    def _held(self, path: str, attr: Any, key: str, value: Any, convert: Any) -> None:
        """Write ``value`` at this frame only when it differs from the last value written to ``attr``."""
        last = self._last.get((path, key))
        same = last is not None and type(last) is type(value) and (
            np.array_equal(last, value) if isinstance(value, np.ndarray) else last == value)
        if not same:
            attr.Set(convert(value), self.time)
            self._last[(path, key)] = value

    def _finish(self, prim_obj: Any, path: str, pos: Any, rot: Any, color: Any, visible: bool,
                scale: Any = (1.0, 1.0, 1.0)) -> str:
        self._set_xform(prim_obj, pos, rot, scale)
        self._set_color(prim_obj, color)
        self._set_visible(prim_obj, visible)
        return path

    # --------------------------------------------------------------------------------------------- shapes
    def render_sphere(self, name: str, pos: Any, rot: Any, radius: float, parent_body: str | None = None,
                      is_template: bool = False, color: Any = None, visible: bool = True) -> str:
        """A sphere of ``radius`` at ``pos`` (a ``UsdGeom.Sphere``); returns its prim path.

        A template's path is what :meth:`add_shape_instance` takes.
        """
        sphere, path = self._shape_prim(self._geom.Sphere, name, parent_body, is_template)
        sphere.GetRadiusAttr().Set(float(radius), self.time)
        return self._finish(sphere, path, pos, rot, color, visible)

    def render_box(self, name: str, pos: Any, rot: Any, extents: Any, parent_body: str | None = None,
                   is_template: bool = False, color: Any = None, visible: bool = True) -> str:
        """A box with half-extents ``extents`` (a unit ``UsdGeom.Cube`` of size 2, scaled). Returns its prim path."""
        cube, path = self._shape_prim(self._geom.Cube, name, parent_body, is_template)
        cube.GetSizeAttr().Set(2.0)
        return self._finish(cube, path, pos, rot, color, visible, scale=as_vec(extents, 3, "extents"))

    def _axial(self, schema: Any, name: str, pos: Any, rot: Any, radius: float, half_height: float,
               parent_body: str | None, is_template: bool, up_axis: int, color: Any, visible: bool) -> str:
        prim, path = self._shape_prim(schema, name, parent_body, is_template)
        prim.GetRadiusAttr().Set(float(radius), self.time)
        prim.GetHeightAttr().Set(2.0 * float(half_height), self.time)
        prim.GetAxisAttr().Set("XYZ"[shape_axis(up_axis)])
        return self._finish(prim, path, pos, rot, color, visible)

    def render_capsule(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                       parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                       color: Any = None, visible: bool = True) -> str:
        """A capsule: a cylinder of length ``2 half_height`` along ``up_axis`` capped by hemispheres of ``radius``."""
        return self._axial(self._geom.Capsule, name, pos, rot, radius, half_height, parent_body, is_template,
                           up_axis, color, visible)

    def render_cylinder(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                        parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                        color: Any = None, visible: bool = True) -> str:
        """A closed cylinder of length ``2 half_height`` along ``up_axis``."""
        return self._axial(self._geom.Cylinder, name, pos, rot, radius, half_height, parent_body, is_template,
                           up_axis, color, visible)

    def render_cone(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                    parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                    color: Any = None, visible: bool = True) -> str:
        """A cone along ``up_axis``: base disc of ``radius`` at ``-half_height``, apex at ``+half_height``."""
        return self._axial(self._geom.Cone, name, pos, rot, radius, half_height, parent_body, is_template,
                           up_axis, color, visible)

    def render_arrow(self, name: str, pos: Any, rot: Any, base_radius: float, base_height: float,
                     cap_radius: float | None = None, cap_height: float | None = None,
                     parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                     color: Any = None, visible: bool = True) -> str:
        """An arrow from ``pos`` along ``up_axis``: a shaft (cylinder) of ``base_height`` and a cone on top.

        ``cap_radius`` defaults to 1.8 ``base_radius``, ``cap_height`` to 0.18 ``base_height``. The prim is an Xform
        with ``base`` (cylinder) and ``cap`` (cone) children.
        """
        UsdGeom = self._geom
        path = self._path(name, parent_body, is_template)
        if is_template:
            self.stage.CreateClassPrim(path).SetTypeName("Scope")
            xform = UsdGeom.Xform.Define(self.stage, f"{path}/shape")
        else:
            xform = UsdGeom.Xform.Define(self.stage, path)
        axis = shape_axis(up_axis)
        cap_r = 1.8 * base_radius if cap_radius is None else float(cap_radius)
        cap_h = 0.18 * base_height if cap_height is None else float(cap_height)
        base_path = xform.GetPath().AppendChild("base")
        cap_path = xform.GetPath().AppendChild("cap")
        for child, schema, radius, height, centre in ((base_path, UsdGeom.Cylinder, base_radius, base_height,
                                                       0.5 * base_height),
                                                      (cap_path, UsdGeom.Cone, cap_r, cap_h,
                                                       base_height + 0.5 * cap_h)):
            prim = schema.Define(self.stage, child)
            prim.GetAxisAttr().Set("XYZ"[axis])
            prim.GetRadiusAttr().Set(float(radius), self.time)
            prim.GetHeightAttr().Set(float(height), self.time)
            offset = np.zeros(3)
            offset[axis] = centre
            self._set_xform(prim, offset, (0.0, 0.0, 0.0, 1.0))
            self._set_color(prim, color)
        self._set_xform(xform, pos, rot)
        self._set_visible(xform, visible)
        return path

    def render_plane(self, name: str, pos: Any, rot: Any, width: float, length: float,
                     color: Any = (1.0, 1.0, 1.0), color2: Any = None, parent_body: str | None = None,
                     is_template: bool = False, u_scaling: float = 1.0, v_scaling: float = 1.0,
                     visible: bool = True) -> str:
        """A double-sided quad spanning ``[-width, width] x [-length, length]`` in its local XZ plane (normal +Y).

        With a ``color2`` different from ``color`` the quad is a grid of checker cells, as the OpenGL renderer draws
        it: ``ceil(u_scaling)`` cells along the width and ``ceil(v_scaling)`` along the length (the last cell of a
        row is cut short for fractional scalings), coloured alternately with one display colour per face.
        """
        mesh, path = self._shape_prim(self._geom.Mesh, name, parent_body, is_template)
        w, h = float(width), float(length)
        c1, c2 = as_color(color), as_color(color2)
        if c2 is None or c1 is None or tuple(c1) == tuple(c2):
            self._write_quad(mesh, [(-w, 0.0, -h), (w, 0.0, -h), (w, 0.0, h), (-w, 0.0, h)], (0.0, 1.0, 0.0))
            return self._finish(mesh, path, pos, rot, color, visible)
        self._write_checker(mesh, w, h, float(u_scaling), float(v_scaling), c1, c2)
        self._set_xform(mesh, pos, rot)
        self._set_visible(mesh, visible)
        return path

    def _write_checker(self, mesh: Any, w: float, h: float, u_scaling: float, v_scaling: float,
                       c1: Any, c2: Any, axes: tuple[int, int, int] = (0, 2, 1)) -> None:
        """A ``[-w, w] x [-h, h]`` quad cut into checker cells with per-face display colours.

        ``axes`` names the coordinate axes of the quad's two sides and of its normal (default: the XZ plane,
        normal +Y); faces wind counter-clockwise seen along the normal.
        """
        Vt, UsdGeom = self._vt, self._geom
        au, av, an = axes
        us, vs = checker_edges(-w, w, u_scaling), checker_edges(-h, h, v_scaling)
        gu, gv = np.meshgrid(us, vs, indexing="xy")
        points = np.zeros((gu.size, 3), np.float32)
        points[:, au], points[:, av] = gu.ravel(), gv.ravel()
        nu, nv = len(us) - 1, len(vs) - 1
        i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="xy")
        v00 = (j * (nu + 1) + i).ravel()
        faces = np.stack([v00, v00 + 1, v00 + nu + 2, v00 + nu + 1], axis=1)  # counter-clockwise in (u, v)
        if np.cross(np.eye(3)[au], np.eye(3)[av])[an] < 0:
            faces = faces[:, ::-1]
        parity = ((i + j) % 2).ravel()
        colors = np.where(parity[:, None] == 0, np.asarray(c1, np.float32), np.asarray(c2, np.float32))
        normal = np.zeros(3, np.float32)
        normal[an] = 1.0
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(points))
        mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray.FromNumpy(np.full(len(faces), 4, np.int32)))
        mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray.FromNumpy(np.ascontiguousarray(faces, np.int32).ravel()))
        mesh.GetNormalsAttr().Set(Vt.Vec3fArray.FromNumpy(np.tile(normal, (len(points), 1))))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        mesh.GetDoubleSidedAttr().Set(True)
        mesh.GetSubdivisionSchemeAttr().Set(UsdGeom.Tokens.none)
        pv = mesh.CreateDisplayColorPrimvar(UsdGeom.Tokens.uniform)
        pv.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(colors, np.float32)), self.time)

    def _write_quad(self, mesh: Any, corners: list[tuple[float, ...]], normal: tuple[float, ...]) -> None:
        Gf, Vt, UsdGeom = self._gf, self._vt, self._geom
        mesh.GetPointsAttr().Set(Vt.Vec3fArray([Gf.Vec3f(*c) for c in corners]))
        mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray([4]))
        mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray([0, 3, 2, 1]))  # counter-clockwise seen along +normal
        mesh.GetNormalsAttr().Set(Vt.Vec3fArray([Gf.Vec3f(*normal)] * 4))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        mesh.GetDoubleSidedAttr().Set(True)
        mesh.GetSubdivisionSchemeAttr().Set(UsdGeom.Tokens.none)

    def render_ground(self, size: float = 100.0, plane: Any = None) -> str:
        """A checkered square ground of half-size ``size`` through the origin, normal to the up axis.

        Its cells and colours are the OpenGL renderer's (unit-scaled cells, at most ``MAX_CHECKER_CELLS`` per side),
        one display colour per face. With ``plane = (nx, ny, nz, d)`` it lies on the points with ``n . p = d``.
        Returns the prim path, ``/root/ground``.
        """
        axis = "XYZ".index(self.up_axis)
        mesh = self._geom.Mesh.Define(self.stage, "/root/ground")
        s = float(size)
        self._write_checker(mesh, s, s, s, s, GROUND_COLORS[0], GROUND_COLORS[1],
                            axes=((axis + 1) % 3, (axis + 2) % 3, axis))
        pos, rot = ground_plane_transform(plane, self.up_axis)
        self._set_xform(mesh, pos, rot)
        return "/root/ground"

    def render_ref(self, name: str, path: str, pos: Any, rot: Any, scale: Any, color: Any = None) -> str:
        """An Xform prim ``name`` that references the USD file at ``path`` (or a prim of this stage).

        The referenced file's default prim (a file written by this renderer: its ``/root``) appears under the new
        prim, transformed by ``pos``, ``rot`` and ``scale``.

        Returns:
            The new prim's path.
        """
        prim_path = self._path(name)
        xform = self._geom.Xform.Define(self.stage, prim_path)
        refs = xform.GetPrim().GetReferences()
        if (prim_path, "ref") not in self._last:
            if self._is_prim_path(str(path)) and not os.path.isfile(str(path)):
                refs.AddInternalReference(str(path))
            else:
                refs.AddReference(str(path))
            self._last[(prim_path, "ref")] = path
        self._set_xform(xform, pos, rot, scale)
        if color is not None:  # a constant primvar on an ancestor reaches every gprim under it
            pv = self._geom.PrimvarsAPI(xform.GetPrim()).CreatePrimvar(
                "displayColor", self._sdf_type("Color3fArray"), self._geom.Tokens.constant)
            rgb = as_color(color)
            assert rgb is not None
            pv.Set(self._vt.Vec3fArray([self._gf.Vec3f(*rgb)]), self.time)
        return prim_path

    def _is_prim_path(self, path: str) -> bool:
        from pxr import Sdf  # noqa: PLC0415 - the optional package, loaded by usd_modules in __init__

        return Sdf.Path.IsValidPathString(path) and bool(self.stage.GetPrimAtPath(path))

    def _sdf_type(self, name: str) -> Any:
        from pxr import Sdf  # noqa: PLC0415 - the optional package, loaded by usd_modules in __init__

        return getattr(Sdf.ValueTypeNames, name)

    # ------------------------------------------------------------------------------------- instancing
    def add_shape_instance(self, name: str, shape: str, body: str | None, pos: Any, rot: Any,
                           scale: Any = (1.0, 1.0, 1.0), color1: Any = None, color2: Any = None,
                           custom_index: int = -1, visible: bool = True) -> str:
        """An instance of the template ``shape``, with its own transform and optional colour.

        ``shape`` is the path a ``render_*(..., is_template=True)`` call returned; the instance lives inside
        ``body`` (or ``/root`` when ``None``).

        Returns:
            The instance's prim path.

        Raises:
            ValueError: ``shape`` is not a template prim of this stage.
        """
        if not isinstance(shape, str) or not self.stage.GetPrimAtPath(shape):
            raise ValueError(f"shape must be the prim path of a template (render_*(..., is_template=True)), "
                             f"got {shape!r}")
        path = self._path(name, body)
        xform = self._geom.Xform.Define(self.stage, path)
        prim = xform.GetPrim()
        if (path, "ref") not in self._last:
            prim.GetReferences().AddInternalReference(shape)
            self._last[(path, "ref")] = shape
            prim.SetInstanceable(color1 is None)  # a colour override needs the shape's own prims
        self._set_xform(xform, pos, rot, scale)
        if color1 is not None:
            gprim = self._geom.Gprim(self.stage.GetPrimAtPath(f"{path}/shape"))
            if gprim:
                self._set_color(gprim, color1)
        self._set_visible(xform, visible)
        return path

    # --------------------------------------------------------------------------------------- big arrays
    def render_points(self, name: str, points: Any, radius: Any, colors: Any = None, as_spheres: bool = True,
                      visible: bool = True) -> str:
        """Points as instanced spheres (a ``UsdGeom.PointInstancer``) or as a ``UsdGeom.Points`` cloud.

        Args:
            name: The prim name.
            points: ``(n, 3)`` positions (a Treadle array of ``wp.vec3``, NumPy, or a list of triples).
            radius: One radius, or one per point.
            colors: One ``(r, g, b)`` colour, or one per point (``None``: no display colour).
            as_spheres: Spheres through a point instancer; ``False`` writes a Points prim with ``widths`` = 2 radius.
            visible: Whether the points are visible at this frame.

        Returns:
            The prim path.
        """
        UsdGeom, Vt = self._geom, self._vt
        pts = as_points(points)
        n = len(pts)
        radii = np.asarray(to_numpy(radius)).reshape(-1)
        one_radius = radii.size == 1
        radii_arr = as_radii(radius, n) if not one_radius else radii
        cols = as_colors(colors, n)
        path = self._path(name)
        if as_spheres:
            inst = UsdGeom.PointInstancer.Define(self.stage, path)
            if (path, "proto") not in self._last:
                UsdGeom.Sphere.Define(self.stage, f"{path}/sphere").GetRadiusAttr().Set(1.0)
                inst.CreatePrototypesRel().SetTargets([f"{path}/sphere"])
                self._last[(path, "proto")] = True
            inst.GetPositionsAttr().Set(Vt.Vec3fArray.FromNumpy(pts), self.time)
            self._held(path, inst.GetProtoIndicesAttr(), "count", n,
                       lambda k: Vt.IntArray.FromNumpy(np.zeros(k, np.int32)))
            if one_radius:
                self._held(path, inst.GetScalesAttr(), "scales", (n, float(radii[0])),
                           lambda key: Vt.Vec3fArray.FromNumpy(np.full((key[0], 3), key[1], np.float32)))
            else:
                self._last.pop((path, "scales"), None)
                inst.GetScalesAttr().Set(Vt.Vec3fArray.FromNumpy(np.repeat(radii_arr[:, None], 3, 1)), self.time)
            prim = inst
        else:
            cloud = UsdGeom.Points.Define(self.stage, path)
            cloud.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(pts), self.time)
            if one_radius:
                cloud.SetWidthsInterpolation(UsdGeom.Tokens.constant)
                self._held(path, cloud.GetWidthsAttr(), "widths", float(radii[0]),
                           lambda r: Vt.FloatArray([2.0 * r]))
            else:
                cloud.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
                cloud.GetWidthsAttr().Set(Vt.FloatArray.FromNumpy(2.0 * radii_arr), self.time)
            prim = cloud
        if cols is not None:
            if as_spheres:
                self._instancer_colors(prim, cols, n)
            else:
                self._set_colors(prim, cols, n)
        self._set_visible(prim, visible)
        return path

    def _instancer_colors(self, inst: Any, cols: np.ndarray, n: int) -> None:
        # A point instancer's colours are a primvar per instance (vertex interpolation = one per point).
        UsdGeom, Vt = self._geom, self._vt
        pv = UsdGeom.PrimvarsAPI(inst.GetPrim()).CreatePrimvar("displayColor", self._sdf_type("Color3fArray"))
        if all_rows_equal(cols):
            pv.SetInterpolation(UsdGeom.Tokens.constant)
            pv.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(cols[:1])), self.time)
        else:
            pv.SetInterpolation(UsdGeom.Tokens.vertex)
            pv.Set(Vt.Vec3fArray.FromNumpy(cols), self.time)

    def render_mesh(self, name: str, points: Any, indices: Any, colors: Any = None, pos: Any = (0.0, 0.0, 0.0),
                    rot: Any = (0.0, 0.0, 0.0, 1.0), scale: Any = (1.0, 1.0, 1.0), update_topology: bool = False,
                    parent_body: str | None = None, is_template: bool = False, smooth_shading: bool = True,
                    visible: bool = True) -> str:
        """A triangle mesh (``UsdGeom.Mesh``).

        Its points are written every frame, its triangles on the first call and when ``update_topology`` is set.

        Args:
            name: The prim name.
            points: ``(n, 3)`` vertex positions.
            indices: Triangle vertex indices, flat or ``(m, 3)``.
            colors: One colour, or one per vertex.
            pos: Translation.
            rot: Rotation quaternion ``(x, y, z, w)``.
            scale: Per-axis scale.
            update_topology: Rewrite the triangles of an existing mesh.
            parent_body: The body the mesh is attached to.
            is_template: Define it as a template for :meth:`add_shape_instance`.
            smooth_shading: Vertex normals averaged over the triangles; ``False`` gives each triangle its own.
            visible: Whether the mesh is visible at this frame.

        Returns:
            The prim path.

        Raises:
            ValueError: indices not in whole triangles or out of range.
        """
        UsdGeom, Vt = self._geom, self._vt
        pts = as_points(points)
        mesh, path = self._shape_prim(UsdGeom.Mesh, name, parent_body, is_template)
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(pts), self.time)
        if update_topology or path not in self._topology:
            tris = as_triangles(indices, len(pts))
            mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray.FromNumpy(np.full(len(tris) // 3, 3, np.int32)),
                                               self.time)
            mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray.FromNumpy(tris), self.time)
            mesh.GetSubdivisionSchemeAttr().Set(UsdGeom.Tokens.none)
            mesh.GetDoubleSidedAttr().Set(True)
            self._topology.add(path)
            self._last[(path, "tris")] = tris
        if smooth_shading:
            from .utils import vertex_normals  # noqa: PLC0415 - sibling module, only needed here

            normals = vertex_normals(pts, self._last[(path, "tris")]).astype(np.float32)
            mesh.GetNormalsAttr().Set(Vt.Vec3fArray.FromNumpy(normals), self.time)
            mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        else:
            # no normals at this time: with subdivision off, USD renderers shade each triangle flat (an empty array
            # ends the smooth normals of earlier frames without erasing them)
            if mesh.GetNormalsAttr().HasAuthoredValue():
                mesh.GetNormalsAttr().Set(Vt.Vec3fArray(), self.time)
        self._set_xform(mesh, pos, rot, scale)
        self._set_colors(mesh, as_colors(colors, len(pts)), len(pts))
        self._set_visible(mesh, visible)
        return path

    def _render_segments(self, name: str, starts: np.ndarray, ends: np.ndarray, color: Any, radius: float,
                         visible: bool) -> str:
        # Lines become a point instancer of one unit-length cylinder (along Z) per segment, scaled to its length.
        UsdGeom, Vt = self._geom, self._vt
        path = self._path(name)
        inst = UsdGeom.PointInstancer.Define(self.stage, path)
        proto = UsdGeom.Cylinder.Define(self.stage, f"{path}/segment")
        if (path, "proto") not in self._last:
            proto.GetAxisAttr().Set(UsdGeom.Tokens.z)
            proto.GetHeightAttr().Set(1.0)
            inst.CreatePrototypesRel().SetTargets([f"{path}/segment"])
            self._last[(path, "proto")] = True
        self._held(path, proto.GetRadiusAttr(), "radius", float(radius), float)
        mid, quat, length = segment_frames(starts, ends)
        n = len(mid)
        inst.GetPositionsAttr().Set(Vt.Vec3fArray.FromNumpy(mid), self.time)
        inst.GetOrientationsAttr().Set(Vt.QuathArray.FromNumpy(quat.astype(np.float16)), self.time)
        scales = np.ones((n, 3), np.float32)
        scales[:, 2] = length
        inst.GetScalesAttr().Set(Vt.Vec3fArray.FromNumpy(scales), self.time)
        self._held(path, inst.GetProtoIndicesAttr(), "count", n,
                   lambda k: Vt.IntArray.FromNumpy(np.zeros(k, np.int32)))
        self._set_color(proto, color)
        self._set_visible(inst, visible)
        return path

    def render_line_list(self, name: str, vertices: Any, indices: Any, color: Any = None, radius: float = 0.01,
                         visible: bool = True) -> str:
        """Segments ``vertices[indices[2 k]] -> vertices[indices[2 k + 1]]`` as tubes of ``radius``."""
        starts, ends = line_list_segments(vertices, indices)
        return self._render_segments(name, starts, ends, color, radius, visible)

    def render_line_strip(self, name: str, vertices: Any, color: Any = None, radius: float = 0.01,
                          visible: bool = True) -> str:
        """A polyline through ``vertices``, as tubes of ``radius``."""
        starts, ends = line_strip_segments(vertices)
        return self._render_segments(name, starts, ends, color, radius, visible)

    # ------------------------------------------------------------------------------------------ lights
    def _add_lights(self) -> None:
        # A soft dome and a sun from above and to the side, so a stage opened in a viewer is lit.
        UsdLux, Gf = self._lux, self._gf
        dome = UsdLux.DomeLight.Define(self.stage, "/dome_light")
        dome.CreateIntensityAttr().Set(600.0)
        dome.AddRotateXYZOp().Set(Gf.Vec3f(-90.0 if self.up_axis == "Z" else 0.0, 0.0, 0.0))
        sun = UsdLux.DistantLight.Define(self.stage, "/distant_light")
        sun.CreateIntensityAttr().Set(2500.0)
        sun.CreateAngleAttr().Set(1.0)
        sun.AddRotateXYZOp().Set(Gf.Vec3f(-50.0, 35.0, 0.0) if self.up_axis != "Z" else Gf.Vec3f(40.0, 0.0, 35.0))
