"""Checked mode (``wp.config.mode = "debug"``): out-of-bounds accesses raise at the user's line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import treadle as wp


@wp.kernel(module="unique")
def oob_read(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i + 1]  # <-


@wp.kernel(module="unique")
def oob_write2d(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j + 3] = 1.0  # <-


def _line(k) -> int:
    lines, first = inspect.getsourcelines(k.func)
    return first + next(i for i, t in enumerate(lines) if "# <-" in t)


@pytest.fixture
def debug_mode():
    old = wp.config.mode
    wp.config.mode = "debug"
    yield
    wp.config.mode = old


def test_out_of_bounds_read_raises(debug_mode):
    a = wp.zeros(8, dtype=float)
    out = wp.zeros(8, dtype=float)
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(oob_read, dim=8, inputs=[a, out])
    text = str(info.value)
    assert f"{__file__}:{_line(oob_read)}" in text
    assert "thread 7" in text
    assert "index 8 is out of bounds for dimension 0 of extent 8" in text
    assert "a[i + 1]" in text


def test_out_of_bounds_2d_write_raises(debug_mode):
    a = wp.zeros((2, 4), dtype=float)
    with pytest.raises(wp.CheckedModeError, match="dimension 1 of extent 4"):
        wp.launch(oob_write2d, dim=(2, 4), inputs=[a])
    # nothing outside the array was touched, and in-bounds writes happened
    assert np.all(a.numpy()[:, 3] == 1.0)


def test_in_bounds_launch_is_silent(debug_mode):
    a = wp.zeros(9, dtype=float)
    out = wp.zeros(8, dtype=float)
    wp.launch(oob_read, dim=8, inputs=[a, out])


def test_release_mode_does_not_check():
    assert wp.config.mode == "release"


@wp.kernel(module="unique")
def int_div(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = a[i] / b[i]


def test_integer_division_by_zero_raises(debug_mode):
    a = wp.array(np.array([4, 5, 6], dtype=np.int32))
    b = wp.array(np.array([2, 0, 3], dtype=np.int32))
    out = wp.zeros(3, dtype=int)
    with pytest.raises(wp.CheckedModeError, match=r"division or modulo by zero \(5 / 0\)"):
        wp.launch(int_div, dim=3, inputs=[a, b, out])
