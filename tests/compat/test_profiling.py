"""The profiling group (``ScopedTimer``, activity timing, CUDA profiler control) and the logging group."""

from __future__ import annotations

import time
import warnings

import pytest

import treadle as wp


def test_scoped_timer_prints_nested_and_records(capsys: pytest.CaptureFixture[str]) -> None:
    times: dict[str, list[float]] = {}
    with wp.ScopedTimer("outer", dict=times) as outer:
        time.sleep(0.02)
        with wp.ScopedTimer("inner", dict=times) as inner:
            time.sleep(0.01)
            inner.extra_msg = "(extra)"
        with wp.ScopedTimer("quiet", print=False, dict=times):
            pass
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("    inner took ") and lines[0].endswith(" ms (extra)")
    assert lines[1].startswith("outer took ") and lines[1].endswith(" ms ")
    assert len(lines) == 2
    assert inner.elapsed >= 10.0 and outer.elapsed >= 30.0 > 0  # milliseconds
    assert outer.elapsed >= inner.elapsed
    assert times["outer"] == [outer.elapsed] and times["inner"] == [inner.elapsed] and len(times["quiet"]) == 1
    assert float(lines[1].split()[2]) == pytest.approx(outer.elapsed, abs=0.01)
    with wp.ScopedTimer("outer", dict=times, print=False):
        pass
    assert len(times["outer"]) == 2


def test_scoped_timer_inactive_and_exceptions(capsys: pytest.CaptureFixture[str]) -> None:
    with wp.ScopedTimer("off", active=False) as t:
        time.sleep(0.001)
    assert t.elapsed == 0.0
    with pytest.raises(ValueError, match="boom"):
        with wp.ScopedTimer("raises") as t2:
            raise ValueError("boom")
    assert t2.elapsed > 0.0
    out = capsys.readouterr().out
    assert "off" not in out and "raises took" in out
    with wp.ScopedTimer("after"):  # nesting depth restored after the exception
        pass
    assert capsys.readouterr().out.startswith("after took")


def test_scoped_timer_synchronize_filter_and_report(capsys: pytest.CaptureFixture[str]) -> None:
    @wp.kernel
    def fill(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0

    a = wp.zeros(16)
    reports = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # machines with CUDA warn that activity is not collected
        with wp.ScopedTimer("k", synchronize=True, cuda_filter=wp.TIMING_ALL,
                            report_func=lambda r, indent: reports.append((r, indent)), color="cyan") as t:
            wp.launch(fill, 16, inputs=[a])
    assert a.numpy().sum() == 16
    assert t.timing_results == [] and reports == [([], "")]  # CPU work is not a device activity
    assert "k took" in capsys.readouterr().out


def test_scoped_timer_detailed_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    def work() -> int:
        return sum(range(1000))

    with wp.ScopedTimer("prof", detailed=True):
        work()
    out = capsys.readouterr().out
    assert "function calls" in out and "work" in out and "prof took" in out


def test_scoped_timer_nvtx_needs_package() -> None:
    try:
        import nvtx  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install nvtx"):
            with wp.ScopedTimer("n", use_nvtx=True):
                pass
    else:
        with wp.ScopedTimer("n", use_nvtx=True) as t:
            pass
        assert t.elapsed == 0.0


def test_scoped_timer_records_tape_scope() -> None:
    @wp.kernel
    def double(a: wp.array(dtype=float), b: wp.array(dtype=float)):
        i = wp.tid()
        b[i] = 2.0 * a[i]

    a = wp.ones(4, requires_grad=True)
    b = wp.zeros(4, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with wp.ScopedTimer("scoped", print=False):
            wp.launch(double, 4, inputs=[a, b])
        with wp.ScopedTimer("skipped", print=False, skip_tape=True):
            wp.launch(double, 4, inputs=[a, b])
    names = [s[1] for s in tape.scopes]
    assert names == ["scoped", None]


def test_timing_functions(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wp.timing_begin(wp.TIMING_KERNEL | wp.TIMING_MEMCPY)
    assert wp.timing_end() == []
    wp.timing_print([])
    assert capsys.readouterr().out == "No activity\n"
    results = [wp.TimingResult("cuda:0", "kernel_a", wp.TIMING_KERNEL, 1.5),
               wp.TimingResult("cuda:0", "kernel_a", wp.TIMING_KERNEL, 0.5),
               wp.TimingResult("cuda:1", "memcpy HtoD", wp.TIMING_MEMCPY, 0.25)]
    r = results[0]
    assert (r.device, r.name, r.filter, r.elapsed) == ("cuda:0", "kernel_a", 1, 1.5)
    wp.timing_print(results, indent="  ")
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith("  ") for line in out if line)
    summary = out[out.index("  Activity summary:"):]
    assert any("2.000000 ms" in line and "kernel_a" in line and " 2 " in line for line in summary)
    devices = out[out.index("  Device summary:"):]
    assert any("2.000000 ms" in line and "cuda:0" in line for line in devices)
    assert (wp.TIMING_KERNEL, wp.TIMING_KERNEL_BUILTIN, wp.TIMING_MEMCPY, wp.TIMING_MEMSET, wp.TIMING_GRAPH,
            wp.TIMING_ALL) == (1, 2, 4, 8, 16, 0xFFFFFFFF)


def test_cuda_profiler_control_is_a_no_op_on_cpu() -> None:
    wp.cuda_profiler_start("cpu")
    wp.cuda_profiler_stop("cpu")
    with wp.ScopedCudaProfiler("cpu") as p:
        pass
    assert p.device is None
    with pytest.raises(Exception):  # noqa: B017 - an unknown device is the device layer's error
        wp.ScopedCudaProfiler("nodevice:7")


class _Capture:
    def __init__(self) -> None:
        self.records: list[tuple[str, str]] = []

    def debug(self, message: str) -> None:
        self.records.append(("debug", message))

    def info(self, message: str) -> None:
        self.records.append(("info", message))

    def warning(self, message: str, category: object = None, stacklevel: int = 1) -> None:
        self.records.append(("warning", message))

    def error(self, message: str) -> None:
        self.records.append(("error", message))


def test_logger_protocol_scopes_and_levels(capsys: pytest.CaptureFixture[str]) -> None:
    from treadle._src.core import logger as log

    default = wp.get_logger()
    assert isinstance(default, wp.Logger)
    cap = _Capture()
    with wp.ScopedLogger(cap):
        assert wp.get_logger() is cap
        with wp.ScopedLogLevel(wp.LOG_DEBUG):
            assert wp.config.log_level == wp.LOG_DEBUG
            log.log_debug("d")
            log.log_info("i")
        with wp.ScopedLogLevel(wp.LOG_ERROR):
            log.log_warning("hidden")
            log.log_error("e")
    assert wp.get_logger() is default
    assert cap.records == [("debug", "d"), ("info", "i"), ("error", "e")]
    wp.set_logger(cap)
    wp.set_logger(None)
    assert wp.get_logger() is default
    with pytest.raises(TypeError, match="lacks debug, warning"):
        wp.set_logger(type("Half", (), {"info": print, "error": print})())
    with wp.ScopedLogLevel(wp.LOG_INFO):
        log.log_info("to stdout")
        with pytest.warns(UserWarning, match="careful") as rec:
            log.log_warning("careful")
        assert rec[0].filename == __file__  # the warning points at the caller
    assert capsys.readouterr().out == "to stdout\n"
