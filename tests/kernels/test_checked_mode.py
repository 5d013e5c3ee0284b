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


def _checked_error(kernel, dim: int, inputs: list) -> str:
    """The message of the CheckedModeError that launching ``kernel`` raises."""
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(kernel, dim=dim, inputs=inputs)
    return str(info.value)


@pytest.fixture
def debug_mode():
    old = wp.config.mode
    wp.config.mode = "debug"
    yield
    wp.config.mode = old


def test_out_of_bounds_read_raises(debug_mode):
    text = _checked_error(oob_read, 8, [wp.zeros(8, dtype=float), wp.zeros(8, dtype=float)])
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


# ------------------------------------------------------------------------------------------------ config.verify_fp
@wp.kernel(module="unique")
def fp_sqrt(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.sqrt(a[i])  # <-


@wp.kernel(module="unique")
def fp_recip2d(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    out[i, j] = wp.float64(1.0) / a[i, j]  # <-


@wp.kernel(module="unique")
def fp_vec(a: wp.array(dtype=float), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.vec3(1.0, wp.log(a[i]), 2.0)  # <-


@wp.kernel(module="unique")
def fp_atomic(a: wp.array(dtype=float), acc: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(acc, 0, a[i])  # <-


@wp.kernel(module="unique")
def fp_int_store(a: wp.array(dtype=float), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = int(a[i])


@pytest.fixture
def verify_fp():
    old = wp.config.verify_fp
    wp.config.verify_fp = True
    yield
    wp.config.verify_fp = old


def test_verify_fp_nan_store_raises_with_location(verify_fp):
    a = wp.array(np.array([1.0, 4.0, 9.0, -1.0, 16.0], dtype=np.float32))
    out = wp.zeros(5, dtype=float)
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(fp_sqrt, dim=5, inputs=[a, out])
    text = str(info.value)
    assert f"{__file__}:{_line(fp_sqrt)}" in text
    assert "kernel 'fp_sqrt'" in text
    assert "thread 3" in text
    assert "NaN was stored to out[3]" in text
    assert "wp.sqrt(a[i])" in text and "^" in text
    # the other threads ran normally
    np.testing.assert_allclose(out.numpy()[[0, 1, 2, 4]], [1.0, 2.0, 3.0, 4.0])


def test_verify_fp_inf_store_2d_float64(verify_fp):
    x = np.ones((3, 4))
    x[1, 2] = 0.0
    a = wp.array(x, dtype=wp.float64)
    out = wp.zeros((3, 4), dtype=wp.float64)
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(fp_recip2d, dim=(3, 4), inputs=[a, out])
    text = str(info.value)
    assert f"{__file__}:{_line(fp_recip2d)}" in text
    assert "thread 6" in text  # flat index of (1, 2) in a (3, 4) launch
    assert "infinite value (Inf) was stored to out[1, 2]" in text


def test_verify_fp_checks_every_vector_component(verify_fp):
    a = wp.array(np.array([1.0, 0.0], dtype=np.float32))  # log(0) = -inf in component 1 of element 1
    out = wp.zeros(2, dtype=wp.vec3)
    with pytest.raises(wp.CheckedModeError, match=r"infinite value \(Inf\) was stored to out\[1\]"):
        wp.launch(fp_vec, dim=2, inputs=[a, out])


def test_verify_fp_checks_atomic_results(verify_fp):
    big = np.finfo(np.float32).max
    a = wp.array(np.array([big, big, big], dtype=np.float32))  # finite operands, the sum overflows
    acc = wp.zeros(1, dtype=float)
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(fp_atomic, dim=3, inputs=[a, acc])
    text = str(info.value)
    assert f"{__file__}:{_line(fp_atomic)}" in text
    assert "infinite value (Inf) was stored to acc[0]" in text


def test_verify_fp_is_quiet_on_finite_values_and_int_stores(verify_fp):
    a = wp.array(np.array([1.0, 4.0, 9.0], dtype=np.float32))
    out = wp.zeros(3, dtype=float)
    wp.launch(fp_sqrt, dim=3, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), [1.0, 2.0, 3.0])
    iout = wp.zeros(3, dtype=int)
    wp.launch(fp_int_store, dim=3, inputs=[a, iout])
    np.testing.assert_array_equal(iout.numpy(), [1, 4, 9])


def test_verify_fp_toggles_per_launch():
    a = wp.array(np.array([-1.0, 4.0], dtype=np.float32))
    out = wp.zeros(2, dtype=float)
    wp.launch(fp_sqrt, dim=2, inputs=[a, out])  # off: NaN stored silently
    assert np.isnan(out.numpy()[0])
    with wp.config.override(verify_fp=True):
        with pytest.raises(wp.CheckedModeError, match="NaN was stored to out"):
            wp.launch(fp_sqrt, dim=2, inputs=[a, out])
    wp.launch(fp_sqrt, dim=2, inputs=[a, out])  # off again: the optimised build is used, no error
    assert np.isnan(out.numpy()[0])



@wp.struct
class FpInner:
    w: wp.vec2
    n: int


@wp.struct
class FpState:
    mass: float
    inner: FpInner


@wp.kernel(module="unique")
def fp_struct_field(states: wp.array(dtype=FpState), d: float):
    i = wp.tid()
    states[i].inner.w[1] = states[i].inner.w[1] / d  # <-


def test_verify_fp_checks_float_fields_of_struct_elements(verify_fp):
    states = wp.zeros(4, dtype=FpState)
    wp.launch(fp_struct_field, dim=4, inputs=[states, 2.0])  # 0 / 2: fine
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(fp_struct_field, dim=4, inputs=[states, 0.0])  # 0 / 0: NaN
    text = str(info.value)
    assert f"{__file__}:{_line(fp_struct_field)}" in text
    assert "NaN was stored to states[" in text and "].inner.w" in text


# Locations stay exact when straight-line code shares one marker: after branches, loops and @func calls.
@wp.kernel(module="unique")
def oob_after_branch(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = 0.0
    for j in range(n):
        if j % 2 == 0:
            s += a[j]
        else:
            s -= a[j]
        s += a[j + 1]  # <-
    a[i] = s


@wp.func
def checked_get(a: wp.array(dtype=float), j: int) -> float:
    return a[j]


@wp.kernel(module="unique")
def oob_after_call(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    x = checked_get(a, i)
    out[i + 1] = x  # <-


def test_location_after_branches_in_a_loop(debug_mode):
    a = wp.zeros(4, dtype=float)
    with pytest.raises(wp.CheckedModeError) as info:
        wp.launch(oob_after_branch, dim=1, inputs=[a, 4])
    text = str(info.value)
    assert f"{__file__}:{_line(oob_after_branch)}" in text
    assert "index 4 is out of bounds for dimension 0 of extent 4" in text


def test_location_after_a_func_call(debug_mode):
    text = _checked_error(oob_after_call, 4, [wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)])
    assert f"{__file__}:{_line(oob_after_call)}" in text
    assert "thread 3" in text


@wp.func
def checked_get_next(a: wp.array(dtype=float), j: int) -> float:
    return a[j + 1]  # <-


@wp.kernel(module="unique")
def oob_inside_call(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = checked_get_next(a, i)


def test_location_inside_a_func(debug_mode):
    """A function's statements record their location through the thread's slot, as the kernel's do."""
    text = _checked_error(oob_inside_call, 4, [wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)])
    assert f"{__file__}:{_line(checked_get_next)}" in text
    assert "thread 3" in text and "index 4 is out of bounds" in text
