"""The tile linear-algebra and FFT builtins compile as CUDA with NVRTC (sm_80 and sm_90), forward and adjoint.

No GPU is needed: the generated CUDA of kernels using every builtin of ``tile_linalg`` goes through the CUDA backend's
build step to a cubin. Skipped when ``cuda-bindings`` / NVRTC are not installed (``pip install 'treadle[cuda]'``).
"""

from __future__ import annotations

from typing import Any

import pytest

import treadle as wp
from treadle._src.backends.cuda import build as cb

pytestmark = pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")


@wp.kernel(module="tile_linalg_cuda")
def products(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float), h: wp.array3d(dtype=wp.float16),
             c: wp.array3d(dtype=float)):
    i, _lane = wp.tid()
    ta = wp.tile_load(a[i], shape=(16, 8))
    tb = wp.tile_load(b[i], shape=(8, 12))
    th = wp.tile_load(h[i], shape=(16, 8))
    out = wp.tile_matmul(ta, tb)
    wp.tile_matmul(th, tb, out, alpha=0.5, beta=2.0)
    wp.tile_store(c[i], out)


@wp.kernel(module="tile_linalg_cuda")
def factor_and_solve(a: wp.array3d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64),
                     ym: wp.array3d(dtype=wp.float64), out: wp.array3d(dtype=wp.float64),
                     x: wp.array2d(dtype=wp.float64), xm: wp.array3d(dtype=wp.float64)):
    i, _lane = wp.tid()
    ta = wp.tile_load(a[i], shape=(7, 7))
    lo = wp.tile_cholesky(ta)
    up = wp.tile_cholesky(ta, fill_mode="upper")
    ty = wp.tile_load(y[i], shape=7)
    tm = wp.tile_load(ym[i], shape=(7, 3))
    z = wp.tile_lower_solve(lo, ty)
    wp.tile_store(x[i], wp.tile_upper_solve(up, z))
    wp.tile_store(xm[i], wp.tile_cholesky_solve(up, tm, fill_mode="upper"))
    wp.tile_store(out[i], lo)


@wp.kernel(module="tile_linalg_cuda")
def in_place(a: wp.array3d(dtype=float), ym: wp.array3d(dtype=float)):
    i, _lane = wp.tid()
    ta = wp.tile_load(a[i], shape=(5, 5))
    tm = wp.tile_load(ym[i], shape=(5, 2))
    wp.tile_cholesky_inplace(ta)
    wp.tile_cholesky_solve_inplace(ta, tm)
    wp.tile_lower_solve_inplace(ta, tm)
    wp.tile_upper_solve_inplace(ta, tm)
    wp.tile_store(ym[i], tm)


@wp.kernel(module="tile_linalg_cuda")
def transforms(x: wp.array3d(dtype=wp.vec2f), y: wp.array3d(dtype=wp.vec2d)):
    i, _lane = wp.tid()
    tx = wp.tile_load(x[i], shape=(4, 64))
    ty = wp.tile_load(y[i], shape=(2, 12))
    wp.tile_fft(tx)
    wp.tile_ifft(ty)
    wp.tile_store(x[i], tx)
    wp.tile_store(y[i], ty)


CASES = [(k, adjoint, arch) for k in (products, factor_and_solve, in_place, transforms) for adjoint in (False, True)
         for arch in (80, 90) if not (adjoint and k is in_place)]  # in-place forms have no adjoint to build


@pytest.mark.slow
@pytest.mark.parametrize("kernel,adjoint,arch", CASES, ids=lambda v: getattr(v, "key", None) or str(v))
def test_tile_linalg_kernels_compile_with_nvrtc(kernel: Any, adjoint: bool, arch: int) -> None:
    """The generated CUDA of each kernel (and of its adjoint) builds to a cubin (NVRTC takes ~10-30 s each)."""
    inst = kernel.get_instance(None)
    opts = cb.CudaCompileOptions(arch=arch)
    prep = cb.prepare_cuda_adjoint if adjoint else cb.prepare_cuda
    built = prep(inst.ir, inst.deps, opts, kernel.key, args_type=inst.args_type)
    cb.compile_cuda_batch([built], opts)
    assert built.error is None, built.error


def test_one_tile_linalg_kernel_compiles_with_nvrtc() -> None:
    """The quick check that stays in every run: the products kernel for sm_80."""
    inst = products.get_instance(None)
    opts = cb.CudaCompileOptions(arch=80)
    built = cb.prepare_cuda(inst.ir, inst.deps, opts, products.key, args_type=inst.args_type)
    cb.compile_cuda_batch([built], opts)
    assert built.error is None, built.error
