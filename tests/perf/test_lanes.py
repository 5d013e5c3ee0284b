"""Thread loops vectorized with threads as lanes: kernels whose loops have launch-constant ranges.

The ``_nonempty`` body (compiler/uniform.py, native/launch.h ``launch_loop_lanes``) enters those loops without an
entry test, so the launch must only pick it when every such range is non-empty; and a lane must compute exactly what
the scalar body computes (the results may not depend on vectorization, the thread split or the path taken).
"""

from __future__ import annotations

import numpy as np
import pytest

# the all-pairs sum of the n-body benchmark: for j in range(n), n an argument
from test_compiler_choice import pair_sum as nbody  # a sibling test module (pytest's rootdir import)

import treadle as wp
from treadle._src.compiler.pipeline import emit_kernel_block
from treadle._src.compiler.uniform import uniform_ranges


@wp.kernel
def shapes(x: wp.array(dtype=float), out: wp.array(dtype=float), lo: int, n: int):
    i = wp.tid()
    s = float(0.0)  # noqa: UP018 - a dynamic variable in Warp's rules
    for j in range(lo, n - 1):  # may be empty for some launches: the entry must test it
        s += x[j] * float(j + 1)
    for j in range(x.shape[0] - 1, -1, -2):  # a negative step
        if j % 3 == 0:
            continue
        s += 0.5 * x[j]
    for j in range(len(x)):
        if x[j] > 0.75 + 0.1 * float(i % 3):
            break
        s -= x[j]
    for j in range(3, n, 2):  # nested launch-constant loops
        for k in range(n - j):
            s += x[k] * x[j]
    out[i] = s + x[i]


