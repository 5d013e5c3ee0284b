"""Every differentiable builtin in the registry: adjoint vs central finite differences of the compiled forward code.

For each builtin, sample argument signatures (float64 scalars, vectors and matrices) are tried against its type
rule; for every signature it accepts, a kernel computing ``dot(weights, result)`` is generated, differentiated with
the tape and compared with finite differences of the same kernel, all in float64.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.builtins.registry import NoMatch
from treadle._src.compiler.emit_adjoint import differentiable

SAMPLES = {
    "s": wp.float64,
    "v2": wp.vec2d,
    "v3": wp.vec3d,
    "v4": wp.vec4d,
    "m22": wp.mat22d,
    "m33": wp.mat33d,
    "m44": wp.mat44d,
}
SIGNATURES = [
    ("s",), ("s", "s"), ("s", "s", "s"), ("v3",), ("v2",), ("v4",), ("v3", "v3"), ("v3", "s"), ("s", "v3"),
    ("v3", "v3", "s"), ("m33",), ("m22",), ("m44",), ("m33", "m33"), ("m33", "v3"), ("v3", "m33"), ("m33", "s"),
    ("s", "m33"), ("v2", "v2"), ("v3", "v3", "v3"),
]
SKIP = {"print", "printf", "select", "where"}


def _cases() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for name, b in sorted(REGISTRY.builtins.items()):
        if name.startswith("_") or b.kernel_only or not b.differentiable or name in SKIP or b.static_args or b.ref_args:
            continue
        for sig in SIGNATURES:
            try:
                ov = b.resolve([SAMPLES[k] for k in sig])
            except NoMatch:
                continue
            if differentiable(ov.ret):
                out.append((name, sig))
    return out


CASES = _cases()


def _flat_len(t) -> int:
    return int(getattr(t, "_length_", 1))


def _make_module(tmp_path_factory):
    lines = ["import treadle as wp", ""]
    for idx, (name, sig) in enumerate(CASES):
        params = ", ".join(f"a{j}: wp.array(dtype=wp.{SAMPLES[k].__name__})" for j, k in enumerate(sig))
        ret = REGISTRY.builtins[name].resolve([SAMPLES[k] for k in sig]).ret
        call = f"wp.{name}({', '.join(f'a{j}[0]' for j in range(len(sig)))})"
        if _flat_len(ret) == 1 and not hasattr(ret, "_shape_"):
            expr = "r * w[0]"
        elif len(getattr(ret, "_shape_", ())) == 2:
            rows, cols = ret._shape_
            expr = " + ".join(f"r[{i}, {j}] * w[{i * cols + j}]" for i in range(rows) for j in range(cols))
        else:
            expr = " + ".join(f"r[{i}] * w[{i}]" for i in range(ret._length_))
        lines += [
            "@wp.kernel(module='adjoint_cases')",
            f"def k{idx}({params}, w: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):",
            f"    r = {call}",
            f"    out[0] = {expr}",
            "",
        ]
    path = tmp_path_factory.mktemp("adjcases") / "adjoint_cases_gen.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("adjoint_cases_gen", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["adjoint_cases_gen"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return _make_module(tmp_path_factory)


def _sample(kind: str, rng) -> np.ndarray:
    t = SAMPLES[kind]
    shape = getattr(t, "_shape_", ())
    x = rng.uniform(0.2, 0.8, size=shape)
    if len(shape) == 2:
        x = x + 2.0 * np.eye(shape[0])
    return x


def test_registry_has_differentiable_cases():
    names = {n for n, _ in CASES}
    assert {"sin", "pow", "atan2", "dot", "cross", "normalize", "determinant", "inverse", "mul"} <= names
    assert len(CASES) > 60


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{n}{sig}" for n, sig in CASES])
def test_adjoint_matches_finite_differences(generated, case):
    name, sig = CASES[case]
    k = getattr(generated, f"k{case}")
    rng = np.random.default_rng(case)
    xs = [_sample(s, rng) for s in sig]
    ret = REGISTRY.builtins[name].resolve([SAMPLES[s] for s in sig]).ret
    w = rng.standard_normal(_flat_len(ret))

    def run(vals, grad=False):
        arrs = [wp.array([v], dtype=SAMPLES[s], requires_grad=grad) for v, s in zip(vals, sig)]
        out = wp.zeros(1, dtype=wp.float64, requires_grad=grad)
        warr = wp.array(w, dtype=wp.float64)
        if not grad:
            wp.launch(k, dim=1, inputs=[*arrs, warr, out])
            return out.numpy()[0]
        with wp.Tape() as tape:
            wp.launch(k, dim=1, inputs=[*arrs, warr, out])
        tape.backward(out)
        return [a.grad.numpy()[0] for a in arrs]

    grads = run(xs, grad=True)
    h = 1e-6
    for j, x in enumerate(xs):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            xp = [v.copy() for v in xs]
            xm = [v.copy() for v in xs]
            xp[j][idx] += h
            xm[j][idx] -= h
            num[idx] = (run(xp) - run(xm)) / (2 * h)
        np.testing.assert_allclose(grads[j], num, rtol=1e-5, atol=1e-6, err_msg=f"{name}{sig} argument {j}")
