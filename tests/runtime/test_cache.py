"""The kernel cache: shared between processes, safe under concurrency, self-healing when damaged."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: The checkout under test (child processes import this one, whatever is installed).
ROOT = str(Path(__file__).resolve().parents[2])

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import treadle as wp
    from treadle._src.runtime.native import get_native_compiler

    SCALE = {scale}

    @wp.kernel
    def scale(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * SCALE + float(i)

    a = wp.ones(1000, dtype=float)
    wp.launch(scale, dim=1000, inputs=[a])
    ok = np.allclose(a.numpy(), SCALE + np.arange(1000))
    print("compiles", get_native_compiler().compile_count, "ok", ok)
""")


def _run(tmp_path: Path, cache: Path, scale: float, tag: str = "") -> subprocess.Popen:
    script = tmp_path / f"k_{str(scale).replace('.', '_')}.py"  # same file: #line paths are in the key
    script.write_text(SCRIPT.format(scale=scale))
    env = dict(os.environ, TREADLE_CACHE_PATH=str(cache), PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _result(p: subprocess.Popen) -> tuple[int, bool]:
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    words = out.split()
    return int(words[1]), words[3] == "True"


def test_second_process_compiles_nothing(tmp_path):
    cache = tmp_path / "cache"
    assert _result(_run(tmp_path, cache, 3.0)) == (1, True)
    assert _result(_run(tmp_path, cache, 3.0)) == (0, True)
    # a different constant is a different binary
    assert _result(_run(tmp_path, cache, 4.0)) == (1, True)


def test_eight_processes_compile_the_same_kernel_concurrently(tmp_path):
    cache = tmp_path / "cache"
    procs = [_run(tmp_path, cache, 5.0) for _ in range(8)]
    results = [_result(p) for p in procs]
    assert all(ok for _, ok in results)
    # the lock makes the others wait and reuse the first build
    assert sum(c for c, _ in results) == 1
    libs = list((cache / "lib").glob("*.so"))
    assert len(libs) == 1
    assert not list((cache / "tmp").glob("*/*.so"))


@pytest.mark.parametrize("damage", ["truncate", "delete_lib", "garbage_ref"])
def test_damaged_cache_entries_are_rebuilt(tmp_path, damage):
    cache = tmp_path / "cache"
    assert _result(_run(tmp_path, cache, 6.0)) == (1, True)
    lib = next((cache / "lib").glob("*.so"))
    ref = next((cache / "ref").glob("*.ref"))
    if damage == "truncate":
        lib.write_bytes(lib.read_bytes()[:100])
    elif damage == "delete_lib":
        lib.unlink()
    else:
        ref.write_text("nonsense")
    assert _result(_run(tmp_path, cache, 6.0)) == (1, True)
    assert _result(_run(tmp_path, cache, 6.0)) == (0, True)


def test_clear_kernel_cache(tmp_path):
    import treadle as wp

    old = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(tmp_path / "c2")
    try:
        (tmp_path / "c2" / "lib").mkdir(parents=True)
        (tmp_path / "c2" / "lib" / "x.so").write_bytes(b"x")
        wp.clear_kernel_cache()
        assert not (tmp_path / "c2" / "lib" / "x.so").exists()
    finally:
        wp.config.kernel_cache_dir = old


@pytest.mark.parametrize("damage", ["zero_lib", "flip_byte", "truncate_ref", "empty_ref"])
def test_more_damaged_entries_are_rebuilt(tmp_path, damage):
    cache = tmp_path / "cache"
    assert _result(_run(tmp_path, cache, 7.0)) == (1, True)
    lib = next((cache / "lib").glob("*.so"))
    ref = next((cache / "ref").glob("*.ref"))
    if damage == "zero_lib":
        lib.write_bytes(b"")
    elif damage == "flip_byte":  # same size, same name: only the checksum can tell
        data = bytearray(lib.read_bytes())
        data[len(data) // 2] ^= 0xFF
        lib.write_bytes(bytes(data))
    elif damage == "truncate_ref":
        ref.write_text(ref.read_text()[:20])
    else:
        ref.write_text("")
    assert _result(_run(tmp_path, cache, 7.0)) == (1, True)
    assert _result(_run(tmp_path, cache, 7.0)) == (0, True)


# ------------------------------------------------------------------------------------------------ what rebuilds
REBUILD = textwrap.dedent("""
    import numpy as np
    import treadle as wp
    from treadle._src.runtime.native import get_native_compiler

    wp.config.optimization_level = {opt}
    MODE = {mode}
    C = wp.constant({const})

    @wp.func
    def helper(x: float) -> float:
        return x * {factor}

    @wp.kernel
    def k(a: wp.array(dtype=float)):
        i = wp.tid()
        if wp.static(MODE == 1):
            a[i] = helper(a[i]) + C
        else:
            a[i] = helper(a[i]) - C

    a = wp.ones(16, dtype=float)
    wp.launch(k, dim=16, inputs=[a])
    want = {factor} + {const} if MODE == 1 else {factor} - {const}
    print("compiles", get_native_compiler().compile_count, "ok", bool(np.allclose(a.numpy(), want)))
""")

BASE = {"opt": "None", "mode": 1, "const": 0.5, "factor": 3.0}


def _run_rebuild(tmp_path: Path, cache: Path, env: dict[str, str] | None = None, **change: object) -> tuple[int, bool]:
    script = tmp_path / "rebuild.py"  # the same file each time: only the intended change differs
    script.write_text(REBUILD.format(**{**BASE, **change}))
    full_env = dict(os.environ, TREADLE_CACHE_PATH=str(cache), PYTHONPATH=ROOT, **(env or {}))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=full_env)
    return _result(p)


@pytest.mark.parametrize("change", [{"factor": 4.0}, {"const": 0.25}, {"mode": 2}, {"opt": 1}],
                         ids=["func_dependency", "constant", "static_choice", "option"])
def test_changes_that_rebuild(tmp_path, change):
    cache = tmp_path / "cache"
    assert _run_rebuild(tmp_path, cache) == (1, True)
    assert _run_rebuild(tmp_path, cache, **change) == (1, True)
    assert _run_rebuild(tmp_path, cache) == (0, True)  # the first binary is still there, and reused


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell wrapper")
def test_compiler_version_change_rebuilds(tmp_path):
    """A compiler upgrade at the same path (simulated by a wrapper reporting another version) rebuilds."""
    import shutil

    real = shutil.which("clang++") or shutil.which("g++")
    if real is None:
        pytest.skip("no C++ compiler")
    wrapper = tmp_path / "bin" / "cxx"
    wrapper.parent.mkdir()

    def install(version: str) -> None:
        wrapper.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version}"; exit 0; fi\n'
                           f'exec "{real}" "$@"\n')
        wrapper.chmod(0o755)

    cache = tmp_path / "cache"
    env = {"TREADLE_CXX": str(wrapper)}
    install("fake clang version 99.1")
    assert _run_rebuild(tmp_path, cache, env) == (1, True)
    assert _run_rebuild(tmp_path, cache, env) == (0, True)
    install("fake clang version 99.22 (upgraded)")
    assert _run_rebuild(tmp_path, cache, env) == (1, True)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_entry_made_writable_by_others_is_not_loaded_by_a_new_process(tmp_path):
    """Every way into the cache (the warm-start index included) refuses a library others could have replaced."""
    cache = tmp_path / "cache"
    assert _result(_run(tmp_path, cache, 8.0)) == (1, True)
    assert _result(_run(tmp_path, cache, 8.0)) == (0, True)
    lib = next((cache / "lib").glob("*.so"))
    os.chmod(lib, 0o777)
    p = _run(tmp_path, cache, 8.0)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert out.split()[1] == "1" and out.split()[3] == "True"
    assert "not loading the cache entry" in err and "writable by" in err
