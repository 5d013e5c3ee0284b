"""Allocation tracking (``ScopedMemoryTracker``, ``print_memory_report``) and the memory-pool/allocator queries."""

from __future__ import annotations

import gc
import io

import pytest

import treadle as wp


def test_tracker_records_scopes_sizes_and_frees() -> None:
    reports: list[str] = []
    with wp.ScopedMemoryTracker("outer", report_func=reports.append) as outer:
        a = wp.zeros(1000, dtype=wp.float32, device="cpu")
        with wp.ScopedMemoryTracker("inner", print=False):
            b = wp.zeros(250, dtype=wp.vec3, device="cpu")
            c = wp.zeros(10, dtype=wp.float64)
            del c
            gc.collect()
        text = outer.report()
        assert "cpu          3 allocation(s), 6.91 KB" in text  # 4000 + 3000 + 80 bytes
        assert "    cpu          2 allocation(s), 6.84 KB" in text.split("live now:")[1]  # c was released
        assert "outer/inner:\n      cpu: 2 allocation(s), 3.01 KB" in text  # made there, freed or not
        lines = text.split("largest first")[1].splitlines()[1:]
        assert "array[float32, 1000]" in lines[0] and "test_memory_api.py" in lines[0] and "scope outer" in lines[0]
        assert "array[vec3f, 250]" in lines[1] and "scope outer/inner" in lines[1]
        chrono = outer.report(sort="chronological", max_items=1).split("oldest first")[1].splitlines()[1:]
        assert len(chrono) == 1 and "array[float32, 1000]" in chrono[0]
        buf = io.StringIO()
        wp.print_memory_report(file=buf)
        assert buf.getvalue().strip() == text.strip()
    assert len(reports) == 1 and "array[vec3f, 250]" in reports[0]
    del a, b
    # the outermost tracker has exited and config.track_memory is off: tracking stopped, records cleared
    with pytest.raises(RuntimeError, match="track_memory"):
        wp.print_memory_report()


def test_tracker_inactive_and_config_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    with wp.ScopedMemoryTracker("off", active=False, print=False):
        wp.zeros(4)
        with pytest.raises(RuntimeError):
            wp.print_memory_report()
    monkeypatch.setattr(wp.config, "track_memory", True)
    keep = wp.empty((3, 4), dtype=wp.int32)
    buf = io.StringIO()
    wp.print_memory_report(file=buf)
    assert "array[int32, 3, 4]" in buf.getvalue() and "(no scope)" in buf.getvalue()
    with pytest.raises(ValueError, match="sort order"):
        wp.print_memory_report(sort="newest")
    del keep
    wp.ScopedMemoryTracker(print=False).clear()


def test_mempool_and_allocator_queries_on_cpu() -> None:
    cpu = wp.get_device("cpu")
    assert cpu.default_allocator is cpu.get_allocator()
    a = wp.zeros(8, device="cpu")
    assert a.ptr is not None
    assert not wp.is_mempool_supported("cpu") and not wp.is_mempool_enabled("cpu")
    wp.set_mempool_enabled("cpu", False)
    with pytest.raises(ValueError, match="only supported on CUDA"):
        wp.set_mempool_enabled("cpu", True)
    with wp.ScopedMempool("cpu", False):
        assert not wp.is_mempool_enabled("cpu")
    with pytest.raises(ValueError, match="only supported on CUDA"), wp.ScopedMempool("cpu", True):
        pass
    with pytest.raises(ValueError, match="only supported on CUDA"):
        wp.get_mempool_release_threshold("cpu")
    assert wp.is_conditional_graph_supported() is (wp.get_cuda_device_count() == 0)
