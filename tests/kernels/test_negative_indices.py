"""Negative array indices in kernels count from the end of their dimension (``a[-1]`` is the last element).

Reads, writes, atomics, 2-d arrays, views and indexed arrays, in release and checked builds; an index below minus
the extent is still reported in checked builds.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel(module="unique")
def from_the_end(a: wp.array(dtype=float), b: wp.array2d(dtype=float), world: wp.array(dtype=int),
                 out: wp.array(dtype=float), c: wp.array(dtype=float), d: wp.array(dtype=float)):
    i = wp.tid()
    w = world[i]  # -1: "no world", stored as the last entry, as libraries index per-world tables
    out[i] = a[w] + b[-1, w] * 10.0
    c[w] = float(i) + 0.5
    wp.atomic_add(d, -2, 1.0)


@wp.kernel(module="unique")
def indexed_read(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float)):
    out[0] = a[-1]
    out[1] = a[-a.shape[0]]


@wp.kernel(module="unique")
def too_negative(a: wp.array(dtype=float), k: int):
    a[k] = 1.0


@pytest.fixture(params=["release", "debug"])
def mode(request):
    old = wp.config.mode
    wp.config.mode = request.param
    yield request.param
    wp.config.mode = old


def test_negative_indices_count_from_the_end(mode):
    a0 = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    b0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    world = np.array([-1, 1, -4], np.int32)
    a, b, out = wp.array(a0), wp.array(b0), wp.zeros(3, dtype=float)
    c, d = wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)
    wp.launch(from_the_end, 3, inputs=[a, b, wp.array(world), out, c, d])
    np.testing.assert_array_equal(out.numpy(), a0[world] + b0[-1, world] * 10.0)
    want_c = np.zeros(4, np.float32)
    want_c[world] = np.arange(3) + 0.5
    np.testing.assert_array_equal(c.numpy(), want_c)
    np.testing.assert_array_equal(d.numpy(), [0.0, 0.0, 3.0, 0.0])


def test_negative_indices_on_views_and_indexed_arrays(mode):
    base = wp.array(np.arange(10, dtype=np.float32))
    view = base[2:7]  # elements 2..6
    out = wp.zeros(2, dtype=float)
    ia = wp.indexedarray(view, [wp.array(np.array([4, 0, 3], np.int32))])
    wp.launch(indexed_read, 1, inputs=[ia, out])
    np.testing.assert_array_equal(out.numpy(), [5.0, 6.0])  # ia[-1] = view[3] = 5, ia[-3] = view[4] = 6


def test_an_index_below_minus_the_extent_is_reported_in_checked_builds():
    old = wp.config.mode
    wp.config.mode = "debug"
    try:
        a = wp.zeros(4, dtype=float)
        wp.launch(too_negative, 1, inputs=[a, -4])
        np.testing.assert_array_equal(a.numpy(), [1.0, 0.0, 0.0, 0.0])
        with pytest.raises(wp.CheckedModeError, match="index -5 is out of bounds for dimension 0 of extent 4"):
            wp.launch(too_negative, 1, inputs=[a, -5])
    finally:
        wp.config.mode = old
