"""How load gradients are accumulated: plain adds at the thread's own index, atomics everywhere else.

A load ``x[i]`` whose index is the thread index (and whose array is used no other way) is the only access to that
gradient element, so its adjoint is a plain add; aliasing or overlapping gradient buffers are detected at run time
and fall back to atomics. Every case is compared with NumPy float64 references on several threads.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.compiler import emit_adjoint


@wp.kernel
def sq_loss(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    d = wp.sin(x[i]) - y[i]
    wp.atomic_add(out, 0, d * d)


@wp.kernel
def pair_product(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * b[i]


@wp.kernel
def neighbour(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    j = wp.min(i + 1, x.shape[0] - 1)
    out[i] = x[i] * x[j]


@wp.kernel
def transpose_scale(x: wp.array2d(dtype=float), s: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = x[j, i] * s[i, j] * s[i, j]


@wp.kernel
def row_sum(x: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(out, i, x[i, 0] * float(j + 1))


@pytest.mark.parametrize("nt", [1, 2, 4])
def test_loss_gradient_matches_numpy_on_several_threads(nt):
    n = 300_000
    rng = np.random.default_rng(7)
    xn, yn = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    y = wp.array(yn, dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.config.override(num_threads=nt):
        with wp.Tape() as tape:
            wp.launch(sq_loss, n, inputs=[x, y, out])
        tape.backward(loss=out)
    x64, y64 = xn.astype(np.float64), yn.astype(np.float64)
    d = np.sin(x64) - y64
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * d * np.cos(x64), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), -2.0 * d, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nt", [2, 4])
def test_overlapping_views_fall_back_to_atomics(nt):
    # a = x[:n] and b = x[h:h + n] share gradient elements across threads: x.grad[i + h] gets adds from thread i
    # (through b) and from thread i + h (through a), which run at the same time; plain adds would lose updates.
    n, h = 400_000, 200_000
    xn = np.random.default_rng(3).random(n + h)
    x = wp.array(xn, dtype=float, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    ref = np.zeros(n + h)
    ref[:n] += xn[h:]
    ref[h:] += xn[:n]
    with wp.config.override(num_threads=nt):
        for _ in range(3):
            x.grad.zero_()
            with wp.Tape() as tape:
                wp.launch(pair_product, n, inputs=[x[:n], x[h:h + n], out])
            tape.backward(grads={out: np.ones(n, dtype=np.float32)})
            np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-5)


def test_same_array_twice():
    n = 100_000
    xn = np.random.default_rng(5).random(n).astype(np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    with wp.config.override(num_threads=2):
        with wp.Tape() as tape:
            wp.launch(pair_product, n, inputs=[x, x, out])
        tape.backward(grads={out: np.ones(n, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xn, rtol=1e-6)


def test_strided_view_gradient():
    n = 200_000
    base_np = np.random.default_rng(6).random(2 * n).astype(np.float32)
    base = wp.array(base_np, dtype=float, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    ones = wp.array(np.full(n, 3.0, dtype=np.float32), dtype=float)
    with wp.config.override(num_threads=2):
        with wp.Tape() as tape:
            wp.launch(pair_product, n, inputs=[base[::2], ones, out])
        tape.backward(grads={out: np.ones(n, dtype=np.float32)})
    g = base.grad.numpy()
    np.testing.assert_allclose(g[::2], 3.0)
    np.testing.assert_array_equal(g[1::2], 0.0)


def test_other_index_uses_atomics():
    n = 200_001
    xn = np.random.default_rng(8).random(n)
    x = wp.array(xn, dtype=float, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    with wp.config.override(num_threads=2):
        with wp.Tape() as tape:
            wp.launch(neighbour, n, inputs=[x, out])
        tape.backward(grads={out: np.ones(n, dtype=np.float32)})
    j = np.minimum(np.arange(n) + 1, n - 1)
    ref = np.zeros(n)
    np.add.at(ref, np.arange(n), xn[j])
    np.add.at(ref, j, xn)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-5)


def test_two_dimensional_launch():
    rng = np.random.default_rng(9)
    xn = rng.random((64, 48)).astype(np.float32)
    sn = rng.random((48, 64)).astype(np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    s = wp.array(sn, dtype=float, requires_grad=True)
    out = wp.zeros((48, 64), dtype=float, requires_grad=True)
    with wp.config.override(num_threads=2):
        with wp.Tape() as tape:
            wp.launch(transpose_scale, (48, 64), inputs=[x, s, out])
        tape.backward(grads={out: np.ones((48, 64), dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), (sn * sn).T, rtol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), 2.0 * sn * xn.T, rtol=1e-5)


def test_partial_index_is_not_own():
    # x[i, 0] in a 2-d launch is read by every j: its gradient needs atomics.
    xn = np.random.default_rng(10).random((300, 2)).astype(np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    out = wp.zeros(300, dtype=float, requires_grad=True)
    with wp.config.override(num_threads=2):
        with wp.Tape() as tape:
            wp.launch(row_sum, (300, 500), inputs=[x, out])
        tape.backward(grads={out: np.ones(300, dtype=np.float32)})
    ref = np.zeros((300, 2))
    ref[:, 0] = 500 * 501 / 2
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6)


@wp.kernel
def guarded(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if i < x.shape[0] and i < len(y):
        y[i] = x[i] * 2.0


def test_analysis_finds_own_index_arrays():
    def own(kernel, dim, *args) -> list[str]:
        wp.launch(kernel, dim, inputs=list(args))
        inst = next(iter(kernel.instances.values()))
        return sorted({p.name for p in emit_adjoint.own_index_arrays(inst.ir).values()})

    v = [wp.zeros(4, dtype=float) for _ in range(3)]
    m = [wp.zeros((4, 4), dtype=float) for _ in range(3)]
    assert own(sq_loss, 4, *v) == ["x", "y"]  # out is updated atomically
    assert own(pair_product, 4, *v) == ["a", "b", "out"]
    assert own(neighbour, 4, v[0], v[1]) == ["out"]  # x[j] with j != i
    assert own(transpose_scale, (4, 4), *m) == ["out", "s", "x"]
    assert own(row_sum, (4, 4), m[0], v[0]) == []
    assert own(guarded, 4, v[0], v[1]) == ["x", "y"]  # shape queries do not count as element accesses


def test_backward_entry_runs_the_own_instantiation_only_after_its_test():
    # the entry tests every own-index array (no gradient, or injective and apart from the others) before it runs
    # the `_own` body, whose load gradients are plain adds; anything else keeps the per-array flags
    from treadle._src.compiler.pipeline import emit_adjoint_block

    v = [wp.zeros(4, dtype=float) for _ in range(3)]
    wp.launch(pair_product, 4, inputs=v)
    inst = next(iter(pair_product.instances.values()))
    block, _ = emit_adjoint_block(inst.ir, [])
    own_test = next(line for line in block.splitlines() if "treadle::grad_absent(args.p_a) ||" in line)
    for name in ("a", "b", "out"):
        assert f"(treadle::grad_absent(args.p_{name}) || (treadle::grad_own<1>(args.p_{name})" in own_test
    assert "kernel_backward_body<true, false, true>" in block
    assert "const bool _own_a = _own || (treadle::grad_own<1>(var_a)" in block


@pytest.mark.parametrize("nt", [1, 2, 4])
def test_own_path_with_an_input_without_gradient(nt):
    # y has no gradient buffer: the `_own` body still runs for x (and y's adds are skipped)
    n = 250_001
    rng = np.random.default_rng(11)
    xn, yn = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    x = wp.array(xn, dtype=float, requires_grad=True)
    y = wp.array(yn, dtype=float)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    seed = rng.random(n).astype(np.float32)
    with wp.config.override(num_threads=nt):
        for _ in range(2):  # the second backward adds the same gradient again
            with wp.Tape() as tape:
                wp.launch(pair_product, n, inputs=[x, y, out])
            tape.backward(grads={out: seed})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * seed.astype(np.float64) * yn, rtol=1e-6)
    assert y.grad is None


def test_backward_pass_uses_the_loop_compiler():
    # g++ vectorizes the reverse sweep of elementwise kernels where clang++ 14 does not (backends/cpu/build.py: adjoint_options)
    from treadle._src.runtime.native import get_native_compiler

    v = [wp.zeros(4, dtype=float, requires_grad=True) for _ in range(3)]
    with wp.Tape() as tape:
        wp.launch(pair_product, 4, inputs=v)
    tape.backward(grads={v[2]: np.ones(4, dtype=np.float32)})
    inst = next(iter(pair_product.instances.values()))
    loop_cxx = get_native_compiler().loop_compiler()
    assert inst.backward_options().cxx == (inst.options.cxx or loop_cxx)
    np.testing.assert_array_equal(v[0].grad.numpy(), 0.0)  # b is zero
