"""Tile misuse is reported at the user's line with a fix: shapes, non-tile arguments, sizes, launches."""

from __future__ import annotations

import numpy as np
import pytest
from tile_error_check import assert_error_at_line

import treadle as wp
from treadle._src.core.errors import CodegenError


def _build(fn):
    k = wp.kernel(fn, module=f"tiles_err_{fn.__name__}")
    a = wp.zeros((8, 8), dtype=float)
    wp.launch_tiled(k, dim=1, inputs=[a], block_dim=16)


def shape_mismatch(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 4))
    u = wp.tile_load(a, shape=(4, 2))
    wp.tile_store(a, t + u)


def not_a_tile(a: wp.array2d(dtype=float)):
    x = a[0, 0]
    wp.tile_store(a, wp.tile_transpose(x))


def too_large(a: wp.array2d(dtype=float)):
    t = wp.tile_zeros(shape=(1024, 1024), dtype=float)
    wp.tile_store(a, t)


def runtime_shape(a: wp.array2d(dtype=float)):
    n = a.shape[0]
    t = wp.tile_load(a, shape=(n, 2))
    wp.tile_store(a, t)


def wrong_rank(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=8)
    wp.tile_store(a, t)


def bad_keyword(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 2), offest=(0, 0))
    wp.tile_store(a, t)


def extract_oob(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 2))
    a[0, 0] = wp.tile_extract(t, 0, 2)


def extract_negative(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 2))
    a[0, 0] = wp.tile_extract(t, -1, 0)


@wp.struct
class Pair:
    x: float
    n: int


def struct_ones(a: wp.array2d(dtype=float)):
    t = wp.tile_ones(shape=4, dtype=Pair)
    a[0, 0] = wp.tile_extract(t, 0).x


def struct_min(a: wp.array2d(dtype=float)):
    t = wp.tile_zeros(shape=4, dtype=Pair)
    a[0, 0] = wp.tile_extract(wp.tile_min(t), 0).x


def struct_bitwise(a: wp.array2d(dtype=float)):
    t = wp.tile_zeros(shape=4, dtype=Pair)
    t &= t
    a[0, 0] = wp.tile_extract(t, 0).x


@pytest.mark.parametrize("fn, message, line_text", [
    (struct_ones, r"tile_ones\(\) does not support tiles of a Warp struct \(@wp.struct\) type, got Pair", "tile_ones"),
    (struct_min, r"tile_min\(\) does not support tiles of a Warp struct", "wp.tile_min(t)"),
    (struct_bitwise, r"bitwise inplace and binary operators do not support tiles of a Warp struct", "t &= t"),
    (extract_oob, r"tile_extract\(\) index 2 is out of bounds for dimension 1 of extent 2", "tile_extract(t, 0, 2)"),
    (extract_negative, r"index -1 is out of bounds for dimension 0", "tile_extract(t, -1, 0)"),
    (shape_mismatch, r"tile shapes differ: \(2, 4\) and \(4, 2\)", "t + u"),
    (not_a_tile, r"'a' must be a tile, got float32", "tile_transpose(x)"),
    (too_large, r"needs 4194304 bytes, more than the 1048576 bytes a tile may hold", "tile_zeros"),
    (runtime_shape, r"'shape' of tile_load\(\) must be a compile-time constant", "(n, 2)"),
    (wrong_rank, r"a 1-d tile shape \(8,\) for a 2-d array", "shape=8"),
    (bad_keyword, r"unexpected keyword argument 'offest'", "offest"),
])
def test_errors_point_at_the_user_line(fn, message, line_text):
    with pytest.raises(CodegenError, match=message) as info:
        _build(fn)
    text = str(info.value)
    assert "test_tile_errors.py" in text and line_text in text


@wp.kernel
def trivial(a: wp.array(dtype=float)):
    i, _ = wp.tid()
    a[i] = 1.0


def test_launch_tiled_needs_block_dim_by_keyword():
    a = wp.zeros(2, dtype=float)
    with pytest.raises(RuntimeError, match="block dimension as a keyword"):
        wp.launch_tiled(trivial, dim=2, inputs=[a])
    with pytest.raises(ValueError, match="block_dim must be a positive int"):
        wp.launch_tiled(trivial, dim=2, inputs=[a], block_dim=0)
    wp.launch_tiled(trivial, [2], [a], block_dim=8)
    np.testing.assert_array_equal(a.numpy(), [1, 1])


def test_tile_annotations_and_is_tile():
    t = wp.tile[float, 4, 8]
    assert wp.types.is_tile(t) and t.shape == (4, 8) and t == wp.tile(dtype=wp.float32, shape=(4, 8))
    assert wp.tile(dtype=float, shape=5, storage="shared").shape == (5,)
    assert not wp.types.is_tile(wp.vec3) and not wp.types.is_tile(wp.zeros(2))
    with pytest.raises(ValueError, match="1 to 4 positive integer extents"):
        wp.tile(dtype=float, shape=(0, 2))
    with pytest.raises(RuntimeError, match="inside a kernel only"):
        wp.tile(1.0)



def atomic_int8(a: wp.array(dtype=wp.int8)):
    wp.tile_atomic_add(a, wp.tile_load(a, shape=4))


def atomic_bool(a: wp.array(dtype=wp.bool)):
    wp.tile_atomic_add(a, wp.tile_load(a, shape=4))


@pytest.mark.parametrize("fn, dtype", [(atomic_int8, wp.int8), (atomic_bool, wp.bool)])
def test_tile_atomic_add_refuses_narrow_integers_and_bools(fn, dtype):
    assert_error_at_line(fn, r"tile_atomic_add\(\) only supports .* got " + dtype.__name__,
                         "wp.tile_atomic_add(a, wp.tile_load(a, shape=4))", [wp.zeros(4, dtype=dtype)], "tiles_err")
