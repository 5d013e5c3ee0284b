"""Warm start: kernels found in the warm-start index load without lowering, and any dependency change misses."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.cpu import warm
from treadle._src.lang.kernel import modules
from treadle._src.runtime import warm_index

HELPERS = """
import treadle as wp

OFFSET = {offset}

@wp.func
def helper(x: float) -> float:
    return x * {factor} + OFFSET

@wp.struct
class Params:
    scale: float
{extra_field}
"""

MAIN = """
import os

import treadle as wp
import {helpers} as hp

SCALE = {scale}

@wp.kernel
def apply(a: wp.array(dtype=float), p: hp.Params):
    i = wp.tid()
    a[i] = hp.helper(a[i]) * SCALE * p.scale + float(i)

def make_closure(c):
    @wp.kernel
    def shift(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] + c
    return shift

shift = make_closure(float(os.environ.get('TREADLE_WARM_TEST_CLOSURE', '0.5')))
"""


class Project:
    """A two-file user project in a temporary directory, imported fresh on demand."""

    def __init__(self, root: Path, tag: str) -> None:
        self.root = root
        self.helpers = f"warm_helpers_{tag}"
        self.main = f"warm_main_{tag}"
        self.params = {"offset": 1.0, "factor": 2.0, "extra_field": "", "scale": 3.0}
        self.closure = 0.5
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))

    def write(self, **changes: object) -> None:
        self.params.update(changes)
        for name, text in ((self.helpers, HELPERS), (self.main, MAIN)):
            path = self.root / f"{name}.py"
            old = path.read_text() if path.exists() else None
            new = text.format(helpers=self.helpers, **self.params)
            if new != old:
                path.write_text(new)
                t = time.time() + len(new) % 7 + (0 if old is None else 10)
                os.utime(path, (t, t))  # a new modification time even within the file system's granularity

    def fresh(self):  # noqa: ANN201 - a module object
        for name in (self.main, self.helpers):
            sys.modules.pop(name, None)
            modules().modules.pop(name, None)
        importlib.invalidate_caches()
        return importlib.import_module(self.main)

    def expected(self) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        x = np.arange(8, dtype=np.float64)
        a = (x * float(p["factor"]) + float(p["offset"])) * float(p["scale"]) * 2.0 + x
        return a, x + self.closure

    def run(self) -> tuple[bool, bool]:
        """Import the project afresh, launch both kernels, check the results; returns whether each was warm."""
        os.environ["TREADLE_WARM_TEST_CLOSURE"] = repr(self.closure)
        try:
            mod = self.fresh()
        finally:
            del os.environ["TREADLE_WARM_TEST_CLOSURE"]
        hp = sys.modules[self.helpers]
        a = wp.array(np.arange(8, dtype=np.float32), dtype=float)
        p = hp.Params()
        p.scale = 2.0
        wp.launch(mod.apply, 8, inputs=[a, p])
        b = wp.array(np.arange(8, dtype=np.float32), dtype=float)
        wp.launch(mod.shift, 8, inputs=[b])
        want_a, want_b = self.expected()
        np.testing.assert_allclose(a.numpy(), want_a, rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), want_b, rtol=1e-6)
        return (mod.apply.get_instance(None).warm is not None, mod.shift.get_instance(None).warm is not None)


@pytest.fixture
def project(tmp_path: Path):
    old = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(tmp_path / "cache")
    proj = Project(tmp_path, tmp_path.name.replace("-", "_").replace(".", "_")[-24:])
    proj.write()
    try:
        yield proj
    finally:
        wp.config.kernel_cache_dir = old
        for name in (proj.main, proj.helpers):
            sys.modules.pop(name, None)
            modules().modules.pop(name, None)


def test_second_load_is_warm_and_skips_lowering(project):
    assert project.run() == (False, False)  # recorded
    mod = project.fresh()
    wp.load_module(mod)
    inst = mod.apply.get_instance(None)
    assert inst.warm is not None
    assert inst._ir is None and mod.apply._src is None  # neither parsed nor lowered
    assert project.run() == (True, True)


@pytest.mark.parametrize("change, warm_after", [
    ({"scale": 5.0}, (False, False)),   # a module-level constant of the kernels' file (the file changed)
    ({"offset": -2.0}, (False, True)),  # a constant of another file, read by a @func
    ({"factor": 7.0}, (False, True)),   # the body of a @func in another file
    ({"extra_field": "    bias: float"}, (False, True)),  # a @struct layout
    ({"closure": 4.25}, (True, False)),  # a closure cell (same files)
])
def test_any_dependency_change_misses(project, change, warm_after):
    project.run()
    assert project.run() == (True, True)
    if "closure" in change:
        project.closure = change["closure"]
    else:
        project.write(**change)
    assert project.run() == warm_after  # results are checked against the new values inside run()
    assert project.run() == (True, True)


def test_options_and_config_change_the_fingerprint(project):
    project.run()
    mod = project.fresh()
    inst = mod.apply.get_instance(None)
    fp = warm.warm_key(inst)
    assert fp is not None
    with wp.config.override(max_unroll=3):
        assert warm.warm_key(inst) != fp
    with wp.config.override(line_directives=False):
        assert warm.warm_key(inst) != fp
    mod.apply.module.options["max_unroll"] = 2
    try:
        assert warm.warm_key(inst) != fp
    finally:
        del mod.apply.module.options["max_unroll"]
    assert warm.warm_key(inst) == fp
    with wp.config.override(cpu_compiler_flags=["-DTREADLE_WARM_TEST=1"]):
        # compile options are taken when an instance is made
        assert warm.warm_key(project.fresh().apply.get_instance(None)) != fp
    with wp.config.override(mode="debug"):
        assert warm.warm_key(project.fresh().apply.get_instance(None)) is None  # checked mode: never


def test_unknown_globals_take_the_normal_path(tmp_path):
    path = tmp_path / "warm_opaque_mod.py"
    path.write_text(textwrap.dedent("""
        import treadle as wp

        class Thing:
            pass

        THING = Thing()
        N = 3

        @wp.kernel
        def k(a: wp.array(dtype=int)):
            i = wp.tid()
            if THING is not None:
                a[i] = N
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("warm_opaque_mod")
        assert warm.warm_key(mod.k.get_instance(None)) is None
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("warm_opaque_mod", None)
        modules().modules.pop("warm_opaque_mod", None)


