"""Kernel declarations: return annotations that mean "nothing" (``-> None``, ``-> types.NoneType``, an alias of
them) are accepted and anything else is a located ``CodegenTypeError``; function-valued locals cannot be rebound;
kernel names must be C++ identifiers; ``entry_point_abi`` values are checked.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import treadle as wp

NOTHING = None


@wp.kernel(module="unique")
def kd_none_type(x: float, out: wp.array(dtype=float)) -> types.NoneType:
    out[0] = x


@wp.kernel(module="unique")
def kd_alias(x: float, out: wp.array(dtype=float)) -> NOTHING:
    out[0] = 2.0 * x
    return


@wp.kernel(module="unique")
def kd_float(x: float, out: wp.array(dtype=float)) -> float:
    return


@wp.kernel(module="unique")
def kd_return_none(x: float, out: wp.array(dtype=float)):
    return None


def test_return_annotations() -> None:
    out = wp.zeros(1, dtype=float)
    wp.launch(kd_none_type, dim=1, inputs=[1.5, out])
    assert out.numpy()[0] == 1.5
    wp.launch(kd_alias, dim=1, inputs=[1.5, out])
    assert out.numpy()[0] == 3.0
    for k in (kd_float, kd_return_none):
        with pytest.raises(wp.WarpCodegenTypeError, match="kernels cannot return values"):
            wp.launch(k, dim=1, inputs=[1.5, out])


@wp.func
def kd_double(x: float):
    return 2.0 * x


@wp.func
def kd_halve(x: float):
    return 0.5 * x


@wp.kernel(module="unique")
def kd_rebind_function(out: wp.array(dtype=float)):
    f = kd_double
    f = kd_halve
    out[0] = f(3.0)


@wp.kernel(module="unique")
def kd_rebind_to_value(out: wp.array(dtype=float)):
    f = kd_double
    f = 1.0
    out[0] = f


@wp.kernel(module="unique")
def kd_same_alias_in_loop(out: wp.array(dtype=float)):
    for i in range(3):
        f = kd_double
        out[i] = f(float(i))


def test_function_locals_are_not_rebound() -> None:
    out = wp.zeros(3, dtype=float)
    with pytest.raises(wp.WarpCodegenError, match="rebinding function-valued local 'f' to another function"):
        wp.launch(kd_rebind_function, dim=1, inputs=[out])
    with pytest.raises(wp.WarpCodegenError, match="rebinding function-valued local 'f' to a non-function"):
        wp.launch(kd_rebind_to_value, dim=1, inputs=[out])
    wp.launch(kd_same_alias_in_loop, dim=1, inputs=[out])  # the same function again is not a rebinding
    np.testing.assert_array_equal(out.numpy(), [0.0, 2.0, 4.0])


def test_kernel_name_and_entry_point_abi_are_checked() -> None:
    def body() -> None:
        return

    with pytest.raises(ValueError, match="valid C\\+\\+ identifier"):
        wp.kernel(module="unique", name="1invalid")(body)
    with pytest.raises(ValueError, match="must be 'warp' or 'external_constant_params'"):
        wp.kernel(module="unique", enable_backward=False, entry_point_abi="external")(body)
    with pytest.raises(ValueError, match="requires enable_backward=False"):
        wp.kernel(module="unique", entry_point_abi="external_constant_params")(body)
    assert wp.kernel(module="unique", name="valid_name_2")(body).key == "valid_name_2"


@wp.func
def kd_apply_with_grad(g: wp.Function, x: float):
    return g(x)


@wp.func_grad(kd_apply_with_grad)
def kd_adj_apply_with_grad(g: wp.Function, x: float, adj_ret: float):
    wp.adjoint[x] += adj_ret


@wp.kernel(module="unique")
def kd_function_param_with_custom_grad(out: wp.array(dtype=float)):
    out[0] = kd_apply_with_grad(kd_double, 2.0)


def test_function_parameters_reject_custom_gradients() -> None:
    with pytest.raises(wp.WarpCodegenError, match="Function parameters .* custom gradients or replay functions"):
        wp.launch(kd_function_param_with_custom_grad, dim=1, inputs=[wp.zeros(1, dtype=float)])
