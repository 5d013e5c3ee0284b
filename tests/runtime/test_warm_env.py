"""The environment stamp of warm starts (runtime/warm_env.py) and libraries loaded at first launch.

A warm start takes the header digest, the compiler's path and version, the CPU fingerprint and the loop compiler
from a memo keyed by a stamp of cheap facts (stat of headers, compilers and Treadle's sources, the boot id). These
tests check that the memo gives exactly what the normal derivation gives, that touching or editing a header and
swapping or shadowing the compiler give another stamp (and, where the binary would differ, another fingerprint), and
that a memo that is not ours or does not fit is ignored.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fresh_module import import_fresh

import treadle as wp
from treadle._src.backends.cpu import build as cpu_build
from treadle._src.backends.cpu import warm
from treadle._src.backends.cpu import warm as cpu_warm
from treadle._src.compiler import fingerprint
from treadle._src.runtime import native as cpu
from treadle._src.runtime import toolchain, warm_env

KERNEL = """
import treadle as wp

@wp.kernel
def twice(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * 2.0 + {c}
"""


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A private kernel cache; every per-process memo forgotten before and after (as in a fresh process)."""
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(wp.config, "cxx", None)
    warm_env.forget()
    yield tmp_path
    warm_env.forget()


@pytest.fixture
def isolated(fresh: Path, monkeypatch: pytest.MonkeyPatch):
    """``fresh``, with its own copy of the native headers and Treadle's sources taken as unchanged.

    Other work on the same checkout must not change the stamp while a test compares stamps.
    """
    native = fresh / "native"
    shutil.copytree(cpu.NATIVE_DIR, native)
    monkeypatch.setattr(cpu, "NATIVE_DIR", native)
    monkeypatch.setattr(cpu_warm, "treadle_signature", lambda: "treadle sources as they were")
    monkeypatch.setattr(cpu_warm, "build_sources", lambda: "build sources as they were")
    monkeypatch.setattr(fingerprint, "lowering_sources", lambda: "lowering sources as they were")
    return fresh


def _module(root: Path, name: str, c: float = 1.0):  # noqa: ANN202 - a module object
    return import_fresh(root, name, KERNEL.format(c=c))


def _facts() -> dict[str, object]:
    tc = cpu.get_native_compiler().toolchain()
    return {"header_hash": cpu.header_hash(), "toolchain": (tc.path, tc.version, tc.identity),
            "cpu_fp": toolchain.cpu_fingerprint(), "loop": cpu.get_native_compiler().loop_compiler(),
            "loop_sig": cpu.get_native_compiler().loop_compiler_signature()}


def _memos(cache: Path) -> list[Path]:
    return sorted((cache / "warm").glob("env_*.json"))


def test_which_many_finds_what_shutil_which_finds(tmp_path, monkeypatch):
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    (a / "tool").mkdir()  # a directory is not a command
    (b / "tool").write_text("#!/bin/sh\n")  # not executable
    (c / "tool").write_text("#!/bin/sh\n")
    (c / "tool").chmod(0o755)
    (a / "other").write_text("#!/bin/sh\n")
    (a / "other").chmod(0o755)
    (c / "other").write_text("#!/bin/sh\n")
    (c / "other").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(a), str(b), str(a), str(c)]))
    found = warm_env.which_many(("tool", "other", "missing-tool-xyz"))
    for name in ("tool", "other", "missing-tool-xyz"):
        want = shutil.which(name)
        assert (found[name][0] if name in found else None) == want
    assert found["tool"][0] == str(c / "tool") and found["other"][0] == str(a / "other")
    assert found["tool"][1].st_ino == os.stat(c / "tool").st_ino


def test_primed_facts_equal_derived_facts(isolated):
    fresh = isolated
    mod = _module(fresh, "warm_env_same")
    inst = mod.twice.get_instance(None)
    fp = warm.warm_key(inst)  # no memo yet: derived the normal way, then remembered
    assert fp is not None
    derived = _facts()
    memos = _memos(fresh / "cache")
    assert len(memos) == 1
    assert stat.S_IMODE(memos[0].stat().st_mode) == 0o600
    warm_env.forget()
    assert warm.warm_key(inst) == fp  # primed from the memo
    assert _facts() == derived