def test_stale_library_is_not_loaded(project):
    project.run()
    mod = project.fresh()
    fp = warm.warm_key(mod.apply.get_instance(None))
    entry = warm_index.lookup(fp)
    assert entry is not None
    lib = entry["lib_path"]
    data = lib.read_bytes()
    tmp = lib.with_name(lib.name + ".new")  # replaced, not rewritten in place: this process has the library mapped
    tmp.write_bytes(data + b"\0")
    os.replace(tmp, lib)  # any change of the library's size or time: the entry is ignored
    assert warm_index.lookup(fp) is None
    (lib.parent.parent / "ref" / f"k_{entry['key']}.ref").unlink()
    assert project.run()[0] is False  # rebuilt through the normal path


SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import treadle as wp
    from treadle._src.runtime.native import get_native_compiler

    K = {k}

    @wp.kernel
    def scale(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * K + float(i)

    a = wp.ones(100, dtype=float)
    wp.launch(scale, dim=100, inputs=[a])
    inst = scale.get_instance(None)
    print(json.dumps({{"compiles": get_native_compiler().compile_count, "warm": inst.warm is not None,
                      "lowered": inst._ir is not None, "frontend": "treadle._src.compiler.frontend" in sys.modules,
                      "ok": bool(np.allclose(a.numpy(), K + np.arange(100)))}}))
""")


def test_fresh_process_warm_start(tmp_path):
    import json

    cache = tmp_path / "cache"
    script = tmp_path / "warm_script.py"
    env = dict(os.environ, TREADLE_CACHE_PATH=str(cache))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(wp.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])

    def run(k: float) -> dict:
        script.write_text(SCRIPT.format(k=k))
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = run(3.0)
    assert first["ok"] and first["compiles"] == 1 and not first["warm"]
    second = run(3.0)
    assert second == {"compiles": 0, "warm": True, "lowered": False, "frontend": second["frontend"], "ok": True}
    third = run(4.0)  # an edited constant: a miss, a new binary, right results
    assert third["ok"] and not third["warm"] and third["compiles"] == 1


def test_untrusted_or_tampered_entries_are_ignored(project):
    import json

    project.run()
    mod = project.fresh()
    fp = warm.warm_key(mod.apply.get_instance(None))
    assert warm_index.lookup(fp) is not None
    path = Path(wp.config.kernel_cache_dir) / "warm" / f"w_{fp[:40]}.json"
    if hasattr(os, "getuid"):
        path.chmod(0o666)  # writable by others: never trusted
        assert warm_index.lookup(fp) is None
        path.chmod(0o600)
        assert warm_index.lookup(fp) is not None
    entry = json.loads(path.read_text())
    entry["lib"] = "../../elsewhere/b_0123456789abcdef.so"  # a name outside the cache's library directory
    path.write_text(json.dumps(entry))
    assert warm_index.lookup(fp) is None
    assert project.run()[0] is False  # the normal path, which records a good entry again
    assert project.run() == (True, True)
