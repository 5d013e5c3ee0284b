"""HashGrid, Bvh (SAH, median, LBVH, groups), Mesh and MarchingCubes on ``cuda:0``, against a fake driver.

The fake's launches run the CPU build of each kernel and its "device memory" is host memory, so results are real:
every structure is built and queried on ``cuda:0`` and on the CPU and the results must agree. Since the fake cannot
tell host pointers from device ones, two further checks stand in for a GPU:

- the structure's id is an allocation of the fake device (``cuMemAlloc``/``cuMemAllocAsync``), holding a copy of the
  descriptor whose buffers are device allocations too; after the build the host mirror is wiped, so a query that
  still read it would fail;
- ``array.numpy()`` of device memory returns a read-only copy while the structures are built, so a build that wrote
  through it (losing the write on a GPU) raises.
"""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest
from fake_driver import FakeDriver, cpu_executor

import treadle as wp
from treadle._src.backends.cuda import build as cb
from treadle._src.lang.array import array as array_cls
from treadle._src.runtime import cuda_driver as cd

MOD = "cuda_geometry_tests"


@wp.kernel(module=MOD)
def neighbour_sums(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float, counts: wp.array(dtype=int),
                   sums: wp.array(dtype=int)):
    t = wp.tid()
    p = pts[t]
    q = wp.hash_grid_query(grid, p, r)
    index = 0
    n = 0
    s = 0
    while wp.hash_grid_query_next(q, index):
        if wp.length(p - pts[index]) <= r:
            n += 1
            s += index
    counts[t] = n
    sums[t] = s


@wp.kernel(module=MOD)
def box_hits(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int),
             sums: wp.array(dtype=int)):
    t = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo[t], hi[t])
    item = 0
    n = 0
    s = 0
    while wp.bvh_query_next(q, item):
        n += 1
        s += item
    counts[t] = n
    sums[t] = s


