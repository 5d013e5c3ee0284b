"""Interop with PyTorch, CuPy and Numba on the GPU (each skipped when absent), and geometry queries on the GPU.

Skipped entirely without a CUDA device (``tests/gpu/conftest.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel(module="gpu_interop_suite")
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


@wp.kernel(module="gpu_interop_suite")
def neighbours(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float, counts: wp.array(dtype=int)):
    t = wp.tid()
    p = pts[t]
    q = wp.hash_grid_query(grid, p, r)
    index = 0
    n = 0
    while wp.hash_grid_query_next(q, index):
        if wp.length(p - pts[index]) <= r:
            n += 1
    counts[t] = n


@wp.kernel(module="gpu_interop_suite")
def box_hits(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int)):
    t = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo[t], hi[t])
    item = 0
    n = 0
    while wp.bvh_query_next(q, item):
        n += 1
    counts[t] = n


@wp.kernel(module="gpu_interop_suite")
def closest(mesh: wp.uint64, q: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float)):
    t = wp.tid()
    r = wp.mesh_query_point_no_sign(mesh, q[t], 1.0e6)
    if r.result:
        dist[t] = wp.length(wp.mesh_eval_position(mesh, r.face, r.u, r.v) - q[t])


def test_torch_zero_copy_and_streams(dev):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    t = torch.arange(1000, dtype=torch.float32, device="cuda:0")
    a = wp.from_torch(t)
    assert a.ptr == t.data_ptr() and a.device == dev
    with wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream())):
        wp.launch(scale, 1000, inputs=[a, 2.0])
    torch.cuda.synchronize()
    assert torch.equal(t, torch.arange(1000, dtype=torch.float32, device="cuda:0") * 2)
    back = wp.to_torch(a)
    assert back.data_ptr() == a.ptr
    wp.launch(scale, 1000, inputs=[t, 0.5])  # a tensor passed straight to a launch
    torch.cuda.synchronize()
    assert float(t[10]) == 10.0


def test_cupy_interface_and_dlpack(dev):
    cp = pytest.importorskip("cupy")
    c = cp.arange(100, dtype=cp.float32)
    a = wp.array(c)  # __cuda_array_interface__: a view
    assert a.ptr == c.data.ptr
    wp.launch(scale, 100, inputs=[a, 3.0])
    wp.synchronize_device(dev)
    assert float(c[5]) == 15.0
    back = cp.asarray(a)  # CuPy reads Treadle's interface
    assert back.data.ptr == a.ptr and float(back[5]) == 15.0
    d = wp.from_dlpack(c)
    assert d.ptr == c.data.ptr


def test_numba_device_array(dev):
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("numba without CUDA")
    n = numba_cuda.to_device(np.arange(50, dtype=np.float32))
    a = wp.array(n)
    wp.launch(scale, 50, inputs=[a, -1.0])
    wp.synchronize_device(dev)
    assert n.copy_to_host().tolist() == [-float(i) for i in range(50)]
    m = numba_cuda.as_cuda_array(a)  # Numba reads Treadle's interface
    assert m.copy_to_host()[3] == -3.0


# (in the dry run the fake's device memory is host memory: tests/cuda/test_geometry_cuda.py checks that the ids
# are device allocations and that the host mirrors are not read)
def test_hash_grid_against_brute_force(dev):
    rng = np.random.default_rng(0)
    pts = rng.random((5000, 3)).astype(np.float32)
    r = 0.05
    grid = wp.HashGrid(32, 32, 32, device=dev)
    p = wp.array(pts, dtype=wp.vec3, device=dev)
    grid.build(p, r)
    counts = wp.zeros(len(pts), dtype=int, device=dev)
    wp.launch(neighbours, len(pts), inputs=[grid.id, p, r, counts])
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    assert counts.numpy().tolist() == (d <= r).sum(axis=1).tolist()


def test_mesh_closest_point_against_the_cpu(dev):
    verts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    tris = np.array([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], np.int32)
    q = np.random.default_rng(1).standard_normal((1000, 3)).astype(np.float32)
    out = []
    for d in ("cpu", dev):
        mesh = wp.Mesh(points=wp.array(verts, dtype=wp.vec3, device=d), indices=wp.array(tris, device=d))
        dist = wp.zeros(len(q), dtype=float, device=d)
        wp.launch(closest, len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3, device=d), dist], device=d)
        out.append(dist.numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("constructor", ["sah", "median", "lbvh"])
def test_bvh_against_brute_force_and_the_cpu(dev, constructor):
    rng = np.random.default_rng(2)
    c = rng.random((3000, 3)).astype(np.float32)
    lo, hi = c - 0.01, c + 0.01
    q = rng.random((1000, 3)).astype(np.float32)
    qlo, qhi = q - 0.05, q + 0.05
    out = []
    for d in ("cpu", dev):
        bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=d), wp.array(hi, dtype=wp.vec3, device=d),
                     constructor=constructor)
        counts = wp.zeros(len(q), dtype=int, device=d)
        wp.launch(box_hits, len(q), inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3, device=d),
                                            wp.array(qhi, dtype=wp.vec3, device=d), counts], device=d)
        out.append(counts.numpy().copy())
    overlap = np.all((lo[None] <= qhi[:, None]) & (hi[None] >= qlo[:, None]), axis=-1).sum(axis=1)
    np.testing.assert_array_equal(out[1], overlap)
    np.testing.assert_array_equal(out[1], out[0])


def test_marching_cubes_against_the_cpu(dev):
    n = 32
    x = np.linspace(-1.0, 1.0, n)
    field = (np.sqrt(x[:, None, None] ** 2 + x[None, :, None] ** 2 + x[None, None, :] ** 2) - 0.6).astype(np.float32)
    out = []
    for d in ("cpu", dev):
        mc = wp.MarchingCubes(n, n, n, device=d)
        mc.surface(wp.array(field, dtype=float, device=d), 0.0)
        out.append((mc.verts.numpy().copy(), mc.indices.numpy().copy()))
    assert len(out[0][1]) > 0
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[1][1], out[0][1])
