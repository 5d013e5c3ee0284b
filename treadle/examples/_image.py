"""Pictures for the gallery examples without extra dependencies: a PNG writer/reader (zlib), an orthographic
camera, a sphere-splatting renderer for particles and a ray-cast renderer for triangle meshes (one Treadle kernel
thread per pixel, ``wp.mesh_query_ray`` against a ``wp.Mesh``), plus OBJ/PLY writers.
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import Any

import numpy as np

import treadle as wp

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image: np.ndarray) -> bytes:
    """The PNG file bytes of an ``(h, w, 3)`` or ``(h, w)`` image (uint8, or float in [0, 1])."""
    img = np.asarray(image)
    if img.dtype != np.uint8:
        img = (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if img.ndim == 2:
        img = img[:, :, None]
    h, w, c = img.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]
    rows = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, w * c)], axis=1)  # filter type 0 per row
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return (_PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + _chunk(b"IEND", b""))


def write_png(path: str, image: np.ndarray) -> str:
    """Write ``image`` as a PNG file at ``path`` (directories are created); returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(encode_png(image))
    return path


def read_png(path: str) -> np.ndarray:
    """Decode a PNG written by :func:`write_png` (8-bit, no interlace, filter 0), checking every chunk's CRC."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != _PNG_SIGNATURE:
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"{path}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        raise ValueError(f"{path}: no IHDR chunk")
    w, h, depth, color_type = header[:4]
    c = {0: 1, 2: 3, 6: 4}[color_type]
    if depth != 8:
        raise ValueError(f"{path}: only 8-bit images are supported")
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w * c + 1)
    if np.any(raw[:, 0] != 0):
        raise ValueError(f"{path}: only filter type 0 is supported")
    return raw[:, 1:].reshape(h, w, c)


def camera(yaw_deg: float = 30.0, pitch_deg: float = 25.0) -> np.ndarray:
    """A rotation whose rows are the screen right, screen up and towards-viewer axes (y is up in the world)."""
    a, b = np.radians(yaw_deg), np.radians(pitch_deg)
    yaw = np.array([[np.cos(a), 0.0, -np.sin(a)], [0.0, 1.0, 0.0], [np.sin(a), 0.0, np.cos(a)]])
    pitch = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(b), -np.sin(b)], [0.0, np.sin(b), np.cos(b)]])
    return pitch @ yaw


_LIGHT = np.array([0.4, 0.7, 0.6]) / np.linalg.norm([0.4, 0.7, 0.6])


class View:
    """An orthographic view: world point -> (pixel column, pixel row, depth towards the viewer)."""

    def __init__(self, rotation: np.ndarray, center: Any, extent: float, width: int, height: int) -> None:
        self.rotation, self.center = np.asarray(rotation, float), np.asarray(center, float)
        self.width, self.height = width, height
        self.scale = min(width, height) / float(extent)  # pixels per world unit

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q = (np.asarray(points, float) - self.center) @ self.rotation.T
        return q[:, 0] * self.scale + 0.5 * self.width, 0.5 * self.height - q[:, 1] * self.scale, q[:, 2]

    def pixel_rays(self) -> tuple[np.ndarray, np.ndarray]:
        """The origin (on a plane in front of the scene) and direction of each pixel's ray, row-major."""
        xs = (np.arange(self.width) + 0.5 - 0.5 * self.width) / self.scale
        ys = (0.5 * self.height - (np.arange(self.height) + 0.5)) / self.scale
        gx, gy = np.meshgrid(xs, ys)
        far = 4.0 * max(self.width, self.height) / self.scale
        local = np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, far)], axis=1)
        origins = local @ self.rotation + self.center
        direction = -self.rotation[2]
        return origins.astype(np.float32), np.tile(direction, (len(origins), 1)).astype(np.float32)


def background(width: int, height: int) -> np.ndarray:
    """A soft vertical gradient."""
    t = np.linspace(0.0, 1.0, height)[:, None, None]
    top, bottom = np.array([0.93, 0.95, 0.98]), np.array([0.70, 0.74, 0.80])
    return np.broadcast_to(top * (1.0 - t) + bottom * t, (height, width, 3)).copy()


