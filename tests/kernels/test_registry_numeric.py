"""Every overload of every registry builtin computes what a NumPy float64 reference computes, on random inputs.

Driven by the builtin registry itself: the overloads are the sample signatures each builtin's type rule accepts
(``registry_samples.py``, shared with ``test_registry_compile.py``); the references, input domains and special
checks are in ``builtin_refs.py``. For every accepted signature a kernel line reads the arguments from arrays
(``N`` random samples), calls the builtin and stores its results (tuple parts and output arguments too); all the
kernels are compiled in one batch at -O0 without adjoints. ``test_builtin_coverage`` fails for a builtin that has
neither a reference nor an entry in ``builtin_refs.EXEMPT`` (a reason and the tests that cover it instead).

Comparison (per sample and output): integer and boolean results exactly (wrapped to the result type);
float results norm-wise, ``max|kernel - ref| <= tol * max(1, max|ref|)`` with ``tol = TOL[precision] * Ref.tol``:

* float16: 5e-3 (about 5 ulp: one rounding of the result plus the rounding of intermediates in half precision),
* float32: 4e-6 (about 32 ulp),
* float64: 1e-13 (about 450 ulp: catches any single-precision step in a double overload),

where ``Ref.tol`` (1 to 8) allows for error growth in longer computations (inverses, decompositions, compositions
of rotations). Float inputs are rounded to the argument precision first and the reference computes on those
rounded values. Where a builtin is callable from Python (``Builtin.host``), its host result must agree with the
kernel's within twice the same tolerance on the first ``HOST_SAMPLES`` samples (also for the exempt random builtins;
decompositions: see ``check_host``).
"""

from __future__ import annotations

import importlib.util
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# The shared helpers next to this file, also when another tool imports this module as tests.kernels.<name>.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import builtin_refs as refs
from registry_samples import TypeTable, accepted_for, accepted_overloads

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.types.typesys import TupleT, is_float, scalar_of, type_str

N = 12
HOST_SAMPLES = 6  # samples compared with the host implementation (the edge cases of the domains come first)
TOL = {wp.float16: 5e-3, wp.float32: 4e-6, wp.float64: 1e-13}
CHUNK = 24  # calls per kernel
MODULE = "treadle_registry_numeric"

#: Exempt builtins whose kernel results are still compared with their host implementation here.
HOST_ONLY = {"rand_init", "randf", "randi", "randu", "noise", "pnoise", "curlnoise"}


def _ret_parts(ret: Any) -> list[Any]:
    if ret is None:
        return []
    return list(ret.types) if isinstance(ret, TupleT) else [ret]


def _ref_positions(name: str, sig: tuple[Any, ...]) -> list[int]:
    return [i for i in REGISTRY.builtins[name].ref_args if i < len(sig)]


def _out_types(name: str, sig: tuple[Any, ...]) -> list[Any]:
    ov = REGISTRY.builtins[name].resolve(list(sig))
    return _ret_parts(ov.ret) + [sig[i] for i in _ref_positions(name, sig)]


def _np_dtype(t: Any) -> Any:
    return np.bool_ if t is wp.bool else np.dtype(scalar_of(t)._np_).type


class Case:
    """One overload: its inputs, outputs and the kernel line that computes them."""

    def __init__(self, name: str, sig: tuple[Any, ...]) -> None:
        self.name, self.sig = name, sig
        rng = np.random.default_rng(zlib.crc32(self.label().encode()))  # samples do not depend on other cases
        self.outs = _out_types(name, sig)
        ref = refs.REFS.get(name)
        dom = ref.domain(sig, rng, N) if ref is not None and ref.domain is not None else [None] * len(sig)
        self.inputs = []
        for t, v in zip(sig, dom):
            v = refs.default_values(t, rng, N) if v is None else np.asarray(v)
            if v.dtype == object:  # Python ints over the whole range of the type
                v = np.array([refs.wrap_int(x, t) for x in v.reshape(-1)], dtype=_np_dtype(t))
            self.inputs.append(np.asarray(v).reshape(N, *refs.shape_of(t)).astype(_np_dtype(t)))

    def label(self) -> str:
        return f"{self.name}({', '.join(type_str(t) for t in self.sig)})"


def _tol(t: Any) -> float:
    st = scalar_of(t)
    return TOL.get(st, TOL[wp.float32])


