"""Arrays on the CPU: construction, dtypes, NumPy round trips, views, gradients, filling and copying, errors."""

from __future__ import annotations

import ctypes
import gc
from typing import Any

import numpy as np
import pytest

from treadle._src.core import abi
from treadle._src.lang import creation as C
from treadle._src.lang.array import array, array1d, array2d, array3d, array4d, from_ptr, is_array, is_array_annotation
from treadle._src.types import scalars
from treadle._src.types.matrix import mat22, mat22h, mat33, mat33d, mat44
from treadle._src.types.quat import quat, quath, spatial_matrixd, spatial_vector, transform, transformd
from treadle._src.types.struct import struct
from treadle._src.types.vector import vec2, vec2h, vec3, vec3d, vec3h, vec3i, vec4ub

ALL_SCALARS = scalars.scalar_types


def _sample(t: Any, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    if t is scalars.bool:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 100).astype(t._np_).reshape(shape)


# ---- annotations ----
def test_annotation_basic():
    a = array(dtype=float)
    assert is_array_annotation(a) and not is_array(a)
    assert a.dtype is scalars.float32 and a.ndim == 1 and a.ptr is None
    assert repr(a) == "array(ndim=1, dtype=float32)"
    assert len(a) == 0
    with pytest.raises(TypeError, match="annotation"):
        a.__ctype__()
    with pytest.raises(TypeError, match="annotation"):
        a.list()


def test_annotation_ndim_and_variants():
    a = array(dtype=vec3, ndim=2)
    assert a.ndim == 2 and a.dtype is vec3 and repr(a) == "array(ndim=2, dtype=vec3f)"
    for cls, n in ((array1d, 1), (array2d, 2), (array3d, 3), (array4d, 4)):
        ann = cls(dtype=float)
        assert type(ann) is array and ann.ndim == n and is_array_annotation(ann)
        assert cls[vec3].ndim == n and cls[vec3].dtype is vec3
    assert array[float].ndim == 1 and array[float].dtype is scalars.float32
    assert is_array_annotation(array[int]) and array[int].dtype is scalars.int32
    assert array(dtype=Any).dtype is Any and repr(array()) == "array(ndim=1, dtype=Any)"


def test_annotation_errors():
    with pytest.raises(ValueError, match="1 to 4"):
        array(dtype=float, ndim=5)
    with pytest.raises(TypeError, match="Invalid data type"):
        array(dtype=str)


def test_array2d_with_data():
    a = array2d(np.zeros((2, 3)), dtype=float)
    assert is_array(a) and a.shape == (2, 3) and a.dtype is scalars.float32


# ---- construction and dtype inference ----
@pytest.mark.parametrize("t", ALL_SCALARS, ids=lambda t: t.__name__)
def test_infer_dtype_from_numpy(t):
    data = _sample(t, (5,))
    a = array(data)
    assert a.dtype is t
    np.testing.assert_array_equal(a.numpy(), data)


def test_python_type_mapping_and_lists():
    assert array([1.0, 2.0]).dtype is scalars.float64
    assert array([1, 2]).dtype is scalars.int64
    assert array([True, False]).dtype is scalars.bool
    assert array([1.0], dtype=float).dtype is scalars.float32
    assert array([1], dtype=int).dtype is scalars.int32
    assert array([1], dtype=bool).dtype is scalars.bool
    assert array([1], dtype=np.float64).dtype is scalars.float64
    assert array([1], dtype=np.dtype("uint8")).dtype is scalars.uint8
    assert array([scalars.float32(1.5), scalars.float32(2.5)]).dtype is scalars.float32
    assert array([[1.0, 2.0, 3.0]]).shape == (1, 3)
    assert array([], dtype=float).shape == (0,)


@pytest.mark.parametrize("t", ALL_SCALARS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 2)])
def test_numpy_round_trip_scalars(t, shape):
    data = _sample(t, shape)
    a = array(data, dtype=t)
    assert a.shape == shape and a.ndim == len(shape) and a.size == data.size
    itemsize = np.dtype(t._np_).itemsize
    assert a.strides == data.strides == tuple(np.empty(shape, t._np_).strides)
    assert a.capacity == data.size * itemsize
    assert a.ptr % 64 == 0 and a.is_contiguous
    out = a.numpy()
    assert out.dtype == t._np_ and out.shape == shape
    np.testing.assert_array_equal(out, data)
    assert a.list() == data.reshape(-1).tolist()


@pytest.mark.parametrize(
    "t",
    [vec3, vec3d, vec3i, vec3h, vec4ub, vec2, mat22, mat33d, mat44, mat22h, quat, quath, transform, transformd,
     spatial_vector, spatial_matrixd],
    ids=lambda x: x.__name__,
)  # fmt: skip
@pytest.mark.parametrize("outer", [(4,), (2, 3), (1, 2, 2), (2, 1, 2, 1)])
def test_numpy_round_trip_composites(t, outer):
    st, shape = t._wp_scalar_type_, tuple(t._shape_)
    data = (np.arange(int(np.prod(outer + shape))) % 50).astype(st._np_).reshape(outer + shape)
    a = array(data, dtype=t)
    assert a.shape == outer and a.dtype is t
    itemsize = int(np.prod(shape)) * np.dtype(st._np_).itemsize
    assert a.strides[-1] == itemsize and a.ptr % 64 == 0
    out = a.numpy()
    assert out.shape == outer + shape and out.dtype == st._np_
    np.testing.assert_array_equal(out, data)
    values = a.list()
    assert len(values) == int(np.prod(outer)) and all(type(v) is t for v in values)
    np.testing.assert_array_equal(np.array([v.__array__() for v in values]).reshape(data.shape), data)