def splat_spheres(view: View, points: np.ndarray, radius: float, colors: np.ndarray,
                  image: np.ndarray | None = None) -> np.ndarray:
    """Shaded spheres of world ``radius`` at ``points`` (nearest wins), over ``image`` or a background."""
    img = background(view.width, view.height) if image is None else image
    px, py, depth = view.project(points)
    colors = np.broadcast_to(np.asarray(colors, float), (len(px), 3))
    r_pix = max(radius * view.scale, 0.75)
    k = int(np.ceil(r_pix))
    frag_pix, frag_depth, frag_color = [], [], []
    cx, cy = np.floor(px).astype(np.int64), np.floor(py).astype(np.int64)
    for dy in range(-k, k + 1):
        for dx in range(-k, k + 1):
            x, y = cx + dx, cy + dy
            ox, oy = (x + 0.5 - px) / r_pix, (y + 0.5 - py) / r_pix
            rr = ox * ox + oy * oy
            ok = (rr <= 1.0) & (x >= 0) & (x < view.width) & (y >= 0) & (y < view.height)
            if not np.any(ok):
                continue
            nz = np.sqrt(np.maximum(1.0 - rr[ok], 0.0))
            normal = np.stack([ox[ok], -oy[ok], nz], axis=1)
            light = view.rotation @ _LIGHT
            shade = 0.35 + 0.65 * np.clip(normal @ light, 0.0, 1.0)
            frag_pix.append(y[ok] * view.width + x[ok])
            frag_depth.append(depth[ok] + nz * radius)
            frag_color.append(colors[ok] * shade[:, None])
    if frag_pix:
        pix, dep, col = np.concatenate(frag_pix), np.concatenate(frag_depth), np.concatenate(frag_color)
        order = np.lexsort((-dep, pix))  # by pixel, nearest (largest depth) first
        pix, col = pix[order], col[order]
        first = np.unique(pix, return_index=True)[1]
        img.reshape(-1, 3)[pix[first]] = col[first]
    return img


@wp.kernel
def _trace(mesh: wp.uint64, origins: wp.array(dtype=wp.vec3), direction: wp.vec3, light: wp.vec3,
           face_colors: wp.array(dtype=wp.vec3), image: wp.array(dtype=wp.vec3), depth: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, origins[i], direction, 1.0e7)
    if q.result:
        n = wp.normalize(q.normal)
        if wp.dot(n, direction) > 0.0:
            n = -n  # two-sided shading
        diffuse = wp.max(wp.dot(n, light), 0.0)
        c = face_colors[q.face]
        image[i] = c * (0.3 + 0.7 * diffuse)
        depth[i] = q.t


def raycast_mesh(view: View, points: np.ndarray, triangles: np.ndarray, face_colors: Any = (0.85, 0.55, 0.3),
                 image: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ray-cast a triangle mesh (one ray per pixel through ``wp.mesh_query_ray``); returns (image, hit mask)."""
    img = background(view.width, view.height) if image is None else image
    tris = np.asarray(triangles, np.int32).reshape(-1, 3)
    if len(tris) == 0:
        return img, np.zeros((view.height, view.width), bool)
    mesh = wp.Mesh(points=wp.array(np.asarray(points, np.float32), dtype=wp.vec3),
                   indices=wp.array(tris.ravel(), dtype=wp.int32))
    colors = np.broadcast_to(np.asarray(face_colors, np.float32), (len(tris), 3)).copy()
    origins, dirs = view.pixel_rays()
    out = wp.array(img.reshape(-1, 3).astype(np.float32), dtype=wp.vec3)
    depth = wp.full(len(origins), -1.0, dtype=float)
    wp.launch(_trace, dim=len(origins), inputs=[mesh.id, wp.array(origins, dtype=wp.vec3), wp.vec3(*dirs[0]),
                                                wp.vec3(*_LIGHT.astype(np.float32)),
                                                wp.array(colors, dtype=wp.vec3), out, depth])
    hit = depth.numpy().reshape(view.height, view.width) >= 0.0
    return out.numpy().reshape(view.height, view.width, 3).astype(float), hit


def sphere_mesh(center: Any, radius: float, n: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """A UV sphere (outward-facing triangles)."""
    theta = np.linspace(0.0, np.pi, n + 1)
    phi = np.linspace(0.0, 2.0 * np.pi, 2 * n, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    pts = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], axis=-1).reshape(-1, 3)
    m = 2 * n
    tris = []
    for i in range(n):
        for j in range(m):
            a, b = i * m + j, i * m + (j + 1) % m
            c, d = a + m, b + m
            tris += [(a, b, c), (b, d, c)]
    return pts * radius + np.asarray(center, float), np.asarray(tris, np.int32)


def write_obj(path: str, points: np.ndarray, triangles: np.ndarray) -> str:
    """Wavefront OBJ (1-based indices)."""
    with open(path, "w") as f:
        f.write("".join(f"v {x:.6g} {y:.6g} {z:.6g}\n" for x, y, z in np.asarray(points)))
        f.write("".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in np.asarray(triangles).reshape(-1, 3)))
    return path


def write_ply(path: str, points: np.ndarray, triangles: np.ndarray) -> str:
    """Binary little-endian PLY with float vertices and int triangle lists."""
    pts = np.asarray(points, "<f4").reshape(-1, 3)
    tris = np.asarray(triangles, "<i4").reshape(-1, 3)
    header = ("ply\nformat binary_little_endian 1.0\n"
              f"element vertex {len(pts)}\nproperty float x\nproperty float y\nproperty float z\n"
              f"element face {len(tris)}\nproperty list uchar int vertex_indices\nend_header\n")
    faces = np.zeros(len(tris), dtype=[("n", "u1"), ("i", "<i4", (3,))])
    faces["n"], faces["i"] = 3, tris
    with open(path, "wb") as f:
        f.write(header.encode("ascii") + pts.tobytes() + faces.tobytes())
    return path
