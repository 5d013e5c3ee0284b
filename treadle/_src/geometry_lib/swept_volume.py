"""Swept volumes of rigid meshes: the union of every mesh over every sampled pose, as a field and as a mesh.

The swept field at a point is the smallest signed distance to any mesh at any pose, evaluated in each mesh's rest
frame (the motion is rigid, so the query point moves back by the inverse pose instead of the mesh moving): one
closest-point query per (mesh, pose) in :func:`swept_volume_sdf`, a ``@wp.func`` that user kernels can call too.
The sign comes from the mesh query chosen by :class:`SweptVolumeSignMode`. Only the sampled poses count: motion
between two samples is not bounded, so fast or thin parts need fine sampling.

Default domains follow the swept bounds (the rest-pose box of each mesh, its corners moved by every pose), padded by
two cells (plus the extraction threshold for :func:`swept_volume_mesh`); with ``voxel_size`` the domain grows
symmetrically to a whole number of cells.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import treadle as wp

from ..runtime.recording import suspend_tapes
from ._common import vec3_arg
from .iso_surface import IsoSurfaceMarchingCubes

#: Largest dense grid the swept field may allocate (nodes).
MAX_NODES = 2**31 - 1


class SweptVolumeSignMode(enum.IntEnum):
    """How each mesh's signed distance classifies points as inside or outside.

    Members are ints, so a value can be passed to a kernel and compared there.

    Members:

    - ``NORMAL``: the angle-weighted pseudo-normal at the closest point (``mesh_query_point_sign_normal``); fast,
      needs closed, consistently oriented meshes.
    - ``WINDING_NUMBER``: the generalised winding number (``mesh_query_point_sign_winding_number``); robust to small
      holes, needs meshes built with ``support_winding_number=True``. The default.
    - ``PARITY``: the parity of ray crossings (``mesh_query_point_sign_parity``).
    - ``NO_SIGN``: unsigned distance; the field is positive everywhere, so a mesh needs a positive threshold.
    """

    NORMAL = 0
    WINDING_NUMBER = 1
    PARITY = 2
    NO_SIGN = 3


@wp.func
def _mesh_distance(mesh: wp.uint64, p: wp.vec3, max_dist: float, sign_mode: int) -> float:
    # the signed distance from p to one mesh; max_dist when no face is closer than that
    d = max_dist
    if sign_mode == 0:
        q = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    elif sign_mode == 1:
        q = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    elif sign_mode == 2:
        q = wp.mesh_query_point_sign_parity(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    else:
        q = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        if q.result:
            d = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    return d


@wp.func
def swept_volume_sdf(point: wp.vec3, mesh_ids: wp.array(dtype=wp.uint64), transforms: wp.array2d(dtype=wp.transform),
                     max_dist: wp.float32, sign_mode: wp.int32) -> wp.float32:
    """The swept field at ``point``: the smallest signed distance to mesh ``m`` at pose ``s`` over all ``m, s``.

    Each pose ``transforms[m, s]`` maps mesh ``m`` from its rest frame to the world; the point is taken back to the
    rest frame and queried there. A query that finds no face within ``max_dist`` counts as ``+max_dist`` (it has no
    sign either), so ``max_dist`` should span the region of interest. Not differentiable.

    Args:
        point: the query point (world space).
        mesh_ids: ``Mesh.id`` of each rest-pose mesh.
        transforms: (meshes, samples) rigid poses.
        max_dist: the bound of the closest-point searches.
        sign_mode: a :class:`SweptVolumeSignMode` value.

    Returns:
        The pseudo signed distance (negative inside the swept volume).
    """
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        mesh = mesh_ids[m]
        for s in range(transforms.shape[1]):
            local = wp.transform_point(wp.transform_inverse(transforms[m, s]), point)
            best = wp.min(best, _mesh_distance(mesh, local, max_dist, sign_mode))
    return best


@wp.func
def _box_score(p: wp.vec3, lo: wp.vec3, hi: wp.vec3) -> float:
    # outside the box [lo, hi]: the distance to it (> 0); inside: minus the distance to its boundary (<= 0)
    g = wp.vec3(0.0, 0.0, 0.0)
    inner = 3.0e38
    for a in range(3):
        g[a] = wp.max(wp.max(lo[a] - p[a], p[a] - hi[a]), 0.0)
        inner = wp.min(inner, wp.min(p[a] - lo[a], hi[a] - p[a]))
    gap = wp.length(g)
    if gap > 0.0:
        return gap
    return -inner


@wp.kernel(enable_backward=False)
def _sv_field(mesh_ids: wp.array(dtype=wp.uint64), box_lo: wp.array(dtype=wp.vec3), box_hi: wp.array(dtype=wp.vec3),
              transforms: wp.array2d(dtype=wp.transform), lower: wp.vec3, spacing: wp.vec3, max_dist: float,
              sign_mode: int, field: wp.array3d(dtype=float)):
    # swept_volume_sdf's minimum, with the searches that cannot lower it skipped or shortened. Every mesh lies in its
    # rest box. A point outside the box, at gap g, is outside the mesh and at least g from it: that pose can only
    # lower a best value above g, and only within it. A point inside the box has the mesh within the box's diagonal;
    # if it is inside the mesh, no deeper than its distance to the box's boundary, so it cannot lower a negative best
    # value deeper than that. The pose with the lowest box score goes first, to make the best value small early.
    i, j, k = wp.tid()
    p = lower + wp.vec3(float(i) * spacing[0], float(j) * spacing[1], float(k) * spacing[2])
    first_m = 0
    first_s = 0
    lowest = 3.0e38
    for m in range(mesh_ids.shape[0]):
        for s in range(transforms.shape[1]):
            score = _box_score(wp.transform_point(wp.transform_inverse(transforms[m, s]), p), box_lo[m], box_hi[m])
            if score < lowest:
                lowest = score
                first_m = m
                first_s = s
    local = wp.transform_point(wp.transform_inverse(transforms[first_m, first_s]), p)
    diag = wp.length(box_hi[first_m] - box_lo[first_m]) * 1.0001 + 1.0e-6
    best = wp.min(max_dist, _mesh_distance(mesh_ids[first_m], local, wp.min(max_dist, wp.max(lowest, 0.0) + diag),
                                           sign_mode))
    for m in range(mesh_ids.shape[0]):
        diag_m = wp.length(box_hi[m] - box_lo[m]) * 1.0001 + 1.0e-6
        for s in range(transforms.shape[1]):
            if m != first_m or s != first_s:
                q = wp.transform_point(wp.transform_inverse(transforms[m, s]), p)
                score = _box_score(q, box_lo[m], box_hi[m])
                if score > 0.0:
                    if score < best:
                        best = wp.min(best, _mesh_distance(mesh_ids[m], q, best, sign_mode))
                elif best >= 0.0 or -score > -best:
                    best = wp.min(best, _mesh_distance(mesh_ids[m], q, wp.min(max_dist, diag_m), sign_mode))
    field[i, j, k] = best


@wp.kernel(enable_backward=False)
def _sv_rest_box(points: wp.array(dtype=wp.vec3), m: int, box_lo: wp.array2d(dtype=float),
                 box_hi: wp.array2d(dtype=float)):
    i = wp.tid()
    p = points[i]
    for a in range(3):
        wp.atomic_min(box_lo, m, a, p[a])
        wp.atomic_max(box_hi, m, a, p[a])


@wp.kernel(enable_backward=False)
def _sv_pose_box(box_lo: wp.array2d(dtype=float), box_hi: wp.array2d(dtype=float),
                 transforms: wp.array2d(dtype=wp.transform), lo: wp.array(dtype=float), hi: wp.array(dtype=float)):
    m, s, c = wp.tid()
    corner = wp.vec3(box_lo[m, 0], box_lo[m, 1], box_lo[m, 2])
    if c & 1 != 0:
        corner[0] = box_hi[m, 0]
    if c & 2 != 0:
        corner[1] = box_hi[m, 1]
    if c & 4 != 0:
        corner[2] = box_hi[m, 2]
    p = wp.transform_point(transforms[m, s], corner)
    for a in range(3):
        wp.atomic_min(lo, a, p[a])
        wp.atomic_max(hi, a, p[a])


# ------------------------------------------------------------------------------------------------ arguments
def _meshes_arg(meshes: Any, where: str) -> list[Any]:
    if isinstance(meshes, wp.Mesh) or not isinstance(meshes, Sequence):
        raise TypeError(f"{where}: meshes must be a sequence (list or tuple) of wp.Mesh, got {type(meshes).__name__}")
    out = list(meshes)
    if not out:
        raise ValueError(f"{where}: meshes must contain at least one mesh")
    for i, m in enumerate(out):
        if not isinstance(m, wp.Mesh):
            raise TypeError(f"{where}: meshes[{i}] must be a wp.Mesh, got {type(m).__name__}")
        if m.points.shape[0] == 0 or m.indices.shape[0] < 3:
            raise ValueError(f"{where}: meshes[{i}] has no triangles")
    return out


def _transforms_arg(transforms: Any, num_meshes: int, device: Any, where: str) -> Any:
    expected = "a wp.array2d(dtype=wp.transform) or an array of shape (num_meshes, num_samples, 7)"
    if isinstance(transforms, wp.array) and transforms.dtype is wp.transform:
        if transforms.ndim != 2:
            raise ValueError(f"{where}: transforms must be {expected}, got a {transforms.ndim}-d array of transforms")
        raw = transforms.numpy().reshape(transforms.shape[0], transforms.shape[1], 7)
    else:
        try:
            raw = np.asarray(transforms.numpy() if isinstance(transforms, wp.array) else transforms, np.float32)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: transforms must be {expected}, got {type(transforms).__name__}") from None
        if raw.ndim != 3 or raw.shape[2] != 7:
            raise ValueError(f"{where}: transforms must be {expected}, got shape {raw.shape}")
    if raw.shape[0] != num_meshes:
        raise ValueError(f"{where}: transforms has {raw.shape[0]} rows but there are {num_meshes} meshes")
    if raw.shape[1] == 0:
        raise ValueError(f"{where}: transforms must contain at least one pose sample")
    if not np.all(np.isfinite(raw)):
        raise ValueError(f"{where}: transforms must be finite")
    qn = np.linalg.norm(raw[..., 3:].astype(np.float64), axis=-1)
    if np.any(np.abs(qn - 1.0) > 1e-3):
        m, s = np.argwhere(np.abs(qn - 1.0) > 1e-3)[0]
        raise ValueError(f"{where}: transforms[{m}, {s}] has a rotation quaternion of length {qn[m, s]:.6g}; rigid "
                         "poses need unit quaternions (normalise them)")
    if isinstance(transforms, wp.array) and transforms.dtype is wp.transform and transforms.device == device:
        return transforms
    return wp.array(np.ascontiguousarray(raw), dtype=wp.transform, device=device)


def _sign_mode_arg(sign_mode: Any, meshes: list[Any], where: str) -> int:
    try:
        mode = SweptVolumeSignMode(int(sign_mode))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: sign_mode must be a SweptVolumeSignMode, got {sign_mode!r}") from None
    if mode is SweptVolumeSignMode.WINDING_NUMBER:
        for i, m in enumerate(meshes):
            if not m.support_winding_number:
                raise ValueError(f"{where}: meshes[{i}] was not built with support_winding_number=True, which "
                                 "SweptVolumeSignMode.WINDING_NUMBER (the default) needs; rebuild it with "
                                 "wp.Mesh(..., support_winding_number=True) or pass another sign_mode")
    return int(mode)


def _device_arg(device: Any, meshes: list[Any]) -> Any:
    return wp.get_device(device) if device is not None else meshes[0].device


# ------------------------------------------------------------------------------------------------ public API
def _rest_boxes(meshes: list[Any], device: Any) -> tuple[Any, Any]:
    """Per mesh, the (lower, upper) corners of its rest-pose vertices' box, as (M, 3) float arrays."""
    m = len(meshes)
    box_lo = wp.full((m, 3), math.inf, dtype=float, device=device)
    box_hi = wp.full((m, 3), -math.inf, dtype=float, device=device)
    for i, mesh in enumerate(meshes):
        pts = mesh.points if mesh.points.device == device else mesh.points.to(device)
        wp.launch(_sv_rest_box, dim=pts.shape[0], inputs=[pts, i, box_lo, box_hi], device=device, record_tape=False)
    return box_lo, box_hi


