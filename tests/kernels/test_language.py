"""Language features end to end on every device, checked against NumPy / Python references."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.func
def sq(x: float):
    return x * x


@wp.func
def add_default(a: float, b: float = 2.0) -> float:
    return a + b


@wp.func
def overloaded(a: float) -> float:
    return a * 10.0


@wp.func
def overloaded(a: int) -> int:  # noqa: F811 - a second overload, selected by argument type
    return a * 100


@wp.func
def divmod_pair(a: int, b: int):
    return a // b, a % b


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def funcs_kernel(out: wp.array(dtype=float), iout: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = sq(float(i)) + add_default(1.0) + add_default(1.0, b=float(i)) + overloaded(1.0)
    q, r = divmod_pair(i - 3, 2)
    iout[i] = overloaded(i) + q * 1000 + r


@wp.kernel
def control(out: wp.array(dtype=int)):
    i = wp.tid()
    total = 0
    for k in range(i):
        if k == 3:
            continue
        if k > 6:
            break
        total += k
    j = 10
    while j > 0:
        j -= 3
        if j == 4:
            continue
        total += 1
    for k in range(10, 0, -2):
        total += k
    for k in reversed(range(3)):
        total = total * 2 + k
    out[i] = total if i % 2 == 0 else -total


def control_ref(i: int) -> int:
    total = 0
    for k in range(i):
        if k == 3:
            continue
        if k > 6:
            break
        total += k
    j = 10
    while j > 0:
        j -= 3
        if j == 4:
            continue
        total += 1
    for k in range(10, 0, -2):
        total += k
    for k in reversed(range(3)):
        total = total * 2 + k
    return total if i % 2 == 0 else -total


@wp.kernel
def c_semantics(a: wp.array(dtype=int), b: wp.array(dtype=int), q: wp.array(dtype=int), r: wp.array(dtype=int),
                fr: wp.array(dtype=float)):
    i = wp.tid()
    q[i] = a[i] / b[i]
    r[i] = a[i] % b[i]
    fr[i] = float(a[i]) % float(b[i])


@wp.kernel
def grid2d(out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = float(i * 10 + j)


@wp.kernel
def grid4d(out: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = ((i * 3 + j) * 4 + k) * 5 + l


@wp.kernel
def bool_ops(x: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    n = x.shape[0]
    # short-circuit: must not read x[i + 1] past the end
    if i + 1 < n and x[i + 1] > x[i]:
        out[i] = 1
    elif not (x[i] > 2) or x[i] == 7:
        out[i] = 2
    else:
        out[i] = 3
    out[i] = out[i] * 10 + (5 if 1 < x[i] <= 4 else 6)


@wp.kernel
def bitwise(x: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    v = x[i]
    out[i] = ((v & 6) | (v << 2)) ^ (v >> 1) + (~v)


def test_saxpy(device):
    n = 1000
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    x = wp.array(xs, dtype=float, device=device)
    y = wp.array(ys, dtype=float, device=device)
    wp.launch(saxpy, dim=n, inputs=[x, y, 2.5], device=device)
    np.testing.assert_allclose(y.numpy(), 2.5 * xs + ys, rtol=1e-6, atol=1e-6)


def test_funcs_defaults_overloads_tuples(device):
    n = 8
    out = wp.zeros(n, dtype=float, device=device)
    iout = wp.zeros(n, dtype=int, device=device)
    wp.launch(funcs_kernel, dim=n, inputs=[out, iout], device=device)
    i = np.arange(n)
    np.testing.assert_allclose(out.numpy(), i * i + 3.0 + (1.0 + i) + 10.0)
    a = i - 3
    q = a // 2  # floor division, as the reference does for ints
    r = np.fmod(a, 2)  # C remainder
    np.testing.assert_array_equal(iout.numpy(), i * 100 + q * 1000 + r)


def test_control_flow(device):
    n = 12
    out = wp.zeros(n, dtype=int, device=device)
    wp.launch(control, dim=n, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [control_ref(i) for i in range(n)])


def test_c_style_division_and_modulo(device):
    a_np = np.array([7, -7, 7, -7, 0, 5], dtype=np.int32)
    b_np = np.array([2, 2, -2, -2, 3, 5], dtype=np.int32)
    a, b = wp.array(a_np, device=device), wp.array(b_np, device=device)
    q, r = wp.zeros(6, dtype=int, device=device), wp.zeros(6, dtype=int, device=device)
    fr = wp.zeros(6, dtype=float, device=device)
    wp.launch(c_semantics, dim=6, inputs=[a, b, q, r, fr], device=device)
    np.testing.assert_array_equal(q.numpy(), np.trunc(a_np / b_np).astype(int))
    np.testing.assert_array_equal(r.numpy(), np.fmod(a_np, b_np))
    np.testing.assert_allclose(fr.numpy(), np.fmod(a_np.astype(np.float32), b_np.astype(np.float32)))


def test_multidim_launch(device):
    out = wp.zeros((3, 4), dtype=float, device=device)
    wp.launch(grid2d, dim=(3, 4), inputs=[out], device=device)
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(out.numpy(), i * 10 + j)
    out4 = wp.zeros((2, 3, 4, 5), dtype=int, device=device)
    wp.launch(grid4d, dim=(2, 3, 4, 5), inputs=[out4], device=device)
    np.testing.assert_array_equal(out4.numpy().reshape(-1), np.arange(2 * 3 * 4 * 5))


def test_boolean_short_circuit(device):
    xs = np.array([1, 5, 3, 7, 2, 9, 4], dtype=np.int32)
    x = wp.array(xs, device=device)
    out = wp.zeros(len(xs), dtype=int, device=device)
    wp.launch(bool_ops, dim=len(xs), inputs=[x, out], device=device)
    ref = []
    for i in range(len(xs)):
        if i + 1 < len(xs) and xs[i + 1] > xs[i]:
            v = 1
        elif not (xs[i] > 2) or xs[i] == 7:
            v = 2
        else:
            v = 3
        ref.append(v * 10 + (5 if 1 < xs[i] <= 4 else 6))
    np.testing.assert_array_equal(out.numpy(), ref)


def test_bitwise(device):
    xs = np.array([0, 1, 5, -3, 1234567], dtype=np.int32)
    x = wp.array(xs, device=device)
    out = wp.zeros(len(xs), dtype=int, device=device)
    wp.launch(bitwise, dim=len(xs), inputs=[x, out], device=device)
    ref = ((xs & 6) | (xs << 2)) ^ ((xs >> 1) + (~xs))
    np.testing.assert_array_equal(out.numpy(), ref)


def test_numpy_arrays_passed_directly(device):
    if device != "cpu":
        pytest.skip("NumPy arrays are CPU memory")
    xs = np.arange(5, dtype=np.float32)
    ys = np.ones(5, dtype=np.float32)
    wp.launch(saxpy, dim=5, inputs=[xs, ys, 3.0])
    np.testing.assert_allclose(ys, 3.0 * xs + 1.0)


@wp.kernel
def slicing(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    row = a[1]
    tail = a[0, 1:]
    rev = a[2, ::-1]
    col = a[:, 2]
    sub = a[1:, ::2]
    out[0] = row[2] + tail[0] + rev[0] + col[1] + sub[1, 1]
    out[1] = float(tail.shape[0] * 100 + rev.shape[0] * 10 + sub.shape[1])
    s = wp.lower_bound(col, 5.0)
    out[2] = float(s)


@wp.kernel
def null_array(a: wp.array(dtype=float), out: wp.array(dtype=int)):
    if a:
        out[0] = 1
    else:
        out[0] = 2


def test_array_slicing_in_kernels(device):
    an = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(slicing, dim=1, inputs=[wp.array(an, device=device), out], device=device)
    ref = an[1][2] + an[0, 1:][0] + an[2, ::-1][0] + an[:, 2][1] + an[1:, ::2][1, 1]
    np.testing.assert_allclose(out.numpy(), [ref, 3 * 100 + 4 * 10 + 2, np.searchsorted(an[:, 2], 5.0)])


def test_array_truthiness(device):
    out = wp.zeros(1, dtype=int, device=device)
    wp.launch(null_array, dim=1, inputs=[None, out], device=device)
    assert out.numpy()[0] == 2
    wp.launch(null_array, dim=1, inputs=[wp.zeros(1, dtype=float, device=device), out], device=device)
    assert out.numpy()[0] == 1


@wp.kernel
def local_arrays(out: wp.array(dtype=float)):
    a = wp.zeros(shape=(4,), dtype=float)
    for i in range(out.shape[0] - 1):
        a[i] = float(i) * 2.0
    out[0] = a[3] + float(a.shape[0]) + a[2]
    m = wp.zeros(shape=(2, 3), dtype=wp.vec2)
    m[1, 2] = wp.vec2(1.0, 5.0)
    out[1] = m[1, 2][1] + m[0, 0][0]


def test_kernel_local_arrays(device):
    out = wp.zeros(4, dtype=float, device=device)
    wp.launch(local_arrays, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy()[:2], [0.0 + 4.0 + 4.0, 5.0])


@wp.kernel
def bit_casts(out: wp.array(dtype=float), iout: wp.array(dtype=int)):
    x = wp.int32(0x3FA00000)
    out[0] = wp.cast(x, wp.float32)
    iout[0] = wp.cast(1.0, wp.int32)
    out[1] = wp.float(2) + wp.float(wp.int(3.7))


def test_bit_cast_and_scalar_aliases(device):
    out = wp.zeros(2, dtype=float, device=device)
    iout = wp.zeros(1, dtype=int, device=device)
    wp.launch(bit_casts, dim=1, inputs=[out, iout], device=device)
    np.testing.assert_allclose(out.numpy(), [1.25, 5.0])
    assert iout.numpy()[0] == np.float32(1.0).view(np.int32)


@wp.kernel
def cpp_keyword_names(const: wp.array(dtype=float), double: float, template: int):
    i = wp.tid()
    auto = const[i] * double
    const[i] = auto + float(template)


def test_parameter_and_variable_names_that_are_cpp_keywords(device):
    a = wp.ones(3, dtype=float, device=device)
    wp.launch(cpp_keyword_names, dim=3, inputs=[a, 2.0, 5], device=device)
    np.testing.assert_allclose(a.numpy(), [7.0] * 3)


@wp.kernel
def bf16_roundtrip(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    b = wp.bfloat16(x[i])
    out[i] = float(b)


def test_bfloat16_conversions(device):
    xs = np.array([1.0, -2.5, 3.14159, 1e-3], dtype=np.float32)
    out = wp.zeros(4, dtype=float, device=device)
    wp.launch(bf16_roundtrip, dim=4, inputs=[wp.array(xs, device=device), out], device=device)
    expected = [wp.bfloat16(float(v)).value for v in xs]  # host rounding: nearest even on 8 mantissa bits
    np.testing.assert_array_equal(out.numpy(), np.array(expected, dtype=np.float32))
    assert expected[2] == 3.140625
