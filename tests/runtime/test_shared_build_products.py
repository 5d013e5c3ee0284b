"""Treadle's own build products (runtime library, precompiled headers) are shared by kernel cache directories."""

from __future__ import annotations

import os

import pytest

import treadle as wp
from treadle._src.runtime import native as cpu
from treadle._src.runtime import threadpool
from treadle._src.runtime.cache import unsafe_reason


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_runtime_library_is_shared_and_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(cpu, "_shared", None)
    with wp.config.override(kernel_cache_dir=str(tmp_path / "k1")):
        first = threadpool.build_runtime_library()
    assert str(first).startswith(str(tmp_path / "xdg"))
    with wp.config.override(kernel_cache_dir=str(tmp_path / "k2")):
        assert threadpool.build_runtime_library() == first  # found, not rebuilt, from another kernel cache
        os.chmod(first, 0o777)  # replaceable by other users: never loaded, rebuilt instead
        with pytest.warns(RuntimeWarning):
            again = threadpool.build_runtime_library()
        assert again == first and unsafe_reason(again) is None
    monkeypatch.setattr(cpu, "_shared", None)


def test_unusable_default_directory_falls_back_to_the_kernel_cache(tmp_path, monkeypatch):
    blocked = tmp_path / "xdg"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(cpu, "_shared", None)
    with wp.config.override(kernel_cache_dir=str(tmp_path / "k3")):
        assert str(cpu.shared_cache().root).startswith(str(tmp_path / "k3"))
    monkeypatch.setattr(cpu, "_shared", None)
