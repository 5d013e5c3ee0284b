"""``__cuda_array_interface__`` (v3): export from CUDA arrays, import of any object exposing it (fake driver).

The fake driver's device memory is host memory, so a NumPy buffer stands in for a foreign library's CUDA
allocation; the objects here carry nothing but the interface dict, as a Numba device array would.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fake_driver import cpu_backed_driver

import treadle as wp
from treadle._src.interop.cuda_interface import from_cuda_array_interface


class Foreign:
    """An object exposing only ``__cuda_array_interface__`` over a NumPy buffer (the fake's device memory)."""

    def __init__(self, data: np.ndarray, stream: Any = None, version: int = 3, transpose: bool = False) -> None:
        self.data = data.T if transpose else data
        self.stream = stream
        self.version = version

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        d = self.data
        contiguous = d.flags.c_contiguous
        iface = {"shape": d.shape, "typestr": d.dtype.str, "data": (d.ctypes.data, False),
                 "strides": None if contiguous else d.strides, "version": self.version}
        if self.version >= 3:
            iface["stream"] = self.stream
        return iface


@wp.kernel(module="cuda_interface_tests")
def double_it(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 2.0 * x[i]


@wp.kernel(module="cuda_interface_tests")
def norms(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A two-device fake CUDA driver whose launches run the CPU build (stand-in binaries, no NVRTC)."""
    with cpu_backed_driver(tmp_path, monkeypatch) as drv:
        yield drv


def test_export_from_cuda_arrays(fake):
    dev = wp.get_device("cuda:0")
    a = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=dev)
    iface = a.__cuda_array_interface__
    assert iface == {"shape": (3, 4), "typestr": "<f4", "data": (a.ptr, False), "strides": None, "version": 3,
                     "stream": dev.stream.cuda_stream}
    v = wp.zeros(5, dtype=wp.vec3d, device=dev)
    iv = v.__cuda_array_interface__
    assert iv["shape"] == (5, 3) and iv["typestr"] == "<f8" and iv["strides"] is None
    t = a.transpose()
    assert t.__cuda_array_interface__["strides"] == (4, 16) and t.__cuda_array_interface__["shape"] == (4, 3)
    with pytest.raises(AttributeError):
        wp.zeros(3, dtype=float, device="cpu").__cuda_array_interface__  # noqa: B018
    assert not hasattr(wp.zeros(3, dtype=float, device="cpu"), "__cuda_array_interface__")
    # the exported interface round-trips into a view of the same memory
    back = from_cuda_array_interface(a)
    assert back.ptr == a.ptr and back.shape == (3, 4) and back.device is dev


def test_wp_array_views_a_foreign_object(fake):
    buf = np.arange(6, dtype=np.float32)
    f = Foreign(buf)
    a = wp.array(f)
    assert a.device == "cuda:0" and a.ptr == buf.ctypes.data and a.dtype == wp.float32 and a.shape == (6,)
    wp.launch(double_it, 6, inputs=[a], device="cuda:0")
    assert buf.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]  # written through the view
    fake.pointer_device[buf.ctypes.data] = 1
    assert wp.array(f).device == "cuda:1"
    copy = wp.array(f, device="cuda:0")  # asked for another device: a copy
    assert copy.ptr != buf.ctypes.data and copy.numpy().tolist() == buf.tolist()


def test_vector_dtype_strides_and_versions(fake):
    pts = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], np.float32)
    a = wp.array(Foreign(pts), dtype=wp.vec3)
    assert a.shape == (2,) and a.dtype == wp.vec3
    m = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = wp.array(Foreign(m, transpose=True))  # non-contiguous: strides carried over
    assert t.shape == (4, 3) and t.strides == (8, 32)
    np.testing.assert_array_equal(t.numpy(), m.T)
    old = wp.array(Foreign(np.ones(3, np.int32), version=2))
    assert old.dtype == wp.int32
    with pytest.raises(TypeError):
        wp.array(Foreign(pts), dtype=wp.vec4)
    with pytest.raises(TypeError, match="mask"):
        from_cuda_array_interface({"shape": (1,), "typestr": "<f4", "data": (0, False), "version": 3,
                                   "mask": object()})
    with pytest.raises(TypeError, match="version"):
        from_cuda_array_interface({"shape": (1,), "typestr": "<f4", "data": (0, False), "version": 9})
    with pytest.raises(TypeError, match="'typestr'"):
        from_cuda_array_interface({"shape": (1,), "data": (0, False)})
    with pytest.raises(TypeError, match="on 'cuda:0', not on 'cuda:1'"):
        from_cuda_array_interface(Foreign(pts), device="cuda:1")


def test_stream_semantics(fake):
    dev = wp.get_device("cuda:0")
    buf = np.zeros(4, np.float32)
    fake.calls.clear()
    wp.array(Foreign(buf, stream=None))
    assert "cuStreamWaitEvent" not in fake.names()  # None: no synchronisation needed
    wp.array(Foreign(buf, stream=0xBEEF))
    names = fake.names()
    rec = [args for name, args in fake.calls if name == "cuEventRecord"]
    wait = [args for name, args in fake.calls if name == "cuStreamWaitEvent"]
    assert "cuEventRecord" in names and rec[-1][1] == 0xBEEF  # recorded on the producer's stream
    assert wait[-1][0] == dev.stream.cuda_stream  # the current stream waits, the host does not
    fake.calls.clear()
    wp.array(Foreign(buf, stream=1))  # legacy default stream
    assert [args for name, args in fake.calls if name == "cuEventRecord"][-1][1] == 1
    with pytest.raises(TypeError, match="must not be 0"):
        wp.array(Foreign(buf, stream=0))


def test_launch_accepts_foreign_objects(fake):
    pts = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], np.float32)
    out = np.zeros(2, np.float32)
    wp.launch(norms, 2, inputs=[Foreign(pts), Foreign(out)], device="cuda:0")
    assert out.tolist() == [5.0, 2.0]
    fake.pointer_device[pts.ctypes.data] = 1
    with pytest.raises(wp.LaunchError, match="cuda:1"):
        wp.launch(norms, 2, inputs=[Foreign(pts), Foreign(out)], device="cuda:0")