def _precision(case: Case) -> Any:
    for t in list(case.outs) + list(case.sig):
        if is_float(scalar_of(t)):
            return scalar_of(t)
    return wp.float64


def _ref_arg(v: Any, t: Any) -> Any:
    if t is wp.bool:
        return bool(v)
    if is_float(scalar_of(t)):
        return np.asarray(v, dtype=np.float64) if np.ndim(v) else float(v)
    return np.asarray(v).astype(object) if np.ndim(v) else int(v)  # Python ints: no overflow (uint64)


def _compare(what: str, got: Any, want: Any, t: Any, tol: float) -> str | None:
    if t is wp.bool or not is_float(scalar_of(t)):
        w = refs.wrap_int(want, t)
        if not np.array_equal(np.asarray(got), np.asarray(w)):
            return f"{what}: got {got}, expected {w}"
        return None
    got64 = np.asarray(got, dtype=np.float64)
    want64 = np.asarray(want, dtype=np.float64).reshape(got64.shape)
    if np.array_equal(np.isnan(got64), np.isnan(want64)) and np.all(np.isnan(got64) == np.isnan(want64)):
        mask = ~np.isnan(want64)
        err = float(np.max(np.abs(got64[mask] - want64[mask]), initial=0.0))
        scale = max(1.0, float(np.max(np.abs(want64[mask]), initial=0.0)))
        if err <= tol * scale or (np.isinf(want64).any() and np.array_equal(got64, want64)):
            return None
        return f"{what}: got {got64.tolist()}, expected {want64.tolist()} (error {err:.3g} > {tol * scale:.3g})"
    return f"{what}: got {got64.tolist()}, expected {want64.tolist()}"


def check_case(case: Case, results: list[np.ndarray]) -> list[str]:
    """Compare the kernel results of one overload with its reference; returns the failures."""
    ref = refs.REFS[case.name]
    tol = _tol(_precision(case)) * ref.tol
    errors: list[str] = []
    for s in range(N):
        args = [_ref_arg(x[s], t) for x, t in zip(case.inputs, case.sig)]
        got = [r[s] for r in results]
        where = f"{case.label()} sample {s}, args {[np.asarray(a).tolist() for a in args]}"
        try:
            if ref.check is not None:
                ref.check(args, [np.asarray(g, dtype=np.float64) for g in got], tol)
                continue
            want = ref.fn(case.sig, *args) if ref.typed else ref.fn(*args)  # type: ignore[misc]
        except AssertionError as e:
            errors.append(f"{where}: {e}")
            continue
        want_parts = list(want) if len(case.outs) > 1 else [want]
        for m, (g, w, t) in enumerate(zip(got, want_parts, case.outs)):
            if ref.canon is not None:
                g = ref.canon(m, g, w)
            err = _compare(f"{where}, output {m}", g, w, t, tol)
            if err:
                errors.append(err)
        if len(errors) > 3:
            break
    return errors


def _host_value(v: Any, t: Any) -> Any:
    if t is wp.bool:
        return bool(v)
    if refs.shape_of(t):
        return t(*np.asarray(v).reshape(-1).tolist())
    return _np_dtype(t)(v)


def check_host(case: Case, results: list[np.ndarray]) -> list[str]:
    """The Python-scope (host) result equals the kernel result (for ``HOST_SAMPLES`` samples).

    Decompositions (references with a ``check``): the host results of every sample pass the same check, and equal
    the kernel's for the last samples (random, non-degenerate inputs: in degenerate ones, e.g. the null space of a
    rank-1 matrix, rounding differences legitimately change the basis).
    """
    b = REGISTRY.builtins[case.name]
    if b.host is None or b.kernel_only or _ref_positions(case.name, case.sig) or not case.outs:
        return []
    ref = refs.REFS.get(case.name)
    tol = 2 * _tol(_precision(case)) * (ref.tol if ref is not None else 1.0)
    errors = []
    samples = range(N) if ref is not None and ref.check is not None else range(HOST_SAMPLES)
    generic_from = N - 2  # decompositions: the samples past the degenerate ones
    for s in samples:
        args = [_host_value(x[s], t) for x, t in zip(case.inputs, case.sig)]
        try:
            with np.errstate(all="ignore"):  # integer wrap-around is expected (as in kernels)
                res = b.host_call(*args)
        except Exception as e:  # noqa: BLE001 - reported with the overload
            return [f"{case.label()}: host call failed: {type(e).__name__}: {e}"]
        parts = list(res) if len(case.outs) > 1 else [res]
        host = []
        for h, r, t in zip(parts, results, case.outs):
            h = np.asarray(h.__array__() if hasattr(h, "__array__") else h)  # not the float16 bits of a buffer
            host.append(h.astype(np.float64 if is_float(scalar_of(t)) else object).reshape(np.shape(r[s])))
        if ref is not None and ref.check is not None:
            try:
                ref.check([_ref_arg(x[s], t) for x, t in zip(case.inputs, case.sig)], host, tol)
            except AssertionError as e:
                errors.append(f"{case.label()} sample {s}: host result: {e}")
            if s < generic_from:
                continue
        for m, (h, r, t) in enumerate(zip(host, results, case.outs)):
            k = r[s]
            if ref is not None and ref.canon is not None:
                h = ref.canon(m, h, k)
            err = _compare(f"{case.label()} sample {s}: host vs kernel, output {m}", k, h, t, tol)
            if err:
                errors.append(err)
    return errors


