"""Precompiled headers: one per compiler (clang's ``.pch`` and g++'s ``.gch`` differ), keyed on compiler, flags and
headers, and a damaged or rejected one is replaced instead of slowing every build down (or failing it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.cpu import build
from treadle._src.compiler.pipeline import PRELUDE
from treadle._src.runtime import native
from treadle._src.runtime.native import CompileOptions, get_native_compiler, header_hash

COMPILERS = [c for c in ("clang++", "g++") if shutil.which(c)]


@pytest.fixture
def own_shared_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private per-user cache (where precompiled headers live) and kernel cache: nothing is shared with others."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(native, "_shared", None)
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "kernels"))
    yield tmp_path
    get_native_compiler().wait_pch()


@wp.kernel(module="unique")
def _pch_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * 2.0 + wp.length(wp.vec3(x[i], 1.0, 2.0))


def _options(cxx: str) -> CompileOptions:
    return CompileOptions().with_cxx(cxx)


def _pch_path(o: CompileOptions) -> Path:
    return get_native_compiler()._pch_paths(PRELUDE, o, header_hash())[1]


def _built_pch(o: CompileOptions) -> Path:
    be = get_native_compiler()
    assert be.pch_flags(PRELUDE, o, header_hash()) is None  # not there yet: built in the background
    be.wait_pch()
    assert be.pch_flags(PRELUDE, o, header_hash()) is not None
    return _pch_path(o)


def _build_and_run(o: CompileOptions, tag: str) -> build.Built:
    """Build the kernel with ``o`` into a fresh kernel cache and check what it computes."""
    wp.config.kernel_cache_dir = str(Path(wp.config.kernel_cache_dir).parent / f"kernels-{tag}")
    inst = _pch_kernel.get_instance(None)
    b = build.prepare(inst.ir, inst.deps, o, _pch_kernel.key)
    build.compile_batch([b], o)
    assert b.error is None and b.lib_path is not None and b.lib_path.exists()
    fn = build.load_symbol(b.lib_path, b.symbol)
    assert fn is not None
    return b


@pytest.mark.skipif(not COMPILERS, reason="no C++ compiler")
@pytest.mark.parametrize("cxx", COMPILERS)
def test_each_compiler_gets_its_own_precompiled_header(cxx, own_shared_cache):
    o = _options(cxx)
    pch = _built_pch(o)
    clang = get_native_compiler().toolchain(o).is_clang
    assert pch.suffix == (".pch" if clang else ".gch")
    assert pch.read_bytes()[:4] == (b"CPCH" if clang else b"gpch")
    assert str(own_shared_cache / "xdg") in str(pch)  # in the per-user cache, not in the kernel cache
    n = get_native_compiler().compile_count
    _build_and_run(o, "a")
    assert get_native_compiler().compile_count == n + 1  # one compiler run, with the header precompiled
    # other flags, another header; other compilers too
    assert _pch_path(CompileOptions(opt_level=2).with_cxx(cxx)) != pch
    for other in COMPILERS:
        if other != cxx:
            assert _pch_path(_options(other)) != pch


@pytest.mark.skipif(not COMPILERS, reason="no C++ compiler")
@pytest.mark.parametrize("cxx", COMPILERS)
def test_damaged_precompiled_header_is_replaced(cxx, own_shared_cache):
    o = _options(cxx)
    be = get_native_compiler()
    pch = _built_pch(o)
    pch.write_bytes(b"not a precompiled header")
    be._pch_checked.discard(str(pch))  # as a new process finds it
    assert be.pch_flags(PRELUDE, o, header_hash(), start=False) is None
    assert not pch.exists()  # removed: g++ would otherwise parse the headers at every build without a word
    _build_and_run(o, "b")  # builds without it, then builds it again in the background
    be.wait_pch()
    assert pch.read_bytes()[:4] in (b"CPCH", b"gpch")
    assert be.pch_flags(PRELUDE, o, header_hash(), start=False) is not None


@pytest.mark.skipif("clang++" not in COMPILERS, reason="clang++ is not installed")
def test_precompiled_header_the_compiler_rejects_is_dropped_and_the_build_succeeds(own_shared_cache):
    """A header that looks right but that clang refuses (another build's): the batch is retried without it."""
    o = _options("clang++")
    be = get_native_compiler()
    pch = _built_pch(o)
    pch.write_bytes(b"CPCH" + bytes(64))
    be._pch_checked.discard(str(pch))
    assert be.pch_flags(PRELUDE, o, header_hash(), start=False) is not None  # passes the cheap check
    _build_and_run(o, "c")
    assert not pch.exists() or pch.read_bytes()[4:68] != bytes(64)  # dropped (rebuilt at the next build)
    x = wp.array(np.linspace(0, 1, 8, dtype=np.float32))
    y = wp.zeros(8)
    wp.launch(_pch_kernel, 8, inputs=[x, y])
    want = np.sin(x.numpy()) * 2.0 + np.sqrt(x.numpy() ** 2 + 5.0)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)