@pytest.mark.parametrize(
    "shape,expected",
    [((6,), (2,)), ((2, 6), (2, 2)), ((6, 1), (2,)), ((1, 6), (1, 2)), ((3,), (1,)), ((6, 1, 1), (2,)),
     ((2, 1, 3), (2, 1)), ((0, 3), (0,)), ((0,), (0,)), ((1, 1, 1, 1, 3), (1, 1, 1, 1))],
)  # fmt: skip
def test_vector_data_shapes(shape, expected):
    assert array(np.zeros(shape), dtype=vec3).shape == expected


@pytest.mark.parametrize(
    "shape,expected",
    [((2, 2, 4), (2, 2)), ((2, 4), (2,)), ((3, 2, 2), (3,)), ((16,), (4,)), ((8, 1), (2,)), ((2, 8), (2, 2)),
     ((4,), (1,)), ((3, 1, 4), (3, 1))],
)  # fmt: skip
def test_matrix_data_shapes(shape, expected):
    assert array(np.zeros(shape), dtype=mat22).shape == expected


@pytest.mark.parametrize("shape,t", [((3, 2), vec3), ((2, 3, 2), vec3), ((4, 2), mat22)])
def test_incompatible_inner_shape(shape, t):
    with pytest.raises(ValueError, match="inner dimensions"):
        array(np.zeros(shape), dtype=t)


def test_lists_of_vectors_and_matrices():
    a = array([vec3(1, 2, 3), vec3(4, 5, 6)], dtype=vec3)
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [4, 5, 6]])
    b = array([(1, 2, 3), (4, 5, 6)], dtype=vec3)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    c = array([vec3(1, 2, 3)])  # no dtype: float32 scalars with a trailing dimension
    assert c.dtype is scalars.float32 and c.shape == (1, 3)
    h = array([vec3h(1, 2, 3)])
    assert h.dtype is scalars.float16
    np.testing.assert_array_equal(h.numpy(), [[1, 2, 3]])
    m = array([mat22(1, 2, 3, 4)], dtype=mat22)
    np.testing.assert_array_equal(m.numpy(), [[[1, 2], [3, 4]]])
    assert array([1, 2, 3, 4, 5, 6], dtype=vec3).shape == (2,)


def test_data_with_shape():
    a = array([1, 2, 3, 4], shape=(2, 2), dtype=float)
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])
    assert array(np.zeros(6), dtype=vec3, shape=(2,)).shape == (2,)
    with pytest.raises(ValueError, match="Failed to reshape"):
        array(np.zeros(6), dtype=float, shape=(2,))


def test_shape_only_and_ptr_only():
    a = array(shape=(2, 3), dtype=float)
    assert a.shape == (2, 3) and a.ptr % 64 == 0
    with pytest.raises(TypeError, match="concrete type"):
        array(shape=(2, 3))


def test_array_from_array():
    a = C.ones(3)
    b = array(a)
    assert b.ptr != a.ptr and b.dtype is a.dtype
    c = array(a, copy=False)
    assert c.ptr == a.ptr
    d = array(a, dtype=scalars.float64)
    assert d.dtype is scalars.float64 and d.numpy().tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("n", [0, 1, 3, 17, 1000])
def test_alignment(n):
    for a in (C.zeros(n), C.ones(n, dtype=scalars.int8), array(np.arange(n)), C.empty((n, 3), dtype=vec3h)):
        if a.size:
            assert a.ptr % 64 == 0
        else:
            assert a.ptr is None


# ---- zero-copy ----
def test_zero_copy_from_numpy():
    n = np.zeros(8, dtype=np.float32)
    a = array(n, dtype=float, copy=False)
    assert a.ptr == n.ctypes.data
    n[3] = 5.0
    assert a.numpy()[3] == 5.0
    a.numpy()[4] = 6.0
    assert n[4] == 6.0
    del n
    gc.collect()
    assert a.numpy()[3] == 5.0  # the array keeps the NumPy owner alive


def test_zero_copy_conditions():
    n64 = np.zeros(4)
    assert array(n64, dtype=float, copy=False).ptr != n64.ctypes.data  # conversion needs a copy
    n = np.zeros(4, dtype=np.float32)
    assert array(n).ptr != n.ctypes.data  # copy=True by default
    s = np.zeros(8, dtype=np.float32)[::2]
    a = array(s, copy=False)
    assert a.strides == (8,) and a.ptr == s.ctypes.data and not a.is_contiguous
    assert array(s).strides == (4,)
    v = np.zeros((4, 3), dtype=np.float32)
    av = array(v, dtype=vec3, copy=False)
    assert av.ptr == v.ctypes.data and av.shape == (4,)
    assert array(v[::2], dtype=vec3, copy=False).strides == (24,)
    r = np.zeros(4, dtype=np.float32)[::-1]
    assert array(r, copy=False).strides == (4,)  # negative strides are copied


def test_numpy_is_a_view_and_keeps_array_alive():
    a = C.zeros((3, 4))
    n = a.numpy()
    assert n.ctypes.data == a.ptr
    n[1, 2] = 7
    assert a.numpy()[1, 2] == 7
    del a
    gc.collect()
    n[0, 0] = 1  # still valid memory
    assert n[1, 2] == 7


