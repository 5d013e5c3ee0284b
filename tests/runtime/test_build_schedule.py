"""How a CPU build shares its kernel passes out between compiler processes (``backends/cpu/schedule.py``).

The plan cuts each compiler's passes into groups of similar estimated cost, a few per process, and a queue keeps
every process busy, the costliest groups first. These tests check the plan and the queue themselves, and that a
build cut into many groups still gives every kernel its own correct library entry.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.cpu import build, schedule


def test_split_balances_cost_and_keeps_every_item():
    rng = np.random.default_rng(0)
    costs = list(rng.integers(1, 100, 57).astype(float))
    items = list(range(57))
    groups = schedule.split(items, costs, 5)
    assert sorted(i for g in groups for i in g) == items
    totals = [sum(costs[i] for i in g) for g in groups]
    assert len(groups) == 5
    assert max(totals) - min(totals) <= max(costs)  # greedy costliest-first: within one item of each other


def test_split_never_makes_empty_groups():
    assert schedule.split(["a", "b"], [1.0, 1.0], 8) == [["a"], ["b"]]
    assert schedule.split(["a"], [3.0], 0) == [["a"]]


def test_group_count_is_one_per_compiler_on_one_core_and_bounded_below():
    assert schedule.group_count(1e9, 1e9, 1) == 1
    # a small build is not cut into processes that each cost more than they save
    assert schedule.group_count(10_000.0, 20_000.0, 2) == 1
    # a large one gets a few groups per process, in proportion to each compiler's share
    big = schedule.group_count(2e6, 3e6, 2)
    small = schedule.group_count(1e6, 3e6, 2)
    assert big == 4 and small == 2


def test_cost_weighs_gxx_backward_passes_above_clang():
    assert schedule.cost(1000, "backward", is_clang=False) > schedule.cost(1000, "backward", is_clang=True)
    assert schedule.cost(1000, "forward", is_clang=True) == 1000


def test_run_queue_runs_heaviest_first_at_most_n_at_once_and_returns_errors_in_place():
    started: list[int] = []
    running = [0]
    peak = [0]
    lock = threading.Lock()

    def work(t: int) -> int:
        with lock:
            started.append(t)
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        if t == 3:
            raise ValueError("bad group")
        return t * 10

    tasks = [0, 1, 2, 3, 4, 5]
    weights = [1.0, 6.0, 2.0, 5.0, 3.0, 4.0]
    out = schedule.run_queue(tasks, weights, work, 2)
    assert peak[0] <= 2
    assert started[:2] == [1, 3]  # the two heaviest start first
    assert [o for i, o in enumerate(out) if i != 3] == [0, 10, 20, 40, 50]
    assert isinstance(out[3], ValueError)
    assert schedule.run_queue(tasks, weights, lambda t: t, 1) == tasks


_KERNELS = "\n".join(f'''
@wp.kernel
def k{i}(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    s = float(0.0)
    for j in range({i % 3 + 1}):
        s = s + wp.sin(x[t] * float(j + {i}))
    out[t] = s + x[t] * float({i})
''' for i in range(12))


def test_a_build_cut_into_many_groups_gives_each_kernel_its_own_correct_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(schedule, "MIN_GROUP_COST", 1.0)  # every pass could be its own process
    monkeypatch.setattr(build, "max_parallel_builds", lambda: 3)
    ns: dict = {"wp": wp, "__name__": "sched_kernels"}
    path = tmp_path / "sched_kernels.py"
    path.write_text("import treadle as wp\n" + _KERNELS)
    code = compile(path.read_text(), str(path), "exec")
    exec(code, ns)
    plans: list[int] = []
    real_plan = build._plan
    monkeypatch.setattr(build, "_plan", lambda items: plans.append(len(p := real_plan(items))) or p)
    x = np.linspace(0.1, 2.0, 33).astype(np.float32)
    xa = wp.array(x, requires_grad=True)
    outs = []
    tape = wp.Tape()
    with tape:
        for i in range(12):
            out = wp.zeros(33, requires_grad=True)
            wp.launch(ns[f"k{i}"], 33, inputs=[xa], outputs=[out])
            outs.append(out)
    for i, out in enumerate(outs):
        ref = sum(np.sin(x.astype(np.float64) * (j + i)) for j in range(i % 3 + 1)) + x * i
        np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5, atol=2e-5)
    tape.backward(grads={o: wp.ones(33) for o in outs})
    grad = sum(sum((j + i) * np.cos(x.astype(np.float64) * (j + i)) for j in range(i % 3 + 1)) + i for i in range(12))
    np.testing.assert_allclose(xa.grad.numpy(), grad, rtol=1e-4, atol=1e-3)
    if not plans:
        pytest.skip("every kernel was already in the kernel cache")
    assert max(plans) > 3  # more groups than processes: the queue ran them
