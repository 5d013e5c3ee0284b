"""Host behaviour of vector, matrix, quaternion, transform and spatial types (checked against NumPy)."""

from __future__ import annotations

import copy
import ctypes
import math
import pickle

import numpy as np
import pytest

from treadle._src.types import matrix as M
from treadle._src.types import quat as Q
from treadle._src.types import scalars as S
from treadle._src.types import vector as V

SUFFIXES = {
    "b": S.int8,
    "ub": S.uint8,
    "s": S.int16,
    "us": S.uint16,
    "i": S.int32,
    "ui": S.uint32,
    "l": S.int64,
    "ul": S.uint64,
    "h": S.float16,
    "f": S.float32,
    "d": S.float64,
}


# ----------------------------------------------------------------------------------------------------------------
# Class contract


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("suffix", list(SUFFIXES))
def test_vector_aliases_contract(n: int, suffix: str) -> None:
    st = SUFFIXES[suffix]
    cls = getattr(V, f"vec{n}{suffix}")
    assert cls is V.vector(n, st)
    assert cls.__name__ == f"vec{n}{suffix}"
    assert issubclass(cls, ctypes.Array) and issubclass(cls, V.vec_base)
    assert cls._length_ == n and cls._shape_ == (n,)
    assert cls._type_ is st._type_
    assert cls._wp_scalar_type_ is st
    assert cls._wp_generic_type_str_ == "vec_t"
    assert cls._wp_type_params_ == [n, st]
    assert ctypes.sizeof(cls) == n * ctypes.sizeof(st._type_)


def test_vector_default_aliases_and_cache() -> None:
    assert V.vec2 is V.vec2f and V.vec3 is V.vec3f and V.vec4 is V.vec4f
    assert V.vector(3, float) is V.vec3
    assert V.vector(3, int) is V.vec3i
    assert V.vector(length=3, dtype=np.float64) is V.vec3d
    assert V.vector(5, S.float32) is V.vector(5, S.float32)
    assert V.vector(5, S.float32).__name__ == "vector(length=5, dtype=float32)"
    assert ctypes.sizeof(V.vec3h) == 6
    assert V.vec3h._type_ is ctypes.c_uint16


def test_vector_factory_errors() -> None:
    with pytest.raises(TypeError):
        V.vector(3, V.vec3)
    with pytest.raises(ValueError):
        V.vector(-1, S.float32)


