"""Every tile kernel of ``tests/tiles`` compiles to CUDA with NVRTC for sm_80 and sm_90, forward and backward.

NVRTC compiles the translation unit once, to PTX, and nvJitLink assembles it for each architecture when it is
installed (``compile_cuda_batch_archs``); otherwise NVRTC compiles it once per architecture. The check runs in
NVRTC's fast-compile mode (``fast_compile_flags``: the front end and ``ptxas`` see all the code, optimisation is cut
short), which halves its time for these kernels; the optimizing build of every linear-algebra and FFT builtin is
checked by ``tests/tiles/test_tile_linalg_cuda.py``.

Skipped when NVRTC is not installed (``pip install 'treadle[cuda]'``); no GPU is needed.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from treadle._src.backends.cuda import build as cb
from treadle._src.lang.kernel import Kernel

pytestmark = pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")

TILES = Path(__file__).resolve().parent.parent / "tiles"
ARCHS = (80, 90)


def _tile_kernels() -> list[Kernel]:
    kernels: list[Kernel] = []
    sys.path.insert(0, str(TILES))
    try:
        for f in sorted(TILES.glob("test_*.py")):
            mod = importlib.import_module(f.stem)
            kernels += [k for k in vars(mod).values() if isinstance(k, Kernel) and not k.is_generic]
    finally:
        sys.path.pop(0)
    return kernels


def test_tile_kernels_compile_for_cuda():
    kernels = _tile_kernels()
    assert len(kernels) >= 10
    batches = []
    for arch in ARCHS:
        opts = cb.CudaCompileOptions(arch=arch, extra=cb.fast_compile_flags(arch))
        items = []
        for k in kernels:
            inst = k.get_instance(None)
            entry = cb.entry_options(k.options, k.module.options)
            items.append(cb.prepare_cuda(inst.ir, inst.deps, opts, k.key, entry=entry, args_type=inst.args_type))
            if k.enable_backward:
                items.append(cb.prepare_cuda_adjoint(inst.ir, inst.deps, opts, k.key, entry=entry,
                                                     args_type=inst.args_type))
        batches.append((items, opts))
    cb.compile_cuda_batch_archs(batches)
    for (items, _), arch in zip(batches, ARCHS):
        failed = [f"sm_{arch} {it.key}: {str(it.error)[:2000]}" for it in items if it.error is not None]
        assert not failed, "\n\n".join(failed[:3])
        for it in items:
            data = it.binary_path.read_bytes()
            assert data.startswith(b"\x7fELF") and it.entry.encode() in data
            assert it.binary_path.name.endswith(f".sm{arch}.cubin")