def _bounds(meshes: list[Any], xforms: Any, device: Any) -> tuple[np.ndarray, np.ndarray]:
    m = len(meshes)
    box_lo, box_hi = _rest_boxes(meshes, device)
    lo = wp.full(3, math.inf, dtype=float, device=device)
    hi = wp.full(3, -math.inf, dtype=float, device=device)
    wp.launch(_sv_pose_box, dim=(m, xforms.shape[1], 8), inputs=[box_lo, box_hi, xforms, lo, hi], device=device,
              record_tape=False)
    return lo.numpy().astype(np.float64), hi.numpy().astype(np.float64)


def swept_volume_bounds(meshes: Sequence[Any], transforms: Any, padding: float = 0.0, device: Any = None
                        ) -> tuple[Any, Any]:
    """The world-space box holding every mesh at every pose.

    Each mesh's rest-pose vertices give a box; its eight corners are moved by every pose and the union of them all
    is returned (conservative for rotations). Union several results to size a domain that several fields share.

    Args:
        meshes: rest-pose ``wp.Mesh`` objects.
        transforms: per mesh and sample, a rigid pose (see :func:`swept_volume_field`).
        padding: added on every side (world units; negative shrinks).
        device: where to run (default: the first mesh's device).

    Returns:
        ``(lower, upper)`` as vec3.
    """
    where = "swept_volume_bounds"
    ms = _meshes_arg(meshes, where)
    dev = _device_arg(device, ms)
    xforms = _transforms_arg(transforms, len(ms), dev, where)
    lo, hi = _bounds(ms, xforms, dev)
    pad = float(padding)
    return wp.vec3(*(lo - pad).tolist()), wp.vec3(*(hi + pad).tolist())


