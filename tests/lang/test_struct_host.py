"""Host behaviour of ``@struct`` types: layout, NumPy dtype, instances, conversions and errors."""

from __future__ import annotations

import ctypes
import pickle
import typing

import numpy as np
import pytest

from treadle._src.core import abi
from treadle._src.lang.array import array, array2d
from treadle._src.lang.creation import full
from treadle._src.types import scalars as S
from treadle._src.types.matrix import mat22, mat33d
from treadle._src.types.quat import quat, transform
from treadle._src.types.struct import Struct, StructInstance, struct
from treadle._src.types.vector import vec2h, vec3, vec3d, vec3i


@struct
class Inner:
    a: float
    b: vec3


@struct
class Particle:
    pos: vec3
    vel: vec3d
    mass: float = 1.5
    count: int = 3
    alive: bool = True
    h: S.float16 = 0.1
    u8: S.uint8 = 0
    m: mat22
    q: quat
    t: transform
    inner: Inner

    def kinetic(self) -> float:
        return 0.5 * self.mass * sum(v * v for v in self.vel)

    @property
    def speed2(self) -> float:
        return sum(v * v for v in self.vel)


@struct
class Outer:
    p: Particle
    w: S.float64


def _c_field_offsets(ctype: type) -> dict[str, int]:
    return {name: getattr(ctype, name).offset for name, _ in ctype._fields_}


# ----------------------------------------------------------------------------------------------------------------
# The type


def test_struct_type_attributes() -> None:
    assert isinstance(Particle, Struct)
    assert Particle.key == "Particle"
    assert Particle.cls.__name__ == "Particle"
    assert list(Particle.vars) == ["pos", "vel", "mass", "count", "alive", "h", "u8", "m", "q", "t", "inner"]
    assert Particle.vars["mass"] is S.float32 and Particle.vars["count"] is S.int32
    assert Particle.vars["alive"] is S.bool and Particle.vars["pos"] is vec3
    assert Particle.vars["inner"] is Inner
    assert Particle.native_name.startswith("S_Particle_")
    assert Particle.native_name.replace("_", "").isalnum()
    assert len(Particle.hash) == 64 and int(Particle.hash, 16) >= 0
    assert Particle.hash != Inner.hash
    assert {Particle: 1}[Particle] == 1 and hash(Particle) == hash(Particle)
    assert Particle.mass == 1.5  # class attributes stay reachable on the type
    assert Particle.__name__ == "Particle"


def test_struct_ctype_layout() -> None:
    c = Particle.ctype
    assert issubclass(c, ctypes.Structure)
    fields = dict(c._fields_)
    assert fields["pos"] is vec3 and fields["vel"] is vec3d and fields["mass"] is ctypes.c_float
    assert fields["count"] is ctypes.c_int32 and fields["alive"] is ctypes.c_bool
    assert fields["h"] is ctypes.c_uint16 and fields["m"] is mat22 and fields["inner"] is Inner.ctype
    # C layout: natural alignment, vec3d aligned to 8
    offsets = _c_field_offsets(c)
    assert offsets["pos"] == 0 and offsets["vel"] == 16 and offsets["mass"] == 40


def test_struct_hash_is_stable_and_depends_on_fields() -> None:
    def make(ann: dict[str, typing.Any]) -> Struct:
        cls = type("Thing", (), {"__annotations__": ann, "__module__": __name__, "__qualname__": "Thing"})
        return struct(cls)

    a = make({"x": float, "v": vec3})
    b = make({"x": S.float32, "v": vec3})
    c = make({"x": float, "v": vec3d})
    d = make({"y": float, "v": vec3})
    assert a.hash == b.hash and a.native_name == b.native_name
    assert len({a.hash, c.hash, d.hash}) == 3
    assert a is not b and a != b  # distinct types, identical layouts


def test_numpy_dtype_matches_ctype() -> None:
    for st in (Inner, Particle, Outer):
        dt = st.numpy_dtype()
        assert isinstance(dt, np.dtype)
        assert dt.itemsize == ctypes.sizeof(st.ctype)
        assert dt.names == tuple(st.vars)
        for name, off in _c_field_offsets(st.ctype).items():
            assert dt.fields[name][1] == off
    dt = Particle.numpy_dtype()
    assert dt["pos"].subdtype == (np.dtype(np.float32), (3,))
    assert dt["m"].subdtype == (np.dtype(np.float32), (2, 2))
    assert dt["h"] == np.float16 and dt["alive"] == np.bool_
    assert dt["inner"] == Inner.numpy_dtype()


