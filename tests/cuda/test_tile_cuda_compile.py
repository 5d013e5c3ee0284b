"""Every tile kernel of ``tests/tiles`` compiles to CUDA with NVRTC for sm_80 and sm_90, forward and backward.

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


@pytest.mark.parametrize("arch", [80, 90])
def test_tile_kernels_compile_for_cuda(arch):
    kernels = _tile_kernels()
    assert len(kernels) >= 10
    opts = cb.CudaCompileOptions(arch=arch)
    items = []
    for k in kernels:
        inst = k.get_instance(None)
        entry = cb.entry_options(k.options, k.module.options)
        items.append(cb.prepare_cuda(inst.ir, inst.deps, opts, k.key, entry=entry, args_type=inst.args_type))
        if k.enable_backward:
            items.append(cb.prepare_cuda_adjoint(inst.ir, inst.deps, opts, k.key, entry=entry,
                                                 args_type=inst.args_type))
    cb.compile_cuda_batch(items, opts)
    failed = [f"{it.key}: {str(it.error)[:2000]}" for it in items if it.error is not None]
    assert not failed, "\n\n".join(failed[:3])
    assert all(it.binary_path is not None and it.binary_path.read_bytes().startswith(b"\x7fELF") for it in items)
