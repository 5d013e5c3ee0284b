"""Type predicates and helpers (``treadle._src.types.typeutil`` and the public ``treadle.types``)."""

from __future__ import annotations

import ctypes
import typing

import numpy as np
import pytest

from treadle._src.core import abi
from treadle._src.types import scalars as S
from treadle._src.types import typeutil as T
from treadle._src.types.matrix import mat22, mat33, mat33d, mat44h, matrix
from treadle._src.types.quat import quat, quatd, quath, spatial_matrix, spatial_vector, transform, transformd
from treadle._src.types.struct import struct
from treadle._src.types.vector import vec3, vec3d, vec3h, vec3i, vec4, vector


@struct
class Pt:
    x: float
    v: vec3


def _arr(dtype: typing.Any, ndim: int = 1) -> typing.Any:
    A = pytest.importorskip("treadle._src.lang.array")
    return A.array(dtype=dtype, ndim=ndim)


# ----------------------------------------------------------------------------------------------------------------
# type_is_* (types)


def test_type_is_predicates() -> None:
    assert T.type_is_int(S.int32) and T.type_is_int(S.uint64) and T.type_is_int(int)
    assert not T.type_is_int(S.bool) and not T.type_is_int(bool) and not T.type_is_int(S.float32)
    assert T.type_is_float(S.float16) and T.type_is_float(float) and not T.type_is_float(vec3)
    assert T.type_is_scalar(S.float32) and T.type_is_scalar(float) and T.type_is_scalar(S.int8)
    assert not T.type_is_scalar(S.bool) and not T.type_is_scalar(bool) and not T.type_is_scalar(vec3)
    assert T.type_is_value(S.float32) and T.type_is_value(float) and T.type_is_value(S.bool)
    assert T.type_is_value(bool) and T.type_is_value(vec3) and T.type_is_value(transform)
    assert not T.type_is_value(Pt) and not T.type_is_value(str)
    assert T.type_is_vector(vec3) and T.type_is_vector(spatial_vector) and T.type_is_vector(vector(5, S.int8))
    assert not T.type_is_vector(quat) and not T.type_is_vector(transform) and not T.type_is_vector(mat22)
    assert T.type_is_matrix(mat33) and T.type_is_matrix(spatial_matrix) and not T.type_is_matrix(vec4)
    assert T.type_is_quaternion(quat) and T.type_is_quaternion(quatd) and not T.type_is_quaternion(vec4)
    assert T.type_is_transformation(transform) and not T.type_is_transformation(vector(7, S.float32))
    for t in (vec3, mat22, quat, transform, spatial_vector):
        assert T.type_is_composite(t)
    assert not T.type_is_composite(S.float32)
    assert T.type_is_struct(Pt) and not T.type_is_struct(Pt()) and not T.type_is_struct(vec3)
    assert not T.type_is_tile(vec3) and not T.is_tile(vec3())
    # instances are not types
    assert not T.type_is_vector(vec3(1, 2, 3)) and not T.type_is_int(1)


def test_type_is_array() -> None:
    from treadle._src.types.typesys import ArrayT

    assert T.type_is_array(_arr(S.float32)) and T.is_array(_arr(vec3, 2))
    assert T.type_is_array(ArrayT(S.float32, 2))
    assert not T.type_is_array(S.float32) and not T.type_is_array(np.zeros(3))


# ----------------------------------------------------------------------------------------------------------------
# is_* (values, or types)


def test_is_predicates_on_values_match_reference() -> None:
    # answers the reference gives for values
    assert T.is_int(1) and not T.is_int(True) and not T.is_int(1.0) and T.is_int(S.int32(1))
    assert T.is_float(1.0) and T.is_float(S.float32(1)) and not T.is_float(1)
    assert T.is_scalar(1.0) and T.is_scalar(3) and T.is_scalar(S.float32(1)) and not T.is_scalar(True)
    assert not T.is_scalar(np.float32(1)) and not T.is_int(np.int32(1))
    assert T.is_value(True) and T.is_value(1.0) and T.is_value(S.float32(1)) and T.is_value(quat())
    assert T.is_value(mat22()) and T.is_value(transform()) and not T.is_value(np.float32(1))
    assert not T.is_value(Pt())
    assert T.is_vector(vec3(1, 2, 3)) and T.is_vector(spatial_vector()) and not T.is_vector(quat())
    assert not T.is_vector(transform()) and not T.is_vector([1, 2, 3])
    assert T.is_matrix(mat22()) and T.is_matrix(spatial_matrix()) and not T.is_matrix(vec4())
    assert T.is_quaternion(quat()) and not T.is_quaternion(vec4())
    assert T.is_transformation(transform()) and not T.is_transformation(vector(7, S.float32)())
    for v in (vec3(), mat22(), quat(), transform()):
        assert T.is_composite(v)
    assert not T.is_composite(1.0) and T.is_struct(Pt())


