"""Compile every kernel the test suite defines at module level to CUDA (forward and backward) for sm_80 and sm_90.

Run by ``test_cuda_compile.py`` in two subprocesses, each taking every other test module (``--shard``)::

    python tests/cuda/compile_suite.py --arch 80,90 --shard 0/2 --out result.json

Each translation unit goes through NVRTC once, to PTX, and nvJitLink assembles it for each architecture
(``cuda/build.py: compile_cuda_batch_archs``; one NVRTC compile per architecture when nvJitLink is not installed).

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
    ap.add_argument("--arch", required=True, help="comma-separated architectures, e.g. 80,90")
    ap.add_argument("--shard", default="0/1", help="i/n: compile the test modules i, i+n, i+2n, ...")
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
    archs = [int(x) for x in a.arch.split(",")]
    shard, nshards = (int(x) for x in a.shard.split("/"))
    result = {"archs": archs, "modules": {}, "failures": [], "cpu_too": [], "lower_errors": [], "kernels": 0,
              "passes": 0, "fast_passes": 0,
              "seconds": 0.0, "import_errors": [], "binaries": []}
    t_all = time.perf_counter()
    fast = {arch: [] if a.full_opt else cb.fast_compile_flags(arch) for arch in archs}
    result["flags"] = fast
    groups: list[tuple[str, list[Kernel]]] = []
    names = _modules()
    names.append("builtin_adjoint_cases")  # generated from test_builtin_adjoints: a shard of its own
    for name in names[shard::nshards]:
        if a.only and not any(s in name for s in a.only.split(",")):
            continue
        if name == "builtin_adjoint_cases":
            mod = importlib.import_module("tests.autodiff.test_builtin_adjoints")
            gen = mod._make_module(_TmpFactory(tmp))
            groups.append((name, [v for v in vars(gen).values() if isinstance(v, Kernel)]))
            continue
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a test module that does not import is reported, not fatal
            result["import_errors"].append(f"{name}: {type(e).__name__}: {e}")
            continue
        groups.append((name, [v for v in vars(mod).values() if isinstance(v, Kernel)]))

    for name, kernels in groups:
        t0 = time.perf_counter()
        # (mode, fast?) -> per architecture: (options, [(kernel, instance, adjoint, built)])
        by_opts: dict[tuple[str, bool], dict[int, tuple[object, list]]] = {}
        for k in kernels:
            insts = list(k.instances.values()) if k.is_generic else [k.get_instance(None)]
            for inst in insts:
                entry = cb.entry_options(k.options, k.module.options)
                try:
                    inst.ir  # noqa: B018 - lowering is lazy: kernels that tests expect to be rejected stop here
                except TreadleError as e:
                    result["lower_errors"].append(f"{name}.{k.key}: {type(e).__name__}")
                    continue
                for adjoint in (False, True) if k.enable_backward else (False,):
                    prep = cb.prepare_cuda_adjoint if adjoint else cb.prepare_cuda
                    large = None
                    for arch in archs:
                        o = cb.CudaCompileOptions(arch=arch, mode=inst.options.mode)
                        b = prep(inst.ir, inst.deps, o, k.key, entry=entry, args_type=inst.args_type)
                        if large is None:
                            large = bool(fast[arch]) and len(b.block) >= LARGE_BLOCK
                            result["fast_passes"] += int(large)
                        if large:
                            o = cb.CudaCompileOptions(arch=arch, mode=inst.options.mode, extra=fast[arch])
                            b = prep(inst.ir, inst.deps, o, k.key, entry=entry, args_type=inst.args_type)
                        slot = by_opts.setdefault((inst.options.mode, bool(large)), {})
                        slot.setdefault(arch, (o, []))[1].append((k, inst, adjoint, b))
                result["kernels"] += 1
        for per_arch in by_opts.values():
            cb.compile_cuda_batch_archs([([b for *_, b in items], o) for o, items in per_arch.values()])
            for arch, (opts, items) in per_arch.items():
                for k, inst, adjoint, b in items:
                    result["passes"] += 1
                    what = f"sm_{arch}: {name}.{k.key} ({'backward' if adjoint else 'forward'})"
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
