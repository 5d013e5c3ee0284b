"""``wp.launch`` and arrays on ``cuda:N`` devices, checked against a fake driver (no GPU needed).

The fake driver's "device memory" is host memory and its launches run the CPU build of the same kernel (the CUDA
``Args`` struct is byte for byte the CPU one), so these tests check the whole host side of the CUDA path with real
results: instance selection, argument packing, grid computation, streams, recorded launches, adjoints and the
Tape, array creation and transfers. The binaries are stand-ins (NVRTC is exercised by ``test_cuda_compile.py``),
except in ``test_launch_with_real_nvrtc_binary``.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from fake_driver import FakeDriver, cpu_backed_driver, cpu_executor

import treadle as wp
from treadle._src.backends.args import make_packer
from treadle._src.backends.cuda import build as cb
from treadle._src.backends.cuda import launch as cl
from treadle._src.runtime import cuda_driver as cd


@wp.struct
class Params:
    scale: float
    offset: wp.vec3


@wp.kernel(module="cuda_launch_tests")
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel(module="cuda_launch_tests")
def grid3(u: wp.array3d(dtype=float), p: Params, out: wp.array3d(dtype=wp.vec3)):
    i, j, k = wp.tid()
    out[i, j, k] = p.offset * (u[i, j, k] * p.scale) + wp.vec3(float(i), float(j), float(k))


@wp.kernel(module="cuda_launch_tests")
def square_sum(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i] * wp.sin(x[i]))


@wp.kernel(module="cuda_launch_tests")
def generic_scale(x: wp.array(dtype=Any), s: float, out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = x[i] * type(x[i])(s)


@wp.kernel(module="cuda_launch_tests", launch_bounds=(128, 2))
def bounded(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = float(i)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A two-device fake driver whose launches run the CPU build; CUDA binaries are stand-ins (no NVRTC)."""
    with cpu_backed_driver(tmp_path, monkeypatch) as drv:
        yield drv


def test_forward_launch_matches_numpy_and_packs_like_the_cpu(fake):
    n = 1000
    rng = np.random.default_rng(0)
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y = wp.array(xh, device="cuda:0"), wp.array(yh, device="cuda:0")
    seen = []
    run = fake.executor

    def spy(entry, bounds, args):
        inst = saxpy.get_instance(None)
        seen.append((entry, ctypes.string_at(args, ctypes.sizeof(inst.args_type))))
        run(entry, bounds, args)

    fake.executor = spy
    wp.launch(saxpy, n, inputs=[2.5, x, y], device="cuda:0")
    np.testing.assert_allclose(y.numpy(), 2.5 * xh + yh, rtol=1e-6)
    rec = fake.launches[-1]
    assert rec["grid"] == (4, 1, 1) and rec["block"] == (256, 1, 1) and rec["size"] == n and rec["ndim"] == 1
    assert rec["stream"] == wp.get_device("cuda:0").stream.cuda_stream
    # the bytes the driver got are exactly what the CPU launcher's packers produce for these arguments
    inst = saxpy.get_instance(None)
    ref = inst.args_type()
    for name, t, v in zip(saxpy.param_names, inst.types, [2.5, x, y]):
        setattr(ref, name, make_packer(name, t, saxpy)(v, x.device))
    assert seen[-1][0].endswith("_cuda_forward") and seen[-1][1] == bytes(ref)
    assert ctypes.c_float.from_buffer_copy(seen[-1][1], 0).value == 2.5
    assert ctypes.c_uint64.from_buffer_copy(seen[-1][1], inst.args_type.x.offset).value == x.ptr


def test_multi_dim_launch_with_struct_and_vectors(fake):
    u = np.random.default_rng(1).random((3, 4, 5)).astype(np.float32)
    p = Params()
    p.scale, p.offset = 2.0, wp.vec3(1.0, -1.0, 0.5)
    ud = wp.array(u, device="cuda:1")
    out = wp.zeros((3, 4, 5), dtype=wp.vec3, device="cuda:1")
    wp.launch(grid3, u.shape, inputs=[ud, p], outputs=[out], device="cuda:1")
    idx = np.stack(np.meshgrid(*[np.arange(s) for s in u.shape], indexing="ij"), axis=-1)
    ref = np.array([1.0, -1.0, 0.5], np.float32) * (2.0 * u)[..., None] + idx
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    assert fake.launches[-1]["ndim"] == 3 and fake.launches[-1]["size"] == 60
    assert fake.launches[-1]["ctx"] == wp.get_device("cuda:1").context


