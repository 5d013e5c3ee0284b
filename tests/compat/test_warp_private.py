"""The reference's private names that Warp-based libraries reach: ``warp._src.types``, ``.utils``, ``.context``.

The native entry points (``warp._src.context.runtime.core.wp_builtin_*``) are compared with Treadle's own
Python-scope builtins on random values, in both precisions, and the array reductions with NumPy.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.warp_compat.native_exports import BUILTINS, native_core

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env.pop("TREADLE_WARP_ALIAS", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def test_private_modules_resolve_to_treadle(tmp_path: Path) -> None:
    r = _run("""
        import treadle
        treadle.install_warp_alias(subprocesses=False)
        import warp as wp
        from warp._src.types import Any, Int, Vector, type_length, type_scalar_type
        from warp._src import types as warp_types
        import typing
        assert warp_types is treadle._src.types and type_length(wp.mat33) == 3
        assert type_scalar_type(wp.vec3d) is wp.float64
        assert typing.get_args(Vector[Any, Int]) == (typing.Any, wp.Int)
        # attribute paths without an import, as warp-lang's own `import warp` makes them available
        assert wp._src.utils.array_scan is treadle.utils.array_scan
        core = wp._src.context.runtime.core
        from warp._src.context import runtime
        assert runtime.core is core and sys_ok()
    """.replace("sys_ok()", "True"), tmp_path)
    assert r.returncode == 0, r.stderr


def test_private_attributes_go_with_the_alias(tmp_path: Path) -> None:
    r = _run("""
        import treadle, treadle._src
        try:
            treadle._src.context
        except AttributeError:
            print("before: none")
        treadle.install_warp_alias(subprocesses=False)
        print("during:", type(treadle._src.context.runtime).__name__)
        from treadle.warp_compat import uninstall_warp_alias
        uninstall_warp_alias()
        try:
            treadle._src.context
        except AttributeError:
            print("after: none")
    """, tmp_path)
    assert r.stdout.splitlines() == ["before: none", "during: Runtime", "after: none"], r.stdout + r.stderr


_VALUE_TYPES = {
    "f": {"vec3": wp.vec3f, "mat33": wp.mat33f, "mat44": wp.mat44f, "quat": wp.quatf, "transform": wp.transformf},
    "d": {"vec3": wp.vec3d, "mat33": wp.mat33d, "mat44": wp.mat44d, "quat": wp.quatd, "transform": wp.transformd},
}


def _random_value(kind: str, p: str, rng: np.random.Generator) -> object:
    t = _VALUE_TYPES[p][kind]
    if kind == "quat":
        q = rng.normal(size=4)
        return t(*(q / np.linalg.norm(q)))
    if kind == "transform":
        q = rng.normal(size=4)
        return t(_VALUE_TYPES[p]["vec3"](*rng.normal(size=3)), _VALUE_TYPES[p]["quat"](*(q / np.linalg.norm(q))))
    return t(*rng.normal(size=t._length_))


@pytest.mark.parametrize("symbol", sorted(BUILTINS))
def test_native_builtins_match_treadle_builtins(symbol: str) -> None:
    expr, args, ret, p = BUILTINS[symbol]
    name = expr.split("(")[0]
    rng = np.random.default_rng(len(symbol))
    fn = getattr(native_core(), symbol)
    for _ in range(5):
        scalar = wp.float64 if p == "d" else wp.float32
        values = [scalar(rng.normal()) if kind == "scalar" else _random_value(kind, p, rng) for kind in args]
        out = (_VALUE_TYPES[p][ret])()
        fn(*[v.value if isinstance(v, scalar) else v for v in values], ctypes.byref(out))
        expected = getattr(wp, name)(*values)
        tol = 1e-5 if p == "f" else 1e-12
        np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=tol, atol=tol)
        out2 = (_VALUE_TYPES[p][ret])()
        fn(*[v.value if isinstance(v, scalar) else v for v in values], out2)  # a value object is passed by address too, as ctypes passes arrays
        np.testing.assert_array_equal(np.asarray(out2), np.asarray(out))


def test_native_builtin_from_buffer_matrix() -> None:
    # Newton's way: a row-major float32 NumPy buffer viewed as a mat44
    m = np.eye(4, dtype=np.float32)
    m[:3, :3] = np.asarray(wp.quat_to_matrix(wp.quat_from_axis_angle(wp.vec3(0.0, 1.0, 0.0), 0.7))).reshape(3, 3)
    q = wp.quat()
    native_core().wp_builtin_quat_from_matrix_mat44f(wp.mat44.from_buffer(m), ctypes.byref(q))
    np.testing.assert_allclose(np.asarray(q), np.asarray(wp.quat_from_axis_angle(wp.vec3(0.0, 1.0, 0.0), 0.7)),
                               atol=1e-6)


def test_native_builtins_refuse_bad_arguments() -> None:
    core = native_core()
    out = wp.vec3()
    with pytest.raises(ctypes.ArgumentError, match="Treadle value"):
        core.wp_builtin_transform_point_transformf_vec3f([0.0] * 7, wp.vec3(), ctypes.byref(out))
    with pytest.raises(TypeError):
        core.wp_builtin_transform_point_transformf_vec3f(wp.transform(), ctypes.byref(out))  # one argument short
    with pytest.raises(AttributeError, match="wp_builtin_no_such"):
        core.wp_builtin_no_such_builtin  # noqa: B018


@pytest.mark.parametrize("dtype", [wp.float32, wp.vec3, wp.float64, wp.vec3d])
def test_native_array_reductions_match_numpy(dtype: object) -> None:
    rng = np.random.default_rng(3)
    n = 1001
    double = wp.types.type_scalar_type(dtype) is wp.float64
    np_t = np.float64 if double else np.float32
    length = wp.types.type_size(dtype)
    a = wp.array(rng.normal(size=(n, length)).astype(np_t).reshape((n,) if length == 1 else (n, length)),
                 dtype=dtype)
    b = wp.array(rng.normal(size=(n, length)).astype(np_t).reshape((n,) if length == 1 else (n, length)),
                 dtype=dtype)
    core = native_core()
    inner = core.wp_array_inner_double_host if double else core.wp_array_inner_float_host
    total = core.wp_array_sum_double_host if double else core.wp_array_sum_float_host
    out = wp.zeros(length, dtype=wp.float64 if double else wp.float32)
    stride = wp.types.type_size_in_bytes(dtype)
    inner(a.ptr, b.ptr, out.ptr, n, stride, stride, length)
    an, bn = a.numpy().reshape(n, length).astype(np.float64), b.numpy().reshape(n, length).astype(np.float64)
    np.testing.assert_allclose(out.numpy()[0], np.sum(an * bn), rtol=1e-5)
    total(a.ptr, out.ptr, n, stride, length)
    np.testing.assert_allclose(out.numpy(), an.sum(axis=0), rtol=1e-5, atol=1e-5)
