"""Argument handling and transform math shared by the renderers (NumPy, float32 on the host).

Points, colours and transforms reach the renderers as Treadle arrays, NumPy arrays, lists of ``wp.vec3`` or plain
tuples; :func:`as_points` and friends turn each into a contiguous NumPy array of the expected shape, or raise a
``ValueError``/``TypeError`` that names the argument. Quaternions are ``(x, y, z, w)``, as everywhere in the API.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

UP_AXES = ("X", "Y", "Z")


def to_numpy(value: Any, dtype: Any = np.float32) -> np.ndarray:
    """``value`` (a Treadle array on any device, NumPy array, sequence of vectors, scalar) as a NumPy array."""
    if isinstance(value, wp.array):
        value = value.numpy()
    elif hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, possibly with requires_grad
        value = value.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(value, dtype=dtype))


def as_points(value: Any, name: str = "points") -> np.ndarray:
    """An ``(n, 3)`` float32 array of positions.

    Raises:
        ValueError: ``value`` does not hold triples of numbers.
    """
    try:
        arr = to_numpy(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of 3D points (a wp.array of wp.vec3, an (n, 3) NumPy array or a "
                        f"list of triples), got {type(value).__name__}") from exc
    if arr.size == 0:
        return np.zeros((0, 3), np.float32)
    if arr.ndim == 1 and arr.size % 3 == 0:
        arr = arr.reshape(-1, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3), got {tuple(arr.shape)}")
    return arr


def as_triangles(value: Any, num_points: int, name: str = "indices") -> np.ndarray:
    """A flat int32 array of triangle vertex indices, checked against ``num_points``.

    Raises:
        ValueError: the count is not a multiple of 3 or an index is outside ``[0, num_points)``.
    """
    arr = to_numpy(value, np.int64).reshape(-1)
    if arr.size % 3 != 0:
        raise ValueError(f"{name} must hold whole triangles (a multiple of 3 indices), got {arr.size}")
    if arr.size and (arr.min() < 0 or arr.max() >= num_points):
        raise ValueError(f"{name} must lie in [0, {num_points}) for {num_points} points, got values in "
                         f"[{arr.min()}, {arr.max()}]")
    return arr.astype(np.int32)


GROUND_COLORS = ((0.72, 0.74, 0.78), (0.58, 0.60, 0.64))
"""The two checker colours of the ground both renderers draw."""

MAX_CHECKER_CELLS = 256
"""The most checker cells along one side of a plane written as geometry (larger scalings get wider cells)."""


def checker_edges(lo: float, hi: float, scaling: float) -> np.ndarray:
    """Cell edges over ``[lo, hi]`` for a checker repeating ``scaling`` times (the last cell cut short).

    ``scaling`` is the texture-coordinate span as the OpenGL renderer uses it: ``ceil(scaling)`` cells, each
    ``(hi - lo) / scaling`` wide; above :data:`MAX_CHECKER_CELLS` cells the cells widen to fit that many.
    """
    if not np.isfinite(scaling) or scaling <= 0.0:
        raise ValueError(f"a checker scaling must be positive and finite, got {scaling}")
    scaling = min(float(scaling), float(MAX_CHECKER_CELLS))
    cells = int(np.ceil(scaling - 1e-9))
    step = (hi - lo) / scaling
    return np.append(lo + step * np.arange(cells), hi)


def as_color(value: Any, default: tuple[float, float, float] | None = None,
             name: str = "color") -> tuple[float, float, float] | None:
    """An RGB triple of floats (``None`` passes through as ``default``)."""
    if value is None:
        return default
    arr = to_numpy(value).reshape(-1)
    if arr.size not in (3, 4):
        raise ValueError(f"{name} must be an (r, g, b) triple, got {arr.size} values")
    return (float(arr[0]), float(arr[1]), float(arr[2]))


def as_colors(value: Any, count: int, name: str = "colors") -> np.ndarray | None:
    """Per-item RGB colours as a ``(count, 3)`` float32 array, a ``(1, 3)`` array for one colour, or ``None``.

    Raises:
        ValueError: neither one colour nor ``count`` of them.
    """
    if value is None:
        return None
    arr = to_numpy(value)
    if arr.ndim == 1 and arr.size in (3, 4) and count != arr.size // 3:
        return np.ascontiguousarray(arr[:3].reshape(1, 3))  # callers treat one row as one colour for all
    if arr.ndim == 1 and arr.size == 3 * count:
        arr = arr.reshape(count, 3)
    if arr.ndim != 2 or arr.shape[0] != count or arr.shape[1] not in (3, 4):
        raise ValueError(f"{name} must be one (r, g, b) colour or {count} of them, got shape {tuple(arr.shape)}")
    return np.ascontiguousarray(arr[:, :3])


def all_rows_equal(rows: np.ndarray) -> bool:
    """Whether every row of ``rows`` equals the first (a few rows are compared before all of them)."""
    if len(rows) <= 1:
        return True
    if not np.array_equal(rows[1:65], np.broadcast_to(rows[0], rows[1:65].shape)):
        return False
    return bool(np.all(rows == rows[0]))


def as_radii(value: Any, count: int, name: str = "radius") -> np.ndarray:
    """Per-item radii as a ``(count,)`` float32 array (one scalar broadcast).

    Raises:
        ValueError: neither a scalar nor ``count`` values.
    """
    arr = to_numpy(value).reshape(-1)
    if arr.size == 1:
        return np.full(count, arr[0], np.float32)
    if arr.size != count:
        raise ValueError(f"{name} must be a scalar or one value per point ({count}), got {arr.size} values")
    return arr


def as_vec(value: Any, size: int, name: str) -> np.ndarray:
    """A float64 vector of ``size`` components.

    Raises:
        ValueError: the wrong number of components.
    """
    arr = np.asarray(to_numpy(value, np.float64)).reshape(-1)
    if arr.size != size:
        raise ValueError(f"{name} must have {size} components, got {arr.size}")
    return arr


def as_quat(value: Any, name: str = "rot") -> np.ndarray:
    """A unit quaternion ``(x, y, z, w)`` in float64 (a zero quaternion is an error).

    Raises:
        ValueError: not four components, or zero length.
    """
    q = as_vec(value, 4, name)
    n = float(np.linalg.norm(q))
    if n == 0.0 or not np.isfinite(n):
        raise ValueError(f"{name} must be a non-zero quaternion (x, y, z, w), got {tuple(q)}")
    return q / n


def check_up_axis(up_axis: Any) -> str:
    """``"X"``, ``"Y"`` or ``"Z"`` (case-insensitive; 0, 1, 2 accepted too).

    Raises:
        ValueError: anything else.
    """
    if isinstance(up_axis, (int, np.integer)) and 0 <= int(up_axis) < 3:
        return UP_AXES[int(up_axis)]
    if isinstance(up_axis, str) and up_axis.upper() in UP_AXES:
        return up_axis.upper()
    raise ValueError(f"up_axis must be 'X', 'Y' or 'Z', got {up_axis!r}")


def shape_axis(up_axis: Any) -> int:
    """The axis index (0, 1, 2) of a shape's ``up_axis`` argument.

    Raises:
        ValueError: not 0, 1, 2 or an axis letter.
    """
    return UP_AXES.index(check_up_axis(up_axis))


def quat_to_matrix(q: Any) -> np.ndarray:
    """The 3x3 rotation matrix of the unit quaternion ``q = (x, y, z, w)`` (float64)."""
    x, y, z, w = (float(c) for c in np.asarray(q, np.float64).reshape(4))
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ])


def quats_to_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(n, 3, 3)`` of ``n`` unit quaternions ``(x, y, z, w)``."""
    x, y, z, w = (q[:, i] for i in range(4))
    m = np.empty((len(q), 3, 3), dtype=q.dtype)
    m[:, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    m[:, 0, 1] = 2.0 * (x * y - z * w)
    m[:, 0, 2] = 2.0 * (x * z + y * w)
    m[:, 1, 0] = 2.0 * (x * y + z * w)
    m[:, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    m[:, 1, 2] = 2.0 * (y * z - x * w)
    m[:, 2, 0] = 2.0 * (x * z - y * w)
    m[:, 2, 1] = 2.0 * (y * z + x * w)
    m[:, 2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return m


def trs_matrix(pos: Any, rot: Any, scale: Any = (1.0, 1.0, 1.0)) -> np.ndarray:
    """The 4x4 matrix (column vectors, ``M @ [p, 1]``) of translate * rotate * scale."""
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix(rot) * np.asarray(scale, np.float64).reshape(1, 3)
    m[:3, 3] = np.asarray(pos, np.float64).reshape(3)
    return m


def segment_frames(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For segments ``starts[i] -> ends[i]``: midpoints, unit quaternions turning +Z onto each segment, lengths.

    Zero-length segments get the identity rotation. The quaternion of a segment anti-parallel to +Z is a half turn
    about X (any perpendicular axis would do).
    """
    d = (ends - starts).astype(np.float64)
    length = np.linalg.norm(d, axis=1)
    safe = np.where(length > 0.0, length, 1.0)
    u = d / safe[:, None]
    # the shortest-arc rotation from z = (0, 0, 1) to u: axis z x u = (-u_y, u_x, 0), w = 1 + z.u, normalised
    q = np.stack([-u[:, 1], u[:, 0], np.zeros(len(u)), 1.0 + u[:, 2]], axis=1)
    flipped = q[:, 3] < 1e-9
    q[flipped] = (1.0, 0.0, 0.0, 0.0)
    q[length == 0.0] = (0.0, 0.0, 0.0, 1.0)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return (0.5 * (starts + ends)).astype(np.float32), q.astype(np.float32), length.astype(np.float32)


def line_list_segments(vertices: Any, indices: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of a line list: pairs of ``indices`` into ``vertices``.

    Raises:
        ValueError: an odd number of indices, or one out of range.
    """
    pts = as_points(vertices, "vertices")
    idx = to_numpy(indices, np.int64).reshape(-1)
    if idx.size % 2 != 0:
        raise ValueError(f"indices of a line list must come in pairs, got {idx.size}")
    if idx.size and (idx.min() < 0 or idx.max() >= len(pts)):
        raise ValueError(f"indices must lie in [0, {len(pts)}), got values in [{idx.min()}, {idx.max()}]")
    return pts[idx[0::2]], pts[idx[1::2]]


def line_strip_segments(vertices: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of the segments joining consecutive ``vertices``."""
    pts = as_points(vertices, "vertices")
    return pts[:-1], pts[1:]


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The unit quaternion ``(x, y, z, w)`` turning unit vector ``a`` onto unit vector ``b``."""
    axis = np.cross(a, b)
    s, c = float(np.linalg.norm(axis)), float(np.dot(a, b))
    if s < 1e-12:
        if c > 0:
            return np.array([0.0, 0.0, 0.0, 1.0])
        perp = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        perp /= np.linalg.norm(perp)
        return np.array([*perp, 0.0])
    half = 0.5 * np.arctan2(s, c)
    return np.array([*(axis / s * np.sin(half)), np.cos(half)])


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product ``a * b`` of quaternions ``(x, y, z, w)`` (``b`` applied first)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def ground_plane_transform(plane: Any, up_axis: str) -> tuple[np.ndarray, np.ndarray]:
    """Position and rotation ``(x, y, z, w)`` of a ground plane.

    Without ``plane`` the ground is the plane through the origin normal to ``up_axis``; with ``plane = (nx, ny, nz,
    d)`` it is the plane ``n . p = d``, reached by rotating the up axis onto ``n``.

    Raises:
        ValueError: ``plane`` is not four numbers with a non-zero normal.
    """
    up = np.zeros(3)
    up[UP_AXES.index(up_axis)] = 1.0
    if plane is None:
        return np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
    p = as_vec(plane, 4, "plane")
    norm = float(np.linalg.norm(p[:3]))
    if norm == 0.0:
        raise ValueError("plane must be (nx, ny, nz, d) with a non-zero normal")
    n = p[:3] / norm
    return n * (p[3] / norm), rotation_between(up, n)
