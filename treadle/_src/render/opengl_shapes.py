"""The ``render_*`` and instancing methods of the OpenGL renderer.

This is the part of its API shared with ``UsdRenderer``, built on :class:`~treadle._src.render.gl_scene.Scene`.

Each ``render_*`` call registers the shape's geometry once per distinct size (a hash of the shape's parameters),
then creates or updates the named instance: calling it again with the same ``name`` moves, recolours or resizes
that instance, and it stays in the scene until removed, as in the reference renderer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import meshes
from .common import (
    GROUND_COLORS,
    as_color,
    as_colors,
    as_points,
    as_quat,
    as_radii,
    as_triangles,
    as_vec,
    ground_plane_transform,
    line_list_segments,
    line_strip_segments,
    quat_multiply,
    rotation_between,
    segment_frames,
    shape_axis,
    to_numpy,
)
from .gl_scene import Scene
from .utils import tab10_color_map

Color = tuple[float, float, float]


class OpenGLShapes:
    """Shape, mesh, point and line methods; the renderer supplies ``scene``, ``up_axis`` and ``default_num_segments``."""

    scene: Scene
    up_axis: str
    default_num_segments: int = 32

    def _switch_context(self) -> None:  # the renderer makes its context current
        raise NotImplementedError

    def _init_shapes(self, scene: Scene) -> None:
        self.scene = scene
        self._meshes: dict[str, tuple[np.ndarray, bool, int]] = {}  # name -> (triangles, smooth, point count)
        self._segment_colors: dict[str, Color] = {}

    # ----------------------------------------------------------------------------------------- plumbing
    def _default_color(self) -> Color:
        return tab10_color_map(len(self.scene.instances) + len(self.scene.clouds) + len(self.scene.segments))

    def register_shape(self, geo_hash: Any, vertices: Any, indices: Any, color1: Any = None,
                       color2: Any = None) -> int:
        """Upload a mesh as a shape that instances can share.

        Args:
            geo_hash: A hashable key; registering the same key again returns the existing shape.
            vertices: ``(n, 8)`` rows of position, normal and texture coordinate.
            indices: Triangle vertex indices.
            color1: The shape's default colour.
            color2: The second colour of its checker pattern (defaults to ``color1``: a plain colour).

        Returns:
            The shape id.
        """
        self._switch_context()
        c1 = as_color(color1, self._default_color(), "color1")
        assert c1 is not None
        verts = to_numpy(vertices)
        if verts.ndim != 2 or verts.shape[1] != 8:
            raise ValueError(f"vertices must be (n, 8) rows (position, normal, uv), got shape {verts.shape}")
        return self.scene.register_shape(geo_hash, verts, to_numpy(indices, np.uint32), c1,
                                         as_color(color2, None, "color2"))

    def deregister_shape(self, shape: int) -> None:
        """Remove a shape, its buffers and all its instances."""
        self._switch_context()
        self.scene.deregister_shape(shape)

    def update_shape_vertices(self, shape: int, points: Any) -> None:
        """Move the vertices of ``shape`` (``(n, 3)`` positions, or full ``(n, 8)`` rows)."""
        self._switch_context()
        self.scene.update_shape_vertices(shape, to_numpy(points))

    def register_body(self, name: str) -> int:
        """Register a body; instances created with ``body=name`` (or ``parent_body``) move with its transform.

        Returns:
            The body id (its row in :meth:`update_body_transforms`' array).
        """
        return self.scene.register_body(name)

    def update_body_transforms(self, body_tf: Any) -> None:
        """Set every body's transform from an array of ``wp.transform`` (position, quaternion ``(x, y, z, w)``).

        ``None`` removes them (instances then use their own transforms only).
        """
        self.scene.set_body_transforms(None if body_tf is None else to_numpy(body_tf, np.float64))

    def add_shape_instance(self, name: str, shape: int, body: Any, pos: Any, rot: Any,
                           scale: Any = (1.0, 1.0, 1.0), color1: Any = None, color2: Any = None,
                           custom_index: int = -1, visible: bool = True) -> int:
        """Add an instance of a registered shape.

        Args:
            name: A unique instance name.
            shape: A shape id (from :meth:`register_shape` or a ``render_*(..., is_template=True)`` call).
            body: A body name or id, or ``None``.
            pos: Position ``(x, y, z)``.
            rot: Quaternion ``(x, y, z, w)``.
            scale: Per-axis scale.
            color1: Colour (defaults to the shape's).
            color2: Second checker colour (defaults to ``color1``).
            custom_index: An instance id of your choosing (when free), instead of the next one.
            visible: Whether it is drawn.

        Returns:
            The instance id (what :meth:`setup_tiled_rendering` takes).
        """
        return self.scene.add_instance(name, int(shape), body, as_vec(pos, 3, "pos"), as_quat(rot),
                                       as_vec(scale, 3, "scale"), as_color(color1, None, "color1"),
                                       as_color(color2, None, "color2"), custom_index, visible)

    def update_shape_instance(self, name: str, pos: Any = None, rot: Any = None, color1: Any = None,
                              color2: Any = None, scale: Any = None, visible: Any = None) -> int:
        """Change an instance's transform, colours or visibility (``None`` keeps a value)."""
        return self.scene.update_instance(
            name, None, None if pos is None else as_vec(pos, 3, "pos"), None if rot is None else as_quat(rot),
            None if scale is None else as_vec(scale, 3, "scale"), as_color(color1, None, "color1"),
            as_color(color2, None, "color2"), visible)

    def remove_shape_instance(self, name: str) -> None:
        """Remove the instance called ``name``."""
        self.scene.remove_instance(name)

    def allocate_shape_instances(self) -> None:
        """Rebuild every shape's instance buffer before the next draw (they are rebuilt on change anyway)."""
        self.scene.mark_all_dirty()

    update_shape_instances = allocate_shape_instances
    update_instance_colors = allocate_shape_instances

    def _place(self, name: str, shape: int, parent_body: Any, pos: Any, rot: Any, scale: Any, color: Any,
               visible: bool, color2: Any = None) -> int:
        """Create the instance ``name`` of ``shape`` or update it (switching its shape if the size changed)."""
        c1 = as_color(color, None)
        c2 = as_color(color2, None, "color2")
        if name in self.scene.instance_by_name:
            iid = self.scene.instance_by_name[name]
            self.scene.update_instance(name, shape, as_vec(pos, 3, "pos"), as_quat(rot), as_vec(scale, 3, "scale"),
                                       c1, c2 if c2 is not None else c1, visible)
            if parent_body is not None:
                self.scene.instances[iid].body = self.scene.body_id(parent_body)
            return iid
        return self.scene.add_instance(name, shape, parent_body, as_vec(pos, 3, "pos"), as_quat(rot),
                                       as_vec(scale, 3, "scale"), c1, c2, -1, visible)

    def _shape(self, geo_hash: tuple[Any, ...], build: Any, color: Any, color2: Any = None) -> int:
        sid = self.scene.shape_by_hash.get(geo_hash)
        if sid is None:
            self._switch_context()
            v, i = build()
            c1 = as_color(color, self._default_color())
            assert c1 is not None
            sid = self.scene.register_shape(geo_hash, v, i, c1, as_color(color2, None, "color2"))
        return sid

    def _primitive(self, kind: str, name: str, pos: Any, rot: Any, params: tuple[Any, ...], build: Any,
                   parent_body: Any, is_template: bool, color: Any, visible: bool) -> int:
        key = (kind, *params) if not is_template else (kind, *params, "template", name)
        sid = self._shape(key, build, color)
        if not is_template:
            self._switch_context()
            self._place(name, sid, parent_body, pos, rot, (1.0, 1.0, 1.0), color, visible)
        return sid

    # -------------------------------------------------------------------------------------- primitives
    def render_sphere(self, name: str, pos: Any, rot: Any, radius: float, parent_body: Any = None,
                      is_template: bool = False, color: Any = None, visible: bool = True) -> int:
        """A sphere of ``radius`` at ``pos``. Returns the shape id (for :meth:`add_shape_instance`)."""
        r, n = float(radius), self.default_num_segments
        return self._primitive("sphere", name, pos, rot, (r,), lambda: meshes.sphere(r, n), parent_body,
                               is_template, color, visible)

    def render_box(self, name: str, pos: Any, rot: Any, extents: Any, parent_body: Any = None,
                   is_template: bool = False, color: Any = None, visible: bool = True) -> int:
        """A box with half-extents ``extents``. Returns the shape id."""
        e = tuple(float(c) for c in as_vec(extents, 3, "extents"))
        return self._primitive("box", name, pos, rot, e, lambda: meshes.box(e), parent_body, is_template, color,
                               visible)

    def render_capsule(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                       parent_body: Any = None, is_template: bool = False, up_axis: int = 1, color: Any = None,
                       visible: bool = True) -> int:
        """A capsule along ``up_axis`` (cylinder of length ``2 half_height`` plus hemispheres); returns its shape."""
        r, h, a, n = float(radius), float(half_height), shape_axis(up_axis), self.default_num_segments
        return self._primitive("capsule", name, pos, rot, (r, h, a), lambda: meshes.capsule(r, h, a, n),
                               parent_body, is_template, color, visible)

    def render_cylinder(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                        parent_body: Any = None, is_template: bool = False, up_axis: int = 1, color: Any = None,
                        visible: bool = True) -> int:
        """A closed cylinder of length ``2 half_height`` along ``up_axis``. Returns the shape id."""
        r, h, a, n = float(radius), float(half_height), shape_axis(up_axis), self.default_num_segments
        return self._primitive("cylinder", name, pos, rot, (r, h, a), lambda: meshes.cylinder(r, h, a, n),
                               parent_body, is_template, color, visible)

    def render_cone(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                    parent_body: Any = None, is_template: bool = False, up_axis: int = 1, color: Any = None,
                    visible: bool = True) -> int:
        """A cone along ``up_axis`` (base at ``-half_height``, apex at ``+half_height``). Returns the shape id."""
        r, h, a, n = float(radius), float(half_height), shape_axis(up_axis), self.default_num_segments
        return self._primitive("cone", name, pos, rot, (r, h, a), lambda: meshes.cone(r, h, a, n), parent_body,
                               is_template, color, visible)

    def render_arrow(self, name: str, pos: Any, rot: Any, base_radius: float, base_height: float,
                     cap_radius: float | None = None, cap_height: float | None = None, parent_body: Any = None,
                     is_template: bool = False, up_axis: int = 1, color: Any = None, visible: bool = True) -> int:
        """An arrow from ``pos`` along ``up_axis``: a shaft of ``base_height`` and a cone; returns the shape id.

        ``cap_radius`` defaults to 1.8 ``base_radius``, ``cap_height`` to 0.18 ``base_height``.
        """
        a, n = shape_axis(up_axis), self.default_num_segments
        params = (float(base_radius), float(base_height), cap_radius, cap_height, a)
        return self._primitive("arrow", name, pos, rot, params,
                               lambda: meshes.arrow(base_radius, base_height, cap_radius, cap_height, a, n),
                               parent_body, is_template, color, visible)

    def render_plane(self, name: str, pos: Any, rot: Any, width: float, length: float, color: Any = (1.0, 1.0, 1.0),
                     color2: Any = None, parent_body: Any = None, is_template: bool = False, u_scaling: float = 1.0,
                     v_scaling: float = 1.0, visible: bool = True) -> int:
        """A two-sided quad over ``[-width, width] x [-length, length]`` in its local XZ plane; returns its shape.

        It shows a checker of ``color`` and ``color2`` with ``u_scaling`` x ``v_scaling`` cells.
        """
        params = (float(width), float(length), float(u_scaling), float(v_scaling))
        key = ("plane", *params) if not is_template else ("plane", *params, "template", name)
        sid = self._shape(key, lambda: meshes.plane(*params), color, color2)
        if not is_template:
            self._switch_context()
            self._place(name, sid, parent_body, pos, rot, (1.0, 1.0, 1.0), color, visible,
                        color2 if color2 is not None else color)
        return sid

    def render_ground(self, size: float = 1000.0, plane: Any = None) -> int:
        """A checkered ground of half-size ``size`` normal to the up axis; returns its shape id.

        With ``plane = (nx, ny, nz, d)`` it lies on the points with ``n . p = d`` instead.
        """
        up = np.zeros(3)
        up[shape_axis(self.up_axis)] = 1.0
        pos, tilt = ground_plane_transform(plane, self.up_axis)
        rot = quat_multiply(tilt, rotation_between(np.array([0.0, 1.0, 0.0]), up))  # the mesh lies in XZ
        s = float(size)
        return self.render_plane("ground", pos, rot, s, s, GROUND_COLORS[0], GROUND_COLORS[1],
                                 u_scaling=s, v_scaling=s)

    def render_ref(self, name: str, path: str, pos: Any, rot: Any, scale: Any, color: Any = None) -> int:
        """An instance of the meshes in the USD file at ``path`` (read once with ``usd-core``, then shared).

        Returns:
            The shape id.

        Raises:
            ImportError: ``usd-core`` is not installed.
            ValueError: the file holds no mesh.
        """
        key = ("ref", str(path))
        sid = self._shape(key, lambda: _usd_file_mesh(path), color)
        self._switch_context()
        self._place(name, sid, None, pos, rot, scale, color, True)
        return sid

    # --------------------------------------------------------------------------------------------- meshes
    def render_mesh(self, name: str, points: Any, indices: Any, colors: Any = None, pos: Any = (0.0, 0.0, 0.0),
                    rot: Any = (0.0, 0.0, 0.0, 1.0), scale: Any = (1.0, 1.0, 1.0), update_topology: bool = False,
                    parent_body: Any = None, is_template: bool = False, smooth_shading: bool = True,
                    visible: bool = True) -> int:
        """Create or update the triangle mesh ``name``.

        Its points are set on every call, its triangles on the first call and when ``update_topology`` is set
        (otherwise ``indices`` is ignored for an existing mesh).

        Args:
            name: The mesh's name.
            points: ``(n, 3)`` vertex positions.
            indices: Triangle vertex indices, flat or ``(m, 3)``.
            colors: One colour, or one per vertex.
            pos: Translation.
            rot: Quaternion ``(x, y, z, w)``.
            scale: Per-axis scale.
            update_topology: Replace the triangles of an existing mesh.
            parent_body: A body the mesh moves with.
            is_template: Register the geometry only (no instance).
            smooth_shading: Average normals at shared vertices; ``False`` gives each triangle its own vertices
                and face normal.
            visible: Whether the mesh is drawn.

        Returns:
            The shape id.

        Raises:
            ValueError: indices not in whole triangles, or outside ``[0, len(points))``.
        """
        self._switch_context()
        pts = as_points(points)
        sid = self.scene.shape_by_hash.get(("mesh", name))
        state = self._meshes.get(name)
        if sid is None or state is None or update_topology or state[1] != bool(smooth_shading):
            tris = as_triangles(indices, len(pts))
            v, i = meshes.from_triangles(pts, tris, smooth_shading)
            new_sid = self.scene.register_shape(None, v, i, self._default_color(), None)
            if sid is not None:  # move the instance over, then drop the old geometry
                if name in self.scene.instance_by_name:
                    self.scene.update_instance(name, new_sid)
                self.scene.deregister_shape(sid)
            sid = new_sid
            self.scene.shapes[sid].geo_hash = ("mesh", name)
            self.scene.shape_by_hash[("mesh", name)] = sid
            self._meshes[name] = (tris, bool(smooth_shading), len(pts))
        else:
            tris, _, count = state
            if len(pts) != count:
                raise ValueError(f"mesh {name!r} has {count} points, got {len(pts)}; pass update_topology=True to "
                                 f"change its topology")
            self.scene.update_shape_vertices(sid, meshes.from_triangles(pts, tris, smooth_shading)[0])
        one = _is_one_color(colors, len(pts))
        if colors is not None and not one:
            cols = as_colors(colors, len(pts))
            assert cols is not None
            self.scene.set_vertex_colors(sid, cols if smooth_shading else cols[tris.reshape(-1)])
        elif one and self.scene.shape(sid).has_vertex_colors:
            self.scene.set_vertex_colors(sid, None)  # one colour now: the instance colour takes over
        if not is_template:
            self._place(name, sid, parent_body, pos, rot, scale, as_color(colors) if one else None, visible)
        return sid

    def render_points(self, name: str, points: Any, radius: Any, colors: Any = None, as_spheres: bool = True,
                      visible: bool = True) -> int:
        """Points as shaded spheres (or, with ``as_spheres=False``, flat discs) of ``radius`` (one, or per point).

        The spheres are ray-cast per pixel from one screen-facing quad each, so their outlines and depths are
        exact and a million points draw quickly even with a software OpenGL.

        Returns:
            The instance id of the point cloud (one id for the whole cloud, for tiled rendering).
        """
        self._switch_context()
        pts = as_points(points)
        radii = as_radii(radius, len(pts))
        cols = as_colors(colors, len(pts))
        if name in self.scene.clouds:
            default = self.scene.clouds[name].color or self._default_color()
        else:
            default = self._default_color()
        return self.scene.set_points(name, pts, radii, cols, default, as_spheres, visible)

    def _render_segments(self, name: str, starts: np.ndarray, ends: np.ndarray, color: Any, radius: float,
                         visible: bool) -> int:
        self._switch_context()
        mid, quat, length = segment_frames(starts, ends)
        c = as_color(color, None) or self._segment_colors.get(name) or self._default_color()
        self._segment_colors[name] = c
        return self.scene.set_segments(name, mid, quat, length, float(radius), c, visible)

    def render_line_list(self, name: str, vertices: Any, indices: Any, color: Any = None, radius: float = 0.01,
                         visible: bool = True) -> int:
        """Segments ``vertices[indices[2 k]] -> vertices[indices[2 k + 1]]`` as tubes; returns the instance id."""
        starts, ends = line_list_segments(vertices, indices)
        return self._render_segments(name, starts, ends, color, radius, visible)

    def render_line_strip(self, name: str, vertices: Any, color: Any = None, radius: float = 0.01,
                          visible: bool = True) -> int:
        """A polyline through ``vertices`` as tubes of ``radius``. Returns the batch's instance id."""
        starts, ends = line_strip_segments(vertices)
        return self._render_segments(name, starts, ends, color, radius, visible)


def _is_one_color(colors: Any, count: int) -> bool:
    """Whether ``colors`` is a single ``(r, g, b)`` colour rather than one per vertex."""
    if colors is None:
        return False
    arr = to_numpy(colors)
    return arr.ndim == 1 and arr.size in (3, 4) and (count != arr.size // 3 or arr.size == 3)


def _usd_file_mesh(path: str) -> meshes.Mesh:
    """All meshes of a USD file, triangulated (fans), in the file's world frame, merged into one."""
    from .deps import usd_modules  # noqa: PLC0415 - optional package, needed only for references

    Usd, UsdGeom, _, _, _ = usd_modules()
    stage = Usd.Stage.Open(str(path))
    if stage is None:
        raise ValueError(f"could not open the USD file {path!r}")
    parts = []
    cache = UsdGeom.XformCache()
    for prim in stage.Traverse():
        if not prim.IsA(UsdGeom.Mesh):
            continue
        mesh = UsdGeom.Mesh(prim)
        pts = np.asarray(mesh.GetPointsAttr().Get(), np.float64).reshape(-1, 3)
        counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get(), np.int64)
        idx = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(), np.int64)
        m = np.asarray(cache.GetLocalToWorldTransform(prim), np.float64)  # row-vector convention: p @ m
        pts = pts @ m[:3, :3] + m[3, :3]
        tris, start = [], 0
        for c in counts:
            face = idx[start:start + c]
            tris += [(face[0], face[k], face[k + 1]) for k in range(1, c - 1)]
            start += c
        if tris:
            parts.append(meshes.from_triangles(pts, np.asarray(tris), smooth=False))
    if not parts:
        raise ValueError(f"the USD file {path!r} holds no mesh")
    return meshes.merge(*parts)
