"""Thread safety of the CPU runtime: first launches, generic instances, backward passes, tapes and cache publication
from several Python threads at once (the contract in docs/threads.md)."""

from __future__ import annotations

import sys
import threading
import types
import typing
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.cpu import build


@pytest.fixture
def fresh_cache(tmp_path: Path) -> typing.Iterator[Path]:
    """A kernel cache nobody has compiled into: every first launch in the test compiles."""
    old = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(tmp_path / "cache")
    try:
        yield tmp_path / "cache"
    finally:
        wp.config.kernel_cache_dir = old


class _Overlap:
    """Wraps ``build.compile_batches``: the most threads seen compiling one ``Built`` object at the same time."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lock = threading.Lock()
        self.inside: dict[int, int] = {}
        self.most = 0
        real = build.compile_batches

        def wrapped(batches: list[typing.Any]) -> None:
            ids = [id(it) for items, _ in batches for it in items]
            with self.lock:
                for i in ids:
                    self.inside[i] = self.inside.get(i, 0) + 1
                    self.most = max(self.most, self.inside[i])
            try:
                real(batches)
            finally:
                with self.lock:
                    for i in ids:
                        self.inside[i] -= 1

        monkeypatch.setattr(build, "compile_batches", wrapped)


def _run_threads(n: int, body: typing.Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def run(t: int) -> None:
        try:
            body(t)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


def test_generic_first_launch_and_backward_from_threads(fresh_cache, monkeypatch):
    """8 threads, 4 dtypes of a generic kernel nobody compiled, a tape each: every instance and backward pass is
    built by one thread while the others wait for it (never two threads on one build), and every result is right."""

    @wp.kernel(module="unique")
    def gaffine(x: wp.array(dtype=typing.Any), y: wp.array(dtype=typing.Any)):
        i = wp.tid()
        y[i] = x[i] * x.dtype(3.0) + x.dtype(1.0)

    @wp.kernel(module="unique")
    def gsum(y: wp.array(dtype=typing.Any), loss: wp.array(dtype=typing.Any)):
        i = wp.tid()
        wp.atomic_add(loss, 0, y[i] * y[i])

    overlap = _Overlap(monkeypatch)
    dtypes = [np.float32, np.float64, np.float16, np.float32]
    barrier = threading.Barrier(8)

    def body(t: int) -> None:
        dt = dtypes[t % 4]
        xs = (np.linspace(0.0, 1.0, 32) + t).astype(dt)
        x = wp.array(xs, requires_grad=True)
        y = wp.zeros(32, dtype=x.dtype, requires_grad=True)
        loss = wp.zeros(1, dtype=x.dtype, requires_grad=True)
        tape = wp.Tape()
        barrier.wait()
        with tape:
            wp.launch(gaffine, dim=32, inputs=[x], outputs=[y])
            wp.launch(gsum, dim=32, inputs=[y], outputs=[loss])
        assert len(tape.launches) == 2  # this thread's launches only
        tape.backward(loss)
        want = xs.astype(np.float64) * 3.0 + 1.0
        tol = 2e-3 if dt is np.float16 else 1e-5
        np.testing.assert_allclose(y.numpy().astype(np.float64), want, rtol=tol)
        np.testing.assert_allclose(x.grad.numpy().astype(np.float64), 6.0 * want, rtol=10 * tol)

    _run_threads(8, body)
    assert overlap.most == 1, "two threads built the same kernel instance at once"


def test_non_generic_first_launch_from_threads_shares_one_plan(fresh_cache, monkeypatch):
    """Threads launching a new non-generic kernel at once: one build, one launch plan, every result right."""

    @wp.kernel(module="unique")
    def triple(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * 3.0

    overlap = _Overlap(monkeypatch)
    barrier = threading.Barrier(6)
    plans: list[typing.Any] = []

    def body(t: int) -> None:
        x = wp.array(np.arange(50, dtype=np.float32) + t)
        y = wp.zeros(50, dtype=float)
        barrier.wait()
        wp.launch(triple, dim=50, inputs=[x], outputs=[y])
        np.testing.assert_allclose(y.numpy(), (np.arange(50) + t) * 3.0)
        plans.append(triple.get_instance(None).plan)

    _run_threads(6, body)
    assert overlap.most == 1
    assert len({id(p) for p in plans}) == 1
    assert len(triple.instances) == 1


def test_each_thread_tape_records_only_its_own_launches():
    """Two threads interleave launches step by step (events, no sleeps): each tape holds its own thread's."""

    @wp.kernel(module="unique")
    def scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * s

    steps = [threading.Event() for _ in range(4)]
    tapes: dict[str, typing.Any] = {}

    def a() -> None:
        x = wp.array(np.ones(8, dtype=np.float32), requires_grad=True)
        y = wp.zeros(8, dtype=float, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch(scale, dim=8, inputs=[x, 2.0], outputs=[y])
            steps[0].set()
            assert steps[1].wait()  # b launched while this tape records
            wp.launch(scale, dim=8, inputs=[y, 2.0], outputs=[y])
            steps[2].set()
            assert steps[3].wait()
        tapes["a"] = tape

    def b() -> None:
        assert steps[0].wait()
        x = wp.array(np.ones(8, dtype=np.float32))
        y = wp.zeros(8, dtype=float)
        wp.launch(scale, dim=8, inputs=[x, 5.0], outputs=[y])  # no tape on this thread
        steps[1].set()
        assert steps[2].wait()
        with wp.Tape() as tape:
            wp.launch(scale, dim=8, inputs=[x, 7.0], outputs=[y])
        tapes["b"] = tape
        steps[3].set()

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start()
    tb.start()
    ta.join()
    tb.join()
    assert [r.inputs[1] for r in tapes["a"].launches] == [2.0, 2.0]
    assert [r.inputs[1] for r in tapes["b"].launches] == [7.0]


def test_kernels_defined_in_several_threads_at_once():
    """Threads defining kernels at once: each ``module="unique"`` kernel gets a module of its own, and the kernels
    (of different names) of one named module all land in that one module."""
    barrier = threading.Barrier(8)
    made: dict[int, tuple[typing.Any, typing.Any]] = {}
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: interleavings a lock must make harmless

    def body(t: int) -> None:
        barrier.wait()

        @wp.kernel(module="unique")
        def mine(a: wp.array(dtype=float)):
            a[wp.tid()] = 1.0

        @wp.kernel(module="treadle_test_threads_shared", name=f"shared_{t}")
        def shared(a: wp.array(dtype=float)):
            a[wp.tid()] = 2.0

        made[t] = (mine, shared)

    try:
        _run_threads(8, body)
    finally:
        sys.setswitchinterval(old)
    assert len({id(k.module) for k, _ in made.values()}) == 8
    assert len({k.module.name for k, _ in made.values()}) == 8
    shared_modules = {id(s.module) for _, s in made.values()}
    assert len(shared_modules) == 1
    module = next(iter(made.values()))[1].module
    assert all(s in module.kernels for _, s in made.values())


def test_a_library_loaded_from_several_threads_is_one_object(monkeypatch):
    """Threads loading one kernel library at once all get the same library object (its symbols bound once)."""

    @wp.kernel(module="unique")
    def five(y: wp.array(dtype=float)):
        y[wp.tid()] = 5.0

    y = wp.zeros(4, dtype=float)
    wp.launch(five, dim=4, outputs=[y])
    path = five.get_instance(None).built.lib_path
    monkeypatch.setattr(build, "_libs", {})  # as if no thread had loaded it yet
    barrier = threading.Barrier(8)
    got: list[typing.Any] = []

    def body(t: int) -> None:
        barrier.wait()
        got.append(build.load_library(path))

    _run_threads(8, body)
    assert len(got) == 8 and all(lib is got[0] for lib in got)


def test_the_device_runtime_is_created_once_when_threads_ask_at_once():
    """Threads that first ask for the device runtime together get one runtime, started once, after its start."""
    from treadle._src.runtime import state

    holder = state.RuntimeHolder()
    entered, release = threading.Event(), threading.Event()
    made: list[object] = []
    started: list[object] = []

    def factory(providers: list[typing.Any]) -> object:
        rt = types.SimpleNamespace(default_device=None, devices={})
        made.append(rt)
        entered.set()
        assert release.wait()
        return rt

    def start() -> None:
        assert holder.get() is made[0]  # starting may look the runtime up (same thread, re-entrant)
        started.append(holder.runtime)

    holder.factory, holder.start = factory, start
    try:
        _first_use_from_threads(holder, entered, release, made, started)
    finally:  # the holder published its stand-in devices for the launch path: put the real runtime's back
        state.publish_devices(state.DEVICES.runtime)


def _first_use_from_threads(holder: typing.Any, entered: threading.Event, release: threading.Event,
                            made: list[object], started: list[object]) -> None:
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(holder.get()))
    first.start()
    assert entered.wait()
    ready = [threading.Event() for _ in range(6)]

    def later(i: int) -> None:
        ready[i].set()
        rt = holder.get()
        assert started, "a thread got the runtime before it was started"
        got.append(rt)

    others = [threading.Thread(target=later, args=(i,)) for i in range(6)]
    for th in others:
        th.start()
    for ev in ready:
        assert ev.wait()
    release.set()
    first.join()
    for th in others:
        th.join()
    assert len(made) == 1 and len(started) == 1
    assert len(got) == 7 and all(rt is made[0] for rt in got)