def _domain(bounds: tuple[np.ndarray, np.ndarray], voxel_size: Any, resolution: Any, lower: Any, upper: Any,
            extra: float, where: str) -> tuple[tuple[int, int, int], np.ndarray, np.ndarray]:
    """Node counts and the positions of the first and last nodes."""
    if voxel_size is not None and resolution is not None:
        raise ValueError(f"{where}: pass either voxel_size or resolution, not both")
    if voxel_size is None and resolution is None:
        raise ValueError(f"{where}: pass voxel_size or resolution")
    if (lower is None) != (upper is None):
        raise ValueError(f"{where}: pass both lower and upper, or neither")
    if voxel_size is not None:
        h = float(voxel_size)
        if not math.isfinite(h) or h <= 0.0:
            raise ValueError(f"{where}: voxel_size must be positive, got {voxel_size}")
        if lower is not None:
            raise ValueError(f"{where}: voxel_size cannot be combined with lower/upper (the domain grows to whole "
                             "cells); pass resolution instead")
        blo, bhi = bounds
        pad = extra + 2.0 * h
        ext = bhi - blo + 2.0 * pad
        cells = np.maximum(np.ceil(ext / h - 1e-6), 1.0)
        lo = blo - pad - 0.5 * (cells * h - ext)
        dims = tuple(int(c) + 1 for c in cells)
        hi = lo + cells * h
    else:
        res = tuple(resolution)
        if len(res) != 3:
            raise ValueError(f"{where}: resolution must have three entries, got {res}")
        if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in res):
            raise TypeError(f"{where}: resolution must be three ints, got {res}")
        if min(res) < 2:
            raise ValueError(f"{where}: resolution must be at least 2 along each axis, got {res}")
        dims = (int(res[0]), int(res[1]), int(res[2]))
        if lower is not None:
            lo = vec3_arg(lower, f"{where}: lower", (0.0, 0.0, 0.0)).astype(np.float64)
            hi = vec3_arg(upper, f"{where}: upper", (0.0, 0.0, 0.0)).astype(np.float64)
            if np.any(hi <= lo):
                raise ValueError(f"{where}: upper must exceed lower on every axis, got {tuple(lo)} and {tuple(hi)}")
        else:
            blo, bhi = bounds
            pad = extra + 2.0 * (bhi - blo) / (np.array(dims, np.float64) - 1.0)
            lo, hi = blo - pad, bhi + pad
    if dims[0] * dims[1] * dims[2] > MAX_NODES:
        raise ValueError(f"{where}: the grid would have {dims} nodes, more than {MAX_NODES}; use a larger voxel_size "
                         "or a smaller resolution")
    return (dims[0], dims[1], dims[2]), lo.astype(np.float32), hi.astype(np.float32)


