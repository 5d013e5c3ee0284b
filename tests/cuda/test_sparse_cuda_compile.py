"""The kernels of ``treadle.sparse`` and ``treadle.optim.linear`` compile to CUDA (NVRTC, sm_80), forward and backward.

The sparse and solver test functions run first on the CPU, so that every generic kernel and every per-block-type
kernel factory has the instances those workloads use; each instance is then compiled for the GPU. Skipped when
NVRTC is not installed (``pip install 'treadle[cuda]'``).
"""

from __future__ import annotations

import gc
import importlib
import inspect
import itertools
import sys
from pathlib import Path

import pytest

import treadle as wp
from treadle._src.backends.cuda import build as cb
from treadle._src.lang.kernel import Kernel

pytestmark = pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")

TESTS = Path(__file__).resolve().parent.parent


def _cases(f):
    """Keyword arguments of every parametrized case of a test function."""
    combos = [{}]
    for mark in getattr(f, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in mark.args[0].split(",")]
        values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
        combos = [{**c, **dict(zip(names, v))} for c, v in itertools.product(combos, values)]
    return combos


def _run_workloads():
    pytest.importorskip("scipy.sparse")
    for sub, name in (("sparse", "test_bsr_build"), ("sparse", "test_bsr_ops"), ("optim", "test_linear_solvers"),
                      ("optim", "test_fsai")):
        sys.path.insert(0, str(TESTS / sub))
        try:
            mod = importlib.import_module(name)
        finally:
            sys.path.pop(0)
        for fname, f in vars(mod).items():
            if not fname.startswith("test_") or not callable(f):
                continue
            params = inspect.signature(f).parameters
            if any(p not in ("device", "shape", "scalar", "solver", "block", "dtype", "left", "new_shape",
                             "chunks", "max_row_size", "step", "factor", "rtol") for p in params):
                continue
            for kw in _cases(f):
                if "device" in params:
                    kw["device"] = "cpu"
                f(**kw)


def test_sparse_and_solver_kernels_compile_for_cuda():
    import treadle.optim.linear  # noqa: F401
    import treadle.sparse  # noqa: F401

    _run_workloads()
    kernels = [k for k in gc.get_objects() if isinstance(k, Kernel)
               and str(getattr(k.module, "name", "")).startswith(("treadle._src.sparse", "treadle._src.optim"))]
    assert len(kernels) > 50
    opts = cb.CudaCompileOptions(arch=80)
    items = []
    for k in kernels:
        for inst in (list(k.instances.values()) if k.is_generic else [k.get_instance(None)]):
            entry = cb.entry_options(k.options, k.module.options)
            items.append((k, False, cb.prepare_cuda(inst.ir, inst.deps, opts, k.key, entry=entry,
                                                    args_type=inst.args_type)))
            if k.enable_backward:
                items.append((k, True, cb.prepare_cuda_adjoint(inst.ir, inst.deps, opts, k.key, entry=entry,
                                                               args_type=inst.args_type)))
    cb.compile_cuda_batch([b for *_, b in items], opts)
    failures = [f"{k.key} ({'backward' if adj else 'forward'}): {str(b.error)[:2000]}"
                for k, adj, b in items if b.error is not None]
    assert not failures, "\n".join(failures)
    assert wp.get_device("cpu").is_cpu