def test_is_predicates_on_types() -> None:
    assert T.is_vector(vec3) and T.is_matrix(mat33d) and T.is_quaternion(quath)
    assert T.is_transformation(transformd) and T.is_composite(spatial_matrix) and T.is_struct(Pt)
    assert T.is_float(S.float16) and T.is_float(float) and T.is_int(S.uint8) and T.is_int(int)
    assert T.is_scalar(S.float64) and not T.is_scalar(S.bool) and T.is_value(S.bool) and T.is_value(vec3)
    assert not T.is_vector(quat) and not T.is_composite(S.float32) and not T.is_struct(vec3)


# ----------------------------------------------------------------------------------------------------------------
# helpers


def test_scalar_type_and_lengths() -> None:
    assert T.scalar_type_of(vec3d) is S.float64 and T.scalar_type_of(vec3h(1, 2, 3)) is S.float16
    assert T.scalar_type_of(S.int8) is S.int8 and T.scalar_type_of(float) is S.float32
    assert T.type_scalar_type(mat44h) is S.float16 and T.scalar_type_of(Pt) is Pt
    for t, n in ((S.float32, 1), (float, 1), (vec3, 3), (mat33, 9), (quat, 4), (transform, 7), (spatial_matrix, 36)):
        assert T.type_size(t) == n
    with pytest.raises(TypeError):
        T.type_size(Pt)
    # type_length is the first dimension (the reference's private helper that Warp-based libraries call)
    for t, n in ((S.float32, 1), (vec3, 3), (mat33, 3), (quat, 4), (transform, 7), (spatial_matrix, 6)):
        assert T.type_length(t) == n
    assert T.type_length(vec3(1, 2, 3)) == 3 and T.type_length(S.int32(3)) == 1 and T.type_length([1, 2]) == 2
    for bad in (float, int, Pt):
        with pytest.raises(TypeError):
            T.type_length(bad)


def test_type_size_in_bytes_and_ctype() -> None:
    cases = [
        (S.float16, 2, ctypes.c_uint16),
        (S.float32, 4, ctypes.c_float),
        (float, 4, ctypes.c_float),
        (int, 4, ctypes.c_int32),
        (bool, 1, ctypes.c_bool),
        (S.uint64, 8, ctypes.c_uint64),
        (vec3, 12, vec3),
        (vec3h, 6, vec3h),
        (mat33d, 72, mat33d),
        (transform, 28, transform),
        (Pt, 16, Pt.ctype),
    ]
    for t, size, ct in cases:
        assert T.type_size_in_bytes(t) == size, t
        assert T.type_ctype(t) is ct, t
    assert T.type_ctype(_arr(S.float32)) is abi.ArrayDesc
    assert T.type_size_in_bytes(_arr(vec3, 3)) == ctypes.sizeof(abi.ArrayDesc)
    with pytest.raises(TypeError):
        T.type_ctype(str)
    with pytest.raises(TypeError):
        T.type_size_in_bytes(None)


def test_types_equal() -> None:
    assert T.types_equal(vec3, vector(3, S.float32)) and T.types_equal(float, S.float32)
    assert T.types_equal(int, S.int32) and T.types_equal(S.bool, bool)
    assert T.types_equal(spatial_vector, vector(6, S.float32))
    assert not T.types_equal(S.float32, S.float64) and not T.types_equal(vec3, vec3d)
    assert not T.types_equal(quat, vec4) and not T.types_equal(mat22, vec4)
    assert not T.types_equal(transform, vector(7, S.float32))
    assert T.types_equal(vec3, typing.Any) and T.types_equal(typing.Any, Pt)
    assert T.types_equal(Pt, Pt) and not T.types_equal(Pt, vec3)
    assert T.types_equal(matrix((2, 3), float), matrix((2, 3), S.float32))
    assert not T.types_equal(matrix((2, 3), float), matrix((3, 2), S.float32))