def test_generic_kernel_instances_per_dtype(fake):
    for dt, npdt in ((wp.float32, np.float32), (wp.float64, np.float64)):
        x = wp.array(np.arange(7, dtype=npdt), device="cuda:0")
        out = wp.empty(7, dtype=dt, device="cuda:0")
        wp.launch(generic_scale, 7, inputs=[x, 3.0, out], device="cuda:0")
        assert out.numpy().dtype == npdt and out.numpy().tolist() == [3.0 * i for i in range(7)]


def test_current_device_and_default_device(fake):
    x = wp.zeros(10, dtype=float, device="cuda:0")
    with wp.ScopedDevice("cuda:0"):
        wp.launch(bounded, 10, inputs=[x])
    assert x.numpy().tolist() == list(range(10))


def test_tape_backward_on_cuda_matches_the_analytic_gradient(fake):
    xh = np.linspace(-1.0, 2.5, 33).astype(np.float32)
    x = wp.array(xh, device="cuda:0", requires_grad=True)
    loss = wp.zeros(1, dtype=float, device="cuda:0", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_sum, len(xh), inputs=[x, loss], device="cuda:0")
    tape.backward(loss)
    x64 = xh.astype(np.float64)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(x64 * x64 * np.sin(x64)), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x64 * np.sin(x64) + x64 * x64 * np.cos(x64), rtol=1e-4,
                               atol=1e-5)
    assert any(fake.functions[rec["f"]].endswith("_cuda_backward") for rec in fake.launches)
    tape.zero()
    assert not x.grad.numpy().any()


def test_explicit_adjoint_launch_with_adj_arrays(fake):
    xh = np.array([0.5, 1.0, -1.5], np.float32)
    x = wp.array(xh, device="cuda:0")
    loss = wp.zeros(1, dtype=float, device="cuda:0")
    gx = wp.zeros(3, dtype=float, device="cuda:0")
    gl = wp.array([1.0], dtype=float, device="cuda:0")
    wp.launch(square_sum, 3, inputs=[x, loss], adj_inputs=[gx, gl], adjoint=True, device="cuda:0")
    np.testing.assert_allclose(gx.numpy(), 2 * xh * np.sin(xh) + xh * xh * np.cos(xh), rtol=1e-5)
    with pytest.raises(wp.LaunchError, match="on 'cpu'"):
        wp.launch(square_sum, 3, inputs=[x, loss], adj_inputs=[wp.zeros(3, dtype=float, device="cpu"), gl],
                  adjoint=True, device="cuda:0")


def test_recorded_launch_replays_with_new_parameters(fake):
    x = wp.array(np.ones(300, np.float32), device="cuda:0")
    y = wp.zeros(300, dtype=float, device="cuda:0")
    cmd = wp.launch(saxpy, 300, inputs=[2.0, x, y], device="cuda:0", record_cmd=True)
    assert isinstance(cmd, cl.CudaLaunch) and not y.numpy().any()  # recorded, not run
    cmd.launch()
    cmd.set_param_at_index(0, 10.0)
    cmd.launch()
    assert np.all(y.numpy() == 12.0)
    cmd.set_param_by_name("a", -12.0)
    cmd.set_dim(100)
    cmd.launch()
    assert y.numpy()[:100].tolist() == [0.0] * 100 and y.numpy()[100:].tolist() == [12.0] * 200


def test_streams_block_dim_and_max_blocks(fake):
    dev = wp.get_device("cuda:0")
    x = wp.zeros(5000, dtype=float, device=dev)
    s = wp.Stream(dev)
    wp.launch(bounded, 5000, inputs=[x], device=dev, stream=s)
    rec = fake.launches[-1]
    # launch_bounds=(128, 2): the default launch uses the kernel's 128 threads per block
    assert rec["stream"] == s.cuda_stream and rec["block"] == (128, 1, 1) and rec["grid"] == (40, 1, 1)
    wp.launch(bounded, 5000, inputs=[x], device=dev, block_dim=64, max_blocks=7)
    assert fake.launches[-1]["block"] == (64, 1, 1) and fake.launches[-1]["grid"] == (7, 1, 1)
    with pytest.raises(wp.LaunchError, match="at most 128"):
        wp.launch(bounded, 10, inputs=[x], device=dev, block_dim=512)
    with wp.ScopedStream(s):
        wp.launch(saxpy, 10, inputs=[1.0, x, x], device=dev)
    assert fake.launches[-1]["stream"] == s.cuda_stream and fake.launches[-1]["block"] == (256, 1, 1)
    with pytest.raises(wp.LaunchError, match="belongs to"):
        wp.launch(saxpy, 10, inputs=[1.0, x, x], device=dev, stream=wp.Stream("cuda:1"))
    n = len(fake.launches)
    wp.launch(saxpy, 0, inputs=[1.0, x, x], device=dev)
    assert len(fake.launches) == n  # empty launches are not sent
    assert x.numpy().tolist() == [float(2 * i) for i in range(10)] + [float(i) for i in range(10, 5000)]