def test_struct_with_from_future_annotations() -> None:
    src = (
        "from __future__ import annotations\n"
        "from treadle._src.types.vector import vec3\n"
        "from treadle._src.types.struct import struct\n"
        "@struct\n"
        "class Lazy:\n"
        "    v: vec3\n"
        "    k: int\n"
    )
    ns: dict[str, typing.Any] = {"__name__": "lazy_mod"}
    exec(compile(src, "<lazy>", "exec"), ns)
    lazy = ns["Lazy"]
    assert lazy.vars == {"v": vec3, "k": S.int32}


def test_struct_field_type_errors() -> None:
    with pytest.raises(TypeError, match="'bad'"):

        @struct
        class Bad:
            bad: str

    with pytest.raises(TypeError, match="generic"):

        @struct
        class Generic:
            g: typing.Any

    with pytest.raises(TypeError, match="mass"):

        @struct
        class BadDefault:
            mass: float = "heavy"  # type: ignore[assignment]


def test_struct_decorator_forms() -> None:
    @struct(module="custom")
    class A:
        x: float

    class B:
        y: int

    b = struct(B, module="other")
    assert isinstance(A, Struct) and A.module == "custom" and b.module == "other"
    assert Particle.module == __name__


# ----------------------------------------------------------------------------------------------------------------
# Instances


def test_instance_defaults_and_zero() -> None:
    p = Particle()
    assert isinstance(p, StructInstance) and isinstance(p, Particle) and isinstance(p, Particle.cls)
    assert not isinstance(Inner(), Particle)
    assert p.mass == 1.5 and p.count == 3 and p.alive is True
    assert p.h == float(np.float16(0.1))
    assert list(p.pos) == [0.0, 0.0, 0.0] and p.inner.a == 0.0
    assert type(p.mass) is float and type(p.count) is int
    assert p._struct_type_ is Particle
    q = Particle()
    q.mass = 2.0
    assert p.mass == 1.5  # defaults are not shared


def test_instance_constructor_arguments() -> None:
    i = Inner(2.0, vec3(1, 2, 3))
    assert i.a == 2.0 and list(i.b) == [1.0, 2.0, 3.0]
    j = Inner(b=(4, 5, 6))
    assert j.a == 0.0 and list(j.b) == [4.0, 5.0, 6.0]
    with pytest.raises(TypeError):
        Inner(1.0, vec3(), 3)
    with pytest.raises(TypeError):
        Inner(c=1)
    with pytest.raises(TypeError):
        Inner(1.0, a=2.0)


def test_scalar_fields_convert_and_check() -> None:
    p = Particle()
    p.mass = 3
    assert p.mass == 3.0 and type(p.mass) is float
    p.mass = np.float64(1.1)
    assert p.mass == float(np.float32(1.1))
    p.count = np.int64(4)
    assert p.count == 4
    p.count = S.int32(7)
    assert p.count == 7
    p.alive = 0
    assert p.alive is False
    p.u8 = 300
    assert p.u8 == 44
    p.h = 1.1
    assert p.h == 1.099609375
    assert p.__ctype__().h == int(np.float16(1.1).view(np.uint16))
    with pytest.raises(TypeError, match="Particle.mass"):
        p.mass = "a"
    with pytest.raises(TypeError, match="Particle.count"):
        p.count = 2.5
    with pytest.raises(TypeError, match="alive"):
        p.alive = "yes"
    with pytest.raises(TypeError):
        p.mass = None


def test_composite_fields() -> None:
    p = Particle()
    p.pos = (1, 2, 3)
    p.vel = vec3(1, 2, 2)
    p.m = ((1, 2), (3, 4))
    p.q = quat(0, 0, 0, 1)
    p.t = transform(vec3(1, 2, 3), quat(0, 0, 0, 1))
    p.pos = np.array([1, 2, 3])
    assert type(p.vel) is vec3d and list(p.vel) == [1.0, 2.0, 2.0]
    assert p.m == mat22(1, 2, 3, 4) and list(p.t.p) == [1.0, 2.0, 3.0]
    # reads are live views into the struct's memory
    p.pos[0] = 9.0
    p.m[1, 1] = 7.0
    assert p.__ctype__().pos[0] == 9.0 and p.m[1, 1] == 7.0
    with pytest.raises(ValueError, match="Particle.pos"):
        p.pos = [1, 2]
    with pytest.raises(TypeError, match="single value"):
        p.pos = 5
    with pytest.raises(TypeError):
        p.pos = "abc"
    p.pos = None  # as in the reference: zero-initialises the field
    assert list(p.pos) == [0.0, 0.0, 0.0]