def test_types_equal_arrays() -> None:
    from treadle._src.types.typesys import ArrayT

    assert T.types_equal(_arr(float), _arr(S.float32))
    assert not T.types_equal(_arr(float), _arr(S.float32, 2))
    assert not T.types_equal(_arr(float), _arr(S.float64))
    assert T.types_equal(_arr(typing.Any), _arr(vec3))
    assert T.types_equal(ArrayT(vec3, 2), _arr(vec3, 2))
    assert not T.types_equal(_arr(float), S.float32)


def test_type_repr() -> None:
    assert T.type_repr(S.float32) == "float32" and T.type_repr(S.uint64) == "uint64"
    assert T.type_repr(vec3) == "vec3f" and T.type_repr(vec3d) == "vec3d" and T.type_repr(mat33d) == "mat33d"
    assert T.type_repr(quat) == "quatf" and T.type_repr(transform) == "transformf"
    assert T.type_repr(vector(3, float)) == "vec3f" and T.type_repr(vector(2, S.int8)) == "vec2b"
    assert T.type_repr(vector(5, S.int32)) == "vector(length=5, dtype=int32)"
    assert T.type_repr(matrix((2, 3), S.float64)) == "mat23d"
    assert T.type_repr(matrix((5, 5), S.float32)) == "matrix(shape=(5, 5), dtype=float32)"
    assert T.type_repr(spatial_vector) == "spatial_vectorf"
    assert T.type_repr(float) == "float" and T.type_repr(None) == "None" and T.type_repr(typing.Any) == "Any"
    assert T.type_repr(Pt) == f"{__name__}.Pt"
    assert T.type_repr(vec3(1, 2, 3)) == "vec3f([1.0, 2.0, 3.0])"
    assert T.type_repr(_arr(float)) == "array(ndim=1, dtype=float32)"
    assert T.type_repr(_arr(vec3, 2)) == "array(ndim=2, dtype=vec3f)"


def test_dtype_numpy_conversions() -> None:
    assert T.dtype_to_numpy(S.float16) is np.float16 and T.dtype_to_numpy(S.bool) is np.bool_
    assert T.dtype_to_numpy(vec3) is np.float32 and T.dtype_to_numpy(mat22) is np.float32
    assert T.dtype_to_numpy(vec3h) is np.float16 and T.dtype_to_numpy(vec3i) is np.int32
    assert T.dtype_to_numpy(float) is np.float32
    assert T.dtype_to_numpy(Pt) == Pt.numpy_dtype()
    with pytest.raises(TypeError):
        T.dtype_to_numpy(str)
    assert T.dtype_from_numpy(np.float32) is S.float32 and T.dtype_from_numpy(np.dtype("f2")) is S.float16
    assert T.dtype_from_numpy(np.bool_) is S.bool and T.dtype_from_numpy("uint8") is S.uint8
    with pytest.raises(TypeError):
        T.dtype_from_numpy(np.complex64)


def test_public_types_module() -> None:
    import treadle.types as wt

    reference_names = [
        "vector",
        "matrix",
        "quaternion",
        "transformation",
        "is_array",
        "is_composite",
        "is_float",
        "is_int",
        "is_matrix",
        "is_quaternion",
        "is_scalar",
        "is_struct",
        "is_tile",
        "is_transformation",
        "is_value",
        "is_vector",
        "type_ctype",
        "type_is_array",
        "type_is_composite",
        "type_is_float",
        "type_is_int",
        "type_is_matrix",
        "type_is_quaternion",
        "type_is_scalar",
        "type_is_struct",
        "type_is_tile",
        "type_is_transformation",
        "type_is_value",
        "type_is_vector",
        "type_repr",
        "type_size",
        "type_size_in_bytes",
        "types_equal",
    ]
    for name in reference_names:
        assert callable(getattr(wt, name)), name
    assert wt.vector(3, wt.float32) is wt.vec3 is wt.vec3f
    assert wt.matrix((3, 3), wt.float64) is wt.mat33d
    assert wt.quaternion(wt.float16) is wt.quath and wt.transformation(wt.float64) is wt.transformd
    assert wt.spatial_vector is wt.vector(6, wt.float32) and wt.spatial_matrixd is wt.matrix((6, 6), wt.float64)
    for n in (2, 3, 4):
        for s in ("", "b", "ub", "s", "us", "i", "ui", "l", "ul", "h", "f", "d"):
            assert T.type_is_vector(getattr(wt, f"vec{n}{s}"))
        for s in ("", "h", "f", "d"):
            assert T.type_is_matrix(getattr(wt, f"mat{n}{n}{s}"))
