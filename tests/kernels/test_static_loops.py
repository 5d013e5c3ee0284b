"""``wp.static()`` and loops: loops whose variable a ``wp.static()`` expression reads are unrolled whatever
``max_unroll`` says; after an unrolled loop its variable keeps its last value (as in Python); ``wp.static()``
results that hold arrays are located errors. Also ``print(struct)`` in kernels.

References: the same loops run in Python.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

_sl_shadowed = 999  # a global with the name of a kernel loop variable: wp.static() must not see it


@wp.kernel(module="unique")
def sl_force_unroll(out: wp.array(dtype=int)):
    s = 0
    for i in range(0, 8):
        s += wp.static(i * i)
    out[0] = s
    idx = 1
    for _sl_shadowed in range(2):
        for _sl_shadowed in range(3):  # noqa: B020 (shadowing on purpose: Python keeps the inner loop's last value)
            pass
        out[idx] = wp.static(_sl_shadowed)
        idx += 1


def test_static_loop_variable_forces_unrolling() -> None:
    expect = [sum(i * i for i in range(8))]
    for _sl in range(2):
        for _sl in range(3):  # noqa: B007
            pass
        expect.append(_sl)
    saved = dict(wp.get_module_options())
    try:
        wp.set_module_options({"max_unroll": 3})
        out = wp.zeros(3, dtype=int)
        wp.launch(sl_force_unroll, dim=1, inputs=[out])
    finally:
        wp.set_module_options(saved)
    np.testing.assert_array_equal(out.numpy(), expect)


@wp.kernel(module="unique")
def sl_static_array():
    wp.static(wp.zeros(3))


def test_static_array_result_is_an_error() -> None:
    with pytest.raises(wp.WarpCodegenError, match="unsupported value, an array"):
        wp.launch(sl_static_array, dim=1)


@wp.struct
class SlPrinted:
    n: int
    v: wp.vec3
    x: float


@wp.kernel(module="unique")
def sl_print_struct(a: wp.array(dtype=SlPrinted)):
    print(a[0])


def test_print_struct(capfd: pytest.CaptureFixture[str]) -> None:
    s = SlPrinted()
    s.n = 7
    s.v = wp.vec3(1.0, 2.5, -3.0)
    s.x = 0.25
    wp.launch(sl_print_struct, dim=1, inputs=[wp.array([s], dtype=SlPrinted)])
    wp.synchronize()
    assert "SlPrinted(n=7, v=[1 2.5 -3], x=0.25)" in capfd.readouterr().out


def test_kernel_adj_exposes_source() -> None:
    assert "wp.static(wp.zeros(3))" in sl_static_array.adj.source
    assert sl_static_array.adj.tree.name == "sl_static_array"
    assert wp.float32._length_ == 1 and wp.vec3._length_ == 3
