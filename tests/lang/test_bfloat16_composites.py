"""Vectors, matrices and struct fields of bfloat16: values are stored as rounded bfloat16 bit patterns."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import treadle as wp
from treadle._src.types import scalars
from treadle._src.types.vector import decode_half, encode_half


def _bf16_bits(x: float) -> int:
    """Round-to-nearest-even bfloat16 bits of a float32 value (the reference computation)."""
    b = int(np.float32(x).view(np.uint32))
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


VALUES = [0.0, 1.0, -3.0, 1.5, 3.140625, 1.0039062, 1e-3, 65504.0, -2.5e30]


@pytest.mark.parametrize("ml_dtypes_dtype", [True, False])
def test_bit_patterns_round_to_nearest_even(monkeypatch, ml_dtypes_dtype):
    if not ml_dtypes_dtype:  # the path without ml_dtypes (raw 16-bit storage dtype)
        monkeypatch.setattr(scalars.bfloat16, "_np_", np.dtype(np.uint16))
    elif scalars.bfloat16._np_.kind != "V":
        pytest.skip("ml_dtypes is not installed")
    bits = encode_half(VALUES, scalars.bfloat16)
    assert bits == [_bf16_bits(v) for v in VALUES]
    back = [decode_half(b, scalars.bfloat16) for b in bits]
    assert back == [float(np.uint32(_bf16_bits(v) << 16).view(np.float32)) for v in VALUES]
    assert back[3] == 1.5 and back[5] == 1.0  # exact, and rounded to 8 significant bits


def test_vectors_and_matrices_hold_rounded_values():
    v3 = wp.types.vector(3, wp.bfloat16)
    v = v3(1.5, -3.0, 1.0039062)
    assert list(v) == [1.5, -3.0, 1.0] and v.x == 1.5
    v.z = 2.75
    assert v[2] == 2.75
    raw = np.frombuffer(memoryview(v), dtype=np.uint16).tolist()
    assert raw == [_bf16_bits(1.5), _bf16_bits(-3.0), _bf16_bits(2.75)]
    m = wp.types.matrix((2, 3), wp.bfloat16)(*range(6))
    assert [[m[i, j] for j in range(3)] for i in range(2)] == [[0, 1, 2], [3, 4, 5]]
    assert v3(42) == v3(42.0, 42.0, 42.0)


@pytest.mark.parametrize("make", [lambda t: wp.types.vector(4, t), lambda t: wp.types.matrix((3, 2), t)])
def test_full_and_list_round_trip(make):
    t = make(wp.bfloat16)
    fill = t(42)
    a = wp.full((3, 2), fill, dtype=t)
    items = a.list()
    assert len(items) == 6 and all(isinstance(x, t) and isinstance(x, ctypes.Array) for x in items)
    assert all(x == fill for x in items)
    if scalars.bfloat16._np_.kind == "V":
        np.testing.assert_array_equal(a.numpy().astype(np.float32), np.full((3, 2, *t._shape_), 42.0, np.float32))


def test_struct_fields():
    @wp.struct
    class Sample:
        h: wp.bfloat16
        f: wp.float16

    s = Sample()
    s.h = 3.141592
    s.f = 0.5
    assert s.h == 3.140625 and s.f == 0.5
