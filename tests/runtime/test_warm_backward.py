"""Warm start of differentiated programs: backward passes found in the warm-start index, without lowering.

A second process over the same cache records launches on a tape and runs the backward passes without parsing,
lowering or emitting any kernel, gets bit-identical gradients, still issues the dropped-gradient warnings the backward
pass was built with, and recovers from a damaged library.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import treadle as wp

SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import treadle as wp
    from treadle._src.runtime.native import get_native_compiler

    @wp.kernel
    def energy(x: wp.array(dtype=wp.vec3), s: float, out: wp.array(dtype=float)):
        i = wp.tid()
        v = x[i]
        e = wp.sin(v[0]) * s + wp.dot(v, v)
        for k in range(3):
            e = e + wp.cos(v[k] * float(k + 1))
        out[i] = e

    @wp.kernel
    def lossy(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, p[i], 10.0)  # no adjoint: a dropped-gradient warning
        out[i] = q.u + p[i][1] * 3.0

    rng = np.random.default_rng(5)
    x = wp.array(rng.random((64, 3)), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(64, dtype=float, requires_grad=True)
    pts = wp.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), dtype=wp.vec3)
    mesh = wp.Mesh(points=pts, indices=wp.array([0, 1, 2], dtype=int))
    p = wp.array([[0.2, 0.3, 1.0]], dtype=wp.vec3, requires_grad=True)
    q = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(energy, 64, inputs=[x, 1.5, out])
        wp.launch(lossy, 1, inputs=[mesh.id, p, q])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={out: wp.ones(64, dtype=float), q: wp.ones(1, dtype=float)})
    insts = [energy.get_instance(None), lossy.get_instance(None)]
    print(json.dumps({
        "compiles": get_native_compiler().compile_count,
        "lowered": [i._ir is not None for i in insts],
        "grad": x.grad.numpy().tobytes().hex(), "pgrad": p.grad.numpy().tolist(),
        "warnings": sorted(str(w.message) for w in caught if issubclass(w.category, wp.DroppedGradientWarning)),
    }))
""")


@pytest.fixture
def run_script(tmp_path: Path):
    script = tmp_path / "warm_backward_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TREADLE_CACHE_PATH=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(wp.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])

    def run() -> dict:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    run.cache = tmp_path / "cache"  # type: ignore[attr-defined]
    return run


def test_second_process_differentiates_without_lowering(run_script):
    first = run_script()
    assert first["compiles"] >= 1 and first["lowered"] == [True, True]
    assert len(first["warnings"]) == 1 and "mesh_query_point_no_sign" in first["warnings"][0]
    second = run_script()
    assert second["compiles"] == 0
    assert second["lowered"] == [False, False]  # neither pass of either kernel parsed, lowered or emitted
    assert second["grad"] == first["grad"] and second["pgrad"] == first["pgrad"]  # bit-identical gradients
    assert second["warnings"] == first["warnings"]  # recorded with the backward pass, issued again


def _backward_entries(cache: Path) -> list[dict]:
    entries = [json.loads(p.read_text()) for p in (cache / "warm").glob("w_*.json")]
    return [e for e in entries if e.get("name", "").endswith("(backward)")]


def test_damaged_backward_library_is_rebuilt(run_script):
    first = run_script()
    entries = _backward_entries(run_script.cache)
    assert len(entries) == 2  # one per kernel, recorded when each backward pass was bound
    for e in entries:  # damaged in place: same size, time and inode, so the warm-start entry still matches it
        lib = run_script.cache / "lib" / e["lib"]
        st = lib.stat()
        lib.write_bytes(b"\0" * st.st_size)
        os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = run_script()
    assert again["compiles"] >= 1  # found unloadable, dropped and built again
    assert again["grad"] == first["grad"] and again["pgrad"] == first["pgrad"]
    assert again["warnings"] == first["warnings"]  # once, though recorded and then emitted again
    assert run_script()["compiles"] == 0
