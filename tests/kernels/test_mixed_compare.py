"""Comparisons of a float against an integer or the other float width, compiled and interpreted.

They compare in the float type (the wider one for two floats), as C++ does; pairs whose C++ promotion surprises
(signed against unsigned integers, float16 against an integer) stay refused with the comparison's own error.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def below_int_radius(x: wp.array(dtype=float), radius: int, out: wp.array(dtype=int)):
    i = wp.tid()
    d = x[i]
    if d < radius:
        out[i] = 1
    if radius >= d:
        out[i] = out[i] + 10


@wp.kernel
def f32_against_f64(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float64), out: wp.array(dtype=int)):
    i = wp.tid()
    if x[i] < y[i]:
        out[i] = 1
    elif x[i] > y[i]:
        out[i] = 2


@wp.kernel
def f32_against_i64(x: wp.array(dtype=wp.float32), n: wp.int64, out: wp.array(dtype=int)):
    i = wp.tid()
    if x[i] <= n:
        out[i] = 1


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_float_against_int_argument(mode: str) -> None:
    x = wp.array(np.array([0.5, 2.0, 2.5, -3.0], dtype=np.float32))
    out = wp.zeros(4, dtype=int)
    with wp.config.override(mode=mode):
        wp.launch(below_int_radius, 4, inputs=[x, 2, out])
    xs = x.numpy()
    expected = (xs < 2).astype(np.int32) + 10 * (2 >= xs).astype(np.int32)
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_float32_against_float64_compares_in_float64(mode: str) -> None:
    # 0.1f widened to double is larger than the double 0.1: a comparison in float32 would call them equal
    x = wp.array(np.array([0.1, 1.0, 2.0], dtype=np.float32))
    y = wp.array(np.array([0.1, 1.0, 1.5], dtype=np.float64))
    out = wp.zeros(3, dtype=int)
    with wp.config.override(mode=mode):
        wp.launch(f32_against_f64, 3, inputs=[x, y, out])
    np.testing.assert_array_equal(out.numpy(), [2, 0, 2])


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_float32_against_int64_compares_in_float32(mode: str) -> None:
    # 2**24 + 1 is not a float32: converted to float32 it is 2**24, equal to x
    x = wp.array(np.array([2.0**24, 2.0**24 + 2], dtype=np.float32))
    out = wp.zeros(2, dtype=int)
    with wp.config.override(mode=mode):
        wp.launch(f32_against_i64, 2, inputs=[x, wp.int64(2**24 + 1), out])
    np.testing.assert_array_equal(out.numpy(), [1, 0])


def test_int_pairs_of_different_types_stay_refused() -> None:
    @wp.kernel
    def signed_unsigned(a: wp.array(dtype=wp.int32), b: wp.array(dtype=wp.uint32), out: wp.array(dtype=int)):
        i = wp.tid()
        if a[i] < b[i]:
            out[i] = 1

    n = wp.zeros(1, dtype=wp.int32)
    with pytest.raises(wp.CodegenError, match="cannot compare int32 with uint32"):
        wp.launch(signed_unsigned, 1, inputs=[n, wp.zeros(1, dtype=wp.uint32), wp.zeros(1, dtype=int)])


def test_half_against_int_stays_refused() -> None:
    @wp.kernel
    def half_int(a: wp.array(dtype=wp.float16), k: int, out: wp.array(dtype=int)):
        i = wp.tid()
        if a[i] < k:
            out[i] = 1

    with pytest.raises(wp.CodegenError, match="cannot compare float16 with int32"):
        wp.launch(half_int, 1, inputs=[wp.zeros(1, dtype=wp.float16), 1, wp.zeros(1, dtype=int)])
