"""The CUDA runtime layer: graceful answers without CUDA, and its logic against a fake driver (no GPU needed)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest
from fake_driver import FakeDriver

import treadle as wp
from treadle._src.runtime import cuda_driver as cd
from treadle._src.runtime.device import DeviceUnavailableError

no_gpu = pytest.mark.skipif(wp.is_cuda_available(), reason="a CUDA device is present")


# ---------------------------------------------------------------------------------------------------------------
# Without CUDA
# ---------------------------------------------------------------------------------------------------------------


@no_gpu
def test_cuda_reported_unavailable_quietly():
    code = ("import treadle as wp; wp.init(); print(wp.is_cuda_available(), wp.get_cuda_device_count(), "
            "wp.get_cuda_driver_version())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "False 0 None\n"  # nothing else on stdout
    assert cd.driver() is None
    assert cd.why_unavailable()
    assert wp.get_cuda_devices() == []


@no_gpu
def test_streams_and_events_without_cuda_answer_like_the_reference():
    for make in (wp.Stream, wp.Event, wp.get_stream, wp.record_event, lambda: wp.wait_stream(None),
                 lambda: wp.Stream(device="cpu")):
        with pytest.raises(RuntimeError, match="not a CUDA device"):
            make()
    with pytest.raises(DeviceUnavailableError):
        wp.Stream("cuda:0")
    with pytest.raises(ValueError):
        wp.Event("cuda:0")
    assert wp.ScopedStream(None).__enter__() is None
    with wp.ScopedStream(None):
        pass
    wp.synchronize_stream()
    wp.synchronize_stream("cpu")
    with pytest.raises(TypeError):
        wp.synchronize_event(None)
    with pytest.raises(TypeError):
        wp.get_event_elapsed_time(None, None)


@no_gpu
def test_mempool_queries_on_the_cpu():
    assert wp.is_mempool_supported("cpu") is False
    assert wp.is_mempool_enabled("cpu") is False
    wp.set_mempool_enabled("cpu", False)
    with pytest.raises(ValueError, match="only supported on CUDA"):
        wp.set_mempool_enabled("cpu", True)
    with pytest.raises(ValueError, match="only supported on CUDA"):
        wp.get_mempool_release_threshold("cpu")


def test_public_names_exist():
    for name in ("Stream", "Event", "ScopedStream", "get_stream", "set_stream", "wait_stream", "synchronize_stream",
                 "record_event", "wait_event", "synchronize_event", "get_event_elapsed_time", "compile_aot_module"):
        assert callable(getattr(wp, name)), name


# ---------------------------------------------------------------------------------------------------------------
# Against a fake driver
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def fake():
    drv = FakeDriver(ndev=2)
    cd.use_driver(drv)
    try:
        yield drv
    finally:
        cd.use_driver(None)


def test_discovery_and_properties(fake):
    assert wp.is_cuda_available() and wp.get_cuda_device_count() == 2
    d0, d1 = wp.get_cuda_devices()
    assert (d0.alias, d1.alias) == ("cuda:0", "cuda:1") and d0.is_cuda and d0.name == "NVIDIA H200"
    assert d0.arch == 90 and d0.sm_count == 132 and d0.is_uva and d0.is_mempool_supported
    assert d0.max_shared_memory_per_block == 49152 and wp.get_device("cpu").max_shared_memory_per_block == 0
    assert d0.uuid == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f" and d0.pci_bus_id.startswith("0000:3b")
    assert d0.total_memory == 141 * 2**30 and d0.free_memory == 100 * 2**30
    assert wp.get_device() == "cuda:0" and wp.get_preferred_device() == "cuda:0"
    assert wp.get_cuda_driver_version() == 12080
    assert d0.context == 0xC0 and d1.context == 0xC1  # primary contexts
    assert d0.can_access(d1)


def test_context_guard_restores_the_callers_context(fake):
    d0, d1 = wp.get_cuda_devices()
    fake.current_ctx = 0xAB  # e.g. a context another library made current
    d1.synchronize()
    assert fake.current_ctx == 0xAB and "cuCtxPushCurrent" in fake.names() and "cuCtxPopCurrent" in fake.names()
    fake.current_ctx = d0.context
    fake.calls.clear()
    d0.synchronize()
    assert "cuCtxPushCurrent" not in fake.names()


@pytest.mark.parametrize("pooled", [False, True])
def test_allocation_and_transfers(fake, pooled):
    dev = wp.get_device("cuda:0")
    wp.set_mempool_enabled(dev, pooled)
    assert wp.is_mempool_enabled(dev) is pooled
    alloc = dev.allocator.alloc(64)
    assert alloc.ptr in fake.memory and not dev.allocator.host_accessible
    assert ("cuMemAllocAsync" if pooled else "cuMemAlloc") in fake.names()
    src = np.arange(16, dtype=np.float32)
    dev.allocator.copy_from_host(alloc.ptr, src.ctypes.data, 64)
    out = np.zeros(16, dtype=np.float32)
    dev.allocator.copy_to_host(out.ctypes.data, alloc.ptr, 64)
    assert np.array_equal(out, src) and "cuStreamSynchronize" in fake.names()
    dev.allocator.memset(alloc.ptr, 0, 64)
    dev.allocator.copy_to_host(out.ctypes.data, alloc.ptr, 64)
    assert not out.any()
    ptr = alloc.ptr
    dev.allocator.free(alloc)
    assert ptr not in fake.memory
    assert ("cuMemFreeAsync" if pooled else "cuMemFree") in fake.names()


def test_arrays_round_trip_through_the_cuda_allocator(fake):
    a = wp.array(np.arange(10, dtype=np.float32), device="cuda:0")
    assert a.device == "cuda:0"
    assert a.numpy().tolist() == list(range(10))
    z = wp.zeros(5, dtype=wp.vec3, device="cuda:0")
    assert not z.numpy().any()
    wp.copy(z, wp.array(np.ones((5, 3), dtype=np.float32), dtype=wp.vec3, device="cpu"))
    assert z.numpy().sum() == 15


def test_mempool_attributes(fake):
    dev = wp.get_device("cuda:0")
    wp.set_mempool_release_threshold(dev, 1024)
    assert wp.get_mempool_release_threshold(dev) == 1024
    wp.set_mempool_release_threshold(dev, 0.5)
    assert wp.get_mempool_release_threshold(dev) == int(0.5 * dev.total_memory)
    wp.set_mempool_enabled(dev, True)
    dev.allocator.alloc(100)
    assert wp.get_mempool_used_mem_current(dev) == 100
    assert wp.get_mempool_used_mem_high(dev) == 0


def test_streams_and_events(fake):
    dev = wp.get_device("cuda:0")
    s = wp.Stream(dev)
    hi = wp.Stream(dev, priority=-1)
    assert s.device is dev and s.priority == 0 and hi.priority == -1 and s.is_blocking
    assert s.is_complete
    fake.fail["cuStreamQuery"] = 600
    assert not s.is_complete
    with pytest.raises(TypeError):
        wp.Stream(dev, priority=1.5)
    default = wp.get_stream(dev)
    assert default is dev.stream and default is wp.get_stream()
    wp.set_stream(s)
    assert wp.get_stream() is s
    wp.set_stream(default, sync=True)
    assert "cuStreamWaitEvent" in fake.names()[-3:]
    e = wp.record_event()
    assert isinstance(e, wp.Event) and e.device is dev
    wp.wait_event(e)
    wp.wait_stream(s)
    wp.synchronize_event(e)
    wp.synchronize_stream(s)
    wp.synchronize_stream(dev)
    t0, t1 = wp.Event(enable_timing=True), wp.Event(enable_timing=True)
    s.record_event(t0)
    s.record_event(t1)
    assert wp.get_event_elapsed_time(t0, t1) == 1.25
    with pytest.raises(RuntimeError, match="enable_timing"):
        wp.get_event_elapsed_time(e, t1)
    with pytest.raises(ValueError):
        wp.Event(enable_timing=True, interprocess=True)
    other = wp.Event("cuda:1")
    with pytest.raises(RuntimeError, match="cannot be recorded"):
        s.record_event(other)
    ext = wp.Stream(dev, cuda_stream=0x1234)
    assert ext.cuda_stream == 0x1234 and not ext.owner


def test_scoped_stream_restores_stream_and_device(fake):
    d1 = wp.get_device("cuda:1")
    s = wp.Stream(d1)
    before_dev, before_stream = wp.get_device(), d1.stream
    with wp.ScopedStream(s, sync_exit=True) as got:
        assert got is s and wp.get_device() is d1 and wp.get_stream() is s
    assert wp.get_device() is before_dev and d1.stream is before_stream


def test_errors_carry_the_driver_name(fake):
    fake.fail["cuMemAlloc"] = 2
    dev = wp.get_device("cuda:0")
    wp.set_mempool_enabled(dev, False)
    with pytest.raises(cd.CudaError, match="CUDA_ERROR_OUT_OF_MEMORY") as ei:
        dev.allocator.alloc(10)
    assert isinstance(ei.value, RuntimeError) and ei.value.call == "cuMemAlloc"


def test_launch_packs_bounds_and_args(fake):
    from treadle._src.core.abi import LaunchBounds

    dev = wp.get_device("cuda:0")
    mod = cd.load_module(dev, b"\x7fELF fake")
    fn = mod.function("k_cuda_forward", block_dim=128, name="k")
    assert fn.launch_config(1000) == (8, 128)
    assert fn.launch_config(1000, max_blocks=3) == (3, 128)
    assert fn.launch_config(0) == (0, 128)
    with pytest.raises(wp.LaunchError, match="at most 128"):
        fn.launch_config(10, block_dim=256)
    bounds = LaunchBounds()
    bounds.shape[0], bounds.ndim, bounds.size = 1000, 1, 1000
    args = (ctypes.c_float * 3)(1, 2, 3)
    fake.current_ctx = 0
    fn.launch(bounds, args, block_dim=64)
    rec = fake.launches[-1]
    assert rec["grid"] == (16, 1, 1) and rec["block"] == (64, 1, 1) and rec["size"] == 1000
    assert rec["args"] == ctypes.addressof(args) and rec["ctx"] == dev.context
    assert rec["stream"] == dev.stream.cuda_stream
    s = wp.Stream(dev)
    fn.launch(bounds, args, stream=s)
    assert fake.launches[-1]["stream"] == s.cuda_stream
    bounds.size = 0
    n = len(fake.launches)
    fn.launch(bounds, args)
    assert len(fake.launches) == n  # empty launches are skipped
    nogrid = mod.function("k2", block_dim=256, grid_stride=False)
    with pytest.raises(wp.LaunchError, match="grid-stride"):
        nogrid.launch_config(10_000, max_blocks=2)
    # grid-stride kernels run at most one wave of resident blocks (132 SMs x 2048 threads); max_blocks overrides it
    assert fn.launch_config(2**28) == (132 * 16, 128)
    assert fn.launch_config(2**28, max_blocks=2**31 - 1) == (2**28 // 128, 128)
    assert fn.launch_config(2**28, block_dim=64) == (132 * 32, 64)
    assert nogrid.launch_config(2**28) == (2**28 // 256, 256)  # one CUDA thread per index: never capped


def test_device_side_errors_are_reported(fake):
    from treadle._src.core.errors import SourceLoc

    dev = wp.get_device("cuda:0")
    mod = cd.load_module(dev, b"\x7fELF fake")
    fn = mod.function("kb_cuda_backward", name="my_kernel", ckpt_bytes=2048,
                      locs=[SourceLoc("/x/model.py", 12, 4)])
    fn.check_errors()  # nothing recorded
    ptr, _ = mod.global_address("treadle_cuda_ckpt_overflow")
    ctypes.c_uint64.from_address(ptr).value = 5000
    with pytest.raises(wp.LaunchError, match=r"needs 5000 bytes .*'cuda_ckpt_bytes': 8192"):
        fn.check_errors()
    fn.check_errors()  # reported once
    ptr, _ = mod.global_address("treadle_cuda_checked_error")
    (ctypes.c_int64 * 6).from_address(ptr)[:] = [1, 0, 77, 0, 9, 4]
    with pytest.raises(wp.CheckedModeError, match=r"model.py:12:5: kernel 'my_kernel', thread 77: index 9 is out "
                                                  r"of bounds for dimension 0 of extent 4"):
        fn.check_errors()


def test_pinned_allocator(fake):
    rt_alloc = wp.get_device("cpu").get_allocator(pinned=True)
    assert isinstance(rt_alloc, cd.PinnedAllocator) and rt_alloc.host_accessible
    a = rt_alloc.alloc(32)
    rt_alloc.memset(a.ptr, 7, 32)
    assert bytes((ctypes.c_ubyte * 32).from_address(a.ptr)) == b"\x07" * 32
    ptr = a.ptr
    del a
    import gc

    gc.collect()
    assert ptr not in fake.memory


def test_map_cuda_device_wraps_an_external_context(fake):
    dev = wp.map_cuda_device("ext", 0xC1)
    assert dev.alias == "ext" and dev.ordinal == 1 and not dev.is_primary and dev.context == 0xC1
    assert wp.get_device("ext") is dev
    wp.unmap_cuda_device("ext")


def test_use_driver_none_restores_detection(fake):
    assert wp.is_cuda_available()
    cd.use_driver(None)
    assert wp.is_cuda_available() == (cd.driver() is not None)
