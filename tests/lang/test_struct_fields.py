"""Struct layout and field values: empty structs nested in others keep the C++ layout (the kernel reads the
fields after them), struct inheritance is a clear error, and scalar fields return the kind of value they were
given (the field's scalar type by default, a Python number after a Python number is assigned).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import treadle as wp


@wp.struct
class SfEmpty:
    pass


@wp.struct
class SfNested:
    a: SfEmpty
    b: SfEmpty
    c: SfEmpty
    z: int
    w: float


@wp.kernel(module="unique")
def sf_read(s: SfNested, out: wp.array(dtype=float)):
    out[0] = float(s.z)
    out[1] = s.w


def test_empty_structs_keep_the_layout() -> None:
    assert ctypes.sizeof(SfEmpty.ctype) == 1  # as sizeof() of an empty C++ struct
    s = SfNested()
    s.z = 42
    s.w = 2.5
    out = wp.zeros(2, dtype=float)
    wp.launch(sf_read, dim=1, inputs=[s, out])
    np.testing.assert_array_equal(out.numpy(), [42.0, 2.5])
    arr = wp.array([s, s], dtype=SfNested)
    assert arr.numpy()["z"].tolist() == [42, 42]


def test_struct_inheritance_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="must be defined as base classes"):

        @wp.struct
        class Child(SfNested):  # type: ignore[misc,valid-type]
            y: int


@wp.struct
class SfScalars:
    u8: wp.uint8
    i32: wp.int32
    f16: wp.float16
    f64: wp.float64
    d: float = 1.5


def test_scalar_fields_keep_the_kind_of_value() -> None:
    s = SfScalars()
    assert isinstance(s.u8, wp.uint8) and isinstance(s.f16, wp.float16) and isinstance(s.f64, wp.float64)
    assert s.d == 1.5 and isinstance(s.d, float)  # a class default given as a Python number
    s.i32 = wp.int32(-7)
    s.f64 = wp.float64(2.718)
    assert isinstance(s.i32, wp.int32) and int(s.i32) == -7
    assert isinstance(s.f64, wp.float64) and float(s.f64) == 2.718
    s.i32 = 42
    s.f64 = 1.5
    assert type(s.i32) is int and type(s.f64) is float
    c = SfScalars()
    c.i32 = 5
    copy = SfScalars(i32=c.i32)
    assert copy.i32 == 5
    assert repr(SfScalars()).startswith("SfScalars(u8=0, i32=0, f16=0.0")