@pytest.mark.parametrize("suffix", ["", "h", "f", "d"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_matrix_aliases_contract(n: int, suffix: str) -> None:
    st = SUFFIXES.get(suffix, S.float32)
    cls = getattr(M, f"mat{n}{n}{suffix}")
    assert cls is M.matrix((n, n), st)
    assert cls.__name__ == f"mat{n}{n}{suffix or 'f'}"
    assert issubclass(cls, ctypes.Array) and issubclass(cls, M.mat_base)
    assert cls._shape_ == (n, n) and cls._length_ == n * n
    assert cls._type_ is st._type_ and cls._wp_scalar_type_ is st
    assert cls._wp_generic_type_str_ == "mat_t"
    assert cls._wp_type_params_ == [n, n, st]
    assert cls._wp_row_type_ is V.vector(n, st)
    assert ctypes.sizeof(cls) == n * n * ctypes.sizeof(st._type_)


def test_matrix_names() -> None:
    assert M.matrix((2, 3), S.float64).__name__ == "mat23d"
    assert M.matrix((5, 5), S.float32).__name__ == "matrix(shape=(5, 5), dtype=float32)"
    assert M.matrix((6, 6), S.float64) is Q.spatial_matrixd
    assert Q.spatial_matrix.__name__ == "spatial_matrixf"
    with pytest.raises(TypeError):
        M.matrix(2, S.float32)


def test_quat_transform_spatial_contract() -> None:
    for suffix in ("h", "f", "d"):
        st = SUFFIXES[suffix]
        q = getattr(Q, f"quat{suffix}")
        t = getattr(Q, f"transform{suffix}")
        assert q is Q.quaternion(st) and t is Q.transformation(st)
        assert q._wp_generic_type_str_ == "quat_t" and q._length_ == 4 and q._wp_type_params_ == [st]
        assert t._wp_generic_type_str_ == "transform_t" and t._length_ == 7 and t._wp_type_params_ == [st]
        assert ctypes.sizeof(t) == 7 * ctypes.sizeof(st._type_)
        assert getattr(Q, f"spatial_vector{suffix}") is V.vector(6, st)
        assert getattr(Q, f"spatial_matrix{suffix}") is M.matrix((6, 6), st)
    assert Q.quat is Q.quatf and Q.transform is Q.transformf
    assert Q.spatial_vector is Q.spatial_vectorf and Q.spatial_matrix is Q.spatial_matrixf
    assert Q.spatial_vector._wp_generic_type_str_ == "vec_t"
    assert issubclass(Q.quat, V.vec_base) and issubclass(Q.transform, V.vec_base)


# ----------------------------------------------------------------------------------------------------------------
# Vector construction, indexing, printing


def test_vector_construction() -> None:
    assert list(V.vec3()) == [0.0, 0.0, 0.0]
    assert list(V.vec3(2)) == [2.0, 2.0, 2.0]
    assert list(V.vec3(1, 2, 3)) == [1.0, 2.0, 3.0]
    assert list(V.vec3([1, 2, 3])) == [1.0, 2.0, 3.0]
    assert list(V.vec3((1, 2, 3))) == [1.0, 2.0, 3.0]
    assert list(V.vec3(range(3))) == [0.0, 1.0, 2.0]
    assert list(V.vec3(np.array([1, 2, 3]))) == [1.0, 2.0, 3.0]
    assert list(V.vec3(np.array([[1, 2, 3]]))) == [1.0, 2.0, 3.0]
    assert list(V.vec3(V.vec3i(1, 2, 3))) == [1.0, 2.0, 3.0]
    assert list(V.vec3(S.float32(2.0))) == [2.0, 2.0, 2.0]
    assert list(V.vec3(np.float64(1.5), 2, np.int64(3))) == [1.5, 2.0, 3.0]
    assert V.vec3(1.1, 2, 3)[0] == float(np.float32(1.1))
    assert list(V.vec4(V.vec3(1, 2, 3), 4)) == [1.0, 2.0, 3.0, 4.0]
    assert list(V.vec3i(np.array([1, 2, 3]))) == [1, 2, 3]
    assert list(V.vec2ub(1, 300)) == [1, 44]  # wraps like C
    assert list(V.vec3ui(-1, 1, 1))[0] == 2**32 - 1


def test_vector_construction_errors() -> None:
    with pytest.raises(ValueError, match="expected 3 elements, got 2"):
        V.vec3(1, 2)
    with pytest.raises(ValueError, match="expected 3 elements, got 4"):
        V.vec3([1, 2, 3, 4])
    with pytest.raises(TypeError):
        V.vec3i(1.5, 2, 3)
    with pytest.raises(TypeError):
        V.vec3i(V.vec3(1.5, 2, 3))
    with pytest.raises(TypeError):
        V.vec3i(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError):
        V.vec3("1", 2, 3)


def test_float16_storage() -> None:
    h = V.vec3h(1.1, 2, 3)
    assert h[0] == float(np.float16(1.1)) == 1.099609375
    assert isinstance(h[0], float) and isinstance(h.x, float)
    assert list(h) == [1.099609375, 2.0, 3.0]
    # stored as half bit patterns
    assert list(np.frombuffer(bytes(h), dtype=np.uint16)) == list(np.array([1.1, 2, 3], np.float16).view(np.uint16))
    h[1] = 0.1
    assert h[1] == float(np.float16(0.1))
    h.z = 65504.0
    assert h.z == 65504.0
    assert list(V.vec3h(V.vec3(1, 2, 3))) == [1.0, 2.0, 3.0]
    assert list(V.vec3(V.vec3h(0.5, 2, 3))) == [0.5, 2.0, 3.0]
    assert list(V.vec3h(np.array([1, 2, 3], dtype=np.float16))) == [1.0, 2.0, 3.0]
    a = h.__array__()
    assert a.dtype == np.float16 and a.tolist() == list(h)


def test_vector_indexing() -> None:
    v = V.vec3(1, 2, 3)
    assert v[0] == 1.0 and v[-1] == 3.0 and v[np.int64(1)] == 2.0
    assert type(v[0]) is float and type(V.vec3i(1, 2, 3)[0]) is int
    s = v[1:]
    assert type(s) is V.vec2f and list(s) == [2.0, 3.0]
    assert list(v[::-1]) == [3.0, 2.0, 1.0]
    assert type(V.vec3h(1, 2, 3)[0:2]) is V.vec2h
    with pytest.raises(IndexError):
        v[3]
    with pytest.raises(IndexError):
        v[-4]
    with pytest.raises(TypeError):
        v[1.0]
    assert len(v) == 3 and list(v) == [1.0, 2.0, 3.0]
    assert (v.x, v.y, v.z) == (1.0, 2.0, 3.0)
    assert V.vec4(1, 2, 3, 4).w == 4.0
    with pytest.raises(AttributeError):
        v.w  # noqa: B018
    with pytest.raises(AttributeError):
        v.w = 1.0
    assert not hasattr(v, "w")


def test_vector_setitem() -> None:
    v = V.vec3(1, 2, 3)
    v[0] = 10
    v.y = 20
    v[-1] = np.float64(30)
    assert list(v) == [10.0, 20.0, 30.0]
    v[1:] = [7, 8]
    assert list(v) == [10.0, 7.0, 8.0]
    v[0:2] = 5
    assert list(v) == [5.0, 5.0, 8.0]
    v[1:] = V.vec2(0, 1)
    assert list(v) == [5.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="same size"):
        v[0:2] = [1, 2, 3]
    with pytest.raises(IndexError):
        v[3] = 1
    with pytest.raises(TypeError, match="float32"):
        v[0] = "a"
    vi = V.vec3i()
    vi[0] = np.int64(3)
    vi[1] = True
    assert list(vi) == [3, 1, 0]
    with pytest.raises(TypeError, match="int32"):
        vi[0] = 2.7
    with pytest.raises(TypeError):
        vi.x = np.float32(1)


def test_vector_repr_str() -> None:
    assert repr(V.vec3(1, 2, 3)) == "vec3f([1.0, 2.0, 3.0])"
    assert str(V.vec3(1, 2, 3)) == "[1.0, 2.0, 3.0]"
    assert repr(V.vec3(1.1, 2, 3)) == "vec3f([1.100000023841858, 2.0, 3.0])"
    assert repr(V.vec3i(1, 2, 3)) == "vec3i([1, 2, 3])"
    assert repr(V.vec3d(1, 2, 3)) == "vec3d([float64(1.0), float64(2.0), float64(3.0)])"
    assert repr(V.vec2ub(1, 300)) == "vec2ub([uint8(1), uint8(44)])"
    assert repr(V.vec3h(1.1, 2, 3)) == "vec3h([float16(1.099609375), float16(2.0), float16(3.0)])"
    assert str(V.vec3h(1.5, 2, 3)) == "[1.5, 2.0, 3.0]"
    assert str(V.vec3b(1, 2, 3)) == "[1, 2, 3]"
    assert repr(V.vector(5, S.float32)()) == "vector(length=5, dtype=float32)([0.0, 0.0, 0.0, 0.0, 0.0])"


def test_vector_numpy_and_pickle() -> None:
    v = V.vec3(1, 2, 3)
    a = np.array(v)
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0, 3.0]
    assert np.asarray(V.vec3i(1, 2, 3)).dtype == np.int32
    assert np.array([V.vec3(1, 2, 3), V.vec3(4, 5, 6)]).shape == (2, 3)
    for value in (v, V.vec3h(1.1, 2, 3), V.vec4ul(1, 2, 3, 2**63), V.vector(5, S.int8)(1, 2, 3, 4, 5)):
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is type(value) and back == value
        assert copy.copy(value) == value and copy.deepcopy(value) == value
        assert copy.copy(value) is not value


# ----------------------------------------------------------------------------------------------------------------
# Vector arithmetic and comparison


FLOAT_VEC = [V.vec3h, V.vec3f, V.vec3d, V.vec4f]


@pytest.mark.parametrize("cls", FLOAT_VEC)
def test_vector_float_arithmetic_matches_numpy(cls: type) -> None:
    npt = cls._wp_scalar_type_._np_
    n = cls._length_
    a_np = np.array([1.5, -2.25, 3.1, 0.7][:n], dtype=npt)
    b_np = np.array([0.5, 4.0, -1.3, 2.0][:n], dtype=npt)
    a, b = cls(a_np), cls(b_np)
    s = npt.type(1.7)
    cases = [
        (a + b, a_np + b_np),
        (a - b, a_np - b_np),
        (a * 1.7, a_np * s),
        (1.7 * a, s * a_np),
        (a / 1.7, a_np / s),
        (1.7 / a, s / a_np),
        (-a, -a_np),
        (+a, a_np),
        (a * 2, a_np * npt.type(2)),
        (a + 1.0, a_np + npt.type(1)),
    ]
    for got, want in cases:
        assert type(got) is cls
        np.testing.assert_array_equal(got.__array__(), want.astype(npt))


def test_vector_int_arithmetic() -> None:
    a = V.vec3i(7, -7, 2**31 - 1)
    assert list(a + V.vec3i(1, 1, 1)) == [8, -6, -(2**31)]  # wraps like C
    assert list(a / 2) == [3, -3, 2**30 - 1]  # truncation toward zero
    assert list(V.vec3i(1, 2, 3) * 2) == [2, 4, 6]
    with pytest.raises(TypeError):
        V.vec3i(1, 2, 3) * 1.5
    with pytest.raises(ZeroDivisionError):
        V.vec3i(1, 2, 3) / 0
    f = V.vec3(1, 2, 3) / 0.0
    assert all(math.isinf(x) for x in f)


def test_vector_arithmetic_errors() -> None:
    v = V.vec3(1, 2, 3)
    with pytest.raises(TypeError, match="cw_mul"):
        v * v
    with pytest.raises(TypeError):
        v / v
    with pytest.raises(TypeError):
        v + V.vec3d(1, 2, 3)
    with pytest.raises(TypeError):
        v + V.vec4(1, 2, 3, 4)
    with pytest.raises(TypeError):
        v + [1, 2, 3]
    with pytest.raises(TypeError):
        v @ v
    with pytest.raises(TypeError):
        V.vec4(1, 2, 3, 4) + Q.quat(1, 2, 3, 4)


def test_vector_equality() -> None:
    v = V.vec3(1, 2, 3)
    assert v == V.vec3(1, 2, 3) and not (v != V.vec3(1, 2, 3))
    assert v != V.vec3(1, 2, 4)
    assert v == [1, 2, 3] and v == (1, 2, 3.0) and v == np.array([1, 2, 3])
    assert v == V.vec3i(1, 2, 3)
    assert v != [1, 2] and v != [1, 2, 3, 4] and v != 5 and v != "abc"
    assert v != M.mat22(1, 2, 3, 4)
    assert V.vec3h(1, 2, 3) == [1, 2, 3]
    assert Q.quat(1, 2, 3, 4) == V.vec4(1, 2, 3, 4)
    with pytest.raises(TypeError):
        hash(v)


# ----------------------------------------------------------------------------------------------------------------
# Matrices


def test_matrix_construction() -> None:
    want = [[1.0, 2.0], [3.0, 4.0]]
    for m in (
        M.mat22(1, 2, 3, 4),
        M.mat22(V.vec2(1, 2), V.vec2(3, 4)),
        M.mat22([[1, 2], [3, 4]]),
        M.mat22([1, 2, 3, 4]),
        M.mat22(np.array([[1, 2], [3, 4]])),
        M.mat22(np.array([1, 2, 3, 4])),
        M.mat22((1, 2), (3, 4)),
        M.mat22(V.vec2(1, 2), [3, 4]),
        M.mat22(M.mat22d(1, 2, 3, 4)),
    ):
        assert type(m) is M.mat22 and m.__array__().tolist() == want
    assert M.mat22().__array__().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert M.mat22(2).__array__().tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert M.mat22h(1.1, 2, 3, 4)[0, 0] == 1.099609375
    with pytest.raises(ValueError, match="expected 4 elements, got 3"):
        M.mat22(1, 2, 3)
    with pytest.raises(ValueError):
        M.mat22(V.vec2(1, 2), V.vec2(3, 4), V.vec2(5, 6))
    with pytest.raises(TypeError, match="row of length 2"):
        M.mat22(V.vec3(1, 2, 3), V.vec3(1, 2, 3))
    with pytest.raises(TypeError):
        M.matrix((2, 2), S.int32)(1.5, 2, 3, 4)


def test_matrix_indexing() -> None:
    m = M.mat22(1, 2, 3, 4)
    assert type(m[0]) is V.vec2 and list(m[0]) == [1.0, 2.0] and list(m[-1]) == [3.0, 4.0]
    assert m[1, 0] == 3.0 and m[1][0] == 3.0 and type(m[0, 0]) is float
    assert list(m[:, 0]) == [1.0, 3.0] and list(m[0, :]) == [1.0, 2.0]
    assert type(m[0:1]) is M.matrix((1, 2), S.float32) and m[0:1].__array__().tolist() == [[1.0, 2.0]]
    assert m[::-1].__array__().tolist() == [[3.0, 4.0], [1.0, 2.0]]
    assert len(m) == 2 and [list(r) for r in m] == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(IndexError):
        m[2]
    with pytest.raises(IndexError):
        m[0, 5]
    with pytest.raises(TypeError):
        m["a"]
    r = m[0]
    r[0] = 100.0  # rows are copies
    assert m[0, 0] == 1.0


def test_matrix_setitem() -> None:
    m = M.mat22()
    m[0] = V.vec2(1, 2)
    m[1] = [3, 4]
    m[1, 1] = 9
    assert m.__array__().tolist() == [[1.0, 2.0], [3.0, 9.0]]
    m[0] = 5
    assert list(m[0]) == [5.0, 5.0]
    m[:, 0] = V.vec2(0, 0)
    assert m.__array__().tolist() == [[0.0, 5.0], [0.0, 9.0]]
    m[0, :] = (8, 8)
    assert list(m[0]) == [8.0, 8.0]
    m[0] = np.array([1, 2])
    assert list(m[0]) == [1.0, 2.0]
    with pytest.raises(ValueError, match="same size"):
        m[0] = (1, 2, 3)
    with pytest.raises(IndexError):
        m[2, 0] = 1
    with pytest.raises(TypeError, match="float32"):
        m[0, 0] = "a"
    mi = M.matrix((2, 2), S.int32)()
    with pytest.raises(TypeError):
        mi[:, 0] = [1.5, 2.5]


def test_matrix_repr_str_numpy() -> None:
    m = M.mat22(1, 2, 3, 4)
    assert str(m) == "[[1.0, 2.0],\n [3.0, 4.0]]"
    assert str(M.mat33(*range(1, 10))) == "[[1.0, 2.0, 3.0],\n [4.0, 5.0, 6.0],\n [7.0, 8.0, 9.0]]"
    assert str(M.mat22h(1.1, 2, 3, 4)) == "[[1.099609375, 2.0],\n [3.0, 4.0]]"
    assert str(M.matrix((2, 2), S.int32)(1, 2, 3, 4)) == "[[1, 2],\n [3, 4]]"
    assert repr(m) == "mat22f([[1.0, 2.0], [3.0, 4.0]])"
    a = m.__array__()
    assert a.shape == (2, 2) and a.dtype == np.float32
    h = M.mat22h(1, 2, 3, 4).__array__()
    assert h.dtype == np.float16 and h.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.array(m).reshape(2, 2).tolist() == a.tolist()  # NumPy reads the (flat) ctypes buffer
    for value in (m, M.mat44h(*range(16)), M.matrix((2, 3), S.float64)(*range(6))):
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is type(value) and back == value


@pytest.mark.parametrize("st", [S.float16, S.float32, S.float64])
def test_matrix_arithmetic_matches_numpy(st: type) -> None:
    npt = st._np_
    rng = np.random.default_rng(3)
    a_np = rng.uniform(-2, 2, (3, 3)).astype(npt)
    b_np = rng.uniform(-2, 2, (3, 3)).astype(npt)
    v_np = rng.uniform(-2, 2, 3).astype(npt)
    cls = M.matrix((3, 3), st)
    a, b, v = cls(a_np), cls(b_np), V.vector(3, st)(v_np)
    tol = dict(rtol=2e-3, atol=2e-3) if st is S.float16 else dict(rtol=1e-6)
    np.testing.assert_array_equal((a + b).__array__(), a_np + b_np)
    np.testing.assert_array_equal((a - b).__array__(), a_np - b_np)
    np.testing.assert_array_equal((a * 2.0).__array__(), a_np * npt.type(2))
    np.testing.assert_array_equal((2.0 * a).__array__(), a_np * npt.type(2))
    np.testing.assert_array_equal((a / 2.0).__array__(), a_np / npt.type(2))
    np.testing.assert_array_equal((-a).__array__(), -a_np)
    np.testing.assert_allclose((a * b).__array__(), a_np @ b_np, **tol)
    np.testing.assert_allclose((a @ b).__array__(), a_np @ b_np, **tol)
    np.testing.assert_allclose((a * v).__array__(), a_np @ v_np, **tol)
    np.testing.assert_allclose((a @ v).__array__(), a_np @ v_np, **tol)
    np.testing.assert_allclose((v * a).__array__(), v_np @ a_np, **tol)
    np.testing.assert_allclose((v @ a).__array__(), v_np @ a_np, **tol)
    assert type(a * v) is V.vector(3, st) and type(a @ b) is cls


def test_matrix_non_square_products() -> None:
    a = M.matrix((2, 3), S.float32)(1, 2, 3, 4, 5, 6)
    b = M.matrix((3, 2), S.float32)(1, 2, 3, 4, 5, 6)
    ab = a @ b
    assert type(ab) is M.mat22 and ab.__array__().tolist() == [[22.0, 28.0], [49.0, 64.0]]
    assert list(a @ V.vec3(1, 1, 1)) == [6.0, 15.0]
    assert list(V.vec2(1, 1) @ a) == [5.0, 7.0, 9.0]
    with pytest.raises(ValueError):
        a @ a
    with pytest.raises(ValueError):
        a @ V.vec2(1, 1)
    with pytest.raises(TypeError):
        M.mat22() @ 2.0
    with pytest.raises(TypeError):
        M.mat22() + M.mat22d()


def test_matrix_equality() -> None:
    m = M.mat22(1, 2, 3, 4)
    assert m == M.mat22(1, 2, 3, 4) and m == M.mat22d(1, 2, 3, 4)
    assert m != M.mat22(5, 6, 7, 8)
    assert m == [[1, 2], [3, 4]] and m == np.array([[1, 2], [3, 4]])
    assert m != [1, 2, 3, 4]  # flat lists are not matrices
    assert m != V.vec4(1, 2, 3, 4) and m != [[1, 2], [3]]
    with pytest.raises(TypeError):
        hash(m)


def test_matrix_helpers() -> None:
    c = M.matrix_from_cols(V.vec3(1, 2, 3), V.vec3(3, 4, 5))
    assert type(c) is M.matrix((3, 2), S.float32)
    assert c.__array__().tolist() == [[1.0, 3.0], [2.0, 4.0], [3.0, 5.0]]
    r = M.matrix_from_rows(V.vec3d(1, 2, 3), V.vec3d(3, 4, 5))
    assert type(r) is M.matrix((2, 3), S.float64)
    assert r.__array__().tolist() == [[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]]
    i3 = M.identity(3, S.float64)
    assert type(i3) is M.mat33d and i3.__array__().tolist() == np.eye(3).tolist()
    assert M.identity(n=2, dtype=float) == M.mat22(1, 0, 0, 1)
    with pytest.raises(ValueError):
        M.matrix_from_rows(V.vec3(1, 2, 3), V.vec2(1, 2))
    with pytest.raises(TypeError):
        M.matrix_from_cols(V.vec3(1, 2, 3), V.vec3d(1, 2, 3))


# ----------------------------------------------------------------------------------------------------------------
# Quaternions, transforms, spatial types


def _np_quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x1, y1, z1, w1 = a
    x2, y2, z2, w2 = b
    return np.array(
        [
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        ]
    )


def _np_quat_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_quaternion_host() -> None:
    q = Q.quat(1, 2, 3, 4)
    assert repr(Q.quat()) == "quatf([0.0, 0.0, 0.0, 0.0])"
    assert repr(q) == "quatf([1.0, 2.0, 3.0, 4.0])" and str(q) == "[1.0, 2.0, 3.0, 4.0]"
    assert (q.x, q.y, q.z, q.w) == (1.0, 2.0, 3.0, 4.0) and q[3] == 4.0
    assert list(Q.quat(1)) == [1.0] * 4 and list(Q.quat([1, 2, 3, 4])) == [1.0, 2.0, 3.0, 4.0]
    assert list(Q.quat(V.vec3(1, 0, 0), 0.5)) == [1.0, 0.0, 0.0, 0.5]
    assert list(q * q) == [8.0, 16.0, 24.0, 2.0]
    a_np = np.array([0.1, 0.2, 0.3, 0.9])
    b_np = np.array([-0.4, 0.5, 0.1, 0.7])
    got = (Q.quatd(a_np) * Q.quatd(b_np)).__array__()
    np.testing.assert_allclose(got, _np_quat_mul(a_np, b_np), rtol=1e-12)
    assert list(q + q) == [2.0, 4.0, 6.0, 8.0] and list(q * 2.0) == list(2.0 * q) == [2.0, 4.0, 6.0, 8.0]
    assert list(q / 2.0) == [0.5, 1.0, 1.5, 2.0] and list(-q) == [-1.0, -2.0, -3.0, -4.0]
    assert type(q * q) is Q.quat and type(q[0:2]) is V.vec2
    assert q == Q.quat(1, 2, 3, 4) and q == [1, 2, 3, 4]
    assert repr(Q.quath(1, 2, 3, 4)) == "quath([float16(1.0), float16(2.0), float16(3.0), float16(4.0)])"
    with pytest.raises(TypeError):
        q * Q.quatd(1, 2, 3, 4)


def test_transform_host() -> None:
    ident = Q.transform()
    assert repr(ident) == "transformf([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])"
    want = [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    for t in (
        Q.transform(V.vec3(1, 2, 3), Q.quat(0, 0, 0, 1)),
        Q.transform(1, 2, 3, 0, 0, 0, 1),
        Q.transform([1, 2, 3], [0, 0, 0, 1]),
        Q.transform(p=V.vec3(1, 2, 3), q=Q.quat(0, 0, 0, 1)),
        Q.transform(p=[1, 2, 3]),
        Q.transform(V.vec3(1, 2, 3)),
        Q.transform(V.vec3(1, 2, 3), Q.quatd(0, 0, 0, 1)),
    ):
        assert type(t) is Q.transform and list(t) == want
    t = Q.transform(1, 2, 3, 0, 0, 0, 1)
    assert str(t) == "[1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]"
    assert type(t.p) is V.vec3 and list(t.p) == [1.0, 2.0, 3.0]
    assert type(t.q) is Q.quat and list(t.q) == [0.0, 0.0, 0.0, 1.0]
    assert type(Q.transformd().p) is V.vec3d and type(Q.transformh().q) is Q.quath
    assert len(t) == 7 and t[3] == 0.0 and list(t[0:3]) == [1.0, 2.0, 3.0]
    t.p = (5, 6, 7)
    t.q = Q.quat(0, 0, 1, 0)
    assert list(t) == [5.0, 6.0, 7.0, 0.0, 0.0, 1.0, 0.0]
    with pytest.raises(AttributeError):
        t.x  # noqa: B018
    with pytest.raises(ValueError):
        Q.transform([1, 2], [0, 0, 0, 1])
    with pytest.raises(TypeError):
        Q.transform(1, 2, 3, 0, 0, 0, 1, p=V.vec3())
    assert list(t + t) == [10.0, 12.0, 14.0, 0.0, 0.0, 2.0, 0.0]
    assert list(Q.transform(1, 2, 3, 0, 0, 0, 1) * 2.0) == [2.0, 4.0, 6.0, 0.0, 0.0, 0.0, 2.0]


def test_transform_composition_matches_numpy() -> None:
    rng = np.random.default_rng(7)
    qa = rng.normal(size=4)
    qa /= np.linalg.norm(qa)
    qb = rng.normal(size=4)
    qb /= np.linalg.norm(qb)
    pa, pb = rng.normal(size=3), rng.normal(size=3)
    ta = Q.transformd(V.vec3d(pa), Q.quatd(qa))
    tb = Q.transformd(V.vec3d(pb), Q.quatd(qb))
    tc = ta * tb
    assert type(tc) is Q.transformd
    np.testing.assert_allclose(tc.p.__array__(), pa + _np_quat_matrix(qa) @ pb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tc.q.__array__(), _np_quat_mul(qa, qb), rtol=1e-12, atol=1e-12)
    s = math.sin(math.pi / 4)
    r = Q.transform(V.vec3(1, 0, 0), Q.quat(0, 0, s, math.cos(math.pi / 4)))
    got = r * Q.transform(V.vec3(1, 0, 0), Q.quat(0, 0, 0, 1))
    np.testing.assert_allclose(list(got), [1.0, 1.0, 0.0, 0.0, 0.0, s, s], atol=1e-6)


def test_spatial_host() -> None:
    sv = Q.spatial_vector(1, 2, 3, 4, 5, 6)
    assert repr(sv) == "spatial_vectorf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])"
    assert list(Q.spatial_vector(V.vec3(1, 2, 3), V.vec3(4, 5, 6))) == list(sv)
    assert sv[5] == 6.0 and sv == [1, 2, 3, 4, 5, 6]
    sm = Q.spatial_matrix()
    assert str(sm).count("\n") == 5 and sm.__array__().shape == (6, 6)
    ident = M.identity(6, S.float32)
    assert type(ident) is Q.spatial_matrix
    assert list(ident * sv) == list(sv)


def test_matrix_rows_and_columns():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    m = M.matrix((3, 4), S.float64)(*a.reshape(-1))
    for r in range(3):
        assert list(m.get_row(r)) == list(a[r])
    for c in range(-4, 4):
        assert list(m.get_col(c)) == list(a[:, c])
    m.set_row(1, V.vector(4, S.float64)(-1.0, -2.0, -3.0, -4.0))
    m.set_col(-1, [10.0, 20.0, 30.0])
    a[1] = [-1.0, -2.0, -3.0, -4.0]
    a[:, -1] = [10.0, 20.0, 30.0]
    assert all(list(m.get_row(r)) == list(a[r]) for r in range(3))
    m.set_col(1, 7.0)  # a number fills the column (set_row too)
    m.set_row(2, 8.0)
    a[:, 1] = 7.0
    a[2] = 8.0
    assert all(list(m.get_row(r)) == list(a[r]) for r in range(3))
    with pytest.raises(ValueError):
        m.set_col(0, [1.0, 2.0])