def test_array_interface():
    a = array(np.arange(12, dtype=np.float32).reshape(3, 4))
    ai = a.__array_interface__
    assert ai["shape"] == (3, 4) and ai["strides"] == (16, 4) and ai["typestr"] == "<f4" and ai["data"][0] == a.ptr
    assert np.shares_memory(np.asarray(a), a.numpy())
    t = a.transpose()
    np.testing.assert_array_equal(np.asarray(t), np.arange(12).reshape(3, 4).T)
    v = C.zeros(2, dtype=vec3h).__array_interface__
    assert v["shape"] == (2, 3) and v["strides"] == (6, 2) and v["typestr"] == "<f2"
    z = C.zeros(0)
    assert z.numpy().shape == (0,)


# ---- indexing and views ----
def test_index_1d():
    a = array(np.arange(10, dtype=np.float32))
    assert a[3] == 3.0 and isinstance(a[3], float)
    assert a[-1] == 9.0
    s = a[2:8:2]
    assert s.shape == (3,) and s.strides == (8,) and s.ptr == a.ptr + 8
    np.testing.assert_array_equal(s.numpy(), np.arange(10)[2:8:2])
    assert a[10:20].shape == (0,)
    assert [x for x in array(np.arange(3, dtype=np.int32))] == [0, 1, 2]
    with pytest.raises(IndexError, match="out of bounds"):
        a[10]
    with pytest.raises(ValueError, match="Negative slice steps"):
        a[::-1]
    with pytest.raises(TypeError, match="Invalid index"):
        a[None]


def test_index_2d():
    ref = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = array(ref)
    row = b[1]
    assert row.shape == (4,) and row.ptr == b.ptr + 16
    np.testing.assert_array_equal(row.numpy(), ref[1])
    assert b[1, 2] == 6 and isinstance(b[1, 2], int)
    col = b[:, 1]
    assert col.shape == (3,) and col.strides == (16,) and not col.is_contiguous
    np.testing.assert_array_equal(col.numpy(), ref[:, 1])
    np.testing.assert_array_equal(b[..., 1].numpy(), ref[..., 1])
    np.testing.assert_array_equal(b[::2, 1::2].numpy(), ref[::2, 1::2])
    np.testing.assert_array_equal(b[-1][::3].numpy(), ref[-1][::3])
    with pytest.raises(IndexError, match="too many indices"):
        b[1, 2, 3]
    col.numpy()[0] = 100  # views share memory
    assert b.numpy()[0, 1] == 100


def test_index_4d_against_numpy():
    ref = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    a = array(ref)
    for key in [(1,), (slice(None), 2), (0, slice(1, 3), slice(None, None, 2)), (Ellipsis, 3), (1, 2, 3)]:
        np.testing.assert_array_equal(a[key].numpy(), ref[key])
    assert a[1, 2, 3, 4] == ref[1, 2, 3, 4]


def test_index_composite_elements():
    v = array([[1, 2, 3], [4, 5, 6]], dtype=vec3)
    assert type(v[1]) is vec3 and list(v[1]) == [4.0, 5.0, 6.0]
    m = array(np.arange(8).reshape(2, 2, 2), dtype=mat22)
    assert type(m[1]) is mat22
    np.testing.assert_array_equal(m[1].__array__(), [[4, 5], [6, 7]])


def test_quaternions_transforms_spatial():
    q = array([[0, 0, 0, 1]], dtype=quat)
    assert q.numpy().shape == (1, 4) and type(q.list()[0]) is quat and q.list()[0][3] == 1.0
    t = C.zeros(2, dtype=transform)
    assert t.numpy().shape == (2, 7) and t.strides == (28,) and repr(t) == "array(shape=(2,), dtype=transformf)"
    t.fill_([1, 2, 3, 0, 0, 0, 1])
    assert type(t[1]) is transform and list(t[1]) == [1, 2, 3, 0, 0, 0, 1]
    assert C.full(2, quath(0, 0, 0, 1)).dtype is quath
    assert C.zeros(2, dtype=spatial_matrixd).numpy().shape == (2, 6, 6)
    np.testing.assert_array_equal(C.ones(1, dtype=quat).numpy(), [[1, 1, 1, 1]])


@struct
class _S:
    a: float
    b: vec3
    c: scalars.int8


