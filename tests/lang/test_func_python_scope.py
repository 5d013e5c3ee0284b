"""``@wp.func`` called from Python: the argument types select the overload (as in kernels), arguments that fit
no overload are a ``RuntimeError``, ``get_overload`` finds an overload (whose ``defaults`` kernels then use), and
kernels and functions declared with ``module=wp.Module(...)`` belong to that object.

References: the same expressions evaluated in Python / NumPy.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import treadle as wp


@wp.func
def ps_custom(x: int):
    return x + 1


@wp.func
def ps_custom(x: float):  # noqa: F811 (an overload)
    return x + 0.5


@wp.func
def ps_custom(x: wp.vec3):  # noqa: F811 (an overload)
    return x + wp.vec3(1.0, 0.0, 0.0)


@wp.func
def ps_f64(x: wp.float64):
    return x * wp.float64(2.0)


@wp.func
def ps_double(x: float):
    return x * 2.0


@wp.func
def ps_apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def ps_apply_default(g: wp.Function = ps_double, x: float = 3.0):
    return g(x)


@wp.func
def ps_length(a: wp.array(dtype=wp.float32)):
    return a.shape[0]


def test_overload_selected_by_argument_types() -> None:
    assert ps_custom(1) == 2 and isinstance(ps_custom(1), int)
    assert ps_custom(1.0) == 1.5
    np.testing.assert_allclose(np.array(ps_custom(wp.vec3(1.0, 2.0, 3.0))), [2.0, 2.0, 3.0])
    assert ps_f64(wp.float64(1.5)) == 3.0
    assert ps_f64(np.float64(1.5)) == 3.0  # NumPy scalars keep their type
    assert ps_length(wp.zeros(7, dtype=wp.float32)) == 7


def test_function_arguments_and_defaults() -> None:
    assert ps_apply(ps_double, 2.0) == 4.0
    assert math.isclose(ps_apply(wp.sin, 0.5), math.sin(0.5), rel_tol=1e-6)
    assert ps_apply(g=ps_double, x=8.0) == 16.0
    assert ps_apply_default() == 6.0


def test_no_matching_overload_is_an_error() -> None:
    with pytest.raises(RuntimeError, match=r"^Error calling function 'ps_f64', no overload found"):
        ps_f64(1.0)  # a Python float is a float32
    with pytest.raises(RuntimeError, match="no overload found"):
        ps_apply(lambda x: x, 1.0)  # a Python lambda is not a kernel function


def test_get_overload_and_its_defaults() -> None:
    assert ps_custom.get_overload([float], {}).param_types == [wp.float32]
    assert ps_custom.get_overload([int], {}).param_types == [wp.int32]
    assert ps_custom.get_overload([wp.vec3], {}).param_types == [wp.vec3]
    assert ps_custom.get_overload([wp.mat22], {}) is None
    ov = ps_apply_default.get_overload([], {})
    assert ov is not None and ov.defaults["x"] == 3.0


PS_MODULE = wp.Module("ps_explicit_module")


@wp.func(module=PS_MODULE)
def ps_module_func(x: float):
    return x + 1.0


@wp.kernel(module=PS_MODULE)
def ps_module_kernel(out: wp.array(dtype=float)):
    out[0] = ps_module_func(2.0)


def test_explicit_module_object_holds_its_kernels() -> None:
    assert ps_module_kernel.module is PS_MODULE
    assert wp.get_module("ps_explicit_module") is PS_MODULE
    h = PS_MODULE.hash_module()
    assert h != wp.Module("ps_empty_module").hash_module()
    out = wp.zeros(1, dtype=float)
    wp.launch(ps_module_kernel, dim=1, outputs=[out])
    assert out.numpy()[0] == 3.0


@pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.get_overloads() needs Python 3.11")
def test_func_decorator_has_typing_overloads() -> None:
    import inspect
    import typing

    overloads = typing.get_overloads(wp.func)  # static type checkers see the decorated function's signature
    assert len(overloads) == 2
    assert all("Callable" in str(o.__annotations__["return"]) for o in overloads)
    assert list(inspect.signature(ps_apply_default).parameters) == ["g", "x"]


def test_functions_without_readable_source_run_as_is() -> None:
    ns: dict = {"wp": wp}
    exec("@wp.func\ndef g(x: float):\n    return x * 2.0\n", ns)  # noqa: S102 (no source file to read)
    assert ns["g"](1.5) == 3.0
    assert ns["g"](2.0) == 4.0  # again: the unreadable source does not lose the function's definition
    assert ns["g"](np.float32(0.5)) == 1.0
