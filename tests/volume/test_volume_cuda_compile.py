"""The volume and texture builtins compile for CUDA (NVRTC, sm_80), forward and adjoint, without a GPU.

With NVRTC's fast-compile flags where it has them (``cuda/build.py: fast_compile_flags``): every construct still goes
through the front end and ``ptxas``, in a fraction of the optimizing build's time.
"""

from __future__ import annotations

import pytest

import treadle as wp
from treadle._src.backends.cuda import build as cb

pytestmark = pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")


@wp.kernel(module="volume_cuda_compile")
def every_builtin(vid: wp.uint64, tex1: wp.Texture1D, tex2: wp.Texture2D, tex3: wp.Texture3D,
                  pts: wp.array(dtype=wp.vec3), data: wp.array(dtype=float), datav: wp.array(dtype=wp.vec3),
                  out: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    g = wp.vec3()
    s = wp.volume_sample_f(vid, p, wp.Volume.LINEAR) + wp.volume_sample_grad_f(vid, p, wp.Volume.LINEAR, g)
    v = wp.volume_sample_v(vid, p, wp.Volume.LINEAR) + wp.volume_lookup_v(vid, 1, 2, 3)
    s += float(wp.volume_sample_i(vid, p) + wp.volume_lookup_i(vid, 1, 2, 3) + wp.volume_lookup_index(vid, 0, 0, 0))
    s += wp.volume_lookup_f(vid, 1, 2, 3) + float(wp.volume_voxel_count(vid))
    s += wp.volume_sample_index(vid, p, wp.Volume.LINEAR, data, 0.5)
    gi = wp.vec3()
    s += wp.volume_sample_grad_index(vid, p, wp.Volume.LINEAR, data, 0.5, gi)
    J = wp.mat33()
    w = wp.volume_sample_grad_index(vid, p, wp.Volume.LINEAR, datav, wp.vec3(0.0), J)
    x = wp.volume_index_to_world(vid, p) + wp.volume_world_to_index(vid, p) + wp.volume_index_to_world_dir(vid, p)
    x += wp.volume_world_to_index_dir(vid, p)
    xd = wp.volume_index_to_world(vid, wp.vec3d(1.0, 2.0, 3.0))
    wp.volume_store_f(vid, 1, 2, 3, s)
    wp.volume_store_v(vid, 1, 2, 3, v)
    wp.volume_store_i(vid, 1, 2, 3, 7)
    wp.volume_store(vid, 1, 2, 3, 1.0)
    t = wp.texture_sample(tex1, p[0]) + wp.texture_sample(tex1, p[0], 0.5) + wp.texture_sample(tex2, wp.vec2(p[0], p[1]))
    t += wp.texture_sample(tex2, p[0], p[1], 1.0) + wp.texture_sample(tex3, p) + wp.texture_sample(tex3, p[0], p[1], p[2])
    t += float(tex1.width + tex2.height + tex3.depth)
    out[i] = s + t + g[0] + gi[1] + v[2] + w[0] + J[1, 2] + x[0] + float(xd[1])


@pytest.mark.parametrize("adjoint", [False, True])
def test_volume_and_texture_builtins_compile_for_cuda(adjoint):
    inst = every_builtin.get_instance(None)
    opts = cb.CudaCompileOptions(arch=80, extra=cb.fast_compile_flags(80))
    prep = cb.prepare_cuda_adjoint if adjoint else cb.prepare_cuda
    b = prep(inst.ir, inst.deps, opts, every_builtin.key, entry=None, args_type=inst.args_type)
    cb.compile_cuda_batch([b], opts)
    assert b.error is None, b.error
    assert b.binary_path.read_bytes().startswith(b"\x7fELF")
