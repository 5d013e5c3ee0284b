"""Devices, the runtime holder, and the device-provider hook (CPU-only behaviour and a fake CUDA provider)."""

from __future__ import annotations

import pytest

from treadle._src.runtime import device as D
from treadle._src.runtime import memory


@pytest.fixture(autouse=True)
def fresh_runtime():
    D.reset_runtime()
    yield
    D.reset_runtime()


def test_cpu_device_identity():
    d = D.get_device("cpu")
    assert str(d) == "cpu"
    assert repr(d) == "'cpu'"
    assert d.alias == "cpu" and d.ordinal == -1 and d.arch == 0
    assert d.is_cpu and not d.is_cuda
    assert not d.is_uva and not d.is_capturing and not d.is_mempool_supported
    assert d == "cpu" and d != "cuda:0" and "cpu" == d
    assert hash(d) == hash(D.get_device("cpu"))
    assert {d: 1}[D.get_device("cpu")] == 1
    assert isinstance(d.name, str) and d.name


def test_cpu_device_cuda_members():
    d = D.get_device("cpu")
    assert d.context is None and not d.has_context
    with pytest.raises(RuntimeError, match="not a CUDA device"):
        d.stream  # noqa: B018
    assert not d.has_stream
    d.make_current()
    d.synchronize()


def test_cpu_memory_queries():
    d = D.get_device("cpu")
    assert d.total_memory >= 0 and d.free_memory >= 0
    assert d.free_memory <= d.total_memory or d.total_memory == 0


def test_get_device_variants():
    cpu = D.get_device("cpu")
    assert D.get_device() is cpu
    assert D.get_device(None) is cpu
    assert D.get_device(cpu) is cpu


@pytest.mark.parametrize("ident", ["gpu", "cuda:x", "cpu:0", 5, 1.5])
def test_get_device_invalid(ident):
    with pytest.raises(ValueError, match="Invalid device identifier"):
        D.get_device(ident)


def test_cuda_unavailable_errors():
    with pytest.raises(ValueError, match=r"CUDA device 'cuda:0' is not available: no CUDA driver/GPU was found"):
        D.get_device("cuda:0")
    with pytest.raises(RuntimeError):  # the reference raises RuntimeError for "cuda"
        D.get_device("cuda")
    with pytest.raises(ValueError):
        D.get_cuda_device()
    with pytest.raises(ValueError):
        D.get_cuda_device(0)
    with pytest.raises(ValueError, match="not available"):
        D.set_device("cuda:0")


def test_cuda_queries_without_cuda():
    assert not D.is_cuda_available()
    assert D.is_cpu_available()
    assert D.get_cuda_devices() == []
    assert D.get_cuda_device_count() == 0
    # as in the reference, NVRTC (when installed) answers these without a driver
    from treadle._src.backends.cuda.build import nvrtc_available

    if nvrtc_available():
        assert {80, 90} <= set(D.get_cuda_supported_archs())
        assert D.get_cuda_toolkit_version() >= (12, 0)
    else:
        assert D.get_cuda_supported_archs() == []
        assert D.get_cuda_toolkit_version() == (0, 0)
    assert D.get_cuda_driver_version() is None
    assert D.get_devices() == ["cpu"]
    assert D.get_preferred_device() == "cpu"


def test_is_device_available():
    assert D.is_device_available(D.get_device("cpu"))
    assert D.is_device_available("cpu")
    assert not D.is_device_available("cuda:0")
    assert not D.is_device_available("nonsense")


def test_map_cuda_device_without_cuda():
    with pytest.raises(ValueError, match="CUDA is not available"):
        D.map_cuda_device("mygpu")
    with pytest.raises(ValueError, match="CUDA is not available"):
        D.unmap_cuda_device("mygpu")


def test_scoped_device_and_set_device():
    with D.ScopedDevice("cpu") as dev:
        assert dev == "cpu"
        assert D.get_device() is dev
    D.set_device("cpu")
    assert D.get_device() == "cpu"


