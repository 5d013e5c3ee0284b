"""Allocating arrays with explicit byte strides (``wp.empty/zeros/ones/full(..., strides=...)``).

The allocation holds exactly the farthest element (``itemsize + sum((n - 1) * stride)``); kernels, gradients and
NumPy views see the requested layout.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import treadle as wp


@pytest.mark.parametrize("dtype", [wp.int8, wp.float32, wp.vec3])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (4, 2, 3)])
def test_transposed_layouts_take_the_same_memory(shape, dtype):
    plain = wp.zeros(shape, dtype=dtype)
    same = wp.zeros(shape, dtype=dtype, strides=plain.strides)
    flipped = wp.zeros(shape[::-1], dtype=dtype, strides=plain.strides[::-1])
    assert same.strides == plain.strides and same.is_contiguous
    assert flipped.strides == plain.strides[::-1] and not flipped.is_contiguous
    assert same.capacity == flipped.capacity == plain.capacity
    assert not flipped.numpy().any()


@pytest.mark.parametrize("shape, strides", [((3, 3), (16, 12)), ((2, 3, 4), (40, 16, 4))])
def test_gapped_layouts_hold_the_farthest_element(shape, strides):
    a = wp.empty(shape, dtype=wp.int32, strides=strides)
    assert a.capacity == 4 + sum((n - 1) * s for n, s in zip(shape, strides))
    a.fill_(7)
    np.testing.assert_array_equal(a.numpy(), np.full(shape, 7, np.int32))
    assert wp.ones(shape, dtype=wp.int32, strides=strides).numpy().sum() == np.prod(shape)
    assert wp.full(shape, 3, dtype=wp.int32, strides=strides).numpy().sum() == 3 * np.prod(shape)


@wp.kernel
def _index_sum(x: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    i, j = wp.tid()
    x[i, j] = float(i * 10 + j)
    wp.atomic_add(loss, 0, 2.0 * x[i, j])


def test_kernels_and_gradients_use_the_strided_layout():
    x = wp.zeros((3, 4), dtype=float, strides=(4, 12), requires_grad=True)  # column-major
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_index_sum, (3, 4), inputs=[x, loss])
    expect = 10.0 * np.arange(3)[:, None] + np.arange(4)[None, :]
    np.testing.assert_array_equal(x.numpy(), expect)
    raw = np.ctypeslib.as_array((ctypes.c_float * 12).from_address(x.ptr))
    np.testing.assert_array_equal(raw, expect.T.ravel())  # stored column by column
    tape.backward(loss)
    assert x.grad.strides == (4, 12)
    assert loss.numpy()[0] == 2.0 * expect.sum()


def test_bad_strides_are_refused():
    with pytest.raises(ValueError, match="Invalid number of strides, expected 2 strides, got 1"):
        wp.zeros((3, 4), dtype=float, strides=(4,))
    with pytest.raises(NotImplementedError, match="Negative strides"):
        wp.empty(4, dtype=float, strides=(-4,))
    empty = wp.empty((0, 3), dtype=wp.int32, strides=(4, 16))
    assert empty.capacity == 0 and empty.ptr is None
    with pytest.raises(TypeError):
        wp.empty(4, dtype=float, strides=(4.5,))
