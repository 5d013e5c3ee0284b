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