def _field(meshes: Any, transforms: Any, voxel_size: Any, resolution: Any, lower: Any, upper: Any, sign_mode: Any,
           device: Any, extra: float, where: str) -> tuple[Any, np.ndarray, np.ndarray]:
    ms = _meshes_arg(meshes, where)
    dev = _device_arg(device, ms)
    mode = _sign_mode_arg(sign_mode, ms, where)
    xforms = _transforms_arg(transforms, len(ms), dev, where)
    blo, bhi = _bounds(ms, xforms, dev)
    dims, lo, hi = _domain((blo, bhi), voxel_size, resolution, lower, upper, extra, where)
    spacing = (hi - lo) / (np.array(dims, np.float32) - 1.0)
    # every distance from the grid to a mesh is shorter than the diagonal of the box holding both
    span = np.maximum(hi.astype(np.float64), bhi) - np.minimum(lo.astype(np.float64), blo)
    max_dist = float(1.01 * np.linalg.norm(span) + 1e-6)
    ids = wp.array(np.array([m.id for m in ms], np.uint64), dtype=wp.uint64, device=dev)
    box_lo, box_hi = _rest_boxes(ms, dev)
    field = wp.empty(dims, dtype=float, device=dev)
    wp.launch(_sv_field, dim=dims, inputs=[ids, wp.array(box_lo.numpy(), dtype=wp.vec3, device=dev),
                                           wp.array(box_hi.numpy(), dtype=wp.vec3, device=dev), xforms,
                                           wp.vec3(*lo.tolist()), wp.vec3(*spacing.tolist()), max_dist, mode, field],
              device=dev, record_tape=False)
    return field, lo, hi


