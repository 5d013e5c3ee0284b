"""Triangle meshes of the primitive shapes for the OpenGL renderer.

Every builder returns ``(vertices, indices)``: ``vertices`` is ``(n, 8)`` float32 rows of position, unit normal and
texture coordinate ``(x, y, z, nx, ny, nz, u, v)``, ``indices`` a flat uint32 array of counter-clockwise
(outward-facing) triangles. Shapes are centred at the origin; the axial ones (capsule, cylinder, cone, arrow) run
along ``up_axis`` (0, 1, 2 for X, Y, Z).
"""

from __future__ import annotations

import numpy as np

Mesh = tuple[np.ndarray, np.ndarray]


def _pack(pos: np.ndarray, normal: np.ndarray, uv: np.ndarray, tris: np.ndarray) -> Mesh:
    verts = np.concatenate([pos, normal, uv], axis=1).astype(np.float32)
    return np.ascontiguousarray(verts), np.ascontiguousarray(tris, dtype=np.uint32).reshape(-1)


def _to_axis(mesh: Mesh, up_axis: int) -> Mesh:
    """Turn a mesh built along +Y so that it runs along ``up_axis`` (a cyclic permutation keeps the winding)."""
    verts, idx = mesh
    if up_axis == 1:
        return mesh
    perm = [1, 2, 0] if up_axis == 0 else [2, 0, 1]  # new (x, y, z) taken from old components
    out = verts.copy()
    out[:, 0:3] = verts[:, 0:3][:, perm]
    out[:, 3:6] = verts[:, 3:6][:, perm]
    return out, idx


