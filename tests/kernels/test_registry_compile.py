"""Every overload of every registry builtin compiles to C++ (forward and adjoint).

Driven by the builtin registry itself, so a newly declared builtin cannot go unchecked: sample argument signatures
(all scalar types; vectors, matrices, quaternions, transforms and spatial types of every float precision; integer
vectors) are tried against each builtin's type rule; for every signature it accepts, a call is generated. One kernel
per builtin holds all its accepted signatures; the kernels (and their adjoints) are compiled in a few batched
translation units at -O0. A failing kernel is rebuilt on its own by the pipeline, so the error names the builtin,
and the ``#line`` directives point at the generated call (one line per signature).

Not covered here: builtins that take arrays, geometry ids or query objects (``mesh_query_*``, ``bvh_*``,
``hash_grid_*``, ``lower_bound``, ``sample_cdf``; see ``tests/geometry`` and ``tests/kernels``), and the ones with a
special lowering (``print``, atomics, ``cast``, ``len``, ``tid``) or compile-time arguments (``identity``).
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
import time
from typing import Any

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.builtins.registry import NoMatch

_ARITY = re.compile(r"^expected [0-9][0-9 or-]* argument\(s\), got [0-9]+$")


def _families() -> dict[str, list[Any]]:
    out = {}
    for p, s in (("h", wp.float16), ("f", wp.float32), ("d", wp.float64)):
        names = ("vec2", "vec3", "vec4", "mat22", "mat33", "mat44", "quat", "transform", "spatial_vector",
                 "spatial_matrix")
        out[p] = [s] + [getattr(wp, n + p) for n in names]
    return out


INTS = [wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64, wp.bool,
        wp.vec2i, wp.vec3i, wp.vec4i]
EXTRA = [wp.int32, wp.uint32, wp.bool]


def _signatures() -> dict[int, list[tuple[Any, ...]]]:
    by_arity: dict[int, set[tuple[Any, ...]]] = {n: set() for n in range(7)}
    by_arity[0].add(())
    fams = _families()
    for t in sum(fams.values(), []) + INTS:
        by_arity[1].add((t,))
    for f in fams.values():
        s, v2, v3, v4, _m22, m33, _m44, q, tf = f[:9]
        by_arity[2].update(itertools.product(f + EXTRA, repeat=2))
        by_arity[3].update(itertools.product([s, v2, v3, v4, m33, q, tf] + EXTRA, repeat=3))
        by_arity[4].update(itertools.product([s, v3, q] + EXTRA[:2], repeat=4))
        by_arity[5].add((v3,) * 4 + (s,))
        by_arity[6].add((v3,) * 6)
    by_arity[2].update(itertools.product(INTS, repeat=2))
    by_arity[3].update((a, a, a) for a in INTS)
    return {n: sorted(v, key=lambda sig: tuple(t.__name__ for t in sig)) for n, v in by_arity.items()}


def accepted_overloads() -> dict[str, list[tuple[Any, ...]]]:
    """Builtin name -> argument signatures its type rule accepts (among the samples)."""
    sigs = _signatures()
    found: dict[str, list[tuple[Any, ...]]] = {}
    for name, b in sorted(REGISTRY.builtins.items()):
        if name.startswith("_") or b.lowering != "call":
            continue
        for n, cands in sigs.items():
            if b.static_args and n:
                continue  # compile-time arguments (quat_identity(dtype=...)): only the default form here
            try:
                b.resolve([wp.float32] * n)
            except NoMatch as e:
                if _ARITY.match(str(e)):
                    continue  # the rule rejects this argument count outright
            except Exception:  # noqa: BLE001 - a rule that needs other types; probe the samples
                pass
            for sig in cands:
                try:
                    b.resolve(list(sig))
                except Exception:  # noqa: BLE001 - NoMatch, or a rule that cannot take these types at all
                    continue
                found.setdefault(name, []).append(sig)
    return found


def _ctor(t: Any) -> str:
    if t is wp.bool:
        return "True"
    if t in INTS[:8]:
        return "1"
    if t in (wp.float16, wp.float32, wp.float64):
        return "0.5"
    return ""


def _module_source(found: dict[str, list[tuple[Any, ...]]]) -> tuple[str, list[Any]]:
    types: list[Any] = []
    index: dict[Any, int] = {}

    def tref(t: Any) -> str:
        if t not in index:
            index[t] = len(types)
            types.append(t)
        return f"T[{index[t]}]"

    lines = ["import treadle as wp", "from treadle._src.builtins import REGISTRY as _R", "T = None", ""]
    for name, sigs in found.items():
        lines += ["@wp.kernel(module='treadle_registry_compile')", f"def k_{name}():"]
        for j, sig in enumerate(sigs):
            args = [f"{tref(t)}({_ctor(t)})" for t in sig]
            decls = "; ".join(f"a{j}_{i} = {a}" for i, a in enumerate(args))
            call = f"_R.builtins['{name}'](" + ", ".join(f"a{j}_{i}" for i in range(len(sig))) + ")"
            lines.append(f"    {decls + '; ' if decls else ''}{call}")
        lines.append("")
    return "\n".join(lines), types


def test_every_builtin_overload_compiles(tmp_path):
    from treadle._src.backends.cpu import CompileOptions
    from treadle._src.compiler.pipeline import compile_batch, prepare, prepare_adjoint

    t0 = time.perf_counter()
    found = accepted_overloads()
    # A builtin that no sample signature reaches is reported, so the samples grow with the registry.
    reachable_only_with_arrays = {n for n, b in REGISTRY.builtins.items()
                                  if n.startswith(("mesh_", "bvh_", "hash_grid_"))} | {"lower_bound", "sample_cdf"}
    unreached = sorted(n for n, b in REGISTRY.builtins.items()
                       if not n.startswith("_") and b.lowering == "call" and n != "identity"
                       and n not in found and n not in reachable_only_with_arrays)
    assert not unreached, f"no sample signature reaches these builtins (extend the samples): {unreached}"

    src, types = _module_source(found)
    path = tmp_path / "registry_compile_kernels.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("registry_compile_kernels", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
        mod.T = types
        options = CompileOptions(mode="release", opt_level=0)
        builts = []
        lowering_errors = []
        for name in found:
            k = getattr(mod, f"k_{name}")
            inst = k.get_instance(None)
            try:
                f_ir = inst.ir
            except Exception as e:  # noqa: BLE001 - collected and reported together
                lowering_errors.append(f"{name}: {e}")
                continue
            builts.append(prepare(f_ir, inst.deps, options, f"k_{name}"))
            builts.append(prepare_adjoint(f_ir, inst.deps, options, f"k_{name}"))
        assert not lowering_errors, "accepted by the type rule but not lowered:\n" + "\n".join(lowering_errors)
        compile_batch(builts, options)
        failed = [f"{b.name}: {str(b.error)[:2000]}" for b in builts if b.error is not None or b.lib_path is None]
        assert not failed, "generated C++ does not compile:\n" + "\n\n".join(failed)
    finally:
        sys.modules.pop(spec.name, None)
    n_sigs = sum(len(v) for v in found.values())
    print(f"{len(found)} builtins, {n_sigs} overload signatures compiled in {time.perf_counter() - t0:.1f} s")
    assert n_sigs > 1000
