"""``python -m treadle.warp_compat`` and ``treadle.install_warp_alias()``, exercised on real scripts in subprocesses."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import treadle as wp

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env.pop("TREADLE_WARP_ALIAS", None)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env or _env(), capture_output=True, text=True)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_script_sees_treadle_as_warp(tmp_path: Path) -> None:
    _write(tmp_path / "prog" / "main.py", """
        import sys
        import warp
        import warp.types
        import warp.config
        import warp.utils
        from warp.types import vector
        import treadle
        assert warp.launch is treadle.launch and warp.array is treadle.array and warp.__file__ == treadle.__file__
        assert warp.__version__ == "1.19.0" and treadle.__version__ == treadle.config.version != warp.__version__
        warp.set_by_program = 7  # attributes set on warp are Treadle's
        assert treadle.set_by_program == 7
        del warp.set_by_program
        assert not hasattr(treadle, "set_by_program")
        assert warp.types is treadle.types and vector is treadle.types.vector
        assert warp.config is treadle.config and warp.utils is treadle.utils
        assert sys.modules["warp.types"] is treadle.types
        assert warp.types.__spec__.name == "treadle.types"
        print("argv", sys.argv)
        print("name", __name__)
        print("file", __file__)
        print("path0", sys.path[0])
        print("main", sys.modules["__main__"].__dict__ is globals())
    """)
    r = _run(["-m", "treadle.warp_compat", "prog/main.py", "a", "--b"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert out["argv"] == "['prog/main.py', 'a', '--b']"
    assert out["name"] == "__main__"
    assert out["file"] == str(tmp_path / "prog" / "main.py")
    assert out["path0"] == str((tmp_path / "prog").resolve())
    assert out["main"] == "True"


def test_exit_codes_and_traceback_match_plain_python(tmp_path: Path) -> None:
    script = _write(tmp_path / "fail.py", """
        import sys

        def inner(x):
            return 1 / x

        def outer():
            try:
                inner(0)
            except ZeroDivisionError as e:
                raise ValueError("bad value") from e

        if len(sys.argv) > 1:
            sys.exit(int(sys.argv[1]))
        outer()
    """)
    plain = _run([str(script)], tmp_path)
    compat = _run(["-m", "treadle.warp_compat", str(script)], tmp_path)
    assert plain.returncode == compat.returncode == 1
    assert compat.stderr == plain.stderr  # same frames, same chained exception, no runner frames
    assert "treadle" not in compat.stderr
    assert _run(["-m", "treadle.warp_compat", str(script), "7"], tmp_path).returncode == 7
    assert _run(["-m", "treadle.warp_compat", str(script), "0"], tmp_path).returncode == 0


def test_module_mode(tmp_path: Path) -> None:
    _write(tmp_path / "pkg" / "__init__.py", "")
    _write(tmp_path / "pkg" / "tool.py", """
        import sys
        import warp as wp
        print(__name__, __spec__.name, sys.argv[1:], sys.argv[0].endswith("tool.py"), wp.__name__)
        raise SystemExit(3)
    """)
    r = _run(["-m", "treadle.warp_compat", "-m", "pkg.tool", "x", "-y"], tmp_path)
    assert r.returncode == 3, r.stderr
    assert r.stdout.split() == ["__main__", "pkg.tool", "['x',", "'-y']", "True", "warp"]
    missing = _run(["-m", "treadle.warp_compat", "-m", "pkg.nothere"], tmp_path)
    assert missing.returncode == 1
    assert "No module named pkg.nothere" in missing.stderr and "Traceback" not in missing.stderr


def test_code_mode_and_usage(tmp_path: Path) -> None:
    r = _run(["-m", "treadle.warp_compat", "-c", "import sys, warp; print(warp.__name__, sys.argv)", "1"], tmp_path)
    assert r.stdout.strip() == "warp ['-c', '1']"
    usage = _run(["-m", "treadle.warp_compat"], tmp_path)
    assert usage.returncode == 2 and "usage:" in usage.stderr
    nofile = _run(["-m", "treadle.warp_compat", "nothere.py"], tmp_path)
    assert nofile.returncode == 2 and "can't open file" in nofile.stderr
    listed = _run(["-m", "treadle.warp_compat", "--list"], tmp_path)
    assert listed.returncode == 0
    assert {"warp", "warp.types", "warp.config", "warp.utils"} <= set(listed.stdout.split())
    assert "warp.warp_compat" not in listed.stdout


def test_missing_submodules_fail_clearly(tmp_path: Path) -> None:
    _write(tmp_path / "probe.py", """
        import warp
        for name in ("warp.tests", "warp.no_such_module.linalg", "warp._src.codegen", "warp.warp_compat"):
            try:
                __import__(name)
            except ModuleNotFoundError as e:
                print(name, "|", e.name, "|", "Treadle does not provide" in str(e), "|", repr(e.name) in str(e))
            else:
                print(name, "imported")
        try:
            from warp.tests import unittest_utils
        except ModuleNotFoundError as e:
            print("from", e.name)
    """)
    r = _run(["-m", "treadle.warp_compat", "probe.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for line, name in zip(lines, ("warp.tests", "warp.no_such_module", "warp._src.codegen", "warp.warp_compat")):
        assert line.split(" | ")[1:] == [name, "True", "True"], line
    assert lines[-1] == "from warp.tests"


def test_uncaught_missing_submodule_points_at_user_line(tmp_path: Path) -> None:
    _write(tmp_path / "user.py", "import warp\n\nimport warp.no_such_module\n")
    r = _run(["-m", "treadle.warp_compat", "user.py"], tmp_path)
    assert r.returncode == 1
    assert 'user.py", line 3, in <module>' in r.stderr
    assert r.stderr.rstrip().splitlines()[-1].startswith("ModuleNotFoundError: No module named 'warp.no_such_module'")


def test_subprocesses_get_the_alias(tmp_path: Path) -> None:
    _write(tmp_path / "parent.py", """
        import os, subprocess, sys
        code = ("import warp, treadle, warp.types; print(warp.launch is treadle.launch and warp.__version__ == '1.19.0', "
                "warp.types is treadle.types, treadle.__file__)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
        print(r.stdout.strip() or r.stderr)
        r = subprocess.run([sys.executable, "-c", "import treadle; print('plain', treadle.__name__)"],
                           capture_output=True, text=True)
        print(r.stdout.strip() or r.stderr)
    """)
    r = _run(["-m", "treadle.warp_compat", "parent.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first.split()[:2] == ["True", "True"]
    assert first.split()[2] == str(ROOT / "treadle" / "__init__.py")  # the parent's Treadle, not another one
    assert second == "plain treadle"


def test_spawned_multiprocessing_workers_get_the_alias(tmp_path: Path) -> None:
    _write(tmp_path / "mp.py", """
        import multiprocessing as mp

        def work(x):
            import warp, treadle
            return (warp.array is treadle.array, x * 2)

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(1) as pool:
                print(pool.map(work, [1, 2]))
    """)
    r = _run(["-m", "treadle.warp_compat", "mp.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[(True, 2), (True, 4)]"


def test_install_warp_alias_from_python(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import os, sys, treadle
        treadle.install_warp_alias(subprocesses=False)
        treadle.install_warp_alias(subprocesses=False)  # idempotent
        import warp, warp.autograd
        from treadle import warp_compat
        print(warp.launch is treadle.launch, warp.autograd is treadle.autograd, warp_compat.is_warp_alias_installed(),
              "TREADLE_WARP_ALIAS" in os.environ)
        warp_compat.uninstall_warp_alias()
        print(warp_compat.is_warp_alias_installed(), "warp" in sys.modules)
    """)
    r = _run(["-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True", "False", "False", "False"]


@pytest.mark.skipif(importlib.util.find_spec("warp") is None, reason="warp-lang not installed")
def test_install_after_real_warp_import_is_refused(tmp_path: Path) -> None:
    code = "import warp, treadle\ntry:\n    treadle.install_warp_alias()\nexcept RuntimeError as e:\n    print(e)\n"
    r = _run(["-c", code], tmp_path)
    assert "already imported" in r.stdout and "before" in r.stdout, r.stdout + r.stderr


def test_vendored_library_alias(tmp_path: Path) -> None:
    have = importlib.util.find_spec("appdirs") is not None
    code = textwrap.dedent("""
        import treadle
        treadle.install_warp_alias(subprocesses=False)
        try:
            from warp._src.thirdparty.appdirs import user_cache_dir
            import appdirs
            print("ok", user_cache_dir is appdirs.user_cache_dir)
        except ModuleNotFoundError as e:
            print("missing", e.name, "pip install appdirs" in str(e))
        try:
            import warp._src.codegen
        except ModuleNotFoundError as e:
            print("private", e.name)
    """)
    r = _run(["-c", code], tmp_path)
    lines = r.stdout.splitlines()
    assert lines[0] == ("ok True" if have else "missing warp._src.thirdparty.appdirs True"), r.stdout + r.stderr
    assert lines[1] == "private warp._src.codegen"


def test_func_accepts_the_inline_hint() -> None:
    # Newton picks wp.func(inline=False) when warp.__version__ >= 1.18, which the alias reports
    @wp.func(inline=False)
    def twice(x: float) -> float:
        return 2.0 * x

    @wp.kernel
    def use(a: wp.array(dtype=float)):
        a[0] = twice(a[0])

    a = wp.full(1, 3.0, dtype=float)
    wp.launch(use, 1, inputs=[a])
    assert a.numpy()[0] == 6.0 and twice.inline is False
    with pytest.raises(TypeError, match="inline"):
        wp.func(inline="no")(lambda x: x)


def test_example_program_imports_its_sibling_examples(tmp_path: Path) -> None:
    examples = tmp_path / "tree" / "warp" / "examples" / "fem"
    _write(examples / "example_helper.py", """
        import warp.sparse

        SCALE = 3.0

        def scaled(x):
            return SCALE * x, warp.sparse.__name__
    """)
    _write(examples / "example_main.py", """
        from warp.examples.fem.example_helper import scaled
        import warp.examples.fem.utils as utils

        print(scaled(2.0), utils.__name__)
        try:
            import warp.examples.fem.example_absent
        except ModuleNotFoundError as e:
            print("missing", e.name)
    """)
    r = _run(["-m", "treadle.warp_compat", str(examples / "example_main.py")], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # the sibling runs against Treadle; Treadle's own modules still win over files of the tree
    assert lines[0] == "(6.0, 'treadle.sparse') treadle.examples.fem.utils", lines
    assert lines[1] == "missing warp.examples.fem.example_absent"
    # outside a warp/examples tree, nothing is looked up next to the program
    _write(tmp_path / "plain" / "prog.py", """
        try:
            import warp.examples.fem.example_helper
        except ModuleNotFoundError as e:
            print("missing", e.name)
    """)
    r = _run(["-m", "treadle.warp_compat", str(tmp_path / "plain" / "prog.py")], tmp_path)
    assert r.stdout.strip() == "missing warp.examples.fem.example_helper", r.stderr