@wp.kernel(module=MOD)
def mesh_queries(mesh: wp.uint64, q: wp.array(dtype=wp.vec3), d: wp.vec3, dist: wp.array(dtype=float),
                 sign: wp.array(dtype=float), hit_t: wp.array(dtype=float), wsign: wp.array(dtype=float)):
    t = wp.tid()
    r = wp.mesh_query_point(mesh, q[t], 1.0e6)
    if r.result:
        dist[t] = wp.length(wp.mesh_eval_position(mesh, r.face, r.u, r.v) - q[t])
        sign[t] = r.sign
    w = wp.mesh_query_point_sign_winding_number(mesh, q[t], 1.0e6)  # reads the winding data of the tree's nodes
    wsign[t] = w.sign
    h = wp.mesh_query_ray(mesh, q[t], d, 1.0e6)
    hit_t[t] = -1.0
    if h.result:
        hit_t[t] = h.t


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A one-device fake driver whose launches run the CPU build; CUDA binaries are stand-ins (no NVRTC)."""

    def stub_compile(items, options):
        for it in items:
            p = tmp_path / f"{it.key}.cubin"
            p.write_bytes(b"\x7fELF stand-in " + it.entry.encode())
            it.binary_path = p

    monkeypatch.setattr(cb, "compile_cuda_batch", stub_compile)
    # Device arrays of an earlier fake must not be freed through this one: a freed fake's buffers are host memory
    # that this fake may hand out again, and the late cuMemFree would release a live buffer. Collect them first
    # (with no driver installed their release does nothing), and this test's own before uninstalling this fake.
    gc.collect()
    drv = FakeDriver(ndev=1)
    drv.executor = cpu_executor()
    cd.use_driver(drv)
    try:
        yield drv
    finally:
        gc.collect()
        cd.use_driver(None)


@pytest.fixture
def poisoned(fake, monkeypatch):
    """``numpy()`` of device arrays returns read-only copies: writing through one raises instead of being lost."""
    real = array_cls.numpy

    def numpy(self):
        out = real(self)
        if not self.device.allocator.host_accessible:
            out.setflags(write=False)
        return out

    monkeypatch.setattr(array_cls, "numpy", numpy)
    return fake


def _check_device_descriptor(fake, obj, pointer_fields):
    """The id is a fake-device allocation; the descriptor's buffers are too. Returns a function that restores the
    host mirror, which is wiped until then (kernels launched meanwhile must not read it)."""
    mirror = obj.mirror if hasattr(obj, "mirror") else obj._mirror
    host = mirror.host
    assert mirror.on_device
    assert obj.id in fake.memory and obj.id != ctypes.addressof(host)
    assert mirror.storage.ptr == obj.id and mirror.storage.device.is_cuda
    dev_copy = type(host).from_buffer_copy(ctypes.string_at(obj.id, ctypes.sizeof(host)))
    for name in pointer_fields:
        obj_ = dev_copy
        for part in name.split("."):
            obj_ = getattr(obj_, part)
        ptr = obj_ if isinstance(obj_, int) else obj_.data
        assert ptr in fake.memory, name
    saved = bytes(host)
    ctypes.memset(ctypes.addressof(host), 0xFF, ctypes.sizeof(host))
    return lambda: ctypes.memmove(ctypes.addressof(host), saved, len(saved))


def _points(n, seed):
    return np.random.default_rng(seed).random((n, 3)).astype(np.float32)


def _grid_run(device, pts, r, dims, groups=None):
    grid = wp.HashGrid(*dims, device=device)
    p = wp.array(pts, dtype=wp.vec3, device=device)
    grid.build(p, r)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    sums = wp.zeros(len(pts), dtype=int, device=device)
    return grid, p, counts, sums


@pytest.mark.parametrize("dims", [(16, 16, 16), (3, 5, 4)])
def test_hash_grid_matches_cpu_and_brute_force(poisoned, where, dims):
    pts = _points(700, 0)
    r = 0.08
    out = {}
    for d in ("cpu", "cuda:0"):
        grid, p, counts, sums = _grid_run(d, pts, r, dims)
        restore = _check_device_descriptor(poisoned, grid, ("point_ids", "cell_ranges", "sorted_points")) \
            if d != "cpu" else None
        wp.launch(neighbour_sums, len(pts), inputs=[grid.id, p, r, counts, sums], device=d)
        if restore:
            restore()
        out[d] = (counts.numpy(), sums.numpy())
        # the points' bounding box, as the device reads it (the device copy of the descriptor)
        raw = grid._mirror.storage.numpy().tobytes() if d != "cpu" else bytes(grid._desc)
        desc = type(grid._desc).from_buffer_copy(raw[: ctypes.sizeof(grid._desc)])
        out[d + " bounds"] = (list(desc.lower), list(desc.upper))
    dist = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    ref = dist <= r
    np.testing.assert_array_equal(out["cuda:0"][0], ref.sum(axis=1))
    np.testing.assert_array_equal(out["cuda:0"][1], (ref * np.arange(len(pts))).sum(axis=1))
    for a, b in zip(out["cuda:0"], out["cpu"]):
        np.testing.assert_array_equal(a, b)
    assert out["cuda:0 bounds"] == out["cpu bounds"]
    np.testing.assert_allclose(out["cpu bounds"][0], pts.min(axis=0), rtol=1e-6)
    host, seen = where
    assert _serial_on_device(seen) == ([] if host else ["_hash_sort_kernel", "_hash_bounds_kernel"])


def test_hash_grid_rebuild_grow_and_radius_change_on_device(poisoned):
    grid = wp.HashGrid(8, 8, 8, device="cuda:0")
    for n, r, seed in ((100, 0.2, 1), (900, 0.07, 2), (300, 0.15, 3)):  # grows, then shrinks; the radius changes
        pts = _points(n, seed)
        p = wp.array(pts, dtype=wp.vec3, device="cuda:0")
        grid.build(p, r)
        counts = wp.zeros(n, dtype=int, device="cuda:0")
        sums = wp.zeros(n, dtype=int, device="cuda:0")
        wp.launch(neighbour_sums, n, inputs=[grid.id, p, r, counts, sums], device="cuda:0")
        dist = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
        np.testing.assert_array_equal(counts.numpy(), (dist <= r).sum(axis=1))


def _boxes(n, seed):
    rng = np.random.default_rng(seed)
    c = rng.random((n, 3)).astype(np.float32)
    h = (0.01 + 0.04 * rng.random((n, 3))).astype(np.float32)
    return c - h, c + h


@pytest.fixture(params=[True, False], ids=["host_builds", "device_builds"])
def where(request, monkeypatch):
    """Serial Mesh/Bvh builds of CUDA objects on the host (the default) or in one-thread device kernels; records
    which one-thread build/refit kernels were launched."""
    from treadle._src.geometry import bvh as bvh_mod
    from treadle._src.geometry import hash_grid as grid_mod
    from treadle._src.geometry import lbvh as lbvh_mod
    from treadle._src.geometry import mesh as mesh_mod

    monkeypatch.setattr(wp.config, "geometry_host_builds", request.param)
    seen: list[tuple[str, str]] = []
    for mod in (bvh_mod, mesh_mod, grid_mod, lbvh_mod):
        real = mod.launch

        def spy(k, *a, _real=real, **kw):
            seen.append((k.key, str(kw.get("device"))))
            return _real(k, *a, **kw)

        monkeypatch.setattr(mod, "launch", spy)
    return request.param, seen


def _serial_on_device(seen):
    serial = ("_run_", "_hash_sort_kernel", "_hash_bounds_kernel", "_lbvh_sort")
    return [k for k, d in seen if k.startswith(serial) and d.startswith("cuda")]


@pytest.mark.parametrize("constructor,groups", [("sah", False), ("median", False), ("lbvh", False), ("sah", True)])
def test_bvh_matches_cpu_and_brute_force(poisoned, where, constructor, groups):
    lo, hi = _boxes(400, 4)
    qlo, qhi = _boxes(200, 5)
    qlo, qhi = qlo - 0.05, qhi + 0.05
    grp = (np.arange(400) % 3).astype(np.int32) if groups else None
    out = {}
    for d in ("cpu", "cuda:0"):
        bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=d), wp.array(hi, dtype=wp.vec3, device=d),
                     constructor=constructor, groups=None if grp is None else wp.array(grp, device=d))
        restore = None
        if d != "cpu":
            assert bvh._tree.items.numpy().tolist() != [0] * 400  # the builder's writes reached the device
            restore = _check_device_descriptor(poisoned, bvh._tree, ("nodes", "items", "item_bounds"))
        counts = wp.zeros(200, dtype=int, device=d)
        sums = wp.zeros(200, dtype=int, device=d)
        args = [bvh.id, wp.array(qlo, dtype=wp.vec3, device=d), wp.array(qhi, dtype=wp.vec3, device=d), counts, sums]
        wp.launch(box_hits, 200, inputs=args, device=d)
        out[d] = (counts.numpy().copy(), sums.numpy().copy(), np.sort(bvh._tree.items.numpy()))
        if restore:
            restore()  # refit after moving the boxes: the same answers as a fresh CPU tree
            shift = np.float32(0.25)
            bvh.lowers.assign(wp.array(lo + shift, dtype=wp.vec3, device=d))
            bvh.uppers.assign(wp.array(hi + shift, dtype=wp.vec3, device=d))
            bvh.refit()
            args[1] = wp.array(qlo + shift, dtype=wp.vec3, device=d)
            args[2] = wp.array(qhi + shift, dtype=wp.vec3, device=d)
            wp.launch(box_hits, 200, inputs=args, device=d)
            out["refit"] = (counts.numpy(), sums.numpy())
    overlap = np.all((lo[None] <= qhi[:, None]) & (hi[None] >= qlo[:, None]), axis=-1)
    np.testing.assert_array_equal(out["cuda:0"][0], overlap.sum(axis=1))
    np.testing.assert_array_equal(out["cuda:0"][1], (overlap * np.arange(400)).sum(axis=1))
    np.testing.assert_array_equal(out["cuda:0"][2], np.arange(400))
    for a, b in zip(out["cuda:0"], out["cpu"]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(out["refit"][0], out["cpu"][0])
    host, seen = where
    serial = _serial_on_device(seen)
    if constructor == "lbvh" and not groups:
        assert serial == ([] if host else ["_lbvh_sort"])  # the other LBVH kernels are parallel
    else:
        assert serial == ([] if host else ["_run_build", "_run_refit"])


def test_bvh_rebuild_with_another_constructor_on_device(poisoned, where):
    lo, hi = _boxes(300, 7)
    trees = {}
    for d, first in (("cpu", "median"), ("cuda:0", "sah")):
        bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=d), wp.array(hi, dtype=wp.vec3, device=d), constructor=first)
        if d != "cpu":
            bvh.rebuild("median")
        t = bvh._tree
        trees[d] = (int(t.result.numpy()[0]), t.items.numpy().copy(), t.nodes.numpy().copy())
    n = trees["cpu"][0]
    assert n > 0 and trees["cuda:0"][0] == n
    np.testing.assert_array_equal(trees["cuda:0"][1], trees["cpu"][1])  # the median tree, not the SAH one
    np.testing.assert_array_equal(trees["cuda:0"][2][:n], trees["cpu"][2][:n])


def _sphere_mesh(nu=24, nv=12):
    verts = [[0.0, 0.0, 1.0]]
    for i in range(1, nv):
        th = np.pi * i / nv
        for j in range(nu):
            ph = 2 * np.pi * j / nu
            verts.append([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)])
    verts.append([0.0, 0.0, -1.0])
    tris = []
    for j in range(nu):
        tris.append([0, 1 + j, 1 + (j + 1) % nu])
    for i in range(nv - 2):
        a, b = 1 + i * nu, 1 + (i + 1) * nu
        for j in range(nu):
            j1 = (j + 1) % nu
            tris += [[a + j, b + j, b + j1], [a + j, b + j1, a + j1]]
    last, base = len(verts) - 1, 1 + (nv - 2) * nu
    for j in range(nu):
        tris.append([last, base + (j + 1) % nu, base + j])
    return np.array(verts, np.float32), np.array(tris, np.int32).reshape(-1)


def test_mesh_matches_cpu(poisoned, where):
    verts, tris = _sphere_mesh()
    q = (np.random.default_rng(6).standard_normal((500, 3)) * 0.8).astype(np.float32)
    direction = wp.vec3(0.3, 0.2, 1.0)
    out = {}
    for d in ("cpu", "cuda:0"):
        mesh = wp.Mesh(points=wp.array(verts, dtype=wp.vec3, device=d), indices=wp.array(tris, device=d),
                       support_winding_number=True)
        restore = None
        if d != "cpu":
            restore = _check_device_descriptor(poisoned, mesh, ("bvh.nodes", "bvh.items", "points", "indices",
                                                                "vertex_corners", "winding"))
        dist = wp.zeros(len(q), dtype=float, device=d)
        sign = wp.zeros(len(q), dtype=float, device=d)
        hit_t = wp.zeros(len(q), dtype=float, device=d)
        wsign = wp.zeros(len(q), dtype=float, device=d)
        qa = wp.array(q, dtype=wp.vec3, device=d)
        wp.launch(mesh_queries, len(q), inputs=[mesh.id, qa, direction, dist, sign, hit_t, wsign], device=d)
        out[d] = [dist.numpy().copy(), sign.numpy().copy(), hit_t.numpy().copy(), wsign.numpy().copy()]  # (views)
        if restore:
            restore()
        # move the points (assign a scaled copy) and refit: the descriptor's points and the tree follow
        mesh.points = wp.array(verts * 2.0, dtype=wp.vec3, device=d)
        mesh.refit()
        wp.launch(mesh_queries, len(q), inputs=[mesh.id, qa, direction, dist, sign, hit_t, wsign], device=d)
        out[d] += [dist.numpy(), sign.numpy(), wsign.numpy()]
    r = np.linalg.norm(q, axis=1)
    np.testing.assert_allclose(out["cuda:0"][0], np.abs(r - 1.0), atol=0.05)  # a fine sphere: distance to it
    far = np.abs(r - 1.0) > 0.05  # the polyhedron lies between radii ~0.97 and 1
    np.testing.assert_array_equal((out["cuda:0"][1] < 0)[far], (r < 1.0)[far])
    far2 = np.abs(r - 2.0) > 0.1
    np.testing.assert_array_equal((out["cuda:0"][5] < 0)[far2], (r < 2.0)[far2])
    np.testing.assert_array_equal((out["cuda:0"][3] < 0)[far], (r < 1.0)[far])  # winding numbers too
    np.testing.assert_array_equal((out["cuda:0"][6] < 0)[far2], (r < 2.0)[far2])
    for k, (a, b) in enumerate(zip(out["cuda:0"], out["cpu"])):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=str(k))
    host, seen = where
    assert _serial_on_device(seen) == ([] if host else ["_run_mesh_build", "_run_mesh_refit"])


def test_marching_cubes_matches_cpu(poisoned):
    n = 20
    x = np.linspace(-1.0, 1.0, n)
    field = (np.sqrt(x[:, None, None] ** 2 + x[None, :, None] ** 2 + x[None, None, :] ** 2) - 0.6).astype(np.float32)
    out = {}
    for d in ("cpu", "cuda:0"):
        mc = wp.MarchingCubes(n, n, n, device=d)
        mc.surface(wp.array(field, dtype=float, device=d), 0.0)
        out[d] = (mc.verts.numpy(), mc.indices.numpy())
    assert len(out["cpu"][1]) > 0
    np.testing.assert_allclose(out["cuda:0"][0], out["cpu"][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out["cuda:0"][1], out["cpu"][1])


def test_hash_grid_build_in_a_cuda_graph_replays_the_descriptor_update(fake):
    """A captured build records the descriptor update as a launch: the replay restores a changed radius."""
    pts = _points(300, 7)
    p = wp.array(pts, dtype=wp.vec3, device="cuda:0")
    grid = wp.HashGrid(8, 8, 8, device="cuda:0")
    grid.build(p, 0.1)  # buffers exist before the capture
    with wp.ScopedCapture(device="cuda:0") as cap:
        grid.build(p, 0.1)
    grid.build(p, 0.3)
    wp.capture_launch(cap.graph)
    counts = wp.zeros(300, dtype=int, device="cuda:0")
    sums = wp.zeros(300, dtype=int, device="cuda:0")
    wp.launch(neighbour_sums, 300, inputs=[grid.id, p, 0.1, counts, sums], device="cuda:0")
    desc = type(grid._desc).from_buffer_copy(ctypes.string_at(grid.id, ctypes.sizeof(grid._desc)))
    assert desc.cell_width == pytest.approx(0.1)
    dist = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    np.testing.assert_array_equal(counts.numpy(), (dist <= 0.1).sum(axis=1))
