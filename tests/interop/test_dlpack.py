"""DLPack export and import: zero-copy, layouts, capsule kinds, lifetimes (deleters run exactly once), errors."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import treadle as wp
from treadle._src.interop import dlpack as dl
from treadle._src.interop.common import wrap_memory


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


def collect() -> None:
    gc.collect()
    gc.collect()


class Releases:
    """Counts export releases between construction and ``delta()``."""

    def __init__(self) -> None:
        self.start = dl.export_stats()

    def delta(self) -> dict[str, int]:
        now = dl.export_stats()
        return {k: now[k] - self.start[k] for k in ("exported", "released", "unknown_releases")}


def capsule_pointer(cap: object, name: bytes) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return int(get(cap, name))


# ------------------------------------------------------------------------------------------------------------------
# export
# ------------------------------------------------------------------------------------------------------------------


def test_numpy_consumer_is_zero_copy() -> None:
    a = wp.array(np.arange(6, dtype=np.float32), device="cpu")
    n = np.from_dlpack(a)
    assert n.ctypes.data == a.ptr
    n[1] = 10.0
    assert a.numpy()[1] == 10.0
    a.fill_(3.0)
    np.testing.assert_array_equal(n, np.full(6, 3.0, dtype=np.float32))


def test_dlpack_device() -> None:
    assert wp.zeros(3, device="cpu").__dlpack_device__() == (1, 0)
    assert wp.zeros(3, device="cpu").__dlpack_device__()[0] == dl.DLDeviceType.kDLCPU


def test_legacy_and_versioned_capsules() -> None:
    a = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    rel = Releases()
    legacy = a.__dlpack__()
    old = a.__dlpack__(max_version=(0, 8))
    versioned = a.__dlpack__(max_version=(1, 0))
    assert '"dltensor"' in repr(legacy) and '"dltensor"' in repr(old)
    assert '"dltensor_versioned"' in repr(versioned)
    m = dl.DLManagedTensorVersioned.from_address(capsule_pointer(versioned, b"dltensor_versioned"))
    assert (m.version.major, m.version.minor) == (1, 0)
    assert m.flags == 0
    assert m.dl_tensor.data == a.ptr
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes) == (2, 32, 1)
    for cap in (legacy, versioned):
        b = wp.from_dlpack(cap)
        assert b.ptr == a.ptr and b.shape == (4,)
    del legacy, old, versioned, b, cap, m
    collect()
    assert rel.delta() == {"exported": 3, "released": 3, "unknown_releases": 0}


def test_copy_request_sets_flag() -> None:
    a = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    cap = a.__dlpack__(max_version=(1, 0), copy=True)
    m = dl.DLManagedTensorVersioned.from_address(capsule_pointer(cap, b"dltensor_versioned"))
    assert m.flags & dl.FLAG_IS_COPIED
    assert m.dl_tensor.data != a.ptr
    n = np.from_dlpack(a, copy=True)
    n[0] = 99.0
    assert a.numpy()[0] == 0.0
    np.testing.assert_array_equal(np.from_dlpack(a, copy=False), np.arange(4, dtype=np.float32))


def test_dl_device_request() -> None:
    a = wp.zeros(3, device="cpu")
    assert np.from_dlpack(a, device="cpu").ctypes.data == a.ptr
    a.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="without a copy"):
        a.__dlpack__(dl_device=(2, 0))


def test_vector_and_matrix_dtypes_get_inner_dims() -> None:
    v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device="cpu")
    n = np.from_dlpack(v)
    assert n.shape == (4, 3) and n.strides == (12, 4)
    np.testing.assert_array_equal(n, np.arange(12, dtype=np.float32).reshape(4, 3))
    m = wp.array(np.arange(8, dtype=np.float64).reshape(2, 2, 2), dtype=wp.mat22d, device="cpu")
    nm = np.from_dlpack(m)
    assert nm.shape == (2, 2, 2) and nm.dtype == np.float64
    np.testing.assert_array_equal(nm, np.arange(8, dtype=np.float64).reshape(2, 2, 2))


def test_strided_views_export_their_strides() -> None:
    base = wp.array(np.arange(24, dtype=np.float32).reshape(4, 6), device="cpu")
    for view in (base[:, ::2], base.transpose(), base[1:3, 2:5]):
        n = np.from_dlpack(view)
        assert n.strides == view.strides
        np.testing.assert_array_equal(n, view.numpy())


def test_struct_arrays_are_refused(struct_dtype: object) -> None:
    a = wp.zeros(3, dtype=struct_dtype, device="cpu")
    for err in (BufferError, RuntimeError, TypeError):
        with pytest.raises(err, match="struct"):
            a.__dlpack__()
    with pytest.raises(BufferError, match="struct"):
        np.from_dlpack(a)


def test_strides_not_whole_elements_are_refused() -> None:
    buf = np.zeros(16, dtype=np.uint8)
    a = wp.array(ptr=buf.ctypes.data, dtype=wp.float32, shape=(2,), strides=(6,), device="cpu")
    with pytest.raises(BufferError, match="multiples of the 4-byte float32"):
        a.__dlpack__()


def test_cpu_stream_must_be_none() -> None:
    a = wp.zeros(3, device="cpu")
    a.__dlpack__(stream=None)
    a.__dlpack__(stream=-1)
    with pytest.raises(TypeError, match="stream must be None or -1"):
        a.__dlpack__(stream=5)


def test_every_scalar_type_round_trips_through_numpy() -> None:
    for t in (wp.bool, wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64,
              wp.float16, wp.float32, wp.float64):
        npdt = wp.dtype_to_numpy(t)
        data = (np.arange(5) % 2).astype(npdt) if t is wp.bool else np.arange(5).astype(npdt)
        a = wp.array(data, dtype=t, device="cpu")
        n = np.from_dlpack(a)
        assert n.dtype == npdt and n.ctypes.data == a.ptr, t
        np.testing.assert_array_equal(n, data)
        b = wp.from_dlpack(n)
        assert b.dtype is t and b.ptr == a.ptr, t


def test_empty_arrays() -> None:
    assert np.from_dlpack(wp.zeros(0, device="cpu")).shape == (0,)
    b = wp.from_dlpack(np.zeros((0, 3), dtype=np.float32))
    assert b.shape == (0, 3) and b.size == 0


# ------------------------------------------------------------------------------------------------------------------
# export lifetimes
# ------------------------------------------------------------------------------------------------------------------


def test_consumer_keeps_exported_array_alive() -> None:
    rel = Releases()
    a = wp.array(np.arange(1000, dtype=np.float32), device="cpu")
    alive = weakref.ref(a)
    n = np.from_dlpack(a)
    del a
    collect()
    assert alive() is not None
    _churn = [np.ones(1000, dtype=np.float32) for _ in range(20)]
    np.testing.assert_array_equal(n, np.arange(1000, dtype=np.float32))
    del n
    collect()
    assert alive() is None
    assert rel.delta() == {"exported": 1, "released": 1, "unknown_releases": 0}


def test_unconsumed_capsule_releases_on_destruction() -> None:
    rel = Releases()
    a = wp.zeros(8, device="cpu")
    alive = weakref.ref(a)
    cap = a.__dlpack__(max_version=(1, 0))
    del a
    collect()
    assert alive() is not None
    del cap
    collect()
    assert alive() is None
    assert rel.delta() == {"exported": 1, "released": 1, "unknown_releases": 0}


def test_to_dlpack_returns_a_legacy_capsule() -> None:
    a = wp.array(np.arange(3, dtype=np.int32), device="cpu")
    cap = wp.to_dlpack(a)
    assert '"dltensor"' in repr(cap)
    b = wp.from_dlpack(cap)
    assert b.ptr == a.ptr and b.dtype is wp.int32
    with pytest.raises(TypeError, match="consumed only once"):
        wp.from_dlpack(cap)
    with pytest.raises(TypeError, match="Treadle array"):
        wp.to_dlpack(np.zeros(3))


# ------------------------------------------------------------------------------------------------------------------
# import
# ------------------------------------------------------------------------------------------------------------------


def test_import_from_numpy_is_zero_copy() -> None:
    x = np.arange(10, dtype=np.float64)
    a = wp.from_dlpack(x)
    assert a.ptr == x.ctypes.data and a.dtype is wp.float64 and a.device == "cpu"
    a.fill_(2.0)
    assert (x == 2.0).all()
    x[3] = 7.0
    assert a.numpy()[3] == 7.0


def test_import_strided_and_zero_dim() -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = wp.from_dlpack(x[:, ::2])
    assert a.shape == (4, 3) and a.strides == (20, 8)
    np.testing.assert_array_equal(a.numpy(), x[:, ::2])
    t = wp.from_dlpack(x.T)
    assert t.strides == (4, 20)
    np.testing.assert_array_equal(t.numpy(), x.T)
    s = wp.from_dlpack(np.array(3.5, dtype=np.float32))
    assert s.shape == (1,) and s.numpy()[0] == 3.5


def test_import_vector_dtype_consumes_inner_dims() -> None:
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = wp.from_dlpack(x, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype is wp.vec3 and a.ptr == x.ctypes.data
    assert a.list()[1] == wp.vec3(3.0, 4.0, 5.0)
    m = wp.from_dlpack(np.zeros((5, 3, 3), dtype=np.float32), dtype=wp.mat33)
    assert m.shape == (5,)
    with pytest.raises(TypeError, match="trailing dimensions must be"):
        wp.from_dlpack(np.zeros((4, 4), dtype=np.float32), dtype=wp.vec3)
    with pytest.raises(TypeError, match="must be contiguous"):
        wp.from_dlpack(np.zeros((3, 4), dtype=np.float32).T, dtype=wp.vec3)
    with pytest.raises(TypeError, match="scalar types differ"):
        wp.from_dlpack(np.zeros((4, 3), dtype=np.float64), dtype=wp.vec3)


def test_import_errors(struct_dtype: object) -> None:
    with pytest.raises(RuntimeError, match="complex64 is not supported"):
        wp.from_dlpack(np.zeros(3, dtype=np.complex64))
    with pytest.raises(RuntimeError, match="negative strides"):
        wp.from_dlpack(np.arange(4.0)[::-1])
    with pytest.raises(TypeError, match="implementing __dlpack__"):
        wp.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="struct"):
        wp.from_dlpack(np.zeros(3, dtype=np.float32), dtype=struct_dtype)


def test_failed_import_returns_tensor_to_producer() -> None:
    rel = Releases()
    a = wp.zeros(4, dtype=wp.float64, device="cpu")
    with pytest.raises(TypeError):
        wp.from_dlpack(a, dtype=wp.vec3)  # float64 data as float32 vectors
    collect()
    assert rel.delta() == {"exported": 1, "released": 1, "unknown_releases": 0}


def test_imported_memory_outlives_source_object() -> None:
    x = np.arange(1000, dtype=np.float32)
    source_alive = weakref.ref(x)
    a = wp.from_dlpack(x)
    del x
    collect()
    assert source_alive() is not None
    _churn = [np.ones(1000, dtype=np.float32) for _ in range(20)]
    view = a[10:20]
    del a
    collect()
    assert source_alive() is not None  # the view keeps the import alive
    np.testing.assert_array_equal(view.numpy(), np.arange(10, 20, dtype=np.float32))
    del view
    collect()
    assert source_alive() is None


def test_import_deleter_runs_exactly_once() -> None:
    # A Treadle array as the producer: the export registry counts every deleter call.
    src = wp.array(np.arange(5, dtype=np.int64), device="cpu")
    rel = Releases()
    b = wp.from_dlpack(src)
    c = b[1:]
    assert b.ptr == src.ptr and rel.delta()["released"] == 0
    del b
    collect()
    assert rel.delta()["released"] == 0
    del c
    collect()
    assert rel.delta() == {"exported": 1, "released": 1, "unknown_releases": 0}


# ------------------------------------------------------------------------------------------------------------------
# launching kernels on foreign memory
# ------------------------------------------------------------------------------------------------------------------


def test_kernel_writes_through_dlpack_import() -> None:
    x = np.arange(8, dtype=np.float32)
    wp.launch(scale, dim=8, inputs=[wp.from_dlpack(x), 3.0], device="cpu")
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32) * 3.0)


class InterfaceOnly:
    """A non-NumPy producer exposing only ``__array_interface__``."""

    def __init__(self, buf: np.ndarray) -> None:
        self.buf = buf
        self.__array_interface__ = {
            "data": (buf.ctypes.data, False),
            "shape": buf.shape,
            "strides": None,
            "typestr": buf.dtype.str,
            "version": 3,
        }


def test_launch_accepts_array_interface_producers() -> None:
    buf = np.arange(6, dtype=np.float32)
    wp.launch(scale, dim=6, inputs=[InterfaceOnly(buf), 2.0], device="cpu")
    np.testing.assert_array_equal(buf, np.arange(6, dtype=np.float32) * 2.0)


# ------------------------------------------------------------------------------------------------------------------
# robustness
# ------------------------------------------------------------------------------------------------------------------


def test_wrap_memory_matches_the_array_constructor() -> None:
    buf = np.zeros(64, dtype=np.float32)
    owner = object()
    for dtype, shape, strides in ((wp.float32, (4, 3), (48, 8)), (wp.vec3, (5,), (12,)), (wp.float32, (0, 2), (8, 4))):
        fast = wrap_memory(buf.ctypes.data, dtype, shape, strides, wp.get_device("cpu"), owner)
        ref = wp.array(ptr=buf.ctypes.data, dtype=dtype, shape=shape, strides=strides, device="cpu")
        for field in ("ptr", "shape", "strides", "ndim", "size", "capacity", "dtype", "device", "is_contiguous"):
            assert getattr(fast, field) == getattr(ref, field), (field, dtype, shape)
        assert fast._owner is owner


def test_consumers_on_other_threads_release_exactly_once() -> None:
    a = wp.array(np.arange(100, dtype=np.float32), device="cpu")
    rel = Releases()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(200):
                n = np.from_dlpack(a)
                assert n[7] == 7.0
                del n
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    collect()
    assert not errors
    assert rel.delta() == {"exported": 800, "released": 800, "unknown_releases": 0}


def test_live_exchanges_at_interpreter_exit() -> None:
    # Consumers still holding Treadle memory (and Treadle arrays holding foreign memory) when Python exits.
    script = textwrap.dedent(
        """
        import numpy as np
        import treadle as wp
        a = wp.array(np.arange(5, dtype=np.float32), device="cpu")
        held = np.from_dlpack(a)
        imported = wp.from_dlpack(np.arange(4.0))
        unconsumed = wp.zeros(2, device="cpu").__dlpack__(max_version=(1, 0))
        cycle = [held, imported, unconsumed]
        cycle.append(cycle)
        print("done")
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done" and "Exception" not in r.stderr
