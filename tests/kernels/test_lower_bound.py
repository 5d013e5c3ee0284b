"""``wp.lower_bound``: compiled and interpreted kernels against ``np.searchsorted`` with the reference's clamp.

The result is the first index of the range whose value is not less than the searched one, and the last index of
the range when every value is less (not one past it, as ``std::lower_bound`` would give).
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def _search(values: wp.array(dtype=float), arr: wp.array(dtype=float), lo: int, hi: int,
            whole: wp.array(dtype=int), ranged: wp.array(dtype=int)):
    i = wp.tid()
    whole[i] = wp.lower_bound(arr, values[i])
    ranged[i] = wp.lower_bound(arr, lo, hi, values[i])


def _expected(arr: np.ndarray, values: np.ndarray, lo: int, hi: int) -> np.ndarray:
    found = lo + np.searchsorted(arr[lo:hi], values, side="left")
    return np.minimum(found, max(hi - 1, lo))


@pytest.mark.parametrize("mode", ["release", "interpret"])
@pytest.mark.parametrize("lo, hi", [(0, 6), (2, 5), (3, 4), (4, 4)])
def test_lower_bound_clamps_to_the_last_index(mode, lo, hi):
    arr = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    values = np.array([-0.1, 0.0, 2.5, 4.0, 5.0, 5.5, 100.0], np.float32)
    whole, ranged = wp.zeros(7, dtype=int), wp.zeros(7, dtype=int)
    with wp.config.override(mode=mode):
        wp.launch(_search, 7, inputs=[wp.array(values), wp.array(arr), lo, hi, whole, ranged])
    np.testing.assert_array_equal(whole.numpy(), [0, 0, 3, 4, 5, 5, 5])
    np.testing.assert_array_equal(ranged.numpy(), _expected(arr, values, lo, hi))
