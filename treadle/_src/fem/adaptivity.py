"""Building adaptive sparse grids: from a hierarchy of volumes, or by refining a coarse grid after a field.

Cells are kept on the host as ``(origin, level)`` pairs in finest-voxel coordinates (see
:mod:`.geometry.adaptive_nanogrid`). *Grading* splits coarse cells until every cell's neighbours (across faces:
``"face"``; across faces, edges and corners: ``"vertex"``) are at most one level finer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

from . import operator as op
from .domain import Cells
from .geometry.adaptive_nanogrid import AdaptiveNanogrid
from .geometry.nanogrid import _find, _pack
from .interpolate import interpolate
from .pic import PicQuadrature
from .types import Field, Sample

_CHILDREN = np.stack(np.meshgrid([0, 1], [0, 1], [0, 1], indexing="ij"), -1).reshape(8, 3).astype(np.int64)


def _split(ijk: np.ndarray, levels: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replace the cells ``which`` by their eight children."""
    lv = levels[which] - 1
    kids = (ijk[which][:, None, :] + (np.int64(1) << lv)[:, None, None] * _CHILDREN[None]).reshape(-1, 3)
    keep = np.ones(len(ijk), dtype=bool)
    keep[which] = False
    return np.concatenate([ijk[keep], kids]), np.concatenate([levels[keep], np.repeat(lv, 8)])


def _neighbour_min_level(ijk: np.ndarray, levels: np.ndarray, level_count: int, mode: str) -> np.ndarray:
    """Per cell, the finest level among the cells touching it (its own level where it has no neighbour)."""
    out = levels.copy()
    tables = {}
    for m in range(level_count):
        keys = _pack(ijk[levels == m])
        order = np.argsort(keys)
        tables[m] = (keys[order], np.nonzero(levels == m)[0][order])
    for lvl in np.unique(levels):
        if lvl < 2:
            continue
        cells = np.nonzero(levels == lvl)[0]
        h = 1 << int(lvl)
        g = np.arange(-1, h + 1)
        shell = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
        outside = (shell < 0) | (shell >= h)
        n_out = outside.sum(axis=1)
        shell = shell[(n_out == 1) if mode == "face" else (n_out >= 1)]
        vox = ijk[cells][:, None, :] + shell[None]  # (cells, shell, 3)
        best = np.full(vox.shape[:2], level_count, dtype=np.int64)
        for m in range(level_count):
            found = _find(*tables[m], _pack((vox >> m) << m))
            best = np.where((found >= 0) & (best == level_count), m, best)
        out[cells] = np.minimum(out[cells], best.min(axis=1))
    return out


def _grade(ijk: np.ndarray, levels: np.ndarray, level_count: int, grading: str | None) -> tuple[np.ndarray, ...]:
    if grading is None:
        return ijk, levels
    if grading not in ("face", "vertex"):
        raise ValueError(f"grading must be None, 'face' or 'vertex', got {grading!r}")
    while True:
        finest = _neighbour_min_level(ijk, levels, level_count, grading)
        which = np.nonzero(levels - finest > 1)[0]
        if len(which) == 0:
            return ijk, levels
        ijk, levels = _split(ijk, levels, which)


def _make(ijk: np.ndarray, levels: np.ndarray, level_count: int, mat: np.ndarray, translation: np.ndarray,
          device: Any, scalar_type: Any = wp.float32) -> AdaptiveNanogrid:
    if len(ijk) == 0:
        raise ValueError("the adaptive grid has no cell left")
    pts = wp.array(np.ascontiguousarray(ijk, dtype=np.int32), dtype=wp.vec3i, device=device)
    grid = wp.Volume.allocate_by_voxels(pts, transform=mat, translation=translation, device=device)
    vox = grid.get_voxels().numpy().astype(np.int64)
    keys = _pack(ijk)
    order = np.argsort(keys)
    cell_level = levels[_find(keys[order], order, _pack(vox))]
    return AdaptiveNanogrid(grid, wp.array(cell_level.astype(np.int32), dtype=int, device=device), level_count,
                            scalar_type=scalar_type)