def test_synchronize_and_init(capsys):
    D.init()
    D.init()
    D.synchronize()
    D.synchronize_device()
    D.synchronize_device("cpu")
    assert capsys.readouterr().out == ""


def test_print_diagnostics(capsys):
    D.print_diagnostics()
    out = capsys.readouterr().out
    assert "Treadle" in out
    assert '"cpu"' in out
    assert "compiler" in out


def test_can_access():
    cpu = D.get_device("cpu")
    assert D.can_access(cpu, cpu)
    assert D.can_access("cpu", "cpu")
    assert cpu.can_access(cpu)

    class FakeArray:
        device = cpu
        ptr = 0

    assert D.can_access("cpu", FakeArray())
    with pytest.raises(TypeError):
        D.can_access("cpu", 42)


def test_reset_runtime_gives_new_objects():
    rt = D.get_runtime()
    assert D.get_runtime() is rt
    D.reset_runtime()
    assert D.get_runtime() is not rt


# ---------------------------------------------------------------------------------------------------------------
# A fake CUDA provider exercises the plug-in hook without a GPU.


class _FakeCudaDevice(D.Device):
    def __init__(self, ordinal: int) -> None:
        super().__init__(f"cuda:{ordinal}", ordinal, name="Fake GPU", arch=90, is_uva=True, is_mempool_supported=True)
        self.synced = 0

    def synchronize(self) -> None:
        self.synced += 1

    @property
    def context(self):
        return f"ctx{self.ordinal}"


class _FakeProvider:
    def __init__(self, count: int = 2) -> None:
        self.count = count
        self.mapped: list[str] = []

    def discover(self, runtime):
        return [_FakeCudaDevice(i) for i in range(self.count)]

    def toolkit_version(self):
        return (12, 8)

    def driver_version(self):
        return 12080

    def supported_archs(self):
        return [80, 90]

    def map_device(self, runtime, alias, context):
        self.mapped.append(alias)
        dev = _FakeCudaDevice(7)
        dev.alias = alias
        return dev

    def unmap_device(self, runtime, device):
        self.mapped.remove(device.alias)

    def diagnostics(self):
        return ["fake provider active"]


@pytest.fixture
def only_test_providers():
    """Set the registered providers (the real CUDA backend's) aside, so each test sees only its own."""
    saved = list(D._HOLDER.providers)
    D._HOLDER.providers.clear()
    D.reset_runtime()
    try:
        yield
    finally:
        D._HOLDER.providers[:] = saved
        D.reset_runtime()


@pytest.fixture
def fake_cuda(only_test_providers):
    provider = _FakeProvider()
    D.register_device_provider(provider)
    try:
        yield provider
    finally:
        D.unregister_device_provider(provider)


def test_provider_discovery(fake_cuda):
    assert D.is_cuda_available()
    assert D.get_cuda_device_count() == 2
    assert [str(d) for d in D.get_devices()] == ["cpu", "cuda:0", "cuda:1"]
    assert D.get_preferred_device() == "cuda:0"
    assert D.get_device() == "cuda:0"
    assert D.get_device("cuda") == "cuda:0"
    assert D.get_cuda_device() == "cuda:0"
    assert D.get_cuda_device(1) == "cuda:1"
    d1 = D.get_device("cuda:1")
    assert d1.is_cuda and not d1.is_cpu and d1.arch == 90 and d1.context == "ctx1"
    assert D.get_cuda_toolkit_version() == (12, 8)
    assert D.get_cuda_driver_version() == 12080
    assert D.get_cuda_supported_archs() == [80, 90]


def test_provider_missing_ordinal(fake_cuda):
    with pytest.raises(ValueError, match=r"'cuda:5' is not available: 2 CUDA device\(s\) found"):
        D.get_device("cuda:5")


