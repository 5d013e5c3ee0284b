"""Backward passes built in the forward's batch: when it happens, and that it changes no result.

A module loaded while a ``wp.Tape`` records (or after a gradient of one of its kernels was asked for) builds the
backward passes of its kernels in the same parallel batch as the forward passes; a program that never records nor
asks for a gradient builds none. The build log (``build.build_log``) says what was compiled, so no test here times
anything.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.cpu import build

_SOURCE = '''
import treadle as wp


@wp.kernel
def k_vec(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    w = wp.cross(v, wp.vec3(SEED, 1.0, 2.0))
    out[i] = wp.dot(w, v) + wp.length(v + w) * SEED


@wp.kernel
def k_loop(x: wp.array(dtype=wp.vec3), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    s = float(0.0)
    for k in range(n):
        s = s + wp.sin(v[0] * float(k) + SEED) * v[1]
    out[i] = s


@wp.kernel
def k_quat(x: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    q = wp.quat_from_axis_angle(wp.normalize(v + wp.vec3d(0.5, 0.25, 0.125)), wp.float64(SEED))
    r = wp.quat_rotate(q, v)
    if r[0] > wp.float64(0.0):
        out[i] = wp.length(r) * wp.float64(SEED)
    else:
        out[i] = wp.dot(r, v)


@wp.kernel(enable_backward=False)
def k_nograd(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * SEED
'''

_ids = itertools.count()


def _fresh_module(tmp_path: Path, seed: float) -> ModuleType:
    """The kernels above as a new Python module (a new Treadle module: nothing of it is loaded yet)."""
    name = f"_bwd_batching_{next(_ids)}"
    path = tmp_path / f"{name}.py"
    path.write_text(_SOURCE.replace("SEED", repr(seed)))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return (rng.random((16, 3)) - 0.5).astype(np.float32), rng.random((16, 3)) - 0.5


_CASES = {"k_vec": (0, wp.float32, wp.vec3, []), "k_loop": (0, wp.float32, wp.vec3, [3]),
          "k_quat": (1, wp.float64, wp.vec3d, [])}


def _run_one(mod: ModuleType, name: str, record: bool) -> tuple[np.ndarray, np.ndarray]:
    """Launch one differentiable kernel (under a tape when ``record``): its output and the input's gradient."""
    which, dt, vt, extra = _CASES[name]
    x = wp.array(_inputs()[which], dtype=vt, requires_grad=True, device="cpu")
    out = wp.zeros(16, dtype=dt, requires_grad=True, device="cpu")
    if not record:
        wp.launch(getattr(mod, name), dim=16, inputs=[x, *extra], outputs=[out], device="cpu")
        return out.numpy().copy(), np.zeros(0)
    tape = wp.Tape()
    with tape:
        wp.launch(getattr(mod, name), dim=16, inputs=[x, *extra], outputs=[out], device="cpu")
    tape.backward(grads={out: wp.ones(16, dtype=dt, device="cpu")})
    return out.numpy().copy(), x.grad.numpy().copy()