def test_struct_arrays():
    s = _S(a=1.5, b=vec3(1, 2, 3), c=7)
    arr = array([s, _S()], dtype=_S)
    n = arr.numpy()
    assert n.dtype == _S.numpy_dtype() and n.dtype.itemsize == 20 and arr.strides == (20,) and n.shape == (2,)
    assert n[0]["a"] == 1.5 and n[0]["b"].tolist() == [1, 2, 3] and n[0]["c"] == 7 and n[1]["a"] == 0
    vals = arr.list()
    assert isinstance(vals[0], _S) and vals[0].a == 1.5 and vals[0].c == 7 and vals[1].b == vec3(0, 0, 0)
    assert isinstance(arr[0], _S) and arr[0].b == vec3(1, 2, 3)
    assert repr(arr).endswith("_S)") and str(arr).startswith("[(1.5")
    ai = arr.__array_interface__
    assert ai["typestr"] == "|V20" and [d[0] for d in ai["descr"] if d[0]] == ["a", "b", "c"]
    z = C.zeros((2, 3), dtype=_S)
    assert z.strides == (60, 20) and not z.numpy()["a"].any()
    z[1, 2] = s
    z[0, ::2].fill_(s)
    np.testing.assert_array_equal(z.numpy()["c"], [[7, 0, 7], [0, 0, 7]])
    z.zero_()
    assert not z.numpy()["c"].any()
    f = C.full(2, s)
    assert f.dtype is _S and f.list()[1].a == 1.5
    back = array(n, dtype=_S)
    assert back.list()[0].c == 7 and back.ptr != arr.ptr
    nested = array([[s, s], [_S(), s]], dtype=_S)
    assert nested.shape == (2, 2) and nested.numpy()["c"].tolist() == [[7, 7], [0, 7]]
    c2 = C.clone(nested[:, 1])
    assert c2.is_contiguous and c2.numpy()["c"].tolist() == [7, 7]
    with pytest.raises(ValueError, match="expected an instance of struct"):
        arr.fill_(1.0)
    with pytest.raises(TypeError, match="Cannot make an array of struct"):
        array(np.zeros(3), dtype=_S)


def test_setitem():
    a = C.zeros((3, 4))
    a[1] = 5.0
    a[0, 2] = 1.0
    a[:, 3] = 7.0
    a[2] = [1, 2, 3, 4]
    ref = np.zeros((3, 4), dtype=np.float32)
    ref[1] = 5
    ref[0, 2] = 1
    ref[:, 3] = 7
    ref[2] = [1, 2, 3, 4]
    np.testing.assert_array_equal(a.numpy(), ref)
    v = C.zeros(3, dtype=vec3)
    v[1] = vec3(1, 2, 3)
    v[2] = (4, 5, 6)
    np.testing.assert_array_equal(v.numpy(), [[0, 0, 0], [1, 2, 3], [4, 5, 6]])


def test_transpose():
    ref = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = array(ref)
    t = a.transpose()
    assert t.shape == (4, 3, 2) and t.strides == tuple(reversed(a.strides))
    np.testing.assert_array_equal(t.numpy(), ref.T)
    p = a.transpose((2, 0, 1))
    np.testing.assert_array_equal(p.numpy(), ref.transpose(2, 0, 1))
    assert not p.is_contiguous
    with pytest.raises(ValueError, match="permutation"):
        a.transpose((2, 0))
    v = C.zeros((2, 3), dtype=vec3).transpose()
    assert v.numpy().shape == (3, 2, 3) and v.numpy().strides == (12, 36, 4)


def test_reshape_and_flatten():
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = array(ref)
    np.testing.assert_array_equal(b.reshape((4, 3)).numpy(), ref.reshape(4, 3))
    assert b.reshape((-1, 6)).shape == (2, 6)
    assert b.reshape(12).shape == (12,)
    assert b.reshape((2, 3, 2)).ptr == b.ptr
    assert b.flatten().shape == (12,)
    with pytest.raises(ValueError, match="cannot reshape"):
        b.reshape((5, 3))
    with pytest.raises(RuntimeError, match=r"cannot reshape array of shape \(12,\) \(size 12\) into shape \(5, 2\) \(size 10\)"):
        b.flatten().reshape((5, 2))  # a RuntimeError too, as in the reference API
    with pytest.raises(ValueError, match="more than one index is -1"):
        b.reshape((-1, -1))
    with pytest.raises(ValueError, match="non-contiguous"):
        b[:, 1:3].reshape(6)
    with pytest.raises(ValueError, match="non-contiguous"):
        b.transpose().flatten()
    with pytest.raises(ValueError, match="maximum number of dimensions"):
        b.reshape((1, 1, 1, 3, 4))


def test_view_dtype():
    ref = np.arange(6, dtype=np.float32)
    a = array(ref)
    iv = a.view(scalars.int32)
    assert iv.dtype is scalars.int32 and iv.ptr == a.ptr
    np.testing.assert_array_equal(iv.numpy(), ref.view(np.int32))
    with pytest.raises(TypeError, match="size 4 bytes"):
        a.view(scalars.float64)
    with pytest.raises(TypeError):
        a.view(vec3)



def test_view_components_as_dimensions():
    ref = np.arange(24, dtype=np.float32).reshape(6, 4)
    v = array(ref, dtype=quat)
    f = v.view(scalars.float32)  # components become a trailing dimension, same memory
    assert f.shape == (6, 4) and f.ptr == v.ptr and f.strides == (16, 4)
    np.testing.assert_array_equal(f.numpy(), ref)
    f.fill_(2.0)
    np.testing.assert_array_equal(v.numpy(), np.full((6, 4), 2.0, np.float32))
    m = array(np.arange(12, dtype=np.float32).reshape(3, 2, 2), dtype=mat22).view(scalars.float32)
    assert m.shape == (3, 2, 2)
    np.testing.assert_array_equal(m.numpy(), np.arange(12).reshape(3, 2, 2))
    # a strided array of vectors keeps its outer strides
    every_other = array(np.arange(24, dtype=np.float32).reshape(8, 3), dtype=vec3)[::2]
    np.testing.assert_array_equal(every_other.view(scalars.float32).numpy(), np.arange(24).reshape(8, 3)[::2])
    with pytest.raises(TypeError, match="source scalar dtype float32 has size 4 bytes, but target dtype has size 8"):
        v.view(scalars.float64)
    with pytest.raises(TypeError, match="at most 4"):
        array(np.zeros((1, 1, 1, 2, 2, 2), np.float32), dtype=mat22).view(scalars.float32)


