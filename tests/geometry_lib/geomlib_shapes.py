"""Analytic shapes and mesh checks shared by the ``treadle.geometry`` tests (float64 NumPy references)."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def sphere_kernel(field: wp.array3d(dtype=float), lower: wp.vec3, spacing: wp.vec3, center: wp.vec3,
                  radius: wp.array(dtype=float)):
    i, j, k = wp.tid()
    p = lower + wp.vec3(float(i) * spacing[0], float(j) * spacing[1], float(k) * spacing[2])
    field[i, j, k] = wp.length(p - center) - radius[0]


@wp.kernel
def torus_kernel(field: wp.array3d(dtype=float), lower: wp.vec3, spacing: wp.vec3, big_r: float, small_r: float):
    i, j, k = wp.tid()
    p = lower + wp.vec3(float(i) * spacing[0], float(j) * spacing[1], float(k) * spacing[2])
    q = wp.vec2(wp.sqrt(p[0] * p[0] + p[1] * p[1]) - big_r, p[2])
    field[i, j, k] = wp.length(q) - small_r


@wp.kernel
def sphere_points(points: wp.array(dtype=wp.vec3), center: wp.vec3, radius: wp.array(dtype=float),
                  out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(points[i] - center) - radius[0]


def grid(n: int | tuple[int, int, int], lo: float = -1.0, hi: float = 1.0) -> tuple[tuple[int, int, int], np.ndarray,
                                                                                      np.ndarray]:
    """(dims, lower, spacing) of a grid over the cube [lo, hi]^3 (spacing as the float32 the extractors use)."""
    dims = (n, n, n) if isinstance(n, int) else n
    lower = np.full(3, lo, np.float32)
    spacing = (np.full(3, hi, np.float32) - lower) / (np.array(dims, np.float32) - 1)
    return dims, lower, spacing


def sphere_field(n: int | tuple[int, int, int], center: tuple[float, float, float], radius: float, lo: float = -1.0,
                 hi: float = 1.0, requires_grad: bool = False) -> tuple[wp.array, wp.array]:
    """The signed distance of a sphere on a grid over [lo, hi]^3, and the radius array it depends on."""
    dims, lower, spacing = grid(n, lo, hi)
    r = wp.array([radius], dtype=float, requires_grad=requires_grad)
    field = wp.zeros(dims, dtype=float, requires_grad=requires_grad)
    wp.launch(sphere_kernel, dim=dims, inputs=[field, wp.vec3(*lower), wp.vec3(*spacing), wp.vec3(*center), r])
    return field, r


def torus_field(n: int, big_r: float, small_r: float) -> wp.array:
    """The signed distance of a torus around z on a grid over [-1, 1]^3."""
    dims, lower, spacing = grid(n)
    field = wp.zeros(dims, dtype=float)
    wp.launch(torus_kernel, dim=dims, inputs=[field, wp.vec3(*lower), wp.vec3(*spacing), big_r, small_r])
    return field


def area_volume(verts: np.ndarray, faces: np.ndarray) -> tuple[float, float]:
    """Surface area and enclosed signed volume (positive for outward normals) of a triangle mesh, in float64."""
    v = verts[faces].astype(np.float64)
    cross = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    return float(0.5 * np.linalg.norm(cross, axis=1).sum()), float(np.einsum("ij,ij->i", v[:, 0], cross).sum() / 6.0)


def edge_uses(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(how many faces use each undirected edge, how many use each directed edge)."""
    k = faces.shape[1]
    directed = np.concatenate([faces[:, [i, (i + 1) % k]] for i in range(k)])
    _, undirected = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    _, counts = np.unique(directed, axis=0, return_counts=True)
    return undirected, counts


def assert_closed_oriented(verts: np.ndarray, faces: np.ndarray) -> None:
    """Every edge shared by exactly two faces, once in each direction; no degenerate face; every vertex used."""
    assert len(faces) > 0
    k = faces.shape[1]
    for i in range(k):
        assert (faces[:, i] != faces[:, (i + 1) % k]).all()
    assert np.array_equal(np.unique(faces), np.arange(len(verts)))
    undirected, directed = edge_uses(faces)
    assert (undirected == 2).all()
    assert (directed == 1).all()


def icosphere(subdivisions: int, radius: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A closed, outward-oriented sphere mesh: a subdivided icosahedron with vertices on the sphere."""
    t = (1.0 + 5.0**0.5) / 2.0
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
             (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
             (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
             (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    pts = [np.array(v, np.float64) / np.linalg.norm(v) for v in verts]
    mid: dict[tuple[int, int], int] = {}

    def middle(a: int, b: int) -> int:
        key = (min(a, b), max(a, b))
        if key not in mid:
            m = pts[a] + pts[b]
            pts.append(m / np.linalg.norm(m))
            mid[key] = len(pts) - 1
        return mid[key]

    for _ in range(subdivisions):
        mid.clear()
        new = []
        for a, b, c in faces:
            ab, bc, ca = middle(a, b), middle(b, c), middle(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    return (np.array(pts) * radius).astype(np.float32), np.array(faces, np.int32)


def box_mesh(lo: tuple[float, float, float], hi: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """A closed, outward-oriented box of 12 triangles."""
    pts = np.array([[hi[0] if c & 1 else lo[0], hi[1] if c & 2 else lo[1], hi[2] if c & 4 else lo[2]]
                    for c in range(8)], np.float32)
    faces = np.array([[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4], [2, 6, 7], [2, 7, 3],
                      [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]], np.int32)
    return pts, faces


def box_sdf(p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Exact signed distance of points to an axis-aligned box."""
    c, h = (lo + hi) / 2.0, (hi - lo) / 2.0
    q = np.abs(p - c) - h
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)


def segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of points to the segment [a, b]."""
    ab = b - a
    t = np.clip(((p - a) @ ab) / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)