def _grid_triangles(rows: int, cols: int, offset: int = 0) -> np.ndarray:
    """Triangles of a (rows + 1) x (cols + 1) vertex grid, row-major, two per cell."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = offset + r * (cols + 1) + c
    b, d = a + 1, a + cols + 1
    e = d + 1
    return np.stack([np.stack([a, d, b], -1), np.stack([b, d, e], -1)], axis=2).reshape(-1, 3)


def _revolve(profile_r: np.ndarray, profile_y: np.ndarray, normal_r: np.ndarray, normal_y: np.ndarray,
             segments: int, v: np.ndarray) -> Mesh:
    """A surface of revolution about +Y from a profile (radius, height) listed from the top down."""
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    cos, sin = np.cos(phi)[None, :], np.sin(phi)[None, :]
    pos = np.stack([profile_r[:, None] * sin, np.broadcast_to(profile_y[:, None], (len(profile_r), segments + 1)),
                    profile_r[:, None] * cos], axis=-1)
    nrm = np.stack([normal_r[:, None] * sin, np.broadcast_to(normal_y[:, None], pos.shape[:2]),
                    normal_r[:, None] * cos], axis=-1)
    uv = np.stack(np.broadcast_arrays(phi[None, :] / (2.0 * np.pi), v[:, None]), axis=-1)
    tris = _grid_triangles(len(profile_r) - 1, segments)
    return _pack(pos.reshape(-1, 3), nrm.reshape(-1, 3), uv.reshape(-1, 2), tris)


def _disc(radius: float, y: float, facing: float, segments: int) -> Mesh:
    """A flat disc at height ``y`` facing ``+Y`` (``facing = 1``) or ``-Y`` (``-1``): a centre and a rim."""
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    rim = np.stack([radius * np.sin(phi), np.full_like(phi, y), radius * np.cos(phi)], axis=1)
    pos = np.concatenate([[[0.0, y, 0.0]], rim])
    nrm = np.tile([0.0, facing, 0.0], (len(pos), 1))
    uv = np.concatenate([[[0.5, 0.5]], np.stack([0.5 + 0.5 * np.sin(phi), 0.5 + 0.5 * np.cos(phi)], 1)])
    i = np.arange(segments)
    tris = np.stack([np.zeros(segments, int), 1 + i, 2 + i], 1)
    if facing < 0:
        tris = tris[:, [0, 2, 1]]
    return _pack(pos, nrm, uv, tris)


def merge(*meshes: Mesh) -> Mesh:
    """One mesh holding all of ``meshes``."""
    verts, idx, base = [], [], 0
    for v, i in meshes:
        verts.append(v)
        idx.append(i.astype(np.int64) + base)
        base += len(v)
    return np.concatenate(verts).astype(np.float32), np.concatenate(idx).astype(np.uint32)


def sphere(radius: float = 1.0, segments: int = 32) -> Mesh:
    """A UV sphere with ``segments`` latitude bands and ``segments`` longitudes."""
    theta = np.linspace(0.0, np.pi, segments + 1)
    n_r, n_y = np.sin(theta), np.cos(theta)
    return _revolve(radius * n_r, radius * n_y, n_r, n_y, segments, theta / np.pi)


def box(half_extents: tuple[float, ...]) -> Mesh:
    """A box spanning ``[-e, e]`` on each axis, four vertices (own normal) per face."""
    e = np.asarray(half_extents, np.float64).reshape(3)
    pos: list[np.ndarray] = []
    nrm: list[np.ndarray] = []
    uv: list[tuple[float, float]] = []
    tris: list[tuple[int, int, int]] = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            u_ax, v_ax = (axis + 1) % 3, (axis + 2) % 3
            if sign < 0:
                u_ax, v_ax = v_ax, u_ax  # keeps the corners counter-clockwise seen from outside
            base = len(pos)
            for cu, cv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = np.zeros(3)
                p[axis], p[u_ax], p[v_ax] = sign * e[axis], cu * e[u_ax], cv * e[v_ax]
                n = np.zeros(3)
                n[axis] = sign
                pos.append(p)
                nrm.append(n)
                uv.append(((cu + 1) * 0.5, (cv + 1) * 0.5))
            tris += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return _pack(np.array(pos), np.array(nrm), np.array(uv), np.array(tris))


def capsule(radius: float, half_height: float, up_axis: int = 1, segments: int = 32) -> Mesh:
    """A cylinder of length ``2 half_height`` closed by two hemispheres of ``radius``."""
    half = segments // 2 + 1
    t_top = np.linspace(0.0, 0.5 * np.pi, half)
    t_bot = np.linspace(0.5 * np.pi, np.pi, half)
    n_r = np.concatenate([np.sin(t_top), np.sin(t_bot)])
    n_y = np.concatenate([np.cos(t_top), np.cos(t_bot)])
    y = radius * n_y + np.concatenate([np.full(half, half_height), np.full(half, -half_height)])
    total = 2.0 * (half_height + radius)
    v = (half_height + radius - y) / total
    return _to_axis(_revolve(radius * n_r, y, n_r, n_y, segments, v), up_axis)


def cylinder(radius: float, half_height: float, up_axis: int = 1, segments: int = 32,
             top_radius: float | None = None) -> Mesh:
    """A closed (truncated-cone, if ``top_radius`` differs) cylinder of length ``2 half_height``."""
    top = radius if top_radius is None else float(top_radius)
    slope = (radius - top) / (2.0 * half_height) if half_height > 0 else 0.0
    n = np.array([1.0, slope]) / np.hypot(1.0, slope)
    side = _revolve(np.array([top, radius]), np.array([half_height, -half_height]), np.full(2, n[0]),
                    np.full(2, n[1]), segments, np.array([0.0, 1.0]))
    parts = [side, _disc(radius, -half_height, -1.0, segments)]
    if top > 0.0:
        parts.append(_disc(top, half_height, 1.0, segments))
    return _to_axis(merge(*parts), up_axis)


def cone(radius: float, half_height: float, up_axis: int = 1, segments: int = 32) -> Mesh:
    """A cone with its base disc at ``-half_height`` and its apex at ``+half_height``."""
    return cylinder(radius, half_height, up_axis, segments, top_radius=0.0)


def arrow(base_radius: float, base_height: float, cap_radius: float | None = None, cap_height: float | None = None,
          up_axis: int = 1, segments: int = 32) -> Mesh:
    """A shaft from the origin to ``base_height`` with a cone of ``cap_height`` on top, along ``up_axis``.

    ``cap_radius`` defaults to 1.8 ``base_radius`` and ``cap_height`` to 0.18 ``base_height``.
    """
    cap_r = 1.8 * base_radius if cap_radius is None else float(cap_radius)
    cap_h = 0.18 * base_height if cap_height is None else float(cap_height)
    shaft_v, shaft_i = cylinder(base_radius, 0.5 * base_height, 1, segments)
    shaft_v = shaft_v.copy()
    shaft_v[:, 1] += 0.5 * base_height
    cap_v, cap_i = cone(cap_r, 0.5 * cap_h, 1, segments)
    cap_v = cap_v.copy()
    cap_v[:, 1] += base_height + 0.5 * cap_h
    return _to_axis(merge((shaft_v, shaft_i), (cap_v, cap_i)), up_axis)


def plane(width: float, length: float, u_scaling: float = 1.0, v_scaling: float = 1.0) -> Mesh:
    """A two-sided quad in the XZ plane spanning ``[-width, width] x [-length, length]`` (normal +Y, then -Y).

    Texture coordinates run over ``[0, u_scaling] x [0, v_scaling]`` (the checker pattern repeats with them).
    """
    w, h = float(width), float(length)
    pos = np.array([[-w, 0.0, -h], [w, 0.0, -h], [w, 0.0, h], [-w, 0.0, h]])
    uv = np.array([[0.0, 0.0], [u_scaling, 0.0], [u_scaling, v_scaling], [0.0, v_scaling]])
    up = _pack(pos, np.tile([0.0, 1.0, 0.0], (4, 1)), uv, np.array([[0, 2, 1], [0, 3, 2]]))
    down = _pack(pos, np.tile([0.0, -1.0, 0.0], (4, 1)), uv, np.array([[0, 1, 2], [0, 2, 3]]))
    return merge(up, down)


def from_triangles(points: np.ndarray, indices: np.ndarray, smooth: bool = True) -> Mesh:
    """Renderer vertices of a user triangle mesh.

    Shared vertices with averaged normals (``smooth``), or three own vertices per triangle with its face normal.
    """
    from .utils import vertex_normals  # noqa: PLC0415 - a sibling module; kept local to avoid an import cycle

    p = np.asarray(points, np.float32).reshape(-1, 3)
    tris = np.asarray(indices, np.int64).reshape(-1, 3)
    if smooth:
        n = vertex_normals(p, tris)
        return _pack(p, n, np.zeros((len(p), 2)), tris)
    corners = p[tris.reshape(-1)]
    fn = np.cross(p[tris[:, 1]] - p[tris[:, 0]], p[tris[:, 2]] - p[tris[:, 0]]).astype(np.float64)
    length = np.linalg.norm(fn, axis=1, keepdims=True)
    fn = np.where(length > 0, fn / np.where(length > 0, length, 1.0), 0.0)
    return _pack(corners, np.repeat(fn, 3, axis=0), np.zeros((len(corners), 2)),
                 np.arange(len(corners)).reshape(-1, 3))
