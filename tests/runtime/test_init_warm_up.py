"""``wp.init()`` readies the CPU device: toolchain facts from the environment memo, runtime loaded when built.

Each case runs a fresh process (the warm-up happens once per process, at the first runtime creation). The first
process of an empty cache must build nothing at init; once a launch has built the runtime library and the launch
extension, the next process finds both loaded right after ``wp.init()`` and launches without compiling anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import treadle as wp

SCRIPT = """
import json, os, sys
import numpy as np
import treadle as wp
from treadle._src.runtime.native import get_native_compiler
from treadle._src.runtime import fastlaunch, threadpool

wp.init()
at_init = {"runtime": threadpool._HOLDER.runtime is not None, "extension": fastlaunch.module() is not None,
           "compiles": get_native_compiler().compile_count,
           "rt_dir": sorted(os.listdir(os.environ["RT_DIR"])) if os.path.isdir(os.environ["RT_DIR"]) else []}

@wp.kernel
def twice(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0 * a[i] + float(i)

a = wp.ones(64, dtype=float)
wp.launch(twice, dim=64, inputs=[a])
ok = bool(np.array_equal(a.numpy(), 2.0 + np.arange(64, dtype=np.float32)))
print(json.dumps({"at_init": at_init, "ok": ok, "native": fastlaunch.module() is not None,
                  "compiles": get_native_compiler().compile_count}))
"""


def _runner(tmp_path: Path):
    script = tmp_path / "init_script.py"
    script.write_text(SCRIPT)
    xdg = tmp_path / "xdg"
    env = dict(os.environ, TREADLE_CACHE_PATH=str(tmp_path / "cache"), XDG_CACHE_HOME=str(xdg),
               RT_DIR=str(xdg / "treadle" / wp.config.version / "rt"))
    env.pop("TREADLE_NATIVE_LAUNCH", None)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(wp.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])

    def run(**extra: str) -> dict:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             env=dict(env, **extra), timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    return run


def test_init_loads_a_built_runtime_and_builds_nothing(tmp_path: Path) -> None:
    run = _runner(tmp_path)

    first = run()  # empty caches: init finds nothing to load and builds nothing; the launch builds what it needs
    assert first["at_init"] == {"runtime": False, "extension": False, "compiles": 0, "rt_dir": []}
    assert first["ok"] and first["compiles"] >= 1

    second = run()  # everything built: init loads the runtime and the extension, the launch compiles nothing
    assert second["at_init"]["runtime"] and second["at_init"]["extension"]
    assert second["at_init"]["compiles"] == 0
    assert second["ok"] and second["native"] and second["compiles"] == 0

    off = run(TREADLE_NATIVE_LAUNCH="0")  # the launch extension turned off: init leaves the runtime to the launch
    assert off["at_init"]["runtime"] is False and off["at_init"]["extension"] is False
    assert off["ok"] and not off["native"] and off["compiles"] == 0
