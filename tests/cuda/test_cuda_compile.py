"""CUDA code generation checked without a GPU: NVRTC compiles the generated CUDA to CUBIN for sm_80 and sm_90.

Skipped when ``cuda-bindings`` / NVRTC are not installed (``pip install 'treadle[cuda]'``).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import treadle as wp
from treadle._src.backends.cuda import build as cb
from treadle._src.compiler import emit_cuda
from treadle._src.core.errors import CompileError

pytestmark = pytest.mark.skipif(not cb.nvrtc_available(), reason="NVRTC (cuda-bindings) is not installed")

HERE = Path(__file__).resolve().parent
ARCHS = (80, 90)


@wp.kernel(module="cuda_compile_tests")
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel(module="cuda_compile_tests")
def loop_sum(x: wp.array2d(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.float32(0.0)
    for j in range(n):
        s = s + wp.sin(x[i, j]) * s + x[i, j]
    out[i] = s


@wp.kernel(module="cuda_compile_tests")
def grid2(a: wp.array2d(dtype=wp.vec3), b: wp.array2d(dtype=wp.vec3)):
    i, j = wp.tid()
    b[i, j] = wp.normalize(a[i, j]) * 2.0


def _inst(k):
    return k.get_instance(None)


def _built(k, arch=80, adjoint=False, entry=None, **opts):
    inst = _inst(k)
    o = cb.CudaCompileOptions(arch=arch, **opts)
    prep = cb.prepare_cuda_adjoint if adjoint else cb.prepare_cuda
    return inst, o, prep(inst.ir, inst.deps, o, k.key, entry=entry, args_type=inst.args_type)


def _compile(k, **kw):
    inst, o, b = _built(k, **kw)
    cb.compile_cuda_batch([b], o)
    if b.error is not None:
        raise b.error
    return b


def elf_sections(data: bytes) -> dict[str, int]:
    """Section name -> size of a 64-bit little-endian ELF file (a CUBIN)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    str_off = heads[shstrndx][4]
    out = {}
    for h in heads:
        end = data.index(b"\0", str_off + h[0])
        out[data[str_off + h[0]:end].decode()] = h[5]
    return out


def test_nvrtc_targets_sm80_and_sm90():
    nv = cb.get_nvrtc()
    assert nv.version() >= (12, 0)
    assert {80, 90} <= set(nv.supported_archs())
    assert nv.identity().startswith("nvrtc")


@pytest.mark.parametrize("arch", ARCHS)
def test_forward_and_backward_cubins(arch):
    for adjoint in (False, True):
        b = _compile(saxpy, arch=arch, adjoint=adjoint)
        data = b.binary_path.read_bytes()
        assert data.startswith(b"\x7fELF") and len(data) > 1000
        assert b.entry.encode() in data
        assert b.binary_path.name.endswith(f".sm{arch}.cubin")
        secs = elf_sections(data)
        assert f".text.{b.entry}" in secs and secs[f".text.{b.entry}"] > 0


def test_cache_keys_differ_per_arch_option_and_nvrtc(monkeypatch):
    keys = {_built(saxpy, arch=a)[2].key for a in ARCHS}
    assert len(keys) == 2
    assert _built(saxpy, fast_math=True)[2].key != _built(saxpy)[2].key
    assert _built(saxpy, lineinfo=True)[2].key != _built(saxpy, lineinfo=False)[2].key
    assert _built(saxpy, mode="debug")[2].key != _built(saxpy)[2].key
    major, minor = cb.get_nvrtc().version()
    assert cb.get_nvrtc().identity().startswith(f"nvrtc{major}.{minor}")
    before = _built(saxpy)[2].key
    monkeypatch.setattr(cb.get_nvrtc(), "_identity", "nvrtc99.9")
    assert _built(saxpy)[2].key != before


def test_cached_binary_is_reused_without_nvrtc():
    b1 = _compile(saxpy, arch=90, fast_math=True)
    n = cb.get_nvrtc().compile_count
    b2 = _compile(saxpy, arch=90, fast_math=True)
    assert cb.get_nvrtc().compile_count == n
    assert b1.binary_path == b2.binary_path
    # published like CPU libraries: checksummed reference, atomic file
    from treadle._src.runtime.cache import get_cache

    assert get_cache().lookup(b1.key) == b1.binary_path