def test_launch_bounds_reach_the_cuda_entry(fake):
    inst = bounded.get_instance(None)
    entry = cb.entry_options(bounded.options, bounded.module.options)
    assert (entry.block_dim, entry.min_blocks) == (128, 2)
    built = cb.prepare_cuda(inst.ir, inst.deps, cb.CudaCompileOptions(arch=90), bounded.key, entry=entry)
    assert "__launch_bounds__(128, 2)" in built.block
    plain = cb.entry_options(saxpy.options, saxpy.module.options)
    assert (plain.block_dim, plain.min_blocks) == (256, 0)
    # a module-wide launch_bounds applies to kernels without their own
    mod_opts = {"launch_bounds": 64}
    assert cb.entry_options({}, mod_opts).block_dim == 64
    assert cb.entry_options({"launch_bounds": 512}, mod_opts).block_dim == 512


def test_argument_errors(fake):
    x = wp.zeros(4, dtype=float, device="cuda:0")
    with pytest.raises(wp.LaunchError, match="is on device 'cpu'"):
        wp.launch(saxpy, 4, inputs=[1.0, wp.zeros(4, dtype=float, device="cpu"), x], device="cuda:0")
    with pytest.raises(wp.LaunchError, match="is on device 'cuda:1'"):
        wp.launch(saxpy, 4, inputs=[1.0, wp.zeros(4, dtype=float, device="cuda:1"), x], device="cuda:0")
    with pytest.raises(wp.LaunchError, match="array of float32"):
        wp.launch(saxpy, 4, inputs=[1.0, wp.zeros(4, dtype=wp.int32, device="cuda:0"), x], device="cuda:0")
    with pytest.raises(wp.LaunchError, match="takes 3 argument"):
        wp.launch(saxpy, 4, inputs=[1.0, x], device="cuda:0")
    with pytest.raises(wp.LaunchError, match="wp.Stream"):
        wp.launch(saxpy, 4, inputs=[1.0, x, x], device="cuda:0", stream=123)


def test_driver_launch_failure_is_a_cuda_error(fake):
    x = wp.zeros(4, dtype=float, device="cuda:0")
    fake.fail["cuLaunchKernel"] = 700
    with pytest.raises(cd.CudaError, match="CUDA_ERROR_ILLEGAL_ADDRESS") as ei:
        wp.launch(saxpy, 4, inputs=[1.0, x, x], device="cuda:0")
    assert ei.value.call == "cuLaunchKernel" and ei.value.code == 700
    fake.fail["cuModuleLoadData"] = 2
    with pytest.raises(cd.CudaError, match="cuModuleLoadData"):
        wp.launch(bounded, 4, inputs=[x], device="cuda:1")  # loading on another device fails: reported


def test_arrays_on_cuda(fake):
    dev = "cuda:0"
    h = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = wp.array(h, device=dev)
    assert a.device.is_cuda and not a.device.allocator.host_accessible
    np.testing.assert_array_equal(a.numpy(), h)
    e = wp.empty((4, 6), dtype=float, device=dev)
    wp.copy(e, a)  # device to device
    np.testing.assert_array_equal(e.numpy(), h)
    f = wp.full(5, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3, device=dev)
    np.testing.assert_array_equal(f.numpy(), np.tile([1.0, 2.0, 3.0], (5, 1)))
    f.zero_()
    assert not f.numpy().any()
    f.fill_(wp.vec3(4.0, 5.0, 6.0))
    assert f.numpy()[3].tolist() == [4.0, 5.0, 6.0]
    host = wp.zeros((4, 6), dtype=float, device="cpu")
    wp.copy(host, a)  # device to host
    np.testing.assert_array_equal(host.numpy(), h)
    b = wp.zeros((4, 6), dtype=float, device="cuda:1")
    wp.copy(b, a)  # device to device, across devices (peer)
    np.testing.assert_array_equal(b.numpy(), h)
    a.assign(np.ones((4, 6), np.float32))
    assert a.numpy().sum() == 24
    part = wp.zeros(10, dtype=float, device=dev)
    wp.copy(part, wp.array(np.arange(10, dtype=np.float32), device="cpu"), dest_offset=2, src_offset=1, count=3)
    assert part.numpy().tolist()[:6] == [0, 0, 1, 2, 3, 0]
    assert a.to("cpu").device.is_cpu and np.all(a.to("cpu").numpy() == 1)
    assert a[1, 2] == 1.0
    z = wp.zeros_like(a)
    assert z.device == a.device and z.shape == a.shape
    c = wp.clone(a)
    assert c.device == a.device and c.numpy().sum() == 24
    fake.calls.clear()
    g = wp.full(1000, 2.5, dtype=float, device=dev)  # a uniform 4-byte pattern: one device memset, no host buffer
    assert "cuMemsetD32Async" in fake.names() and "cuMemcpyHtoDAsync" not in fake.names()
    assert np.all(g.numpy() == 2.5)
    t = wp.zeros((4, 6), dtype=float, device=dev).transpose()
    t[1:3].fill_(3.0)  # non-contiguous fill through the host
    assert t.numpy()[1:3].tolist() == [[3.0] * 4] * 2 and t.numpy().sum() == 24.0
    np.testing.assert_array_equal(wp.array(h, device=dev).transpose().numpy(), h.T)  # non-contiguous read


