"""The host API of ``Volume``: constructors, grid types, topology queries, aliasing, feature arrays, rebuilds."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import treadle as wp
from treadle._src.volume import build as B
from treadle._src.volume import nanovdb as nv


def _tiles(vol):
    return {tuple(t) for t in vol.get_tiles().numpy().tolist()}


def test_allocate_covers_the_box():
    vol = wp.Volume.allocate(min=[0, 0, 0], max=[10, 3, 3], voxel_size=0.5, bg_value=2.0, translation=(1, 2, 3))
    assert _tiles(vol) == {(0, 0, 0), (8, 0, 0)}
    assert vol.get_voxel_count() == 1024 and vol.get_tile_count() == 2
    world = wp.Volume.allocate(min=[0.2, 0, 0], max=[7.6, 3, 3], voxel_size=1.0, bg_value=0.0,
                               points_in_world_space=True)
    assert _tiles(world) == {(0, 0, 0), (8, 0, 0)}  # 7.6 is nearest to voxel 8
    stats = vol.get_active_stats()
    assert (stats.voxel_count, stats.leaf_node_count, stats.lower_node_count, stats.upper_node_count) == (1024, 2, 1, 1)


def test_tile_and_voxel_points_index_and_world():
    ijk = np.array([[0, 0, 0], [9, 0, 0], [-3, 20, 5]], dtype=np.int32)
    a = wp.Volume.allocate_by_tiles(wp.array(ijk, dtype=wp.vec3i), voxel_size=1.0)
    b = wp.Volume.allocate_by_tiles(wp.array(ijk), voxel_size=1.0)  # N x 3 int32
    assert _tiles(a) == _tiles(b) == {(0, 0, 0), (8, 0, 0), (-8, 16, 0)}
    # world points with voxel size and translation: nearest voxel centre
    world = np.array([[0.4, 0.0, 0.0], [0.6, 0.0, 0.0], [-0.6, 0.0, 0.0], [-0.5, 0.0, 0.0]], np.float32) * 2.0 + 1.0
    v = wp.Volume.allocate_by_voxels(wp.array(world, dtype=wp.vec3), voxel_size=2.0, translation=(1.0, 1.0, 1.0))
    assert sorted(map(tuple, v.get_voxels().numpy().tolist())) == [(-1, 0, 0), (0, 0, 0), (1, 0, 0)]
    mask = wp.array(np.array([1, 0, 1], np.int32))
    m = wp.Volume.allocate_by_tiles(wp.array(ijk, dtype=wp.vec3i), voxel_size=1.0, point_mask=mask)
    assert _tiles(m) == {(0, 0, 0), (-8, 16, 0)}
    with pytest.raises(RuntimeError, match="point"):
        wp.Volume.allocate_by_tiles(wp.zeros(3, dtype=wp.mat22), voxel_size=1.0)
    with pytest.raises(ValueError, match="voxel_size"):
        wp.Volume.allocate_by_tiles(wp.array(ijk, dtype=wp.vec3i))
    with pytest.raises(ValueError, match="either"):
        wp.Volume.allocate_by_tiles(wp.array(ijk, dtype=wp.vec3i), voxel_size=1.0, transform=np.eye(3))


@pytest.mark.parametrize("bg, dtype, type_str", [
    (None, None, "Index"), (3, wp.int32, "int32"), (1.5, wp.float32, "float"), (wp.float64(2.0), wp.float64, "double"),
    (wp.int64(5), wp.int64, "int64"), (wp.uint32(5), wp.uint32, "uint32"), ([1, 2, 3], wp.vec3f, "Vec3f"),
    (wp.vec3d(1, 2, 3), wp.vec3d, "Vec3d"), ((1, 2, 3, 4), wp.vec4f, "Vec4f"), (wp.vec4d(1, 2, 3, 4), wp.vec4d, "Vec4d"),
])
def test_background_selects_the_grid_type(bg, dtype, type_str):
    vol = wp.Volume.allocate(min=[0, 0, 0], max=[1, 1, 1], voxel_size=1.0, bg_value=bg)
    assert vol.dtype is dtype and vol.get_grid_info().type_str == type_str and vol.is_index == (bg is None)
    g = nv.parse_grid(vol.array().numpy(), 0, "t")
    if bg is not None:
        want = np.asarray(getattr(bg, "value", bg), dtype=g.layout.numpy_value).reshape(-1)
        np.testing.assert_array_equal(g.background(), want)
        np.testing.assert_array_equal(g.leaf_values().reshape(512, -1)[0], want)  # voxels start at the background


def test_bad_background_and_numpy_shapes():
    with pytest.raises(TypeError, match="bool"):
        wp.Volume.allocate(min=[0, 0, 0], max=[1, 1, 1], voxel_size=1.0, bg_value=True)
    with pytest.raises(RuntimeError, match="3-d array"):
        wp.Volume.load_from_numpy(np.zeros((4, 4)))
    vi = wp.Volume.load_from_numpy(np.arange(27).reshape(3, 3, 3), bg_value=-1)
    assert vi.dtype is wp.int32 and vi.get_voxel_count() == 512


def test_outputs_into_given_arrays():
    vol = wp.Volume.allocate_by_voxels(wp.array(np.array([[0, 0, 0], [9, 1, 2]], np.int32), dtype=wp.vec3i),
                                       voxel_size=1.0)
    out = wp.zeros(2, dtype=wp.vec3i)
    assert vol.get_voxels(out) is out
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 0], [9, 1, 2]])
    out2 = wp.zeros((2, 3), dtype=wp.int32)
    vol.get_tiles(out2)
    np.testing.assert_array_equal(out2.numpy(), [[0, 0, 0], [8, 0, 0]])
    bigger = wp.full(3, wp.vec3i(-9, -9, -9), dtype=wp.vec3i)  # rows beyond the count are left alone
    vol.get_voxels(bigger)
    np.testing.assert_array_equal(bigger.numpy(), [[0, 0, 0], [9, 1, 2], [-9, -9, -9]])
    with pytest.raises(RuntimeError, match="2 vec3i"):
        vol.get_voxels(wp.zeros(1, dtype=wp.vec3i))


@wp.kernel
def _store_one(vid: wp.uint64):
    wp.volume_store_f(vid, 1, 1, 1, 42.0)


def test_aliasing_and_copies():
    vol = wp.Volume.load_from_numpy(np.zeros((3, 3, 3), np.float32))
    alias = wp.Volume(vol.array(), copy=False)
    copy = wp.Volume(vol.array())
    assert alias.id == vol.id and copy.id != vol.id
    wp.launch(_store_one, 1, inputs=[vol.id])
    val = lambda v: nv.parse_grid(v.array().numpy(), 0, "t").leaf_values()[0, 64 + 8 + 1]  # noqa: E731
    assert val(alias) == 42.0 and val(copy) == 0.0
    with pytest.raises(RuntimeError, match="already exists"):
        wp.Volume.load_from_address(vol.id)
    raw = wp.array(copy.array().numpy(), dtype=wp.uint8)  # grid bytes no volume owns
    addr = wp.Volume.load_from_address(raw.ptr)
    assert addr.id == raw.ptr and addr.get_grid_info().size_in_bytes == raw.size
    wp.launch(_store_one, 1, inputs=[addr.id])
    assert nv.parse_grid(raw.numpy(), 0, "t").leaf_values()[0, 64 + 8 + 1] == 42.0
    with pytest.raises(TypeError, match="uint8"):
        wp.Volume(wp.zeros(10, dtype=float))
    with pytest.raises(nv.NanoVDBError, match="Volume data"):
        wp.Volume(wp.zeros(1000, dtype=wp.uint8))


def _with_blind(buf: np.ndarray, values: np.ndarray, name: str) -> np.ndarray:
    """A copy of a grid with one blind-data array appended (metadata record, then the values)."""
    size = len(buf)
    meta_at = size
    data_at = meta_at + nv.BLIND_META_SIZE
    total = data_at + values.nbytes
    out = np.zeros(total, np.uint8)
    out[:size] = buf
    struct.pack_into("<qQIIII", out, meta_at, data_at - meta_at, len(values), values.itemsize, 0, 0, nv.FLOAT)
    out[meta_at + 32:meta_at + 32 + len(name)] = np.frombuffer(name.encode(), np.uint8)
    out[data_at:] = values.view(np.uint8)
    struct.pack_into("<Q", out, nv.OFF_GRID_SIZE, total)
    struct.pack_into("<qI", out, nv.OFF_BLIND_OFFSET, meta_at, 1)
    return out


def test_feature_arrays():
    o = B.leaf_origins_of(np.zeros((1, 3), np.int32))
    buf = B.build_grid(nv.FLOAT, o, B.full_masks(1), None, np.array([0.0]), np.eye(3), np.zeros(3))
    values = np.arange(10, dtype=np.float32) * 0.5
    vol = wp.Volume._from_bytes(_with_blind(buf, values, "radius"))
    assert vol.get_feature_array_count() == 1
    info = vol.get_feature_array_info(0)
    assert (info.name, info.value_size, info.value_count, info.type_str) == ("radius", 4, 10, "float")
    arr = vol.feature_array(0)
    assert arr.dtype is wp.float32 and info.ptr == arr.ptr
    np.testing.assert_array_equal(arr.numpy(), values)
    np.testing.assert_array_equal(vol.feature_array(0, dtype=wp.uint32).numpy(), values.view(np.uint32))
    with pytest.raises(IndexError, match="feature index 1"):
        vol.feature_array(1)
    broken = _with_blind(buf, values, "radius")
    struct.pack_into("<Q", broken, len(buf) + 8, 10**6)  # value count beyond the grid
    with pytest.raises(nv.NanoVDBError, match="blind-data array 0"):
        wp.Volume._from_bytes(broken)


def test_rebuild_in_place_within_capacity():
    pts = wp.array(np.array([[0, 0, 0], [9, 0, 0]], np.int32), dtype=wp.vec3i)
    status = wp.zeros(1, dtype=wp.uint32)
    vol = wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, bg_value=1.0, max_tiles=4, status=status)
    assert vol.is_rebuildable and int(status.numpy()[0]) == wp.Volume.REBUILD_SUCCESS
    info = vol.get_rebuild_info()
    assert (info.kind, info.max_leaf_node_count) == ("tiles", 4)
    vid = vol.id
    vol.rebuild(wp.array(np.array([[0, 0, 0], [20, 0, 0], [33, 0, 0]], np.int32), dtype=wp.vec3i), status=status)
    assert vol.id == vid and int(status.numpy()[0]) == 0 and _tiles(vol) == {(0, 0, 0), (16, 0, 0), (32, 0, 0)}
    too_many = wp.array(np.arange(0, 80, 8, dtype=np.int32).repeat(3).reshape(-1, 3))
    vol.rebuild(too_many, status=status)
    assert int(status.numpy()[0]) & wp.Volume.REBUILD_LEAF_CAPACITY_EXCEEDED
    assert _tiles(vol) == {(0, 0, 0), (16, 0, 0), (32, 0, 0)}  # unchanged
    vox = wp.Volume.allocate_by_voxels(pts, voxel_size=1.0, rebuildable=True)
    assert vox.get_rebuild_info().kind == "voxels"
    vox.rebuild(wp.array(np.array([[1, 1, 1]], np.int32), dtype=wp.vec3i))
    # a rebuildable index volume counts the voxels it reserved (per-voxel arrays sized by it fit any rebuild)
    assert vox.get_voxel_count() == 2 and vox.get_active_stats().voxel_count == 1
    idx = wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, bg_value=None, max_tiles=4)
    assert idx.get_voxel_count() == 4 * 512 and idx.get_active_stats().voxel_count == 2 * 512
    with pytest.raises(RuntimeError, match="not rebuildable"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=1.0).rebuild(pts)
    with pytest.raises(ValueError, match="max_tiles"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, max_tiles=0)