def test_entry_point_shape():
    inst, o, b = _built(grid2, entry=emit_cuda.CudaEntryOptions.from_launch_bounds((128, 2)))
    text = b.block
    assert f'extern "C" __global__ void __launch_bounds__(128, 2) {b.symbol}_cuda_forward(' in text
    assert "treadle::cuda_tid(bounds, _i, _t);" in text  # 2-d kernel: per-dimension index
    assert "_i += _step" in text  # grid-stride loop
    assert "#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)" in text  # CPU entries fenced off
    assert f"{b.symbol}_cpu_forward" in text
    assert "static_assert(sizeof(Args) ==" in text
    assert text.count("static_assert(sizeof(Args::") == len(_inst(grid2).args_type._fields_)  # every member
    b1 = _built(saxpy)[2].block
    assert "cuda_tid" not in b1  # 1-d kernel reading only the flat index: no index arithmetic
    cb.compile_cuda_batch([b], o)
    assert b.error is None, b.error


def test_bounds_checked_entry_without_grid_stride():
    entry = emit_cuda.CudaEntryOptions(block_dim=64, grid_stride=False)
    b = _compile(saxpy, entry=entry)
    assert "if (_i < bounds.size)" in b.block and "_step" not in b.block
    assert "__launch_bounds__(64)" in b.block