def test_no_gpu_launch_is_a_clear_error_and_prints_nothing():
    code = ("import treadle as wp\n"
            "@wp.kernel\n"
            "def k(x: wp.array(dtype=float)):\n"
            "    pass\n"
            "try:\n"
            "    wp.launch(k, 1, inputs=[None], device='cuda:0')\n"
            "except Exception as e:\n"
            "    import sys; print(type(e).__name__, file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    if not wp.is_cuda_available():
        assert res.stdout == "" and "DeviceUnavailableError" in res.stderr


@pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")
def test_launch_with_real_nvrtc_binary(tmp_path):
    """The full path with a real CUBIN: NVRTC compiles for the fake device's sm_90, the fake runs the CPU build."""
    drv = FakeDriver(ndev=1)
    drv.executor = cpu_executor()
    cd.use_driver(drv)
    try:
        x = wp.array(np.arange(5, dtype=np.float32), device="cuda:0")
        y = wp.ones(5, dtype=float, device="cuda:0")
        wp.launch(saxpy, 5, inputs=[3.0, x, y], device="cuda:0")
        assert y.numpy().tolist() == [1.0, 4.0, 7.0, 10.0, 13.0]
        fn = saxpy.get_instance(None)._cuda_functions[("cuda:0", False)]
        assert fn.module.label.endswith(".sm90.cubin") and fn.entry.endswith("_cuda_forward")
    finally:
        cd.use_driver(None)


def test_graph_capture_and_replay(fake):
    dev = wp.get_device("cuda:0")
    x = wp.array(np.ones(64, np.float32), device=dev)
    y = wp.zeros(64, dtype=float, device=dev)
    with wp.ScopedCapture(device=dev) as cap:
        assert dev.stream.is_capturing
        wp.launch(saxpy, 64, inputs=[2.0, x, y], device=dev)
        wp.launch(saxpy, 64, inputs=[1.0, y, x], device=dev)  # x += y
    assert not dev.stream.is_capturing and not y.numpy().any()  # recorded, not run
    assert "cuStreamBeginCapture" in fake.names() and "cuGraphInstantiate" in fake.names()
    for _ in range(3):
        wp.capture_launch(cap.graph)
    # (x, y) = (1, 0) -> (3, 2) -> (11, 8) -> (41, 30)
    assert y.numpy()[0] == 30.0 and x.numpy()[0] == 41.0
    s = wp.Stream(dev)
    wp.set_mempool_enabled(dev, True)
    wp.capture_begin(stream=s)
    assert wp.get_stream(dev) is s and s.is_capturing
    z = wp.zeros(8, dtype=float, device=dev)  # stream-ordered pool allocation inside the capture
    assert "cuMemAllocAsync" in fake.names()
    wp.launch(bounded, 8, inputs=[z], device=dev)
    g = wp.capture_end()
    assert wp.get_stream(dev) is not s
    wp.capture_launch(g, stream=s)
    assert z.numpy().tolist() == [float(i) for i in range(8)]
    with pytest.raises(RuntimeError, match="without a matching"):
        wp.capture_end()
    fake.fail["cuStreamBeginCapture"] = 900
    with pytest.raises(cd.CudaError, match="cuStreamBeginCapture"):
        wp.capture_begin(device=dev)
    with pytest.raises(RuntimeError, match="already being captured"):
        wp.capture_begin(device=dev, external=True)


def test_repeated_launches_repack_only_what_changed(fake):
    import threading

    x1 = wp.array(np.ones(8, np.float32), device="cuda:0")
    x2 = wp.array(np.full(8, 2.0, np.float32), device="cuda:0")
    y = wp.zeros(8, dtype=float, device="cuda:0")
    sent = []
    run = fake.executor
    size = ctypes.sizeof(saxpy.get_instance(None).args_type)

    def spy(entry, bounds, args):
        sent.append((args, ctypes.string_at(args, size)))
        run(entry, bounds, args)

    fake.executor = spy
    for a, x in ((1.0, x1), (1.0, x1), (3.0, x1), (3.0, x2)):
        wp.launch(saxpy, 8, inputs=[a, x, y], device="cuda:0")
    assert y.numpy().tolist() == [1.0 + 1.0 + 3.0 + 6.0] * 8
    assert len({addr for addr, _ in sent}) == 1  # one struct reused by this thread
    assert sent[0][1] == sent[1][1] and sent[1][1] != sent[2][1] != sent[3][1]
    y.grad = wp.zeros(8, dtype=float, device="cuda:0")  # a new descriptor for y: repacked
    wp.launch(saxpy, 8, inputs=[3.0, x2, y], device="cuda:0")
    off = saxpy.get_instance(None).args_type.y.offset + 8  # ArrayDesc.grad
    assert ctypes.c_uint64.from_buffer_copy(sent[-1][1], off).value == y.grad.ptr
    other = []
    t = threading.Thread(target=lambda: other.append(wp.launch(saxpy, 8, inputs=[0.0, x1, y], device="cuda:0")))
    t.start()
    t.join()
    assert sent[-1][0] != sent[0][0]  # another thread packs a struct of its own


def test_repeat_launches_take_the_short_path_with_the_same_results(fake, monkeypatch):
    from treadle._src.lang import launch as launch_mod

    slow = []
    real = launch_mod._launch_slow
    monkeypatch.setattr(launch_mod, "_launch_slow", lambda *a, **kw: slow.append(a[0].key) or real(*a, **kw))
    xh = np.linspace(-1.0, 2.0, 16).astype(np.float32)
    x = wp.array(xh, device="cuda:0", requires_grad=True)
    loss = wp.zeros(1, dtype=float, device="cuda:0", requires_grad=True)
    wp.launch(square_sum, 16, inputs=[x, loss], device="cuda:0")  # first launch: the general launcher
    assert slow == ["square_sum"]
    tape = wp.Tape()
    with tape:
        wp.launch(square_sum, 16, inputs=[x, loss], device="cuda:0")  # the short path, recorded on the tape
    assert slow == ["square_sum"] and len(tape.launches) == 1
    tape.backward(loss)  # (an adjoint launch: the general launcher)
    assert slow == ["square_sum"] * 2
    x64 = xh.astype(np.float64)
    np.testing.assert_allclose(loss.numpy()[0], 2 * np.sum(x64 * x64 * np.sin(x64)), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x64 * np.sin(x64) + x64 * x64 * np.cos(x64), rtol=1e-4,
                               atol=1e-5)
    # anything unusual goes through the general launcher: another device, stream, block size, too few arguments
    wp.launch(square_sum, 16, inputs=[wp.zeros(16, dtype=float, device="cuda:1"),
                                      wp.zeros(1, dtype=float, device="cuda:1")], device="cuda:1")
    wp.launch(square_sum, 16, inputs=[x, loss], device="cuda:0", stream=wp.Stream("cuda:0"))
    wp.launch(square_sum, 16, inputs=[x, loss], device="cuda:0", block_dim=64)
    with pytest.raises(wp.LaunchError, match="takes 2 argument"):
        wp.launch(square_sum, 16, inputs=[x], device="cuda:0")
    assert slow == ["square_sum"] * 6


def test_launch_without_nvrtc_says_how_to_install_it(monkeypatch):
    drv = FakeDriver(ndev=1)
    cd.use_driver(drv)
    try:
        broken = cb.Nvrtc()
        broken._error = "ModuleNotFoundError: No module named 'cuda.bindings.nvrtc'"
        monkeypatch.setattr(cb, "_nvrtc", broken)

        @wp.kernel(module="unique")
        def fresh(x: wp.array(dtype=float)):
            x[wp.tid()] = 1.0

        x = wp.zeros(3, dtype=float, device="cuda:0")  # the driver side works without NVRTC
        with pytest.raises(cb.NvrtcUnavailableError, match=r"pip install 'treadle\[cuda\]'"):
            wp.launch(fresh, 3, inputs=[x], device="cuda:0")
        assert "cuLaunchKernel" not in drv.names()
    finally:
        cd.use_driver(None)