def test_nested_struct_fields_are_live() -> None:
    o = Outer()
    o.p.mass = 4.0
    o.p.inner.a = 7.0
    o.p.inner.b[2] = 3.0
    assert o.p.mass == 4.0 and o.p.inner.a == 7.0
    c = o.__ctype__()
    assert c.p.mass == 4.0 and c.p.inner.a == 7.0 and c.p.inner.b[2] == 3.0
    assert o.p is o.p  # the same live instance each time
    i = Inner(a=1.0, b=vec3(1, 1, 1))
    o.p.inner = i
    assert o.p.inner.a == 1.0 and list(o.p.inner.b) == [1.0, 1.0, 1.0]
    i.a = 5.0  # assignment copied the value
    assert o.p.inner.a == 1.0
    with pytest.raises(TypeError, match="Outer.p"):
        o.p = Inner()
    with pytest.raises(TypeError, match="Particle.inner"):
        o.p.inner = 5


def test_unknown_attribute_and_methods() -> None:
    p = Particle()
    with pytest.raises(AttributeError, match="no field 'zz'"):
        p.zz = 3
    with pytest.raises(AttributeError):
        p.nonexistent  # noqa: B018
    p.vel = (1, 2, 2)
    p.mass = 2.0
    assert p.kinetic() == pytest.approx(9.0)
    assert p.speed2 == pytest.approx(9.0)


def test_repr() -> None:
    i = Inner(a=2.0, b=vec3(1, 2, 3))
    assert repr(i) == "Inner(a=2.0, b=vec3f([1.0, 2.0, 3.0]))"
    assert "inner=Inner(a=0.0" in repr(Particle())


def test_numpy_value_round_trip() -> None:
    p = Particle()
    p.pos = (1, 2, 3)
    p.vel = (4, 5, 6)
    p.m = ((1, 2), (3, 4))
    p.h = 0.5
    p.inner.a = 8.0
    v = p.numpy_value()
    assert isinstance(v, np.void) and v.dtype == Particle.numpy_dtype()
    assert v["pos"].tolist() == [1.0, 2.0, 3.0] and v["m"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert v["h"] == np.float16(0.5) and v["mass"] == np.float32(1.5) and v["inner"]["a"] == 8.0
    back = Particle.from_numpy_value(v)
    assert bytes(back.__ctype__()) == bytes(p.__ctype__())
    arr = np.zeros(3, dtype=Particle.numpy_dtype())
    arr[1] = v
    assert Particle.from_numpy_value(arr[1]).inner.a == 8.0
    assert Particle.from_numpy_value(arr[0]).mass == 0.0
    c = Particle.from_ctype(p.__ctype__())
    assert c.__ctype__() is not p.__ctype__() and c.m == p.m
    with pytest.raises(ValueError):
        Particle.from_numpy_value(np.zeros(1, dtype=Inner.numpy_dtype())[0])


def test_assign_and_pickle() -> None:
    p = Particle()
    p.pos = (1, 2, 3)
    p.inner.a = 3.0
    q = Particle()
    q.assign(p)
    assert list(q.pos) == [1.0, 2.0, 3.0] and q.inner.a == 3.0
    with pytest.raises(TypeError):
        q.assign(Inner())
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is type(p) and bytes(r.__ctype__()) == bytes(p.__ctype__())
    assert pickle.loads(pickle.dumps(Particle)) is Particle


# ----------------------------------------------------------------------------------------------------------------
# Array fields (need the array module)


def _array_mod() -> typing.Any:
    return pytest.importorskip("treadle._src.lang.array")


def _make_array(values: np.ndarray) -> typing.Any:
    creation = pytest.importorskip("treadle._src.lang.creation")
    return creation.from_numpy(values) if hasattr(creation, "from_numpy") else _array_mod().array(values)


def test_struct_with_array_fields() -> None:
    A = _array_mod()

    @struct
    class Mesh:
        points: A.array(dtype=vec3)
        ids: A.array2d(dtype=int)
        scale: float

    assert Mesh.ctype._fields_[0][1] is abi.ArrayDesc
    assert Mesh.numpy_dtype().itemsize == ctypes.sizeof(Mesh.ctype)
    m = Mesh()
    assert m.points is None and m.__ctype__().points.data == 0
    pts = _make_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    if pts.dtype is not vec3:
        pts = A.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=vec3)
    m.points = pts
    assert m.points is pts
    desc = m.__ctype__().points
    assert desc.data == pts.__ctype__().data and desc.ndim == 1 and desc.shape[0] == 2
    with pytest.raises(TypeError, match="Mesh.points"):
        m.points = np.zeros((2, 3))
    with pytest.raises(TypeError, match="dimension"):
        m.ids = A.array(np.zeros(4, dtype=np.int32))
    with pytest.raises(TypeError, match="dtype"):
        m.ids = A.array(np.zeros((2, 2), dtype=np.float32))
    m.ids = A.array(np.zeros((2, 2), dtype=np.int32))
    m.points = None
    assert m.points is None and m.__ctype__().points.data == 0
    # pickling drops raw pointers; local struct types cannot be pickled
    m.points = pts
    rebuild, (st, data) = m.__reduce__()
    r = rebuild(st, data)
    assert r.points is None and r.__ctype__().points.data == 0 and m.__ctype__().points.data != 0
    with pytest.raises(pickle.PicklingError, match="module level"):
        pickle.dumps(m)

    with pytest.raises(TypeError, match="concrete dtype"):

        @struct
        class AnyArr:
            a: A.array(dtype=typing.Any)