def test_provider_set_device_and_scope(fake_cuda):
    D.set_device("cuda:1")
    assert D.get_device() == "cuda:1"
    assert D.get_device("cuda") == "cuda:1"
    with D.ScopedDevice("cpu"):
        assert D.get_device() == "cpu"
    assert D.get_device() == "cuda:1"


def test_provider_synchronize(fake_cuda):
    D.synchronize()
    devs = D.get_cuda_devices()
    assert [d.synced for d in devs] == [1, 1]
    D.synchronize_device("cuda:1")
    assert devs[1].synced == 2


def test_provider_map_unmap(fake_cuda):
    dev = D.map_cuda_device("ext")
    assert D.get_device("ext") is dev
    assert fake_cuda.mapped == ["ext"]
    D.unmap_cuda_device("ext")
    assert fake_cuda.mapped == []
    with pytest.raises(ValueError):
        D.get_device("ext")
    with pytest.raises(ValueError, match="no CUDA device is mapped"):
        D.unmap_cuda_device("ext")


def test_provider_can_access(fake_cuda):
    class Arr:
        def __init__(self, device, pinned=False):
            self.device, self.ptr, self.pinned = device, 0, pinned

    cpu, g0 = D.get_device("cpu"), D.get_device("cuda:0")
    assert D.can_access(g0, Arr(g0))
    assert not D.can_access(cpu, Arr(g0))
    assert not D.can_access(g0, Arr(cpu))
    assert D.can_access(g0, Arr(cpu, pinned=True))
    assert not D.can_access(g0, "cuda:1")


def test_provider_diagnostics(fake_cuda, capsys):
    D.print_diagnostics()
    out = capsys.readouterr().out
    assert '"cuda:0"' in out and "fake provider active" in out and "12.8" in out


def test_unregister_restores_cpu_only(only_test_providers):
    provider = _FakeProvider(1)
    D.register_device_provider(provider)
    assert D.is_cuda_available()
    D.unregister_device_provider(provider)
    assert not D.is_cuda_available()


def test_callable_provider(only_test_providers):
    def provider(runtime):
        return [_FakeCudaDevice(0)]

    D.register_device_provider(provider)
    try:
        assert D.get_cuda_device_count() == 1
        assert D.get_cuda_toolkit_version() == (0, 0)
    finally:
        D.unregister_device_provider(provider)


# ---------------------------------------------------------------------------------------------------------------
# memory


@pytest.mark.parametrize("nbytes", [0, 1, 3, 63, 64, 65, 1000, 1 << 20])
def test_alloc_cpu_alignment(nbytes):
    buf, ptr = memory.alloc_cpu(nbytes)
    assert ptr % memory.ALIGNMENT == 0 and ptr != 0
    assert buf.nbytes == nbytes
    if nbytes:
        assert buf.ctypes.data == ptr


def test_alloc_cpu_negative():
    with pytest.raises(ValueError):
        memory.alloc_cpu(-1)


def test_cpu_allocator_ops():
    alloc = memory.CpuAllocator()
    a = alloc.alloc(16)
    b = alloc.alloc(16)
    assert a.ptr % 64 == 0 and a.nbytes == 16 and a.allocator is alloc
    alloc.memset(a.ptr, 7, 16)
    assert list(a.owner) == [7] * 16
    alloc.memcpy(b.ptr, a.ptr, 8)
    assert list(b.owner[:8]) == [7] * 8
    alloc.memset(a.ptr, 0x1FF, 1)  # only the low byte is used
    assert a.owner[0] == 0xFF
    alloc.copy_to_host(b.ptr, a.ptr, 1)
    assert b.owner[0] == 0xFF
    alloc.free(a)
    assert a.owner is None


def test_device_allocator():
    cpu = D.get_device("cpu")
    assert isinstance(cpu.allocator, memory.CpuAllocator)
    assert cpu.get_allocator(pinned=True) is cpu.allocator  # no pinned memory without CUDA