def test_view_dimensions_as_components():
    ref = np.arange(16, dtype=np.float32).reshape(4, 4)
    f = array(ref)
    v = f.view(quat)
    assert v.shape == (4,) and v.ptr == f.ptr and v.dtype is quat
    np.testing.assert_array_equal(v.numpy(), ref)
    m = array(ref.reshape(4, 2, 2)).view(mat22)
    assert m.shape == (4,)
    np.testing.assert_array_equal(m.numpy(), ref.reshape(4, 2, 2))
    # one vector or matrix: an array of one (there are no 0-dimensional arrays)
    assert array(np.arange(4, dtype=np.float32)).view(quat).shape == (1,)
    assert array(np.arange(4, dtype=np.float32).reshape(2, 2)).view(mat22).shape == (1,)
    with pytest.raises(TypeError, match="target scalar dtype float64 has size 8 bytes"):
        f.view(vec3d)
    with pytest.raises(TypeError, match=r"contiguous with shape \(3,\)"):
        f.view(vec3)  # the last dimension is 4, not 3
    with pytest.raises(TypeError, match="contiguous"):
        f.transpose().view(quat)  # the right shape, but not contiguous components

def test_contiguous_and_to():
    b = array(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert b.contiguous() is b
    c = b.transpose().contiguous()
    assert c.is_contiguous and c.strides == (12, 4)
    np.testing.assert_array_equal(c.numpy(), np.arange(12).reshape(3, 4).T)
    assert b.to("cpu") is b


# ---- gradients and the native descriptor ----
def test_requires_grad():
    a = C.zeros((2, 3), requires_grad=True)
    g = a.grad
    assert isinstance(g, array) and g.shape == (2, 3) and g.dtype is a.dtype and g.strides == a.strides
    assert not g.requires_grad and g.grad is None
    np.testing.assert_array_equal(g.numpy(), 0)
    assert g.ptr % 64 == 0 and g.ptr != a.ptr
    b = C.zeros(3)
    assert b.grad is None and not b.requires_grad
    b.requires_grad = True
    assert b.grad is not None and b.grad.shape == (3,)
    b.requires_grad = False
    assert b.grad is None
    i = C.zeros(2, dtype=int, requires_grad=True)
    assert i.grad.dtype is scalars.int32


def test_grad_setter():
    a = C.zeros(3)
    a.grad = C.ones(3)
    assert a.requires_grad and a.grad.numpy().tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="expected shape"):
        a.grad = C.ones(4)
    with pytest.raises(ValueError, match="expected dtype"):
        a.grad = C.ones(3, dtype=scalars.float64)
    a.grad = None
    assert a.grad is None and not a.requires_grad
    b = array(np.zeros(3), dtype=float, grad=C.ones(3))
    assert b.requires_grad


def test_grad_views():
    a = C.zeros((4, 3), requires_grad=True)
    s = a[1:3, ::2]
    assert s.requires_grad and s.grad.shape == (2, 2)
    assert s.grad.ptr - a.grad.ptr == s.ptr - a.ptr and s.grad.strides == s.strides
    s.grad.fill_(1.0)
    assert a.grad.numpy().sum() == 4
    t = a.transpose()
    assert t.grad.shape == (3, 4) and t.grad.strides == t.strides
    r = a.reshape(12)
    assert r.grad.shape == (12,)
    strided = array(np.zeros(8, dtype=np.float32)[::2], copy=False, requires_grad=True)
    assert strided.grad.strides == strided.strides == (8,)
    with pytest.raises(ValueError, match="strides"):
        strided.grad = C.zeros(4)
    # dtype views reinterpret the gradient with the data
    v = C.zeros(4, dtype=vec3, requires_grad=True)
    flat = v.view(scalars.float32).flatten()
    assert flat.requires_grad and flat.grad.shape == (12,)
    flat.grad.fill_(2.0)
    assert v.grad.numpy().sum() == 24.0


def test_ctype_descriptor():
    a = C.zeros((2, 3), dtype=vec3)
    d = a.__ctype__()
    assert isinstance(d, abi.ArrayDesc)
    assert d.data == a.ptr and d.grad == 0 and d.ndim == 2
    assert list(d.shape) == [2, 3, 0, 0] and list(d.strides) == [36, 12, 0, 0]
    assert a.__ctype__() is d  # cached
    a.requires_grad = True
    d2 = a.__ctype__()
    assert d2 is not d and d2.grad == a.grad.ptr
    a.grad = None
    assert a.__ctype__().grad == 0
    assert C.zeros(0).__ctype__().data == 0
    t = a.transpose().__ctype__()
    assert list(t.strides)[:2] == [12, 36]


# ---- fill, zero, assign, copy ----
def test_fill_scalars():
    a = C.zeros((2, 3))
    a.fill_(2)
    np.testing.assert_array_equal(a.numpy(), 2)
    a.fill_(scalars.float32(2.5))
    np.testing.assert_array_equal(a.numpy(), 2.5)
    u = C.zeros(2, dtype=scalars.uint8)
    u.fill_(300)  # wraps as C does
    assert u.list() == [44, 44]
    with pytest.raises(ValueError, match="Failed to convert"):
        C.zeros(2, dtype=int).fill_(3.7)
    with pytest.raises(ValueError, match="Failed to convert"):
        a.fill_("x")
    with pytest.raises(ValueError, match="Failed to convert"):
        a.fill_(vec3(1, 2, 3))
    h = C.zeros(3, dtype=scalars.float16)
    h.fill_(1.5)
    assert h.list() == [1.5, 1.5, 1.5]
    b = C.zeros(2, dtype=bool)
    b.fill_(True)
    assert b.list() == [True, True]


