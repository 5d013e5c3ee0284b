"""``wp.config.sanitize`` / ``TREADLE_SANITIZE``: sanitizer-instrumented native builds (docs/threads.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import treadle as wp
from treadle._src.core.errors import ToolchainError
from treadle._src.runtime import fastlaunch, threadpool
from treadle._src.runtime.native import CompileOptions, sanitizer_flags

ROOT = Path(__file__).resolve().parents[2]


def test_sanitizer_flags_reach_every_native_build(monkeypatch):
    """Kernels, the runtime library and the launch extension all get the flags (and so other cache entries)."""
    plain = CompileOptions().key()
    rt, ext = threadpool._rt_flags(), fastlaunch._flags()
    monkeypatch.setattr(wp.config, "sanitize", "thread")
    assert sanitizer_flags() == ["-fsanitize=thread", "-g", "-fno-omit-frame-pointer"]
    assert "-fsanitize=thread" in CompileOptions().flags()
    assert CompileOptions().key() != plain
    assert "-fsanitize=thread" in threadpool._rt_flags() and threadpool._rt_flags() != rt
    assert "-fsanitize=thread" in fastlaunch._flags() and fastlaunch._flags() != ext
    monkeypatch.setattr(wp.config, "sanitize", "address, undefined")
    assert sanitizer_flags()[0] == "-fsanitize=address,undefined"


def test_unknown_sanitizer_is_an_error(monkeypatch):
    monkeypatch.setattr(wp.config, "sanitize", "thread,memory-leaks")
    with pytest.raises(ToolchainError, match="memory-leaks"):
        sanitizer_flags()


def _libtsan() -> str | None:
    cxx = shutil.which("g++")
    if cxx is None:
        return None
    lib = subprocess.run([cxx, "-print-file-name=libtsan.so"], capture_output=True, text=True).stdout.strip()
    return os.path.realpath(lib) if lib and os.path.exists(lib) else None


@pytest.mark.skipif(sys.platform != "linux", reason="ThreadSanitizer runs are set up for Linux")
def test_thread_sanitizer_build_runs_instrumented(tmp_path):
    """With TREADLE_SANITIZE=thread (g++, its runtime preloaded) kernels, thread pool and launch extension are
    instrumented builds, launches run on them, and results are right.

    Whether ThreadSanitizer *reports* a race depends on how the threads happened to interleave, so no test asserts
    a report; ``tools/stress_threads.py --tsan`` collects them (docs/threads.md).
    """
    lib = _libtsan()
    if lib is None:
        pytest.skip("g++ with its ThreadSanitizer runtime (libtsan) is not installed")
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import treadle as wp
        from treadle._src.runtime import fastlaunch, threadpool

        @wp.kernel
        def triple(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = x[i] * 3.0

        x = wp.array(np.arange(1 << 15, dtype=np.float32))
        y = wp.zeros(1 << 15, dtype=float)
        wp.launch(triple, dim=1 << 15, inputs=[x], outputs=[y])
        assert np.array_equal(y.numpy(), np.arange(1 << 15, dtype=np.float32) * 3.0)
        inst = triple.get_instance(None)
        print("kernel", inst.built.lib_path)
        print("runtime", threadpool.get_cpu_runtime().path)
        print("extension", fastlaunch._STATE.path or "")
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT), TREADLE_CACHE_PATH=str(tmp_path / "cache"),
               TREADLE_SANITIZE="thread", TREADLE_CXX=shutil.which("g++") or "g++", LD_PRELOAD=lib,
               TSAN_OPTIONS="halt_on_error=0")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    if res.returncode != 0 and "Traceback" not in res.stderr:
        pytest.skip(f"this Python does not run with ThreadSanitizer preloaded (status {res.returncode})")
    assert res.returncode == 0, res.stderr
    paths = dict(line.split(" ", 1) for line in res.stdout.splitlines() if " " in line)
    for what in ("kernel", "runtime", "extension"):
        assert paths.get(what), (what, res.stdout)
        assert b"__tsan_func_entry" in Path(paths[what]).read_bytes(), f"the {what} library is not instrumented"
