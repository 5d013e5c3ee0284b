"""Index bounds: indices proven non-negative skip the wrap of negative indices (compiler/index_bounds.py).

Two sides: the generated C++ wraps exactly the indices that may be negative (a stencil's shifted thread indices are
not wrapped, a decremented parameter is), and kernels mixing both kinds give NumPy's results, negative indices
counting from the end, forward and backward.
"""

from __future__ import annotations

import numpy as np

import treadle as wp
from treadle._src.compiler import index_bounds
from treadle._src.compiler.pipeline import emit_backward, emit_kernel_block


@wp.kernel(module="unique")
def stencil(u: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    i += 1
    j += 1
    k += 1
    out[i, j, k] = u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j, k + 1] - 4.0 * u[i, j, k]


@wp.kernel(module="unique")
def shifted_down(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i - 1]  # thread 0 reads the last element


@wp.kernel(module="unique")
def loops(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.float32(0.0)
    for j in range(len(a)):  # counter from 0: no wrap
        s += a[j]
    for j in range(len(a) - 1, -1, -1):  # counting down to 0: no wrap
        s += a[j] * 2.0
    m = n  # a parameter: may be negative
    while m > -3:
        s += a[m] * 100.0
        m -= 1
    r = i
    for _ in range(3):
        r = r - 1  # decreases every round: given up on, wrapped
    s += a[r] * 1000.0
    out[i] = s


@wp.kernel(module="unique")
def branches(a: wp.array(dtype=float), flag: int, out: wp.array(dtype=float)):
    i = wp.tid()
    k = i
    if flag > 0:
        k = i + 2
    else:
        k = i - 1  # one branch may go negative: the merge is not proven
    out[i] = a[k] + a[wp.max(k, 0)] * 10.0 + a[wp.min(i, 3) % 2] * 100.0


def _instance(k):
    inst = k.get_instance(None)
    return inst.ir, inst.deps


def _wraps(k) -> int:
    return emit_kernel_block(*_instance(k))[0].count("treadle::wrap_index(")


def test_stencil_indices_are_proven():
    f, _ = _instance(stencil)
    assert _wraps(stencil) == 0
    assert index_bounds.nonneg_values(f)


def test_indices_that_may_be_negative_are_wrapped():
    assert _wraps(shifted_down) == 1
    src = emit_kernel_block(*_instance(loops))[0]
    assert src.count("treadle::wrap_index(") == 2  # a[m] and a[r]; both range counters are proven
    assert _wraps(branches) == 1  # a[k]; max(k, 0) and min(i, 3) % 2 are proven


def test_backward_pass_wraps_the_same_indices():
    f, deps = _instance(shifted_down)
    assert "treadle::wrap_index(" in emit_backward(f, deps, "shifted_down")[0]
    f, deps = _instance(stencil)
    assert "treadle::wrap_index(" not in emit_backward(f, deps, "stencil")[0]


def test_results_match_numpy():
    rng = np.random.default_rng(3)
    u = rng.standard_normal((6, 7, 8)).astype(np.float32)
    out = wp.zeros(u.shape, dtype=float)
    wp.launch(stencil, dim=(4, 5, 6), inputs=[wp.array(u), out])
    c = u[1:-1, 1:-1, 1:-1]
    ref = np.zeros_like(u)
    ref[1:-1, 1:-1, 1:-1] = u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 1:-1, 2:] - 4 * c
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)

    a = np.arange(10, dtype=np.float32) + 1.0
    got = wp.zeros(10, dtype=float)
    wp.launch(shifted_down, dim=10, inputs=[wp.array(a), got])
    np.testing.assert_array_equal(got.numpy(), np.roll(a, 1))

    for n in (4, -1):
        out = wp.zeros(10, dtype=float)
        wp.launch(loops, dim=10, inputs=[wp.array(a), n, out])
        ref = np.array([a.sum() * 3 + 100 * sum(a[m] for m in range(n, -3, -1)) + 1000 * a[i - 3]
                        for i in range(10)], dtype=np.float64)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)

    for flag in (1, 0):
        out = wp.zeros(8, dtype=float)
        wp.launch(branches, dim=8, inputs=[wp.array(a), flag, out])
        ks = [i + 2 if flag > 0 else i - 1 for i in range(8)]
        ref = [a[k] + 10 * a[max(k, 0)] + 100 * a[min(i, 3) % 2] for i, k in zip(range(8), ks)]
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)


def test_gradient_of_a_wrapped_read():
    a = wp.array(np.arange(5, dtype=np.float32), requires_grad=True)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(shifted_down, dim=5, inputs=[a, out])
    tape.backward(grads={out: wp.array(np.array([1, 2, 3, 4, 5], dtype=np.float32))})
    # out[i] = a[i - 1]: a[j] receives out's gradient at j + 1 (the last element from thread 0)
    np.testing.assert_array_equal(a.grad.numpy(), [2, 3, 4, 5, 1])
