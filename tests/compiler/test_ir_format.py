"""The printed IR (``TREADLE_DUMP=ir``, golden IR tests) names what each statement calls."""

from __future__ import annotations

import treadle as wp
from treadle._src.compiler import ir


@wp.func
def _square(x: float) -> float:
    return x * x


@wp.kernel
def _grads(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.grad(wp.sin)(x[i]) + wp.grad(_square)(x[i])


def test_grad_of_a_builtin_and_of_a_function_print_their_names() -> None:
    text = ir.format_func(_grads.get_instance(None).ir)
    assert "grad sin(" in text
    assert "grad _square(" in text
    assert "Overload(" not in text and "0x" not in text  # no object reprs (addresses differ run to run)
