"""How a CPU build's kernel passes are shared out between compiler processes, and the queue that runs them.

A batch may hold passes for two compilers (clang++ for forward passes, g++ for backward passes and kernels with
loops) whose cost per line differs by about 2x. Giving each compiler's passes a fixed share of the cores left one
core idle for most of a large mixed build (100 differentiated kernels: 22.7 s wall for 28 s of CPU on 2 cores).
Instead every compiler's passes are cut into groups of about the same estimated cost, a few per core, and a queue
keeps one compiler process per core busy, the costliest groups first (longest-processing-time order), so the cores
finish within about one group of each other.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

#: Relative compile cost per byte of C++ source, measured (``docs/cpu_backend.md``, "Build time"): clang++ 14 on
#: forward and backward passes ~15 us/byte of CPU, g++ 12 ~19 us/byte on forward passes, ~34 on backward passes.
COST_PER_BYTE = {("clang", "forward"): 1.0, ("clang", "backward"): 1.05, ("gcc", "forward"): 1.3,
                 ("gcc", "backward"): 2.2}

#: Groups per compiler process: enough that the last group to finish holds the others up only a little.
GROUPS_PER_PROCESS = 3

#: The smallest group worth its own compiler process, in cost units (~bytes of clang++ source): each process pays
#: ~0.1 s for the precompiled header and the link, about what 7 kB of kernel code costs to compile.
MIN_GROUP_COST = 24_000.0

T = TypeVar("T")
R = TypeVar("R")


def cost(size: int, kind: str, is_clang: bool) -> float:
    """The estimated compile cost of ``size`` bytes of a pass of ``kind`` (``forward``/``backward``)."""
    return size * COST_PER_BYTE.get(("clang" if is_clang else "gcc", kind), 1.0)


def split(items: Sequence[T], costs: Sequence[float], n: int) -> list[list[T]]:
    """``items`` in at most ``n`` groups of similar total cost (costliest first, each into the cheapest group)."""
    n = max(1, min(n, len(items)))
    groups: list[list[T]] = [[] for _ in range(n)]
    totals = [0.0] * n
    for i in sorted(range(len(items)), key=lambda i: -costs[i]):
        g = totals.index(min(totals))
        groups[g].append(items[i])
        totals[g] += costs[i]
    return [g for g in groups if g]


def group_count(total: float, all_total: float, processes: int) -> int:
    """How many groups a set of passes of cost ``total`` is cut into, in a build of cost ``all_total``."""
    if processes <= 1:
        return 1
    target = max(MIN_GROUP_COST, all_total / (GROUPS_PER_PROCESS * processes))
    return max(1, math.ceil(total / target - 1e-9))


def run_queue(tasks: Sequence[T], weights: Sequence[float], work: Callable[[T], R], processes: int) -> list[R | BaseException]:
    """``work(task)`` for every task, at most ``processes`` at once, the heaviest first; results in task order.

    An exception raised by ``work`` is returned in its task's place (the caller decides what a failure means).
    """
    order = sorted(range(len(tasks)), key=lambda i: -weights[i])
    out: list[Any] = [None] * len(tasks)
    if processes <= 1 or len(tasks) <= 1:
        for i in order:
            try:
                out[i] = work(tasks[i])
            except Exception as e:  # noqa: BLE001 - handed back to the caller
                out[i] = e
        return out
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(processes, len(tasks)),
                                               thread_name_prefix="treadle-build") as pool:
        futures = {pool.submit(work, tasks[i]): i for i in order}  # submitted heaviest first: started in that order
        for f in concurrent.futures.as_completed(futures):
            i = futures[f]
            try:
                out[i] = f.result()
            except Exception as e:  # noqa: BLE001 - handed back to the caller
                out[i] = e
    return out