def _run_all(mod: ModuleType, record: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`_run_one` for each differentiable kernel."""
    return {name: _run_one(mod, name, record) for name in _CASES}


@pytest.fixture
def private_cache(tmp_path: Path):
    """A kernel cache of the test's own: every kernel below builds (no hit from another test)."""
    old = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(tmp_path / "cache")
    try:
        yield
    finally:
        wp.config.kernel_cache_dir = old


def _log_since(n: int) -> list[tuple[str, str, str]]:
    return build.build_log()[n:]


def test_module_loaded_under_a_tape_builds_backward_with_forward(tmp_path, private_cache):
    mod = _fresh_module(tmp_path, 1.25)
    n0 = len(build.build_log())
    x = wp.array(np.ones((4, 3), np.float32), dtype=wp.vec3, requires_grad=True, device="cpu")
    out = wp.zeros(4, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(mod.k_vec, dim=4, inputs=[x], outputs=[out], device="cpu")
    first = _log_since(n0)
    kernels = {"k_vec", "k_loop", "k_quat"}
    assert {n for n, kind, _ in first if kind == "forward"} >= kernels | {"k_nograd"}
    # every differentiable kernel's backward pass came with the module's forward passes; k_nograd has none
    assert {n.split(" ")[0] for n, kind, _ in first if kind == "backward"} == kernels
    n1 = len(build.build_log())
    tape.backward(grads={out: wp.ones(4, dtype=float, device="cpu")})
    _run_all(mod, record=True)  # every other kernel and its gradient: nothing left to compile
    assert _log_since(n1) == []
    assert np.all(np.isfinite(x.grad.numpy()))


def test_program_without_gradients_builds_no_backward(tmp_path, private_cache):
    mod = _fresh_module(tmp_path, 1.5)
    n0 = len(build.build_log())
    _run_all(mod, record=False)
    log = _log_since(n0)
    assert {n for n, kind, _ in log if kind == "forward"} >= {"k_vec", "k_loop", "k_quat"}
    assert [n for n, kind, _ in log if kind == "backward"] == []
    assert all(getattr(mod, k).get_instance(None).backward_entry is None for k in ("k_vec", "k_loop", "k_quat"))


def test_gradient_asked_later_builds_the_rest_with_later_loads(tmp_path, private_cache):
    """A module loaded without a tape builds its backward passes when asked; a new kernel then brings its own."""
    mod = _fresh_module(tmp_path, 1.75)
    n0 = len(build.build_log())
    x = wp.array(np.ones((4, 3), np.float32), dtype=wp.vec3, requires_grad=True, device="cpu")
    out = wp.zeros(4, dtype=float, requires_grad=True, device="cpu")
    wp.launch(mod.k_vec, dim=4, inputs=[x], outputs=[out], device="cpu")
    assert [n for n, kind, _ in _log_since(n0) if kind == "backward"] == []
    tape = wp.Tape()
    with tape:
        wp.launch(mod.k_vec, dim=4, inputs=[x], outputs=[out], device="cpu")
    tape.backward(grads={out: wp.ones(4, dtype=float, device="cpu")})
    assert [n for n, kind, _ in _log_since(n0) if kind == "backward"] == ["k_vec (backward)"]

    @wp.kernel(module=mod.k_vec.module.name)
    def k_added(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.length_sq(x[i]) * 3.0

    n1 = len(build.build_log())
    wp.launch(k_added, dim=4, inputs=[x], outputs=[out], device="cpu")  # no tape: the module asked for gradients
    added = _log_since(n1)
    assert (f"{k_added.key} (backward)", "backward") in [(n, kind) for n, kind, _ in added]
    # the siblings already built are not built again (each kernel pass has its own cache entry)
    assert not any(n.startswith("k_vec") for n, _, _ in added)


def test_backward_built_in_a_batch_is_bit_identical_to_one_built_alone(tmp_path):
    old = wp.config.kernel_cache_dir
    try:
        wp.config.kernel_cache_dir = str(tmp_path / "batched")
        batched_mod = _fresh_module(tmp_path, 2.0)
        n0 = len(build.build_log())
        batched = _run_all(batched_mod, record=True)
        log = _log_since(n0)
        assert len({kind for _, kind, _ in log}) == 2 and len(log) >= 6  # forward and backward passes, together
        wp.config.kernel_cache_dir = str(tmp_path / "alone")
        alone_mod = _fresh_module(tmp_path, 2.0)
        _run_all(alone_mod, record=False)  # forward passes only
        for name in ("k_vec", "k_loop", "k_quat"):
            n1 = len(build.build_log())
            single = _run_one(alone_mod, name, record=True)
            assert [kind for _, kind, _ in _log_since(n1)] == ["backward"]  # this one backward pass, alone
            np.testing.assert_array_equal(single[0], batched[name][0])
            assert single[1].tobytes() == batched[name][1].tobytes(), name
            # and the gradient is right: central differences of the float64 kernel's sum
            if name == "k_quat":
                _, x64 = _inputs()
                eps = 1e-6
                fd = np.zeros_like(x64)
                for i in range(16):
                    for c in range(3):
                        hi, lo = x64.copy(), x64.copy()
                        hi[i, c] += eps
                        lo[i, c] -= eps
                        fd[i, c] = (_quat_sum(alone_mod, hi) - _quat_sum(alone_mod, lo)) / (2 * eps)
                np.testing.assert_allclose(single[1], fd, rtol=1e-5, atol=1e-6)
    finally:
        wp.config.kernel_cache_dir = old


def _quat_sum(mod: ModuleType, xs: np.ndarray) -> float:
    out = wp.zeros(16, dtype=wp.float64, device="cpu")
    wp.launch(mod.k_quat, dim=16, inputs=[wp.array(xs, dtype=wp.vec3d, device="cpu")], outputs=[out], device="cpu")
    return float(out.numpy().sum())


def test_speculative_backward_that_cannot_build_does_not_break_the_forward(tmp_path, private_cache):
    """A kernel whose backward pass does not emit still loads and runs; asking for its gradient raises then."""
    mod = _fresh_module(tmp_path, 2.5)
    x = wp.array(np.ones(4, np.float32), requires_grad=True, device="cpu")
    out = wp.zeros(4, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(mod.k_nograd, dim=4, inputs=[x], outputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), np.full(4, 2.5, np.float32))
    with pytest.raises(Exception, match="enable_backward=False"):
        tape.backward(grads={out: wp.ones(4, dtype=float, device="cpu")})


def test_batch_plan_shares_the_compiler_processes_between_compilers(monkeypatch):
    """Two compilers in one batch: every pass in exactly one group of its own options, groups cut by cost."""
    from treadle._src.backends.cpu import schedule
    from treadle._src.runtime.native import CompileOptions

    monkeypatch.setattr(build, "max_parallel_builds", lambda: 2)
    monkeypatch.setattr(schedule, "MIN_GROUP_COST", 1.0)
    a, b = CompileOptions(), CompileOptions().with_cxx("g++")
    items = []
    for i in range(12):
        it = build.Built("x" * (1000 if i < 6 else 500), f"s{i}", f"k{i}", name=f"n{i}",
                         kind="forward" if i < 6 else "backward")
        it.options = a if i < 6 else b
        items.append(it)
    plan = build._plan(items)
    assert sorted(it.symbol for g, _, _ in plan for it in g) == sorted(f"s{i}" for i in range(12))
    assert {o.key() for _, o, _ in plan} == {a.key(), b.key()}
    for g, o, c in plan:
        assert all(it.options is not None and it.options.key() == o.key() for it in g)
        assert c > 0
    assert len(plan) > 2  # a few groups per process, for the queue to balance