def _source(chunks: list[tuple[str, list[Case]]]) -> tuple[str, list[Any]]:
    table = TypeTable()
    tref = table.ref

    lines = ["import treadle as wp", "from treadle._src.builtins import REGISTRY as _R", ""]
    opts = "module_options={'optimization_level': 0}, enable_backward=False"
    for kname, cases in chunks:
        params, body = [], ["    t = wp.tid()"]
        for j, c in enumerate(cases):
            params += [f"x{j}_{i}: wp.array(dtype={tref(a)})" for i, a in enumerate(c.sig)]
            params += [f"y{j}_{m}: wp.array(dtype={tref(o)})" for m, o in enumerate(c.outs)]
            for i in range(len(c.sig)):
                body.append(f"    a{j}_{i} = x{j}_{i}[t]")
            call = f"_R.builtins['{c.name}'](" + ", ".join(f"a{j}_{i}" for i in range(len(c.sig))) + ")"
            refpos = _ref_positions(c.name, c.sig)
            nret = len(c.outs) - len(refpos)
            if nret:
                body.append("    " + ", ".join(f"r{j}_{m}" for m in range(nret)) + f" = {call}")
            else:
                body.append(f"    {call}")
            for m in range(nret):
                body.append(f"    y{j}_{m}[t] = r{j}_{m}")
            for m, p in enumerate(refpos):
                body.append(f"    y{j}_{nret + m}[t] = a{j}_{p}")
        lines += [f"@wp.kernel(module='{MODULE}', {opts})", f"def {kname}(" + ", ".join(params) + "):", *body, ""]
    return "\n".join(lines), table.types


def _covered() -> dict[str, list[tuple[Any, ...]]]:
    """Builtin -> the accepted sample signatures tested here."""
    found = accepted_overloads()
    found.update(accepted_for(sorted(n for n in refs.REFS if n.startswith("_"))))  # _cmp_lt, _not
    out = {}
    for n, sigs in found.items():
        ref = refs.REFS.get(n)
        if ref is not None and ref.sigs is not None:
            sigs = [s for s in sigs if ref.sigs(s)]
        if sigs and (ref is not None or n in HOST_ONLY):
            out[n] = sigs
    return out


