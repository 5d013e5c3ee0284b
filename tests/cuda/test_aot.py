"""``wp.compile_aot_module``: CUBINs for chosen architectures on a machine without a GPU."""

from __future__ import annotations

import json
import sys

import pytest

import treadle as wp
from treadle._src.backends.cuda import build as cb

needs_nvrtc = pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")

MOD = "aot_test_module"


@wp.kernel(module=MOD)
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s


@wp.kernel(module=MOD)
def accumulate(x: wp.array(dtype=wp.vec3), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    acc = wp.float32(0.0)
    for j in range(n):
        acc += wp.length(x[(i + j) % x.shape[0]])
    wp.atomic_add(out, 0, acc)


@wp.kernel
def plain(a: wp.array(dtype=wp.int32)):
    a[wp.tid()] = 1


@needs_nvrtc
def test_cubins_for_two_archs(tmp_path):
    paths = wp.compile_aot_module(MOD, arch=[80, 90], module_dir=tmp_path)
    assert [p.name.split(".", 1)[1] for p in paths] == ["sm80.cubin", "sm90.cubin"]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(b"\x7fELF") and p.parent == tmp_path
        meta = json.loads(p.with_name(p.name + ".meta").read_text())
        assert {k["kernel"] for k in meta["kernels"]} == {"scale", "accumulate"}
        for k in meta["kernels"]:
            assert k["forward"].encode() in data and k["backward"].encode() in data
            assert k["block_dim"] == 256 and k["args_size"] > 0
        assert [k["ckpt_bytes"] > 0 for k in meta["kernels"] if k["kernel"] == "accumulate"] == [True]
        assert p.with_suffix("").with_suffix(".cu").exists()
    assert paths[0].read_bytes() != paths[1].read_bytes()


@needs_nvrtc
def test_ptx_and_stripped_names(tmp_path):
    mod = sys.modules[__name__]
    (p,) = wp.compile_aot_module(mod, arch=86, module_dir=tmp_path, use_ptx=True, strip_hash=True)
    assert p.name == f"{__name__.replace('.', '_')}.compute86.ptx"
    assert b".target sm_86" in p.read_bytes()
    wp.get_module(mod).options.pop("strip_hash", None)


def test_cpu_target(tmp_path):
    (p,) = wp.compile_aot_module(MOD, device="cpu", module_dir=tmp_path)
    assert p.name.endswith(".cpu.so") and p.stat().st_size > 0


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError):
        wp.compile_aot_module(42, arch=80, module_dir=tmp_path)
    with pytest.raises(ValueError, match="no kernels"):
        wp.compile_aot_module("no_such_module_here", arch=80, module_dir=tmp_path)
