"""Tuples as ``@wp.func`` parameters: ``tuple[A, B]``, variadic ``tuple[T, ...]`` and ``Any`` (specialised per call),
and ``len(t)`` / ``wp.static(len(t))`` of tuple values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenTypeError


@wp.func
def _weighted(values: tuple[wp.vec3, float]) -> float:
    return wp.length(values[0]) * values[1]


@wp.func
def _sum_fixed(values: tuple[int, int, int]) -> int:
    out = 0
    for i in range(wp.static(len(values))):
        out += values[i]
    return out


@wp.func
def _sum_variadic(values: tuple[int, ...]) -> int:
    out = 0
    for i in range(len(values)):
        out += values[i] * (i + 1)
    return out


@wp.func
def _count_any(values: Any) -> int:
    return wp.static(len(values)) * 10 + len(values)


@wp.kernel
def _tuples(out: wp.array(dtype=float)):
    t = (wp.vec3(3.0, 4.0, 0.0), 2.0)
    out[0] = _weighted(t)
    out[1] = _weighted((t[0], 0.5))
    out[2] = float(_sum_fixed((1, 2, 3)))
    out[3] = float(_sum_variadic((5,)) + _sum_variadic((1, 2, 3, 4)) * 100)
    out[4] = float(_count_any((1, 2)) + _count_any((1.0, 2, wp.vec2())) * 100)
    u = (1, 2.5, wp.vec2(1.0, 2.0))
    out[5] = float(wp.static(len(u)) * 10 + len(u))


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_tuple_parameters(mode):
    out = wp.zeros(6, dtype=float)
    with wp.config.override(mode=mode):
        wp.launch(_tuples, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [10.0, 2.5, 6.0, 5.0 + 3000.0, 22.0 + 3300.0, 33.0])


@wp.kernel
def _wrong_arity(out: wp.array(dtype=float)):
    out[0] = float(_sum_fixed((1, 2)))


@wp.kernel
def _wrong_items(out: wp.array(dtype=float)):
    out[0] = float(_sum_variadic((1, wp.vec2())))


@pytest.mark.parametrize("kernel", [_wrong_arity, _wrong_items])
def test_tuples_that_do_not_match_are_refused(kernel):
    with pytest.raises(CodegenTypeError, match="no overload of function"):
        wp.launch(kernel, 1, inputs=[wp.zeros(1, dtype=float)])
