"""The native launch fast path (``runtime/fastlaunch.py``, ``native/fastlaunch.cpp``) does what the Python path does.

Each check runs a kernel through the native path and a twin kernel with ``config.native_launch`` off (the Python
path), and compares both with a NumPy reference.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import LaunchError
from treadle._src.runtime import fastlaunch, threadpool

N = 64


def _make_kernels():
    @wp.kernel
    def mixed(out: wp.array(dtype=wp.float64), a: wp.array(dtype=float), f: float, d: wp.float64, i: int,
              j: wp.int64, u: wp.uint32, w: wp.uint64, v: wp.vec3, flag: bool, h: wp.int8):
        t = wp.tid()
        s = wp.float64(a[t]) * wp.float64(f) + d + wp.float64(i) + wp.float64(j) + wp.float64(u) + wp.float64(w)
        s = s + wp.float64(v[0] + 2.0 * v[1] + 3.0 * v[2]) + wp.float64(h)
        if flag:
            s = -s
        out[t] = s

    @wp.kernel
    def scale(a: wp.array(dtype=float), out: wp.array(dtype=float), c: float):
        t = wp.tid()
        out[t] = a[t] * c

    return mixed, scale


def _reference(a, f, d, i, j, u, w, v, flag, h):
    i32 = int(np.array(int(i) & 0xFFFFFFFF, dtype=np.uint32).view(np.int32))  # ctypes keeps the low 32 bits
    s = (a.astype(np.float32).astype(np.float64) * np.float64(np.float32(f)) + float(d) + i32
         + j + u + float(w) + float(np.float32(v[0]) + 2.0 * np.float32(v[1]) + 3.0 * np.float32(v[2])) + h)
    return -s if flag else s


def _native_in_use() -> bool:
    wp.launch(_scale_native, 1, inputs=[wp.zeros(1), wp.zeros(1), 1.0])
    return fastlaunch.module() is not None


_mixed_native, _scale_native = _make_kernels()
with wp.config.override(native_launch=False):
    _mixed_python, _scale_python = _make_kernels()


def _plan(kernel):
    return kernel._launch_fast


@pytest.fixture
def native():
    if not _native_in_use():
        pytest.skip(f"native launch path unavailable: {fastlaunch.status()}")


def _python_twin_plan_is_python():
    a = wp.zeros(1)
    with wp.config.override(native_launch=False):
        wp.launch(_scale_python, 1, inputs=[a, a, 1.0])
    return _plan(_scale_python).fast is None


def test_native_and_python_paths_agree_on_every_argument_kind(native):
    rng = np.random.default_rng(1)
    a_np = rng.random(N).astype(np.float32)
    a = wp.array(a_np, dtype=float)
    calls = [
        (1.5, 2.25, 3, 4, 5, 6, (1.0, 2.0, 3.0), False, 7),
        (1.5, 2.25, 3, 4, 5, 6, (1.0, 2.0, 3.0), False, 7),  # all arguments memoised
        (0.5, -1.0, -3, 2**40, 2**32 - 1, 2**63, wp.vec3(0.5, 0.25, 4.0), True, -2),
        (2, np.float64(0.5), np.int32(9), 1, 0, 0, [1.0, 0.0, 0.0], np.bool_(False), 1),  # non-exact types
        (float(7), 2.25, 2**32 + 5, -1, 1, 2, (0.0, 0.0, 0.0), 1, 0),  # an int that ctypes truncates
    ]
    with wp.config.override(native_launch=False):
        wp.launch(_mixed_python, 1, inputs=[wp.zeros(1, dtype=wp.float64), a, *calls[0]])
    assert _plan(_mixed_python).fast is None
    for args in calls:
        out_n = wp.zeros(N, dtype=wp.float64)
        out_p = wp.zeros(N, dtype=wp.float64)
        wp.launch(_mixed_native, N, inputs=[out_n, a, *args])
        wp.launch(_mixed_python, N, inputs=[out_p, a, *args])
        ref = _reference(a_np, *args)
        np.testing.assert_array_equal(out_n.numpy(), out_p.numpy())
        np.testing.assert_allclose(out_n.numpy(), ref, rtol=1e-12)
    assert _plan(_mixed_native).fast is not None


def test_changed_arrays_dims_and_descriptors_are_seen(native):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float)
    y = wp.array(np.ones(N, dtype=np.float32), dtype=float)
    o1, o2 = wp.zeros(N), wp.zeros(N)
    for k, (src, dst, c) in enumerate([(x, o1, 2.0), (y, o2, 3.0), (y, o1, 3.0), (x, o2, 2.0)]):
        dst.zero_()
        wp.launch(_scale_native, N - k, inputs=[src], outputs=[dst, c])
        ref = np.zeros(N, np.float32)
        ref[: N - k] = src.numpy()[: N - k] * c
        np.testing.assert_array_equal(dst.numpy(), ref)
    x.requires_grad = True  # a new descriptor for the same array object
    wp.launch(_scale_native, (N,), inputs=[x, o1, 1.0])
    np.testing.assert_array_equal(o1.numpy(), x.numpy())
    view = x[::2]  # a strided view: another descriptor
    half = wp.zeros(N // 2)
    wp.launch(_scale_native, N // 2, inputs=[view, half, 1.0])
    np.testing.assert_array_equal(half.numpy(), x.numpy()[::2])
    o1.fill_(5.0)
    wp.launch(_scale_native, 0, inputs=[x, o1, 1.0])  # nothing runs
    np.testing.assert_array_equal(o1.numpy(), 5.0)


def test_freed_and_reallocated_array_at_the_same_id(native):
    """A new array at the id of a freed one (the memo keeps ids, not arrays) is packed again."""
    src = wp.array(np.full(N, 2.0, np.float32), dtype=float)
    pool = wp.zeros(N * 64)
    reused = 0
    for k in range(200):
        out = wp.zeros(N) if k % 2 else pool[0:N]
        old = id(out)
        wp.launch(_scale_native, N, inputs=[src, out, 1.0])
        gone = weakref.ref(out)
        del out
        # reference counting frees the array here; gc.collect() only if a cycle held it (over a full suite's heap
        # each collection costs about a second, and the loop may run 200 times)
        if gone() is not None:
            gc.collect()
        # New arrays (allocations and views) until one lands at the id of the freed array, which happens often.
        fresh = [wp.zeros(N) for _ in range(16)] + [pool[i * N:(i + 1) * N] for i in range(1, 64)]
        same = [a for a in fresh if id(a) == old]
        target = same[0] if same else fresh[0]
        target.zero_()
        reused += bool(same)
        wp.launch(_scale_native, N, inputs=[src, target, float(k + 2)])
        np.testing.assert_array_equal(target.numpy(), 2.0 * (k + 2))
        if reused >= 3:
            break
    assert reused > 0, "the allocator never reused an id: the scenario was not exercised"


def test_errors_are_the_python_path_errors(native):
    a = wp.zeros(N)
    wp.launch(_scale_native, N, inputs=[a, a, 1.0])
    with wp.config.override(native_launch=False):
        wp.launch(_scale_python, N, inputs=[a, a, 1.0])
    bad = [
        ([a, a, "x"], "expects float32, got str"),
        ([a, 1.0, 1.0], "expects an array"),
        ([a, wp.zeros(N, dtype=int), 1.0], "expects an array of float32"),
        ([a, wp.zeros((2, 2)), 1.0], "expects a 1-d array"),
        ([a, a], "takes 3 argument"),
    ]
    for args, msg in bad:
        errs = []
        for k in (_scale_native, _scale_python):
            with pytest.raises(LaunchError) as e:
                wp.launch(k, N, inputs=args)
            errs.append(str(e.value).replace(k.key, "K"))
            assert msg in str(e.value)
        assert errs[0] == errs[1]
    with pytest.raises(LaunchError, match="dim must not be negative"):
        wp.launch(_scale_native, -1, inputs=[a, a, 1.0])
    wp.launch(_scale_native, N, inputs=[a, a, 2.0])  # still works after the errors
    np.testing.assert_array_equal(a.numpy(), 0.0)


def test_tape_capture_print_and_devices_take_the_python_path(native, capfd):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(N, requires_grad=True)
    wp.launch(_scale_native, N, inputs=[x, y, 3.0])
    tape = wp.Tape()
    with tape:
        wp.launch(_scale_native, N, inputs=[x, y, 3.0])
    tape.backward(grads={y: wp.ones(N)})
    np.testing.assert_array_equal(x.grad.numpy(), 3.0)
    with wp.ScopedCapture() as cap:
        wp.launch(_scale_native, N, inputs=[x, y, 4.0])
    np.testing.assert_array_equal(y.numpy(), 3.0 * x.numpy())  # recorded, not run
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(y.numpy(), 4.0 * x.numpy())
    with wp.config.override(print_launches=True):
        wp.launch(_scale_native, N, inputs=[x, y, 5.0])
    assert "dim=(64,)" in capfd.readouterr().err
    wp.launch(_scale_native, np.int64(N), inputs=[x, y, 6.0], device="cpu")
    np.testing.assert_array_equal(y.numpy(), 6.0 * x.numpy())
    wp.launch(_scale_native, [N], inputs=(x,), outputs=(y, 7.0), device=wp.get_device("cpu"))
    np.testing.assert_array_equal(y.numpy(), 7.0 * x.numpy())


def test_recorded_launch_and_capture(native):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float)
    y = wp.zeros(N)
    cmd = wp.launch(_scale_native, N, inputs=[x, y, 2.0], record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), 2.0 * x.numpy())
    cmd.set_param_at_index(2, 5.0)
    with wp.ScopedCapture() as cap:
        cmd.launch()
    np.testing.assert_array_equal(y.numpy(), 2.0 * x.numpy())
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(y.numpy(), 5.0 * x.numpy())


def test_thread_count_and_config_changes(native):
    a = wp.zeros(N)
    plan = None
    for nt in (1, 2, 0, 3):
        with wp.config.override(num_threads=nt):
            wp.launch(_scale_native, N, inputs=[a, a, 1.0])
            plan = _plan(_scale_native)
            assert plan.frame.cmd.nthreads == (nt if nt > 0 else threadpool._CPUS)
    with wp.config.override(mode="debug"):
        out = wp.zeros(N)
        wp.launch(_scale_native, N, inputs=[wp.ones(N), out, 2.0])
        np.testing.assert_array_equal(out.numpy(), 2.0)
        assert _plan(_scale_native) is not plan  # another instance, built for checked mode
    wp.launch(_scale_native, N, inputs=[a, a, 1.0])


def test_concurrent_launches_from_several_threads(native):
    errors: list[BaseException] = []
    src = [wp.array(np.full(N * 64, k + 1.0, np.float32), dtype=float) for k in range(4)]

    def worker(k: int) -> None:
        try:
            for it in range(200):
                out = wp.zeros(N * 64)
                c = float(it % 7)
                wp.launch(_scale_native, N * 64, inputs=[src[k], out, c])
                assert (out.numpy() == (k + 1.0) * c).all()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_python_fallback_when_turned_off():
    assert _python_twin_plan_is_python()
    a = wp.array(np.arange(N, dtype=np.float32), dtype=float)
    out = wp.zeros(N)
    with wp.config.override(native_launch=False):
        for c in (1.0, 2.0, 2.0):
            wp.launch(_scale_python, N, inputs=[a, out, c])
    np.testing.assert_array_equal(out.numpy(), 2.0 * a.numpy())
    assert _plan(_scale_python).fast is None


def test_launches_work_when_the_extension_cannot_be_built(tmp_path):
    """No Python.h: the extension is not built, a status says why, and every launch takes the Python path."""
    script = textwrap.dedent(f"""
        import sysconfig, numpy as np
        real = sysconfig.get_paths
        sysconfig.get_paths = lambda *a, **k: {{**real(*a, **k), "include": {str(tmp_path)!r}}}
        import treadle as wp
        from treadle._src.runtime import fastlaunch, threadpool

        @wp.kernel
        def scale(a: wp.array(dtype=float), c: float):
            a[wp.tid()] = a[wp.tid()] * c

        a = wp.ones(8)
        for c in (2.0, 3.0):
            wp.launch(scale, 8, inputs=[a, c])
        cmd = wp.launch(scale, 8, inputs=[a, 0.5], record_cmd=True)
        cmd.launch()
        assert fastlaunch.module() is None
        assert "Python.h" in fastlaunch.status(), fastlaunch.status()
        assert (a.numpy() == 3.0).all(), a.numpy()
        print("ok")
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(wp.__file__)))
    # Fresh kernel and shared caches: an extension built earlier by this user would be found and loaded.
    env = {**os.environ, "TREADLE_CACHE_PATH": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    path = tmp_path / "no_headers.py"
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_repeated_launches_stay_native(native):
    """Steady-state launches take the native path (the figures in docs/cpu_backend.md depend on it)."""
    ext = fastlaunch.module()
    a, out = wp.ones(N), wp.zeros(N)
    wp.launch(_scale_native, N, inputs=[a, out, 2.0])
    before = ext.counts()
    for dev in (None, "cpu", wp.get_device("cpu")):
        wp.launch(_scale_native, N, inputs=[a, out, 2.0], device=dev)
        wp.launch(_scale_native, (N,), inputs=(a,), outputs=(out, 3.0), device=dev)
        wp.launch(_scale_native, N, inputs=[a], outputs=[out, 3.0], device=dev, record_tape=False)
    launched, fell_back = (x - y for x, y in zip(ext.counts(), before))
    assert (launched, fell_back) == (9, 0)
    np.testing.assert_array_equal(out.numpy(), 3.0)
    tape = wp.Tape()
    with tape:
        wp.launch(_scale_native, N, inputs=[a, out, 4.0])
    assert ext.counts()[1] == before[1] + 1  # a recording tape: the Python path
    np.testing.assert_array_equal(out.numpy(), 4.0)


@wp.kernel
def _tiled_copy(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j, _lane = wp.tid()
    t = wp.tile_load(a, shape=(2, 4), offset=(i * 2, j * 4))
    wp.tile_store(b, t, offset=(i * 2, j * 4))


def test_list_dims_and_tiled_launches_stay_native(native):
    """``dim=[...]`` (as example programs write it) and ``launch_tiled`` take the native path like a tuple does."""
    ext = fastlaunch.module()
    a, out = wp.ones(N), wp.zeros(N)
    src = wp.array(np.arange(48, dtype=np.float32).reshape(6, 8))
    dst = wp.zeros((6, 8), dtype=float)
    wp.launch(_scale_native, [N], inputs=[a, out, 2.0])
    wp.launch_tiled(_tiled_copy, dim=[3, 2], inputs=[src, dst], block_dim=8)
    before = ext.counts()
    for c in (3.0, 5.0):
        wp.launch(_scale_native, [N], inputs=[a, out, c])
        dst.zero_()
        wp.launch_tiled(_tiled_copy, dim=[3, 2], inputs=[src, dst], block_dim=8)
        np.testing.assert_array_equal(out.numpy(), c)
        np.testing.assert_array_equal(dst.numpy(), src.numpy())
    launched, fell_back = (x - y for x, y in zip(ext.counts(), before))
    assert (launched, fell_back) == (4, 0)
    with pytest.raises(LaunchError):  # a bad list entry: the Python path's error, as for a tuple
        wp.launch(_scale_native, [N, -1], inputs=[a, out, 1.0])
