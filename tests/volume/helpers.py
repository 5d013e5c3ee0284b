"""Shared helpers of the volume tests: analytic fields and small volumes."""

from __future__ import annotations

import numpy as np

import treadle as wp

#: A sphere SDF narrow band: centre (index space), radius, band half-width (voxels), voxel size.
SPHERE_C = np.array([20.3, 18.7, 21.1])
SPHERE_R = 12.0
BAND = 3.0
VOXEL = 0.1


def sphere_sdf(ijk: np.ndarray) -> np.ndarray:
    """Signed distance (in voxels) of index-space points to the sphere."""
    return np.linalg.norm(np.asarray(ijk, dtype=np.float64) - SPHERE_C, axis=-1) - SPHERE_R


def sphere_volume(device: str = "cpu") -> tuple[wp.Volume, np.ndarray]:
    """A narrow-band level set of the sphere (in world units: distances times the voxel size) and its dense grid."""
    n = 48
    ijk = np.stack(np.meshgrid(*(np.arange(n),) * 3, indexing="ij"), -1)
    d = sphere_sdf(ijk)
    band = np.abs(d) <= BAND
    vol = wp.Volume.allocate_by_tiles(wp.array(ijk[band].astype(np.int32), dtype=wp.vec3i), voxel_size=VOXEL,
                                      bg_value=float(BAND * VOXEL), device=device)
    dense = np.where(band, d, np.nan)
    _fill(vol, ijk[band], (d[band] * VOXEL).astype(np.float32))
    return vol, dense


@wp.kernel
def _store_f(vid: wp.uint64, ijk: wp.array(dtype=wp.vec3i), v: wp.array(dtype=float)):
    i = wp.tid()
    c = ijk[i]
    wp.volume_store_f(vid, c[0], c[1], c[2], v[i])


def _fill(vol: wp.Volume, ijk: np.ndarray, values: np.ndarray) -> None:
    dev = vol.device
    wp.launch(_store_f, len(ijk), inputs=[vol.id, wp.array(ijk.astype(np.int32), dtype=wp.vec3i, device=dev),
                                          wp.array(values, dtype=float, device=dev)], device=dev)


def dense_float(shape: tuple[int, int, int] = (11, 9, 13), seed: int = 0) -> np.ndarray:
    """Random float32 values on a dense box (spanning several leaves)."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def trilinear(dense: np.ndarray, bg: float | np.ndarray, p: np.ndarray) -> np.ndarray:
    """Trilinear interpolation of a dense grid (voxel (i, j, k) = dense[i, j, k]; outside: bg), float64."""
    p = np.asarray(p, dtype=np.float64)
    i0 = np.floor(p).astype(np.int64)
    f = p - i0
    shape = dense.shape[:3]
    out = 0.0
    for c in range(8):
        d = np.array([(c >> 2) & 1, (c >> 1) & 1, c & 1])
        idx = i0 + d
        inside = np.all((idx >= 0) & (idx < np.array(shape)), axis=-1)
        safe = np.clip(idx, 0, np.array(shape) - 1)
        v = dense[safe[..., 0], safe[..., 1], safe[..., 2]].astype(np.float64)
        v = np.where(inside[..., None] if v.ndim > inside.ndim else inside, v, bg)
        w = np.prod(np.where(d == 1, f, 1.0 - f), axis=-1)
        out = out + (w[..., None] if v.ndim > w.ndim else w) * v
    return out
