"""Streams, events, graph capture and replay, the memory pool, pinned memory and transfers on the GPU.

Skipped entirely without a CUDA device (``tests/gpu/conftest.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel(module="gpu_runtime_suite")
def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel(module="gpu_runtime_suite")
def busy(x: wp.array(dtype=float), n: int):
    i = wp.tid()
    v = x[i]
    for _k in range(n):
        v = wp.sin(v) * 0.999 + 0.001
    x[i] = v


def test_device_properties(dev):
    assert dev.is_cuda and dev.arch >= 50 and dev.sm_count > 0 and dev.total_memory > dev.free_memory > 0
    assert dev.max_shared_memory_per_block >= 48 * 1024
    assert wp.get_cuda_device_count() >= 1 and wp.get_cuda_driver_version() > 0
    assert dev.name and dev.context is not None


def test_streams_events_and_timing(dev):
    n = 1 << 22
    s1, s2 = wp.Stream(dev), wp.Stream(dev, priority=-1)
    x = wp.full(n, 1.0, dtype=float, device=dev)
    y = wp.zeros(n, dtype=float, device=dev)
    e0, e1 = wp.Event(dev, enable_timing=True), wp.Event(dev, enable_timing=True)
    with wp.ScopedStream(s1):
        s1.record_event(e0)
        wp.launch(busy, n, inputs=[x, 50])
        s1.record_event(e1)
    s2.wait_stream(s1)
    wp.launch(axpy, n, inputs=[1.0, x, y], stream=s2)
    wp.synchronize_stream(s2)
    assert wp.get_event_elapsed_time(e0, e1) > 0.0
    ref = np.ones(n)
    for _ in range(50):
        ref = np.sin(ref) * 0.999 + 0.001
    np.testing.assert_allclose(y.numpy()[:1000], ref[:1000], rtol=1e-4)
    assert s1.is_complete and e1.is_complete


def test_graph_capture_and_replay(dev):
    n = 1 << 16
    x = wp.full(n, 1.0, dtype=float, device=dev)
    y = wp.zeros(n, dtype=float, device=dev)
    wp.launch(axpy, n, inputs=[0.0, x, y])  # load the module before capturing (no loading inside a capture)
    with wp.ScopedCapture(device=dev) as cap:
        wp.launch(axpy, n, inputs=[2.0, x, y])
        wp.launch(axpy, n, inputs=[1.0, y, x])
    assert not y.numpy().any()  # captured, not run
    for _ in range(3):
        wp.capture_launch(cap.graph)
    assert y.numpy()[0] == 30.0 and x.numpy()[0] == 41.0


def test_mempool_allocation_inside_capture(dev):
    if not dev.is_mempool_supported:
        pytest.skip("device has no memory pool")
    wp.set_mempool_enabled(dev, True)
    x = wp.full(1024, 3.0, dtype=float, device=dev)
    wp.launch(axpy, 1024, inputs=[0.0, x, x])  # load the module before capturing
    wp.capture_begin(dev)
    try:
        tmp = wp.zeros(1024, dtype=float, device=dev)  # stream-ordered allocation recorded in the graph
        wp.launch(axpy, 1024, inputs=[1.0, x, tmp])
        wp.launch(axpy, 1024, inputs=[1.0, tmp, x])
    finally:
        g = wp.capture_end(dev)
    wp.capture_launch(g)
    wp.synchronize_device(dev)
    assert x.numpy()[0] == 6.0
    assert wp.get_mempool_used_mem_current(dev) >= 0
    wp.set_mempool_release_threshold(dev, 0.25)
    assert wp.get_mempool_release_threshold(dev) > 0


def test_transfers_pinned_and_strided(dev):
    h = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    a = wp.array(h, device=dev)
    pinned = wp.empty((4, 6), dtype=float, device="cpu", pinned=True)
    wp.copy(pinned, a)
    wp.synchronize_device(dev)
    np.testing.assert_array_equal(pinned.numpy(), h)
    np.testing.assert_array_equal(a.transpose().numpy(), h.T)  # non-contiguous device read
    b = wp.zeros((6, 4), dtype=float, device=dev)
    wp.copy(b, a.transpose())  # non-contiguous device to device
    np.testing.assert_array_equal(b.numpy(), h.T)
    a[1:3, 2:4].fill_(7.0)  # non-contiguous fill on the device
    assert a.numpy()[1:3, 2:4].tolist() == [[7.0, 7.0], [7.0, 7.0]] and a.numpy()[0, 0] == 0.0
    a.zero_()
    assert not a.numpy().any()


def test_peer_copies(dev):
    if wp.get_cuda_device_count() < 2:
        pytest.skip("one CUDA device")
    other = wp.get_device("cuda:1")
    a = wp.array(np.arange(100, dtype=np.float32), device=dev)
    b = wp.zeros(100, dtype=float, device=other)
    wp.copy(b, a)
    assert b.numpy().tolist() == list(range(100))


def test_cuda_array_interface_round_trip(dev):
    a = wp.array(np.arange(10, dtype=np.float32), device=dev)
    iface = a.__cuda_array_interface__
    assert iface["data"][0] == a.ptr and iface["version"] == 3 and iface["stream"] == dev.stream.cuda_stream

    class Holder:
        __cuda_array_interface__ = iface

    view = wp.array(Holder())
    assert view.ptr == a.ptr and view.device == dev
    wp.launch(axpy, 10, inputs=[1.0, a, view])  # view aliases a: a doubles
    assert a.numpy().tolist() == [2.0 * i for i in range(10)]