def swept_volume_field(meshes: Sequence[Any], transforms: Any, voxel_size: float | None = None, *,
                       resolution: tuple[int, int, int] | None = None, lower: Any = None, upper: Any = None,
                       sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER, device: Any = None
                       ) -> tuple[Any, Any, Any]:
    """The swept field (:func:`swept_volume_sdf`) sampled on a regular grid.

    Negative inside the swept volume, positive outside (``NO_SIGN``: positive everywhere); its zero iso-surface is
    the envelope of the motion through the sampled poses. Not differentiable.

    Args:
        meshes: rest-pose ``wp.Mesh`` objects.
        transforms: per mesh and sample, a rigid pose mapping the mesh's rest frame to the world (unit rotation
            quaternion): a ``wp.array2d`` of ``wp.transform`` of shape (num_meshes, num_samples), or anything NumPy
            reads as shape (num_meshes, num_samples, 7) (translation xyz, then quaternion xyzw).
        voxel_size: the grid spacing on every axis; the domain (the swept bounds padded by two cells) grows
            symmetrically to whole cells. Not with ``lower`` / ``upper``.
        resolution: node counts (nx, ny, nz) instead of ``voxel_size``.
        lower: position of node (0, 0, 0) (with ``resolution``; default: the swept bounds padded by two cells).
        upper: position of node (nx - 1, ny - 1, nz - 1).
        sign_mode: the inside/outside test (:class:`SweptVolumeSignMode`); the default needs meshes built with
            ``support_winding_number=True``.
        device: where to run (default: the first mesh's device).

    Returns:
        ``(field, lower, upper)``: a float32 3-d array of node values and the positions of its first and last nodes
        (vec3).
    """
    with suspend_tapes():
        field, lo, hi = _field(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode, device, 0.0,
                               "swept_volume_field")
    return field, wp.vec3(*lo.tolist()), wp.vec3(*hi.tolist())


def swept_volume_mesh(meshes: Sequence[Any], transforms: Any, voxel_size: float | None = None, *,
                      resolution: tuple[int, int, int] | None = None, lower: Any = None, upper: Any = None,
                      threshold: float = 0.0, sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER,
                      device: Any = None) -> tuple[Any, Any]:
    """A triangle mesh of the swept volume: marching cubes of :func:`swept_volume_field` at ``threshold``.

    With few pose samples for the speed or thickness of the meshes, the envelope shows the separate poses
    ("stroboscopic" dents). The mesh encloses every sampled pose for sure only when ``threshold`` exceeds half the
    grid cell's diagonal.

    Args:
        meshes: rest-pose ``wp.Mesh`` objects.
        transforms: per mesh and sample, a rigid pose (see :func:`swept_volume_field`).
        voxel_size: the grid spacing (see :func:`swept_volume_field`).
        resolution: node counts instead of ``voxel_size``.
        lower: position of node (0, 0, 0); default: the swept bounds padded by ``threshold`` and two cells.
        upper: position of the last node.
        threshold: the level extracted; positive values dilate the envelope outward.
        sign_mode: the inside/outside test; ``NO_SIGN`` needs a positive ``threshold``.
        device: where to run (default: the first mesh's device).

    Returns:
        ``(verts, indices)``: vec3 world positions and a flat int32 array of three indices per triangle.
    """
    where = "swept_volume_mesh"
    try:
        unsigned = SweptVolumeSignMode(int(sign_mode)) is SweptVolumeSignMode.NO_SIGN
    except (TypeError, ValueError):
        raise ValueError(f"{where}: sign_mode must be a SweptVolumeSignMode, got {sign_mode!r}") from None
    thr = float(threshold)
    if unsigned and not thr > 0.0:
        raise ValueError(f"{where}: threshold must be positive with SweptVolumeSignMode.NO_SIGN (an unsigned field "
                         f"is positive everywhere, so its level {thr} is empty), got {thr}")
    with suspend_tapes():
        field, lo, hi = _field(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode, device,
                               max(thr, 0.0), where)
        return IsoSurfaceMarchingCubes.extract(field, thr, lower=lo, upper=hi)