@wp.kernel(module="cuda_compile_tests")
def mixed_access(x: wp.array(dtype=float), table: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * table[i % 7]


def test_grid_stride_prefetches_own_index_arrays_it_reads():
    fwd = _built(mixed_access)[2].block
    line = next(t for t in fwd.splitlines() if "cuda_prefetch" in t)
    # x is read at the thread's own index; table at another index, out is only stored to: neither is prefetched
    assert "cuda_prefetch<true, false>(args.p_x, _n)" in line and "p_table" not in line and "p_out" not in line
    bwd = _built(mixed_access, adjoint=True)[2].block
    line = next(t for t in bwd.splitlines() if "cuda_prefetch" in t)
    assert "cuda_prefetch<true, true>(args.p_x, _n)" in line and "cuda_prefetch<false, true>(args.p_out, _n)" in line
    assert "cuda_prefetch" not in _built(grid2)[2].block  # 2-d launches: none
    off = _built(mixed_access, entry=emit_cuda.CudaEntryOptions(prefetch=False))[2].block
    assert "cuda_prefetch" not in off.split("cuda_forward(")[1]
    assert cb.entry_options(None, {"cuda_prefetch": False}).prefetch is False
    _compile(mixed_access)
    _compile(mixed_access, adjoint=True)


def test_launch_bounds_validation():
    assert emit_cuda.CudaEntryOptions.from_launch_bounds(None).block_dim == 256
    assert emit_cuda.CudaEntryOptions.from_launch_bounds(512).block_dim == 512
    with pytest.raises(ValueError, match="1 to 1024"):
        emit_cuda.CudaEntryOptions.from_launch_bounds(2048)
    with pytest.raises(ValueError):
        emit_cuda.CudaEntryOptions.from_launch_bounds("big")


@pytest.mark.parametrize("arch", ARCHS)
def test_backward_with_dynamic_loop_uses_local_checkpoint_stack(arch):
    fwd = _compile(loop_sum, arch=arch)
    bwd = _compile(loop_sum, arch=arch, adjoint=True)
    assert bwd.uses_ckpt and not fwd.uses_ckpt
    assert f"_ckpt_buf[{emit_cuda.DEFAULT_CKPT_BYTES}]" in bwd.block
    data = bwd.binary_path.read_bytes()
    assert b"treadle_cuda_ckpt_overflow" in data
    fsecs = elf_sections(fwd.binary_path.read_bytes())
    bsecs = elf_sections(data)
    # only kernels that checkpoint get the shared-memory slots
    assert not any(s.startswith(".nv.shared.") and fwd.entry in s for s in fsecs)
    assert bsecs.get(f".nv.shared.{bwd.entry}", 0) >= 8 * 1024
    small = _compile(loop_sum, arch=arch, adjoint=True, entry=emit_cuda.CudaEntryOptions(ckpt_bytes=256))
    assert "_ckpt_buf[256]" in small.block and small.key != bwd.key


def test_checked_mode_compiles_with_error_record():
    b = _compile(grid2, mode="debug")
    assert "TREADLE_AT(" in b.block
    assert b"treadle_cuda_checked_error" in b.binary_path.read_bytes()


def test_ptx_targets():
    o = cb.CudaCompileOptions(arch=90, output="ptx")
    assert o.target() == ("ptx", 90)
    assert cb.CudaCompileOptions(arch=90, ptx_arch=75).target() == ("ptx", 75)
    newest = max(cb.get_nvrtc().supported_archs())
    # a device newer than NVRTC knows: PTX for the newest architecture it knows, never newer
    assert cb.CudaCompileOptions(arch=newest + 50).target() == ("ptx", newest)
    with pytest.raises(cb.NvrtcUnavailableError):
        cb.CudaCompileOptions(arch=newest + 50, output="cubin").target()
    with wp.config.override(cuda_output="ptx"):
        b = _compile(saxpy, arch=90)
    text = b.binary_path.read_bytes()
    assert b.binary_path.name.endswith(".compute90.ptx") and b".target sm_90" in text and text.endswith(b"\0")


def test_compile_errors_point_at_the_python_line(tmp_path):
    inst, o, b = _built(saxpy)
    marker = '#line 3 "/home/user/model.py"\n    undefined_symbol_xyz();\n'
    bad = b.block.replace("    TREADLE_THREAD(_flat)\n", "    TREADLE_THREAD(_flat)\n" + marker, 1)
    with pytest.raises(CompileError) as ei:
        cb.compile_cuda_source(emit_cuda.CUDA_PRELUDE + bad, o, str(tmp_path / "bad.cu"))
    err = ei.value
    assert err.loc is not None and err.loc.file == "/home/user/model.py" and err.loc.line == 3
    assert "undefined_symbol_xyz" in str(err)


def test_one_bad_kernel_does_not_fail_its_siblings():
    _, o, good = _built(grid2, arch=90)
    _, _, bad = _built(saxpy, arch=90)
    bad.cblock.block = bad.block = bad.block.replace("TREADLE_THREAD(_flat)", "TREADLE_THREAD(_flat) nope();", 1)
    bad.key = "0" * 64
    cb.compile_cuda_batch([good, bad], o)
    assert good.error is None and good.binary_path is not None
    assert isinstance(bad.error, CompileError)


def test_fast_compile_flags_build_a_cubin_under_their_own_key():
    """The suite's compile-only checks use NVRTC's fast-compile mode: a real CUBIN, never the optimizing one's entry."""
    fast = cb.fast_compile_flags(80)
    if not fast:
        pytest.skip("this NVRTC has no --Ofast-compile (NVRTC 12.8 or later)")
    full = _compile(loop_sum)
    quick = _compile(loop_sum, extra=fast)
    assert quick.key != full.key and quick.binary_path != full.binary_path
    for b in (full, quick):
        data = b.binary_path.read_bytes()
        assert data.startswith(b"\x7fELF") and b.entry.encode() in data
    with pytest.raises(CompileError):  # bad code is still rejected in fast-compile mode
        cb.compile_cuda_source('extern "C" __global__ void bad() { undefined_name(); }\n',
                               cb.CudaCompileOptions(arch=80, extra=fast))


def test_cpu_build_is_unchanged_by_the_cuda_block():
    """The CPU entries of a block are fenced off for CUDA only: the CPU compiler still builds the kernel."""
    out = wp.zeros(4)
    wp.launch(saxpy, 4, inputs=[2.0, wp.full(4, 1.0), out])
    assert out.numpy().tolist() == [2.0] * 4


# ---------------------------------------------------------------------------------------------------------------
# Every kernel of the test suite, for sm_80 and sm_90 (two subprocesses, each compiling half the modules for both)
# ---------------------------------------------------------------------------------------------------------------

SHARDS = 2


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_suite")
    env = dict(os.environ)
    env.pop("TREADLE_CACHE_PATH", None)
    procs = []
    for shard in range(SHARDS):
        env_s = dict(env, TREADLE_CACHE_PATH=str(out / f"cache{shard}"))
        cmd = [sys.executable, str(HERE / "compile_suite.py"), "--arch", ",".join(map(str, ARCHS)),
               "--shard", f"{shard}/{SHARDS}", "--out", str(out / f"{shard}.json")]
        procs.append((subprocess.Popen(cmd, env=env_s, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
                      out / f"{shard}.json"))
    merged = {"modules": {}, "failures": [], "cpu_too": [], "import_errors": [], "kernels": 0, "passes": 0,
              "seconds": 0.0}
    logs = []
    for p, path in procs:
        log, _ = p.communicate()
        logs.append(log)
        assert p.returncode == 0, log[-5000:]
        res = json.loads(path.read_text())
        assert res["archs"] == list(ARCHS), res["archs"]
        for key in ("failures", "cpu_too", "import_errors"):
            merged[key] += res[key]
        merged["modules"].update(res["modules"])
        merged["kernels"] += res["kernels"]
        merged["passes"] += res["passes"]
        merged["seconds"] = max(merged["seconds"], res["seconds"])
    return merged


@pytest.mark.parametrize("arch", ARCHS)
def test_every_suite_kernel_compiles_to_cubin(suite_results, arch):
    res = suite_results
    assert not res["import_errors"], res["import_errors"]
    assert res["kernels"] > 150 and res["passes"] > 250 * len(ARCHS), res
    assert "builtin_adjoint_cases" in res["modules"]
    mine = [f for f in res["failures"] if f.startswith(f"sm_{arch}:")]
    assert not mine, "\n\n".join(mine)
    print(f"sm_{arch}: {res['kernels']} kernels, {res['passes']} passes (both architectures) in {res['seconds']} s; "
          f"failing on the CPU too (not CUDA issues): {[w for w in res['cpu_too'] if w.startswith(f'sm_{arch}:')]}")


# ---------------------------------------------------------------------------------------------------------------
# Several architectures, one front end (NVRTC -> PTX once, nvJitLink per architecture)
# ---------------------------------------------------------------------------------------------------------------


@wp.kernel(module="cuda_compile_archs")
def archs_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.exp(x[i]) * wp.cos(x[i]) + 0.5


def _elf_sm(data: bytes) -> int:
    """The SM architecture a CUDA ELF is for (the low byte of ``e_flags``, at offset 48 in an ELF64 header)."""
    return struct.unpack_from("<I", data, 48)[0] & 0xFF


def _arch_batches(k, **opts):
    batches = []
    for arch in ARCHS:
        _, o, fwd = _built(k, arch=arch, **opts)
        _, _, bwd = _built(k, arch=arch, adjoint=True, **opts)
        batches.append(([fwd, bwd], o))
    return batches


def test_archs_batch_runs_the_front_end_once(monkeypatch, tmp_path):
    from treadle._src.backends.cuda import jitlink

    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))  # a cold build
    if not jitlink.jitlink_available():
        pytest.skip("nvJitLink is not installed (nvidia-nvjitlink-cu12)")
    nv = cb.get_nvrtc()
    before = nv.compile_count
    batches = _arch_batches(archs_kernel)
    cb.compile_cuda_batch_archs(batches)
    assert nv.compile_count == before + 1
    for items, o in batches:
        for b in items:
            assert b.error is None
            data = b.binary_path.read_bytes()
            assert data.startswith(b"\x7fELF") and b.entry.encode() in data and _elf_sm(data) == o.arch
            assert b.binary_path.name.endswith(f".sm{o.arch}.cubin")
    # the CUBINs are what a build for one architecture gives: same entry points, same architecture
    _, o1, alone = _built(archs_kernel, arch=90)
    cb.compile_cuda_batch([alone], o1)
    assert _elf_sm(alone.binary_path.read_bytes()) == 90


