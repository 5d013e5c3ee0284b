"""Kernels with run-time loops are built by the loop compiler (g++ next to a default clang++); results unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.runtime.native import get_native_compiler


@wp.kernel
def pair_sum(pos: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), n: int):
    i = wp.tid()
    p = pos[i]
    a = wp.vec3(0.0, 0.0, 0.0)
    for j in range(n):
        d = pos[j] - p
        inv = 1.0 / wp.sqrt(wp.dot(d, d) + 0.01)
        a = a + d * (inv * inv * inv)
    acc[i] = a


@wp.kernel
def no_loop(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def test_loop_kernel_compiler_and_results():
    n = 300
    pos_np = np.random.default_rng(7).random((n, 3), dtype=np.float32)
    pos, acc = wp.array(pos_np, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)
    wp.launch(pair_sum, n, inputs=[pos, acc, n])
    p = pos_np.astype(np.float64)
    d = p[None, :, :] - p[:, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(-1) + 0.01)
    want = (d * (inv**3)[..., None]).sum(1)
    np.testing.assert_allclose(acc.numpy(), want, rtol=2e-4, atol=2e-3)

    x = wp.array(np.arange(10, dtype=np.float32), dtype=float)
    y = wp.zeros(10, dtype=float)
    wp.launch(no_loop, 10, inputs=[x, y])
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(10))

    backend = get_native_compiler()
    loop_cxx = backend.loop_compiler()
    if loop_cxx is None:
        pytest.skip("no separate loop compiler here (compiler configured, or clang++ is not the default)")
    assert pair_sum.get_instance(None).options.cxx == loop_cxx
    assert no_loop.get_instance(None).options.cxx is None
    assert "g++" in backend.toolchain(pair_sum.get_instance(None).options).path


def test_loop_compiler_failure_falls_back_to_the_default(monkeypatch):
    backend = get_native_compiler()
    if backend.loop_compiler() is None:
        pytest.skip("no separate loop compiler here")
    monkeypatch.setattr(backend, "_loop_cxx", "false")  # a "compiler" that always fails

    @wp.kernel(module="unique")
    def row_sums(m: wp.array2d(dtype=float), out: wp.array(dtype=float), n: int):
        i = wp.tid()
        s = 0.0
        for j in range(n):
            s += m[i, j] * float(j + 1)
        out[i] = s

    m = np.random.default_rng(2).random((7, 5)).astype(np.float32)
    out = wp.zeros(7, dtype=float)
    wp.launch(row_sums, 7, inputs=[wp.array(m, dtype=float), out, 5])
    np.testing.assert_allclose(out.numpy(), m.astype(np.float64) @ np.arange(1, 6), rtol=1e-5)
    assert row_sums.get_instance(None).options.cxx is None


def test_backward_pass_falls_back_to_the_forward_compiler(monkeypatch):
    # backward passes go to the loop compiler too (backends/cpu/build.py: adjoint_options); when it fails, the forward's compiler
    backend = get_native_compiler()
    if backend.loop_compiler() is None:
        pytest.skip("no separate loop compiler here")

    @wp.kernel(module="unique")
    def cube(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * x[i] * x[i]

    xn = np.linspace(-2.0, 2.0, 9).astype(np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    y = wp.zeros(9, dtype=float, requires_grad=True)
    # a "compiler" that always fails; set before the launch, which builds the backward pass with the forward (the
    # module loads under a tape): that build fails quietly and the backward pass is built again at backward()
    monkeypatch.setattr(backend, "_loop_cxx", "false")
    with wp.Tape() as tape:
        wp.launch(cube, 9, inputs=[x, y])  # the forward is built by the default compiler (no loops)
    tape.backward(grads={y: np.ones(9, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * xn.astype(np.float64) ** 2, rtol=1e-6)
    inst = cube.get_instance(None)
    assert inst.options.cxx is None and inst.backward_options().cxx is None
