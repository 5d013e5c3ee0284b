"""Array attributes in kernels (``ndim``, ``shape`` past the last dimension) and constant tuple indexing."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenIndexError


@wp.kernel
def _attributes(a: wp.array2d(dtype=int), b: wp.array4d(dtype=float), out: wp.array(dtype=int)):
    row = a[1]
    out[0] = a.ndim
    out[1] = row.ndim
    out[2] = b.ndim
    out[3] = row.shape[0]
    out[4] = row.shape[1]  # past the last dimension: 0
    out[5] = a.shape[3]
    s = a.shape
    out[6] = s[1] + s[-2]
    sub = b[0, 1]
    out[7] = sub.ndim * 100 + sub.shape[1] * 10 + sub.shape[2]


def test_ndim_and_shape_past_the_last_dimension():
    out = wp.zeros(8, dtype=int)
    wp.launch(_attributes, 1, inputs=[wp.zeros((3, 5), dtype=int), wp.zeros((2, 3, 4, 6), dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), [2, 1, 4, 5, 0, 0, 5 + 3, 2 * 100 + 6 * 10 + 0])


@wp.kernel
def _negative_tuple_index(out: wp.array(dtype=float)):
    t = (1.0, 2.0, 3.0)
    out[0] = t[-1]
    out[1] = t[-3]
    a, b = wp.tid(), 4
    pair = (a, b)
    out[2] = float(pair[-1])


def test_negative_tuple_indices_count_from_the_end():
    out = wp.zeros(3, dtype=float)
    wp.launch(_negative_tuple_index, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [3.0, 1.0, 4.0])


@wp.kernel
def _tuple_past_the_end(out: wp.array(dtype=float)):
    t = (1.0, 2.0)
    out[0] = t[2]


@wp.kernel
def _shape_past_four(a: wp.array(dtype=float)):
    a[0] = float(a.shape[4])


@pytest.mark.parametrize("kernel, index", [(_tuple_past_the_end, 2), (_shape_past_four, 4)])
def test_a_constant_index_past_a_tuple_is_a_compile_error(kernel, index):
    with pytest.raises(CodegenIndexError, match=f"index {index} is out of range"):
        wp.launch(kernel, 1, inputs=[wp.zeros(2, dtype=float)])


@wp.kernel
def _dynamic_slice(a: wp.array2d(dtype=int), start: int, stop: int, step: int, out: wp.array(dtype=int)):
    s = a[start:stop:step]
    out[0] = s.shape[0]
    out[1] = s[1, 0]


def test_a_zero_runtime_step_is_reported_once_in_release_builds(capfd):
    a = wp.array(np.arange(18).reshape(6, 3), dtype=int)
    out = wp.zeros(2, dtype=int)
    for _ in range(3):
        wp.launch(_dynamic_slice, 1, inputs=[a, 0, 6, 0, out])
    wp.synchronize()
    np.testing.assert_array_equal(out.numpy(), [6, 3])  # taken as a step of 1
    err = capfd.readouterr().err
    assert err.count("slice step cannot be zero") == 1 and 'mode = "debug"' in err
    wp.launch(_dynamic_slice, 1, inputs=[a, 0, 6, 2, out])
    np.testing.assert_array_equal(out.numpy(), [3, 6])
    assert "slice step" not in capfd.readouterr().err