@wp.kernel
def reassigned(x: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    n = n - 5  # no longer the argument: its range is per-thread data for the analysis
    s = float(0.0)  # noqa: UP018 - a dynamic variable in Warp's rules
    for j in range(n):
        s += x[j]
    for j in range(i % 4):  # depends on the thread
        s += 1.0
    out[i] = s


def _shapes_ref(x: np.ndarray, m: int, lo: int, n: int) -> np.ndarray:
    out = np.zeros(m, np.float32)
    for i in range(m):
        s = np.float32(0)
        for j in range(lo, n - 1):
            s = np.float32(s + x[j] * np.float32(j + 1))
        for j in range(len(x) - 1, -1, -2):
            if j % 3:
                s = np.float32(s + np.float32(0.5) * x[j])
        for j in range(len(x)):
            if x[j] > np.float32(0.75 + 0.1 * float(i % 3)):
                break
            s = np.float32(s - x[j])
        for j in range(3, n, 2):
            for k in range(n - j):
                s = np.float32(s + x[k] * x[j])
        out[i] = s + x[i]
    return out


def _instance_ir(k):
    inst = k.get_instance(None)
    return inst.ir, inst.deps


def test_analysis_finds_launch_constant_ranges():
    tests = sorted(uniform_ranges(_instance_ir(shapes)[0]).values())
    assert len(tests) == 4  # not range(n - j): j changes from one iteration of the outer loop to the next
    assert any("args.p_lo" in t and "args.p_n" in t for t in tests)
    assert any(".shape[0]" in t and ">" in t for t in tests)  # the negative step compares the other way
    assert len(uniform_ranges(_instance_ir(nbody)[0])) == 1
    assert uniform_ranges(_instance_ir(reassigned)[0]) == {}


def test_lanes_entry_is_emitted_only_with_launch_constant_ranges():
    block = emit_kernel_block(*_instance_ir(nbody))[0]
    assert "launch_loop_lanes" in block and "kernel_body<true, true>" in block
    assert "launch_loop_lanes" not in emit_kernel_block(*_instance_ir(reassigned))[0]


@pytest.mark.parametrize("n", [0, 1, 17, 1003])
def test_nbody_lanes_match_the_scalar_body_bit_for_bit(n):
    m = max(n, 5)  # threads; the loop runs over the first n bodies
    rng = np.random.default_rng(n)
    big = rng.random((2 * m, 3), dtype=np.float32)
    dense = wp.array(big[:m], dtype=wp.vec3)
    strided = wp.array(big, dtype=wp.vec3)[::2]  # not dense: the general (scalar) path
    wp.copy(strided, dense)  # the same values in a strided layout
    results = []
    for threads, pos in [(1, dense), (2, dense), (3, dense), (2, strided)]:
        acc = wp.zeros(m, dtype=wp.vec3)
        with wp.config.override(num_threads=threads):
            wp.launch(nbody, m, inputs=[pos, acc, n])
        results.append(acc.numpy())
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes()
    p = big[:m].astype(np.float64)
    d = p[None, :n, :] - p[:, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(-1) + 0.01)
    ref = (d * (inv**3)[..., None]).sum(1)
    np.testing.assert_allclose(results[0], ref, rtol=1e-4, atol=1e-3)
    if n == 0:
        assert not results[0].any()  # the loop never ran: the launch did not take the body without entry tests


@pytest.mark.parametrize("lo,n", [(0, 12), (5, 6), (7, 3), (0, 1), (2, 40)])
def test_ranges_empty_or_not_per_launch(lo, n):
    x_np = np.random.default_rng(lo * 100 + n).random(48, dtype=np.float32)
    x = wp.array(x_np)
    ref = _shapes_ref(x_np, 48, lo, n)
    for threads in (1, 2):
        out = wp.zeros(48, dtype=float)
        with wp.config.override(num_threads=threads):
            wp.launch(shapes, 48, inputs=[x, out, lo, n])
        np.testing.assert_allclose(out.numpy(), ref, rtol=2e-6, atol=2e-6)


def test_reassigned_argument_is_not_a_launch_constant():
    x = wp.array(np.arange(1, 11, dtype=np.float32))
    out = wp.zeros(10, dtype=float)
    wp.launch(reassigned, 10, inputs=[x, out, 3])  # range(3 - 5) is empty although the argument is positive
    np.testing.assert_array_equal(out.numpy(), np.array([i % 4 for i in range(10)], np.float32))
    wp.launch(reassigned, 10, inputs=[x, out, 8])
    np.testing.assert_array_equal(out.numpy(), np.array([6.0 + i % 4 for i in range(10)], np.float32))


@wp.kernel
def matmul(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    s = float(0.0)  # noqa: UP018 - a dynamic variable in Warp's rules
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s


def test_two_dimensional_launch_lanes_over_the_inner_dimension():
    rng = np.random.default_rng(7)
    a_np, b_np = rng.random((37, 29), dtype=np.float32), rng.random((29, 45), dtype=np.float32)
    ref = np.zeros((37, 45), np.float32)
    for k in range(29):  # the kernel's order of additions, in float32
        ref = ref + a_np[:, k : k + 1] * b_np[k : k + 1, :]
    a = wp.array(a_np)
    b_strided = wp.array(np.repeat(b_np, 2, axis=1))[:, ::2]
    outs = []
    for threads, b in [(1, wp.array(b_np)), (2, wp.array(b_np)), (2, b_strided)]:
        c = wp.zeros((37, 45), dtype=float)
        with wp.config.override(num_threads=threads):
            wp.launch(matmul, (37, 45), inputs=[a, b, c])
        outs.append(c.numpy())
    for out in outs:
        np.testing.assert_array_equal(out, ref)


@wp.kernel
def blocked_sum(x: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)  # noqa: UP018 - a dynamic variable in Warp's rules
    for k in range(n / 4):  # C division of a kernel argument: as launch-constant as the argument
        for j in range(4):
            s += x[k * 4 + j] * float(i + 1)
    for k in range(n // 3, n % 5 + n // 3):
        s -= x[k]
    out[i] = s


@pytest.mark.parametrize("n", [0, 3, 4, 17, 40])
def test_ranges_bounded_by_integer_divisions(n):
    tests = list(uniform_ranges(_instance_ir(blocked_sum)[0]).values())  # range(4) itself is unrolled
    assert len(tests) == 2 and any("treadle::div(" in t for t in tests) and any("treadle::mod(" in t for t in tests)
    x_np = np.random.default_rng(n).random(48, dtype=np.float32)
    x = wp.array(x_np)
    ref = np.zeros(37, np.float32)
    for i in range(37):
        s = np.float32(0)
        for k in range(n // 4):
            for j in range(4):
                s = np.float32(s + x_np[k * 4 + j] * np.float32(i + 1))
        for k in range(n // 3, n % 5 + n // 3):
            s = np.float32(s - x_np[k])
        ref[i] = s
    strided = wp.array(np.repeat(x_np, 2))[::2]  # not dense: the scalar path
    results = []
    for threads, arr in [(1, x), (2, x), (2, strided)]:
        out = wp.zeros(37, dtype=float)
        with wp.config.override(num_threads=threads):
            wp.launch(blocked_sum, 37, inputs=[arr, out, n])
        results.append(out.numpy())
    assert all(r.tobytes() == results[0].tobytes() for r in results)  # lanes and scalar bodies agree bit for bit
    np.testing.assert_allclose(results[0], ref, rtol=1e-6, atol=1e-6)