def test_archs_batch_without_nvjitlink_compiles_per_architecture(monkeypatch, tmp_path):
    from treadle._src.backends.cuda import jitlink

    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(jitlink, "jitlink_available", lambda: False)
    nv = cb.get_nvrtc()
    before = nv.compile_count
    batches = _arch_batches(archs_kernel)
    cb.compile_cuda_batch_archs(batches)
    assert nv.compile_count == before + len(ARCHS)
    for items, o in batches:
        assert all(b.error is None and _elf_sm(b.binary_path.read_bytes()) == o.arch for b in items)


def test_archs_batch_keeps_a_bad_kernel_to_itself(monkeypatch, tmp_path):
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    batches = []
    for arch in ARCHS:
        _, o, good = _built(grid2, arch=arch)
        _, _, bad = _built(saxpy, arch=arch)
        bad.cblock.block = bad.block = bad.block.replace("TREADLE_THREAD(_flat)", "TREADLE_THREAD(_flat) nope();", 1)
        bad.key = f"{arch}" * 32
        batches.append(([good, bad], o))
    cb.compile_cuda_batch_archs(batches)
    for (good, bad), o in batches:
        assert good.error is None and _elf_sm(good.binary_path.read_bytes()) == o.arch
        assert isinstance(bad.error, CompileError)


def test_archs_batch_refuses_lists_that_differ():
    _, o80, a = _built(archs_kernel, arch=80)
    _, o90, b = _built(archs_kernel, arch=90)
    _, _, c = _built(grid2, arch=90)
    with pytest.raises(ValueError, match="same kernel passes"):
        cb.compile_cuda_batch_archs([([a], o80), ([b, c], o90)])
    with pytest.raises(ValueError, match="same kernel passes"):
        cb.compile_cuda_batch_archs([([a], o80), ([c], o90)])


def test_ptx_the_assembler_rejects_is_a_compile_error():
    from treadle._src.backends.cuda import jitlink

    if not jitlink.jitlink_available():
        pytest.skip("nvJitLink is not installed (nvidia-nvjitlink-cu12)")
    with pytest.raises(CompileError, match="sm_90"):
        jitlink.ptx_to_cubin(b".version 8.0\n.target sm_80\n.address_size 64\nnot ptx at all\n\0", 90, "bad.ptx")