def test_nested_struct_array_refs_survive_assignment() -> None:
    A = _array_mod()

    @struct
    class Holder:
        data: A.array(dtype=float)

    @struct
    class Wrap:
        h: Holder
        k: int

    arr = A.array(np.arange(4, dtype=np.float32))
    h = Holder()
    h.data = arr
    w = Wrap()
    w.h = h
    assert w.h.data is arr
    assert w.__ctype__().h.data.data == arr.__ctype__().data
    w2 = Wrap()
    w2.assign(w)
    assert w2.h.data is arr


def test_struct_as_array_dtype() -> None:
    A = _array_mod()
    p = Particle()
    p.pos = (1, 2, 3)
    a = A.array([p, Particle()], dtype=Particle)
    got = a.numpy()
    assert got.dtype == Particle.numpy_dtype() and got[0]["pos"].tolist() == [1.0, 2.0, 3.0]
    back = a.list()[0]
    assert isinstance(back, Particle) and list(back.pos) == [1.0, 2.0, 3.0] and back.mass == 1.5


def test_misc_value_types_in_structs() -> None:
    @struct
    class Misc:
        a: vec3i
        b: vec2h
        c: mat33d

    m = Misc(a=(1, 2, 3), b=(0.1, 0.2), c=np.eye(3))
    assert list(m.a) == [1, 2, 3] and m.b[0] == float(np.float16(0.1)) and m.c[2, 2] == 1.0
    assert m.numpy_value()["b"].dtype == np.float16
    with pytest.raises(TypeError):
        m.a = (1.5, 2, 3)


@struct
class _Holder:
    n: S.int32
    a1: array(dtype=S.int32)
    a2: array2d(dtype=S.float32)


def test_array_fields_read_back_from_an_array_of_structs():
    src = array(np.arange(5, dtype=np.int32))
    grid = array(np.ones((2, 3), np.float32), requires_grad=True)
    h = _Holder()
    h.n = 7
    h.a1 = src
    h.a2 = grid
    items = full((2, 2), h, dtype=_Holder).list()
    assert len(items) == 4
    for e in items:
        assert e.n == 7
        assert e.a1.ptr == src.ptr and e.a1.dtype is S.int32 and e.a1.shape == (5,)
        np.testing.assert_array_equal(e.a1.numpy(), np.arange(5))
        assert e.a2.shape == (2, 3) and e.a2.strides == grid.strides and e.a2.grad.ptr == grid.grad.ptr
        assert e.a1 is e.a1  # read once per instance
    assert _Holder().a1 is None  # a null descriptor reads back as no array
