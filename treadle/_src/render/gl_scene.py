"""What the OpenGL renderer draws.

Registered shapes (GPU meshes), their instances, bodies, point clouds and line batches, with the buffers that hold
them.

Every drawable thing has an instance id, handed out in creation order and shared by named instances, point clouds
and line batches, so that tiled rendering can pick, per tile, which of them to draw. Instance data (a 4x4 model
matrix in column order and two colours, 22 floats) is packed per shape into one buffer and redrawn with a single
instanced call; it is rebuilt only when something about the shape's instances changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .common import all_rows_equal, quats_to_matrices, trs_matrix
from .gl_backend import GL

_INSTANCE_FLOATS = 22
_VERTEX_FLOATS = 8


@dataclass
class Shape:
    """Geometry registered with :meth:`Scene.register_shape`."""

    geo_hash: Any
    vao: int
    vbo: int
    ebo: int
    instance_vbo: int
    index_count: int
    vertex_count: int
    color1: tuple[float, float, float]
    color2: tuple[float, float, float]
    vertices: np.ndarray
    vcolor_vbo: int = 0
    has_vertex_colors: bool = False
    instances: list[int] = field(default_factory=list)
    packed: np.ndarray | None = None  # instance rows, rebuilt when dirty
    packed_ids: np.ndarray | None = None
    uploaded: Any = None  # which subset of rows the instance buffer holds now
    dirty: bool = True


@dataclass
class Instance:
    name: str
    shape: int
    body: int | None
    pos: np.ndarray
    rot: np.ndarray
    scale: np.ndarray
    color1: tuple[float, float, float]
    color2: tuple[float, float, float]
    custom_index: int
    visible: bool


@dataclass
class PointCloud:
    """Points drawn as ray-cast spheres (or flat discs)."""

    instance_id: int
    vao: int
    vbos: tuple[int, int, int]
    count: int = 0
    radius: float | None = None  # one radius for all points (attribute 1 constant), else per point
    color: tuple[float, float, float] | None = None  # one colour (attribute 2 constant), else per point
    as_spheres: bool = True
    visible: bool = True
    lo: np.ndarray | None = None  # bounding box of the centres, and the largest radius
    hi: np.ndarray | None = None
    max_radius: float = 0.0


@dataclass
class Segments:
    """Line segments drawn as instanced unit cylinders."""

    instance_id: int
    vao: int
    instance_vbo: int
    count: int = 0
    visible: bool = True


class Scene:
    """Shapes, instances, bodies and batches of one OpenGL context."""

    def __init__(self, g: GL) -> None:
        self.g = g
        self.shapes: dict[int, Shape] = {}
        self.shape_by_hash: dict[Any, int] = {}
        self.instances: dict[int, Instance] = {}
        self.instance_by_name: dict[str, int] = {}
        self.bodies: dict[str, int] = {}
        self.body_tf: np.ndarray | None = None  # (n, 4, 4) matrices
        self.clouds: dict[str, PointCloud] = {}
        self.segments: dict[str, Segments] = {}
        self._next_shape = 0
        self._next_instance = 0
        self._capacity: dict[int, int] = {}
        self._segment_shape: int | None = None

    # --------------------------------------------------------------------------------------------- shapes
    def register_shape(self, geo_hash: Any, vertices: np.ndarray, indices: np.ndarray,
                       color1: tuple[float, float, float], color2: tuple[float, float, float] | None) -> int:
        """Upload a mesh (``(n, 8)`` vertices, triangle indices) and return its shape id (reused per ``geo_hash``)."""
        if geo_hash is not None and geo_hash in self.shape_by_hash:
            return self.shape_by_hash[geo_hash]
        g, gl = self.g, self.g.gl
        verts = np.ascontiguousarray(vertices, np.float32).reshape(-1, _VERTEX_FLOATS)
        idx = np.ascontiguousarray(indices, np.uint32).reshape(-1)
        if idx.size and int(idx.max()) >= len(verts):
            raise ValueError(f"shape indices must lie in [0, {len(verts)})")
        vao, vbo, ebo, inst = g.gen_vertex_array(), g.gen_buffer(), g.gen_buffer(), g.gen_buffer()
        gl.glBindVertexArray(vao)
        g.upload(gl.GL_ARRAY_BUFFER, vbo, verts, self._capacity)
        stride = 4 * _VERTEX_FLOATS
        g.attrib(0, 3, stride, 0)
        g.attrib(1, 3, stride, 12)
        g.attrib(2, 2, stride, 24)
        g.upload(gl.GL_ELEMENT_ARRAY_BUFFER, ebo, idx)
        g.upload(gl.GL_ARRAY_BUFFER, inst, np.zeros(_INSTANCE_FLOATS, np.float32), self._capacity)
        istride = 4 * _INSTANCE_FLOATS
        for col in range(4):
            g.attrib(3 + col, 4, istride, 16 * col, divisor=1)
        g.attrib(7, 3, istride, 64, divisor=1)
        g.attrib(8, 3, istride, 76, divisor=1)
        gl.glBindVertexArray(0)
        sid = self._next_shape
        self._next_shape += 1
        c1 = tuple(float(c) for c in color1)
        self.shapes[sid] = Shape(geo_hash, vao, vbo, ebo, inst, int(idx.size), len(verts), c1,  # type: ignore[arg-type]
                                 c1 if color2 is None else tuple(float(c) for c in color2),  # type: ignore[arg-type]
                                 verts)
        if geo_hash is not None:
            self.shape_by_hash[geo_hash] = sid
        return sid

    def shape(self, shape_id: int) -> Shape:
        if shape_id not in self.shapes:
            raise ValueError(f"no shape with id {shape_id!r} is registered")
        return self.shapes[shape_id]

    def deregister_shape(self, shape_id: int) -> None:
        """Delete a shape with its buffers and every instance of it."""
        s = self.shape(shape_id)
        for iid in list(s.instances):
            self.remove_instance(self.instances[iid].name)
        self.g.delete_vertex_arrays([s.vao])
        self.g.delete_buffers([b for b in (s.vbo, s.ebo, s.instance_vbo, s.vcolor_vbo) if b])
        del self.shapes[shape_id]
        if s.geo_hash is not None:
            self.shape_by_hash.pop(s.geo_hash, None)

    def update_shape_vertices(self, shape_id: int, vertices: np.ndarray) -> None:
        """Replace a shape's vertices: ``(n, 8)`` full rows, or ``(n, 3)`` positions (normals kept)."""
        s = self.shape(shape_id)
        v = np.asarray(vertices, np.float32)
        if v.ndim == 2 and v.shape[1] == 3:
            if len(v) != s.vertex_count:
                raise ValueError(f"shape {shape_id} has {s.vertex_count} vertices, got {len(v)} points")
            rows = s.vertices.copy()
            rows[:, 0:3] = v
            v = rows
        v = v.reshape(-1, _VERTEX_FLOATS)
        s.vertices = np.ascontiguousarray(v)
        s.vertex_count = len(v)
        self.g.upload(self.g.gl.GL_ARRAY_BUFFER, s.vbo, s.vertices, self._capacity)

    def set_vertex_colors(self, shape_id: int, colors: np.ndarray | None) -> None:
        """Per-vertex colours (attribute 9) for a shape, or back to its instance colours with ``None``."""
        g, gl = self.g, self.g.gl
        s = self.shape(shape_id)
        gl.glBindVertexArray(s.vao)
        if colors is None:
            gl.glDisableVertexAttribArray(9)
            s.has_vertex_colors = False
        else:
            rgba = np.ones((len(colors), 4), np.float32)
            rgba[:, :3] = colors
            if not s.vcolor_vbo:
                s.vcolor_vbo = g.gen_buffer()
            g.upload(gl.GL_ARRAY_BUFFER, s.vcolor_vbo, rgba, self._capacity)
            g.attrib(9, 4, 16, 0)
            s.has_vertex_colors = True
        gl.glBindVertexArray(0)

    # ------------------------------------------------------------------------------------------ instances
    def new_instance_id(self) -> int:
        iid = self._next_instance
        self._next_instance += 1
        return iid

    def add_instance(self, name: str, shape_id: int, body: Any, pos: Any, rot: Any, scale: Any,
                     color1: tuple[float, float, float] | None, color2: tuple[float, float, float] | None,
                     custom_index: int = -1, visible: bool = True) -> int:
        s = self.shape(shape_id)
        if name in self.instance_by_name:
            raise ValueError(f"an instance named {name!r} exists already (use update_shape_instance)")
        iid = self.new_instance_id() if custom_index < 0 or custom_index in self.instances else int(custom_index)
        c1 = s.color1 if color1 is None else color1
        c2 = (s.color2 if color1 is None else c1) if color2 is None else color2
        self.instances[iid] = Instance(name, shape_id, self.body_id(body), np.asarray(pos, np.float64),
                                       np.asarray(rot, np.float64), np.asarray(scale, np.float64), c1, c2,
                                       custom_index, bool(visible))
        self.instance_by_name[name] = iid
        s.instances.append(iid)
        s.dirty = True
        return iid

    def update_instance(self, name: str, shape_id: int | None = None, pos: Any = None, rot: Any = None,
                        scale: Any = None, color1: Any = None, color2: Any = None, visible: Any = None) -> int:
        if name not in self.instance_by_name:
            raise ValueError(f"no shape instance named {name!r}")
        iid = self.instance_by_name[name]
        inst = self.instances[iid]
        if shape_id is not None and shape_id != inst.shape:
            old = self.shape(inst.shape)
            old.instances.remove(iid)
            old.dirty = True
            inst.shape = shape_id
            self.shape(shape_id).instances.append(iid)
        for attr, value in (("pos", pos), ("rot", rot), ("scale", scale)):
            if value is not None:
                setattr(inst, attr, np.asarray(value, np.float64))
        if color1 is not None:
            inst.color1 = color1
        if color2 is not None:
            inst.color2 = color2
        if visible is not None:
            inst.visible = bool(visible)
        self.shape(inst.shape).dirty = True
        return iid

    def remove_instance(self, name: str) -> None:
        if name not in self.instance_by_name:
            raise ValueError(f"no shape instance named {name!r}")
        iid = self.instance_by_name.pop(name)
        inst = self.instances.pop(iid)
        s = self.shapes.get(inst.shape)
        if s is not None:
            s.instances.remove(iid)
            s.dirty = True

    def mark_all_dirty(self) -> None:
        for s in self.shapes.values():
            s.dirty = True

    # --------------------------------------------------------------------------------------------- bodies
    def register_body(self, name: str) -> int:
        if name not in self.bodies:
            self.bodies[name] = len(self.bodies)
        return self.bodies[name]

    def body_id(self, body: Any) -> int | None:
        if body is None:
            return None
        if isinstance(body, str):
            return self.register_body(body)
        return int(body)

    def set_body_transforms(self, tf: np.ndarray | None) -> None:
        """Body transforms ``(n, 7)`` = position and quaternion ``(x, y, z, w)``, applied to their instances."""
        if tf is None:
            self.body_tf = None
        else:
            t = np.asarray(tf, np.float64).reshape(-1, 7)
            q = t[:, 3:7] / np.linalg.norm(t[:, 3:7], axis=1, keepdims=True)
            m = np.tile(np.eye(4), (len(t), 1, 1))
            m[:, :3, :3] = quats_to_matrices(q)
            m[:, :3, 3] = t[:, :3]
            self.body_tf = m
        self.mark_all_dirty()

    def _pack(self, s: Shape) -> None:
        rows, ids = [], []
        for iid in s.instances:
            inst = self.instances[iid]
            if not inst.visible:
                continue
            m = trs_matrix(inst.pos, inst.rot, inst.scale)
            if inst.body is not None and self.body_tf is not None and inst.body < len(self.body_tf):
                m = self.body_tf[inst.body] @ m
            rows.append(np.concatenate([m.T.reshape(-1), inst.color1, inst.color2]))
            ids.append(iid)
        s.packed = np.asarray(rows, np.float32).reshape(-1, _INSTANCE_FLOATS)
        s.packed_ids = np.asarray(ids, np.int64)
        s.uploaded = None
        s.dirty = False

    # -------------------------------------------------------------------------------------------- batches
    def set_points(self, name: str, points: np.ndarray, radii: np.ndarray, colors: np.ndarray | None,
                   default_color: tuple[float, float, float], as_spheres: bool, visible: bool) -> int:
        g, gl = self.g, self.g.gl
        cloud = self.clouds.get(name)
        if cloud is None:
            vbos = (g.gen_buffer(), g.gen_buffer(), g.gen_buffer())
            cloud = PointCloud(self.new_instance_id(), g.gen_vertex_array(), vbos)
            self.clouds[name] = cloud
        gl.glBindVertexArray(cloud.vao)
        g.upload(gl.GL_ARRAY_BUFFER, cloud.vbos[0], points, self._capacity)
        g.attrib(0, 3, 12, 0, divisor=1)
        if radii.size and all_rows_equal(radii):
            cloud.radius = float(radii[0])
            gl.glDisableVertexAttribArray(1)
        else:
            cloud.radius = None
            g.upload(gl.GL_ARRAY_BUFFER, cloud.vbos[1], radii, self._capacity)
            g.attrib(1, 1, 4, 0, divisor=1)
        if colors is None or all_rows_equal(colors):
            cloud.color = default_color if colors is None or not len(colors) else tuple(float(c) for c in colors[0])  # type: ignore[assignment]
            gl.glDisableVertexAttribArray(2)
        else:
            cloud.color = None
            g.upload(gl.GL_ARRAY_BUFFER, cloud.vbos[2], colors, self._capacity)
            g.attrib(2, 3, 12, 0, divisor=1)
        gl.glBindVertexArray(0)
        cloud.count, cloud.as_spheres, cloud.visible = len(points), bool(as_spheres), bool(visible)
        if len(points):
            cloud.lo, cloud.hi = points.min(axis=0), points.max(axis=0)
            cloud.max_radius = float(np.abs(radii).max())
        return cloud.instance_id

    def set_segments(self, name: str, mid: np.ndarray, quat: np.ndarray, length: np.ndarray, radius: float,
                     color: tuple[float, float, float], visible: bool) -> int:
        g, gl = self.g, self.g.gl
        if self._segment_shape is None:
            from . import meshes  # noqa: PLC0415 - sibling module, only needed for the first line batch

            v, i = meshes.cylinder(1.0, 0.5, up_axis=2, segments=12)
            self._segment_shape = self.register_shape(("segment-cylinder",), v, i, (1.0, 1.0, 1.0), None)
        base = self.shape(self._segment_shape)
        batch = self.segments.get(name)
        if batch is None:
            vao, ivbo = g.gen_vertex_array(), g.gen_buffer()
            gl.glBindVertexArray(vao)
            gl.glBindBuffer(gl.GL_ARRAY_BUFFER, base.vbo)
            stride = 4 * _VERTEX_FLOATS
            g.attrib(0, 3, stride, 0)
            g.attrib(1, 3, stride, 12)
            g.attrib(2, 2, stride, 24)
            gl.glBindBuffer(gl.GL_ELEMENT_ARRAY_BUFFER, base.ebo)
            g.upload(gl.GL_ARRAY_BUFFER, ivbo, np.zeros(_INSTANCE_FLOATS, np.float32), self._capacity)
            istride = 4 * _INSTANCE_FLOATS
            for col in range(4):
                g.attrib(3 + col, 4, istride, 16 * col, divisor=1)
            g.attrib(7, 3, istride, 64, divisor=1)
            g.attrib(8, 3, istride, 76, divisor=1)
            gl.glBindVertexArray(0)
            batch = Segments(self.new_instance_id(), vao, ivbo)
            self.segments[name] = batch
        n = len(mid)
        rows = np.zeros((n, _INSTANCE_FLOATS), np.float32)
        rot = quats_to_matrices(quat.astype(np.float64)) * np.stack(
            [np.full(n, radius), np.full(n, radius), length], axis=1)[:, None, :]
        cols = rows[:, :16].reshape(n, 4, 4)  # column-major: cols[k, c] is column c of matrix k
        cols[:, :3, :3] = np.transpose(rot, (0, 2, 1))
        cols[:, 3, :3] = mid
        cols[:, 3, 3] = 1.0
        rows[:, 16:19] = color
        rows[:, 19:22] = color
        g.upload(gl.GL_ARRAY_BUFFER, batch.instance_vbo, rows, self._capacity)
        batch.count, batch.visible = n, bool(visible)
        return batch.instance_id

    # ------------------------------------------------------------------------------------------- drawing
    def draw_shapes(self, program: Any, tile_ids: set[int] | None) -> None:
        """Draw every shape's instances (only those in ``tile_ids`` when given) with ``program`` in use."""
        g, gl = self.g, self.g.gl
        for s in self.shapes.values():
            if s.dirty:
                self._pack(s)
            assert s.packed is not None and s.packed_ids is not None
            if tile_ids is None:
                want: Any = "all"
                rows = s.packed
            else:
                mask = np.fromiter((int(i) in tile_ids for i in s.packed_ids), bool, len(s.packed_ids))
                want = tuple(s.packed_ids[mask].tolist())
                rows = s.packed[mask]
            if len(rows) == 0 or s.index_count == 0:
                continue
            if s.uploaded != want:
                g.upload(gl.GL_ARRAY_BUFFER, s.instance_vbo, rows, self._capacity)
                s.uploaded = want
            if not s.has_vertex_colors:
                gl.glVertexAttrib4f(9, 0.0, 0.0, 0.0, 0.0)
            gl.glBindVertexArray(s.vao)
            gl.glDrawElementsInstanced(gl.GL_TRIANGLES, s.index_count, gl.GL_UNSIGNED_INT, None, len(rows))
        gl.glBindVertexArray(0)

    def draw_segments(self, program: Any, tile_ids: set[int] | None) -> None:
        gl = self.g.gl
        if self._segment_shape is None:
            return
        base = self.shape(self._segment_shape)
        gl.glVertexAttrib4f(9, 0.0, 0.0, 0.0, 0.0)
        for batch in self.segments.values():
            if not batch.visible or batch.count == 0 or (tile_ids is not None and batch.instance_id not in tile_ids):
                continue
            gl.glBindVertexArray(batch.vao)
            gl.glDrawElementsInstanced(gl.GL_TRIANGLES, base.index_count, gl.GL_UNSIGNED_INT, None, batch.count)
        gl.glBindVertexArray(0)

    def draw_points(self, program: Any, tile_ids: set[int] | None, needs_quads: Any) -> None:
        """Draw the point clouds.

        ``needs_quads(cloud)`` tells whether any of its spheres may be too large on screen for a point sprite (then a
        second, quad pass draws those).
        """
        gl = self.g.gl
        for cloud in self.clouds.values():
            if not cloud.visible or cloud.count == 0 or (tile_ids is not None and cloud.instance_id not in tile_ids):
                continue
            program["u_flat"] = 0 if cloud.as_spheres else 1
            if cloud.radius is not None:
                gl.glVertexAttrib1f(1, cloud.radius)
            if cloud.color is not None:
                gl.glVertexAttrib3f(2, *cloud.color)
            gl.glBindVertexArray(cloud.vao)
            # Sprites first: one vertex per point (divisor 0, a plain draw: instancing one vertex costs far more
            # in software rasterisers). Then, only if some sphere may be too large for a sprite, one instanced
            # quad per point; each pass drops the other's points in the vertex shader.
            for loc in range(3):
                gl.glVertexAttribDivisor(loc, 0)
            program["u_sprite"] = 1
            gl.glDrawArrays(gl.GL_POINTS, 0, cloud.count)
            for loc in range(3):
                gl.glVertexAttribDivisor(loc, 1)
            if needs_quads(cloud):
                program["u_sprite"] = 0
                gl.glDrawArraysInstanced(gl.GL_TRIANGLE_STRIP, 0, 4, cloud.count)
        gl.glBindVertexArray(0)

    # ------------------------------------------------------------------------------------------- cleanup
    def delete_all(self) -> None:
        """Release every buffer and vertex array (the context must be current)."""
        g = self.g
        for sid in list(self.shapes):
            s = self.shapes[sid]
            g.delete_vertex_arrays([s.vao])
            g.delete_buffers([b for b in (s.vbo, s.ebo, s.instance_vbo, s.vcolor_vbo) if b])
        for cloud in self.clouds.values():
            g.delete_vertex_arrays([cloud.vao])
            g.delete_buffers(list(cloud.vbos))
        for batch in self.segments.values():
            g.delete_vertex_arrays([batch.vao])
            g.delete_buffers([batch.instance_vbo])
        self.__init__(g)  # type: ignore[misc]
