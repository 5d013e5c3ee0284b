"""Cache publication from several threads at once: each writer has its own temporary file, so no reader ever sees
a partial kernel reference or warm-start entry."""

from __future__ import annotations

import threading
import typing
from pathlib import Path

import pytest

import treadle as wp
from treadle._src.runtime import cache as cache_mod
from treadle._src.runtime import warm_index


@pytest.fixture
def fresh_cache(tmp_path: Path) -> typing.Iterator[Path]:
    """A kernel cache of the test's own."""
    old = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(tmp_path / "cache")
    try:
        yield tmp_path / "cache"
    finally:
        wp.config.kernel_cache_dir = old


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


def test_publication_from_threads_never_exposes_a_partial_entry(tmp_path):
    """Threads publishing the same kernel and warm-start entries at once: every publish succeeds, every entry read
    in between is complete (each writer has its own temporary file)."""
    kc = cache_mod.KernelCache(tmp_path / "c")
    key = "ab" * 32
    barrier = threading.Barrier(8)

    def body(t: int) -> None:
        barrier.wait()
        for r in range(40):
            tmp = kc.tmp_dir()
            built = tmp / f"b_{'cd' * 32}.so"
            built.write_bytes(b"library bytes")
            lib = kc.publish(built, "cd" * 32, [key])
            assert kc.lookup(key) == lib, f"thread {t} round {r} read a partial reference"

    _run_threads(8, body)


def test_warm_index_records_from_threads(fresh_cache):
    """Threads recording one warm-start entry at once never leave a partial file (lookup reads it whole)."""
    kc = cache_mod.get_cache()
    tmp = kc.tmp_dir()
    key = "ef" * 32
    built = tmp / f"b_{'12' * 32}.so"
    built.write_bytes(b"library bytes")
    lib = kc.publish(built, "12" * 32, [key])
    fp = "34" * 32
    meta = {"launch_ndim": 1, "order_dependent": False, "name": "k"}
    barrier = threading.Barrier(8)

    def body(t: int) -> None:
        barrier.wait()
        for _ in range(40):
            warm_index.record(fp, key, lib, "sym", meta)
            entry = warm_index.lookup(fp)
            assert entry is not None and entry["lib_path"] == lib

    _run_threads(8, body)
