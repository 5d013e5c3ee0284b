"""Every overload of every registry builtin compiles to C++ (forward and adjoint).

Driven by the builtin registry itself, so a newly declared builtin cannot go unchecked: sample argument signatures
(all scalar types; vectors, matrices, quaternions, transforms and spatial types of every float precision; integer
vectors; see ``registry_samples.py``, shared with ``test_registry_numeric.py``) are tried against each builtin's
type rule; for every signature it accepts, a call is generated. One kernel per builtin holds all its accepted
signatures; the kernels (and their adjoints) are compiled in a few batched translation units at -O0. A failing
kernel is rebuilt on its own by the pipeline, so the error names the builtin, and the ``#line`` directives point at
the generated call (one line per signature). What the overloads compute: ``test_registry_numeric.py``.

Not covered here: builtins that take arrays, geometry, volume or texture ids or query objects (``mesh_query_*``,
``bvh_*``, ``hash_grid_*``, ``volume_*``, ``texture_sample``, ``lower_bound``, ``sample_cdf``; see ``tests/geometry``,
``tests/volume``, ``tests/texture`` and ``tests/kernels``), and the ones with a
special lowering (``print``, atomics, ``cast``, ``len``, ``tid``) or compile-time arguments (``identity``).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

# The shared helpers next to this file, also when another tool imports this module as tests.kernels.<name>.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from registry_samples import INTS, TypeTable, accepted_overloads

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.builtins.registry import Lowering


def _ctor(t: Any) -> str:
    if t is wp.bool:
        return "True"
    if t in INTS[:8]:
        return "1"
    if t in (wp.float16, wp.float32, wp.float64):
        return "0.5"
    return ""


def _module_source(found: dict[str, list[tuple[Any, ...]]]) -> tuple[str, list[Any]]:
    table = TypeTable()
    tref = table.ref

    lines = ["import treadle as wp", "from treadle._src.builtins import REGISTRY as _R", "T = None", ""]
    for name, sigs in found.items():
        lines += ["@wp.kernel(module='treadle_registry_compile')", f"def k_{name}():"]
        for j, sig in enumerate(sigs):
            args = [f"{tref(t)}({_ctor(t)})" for t in sig]
            decls = "; ".join(f"a{j}_{i} = {a}" for i, a in enumerate(args))
            call = f"_R.builtins['{name}'](" + ", ".join(f"a{j}_{i}" for i in range(len(sig))) + ")"
            lines.append(f"    {decls + '; ' if decls else ''}{call}")
        lines.append("")
    return "\n".join(lines), table.types


def test_every_builtin_overload_compiles(tmp_path):
    from treadle._src.backends.cpu.build import compile_batch, prepare, prepare_adjoint
    from treadle._src.runtime.native import CompileOptions

    t0 = time.perf_counter()
    found = accepted_overloads()
    # A builtin that no sample signature reaches is reported, so the samples grow with the registry.
    reachable_only_with_arrays = {n for n, b in REGISTRY.builtins.items()
                                  if n.startswith(("mesh_", "bvh_", "hash_grid_", "volume_", "texture_", "tile_bvh_",
                                                   "tile_mesh_"))} | {"lower_bound", "sample_cdf", "tile_query_valid"}
    # a tile stack exists only as a kernel variable made by tile_stack(): tests/tiles/test_tile_stack.py builds them
    reachable_only_with_arrays |= {n for n in REGISTRY.builtins if n.startswith("tile_stack_")}
    unreached = sorted(n for n, b in REGISTRY.builtins.items()
                       if not n.startswith("_") and b.lowering is Lowering.CALL and n != "identity"
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
