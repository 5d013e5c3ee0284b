"""Cache security: private directories and files, untrusted entries never loaded, no shell, safe C++ identifiers."""

from __future__ import annotations

import os
import stat
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.runtime.cache import KernelCache, get_cache
from treadle._src.runtime.native import get_native_compiler

posix_only = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")


def _make_kernel():
    @wp.kernel(module="unique")
    def sec_scale(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * 2.0 + 1.0

    return sec_scale


def _compiles_for_one_launch(cache_dir: Path) -> int:
    """Launch a fresh copy of the kernel with ``cache_dir`` as the cache; check the result; return compilations."""
    be = get_native_compiler()
    with wp.config.override(kernel_cache_dir=str(cache_dir)):
        before = be.compile_count
        a = wp.array(np.arange(8, dtype=np.float32))
        wp.launch(_make_kernel(), dim=8, inputs=[a])
        np.testing.assert_allclose(a.numpy(), np.arange(8) * 2.0 + 1.0)
        return be.compile_count - before


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@posix_only
def test_new_cache_directory_and_entries_are_user_only(tmp_path):
    cache = tmp_path / "a" / "b" / "cache"
    assert _compiles_for_one_launch(cache) == 1
    for d in (tmp_path / "a", tmp_path / "a" / "b", cache, cache / "lib", cache / "ref"):
        assert _mode(d) == 0o700, d
    libs = list((cache / "lib").glob("*.so"))
    refs = list((cache / "ref").glob("*.ref"))
    assert libs and refs
    assert all(_mode(p) & 0o077 == 0 for p in libs + refs)
    assert _compiles_for_one_launch(cache) == 0  # and it is used


@posix_only
def test_group_writable_cache_directory_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.warns(RuntimeWarning, match=r"not using the kernel cache directory .*writable by group") as rec:
        assert _compiles_for_one_launch(shared) == 1
    text = str(rec[0].message)
    assert "chmod 700" in text and "private directory" in text
    assert not any(shared.iterdir())  # nothing was written (or read) there
    with wp.config.override(kernel_cache_dir=str(shared)):
        fallback = get_cache().root
    assert fallback != shared and _mode(fallback) == 0o700


@posix_only
@pytest.mark.parametrize("which", ["lib", "ref"])
def test_entry_writable_by_others_is_rebuilt_not_loaded(tmp_path, which):
    cache = tmp_path / "cache"
    assert _compiles_for_one_launch(cache) == 1
    victim = next((cache / which).glob("*.so" if which == "lib" else "*.ref"))
    os.chmod(victim, 0o666)
    with pytest.warns(RuntimeWarning, match=r"not loading the cache entry .*writable by group"):
        assert _compiles_for_one_launch(cache) == 1
    # the rebuilt entry is private again and used from then on
    assert all(_mode(p) & 0o077 == 0 for p in (cache / which).iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _compiles_for_one_launch(cache) == 0


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown to another user")
def test_entry_owned_by_another_user_is_not_loaded(tmp_path):
    cache = tmp_path / "cache"
    assert _compiles_for_one_launch(cache) == 1
    ref = next((cache / "ref").glob("*.ref"))
    os.chown(ref, 65534, 65534)  # nobody
    with pytest.warns(RuntimeWarning, match=r"owned by another user \(uid 65534\)"):
        assert _compiles_for_one_launch(cache) == 1


@posix_only
def test_unsafe_reason():
    from treadle._src.runtime.cache import unsafe_reason

    class St:
        st_uid = os.getuid()
        st_mode = 0o40755

    assert unsafe_reason(Path("x"), St()) is None  # type: ignore[arg-type]
    St.st_mode = 0o40775
    assert "writable by group" in unsafe_reason(Path("x"), St())  # type: ignore[arg-type, operator]
    St.st_mode = 0o40757
    assert "writable by others" in unsafe_reason(Path("x"), St())  # type: ignore[arg-type, operator]
    St.st_uid = os.getuid() + 1
    St.st_mode = 0o40700
    assert "owned by another user" in unsafe_reason(Path("x"), St())  # type: ignore[arg-type, operator]


def test_compiler_runs_without_a_shell_even_for_hostile_paths(tmp_path, monkeypatch):
    """Every compiler process gets an argument list and no shell; a cache path full of shell syntax is harmless."""
    calls = []
    real_popen = subprocess.Popen

    class Spy(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, args, *a, **kw):
            calls.append((args, kw.get("shell", False)))
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Spy)
    hostile = tmp_path / "c a c h e;$(touch PWNED)`touch PWNED2`'\"&|"
    with wp.config.override(use_precompiled_headers=False):
        assert _compiles_for_one_launch(hostile) == 1
    assert calls, "the compiler was not started through subprocess"
    assert all(isinstance(args, (list, tuple)) and shell is False for args, shell in calls)
    assert not list(tmp_path.rglob("PWNED*")) and not Path("PWNED").exists()
    assert hostile.is_dir()


def test_cache_clear_and_reuse_of_private_directory(tmp_path):
    c = KernelCache(tmp_path / "x")
    c._dirs()
    assert (tmp_path / "x" / "lib").is_dir()
    c.clear()
    assert not (tmp_path / "x").exists()
    c._dirs()  # recreated on demand
    assert (tmp_path / "x" / "ref").is_dir()


# ------------------------------------------------------------------------------------------------ identifiers
@wp.struct
class Keywords:
    new: float
    delete: wp.vec3
    template: int
    this: float
    INFINITY: float
    _X: float
    a__b: float
    β: float


@wp.func
def operator(new: float, default: float) -> float:
    switch = new * 2.0
    return switch + default


@wp.func
def adj_operator(x: float) -> float:  # the name of the adjoint generated for `operator`
    return x + 1.0


@wp.kernel(module="unique")
def k_cpp_keywords(new: wp.array(dtype=float), delete: wp.array(dtype=float), s: Keywords, int32: int,
                   args: float, _tid: int):
    this = wp.tid()
    auto = new[this]
    register = operator(auto, 1.0)
    adj_auto = register + adj_operator(0.0)
    var_0 = adj_auto + s.new + s.delete[1] + float(s.template) + s.this + s.INFINITY + s._X + s.a__b + s.β
    _v1 = var_0 + args + float(int32) + float(_tid)
    adj_new = _v1
    delete[this] = adj_new


def test_cpp_keywords_and_generated_names_as_user_identifiers():
    x = np.arange(4, dtype=np.float32)
    new = wp.array(x, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    s = Keywords()
    s.new, s.delete, s.template, s.this, s.INFINITY, s.β = 1.0, wp.vec3(0.0, 2.0, 0.0), 3, 4.0, 5.0, 6.0
    s._X, s.a__b = 7.0, 8.0
    tape = wp.Tape()
    with tape:
        wp.launch(k_cpp_keywords, dim=4, inputs=[new, out, s, 5, 6.0, 7])
    expected = (2.0 * x + 1.0) + 1.0 + (1.0 + 2.0 + 3.0 + 4.0 + 5.0 + 7.0 + 8.0 + 6.0) + 6.0 + 5.0 + 7.0
    np.testing.assert_allclose(out.numpy(), expected)
    tape.backward(grads={out: wp.ones(4, dtype=float)})
    np.testing.assert_allclose(new.grad.numpy(), 2.0)


@wp.kernel(module="unique")
def k_unicode(a: wp.array(dtype=float), β: float):
    i = wp.tid()
    α = a[i] * β
    a[i] = α


def test_unicode_identifiers():
    a = wp.array(np.arange(4, dtype=np.float32))
    wp.launch(k_unicode, dim=4, inputs=[a, 2.5])
    np.testing.assert_allclose(a.numpy(), np.arange(4) * 2.5)


def test_cpp_field_mangling_is_injective_on_examples():
    from treadle._src.compiler.emit_cpp import cpp_field

    names = ["new", "tr_new", "x", "INFINITY", "Inf", "__x", "_X", "_x", "β", "tr_β", "a_b", "ab", "X", "NAN"]
    mangled = [cpp_field(n) for n in names]
    assert len(set(mangled)) == len(names)
    assert all(m.isascii() and m.isidentifier() for m in mangled)
    assert cpp_field("x") == "x" and cpp_field("new") != "new" and cpp_field("β").isascii()