def test_fill_composites():
    v = C.zeros(2, dtype=vec3)
    cases = [([1, 2, 3], [1, 2, 3]), (5, [5, 5, 5]), ((1, 2, 4), [1, 2, 4]), (np.array([1, 2, 5]), [1, 2, 5])]
    for value, expected in [*cases, (vec3d(1, 2, 6), [1, 2, 6])]:
        v.fill_(value)
        np.testing.assert_array_equal(v.numpy(), [expected, expected])
    with pytest.raises(ValueError, match="expected 3 numbers"):
        v.fill_([1, 2])
    m = C.zeros(2, dtype=mat22)
    m.fill_([[1, 2], [3, 4]])
    np.testing.assert_array_equal(m.numpy()[1], [[1, 2], [3, 4]])
    m.fill_([1, 2, 3, 5])
    np.testing.assert_array_equal(m.numpy()[0], [[1, 2], [3, 5]])
    m.fill_(3)
    np.testing.assert_array_equal(m.numpy(), 3)
    hv = C.zeros(2, dtype=vec2h)
    hv.fill_(vec2h(1.5, 2.5))
    np.testing.assert_array_equal(hv.numpy(), [[1.5, 2.5]] * 2)


def test_fill_and_zero_non_contiguous():
    a = C.zeros((2, 3))
    a[:, 1].fill_(1)
    np.testing.assert_array_equal(a.numpy(), [[0, 1, 0], [0, 1, 0]])
    a.fill_(9)
    a[:, ::2].zero_()
    np.testing.assert_array_equal(a.numpy(), [[0, 9, 0], [0, 9, 0]])
    a.zero_()
    np.testing.assert_array_equal(a.numpy(), 0)