def test_a_touched_header_changes_the_stamp_not_the_fingerprint(isolated):
    fresh, native = isolated, isolated / "native"
    inst = _module(fresh, "warm_env_hdr").twice.get_instance(None)
    stamp = warm_env.compute_stamp()
    fp = warm.warm_key(inst)
    digest = cpu.header_hash()
    header = native / "scalar.h"
    st = header.stat()
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    warm_env.forget()
    assert warm_env.compute_stamp() != stamp
    assert warm.warm_key(inst) == fp  # same bytes: the same binary, still a warm hit
    assert len(_memos(fresh / "cache")) == 2
    with open(header, "a") as f:
        f.write("\n// edited\n")
    warm_env.forget()
    edited = warm.warm_key(inst)
    assert edited is not None and edited != fp  # other bytes: a miss, rebuilt through the normal path
    assert cpu.header_hash() != digest


def _fake_compiler(d: Path, name: str, version: str, log: Path, real: str) -> Path:
    d.mkdir(exist_ok=True)
    path = d / name
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "{version}" >> "{log}"; echo "{version}"; exit 0; fi
        exec "{real}" "$@"
    """))
    path.chmod(0o755)
    return path


def test_a_swapped_or_shadowing_compiler_misses(isolated, monkeypatch):
    fresh = isolated
    inst = _module(fresh, "warm_env_cxx").twice.get_instance(None)
    fp = warm.warm_key(inst)
    log = fresh / "versions.log"
    bindir = fresh / "bin"
    real = cpu.get_native_compiler().toolchain().path
    fake = _fake_compiler(bindir, "clang++", "Fake clang version 99.0", log, real)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), os.environ.get("PATH", "")]))
    warm_env.forget()
    shadowed = warm.warm_key(inst)
    assert shadowed not in (None, fp)  # another compiler earlier in $PATH: another binary
    assert log.read_text().count("99.0") == 1
    warm_env.forget()
    assert warm.warm_key(inst) == shadowed  # primed: the compiler is not asked again
    assert log.read_text().count("99.0") == 1
    _fake_compiler(bindir, "clang++", "Fake clang version 100.0", log, real)  # an upgrade in place
    warm_env.forget()
    upgraded = warm.warm_key(inst)
    assert upgraded not in (None, fp, shadowed)
    fake.unlink()
    warm_env.forget()
    assert warm.warm_key(inst) == fp  # the original compiler again: its entries are found again


def test_a_shadowing_loop_compiler_misses(isolated, monkeypatch):
    fresh = isolated
    if cpu.get_native_compiler().loop_compiler() is None:
        pytest.skip("no separate compiler for kernels with loops here")
    inst = _module(fresh, "warm_env_loop").twice.get_instance(None)
    fp = warm.warm_key(inst)
    bindir = fresh / "bin"
    _fake_compiler(bindir, "g++", "g++ (Fake) 99.0", fresh / "log", "/usr/bin/false")
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), os.environ.get("PATH", "")]))
    warm_env.forget()
    assert warm.warm_key(inst) not in (None, fp)


def test_untrusted_or_unfitting_memos_are_ignored(isolated):
    fresh = isolated
    inst = _module(fresh, "warm_env_bad").twice.get_instance(None)
    fp = warm.warm_key(inst)
    derived = _facts()
    (memo,) = _memos(fresh / "cache")
    good = json.loads(memo.read_text())

    def primed_with(entry: object, mode: int = 0o600) -> bool:
        memo.write_text(entry if isinstance(entry, str) else json.dumps(entry))
        memo.chmod(mode)
        warm_env.forget()
        warm_env.prime()
        return cpu._header_hash is not None  # the normal path derives it only when first asked

    assert primed_with(good)
    lie = dict(good, header_hash="0" * 64)
    if hasattr(os, "getuid"):
        assert not primed_with(lie, 0o666)  # writable by others: never trusted
    assert not primed_with("{not json")
    assert not primed_with(dict(lie, stamp="1" * 64))  # recorded under another stamp
    assert not primed_with(dict(lie, header_hash="xyz"))
    assert not primed_with(dict(lie, cxx="/elsewhere/clang++"))  # not the compiler $PATH finds now
    assert not primed_with(dict(lie, cpu_fp=17))
    memo.unlink()
    warm_env.forget()
    assert warm.warm_key(inst) == fp
    assert _facts() == derived


# ----------------------------------------------------------------------------------- loading at first launch
SCRIPT = """
import sys
sys.path.insert(0, {root!r})
import treadle as wp
import {name}
wp.load_module({name})
"""


def _cold_in_child(root: Path, name: str) -> None:
    env = dict(os.environ, TREADLE_CACHE_PATH=str(root / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(wp.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    env.pop("CXX", None)
    env.pop("TREADLE_CXX", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(root=str(root), name=name)], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr


def test_warm_libraries_load_at_first_launch(fresh):
    name = "warm_env_lazy"
    (fresh / f"{name}.py").write_text(KERNEL.format(c=1.5))
    _cold_in_child(fresh, name)  # built and recorded by another process
    mod = _module(fresh, name, c=1.5)
    wp.load_module(mod)
    inst = mod.twice.get_instance(None)
    assert inst.warm is not None and inst.loaded and inst._entry is None  # found, verified, not loaded yet
    assert str(inst.built.lib_path) not in cpu_build._libs
    a = wp.array(np.arange(6, dtype=np.float32), dtype=float)
    wp.launch(mod.twice, 6, inputs=[a])
    np.testing.assert_allclose(a.numpy(), np.arange(6) * 2.0 + 1.5)
    assert inst._entry is not None


def test_a_library_lost_before_first_launch_is_rebuilt(fresh):
    name = "warm_env_lost"
    (fresh / f"{name}.py").write_text(KERNEL.format(c=2.5))
    _cold_in_child(fresh, name)
    mod = _module(fresh, name, c=2.5)
    wp.load_module(mod)
    inst = mod.twice.get_instance(None)
    assert inst.warm is not None and inst._entry is None
    inst.built.lib_path.unlink()  # gone after it was found: the first launch builds it again
    a = wp.array(np.arange(6, dtype=np.float32), dtype=float)
    wp.launch(mod.twice, 6, inputs=[a])
    np.testing.assert_allclose(a.numpy(), np.arange(6) * 2.0 + 2.5)
    assert inst.warm is None and inst.built.lib_path.exists()


def test_first_launches_from_several_threads_load_once(fresh):
    import threading

    name = "warm_env_threads"
    (fresh / f"{name}.py").write_text(KERNEL.format(c=0.5))
    _cold_in_child(fresh, name)
    mod = _module(fresh, name, c=0.5)
    wp.load_module(mod)
    inst = mod.twice.get_instance(None)
    assert inst.warm is not None and inst._entry is None
    binds = []
    real_bind = inst.bind

    def counting_bind() -> None:
        binds.append(1)
        real_bind()

    inst.bind = counting_bind  # type: ignore[method-assign]
    arrays = [wp.array(np.arange(32, dtype=np.float32), dtype=float) for _ in range(4)]
    start = threading.Barrier(len(arrays))

    def work(a: wp.array) -> None:
        start.wait()
        wp.launch(mod.twice, 32, inputs=[a])

    threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(binds) == 1
    for a in arrays:
        np.testing.assert_allclose(a.numpy(), np.arange(32) * 2.0 + 0.5)


def test_a_second_thread_waits_for_priming(fresh, monkeypatch):
    """A thread that asks for the primed facts while another primes them waits until they are there."""
    import threading

    real = warm_env.compute_stamp
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow_stamp():  # noqa: ANN202 - the patched function's result
        if threading.current_thread().name == "primer":
            inside.set()
            assert release.wait()
            order.append("primed")
        return real()

    monkeypatch.setattr(warm_env, "compute_stamp", slow_stamp)
    started = threading.Event()

    def second() -> None:
        started.set()
        warm_env.prime()
        order.append("second returned")

    primer = threading.Thread(target=warm_env.prime, name="primer")
    primer.start()
    assert inside.wait()
    other = threading.Thread(target=second)
    other.start()
    assert started.wait()
    release.set()
    primer.join()
    other.join()
    assert order == ["primed", "second returned"]
