"""Compile every kernel the test suite defines at module level to CUDA (forward and backward) for one architecture.

Run by ``test_cuda_compile.py`` in a subprocess per architecture (so sm_80 and sm_90 build in parallel)::

    python tests/cuda/compile_suite.py --arch 90 --out result.json

Kernels are gathered from the test modules of ``tests/kernels``, ``tests/autodiff``, ``tests/geometry`` and
``tests/gpu`` (every module-level ``@wp.kernel``, and the instances generic kernels have after import), plus one
generated kernel per differentiable builtin signature (the cases of ``tests/autodiff/test_builtin_adjoints.py``). Each test module
becomes one CUDA translation unit per compile mode. A kernel whose CUDA build fails is rebuilt for the CPU: when that
fails as well, the failure is a known emitter/header problem outside the CUDA backend and is reported separately
(``cpu_too``) instead of as a CUDA failure. Kernels that do not lower at all (tests of rejected code) are listed in
``lower_errors`` and skipped.

Kernel passes whose CUDA block is large (``LARGE_BLOCK``: the geometry queries, inlined whole) compile with NVRTC's
``--Ofast-compile=max`` where it has it (``cuda/build.py: fast_compile_flags``; ``--full-opt`` turns it off): they
still go through the front end and ``ptxas`` for the architecture, which is what can reject generated code, in a
fraction of the time. Measured for sm_80 (NVRTC 12.9, one process): the 12 passes of ``tests/geometry/test_mesh.py``
27 s -> 5 s; but 120 of the small generated builtin cases 14.5 s -> 41 s (no inlining leaves every header function
to ``ptxas``), so small blocks keep the optimizing flags, as users get them.
"""

from __future__ import annotations

import argparse
import glob
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
#: Blocks of at least this many characters compile in NVRTC's fast-compile mode (see the module docstring).
LARGE_BLOCK = 40_000


def _modules() -> list[str]:
    files = []
    for sub in ("kernels", "autodiff", "geometry", "gpu"):
        files += sorted(glob.glob(str(ROOT / "tests" / sub / "test_*.py")))
    return [str(Path(f).relative_to(ROOT).with_suffix("")).replace(os.sep, ".") for f in files]


class _TmpFactory:
    def __init__(self, root: Path) -> None:
        self.root = root

    def mktemp(self, name: str) -> Path:
        p = Path(tempfile.mkdtemp(prefix=name, dir=self.root))
        return p


def _cpu_fails(inst, adjoint: bool) -> bool:
    try:
        if adjoint:
            inst.ensure_backward()
        else:
            inst.ensure_loaded()
    except Exception:  # noqa: BLE001
        return True
    return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated module name filter (substring)")
    ap.add_argument("--full-opt", action="store_true", help="compile with the optimizing flags users get")
    a = ap.parse_args()

    sys.path.insert(0, str(ROOT))
    tmp = Path(tempfile.mkdtemp(prefix="treadle-cuda-suite-"))
    own_cache = "TREADLE_CACHE_PATH" not in os.environ  # then the binaries live in tmp: keep it
    os.environ.setdefault("TREADLE_CACHE_PATH", str(tmp / "cache"))
    import treadle as wp
    from treadle._src.backends.cuda import build as cb
    from treadle._src.core.errors import TreadleError
    from treadle._src.lang.kernel import Kernel

    wp.config.kernel_cache_dir = os.environ["TREADLE_CACHE_PATH"]
    result = {"arch": a.arch, "modules": {}, "failures": [], "cpu_too": [], "lower_errors": [], "kernels": 0,
              "passes": 0, "fast_passes": 0,
              "seconds": 0.0, "import_errors": [], "binaries": []}
    t_all = time.perf_counter()
    fast = [] if a.full_opt else cb.fast_compile_flags(a.arch)
    result["flags"] = fast
    groups: list[tuple[str, list[Kernel]]] = []
    for name in _modules():
        if a.only and not any(s in name for s in a.only.split(",")):
            continue
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a test module that does not import is reported, not fatal
            result["import_errors"].append(f"{name}: {type(e).__name__}: {e}")
            continue
        groups.append((name, [v for v in vars(mod).values() if isinstance(v, Kernel)]))
        if name.endswith("test_builtin_adjoints") and hasattr(mod, "_make_module"):
            gen = mod._make_module(_TmpFactory(tmp))
            groups.append(("builtin_adjoint_cases", [v for v in vars(gen).values() if isinstance(v, Kernel)]))

    for name, kernels in groups:
        t0 = time.perf_counter()
        by_opts: dict[str, tuple[object, list]] = {}
        for k in kernels:
            insts = list(k.instances.values()) if k.is_generic else [k.get_instance(None)]
            for inst in insts:
                opts = cb.CudaCompileOptions(arch=a.arch, mode=inst.options.mode)
                quick = cb.CudaCompileOptions(arch=a.arch, mode=inst.options.mode, extra=fast)
                entry = cb.entry_options(k.options, k.module.options)
                try:
                    inst.ir  # noqa: B018 - lowering is lazy: kernels that tests expect to be rejected stop here
                except TreadleError as e:
                    result["lower_errors"].append(f"{name}.{k.key}: {type(e).__name__}")
                    continue
                for adjoint in (False, True) if k.enable_backward else (False,):
                    prep = cb.prepare_cuda_adjoint if adjoint else cb.prepare_cuda
                    b = prep(inst.ir, inst.deps, opts, k.key, entry=entry, args_type=inst.args_type)
                    o = opts
                    if fast and len(b.block) >= LARGE_BLOCK:
                        o = quick
                        b = prep(inst.ir, inst.deps, o, k.key, entry=entry, args_type=inst.args_type)
                        result["fast_passes"] += 1
                    by_opts.setdefault(o.key(), (o, []))[1].append((k, inst, adjoint, b))
                result["kernels"] += 1
        for opts, items in by_opts.values():
            cb.compile_cuda_batch([b for *_, b in items], opts)
            for k, inst, adjoint, b in items:
                result["passes"] += 1
                what = f"{name}.{k.key} ({'backward' if adjoint else 'forward'})"
                if b.error is not None:
                    if _cpu_fails(inst, adjoint):
                        result["cpu_too"].append(what)
                    else:
                        result["failures"].append(f"{what}: {str(b.error)[:4000]}")
                    continue
                data = b.binary_path.read_bytes()
                if not data.startswith(b"\x7fELF") or b.entry.encode() not in data:
                    result["failures"].append(f"{what}: the CUBIN is not an ELF holding {b.entry}")
                result["binaries"].append({"what": what, "entry": b.entry, "path": str(b.binary_path)})
        result["modules"][name] = round(time.perf_counter() - t0, 2)
    result["seconds"] = round(time.perf_counter() - t_all, 1)
    Path(a.out).write_text(json.dumps(result, indent=1))
    if not own_cache:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
