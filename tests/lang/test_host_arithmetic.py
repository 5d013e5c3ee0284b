"""Python-scope arithmetic on scalar values and arrays (``+s``, ``s % t``, ``s ** t``, ``arr + s``, ``s % arr``...).

References: NumPy in the same dtype (wrap-around for integers, C remainder for ``%``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import treadle as wp

INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_TYPES = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("npdt", INT_TYPES + FLOAT_TYPES)
def test_scalar_unary_mod_pow(npdt):
    w = wp.dtype_from_numpy(np.dtype(npdt))
    a = w(7)
    assert type(+a) is w and +a == w(7)
    assert -a == w(np.array(-7).astype(npdt).item())  # wraps for unsigned types
    assert a % w(3) == w(1)
    if np.dtype(npdt).kind == "i":
        assert w(-7) % w(3) == w(-1)  # C remainder: the sign of the dividend
    if np.dtype(npdt).kind == "f":
        assert math.isclose(float(w(-7.5) % w(2)), math.fmod(-7.5, 2.0))
        assert float(w(2) ** w(3)) == 8.0 and float(w(3) ** w(2)) == 9.0
    else:
        with pytest.raises(TypeError):
            _ = w(2) ** w(3)


@pytest.mark.parametrize("npdt", INT_TYPES + FLOAT_TYPES)
def test_array_scalar_arithmetic(npdt):
    w = wp.dtype_from_numpy(np.dtype(npdt))
    base = np.array([1, 2, 3], dtype=npdt)
    arr = wp.array(base, dtype=w)
    s = w(5)
    five = np.array(5, dtype=npdt)
    with np.errstate(all="ignore"):
        cases = [(arr + s, base + five), (s + arr, five + base), (arr - s, base - five), (s - arr, five - base),
                 (arr * s, base * five), (s * arr, five * base), (arr % s, np.fmod(base, five)),
                 (s % arr, np.fmod(five, base)), (arr + 2, base + np.array(2, dtype=npdt))]
        if np.dtype(npdt).kind == "f":
            cases += [(arr / s, base / five), (s / arr, five / base)]
    for got, want in cases:
        assert isinstance(got, wp.array) and got.dtype == w
        np.testing.assert_array_equal(got.numpy(), want.astype(npdt))


def test_array_array_and_vector_arithmetic():
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=wp.vec3)
    b = wp.array(np.ones((2, 3), dtype=np.float32), dtype=wp.vec3)
    np.testing.assert_array_equal((a + b).numpy(), np.arange(6).reshape(2, 3) + 1.0)
    np.testing.assert_array_equal((a * 2.0).numpy(), np.arange(6).reshape(2, 3) * 2.0)
    v = wp.vec3(1.0, 2.0, 3.0)
    assert wp.float32(2.0) * v == wp.vec3(2.0, 4.0, 6.0)  # scalar values defer to the vector's operator


def test_in_place_array_arithmetic_keeps_the_memory():
    a = wp.array(np.arange(4, dtype=np.float32))
    view = a[1:3]
    ptr = a.ptr
    a += 1.0
    a -= wp.array(np.full(4, 0.5, dtype=np.float32))
    a *= 2.0
    a /= 4.0
    assert a.ptr == ptr
    expected = (np.arange(4) + 0.5) * 2.0 / 4.0
    np.testing.assert_allclose(a.numpy(), expected)
    np.testing.assert_allclose(view.numpy(), expected[1:3])
    # a gradient updated in place is seen through the views that share it
    x = wp.zeros(4, dtype=wp.vec2, requires_grad=True)
    flat = x.view(wp.float32).flatten()
    x.grad -= wp.array(np.ones((4, 2), dtype=np.float32), dtype=wp.vec2)
    np.testing.assert_allclose(flat.grad.numpy(), -np.ones(8))


@wp.kernel
def _compose(a: wp.array(dtype=wp.transform), b: wp.array(dtype=wp.transform), qa: wp.array(dtype=wp.quat),
             qb: wp.array(dtype=wp.quat), t_out: wp.array(dtype=wp.transform), q_out: wp.array(dtype=wp.quat)):
    i = wp.tid()
    t_out[i] = a[i] * b[i]
    q_out[i] = qa[i] * qb[i]


def test_host_quat_and_transform_products_equal_the_kernels_bit_for_bit():
    rng = np.random.default_rng(11)
    n = 64
    q = rng.normal(size=(4, n, 4)).astype(np.float32)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    p = rng.uniform(-10, 10, size=(2, n, 3)).astype(np.float32)
    ta = [wp.transform(wp.vec3(*p[0, i]), wp.quat(*q[0, i])) for i in range(n)]
    tb = [wp.transform(wp.vec3(*p[1, i]), wp.quat(*q[1, i])) for i in range(n)]
    qa, qb = [wp.quat(*q[2, i]) for i in range(n)], [wp.quat(*q[3, i]) for i in range(n)]
    t_out, q_out = wp.zeros(n, dtype=wp.transform), wp.zeros(n, dtype=wp.quat)
    wp.launch(_compose, n, inputs=[wp.array(ta, dtype=wp.transform), wp.array(tb, dtype=wp.transform),
                                   wp.array(qa, dtype=wp.quat), wp.array(qb, dtype=wp.quat), t_out, q_out])
    host_t = np.array([list(x * y) for x, y in zip(ta, tb)], dtype=np.float32)
    host_q = np.array([list(x * y) for x, y in zip(qa, qb)], dtype=np.float32)
    np.testing.assert_array_equal(host_t, t_out.numpy())
    np.testing.assert_array_equal(host_q, q_out.numpy())
    # and they are the products: against float64 references
    def qmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        v = x[3] * y[:3] + y[3] * x[:3] + np.cross(x[:3], y[:3])
        return np.append(v, x[3] * y[3] - np.dot(x[:3], y[:3]))
    want_q = np.array([qmul(q[2, i].astype(np.float64), q[3, i].astype(np.float64)) for i in range(n)])
    np.testing.assert_allclose(host_q, want_q, atol=1e-6)
    with pytest.raises(TypeError):
        _ = ta[0] * wp.transformd(*map(float, ta[1]))  # mixed precisions are refused, as in kernels
