"""Streaming (non-temporal) stores for outputs written once per thread (compiler/streaming.py, launch.h).

Streaming is opt-in (``wp.config.stream_stores``) and real launches only stream outputs of 64 MB and more; these
tests turn it on and compile the kernels with the threshold at 0 so that small arrays take the streaming path, and
compare with NumPy exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.compiler.pipeline import emit_kernel_block
from treadle._src.compiler.streaming import streamed_output


@wp.kernel
def triad(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = b[i] + s * c[i]


@wp.kernel
def scale3(out: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), n: wp.array(dtype=wp.float64),
           m: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = v[i] * 2.0
    m[i] = n[i] + wp.float64(len(out))  # two candidates: neither is streamed


@wp.kernel
def scale_only(out: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    j = tid
    out[j] = v[tid] * 2.0 + wp.vec3(float(len(out)), 0.0, 0.0)


@wp.kernel
def conditional(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    if b[i] > 0.5:
        a[i] = b[i]


@wp.kernel
def shifted(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    a[(i + 1) % len(b)] = b[i]


@wp.kernel
def reads_output(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = b[i] + a[i]


@wp.kernel
def indexed_out(a: wp.indexedarray(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = b[i]


@wp.kernel
def early_return(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    if b[i] < 0.1:
        return
    a[i] = b[i]


def _ir(k):
    inst = k.get_instance(None)
    return inst.ir, inst.deps


def test_which_outputs_are_streamed():
    assert streamed_output(_ir(triad)[0]).name == "a"
    assert streamed_output(_ir(scale_only)[0]).name == "out"
    for k in (scale3, conditional, shifted, reads_output, early_return, indexed_out):
        assert streamed_output(_ir(k)[0]) is None, k.key
    with wp.config.override(stream_stores=True):
        assert "launch_loop_streamed" in emit_kernel_block(*_ir(triad))[0]
        assert "launch_loop_streamed" not in emit_kernel_block(*_ir(conditional))[0]
    assert "launch_loop_streamed" not in emit_kernel_block(*_ir(triad))[0]  # off by default


@pytest.fixture
def stream_everything():
    """Fresh kernels compiled with the streaming threshold at 0 (compile flags are fixed when a kernel is built)."""
    flags = ["-DTREADLE_STREAM_MIN_BYTES=0"]
    with wp.config.override(stream_stores=True, cpu_compiler_flags=flags, num_threads=2):

        @wp.kernel
        def triad0(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), s: float):
            i = wp.tid()
            a[i] = b[i] + s * c[i]

        @wp.kernel
        def scale0(out: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
            i = wp.tid()
            out[i] = v[i] * 2.0 + wp.vec3(float(len(out)), 0.0, 0.0)

        yield triad0, scale0


@pytest.mark.parametrize("n,offset", [(300_001, 0), (300_000, 3), (5000, 1), (100, 0)])
def test_triad_streamed_matches_numpy(stream_everything, n, offset):
    rng = np.random.default_rng(n + offset)
    b_np, c_np = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    base = wp.full(n + offset, -7.0, dtype=float)
    a = base[offset:]  # dense, but its first element is not on a 64-byte boundary when offset > 0
    wp.launch(stream_everything[0], n, inputs=[a, wp.array(b_np), wp.array(c_np), 1.5])
    np.testing.assert_array_equal(a.numpy(), b_np + np.float32(1.5) * c_np)
    assert (base.numpy()[:offset] == -7.0).all()  # nothing written before the output


def test_in_place_and_twelve_byte_elements(stream_everything):
    n = 262_147
    rng = np.random.default_rng(3)
    x_np, c_np = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    x = wp.array(x_np)
    triad0, scale0 = stream_everything
    wp.launch(triad0, n, inputs=[x, x, wp.array(c_np), 2.0])  # the output is also an input, element by element
    np.testing.assert_array_equal(x.numpy(), x_np + np.float32(2.0) * c_np)
    v_np = rng.random((n, 3), dtype=np.float32)
    out = wp.zeros(n + 1, dtype=wp.vec3)[1:]
    wp.launch(scale0, n, inputs=[out, wp.array(v_np, dtype=wp.vec3)])
    ref = v_np * np.float32(2.0)
    ref[:, 0] += np.float32(n)
    np.testing.assert_array_equal(out.numpy(), ref)


def test_strided_output_takes_the_plain_path(stream_everything):
    n = 200_000
    b_np = np.arange(n, dtype=np.float32)
    full = wp.zeros(2 * n, dtype=float)
    wp.launch(stream_everything[0], n, inputs=[full[::2], wp.array(b_np), wp.array(np.ones(n, np.float32)), 1.0])
    got = full.numpy()
    np.testing.assert_array_equal(got[::2], b_np + 1.0)
    assert not got[1::2].any()
