"""The pieces of a warm start's path to its first launches that avoid work (runtime/warm_index.py, backends/cpu/launch.py).

The signature of Treadle's sources is taken with one ``stat`` per file and must still see every edit; argument
layouts are computed without ctypes struct types and must be the struct's; libraries are loaded without a ctypes
class each and must behave as ``ctypes.CDLL``'s; a first launch packs fresh arrays without the ``Args`` struct.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.cpu import warm
from treadle._src.compiler import fingerprint
from treadle._src.compiler import instance as kernel_mod
from treadle._src.compiler.fingerprint import sources_signature
from treadle._src.runtime import fastlaunch
from treadle._src.runtime.native import load_native_library, symbol_address
from treadle._src.types.typesys import ArrayT


def _tree(root: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    (root / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    (root / "single.py").write_text("z = 3\n")


def test_sources_signature_sees_every_edit(tmp_path: Path) -> None:
    _tree(tmp_path)
    parts = ("pkg", "single.py", "missing")
    sig = sources_signature(str(tmp_path), parts)
    assert sources_signature(str(tmp_path), parts) == sig

    # an edit in place keeping the size (only the modification time changes; no directory changes)
    a = tmp_path / "pkg" / "a.py"
    st = a.stat()
    a.write_text("x = 9\n")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    sig2 = sources_signature(str(tmp_path), parts)
    assert sig2 != sig

    # a file in a subpackage, a new file, a file of a part that is one file, a part that appears
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 22\n")
    sig3 = sources_signature(str(tmp_path), parts)
    assert sig3 != sig2
    (tmp_path / "pkg" / "sub" / "c.py").write_text("")
    sig4 = sources_signature(str(tmp_path), parts)
    assert sig4 != sig3
    (tmp_path / "single.py").write_text("z = 33\n")
    sig5 = sources_signature(str(tmp_path), parts)
    assert sig5 != sig4
    (tmp_path / "missing").mkdir()
    (tmp_path / "missing" / "m.py").write_text("")
    sig6 = sources_signature(str(tmp_path), parts)
    assert sig6 != sig5

    # what is not a source does not count: other files, bytecode caches
    (tmp_path / "pkg" / "notes.txt").write_text("hello")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert sources_signature(str(tmp_path), parts) == sig6


@wp.struct
class _Pair:
    a: wp.int8
    b: wp.float64


_LAYOUT_CASES = [
    (wp.float32,),
    (wp.int8, wp.float64, wp.int16),
    (wp.bool, wp.vec3, wp.uint8, wp.mat33d),
    (ArrayT(wp.float32, 1), wp.float32),
    (wp.int8, ArrayT(wp.vec3, 2), wp.int8, ArrayT(wp.float64, 3, True)),
    (wp.uint8, _Pair, wp.float16, wp.quatd, wp.int64),
    (wp.transformf, wp.int8),
]


@pytest.mark.parametrize("types", _LAYOUT_CASES)
def test_args_layout_is_the_struct_layout(types: tuple) -> None:
    names = [f"p{i}" for i in range(len(types))]
    struct = kernel_mod.make_args_struct(names, types)
    fields, offsets, size, align = kernel_mod.args_layout(types)
    assert offsets == [getattr(struct, n).offset for n in names]
    assert [ctypes.sizeof(f) for f in fields] == [getattr(struct, n).size for n in names]
    assert size == ctypes.sizeof(struct)
    assert align == ctypes.alignment(struct)


def _libc() -> str:
    name = ctypes.util.find_library("c")
    if name is None:
        pytest.skip("no C library to load")
    return name


def test_native_library_functions_behave_as_cdll_functions() -> None:
    path = _libc()
    one = load_native_library(path, getattr(ctypes, "RTLD_LOCAL", 0))
    two = load_native_library(path, getattr(ctypes, "RTLD_LOCAL", 0))
    ref = ctypes.CDLL(path)
    f1, f2 = one.strlen, two.strlen
    assert f1 is one.strlen  # looked up once, as CDLL does
    f1.restype = ctypes.c_size_t
    f1.argtypes = [ctypes.c_char_p]
    assert f1(b"treadle") == 7
    assert f2.restype is ctypes.c_int and f2.argtypes is None  # another library's function keeps its own settings
    assert symbol_address(one, "strlen") == ctypes.cast(ref.strlen, ctypes.c_void_p).value
    with pytest.raises(AttributeError):
        symbol_address(one, "treadle_no_such_symbol")
    with pytest.raises(AttributeError):
        one.treadle_no_such_symbol  # noqa: B018 - the lookup is the test


@wp.kernel
def _axpy(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3), a: float):
    i = wp.tid()
    y[i] = y[i] * a + wp.vec3(x[i], 0.0, 1.0)


def test_first_launch_packs_fresh_arrays_without_the_struct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    x = wp.array(np.arange(8, dtype=np.float32))
    y = wp.ones(8, dtype=wp.vec3)
    wp.launch(_axpy, 8, inputs=[x, y, 2.0])
    inst = _axpy.get_instance(None)
    if fastlaunch.module() is not None:
        assert inst._args_type is None  # the native path packed everything
    expect = np.stack([2.0 + np.arange(8), np.full(8, 2.0), np.full(8, 3.0)], axis=1)
    np.testing.assert_allclose(y.numpy(), expect)

    # values the native path hands to Python packers, and a recorded launch, use the struct in the same frame
    wp.launch(_axpy, 8, inputs=[np.arange(8, dtype=np.float32), y, np.float32(1.0)])
    np.testing.assert_allclose(y.numpy(), expect + np.stack([np.arange(8), np.zeros(8), np.ones(8)], axis=1))
    rec = wp.launch(_axpy, 8, inputs=[x, y, 0.0], record_cmd=True)
    rec.launch()
    np.testing.assert_allclose(y.numpy(), np.stack([np.arange(8), np.zeros(8), np.ones(8)], axis=1))


@wp.kernel(module_options={"enable_backward": True})
def _fp_a(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0


@wp.kernel(module_options={"enable_backward": True})
def _fp_b(x: wp.array(dtype=float), s: float):
    x[wp.tid()] = s


def test_fingerprints_in_a_batch_are_the_fingerprints_outside(monkeypatch: pytest.MonkeyPatch) -> None:

    a, b = _fp_a.get_instance(None), _fp_b.get_instance(None)
    alone = [warm.warm_key(a), warm.warm_key(b)]
    assert None not in alone and alone[0] != alone[1]
    with fingerprint.batch():
        assert [warm.warm_key(a), warm.warm_key(b)] == alone
        with fingerprint.batch():  # nested: the outer batch's shared part
            assert warm.warm_key(b) == alone[1]
        # other compile options inside one batch: their own shared part
        b.options = b.options.with_cxx("g++")
        other = warm.warm_key(b)
        assert other != alone[1]
    b.options = b.options.with_cxx(None)
    # a setting changed between two batches is seen by the next one
    monkeypatch.setattr(wp.config, "max_unroll", wp.config.max_unroll + 1)
    with fingerprint.batch():
        assert warm.warm_key(a) not in alone
    assert getattr(fingerprint._batch, "memo", None) is None  # outside: no memo left
    assert warm.warm_key(b) not in (alone[1], other)
