"""``IntEnum`` / ``IntFlag`` members in kernels: ``E.A``, ``int(E.A)`` and ``E.A.value`` are the same constant.

References: the same expressions evaluated in Python.
"""

from __future__ import annotations

import enum

import numpy as np

import treadle as wp


class EvColor(enum.IntEnum):
    RED = 1
    GREEN = 2
    BLUE = 3


class EvFlag(enum.IntFlag):
    A = 1
    B = enum.auto()
    C = enum.auto()


@wp.kernel(module="unique")
def ev_values(out: wp.array(dtype=int)):
    out[0] = int(EvColor.GREEN.value)
    out[1] = EvColor.BLUE.value
    out[2] = EvFlag.A | EvFlag.B.value | EvFlag.C
    out[3] = EvColor.RED + int(EvColor.GREEN) + 0
    out[4] = wp.static(EvFlag.C.value)


def test_enum_member_value_in_kernels() -> None:
    out = wp.zeros(5, dtype=int)
    wp.launch(ev_values, dim=1, inputs=[out])
    expect = [int(EvColor.GREEN.value), EvColor.BLUE.value, EvFlag.A | EvFlag.B.value | EvFlag.C,
              EvColor.RED + int(EvColor.GREEN), EvFlag.C.value]
    np.testing.assert_array_equal(out.numpy(), expect)
