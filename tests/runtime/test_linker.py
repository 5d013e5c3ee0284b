"""Kernel libraries are linked with a faster linker when one is installed, and with the default one when it fails."""

from __future__ import annotations

import ctypes
import shutil

import pytest

from treadle._src.core.errors import CompileError
from treadle._src.runtime import native as cpu

SOURCE = 'extern "C" __attribute__((visibility("default"))) int answer() { return 42; }\n'
FLAGS = ["-O1", "-fPIC", "-shared"]


@pytest.fixture
def fresh_linker(monkeypatch):
    monkeypatch.setattr(cpu, "_fast_ld", None)
    monkeypatch.delenv("TREADLE_FAST_LINKER", raising=False)


def _build(tmp_path, source: str = SOURCE) -> cpu.CompileJob:
    backend = cpu.get_native_compiler()
    out = tmp_path / "lib.so"
    job = backend.start(source, out, FLAGS)
    job.wait()
    return job


def _answer(path) -> int:
    lib = ctypes.CDLL(str(path))
    lib.answer.restype = ctypes.c_int
    return lib.answer()


@pytest.mark.skipif(not (shutil.which("ld.gold") or shutil.which("ld.lld")), reason="no gold or lld installed")
def test_a_faster_linker_links_libraries_when_installed(tmp_path, fresh_linker):
    job = _build(tmp_path)
    assert cpu.fast_linker_flag() in job.cmd
    assert _answer(job.out) == 42


def test_it_can_be_turned_off(tmp_path, fresh_linker, monkeypatch):
    monkeypatch.setenv("TREADLE_FAST_LINKER", "0")
    job = _build(tmp_path)
    assert not any(f.startswith("-fuse-ld=") for f in job.cmd)
    assert _answer(job.out) == 42


def test_a_linker_that_fails_falls_back_to_the_default_one(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "_fast_ld", "-fuse-ld=treadle-no-such-linker")
    job = _build(tmp_path)
    assert _answer(job.out) == 42
    assert cpu.fast_linker_flag() == ""  # not tried again in this process


def test_compile_errors_are_reported_not_retried_without_the_linker(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "_fast_ld", "-fuse-ld=gold")
    with pytest.raises(CompileError, match="undeclared|not declared"):
        _build(tmp_path, 'extern "C" int answer() { return missing_name; }\n')
    assert cpu.fast_linker_flag() == "-fuse-ld=gold"  # a C++ error says nothing about the linker
