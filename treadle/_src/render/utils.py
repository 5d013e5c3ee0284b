"""Colour maps and mesh helpers for pictures of simulations (NumPy only)."""

from __future__ import annotations

from typing import Any

import numpy as np

# The ten colours of matplotlib's "tab10" qualitative palette, as 8-bit RGB.
_TAB10 = np.array([
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
], dtype=np.float64) / 255.0


def bourke_color_map(low: float, high: float, v: Any) -> Any:
    """Paul Bourke's blue-cyan-green-yellow-red ramp of ``v`` over ``[low, high]``.

    ``v`` is clamped to the range; ``low`` maps to blue ``(0, 0, 1)``, the quarter points to cyan, green and yellow,
    ``high`` to red ``(1, 0, 0)``.

    Args:
        low: The value mapped to blue.
        high: The value mapped to red (``high == low`` maps everything to blue).
        v: A scalar, or an array of values.

    Returns:
        ``(r, g, b)`` floats for a scalar ``v``; an array of shape ``v.shape + (3,)`` for an array.
    """
    values = np.asarray(v, dtype=np.float64)
    span = float(high) - float(low)
    t = np.zeros_like(values) if span == 0.0 else (np.clip(values, low, high) - low) / span
    r = np.clip(4.0 * t - 2.0, 0.0, 1.0)  # rises over the third quarter
    g = np.where(t < 0.25, 4.0 * t, np.where(t < 0.75, 1.0, 4.0 - 4.0 * t))
    b = np.clip(2.0 - 4.0 * t, 0.0, 1.0)  # falls over the second quarter
    rgb = np.stack([r, g, b], axis=-1)
    if values.ndim == 0:
        return (float(rgb[0]), float(rgb[1]), float(rgb[2]))
    return rgb


def tab10_color_map(i: int) -> tuple[float, float, float]:
    """Colour ``i`` (modulo 10) of the "tab10" qualitative palette, as floats in ``[0, 1]``."""
    c = _TAB10[int(i) % len(_TAB10)]
    return (float(c[0]), float(c[1]), float(c[2]))


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Unit vertex normals: the area-weighted sum of the incident triangles' normals (zero where none)."""
    v = np.asarray(vertices, np.float64).reshape(-1, 3)
    f = np.asarray(faces, np.int64).reshape(-1, 3)
    face_n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])  # length = twice the area
    n = np.zeros_like(v)
    for k in range(3):
        np.add.at(n, f[:, k], face_n)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return np.where(length > 0.0, n / np.where(length > 0.0, length, 1.0), 0.0)


def solidify_mesh(faces: np.ndarray, vertices: np.ndarray, thickness: Any) -> tuple[np.ndarray, np.ndarray]:
    """A closed shell around a surface mesh: each vertex moved by ``thickness`` both ways along its normal.

    Vertex ``i`` becomes vertices ``2 i`` (on the side its normal points to) and ``2 i + 1`` (the other side); each
    triangle becomes 8: its two offset copies (facing outwards) and two triangles for each of its three edges.

    Args:
        faces: ``(n, 3)`` triangle vertex indices.
        vertices: ``(m, 3)`` positions.
        thickness: One offset for all vertices, or one per vertex.

    Returns:
        ``(faces, vertices)``: ``(8 n, 3)`` int32 indices and ``(2 m, 3)`` float32 positions.

    Raises:
        ValueError: ``thickness`` is neither a scalar nor one value per vertex, or an index is out of range.
    """
    v = np.asarray(vertices, np.float64).reshape(-1, 3)
    f = np.asarray(faces, np.int64).reshape(-1, 3)
    if f.size and (f.min() < 0 or f.max() >= len(v)):
        raise ValueError(f"faces must index the {len(v)} vertices")
    t = np.asarray(thickness, np.float64).reshape(-1)
    if t.size == 1:
        t = np.full(len(v), t[0])
    elif t.size != len(v):
        raise ValueError(f"thickness must be a scalar or one value per vertex ({len(v)}), got {t.size}")
    n = vertex_normals(v, f)
    out_v = np.empty((2 * len(v), 3))
    out_v[0::2] = v + n * t[:, None]
    out_v[1::2] = v - n * t[:, None]
    a, b, c = (2 * f[:, k] for k in range(3))
    a2, b2, c2 = a + 1, b + 1, c + 1
    tris = [np.stack(t3, axis=1) for t3 in (
        (a, b, c), (a2, c2, b2),  # the outer copy keeps the winding, the inner one is reversed
        (a, a2, b2), (a, b2, b), (b, b2, c2), (b, c2, c), (c, c2, a2), (c, a2, a),  # the edge walls
    )]
    out_f = np.stack(tris, axis=1).reshape(-1, 3)
    return out_f.astype(np.int32), out_v.astype(np.float32)
