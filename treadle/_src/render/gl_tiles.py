"""Tiled cameras and pixel read-back for the OpenGL renderer.

Tiles are viewports of the one offscreen image, each with its own instances and camera; by default they form a
grid with tile 0 at the top left. :func:`read_pixels_into` turns the framebuffer (bottom row first, as OpenGL keeps
it) into top-row-first images, per tile when asked, and writes them into the caller's array on its device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

import treadle as wp

from .common import to_numpy


@dataclass
class Tile:
    """One viewport: lower-left pixel ``(x, y)`` in OpenGL window coordinates, size, instances and camera."""

    instances: list[int]
    x: int
    y: int
    width: int
    height: int
    projection_matrix: np.ndarray | None = None
    view_matrix: np.ndarray | None = None


def _matrices(values: list[Any] | None, count: int, name: str) -> list[np.ndarray | None]:
    if values is None:
        return [None] * count
    if len(values) != count:
        raise ValueError(f"{name} must have one entry per tile ({count}), got {len(values)}")
    out: list[np.ndarray | None] = []
    for m in values:
        if m is None:
            out.append(None)
            continue
        arr = np.asarray(to_numpy(m, np.float64))
        if arr.size != 16:
            raise ValueError(f"each of {name} must be a 4x4 matrix or 16 numbers, got {arr.size} values")
        out.append(arr.reshape(4, 4))
    return out


def layout_tiles(renderer: Any, instances: list[list[int]], rescale_window: bool, tile_width: int | None,
                 tile_height: int | None, tile_ncols: int | None, tile_nrows: int | None,
                 tile_positions: list[tuple[int, int]] | None, tile_sizes: list[tuple[int, int]] | None,
                 projection_matrices: list[Any] | None, view_matrices: list[Any] | None) -> list[Tile]:
    """The tiles of :meth:`OpenGLRenderer.setup_tiled_rendering` (resizing the renderer's image if asked)."""
    n = len(instances)
    if n == 0:
        raise ValueError("instances must hold one list of instance ids per tile (at least one tile)")
    ncols = int(tile_ncols) if tile_ncols else int(math.ceil(math.sqrt(n)))
    nrows = int(tile_nrows) if tile_nrows else int(math.ceil(n / ncols))
    if ncols * nrows < n:
        raise ValueError(f"{ncols} x {nrows} tiles cannot hold {n}")
    tw = int(tile_width) if tile_width else renderer.screen_width // ncols
    th = int(tile_height) if tile_height else renderer.screen_height // nrows
    if tile_sizes is not None:
        if len(tile_sizes) != n:
            raise ValueError(f"tile_sizes must have one (width, height) per tile ({n}), got {len(tile_sizes)}")
        sizes = [(int(w), int(h)) for w, h in tile_sizes]
    else:
        sizes = [(tw, th)] * n
    if rescale_window:
        renderer._resize_image(ncols * tw, nrows * th)
    if tile_positions is not None:
        if len(tile_positions) != n:
            raise ValueError(f"tile_positions must have one (x, y) per tile ({n}), got {len(tile_positions)}")
        positions = [(int(x), int(y)) for x, y in tile_positions]
    else:
        positions = [((i % ncols) * tw, renderer.screen_height - (i // ncols + 1) * th) for i in range(n)]
    projs = _matrices(projection_matrices, n, "projection_matrices")
    views = _matrices(view_matrices, n, "view_matrices")
    tiles = []
    for i in range(n):
        (x, y), (w, h) = positions[i], sizes[i]
        if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > renderer.screen_width or y + h > renderer.screen_height:
            raise ValueError(f"tile {i} at ({x}, {y}) of size {w} x {h} does not fit the "
                             f"{renderer.screen_width} x {renderer.screen_height} image")
        tiles.append(Tile([int(k) for k in instances[i]], x, y, w, h, projs[i], views[i]))
    return tiles


def _linear_depth(window_depth: np.ndarray, near: float, far: float) -> np.ndarray:
    """Distance along the view axis from a perspective depth buffer value in [0, 1]."""
    z = 2.0 * window_depth.astype(np.float64) - 1.0
    return (2.0 * near * far / (far + near - z * (far - near))).astype(np.float32)


def read_pixels_into(renderer: Any, target: Any, split_up_tiles: bool, mode: str, use_uint8: bool) -> bool:
    """The body of :meth:`OpenGLRenderer.get_pixels` (the context is current and the frame finished)."""
    if mode not in ("rgb", "depth"):
        raise ValueError(f"mode must be 'rgb' or 'depth', got {mode!r}")
    fbo = renderer._fbo
    if mode == "rgb":
        image: np.ndarray = fbo.read_color()[::-1, :, :3]
        if not use_uint8:
            image = image.astype(np.float32) * np.float32(1.0 / 255.0)
    else:
        image = _linear_depth(fbo.read_depth()[::-1], renderer.camera_near_plane, renderer.camera_far_plane)[..., None]
    want_dtype = np.uint8 if (use_uint8 and mode == "rgb") else np.float32
    tiles = renderer._tiles
    if tiles and split_up_tiles:
        size = (tiles[0].width, tiles[0].height)
        if any((t.width, t.height) != size for t in tiles):
            raise ValueError("split_up_tiles needs all tiles of one size; read the whole image with "
                             "split_up_tiles=False")
        height = fbo.height
        image = np.stack([image[height - t.y - t.height:height - t.y, t.x:t.x + t.width] for t in tiles])
    image = np.ascontiguousarray(image, dtype=want_dtype)
    _write(target, image, "uint8" if want_dtype is np.uint8 else "float32")
    return True


def _write(target: Any, image: np.ndarray, dtype_name: str) -> None:
    shape = tuple(image.shape)
    if isinstance(target, wp.array):
        want = wp.uint8 if dtype_name == "uint8" else wp.float32
        if target.dtype is not want or tuple(target.shape) != shape:
            raise ValueError(f"get_pixels needs a wp.array of dtype {dtype_name} and shape {shape}, got dtype "
                             f"{getattr(target.dtype, '__name__', target.dtype)} and shape {tuple(target.shape)}")
        if target.device.is_cpu and target.is_contiguous:
            target.numpy()[...] = image
        else:
            wp.copy(target, wp.array(image, dtype=want, device="cpu"))
        return
    if isinstance(target, np.ndarray):
        if target.dtype != np.dtype(dtype_name) or target.shape != shape:
            raise ValueError(f"get_pixels needs an array of dtype {dtype_name} and shape {shape}, got dtype "
                             f"{target.dtype} and shape {target.shape}")
        target[...] = image
        return
    raise TypeError(f"target_image must be a wp.array or a NumPy array, got {type(target).__name__}")