def test_assign():
    a = C.zeros((2, 3))
    a.assign(np.ones((2, 3)))
    np.testing.assert_array_equal(a.numpy(), 1)
    a.assign([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [4, 5, 6]])
    a.assign(C.full((2, 3), 7.0))
    np.testing.assert_array_equal(a.numpy(), 7)
    a.assign(array(np.arange(6, dtype=np.float32)))  # same size, contiguous: flat copy
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="shape mismatch"):
        a.assign(np.ones(5))
    with pytest.raises(TypeError, match="Incompatible array data types"):
        a.assign(C.zeros((2, 3), dtype=scalars.float64))
    v = C.zeros(2, dtype=vec3)
    v.assign([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(v.numpy(), [[1, 2, 3], [4, 5, 6]])
    t = C.zeros((3, 2))
    t.transpose().assign(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3).T)


def test_copy():
    src = array(np.arange(5, dtype=np.float32))
    d = C.zeros(5)
    C.copy(d, src, 1, 2, 2)
    np.testing.assert_array_equal(d.numpy(), [0, 2, 3, 0, 0])
    d2 = C.zeros(5)
    C.copy(d2, src)
    np.testing.assert_array_equal(d2.numpy(), src.numpy())
    with pytest.raises(ValueError, match="exceeds the destination size"):
        C.copy(C.zeros(3), C.zeros(5))
    with pytest.raises(ValueError, match="exceeds the destination size"):
        C.copy(C.zeros(5), C.zeros(5), 4, 0, 3)
    with pytest.raises(ValueError, match=r"the range \[4, 7\) exceeds the source size 5"):
        C.copy(C.zeros(5), C.zeros(5), 0, 4, 3)
    with pytest.raises(TypeError, match="Incompatible array data types"):
        C.copy(C.zeros(3), C.zeros(3, dtype=int))
    with pytest.raises(TypeError, match="must be an array"):
        C.copy(C.zeros(3), np.zeros(3))
    grid = array(np.arange(12, dtype=np.float32).reshape(3, 4))
    col = C.zeros(3)
    C.copy(col, grid[:, 1])
    np.testing.assert_array_equal(col.numpy(), [1, 5, 9])
    C.copy(col, grid[:, 1], 0, 1, 2)  # 1-d strided views: offsets and count are logical elements
    np.testing.assert_array_equal(col.numpy(), [5, 9, 9])
    with pytest.raises(ValueError, match="contiguous"):
        C.copy(C.zeros(6), grid[:, 1:3], 0, 1, 1)
    flat = C.zeros((2, 3))
    C.copy(flat, array(np.arange(6, dtype=np.float32)))
    np.testing.assert_array_equal(flat.numpy(), np.arange(6).reshape(2, 3))
    vs = C.zeros(2, dtype=vec3)
    C.copy(vs, array([[1, 2, 3], [4, 5, 6]], dtype=vec3))
    assert vs.list()[1] == vec3(4, 5, 6)


def test_copy_between_strided_views_of_other_lengths():
    def strided(values: list[float]) -> array:
        data = np.zeros(2 * len(values), np.float32)
        data[::2] = values
        return array(data)[::2]

    dst = strided([9, 9, 9, 9])
    C.copy(dst, strided([7, 8]))  # no count: the whole (shorter) source
    np.testing.assert_array_equal(dst.numpy(), [7, 8, 9, 9])
    src = strided([1, 2, 3, 4])
    short = strided([0, 0])
    C.copy(short, src, count=2, src_offset=2)
    np.testing.assert_array_equal(short.numpy(), [3, 4])
    with pytest.raises(RuntimeError, match=r"exceeds the source size 2"):
        C.copy(C.zeros(8), strided([1, 2]), count=5)


@pytest.mark.parametrize("kwargs, text", [
    ({"src_offset": -1}, "Source offset must be non-negative"),
    ({"dest_offset": -1}, "Destination offset must be non-negative"),
    ({"count": -1}, "count must be non-negative"),
    ({"src_offset": 1.5}, "must be integers"),
    ({"count": 2.0}, "must be integers"),
])
def test_copy_argument_errors(kwargs, text):
    src = array(np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError, match=text) as info:  # a RuntimeError too, as in the reference API
        C.copy(C.zeros(4, dtype=scalars.int32), src, **kwargs)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(RuntimeError, match="destination dtype=float64, source dtype=float32"):
        C.copy(C.zeros(4, dtype=scalars.float64), C.zeros(4))
    grid = array(np.arange(100, dtype=np.float32)).reshape((10, 10))[1::2, 1::2]
    with pytest.raises(RuntimeError, match="only supported for 1-D"):
        C.copy(C.zeros((5, 5)), grid, count=2)


# ---- creation functions ----
def test_creation_functions():
    assert C.zeros((2, 3)).shape == (2, 3) and C.zeros(3).dtype is scalars.float32
    assert C.zeros([2, 3]).shape == (2, 3)
    assert C.zeros(np.int64(3)).shape == (3,)
    assert C.zeros().shape == (0,) and C.empty().shape == (0,)
    assert C.zeros(n=4).shape == (4,)
    np.testing.assert_array_equal(C.ones(2, dtype=int).numpy(), [1, 1])
    np.testing.assert_array_equal(C.ones(2, dtype=vec3).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(C.ones(1, dtype=mat22).numpy(), np.ones((1, 2, 2)))
    np.testing.assert_array_equal(C.ones(2, dtype=bool).numpy(), [True, True])
    assert C.empty((2, 3), dtype=vec3).shape == (2, 3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        C.zeros(2, foo=1)


def test_full_dtype_inference():
    assert C.full(3, 1.5).dtype is scalars.float32
    assert C.full(3, 2).dtype is scalars.int32
    assert C.full(3, True).dtype is scalars.bool
    assert C.full(3, vec3(1, 2, 3)).dtype is vec3
    assert C.full(3, scalars.uint8(2)).dtype is scalars.uint8
    assert C.full(3, np.float64(2)).dtype is scalars.float64
    lv = C.full(3, [1.0, 2.0, 3.0])
    assert lv.dtype._shape_ == (3,) and lv.dtype._wp_scalar_type_ is scalars.float64
    assert C.full(3, [1, 2]).dtype._wp_scalar_type_ is scalars.int64
    lm = C.full(2, [[1.0, 2.0], [3.0, 4.0]])
    assert lm.dtype._shape_ == (2, 2)
    np.testing.assert_array_equal(lm.numpy()[1], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(C.full(2, 1.0, dtype=vec2).numpy(), np.ones((2, 2)))
    assert C.full(shape=2, value=3.0).list() == [3.0, 3.0]
    assert C.full((2, 2), vec2(1, 2)).numpy().shape == (2, 2, 2)
    with pytest.raises(ValueError, match="more than two dimensions"):
        C.full(3, [[[1.0]]])
    with pytest.raises(ValueError):
        C.full(3, "a")


def test_like_functions_and_clone():
    src = C.ones((2, 3), dtype=vec3, requires_grad=True)
    for fn in (C.zeros_like, C.empty_like, C.ones_like):
        out = fn(src)
        assert out.shape == src.shape and out.dtype is vec3 and out.requires_grad and out.ptr != src.ptr
    assert not C.zeros_like(src, requires_grad=False).requires_grad
    np.testing.assert_array_equal(C.zeros_like(src).numpy(), 0)
    np.testing.assert_array_equal(C.ones_like(src).numpy(), 1)
    np.testing.assert_array_equal(C.full_like(src, 2.0).numpy(), 2)
    src.grad.fill_(4.0)
    c = C.clone(src)
    assert c.ptr != src.ptr and c.requires_grad
    np.testing.assert_array_equal(c.numpy(), 1)
    np.testing.assert_array_equal(c.grad.numpy(), 4)
    g = array(np.arange(12, dtype=np.float32).reshape(3, 4))
    cc = C.clone(g[:, 1])
    assert cc.strides == (4,) and cc.list() == [1.0, 5.0, 9.0]
    with pytest.raises(TypeError):
        C.zeros_like(np.zeros(3))


def test_from_numpy_and_dtype_conversions():
    assert C.from_numpy(np.zeros(3, dtype=np.float32)).dtype is scalars.float32
    v = C.from_numpy(np.zeros((2, 3)))
    assert v.dtype._shape_ == (3,) and v.dtype._wp_scalar_type_ is scalars.float64 and v.shape == (2,)
    m = C.from_numpy(np.zeros((2, 3, 3), dtype=np.float32))
    assert m.dtype._shape_ == (3, 3) and m.shape == (2,)
    assert C.from_numpy(np.zeros((2, 3)), dtype=vec3).dtype is vec3
    n = np.zeros(3, dtype=np.float32)
    assert C.from_numpy(n).ptr != n.ctypes.data
    assert C.from_numpy(np.zeros(6, dtype=np.float32), shape=(2, 3)).shape == (2, 3)
    assert C.from_numpy(np.zeros(3), requires_grad=True).requires_grad
    assert C.dtype_from_numpy(np.float64) is scalars.float64
    assert C.dtype_from_numpy(np.dtype("int16")) is scalars.int16
    with pytest.raises(TypeError, match="Cannot convert"):
        C.dtype_from_numpy(np.complex64)
    assert C.dtype_to_numpy(scalars.float16) is np.float16
    assert C.dtype_to_numpy(float) is np.float32
    with pytest.raises(TypeError, match="Cannot convert"):
        C.dtype_to_numpy(vec3)


# ---- list, str, repr, misc ----
def test_list_values():
    assert array(np.arange(12, dtype=np.int32).reshape(3, 4)).list() == list(range(12))  # flat, as the reference
    assert array([1.5, 2.5], dtype=scalars.float16).list() == [1.5, 2.5]
    assert array([2**64 - 1], dtype=scalars.uint64).list() == [2**64 - 1]
    vals = C.zeros((2, 2), dtype=vec2).list()
    assert len(vals) == 4 and all(type(x) is vec2 for x in vals)
    ints = array([[1, 2, 3]], dtype=vec3i).list()
    assert type(ints[0][0]) is int
    mats = C.ones(2, dtype=mat33).list()
    assert all(type(x) is mat33 for x in mats)
    assert C.zeros(0).list() == []
    assert array(np.arange(12, dtype=np.float32).reshape(3, 4))[:, 1].list() == [1.0, 5.0, 9.0]


def test_str_and_repr():
    a = C.zeros(3)
    assert str(a) == "[0. 0. 0.]" and repr(a) == "array(shape=(3,), dtype=float32)"
    v = C.zeros(2, dtype=vec3)
    assert str(v) == "[[0. 0. 0.]\n [0. 0. 0.]]" and repr(v) == "array(shape=(2,), dtype=vec3f)"
    assert repr(C.zeros((2, 3))) == "array(shape=(2, 3), dtype=float32)"


def test_len_and_misc():
    a = C.zeros((2, 3))
    assert len(a) == 2 and a.size == 6 and a.capacity == 24 and a.device == "cpu"
    a.mark_init()
    a.mark_read()
    with pytest.warns(UserWarning, match="overwritten after a recorded launch read it"):
        a.mark_write()  # read flag set: the write is reported
    a.mark_init()
    a.mark_write()
    assert a.deleter is None and not a.pinned
    with pytest.raises(RuntimeError, match="IPC requires a CUDA device"):
        a.ipc_handle()
    p = C.zeros(2, pinned=True)
    assert p.shape == (2,)


def test_cptr():
    a = array(np.arange(3, dtype=np.float32))
    p = a.cptr()
    assert p[1] == 1.0 and ctypes.addressof(p.contents) == a.ptr
    vp = C.ones(2, dtype=vec3).cptr()
    assert vp[5] == 1.0
    assert isinstance(C.zeros(2, dtype=scalars.float16).cptr().contents, ctypes.c_uint16)


def test_from_ptr_and_deleter():
    buf = np.arange(6, dtype=np.float32)
    a = from_ptr(buf.ctypes.data, 6, dtype=float)
    assert a.shape == (6,) and a.ptr == buf.ctypes.data
    np.testing.assert_array_equal(a.numpy(), buf)
    s = array(ptr=buf.ctypes.data, shape=(3,), strides=(8,), dtype=float, device="cpu")
    assert s.list() == [0.0, 2.0, 4.0] and s.capacity == 20
    v = from_ptr(buf.ctypes.data, 2, dtype=vec3)
    assert v.shape == (2,) and v.list()[1] == vec3(3, 4, 5)
    calls = []
    d = array(ptr=buf.ctypes.data, shape=(6,), dtype=float, deleter=lambda p, n: calls.append((p, n)))
    view = d[1:3]
    del d
    gc.collect()
    assert calls == []  # the view keeps the base alive
    del view
    gc.collect()
    assert calls == [(buf.ctypes.data, 24)]
    with pytest.raises(TypeError, match="shape is required"):
        array(ptr=buf.ctypes.data, dtype=float)


# ---- errors ----
def test_shape_errors():
    with pytest.raises(ValueError, match="maximum number of dimensions is 4"):
        C.zeros((1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="maximum number of dimensions is 4"):
        array(np.zeros((1, 1, 1, 1, 1)))
    with pytest.raises(ValueError, match="must be non-negative, got -1 in dimension 0"):
        C.zeros((-1,))
    with pytest.raises(TypeError, match="shape must be an int"):
        C.zeros(3.0)
    with pytest.raises(ValueError, match="at least one dimension"):
        C.zeros(())


def test_dtype_and_data_errors():
    with pytest.raises(TypeError, match="Invalid data type"):
        C.zeros(3, dtype=str)
    with pytest.raises(TypeError, match="Invalid data type"):
        array([1, 2], dtype="float32")
    with pytest.raises(TypeError, match="Data must be a sequence or array"):
        array(5.0, dtype=float)
    with pytest.raises(TypeError, match="Unsupported input data"):
        array(np.array(["a", "b"]))
    with pytest.raises(ValueError):
        array([[1, 2], [3]], dtype=float)
