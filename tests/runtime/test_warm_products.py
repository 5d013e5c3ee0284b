"""Treadle's own native products (runtime library, launch extension) on the warm path (runtime/warm_env.py).

A warm start takes the path of each product from the environment memo instead of reading and hashing its native
sources; the memo's stamp covers those sources and the compiler. These tests check that the remembered path is used,
that touching a source keeps the product, that editing it, other settings or another compiler do not take the old
path, and that a remembered file that is not trusted or not a product is never returned.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from fresh_module import import_fresh

import treadle as wp
from treadle._src.backends.cpu import warm
from treadle._src.backends.cpu import warm as cpu_warm
from treadle._src.compiler import fingerprint
from treadle._src.runtime import native as cpu
from treadle._src.runtime import threadpool, warm_env

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")

KERNEL = """
import treadle as wp

@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0
"""

STEM = "treadle_testproduct"


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A private kernel cache and shared cache, a copy of the native sources; per-process memos forgotten."""
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(wp.config, "cxx", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(cpu, "_shared", None)
    native = tmp_path / "native"
    shutil.copytree(cpu.NATIVE_DIR, native)
    monkeypatch.setattr(cpu, "NATIVE_DIR", native)
    monkeypatch.setattr(cpu_warm, "treadle_signature", lambda: "treadle sources as they were")
    monkeypatch.setattr(cpu_warm, "build_sources", lambda: "build sources as they were")
    monkeypatch.setattr(fingerprint, "lowering_sources", lambda: "lowering sources as they were")
    warm_env.forget()
    yield tmp_path
    warm_env.forget()
    monkeypatch.setattr(cpu, "_shared", None)


def _start(root: Path) -> None:
    """What a fresh process does before its first launch: fingerprint a kernel (takes the stamp, reads the memo)."""
    warm_env.forget()
    mod = import_fresh(root, "warm_products_kernel", KERNEL)
    assert warm.warm_key(mod.bump.get_instance(None)) is not None


def _product(native: Path, builds: list[str], flags: str = "-O2") -> Path:
    def build(out: Path) -> None:
        builds.append(flags)
        out.write_bytes(b"a stand-in for a compiled product")

    return threadpool.shared_library(STEM, [flags], build, (native / "threads.h",))


def _memo_products(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for memo in (root / "cache" / "warm").glob("env_*.json"):
        out.update(json.loads(memo.read_text()).get("products", {}))
    return out


def test_the_remembered_product_is_used_without_reading_its_sources(isolated, monkeypatch):
    root, native = isolated, isolated / "native"
    builds: list[str] = []
    _start(root)
    first = _product(native, builds)
    assert builds == ["-O2"] and first.parent.name == "rt"
    assert list(_memo_products(root).values()) == [str(first)]
    _start(root)
    real_read = Path.read_text

    def no_native_reads(self: Path, *a: object, **k: object) -> str:
        assert self.parent != native, f"read {self} on the warm path"
        return real_read(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", no_native_reads)
    assert _product(native, builds) == first
    assert builds == ["-O2"]
    monkeypatch.setattr(Path, "read_text", real_read)
    assert _product(native, builds, "-O3") != first  # other settings: another product, not the remembered one
    assert builds == ["-O2", "-O3"]


def test_a_touched_source_keeps_the_product_an_edited_one_does_not(isolated):
    root, native = isolated, isolated / "native"
    builds: list[str] = []
    _start(root)
    first = _product(native, builds)
    src = native / "threads.h"
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    (key,) = _memo_products(root)
    _start(root)  # another stamp: the path is derived from the sources' text again, which did not change
    assert warm_env.product(STEM, key) is None
    assert _product(native, builds) == first and builds == ["-O2"]
    with open(src, "a") as f:
        f.write("\n// edited\n")
    _start(root)
    edited = _product(native, builds)
    assert edited != first and builds == ["-O2", "-O2"]
    _start(root)
    assert _product(native, builds) == edited and len(builds) == 2  # remembered under the new stamp


def test_another_compiler_does_not_take_the_remembered_product(isolated, monkeypatch):
    root, native = isolated, isolated / "native"
    builds: list[str] = []
    _start(root)
    _product(native, builds)
    (key,) = _memo_products(root)
    _start(root)
    assert warm_env.product(STEM, key) is not None
    bindir = root / "bin"
    bindir.mkdir()
    fake = bindir / "clang++"
    real = cpu.get_native_compiler().toolchain().path
    fake.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Fake clang 99.0"; exit 0; fi\nexec "{real}" "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), os.environ.get("PATH", "")]))
    _start(root)
    assert warm_env.product(STEM, key) is None  # another stamp: nothing remembered under it yet


def test_an_untrusted_or_foreign_remembered_path_is_not_returned(isolated):
    root, native = isolated, isolated / "native"
    builds: list[str] = []
    _start(root)
    first = _product(native, builds)
    os.chmod(first, 0o777)  # replaceable by other users: rebuilt, never taken from the memo
    _start(root)
    with pytest.warns(RuntimeWarning):
        again = _product(native, builds)
    assert again == first and builds == ["-O2", "-O2"] and not os.stat(first).st_mode & 0o022
    (memo,) = (root / "cache" / "warm").glob("env_*.json")
    data = json.loads(memo.read_text())
    (key,) = data["products"]
    for bad in ("/etc/passwd", "relative/rt/treadle_testproduct_x.so", str(root / "rt" / "other_x.so")):
        data["products"][key] = bad
        memo.write_text(json.dumps(data))
        os.chmod(memo, 0o600)
        _start(root)
        assert warm_env.product(STEM, key) is None


def test_a_memo_of_another_cache_or_shared_directory_is_not_used(isolated, monkeypatch):
    root, native = isolated, isolated / "native"
    builds: list[str] = []
    _start(root)
    first = _product(native, builds)
    (key,) = _memo_products(root)
    _start(root)
    assert warm_env.product(STEM, key) == str(first)
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "xdg2"))
    monkeypatch.setattr(cpu, "_shared", None)
    assert warm_env.product(STEM, key) is None  # products live in another directory now
    second = _product(native, builds)
    assert str(second).startswith(str(root / "xdg2")) and len(builds) == 2
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(root / "other-cache"))
    assert warm_env.product(STEM, key) is None  # the memo read belongs to the first kernel cache
