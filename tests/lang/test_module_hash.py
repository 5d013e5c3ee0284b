"""``Module.hash_module()``: a hash of what a module's kernels compile to with the current globals."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import treadle as wp

SCALE = 2.0


@wp.func
def _double_it(x: float):
    return 2.0 * x


@wp.func
def _triple_it(x: float):
    return 3.0 * x


TARGET = _double_it


@wp.kernel(module="unique")
def _uses_globals(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = TARGET(a[i]) * wp.static(SCALE)


def test_hash_follows_function_targets_and_static_values() -> None:
    global TARGET, SCALE
    m = _uses_globals.module
    first = m.hash_module()
    try:
        TARGET = _triple_it
        assert m.hash_module() != first
        TARGET = _double_it
        assert m.hash_module() == first
        SCALE = 3.0
        assert m.hash_module() != first
    finally:
        TARGET, SCALE = _double_it, 2.0
    assert m.hash_module() == first


def _load(tmp_path: Path, name: str, value: float) -> object:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(f"""
        import treadle as wp
        C = {value}

        @wp.kernel
        def scale(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = a[i] * C
    """))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_same_source_same_hash_in_another_module(tmp_path: Path) -> None:
    a = _load(tmp_path, "hash_mod_a", 1.5)
    b = _load(tmp_path, "hash_mod_b", 2.5)
    c = _load(tmp_path, "hash_mod_c", 1.5)
    ha, hb, hc = (wp.get_module(m).hash_module() for m in (a, b, c))
    assert ha != hb
    assert ha == hc


def test_kernels_from_a_deleted_file_still_build(tmp_path: Path) -> None:
    mod = _load(tmp_path, "hash_mod_deleted", 4.0)
    (tmp_path / "hash_mod_deleted.py").unlink()  # kernels are lowered lazily: the source was kept at definition
    a = wp.ones(3, dtype=float)
    wp.launch(mod.scale, dim=3, inputs=[a])
    assert list(a.numpy()) == [4.0, 4.0, 4.0]


@wp.func
def _apply(x: float, g: wp.Function = _double_it):
    return g(x)


@wp.kernel(module="unique")
def _uses_default(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = _apply(a[i])


def test_function_defaults_are_visible_and_change_the_hash() -> None:
    assert _apply.defaults["g"] is _double_it
    before = _uses_default.module.hash_module()
    saved = dict(_apply.defaults)
    try:
        _apply.defaults["g"] = _triple_it
        assert _uses_default.module.hash_module() != before
    finally:
        _apply.defaults = saved
    assert _uses_default.module.hash_module() == before