@pytest.fixture(scope="module")
def numeric_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Build, compile and run every covered overload once; failures by group."""
    t0 = time.perf_counter()
    chunks: list[tuple[str, list[Case]]] = []
    for name, sigs in _covered().items():
        cases = [Case(name, sig) for sig in sigs]
        for c in range(0, len(cases), CHUNK):
            chunks.append((f"k_{name}_{c // CHUNK}", cases[c:c + CHUNK]))
    src, types = _source(chunks)
    path = tmp_path_factory.mktemp("registry_numeric") / "registry_numeric_kernels.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("registry_numeric_kernels", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    mod.T = types  # type: ignore[attr-defined]
    sys.modules[spec.name] = mod
    failures: dict[str, list[str]] = {}
    n_cases = 0
    try:
        spec.loader.exec_module(mod)
        t_gen = time.perf_counter()
        from treadle._src.lang.kernel import get_module

        get_module(MODULE).load()
        t_compile = time.perf_counter()
        for kname, cases in chunks:
            group = REGISTRY.builtins[cases[0].name].group
            inputs, outputs = [], []
            for c in cases:
                inputs.append([wp.array(x, dtype=t, device="cpu") for x, t in zip(c.inputs, c.sig)])
                outputs.append([wp.zeros(N, dtype=t, device="cpu") for t in c.outs])
            flat = []
            for ins, outs in zip(inputs, outputs):
                flat += ins + outs
            try:
                wp.launch(getattr(mod, kname), dim=N, inputs=flat, device="cpu")
            except Exception as e:  # noqa: BLE001 - reported per builtin
                failures.setdefault(group, []).append(f"{kname}: {type(e).__name__}: {str(e)[:1500]}")
                continue
            for c, outs in zip(cases, outputs):
                n_cases += 1
                res = [o.numpy() for o in outs]
                try:
                    errs = [] if c.name in HOST_ONLY else check_case(c, res)
                    errs += check_host(c, res)
                except Exception as e:  # noqa: BLE001 - a broken reference is reported, not fatal
                    errs = [f"{c.label()}: checking raised {type(e).__name__}: {e}"]
                failures.setdefault(group, []).extend(errs[:4])
    finally:
        sys.modules.pop(spec.name, None)
    t_end = time.perf_counter()
    print(f"\n{n_cases} overloads of {len(_covered())} builtins: generate {t_gen - t0:.1f} s, compile "
          f"{t_compile - t_gen:.1f} s, run and compare {t_end - t_compile:.1f} s")
    return {"failures": failures, "n_cases": n_cases}


def test_builtin_coverage() -> None:
    """Every registry builtin has a reference here or is exempt with a reason (and the tests covering it)."""
    missing = sorted(n for n in REGISTRY.builtins if n not in refs.REFS and n not in refs.EXEMPT)
    assert not missing, (
        "registry builtins without a NumPy reference in tests/kernels/builtin_refs.py (add one to REFS, or an "
        f"entry to EXEMPT naming the test that covers it): {missing}")
    stale = sorted(n for n in list(refs.REFS) + list(refs.EXEMPT) if n not in REGISTRY.builtins)
    assert not stale, f"builtin_refs.py names builtins the registry does not declare: {stale}"
    both = sorted(set(refs.REFS) & set(refs.EXEMPT))
    assert not both, f"both a reference and an exemption: {both}"
    unreached = sorted(n for n in refs.REFS if n not in _covered())
    assert not unreached, f"no sample signature reaches these builtins with references (extend the samples): {unreached}"


GROUPS = sorted({b.group for n, b in REGISTRY.builtins.items() if n in refs.REFS or n in HOST_ONLY})


@pytest.mark.parametrize("group", GROUPS)
def test_builtins_match_numpy(group: str, numeric_results: dict[str, Any]) -> None:
    errors = numeric_results["failures"].get(group, [])
    assert not errors, f"{len(errors)} mismatches in group {group}:\n" + "\n".join(errors[:60])


@wp.kernel(module="treadle_registry_numeric_qr3", module_options={"optimization_level": 0}, enable_backward=False)
def _k_qr3(a: wp.array(dtype=wp.mat33f), q: wp.array(dtype=wp.mat33f), r: wp.array(dtype=wp.mat33f)):
    t = wp.tid()
    qq, rr = wp.qr3(a[t])
    q[t] = qq
    r[t] = rr


def test_qr3_rank_one_host_matches_kernel() -> None:
    """Regression: the host qr3 took its rank threshold from float64 for float32 input (another Q than kernels)."""
    rng = np.random.default_rng(3)
    a = np.stack([np.outer(rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)) for _ in range(4)]).astype(np.float32)
    q, r = wp.zeros(4, dtype=wp.mat33f, device="cpu"), wp.zeros(4, dtype=wp.mat33f, device="cpu")
    wp.launch(_k_qr3, dim=4, inputs=[wp.array(a, dtype=wp.mat33f, device="cpu"), q, r], device="cpu")
    for s in range(4):
        qh, rh = wp.qr3(wp.mat33f(*a[s].reshape(-1).tolist()))
        np.testing.assert_allclose(np.array(qh.__array__()), q.numpy()[s], atol=1e-5)
        np.testing.assert_allclose(np.array(rh.__array__()), r.numpy()[s], atol=1e-5)
