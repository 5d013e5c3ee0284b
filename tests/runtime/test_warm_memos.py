"""Per-process memos of the warm-start fingerprint (compiler/fingerprint.py) never hide a change.

The code-generation settings of ``wp.config`` are compared by identity between fingerprints (lists by content), and
values described by identity alone (types, Treadle's functions, enum members) are described once per process. These
tests check that a setting changed in any way changes the fingerprint, and that the remembered descriptions give the
same fingerprints as describing everything afresh.
"""

from __future__ import annotations

import enum
import math
from pathlib import Path

import pytest
from fresh_module import import_fresh

import treadle as wp
from treadle._src.backends.cpu import warm
from treadle._src.compiler import fingerprint

SOURCE = """
import enum
import treadle as wp

class Mode(enum.IntEnum):
    A = 1
    B = 2

MODE = Mode.{mode}

@wp.func
def helper(v: wp.vec3) -> float:
    return wp.length(v)

@wp.kernel
def k(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    if wp.static(MODE == Mode.A):
        out[i] = helper(a[i])
    else:
        out[i] = wp.float32(2.0) * helper(a[i])
"""


def _load(root: Path, name: str, mode: str):  # noqa: ANN202 - a module object
    # the variants differ in size too: a rewrite within one timestamp tick is still seen (by Python's bytecode
    # cache as by the index's file digests)
    return import_fresh(root, name, SOURCE.format(mode=mode) + "#" * (ord(mode) - ord("A")) + "\n")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    return tmp_path


def test_config_state_sees_every_kind_of_change(monkeypatch):
    monkeypatch.setattr(wp.config, "cpu_compiler_flags", list(wp.config.cpu_compiler_flags))
    base = fingerprint._config_state()
    assert fingerprint._config_state() == base
    wp.config.cpu_compiler_flags.append("-DTREADLE_MEMO_TEST=1")  # a list changed in place: same object
    changed = fingerprint._config_state()
    assert changed != base and "TREADLE_MEMO_TEST" in changed
    wp.config.cpu_compiler_flags.pop()
    assert fingerprint._config_state() == base
    monkeypatch.setattr(wp.config, "max_unroll", wp.config.max_unroll + 1)
    assert fingerprint._config_state() != base
    monkeypatch.setattr(wp.config, "max_unroll", int(str(wp.config.max_unroll - 1)))  # equal value, other object
    assert fingerprint._config_state() == base
    monkeypatch.setattr(wp.config, "treadle_memo_test_setting", 3, raising=False)  # a new setting
    assert fingerprint._config_state() != base
    monkeypatch.delattr(wp.config, "treadle_memo_test_setting")
    assert fingerprint._config_state() == base


class Mode(enum.IntEnum):
    A = 1
    B = 2


def test_each_object_keeps_its_own_remembered_description(monkeypatch):
    objs = [Mode.A, Mode.B, wp.vec3, wp.vec3d, wp.mat33, wp.float32, wp.float64, wp.int32, wp.length, wp.tid,
            math.sqrt, abs, Mode]

    def describe(o: object) -> list[str]:
        f = fingerprint._Fingerprinter()
        f.value(o, {"A", "B"}, 0)
        return f.parts

    fresh = []
    for o in objs:
        monkeypatch.setattr(fingerprint, "_STABLE", {})
        fresh.append(describe(o))
    assert len({repr(p) for p in fresh}) == len(objs)
    monkeypatch.setattr(fingerprint, "_STABLE", {})
    for _ in range(2):  # remembering, then all remembered
        assert [describe(o) for o in objs] == fresh


def test_remembered_descriptions_give_the_fresh_fingerprint(cache, monkeypatch):
    mod = _load(cache, "warm_memo_a", "A")
    inst = mod.k.get_instance(None)
    monkeypatch.setattr(fingerprint, "_STABLE", {})
    fresh = warm.warm_key(inst)
    assert fresh is not None and fingerprint._STABLE  # vec3, float32, the builtins and the enum member remembered
    assert any(isinstance(v, enum.Enum) for v, _ in fingerprint._STABLE.values())
    assert warm.warm_key(inst) == fresh  # described from the memo
    other = _load(cache, "warm_memo_a", "B")  # another enum member: another kernel
    assert warm.warm_key(other.k.get_instance(None)) not in (None, fresh)
    again = _load(cache, "warm_memo_a", "A")
    assert warm.warm_key(again.k.get_instance(None)) == fresh
    monkeypatch.setattr(fingerprint, "_STABLE", {})
    assert warm.warm_key(again.k.get_instance(None)) == fresh


def test_results_follow_the_enum_member_across_warm_loads(cache):
    a = wp.array([[3.0, 4.0, 0.0]], dtype=wp.vec3)
    for mode, want in (("A", 5.0), ("B", 10.0), ("A", 5.0)):
        mod = _load(cache, "warm_memo_run", mode)
        out = wp.zeros(1, dtype=float)
        wp.launch(mod.k, 1, inputs=[a, out])
        assert out.numpy()[0] == pytest.approx(want)