def adaptive_nanogrid_from_hierarchy(grids: list[Any], grading: str | None = None,
                                     temporary_store: Any = None) -> AdaptiveNanogrid:
    """An adaptive grid made of the voxels of a hierarchy of volumes.

    Args:
        grids: volumes from finest to coarsest: a voxel ``ijk`` of ``grids[l]`` is a cell of level ``l`` covering
            the finest voxels ``2**l * ijk`` to ``2**l * (ijk + 1) - 1`` (placed in the finest volume's space).
            A voxel holding finer cells is left out (they cover it); other overlaps are not allowed.
        grading: ``None``, ``"face"`` or ``"vertex"`` (see the module documentation).
        temporary_store: accepted for compatibility.

    """
    if not grids:
        raise ValueError("adaptive_nanogrid_from_hierarchy needs at least one volume")
    ijk = np.concatenate([g.get_voxels().numpy().astype(np.int64) << lvl for lvl, g in enumerate(grids)])
    levels = np.concatenate([np.full(g.get_voxel_count(), lvl, dtype=np.int64) for lvl, g in enumerate(grids)])
    # a coarse voxel holding finer cells is covered by them: it is dropped
    keep = np.ones(len(ijk), dtype=bool)
    for lvl in range(1, len(grids)):
        coarse = np.nonzero(levels == lvl)[0]
        finer = ijk[levels < lvl]
        if len(coarse) and len(finer):
            keys = _pack(ijk[coarse])
            order = np.argsort(keys)
            hit = _find(keys[order], order, _pack((finer >> lvl) << lvl))
            keep[coarse[hit[hit >= 0]]] = False
    ijk, levels = ijk[keep], levels[keep]
    fine = grids[0]._grid
    ijk, levels = _grade(ijk, levels, len(grids), grading)
    return _make(ijk, levels, len(grids), np.array(fine.mat).reshape(3, 3), np.array(fine.translation).reshape(3),
                 grids[0].device)


@op.integrand
def _field_value(s: Sample, f: Field):
    return f(s)


def _sample_field(field: Any, x: np.ndarray, device: Any) -> np.ndarray:
    domain = getattr(field, "domain", None)
    if domain is None:
        domain = Cells(field.geometry)
    pos = wp.array(x.astype(np.float32), dtype=wp.vec3, device=device)
    out = wp.zeros(len(x), dtype=float, device=device)
    interpolate(_field_value, dest=out, at=PicQuadrature(domain, pos), fields={"f": field})
    return out.numpy()


def adaptive_nanogrid_from_field(coarse_grid: Any, level_count: int, refinement_field: Any,
                                 samples_per_voxel: int = 64, grading: str | None = None,
                                 temporary_store: Any = None) -> AdaptiveNanogrid:
    """An adaptive grid refining the voxels of ``coarse_grid`` as a scalar field asks.

    Each cell (at first the voxels of ``coarse_grid``, at the coarsest level ``level_count - 1``) samples the field
    at ``samples_per_voxel`` uniformly random points (drawn from a fixed seed: the result is reproducible). A cell where every
    sample is negative is removed; otherwise the smallest sample ``r`` (0 where negative) asks for level
    ``min(floor(r * level_count), level_count - 1)`` (0 the finest, 1 the coarsest), and the cell is split into eight
    while it is coarser than that.

    Args:
        coarse_grid: the volume whose voxels are refined (no cell is added outside them).
        level_count: number of levels.
        refinement_field: a scalar field (``fem.ImplicitField``, a discrete field...) over a domain holding the
            coarse grid.
        samples_per_voxel: samples per cell.
        grading: ``None``, ``"face"`` or ``"vertex"`` (see the module documentation).
        temporary_store: accepted for compatibility.

    """
    level_count = int(level_count)
    if level_count < 1:
        raise ValueError(f"level_count must be at least 1, got {level_count}")
    top = level_count - 1
    g = coarse_grid._grid
    cmat, ct = np.array(g.mat).reshape(3, 3), np.array(g.translation).reshape(3)
    mat = cmat / float(1 << top)
    t = ct - cmat @ np.full(3, 0.5) + mat @ np.full(3, 0.5)  # the finest lattice starts at the coarse corner
    ijk = coarse_grid.get_voxels().numpy().astype(np.int64) << top
    levels = np.full(len(ijk), top, dtype=np.int64)
    # uniformly random points, drawn afresh for each cell from a fixed seed (the result is reproducible)
    rng = np.random.default_rng(0)
    n_samples = max(1, int(samples_per_voxel))
    origin = t - mat @ np.full(3, 0.5)
    device = coarse_grid.device
    for lvl in range(top, -1, -1):
        cells = np.nonzero(levels == lvl)[0]
        if len(cells) == 0:
            continue
        h = float(1 << lvl)
        lattice = ijk[cells][:, None, :] + h * rng.random((len(cells), n_samples, 3))
        x = origin + lattice.reshape(-1, 3) @ mat.T
        r = _sample_field(refinement_field, x, device).reshape(len(cells), -1)
        rmin, rmax = r.min(axis=1), r.max(axis=1)
        want = np.minimum(np.floor(np.maximum(rmin, 0.0) * level_count), top)
        drop = rmax < 0
        split = ~drop & (want < lvl)
        keep = np.ones(len(ijk), dtype=bool)
        keep[cells[drop]] = False
        split_mask = np.zeros(len(ijk), dtype=bool)
        split_mask[cells[split]] = True
        ijk, levels, split_mask = ijk[keep], levels[keep], split_mask[keep]
        ijk, levels = _split(ijk, levels, np.nonzero(split_mask)[0])
    ijk, levels = _grade(ijk, levels, level_count, grading)
    return _make(ijk, levels, level_count, mat, t, device)
