"""``wp.Launch`` objects made directly (``wp.Launch(kernel, device, adjoint=...)``) and the parameter setters of
recorded launches: by name, by position, in native form (``_from_ctype``), and gradient buffers of adjoint launches.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import LaunchError


@wp.struct
class _Params:
    i: int
    f: float


@wp.kernel
def _arange(out: wp.array(dtype=int)):
    tid = wp.tid()
    out[tid] = tid


@wp.kernel
def _square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def _mixed(params: _Params, i: int, f: float, v: wp.vec3, m: wp.mat33, out: wp.array(dtype=int)):
    tid = wp.tid()
    out[tid] = tid + i + params.i + int(f) + int(v[0]) + int(m[0, 0]) + int(params.f)


def test_an_empty_launch_is_filled_in_then_run():
    out = wp.zeros(10, dtype=int)
    cmd = wp.Launch(_arange, "cpu")
    assert isinstance(cmd, wp.Launch)
    cmd.launch()  # an empty grid until set_dim: nothing runs
    cmd.set_dim(5)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 3, 4, 0, 0, 0, 0, 0])
    cmd.set_dim(10)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), np.arange(10))


def test_defaults_of_an_empty_launch_are_zeros():
    out = wp.zeros(3, dtype=int)
    cmd = wp.Launch(_mixed, "cpu", bounds=3)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), np.arange(3))
    with_params = wp.Launch(_mixed, "cpu", params=[_Params(i=1, f=2.0), 3, 4.0, wp.vec3(5.0), wp.mat33(), out],
                            bounds=(2,))
    with_params.launch()
    np.testing.assert_array_equal(out.numpy(), [15, 16, 2])


def test_parameters_in_native_form():
    p, out = _Params(), wp.zeros(1, dtype=int)
    cmd = wp.launch(_mixed, dim=1, inputs=[p, 0, 0.0, wp.vec3(), wp.mat33(), None], record_cmd=True)
    p.i, p.f = 13, 1.0
    cmd.set_param_at_index_from_ctype(0, p.__ctype__())
    cmd.set_param_at_index_from_ctype(1, 1)
    cmd.set_param_at_index_from_ctype(2, 2.0)
    cmd.set_param_at_index_from_ctype(3, wp.vec3(3.0))
    cmd.set_param_at_index_from_ctype(4, wp.mat33(4.0, 0, 0, 0, 0, 0, 0, 0, 0))
    cmd.set_param_by_name_from_ctype("out", out.__ctype__())
    cmd.launch()
    assert out.numpy()[0] == 13 + 1 + 2 + 3 + 4 + 1
    with pytest.raises(LaunchError, match="parameter 'v'"):
        cmd.set_param_at_index_from_ctype(3, wp.vec2(1.0))


def test_gradient_buffers_of_an_adjoint_launch():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = wp.empty_like(x)
    y.grad.fill_(1.0)
    cmd = wp.Launch(_square, "cpu", adjoint=True)
    cmd.set_param_by_name("x", x)
    cmd.set_param_by_name("y", y)
    cmd.set_dim(3)
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])

    # other arrays, gradients in buffers of the caller's (the arrays have none)
    x2 = wp.array([4.0, 5.0, 6.0, 7.0], dtype=float)
    gx, y2, gy = wp.zeros(4, dtype=float), wp.empty(4, dtype=float), wp.full(4, 1.0, dtype=float)
    cmd.set_param_by_name("x", x2)
    cmd.set_param_by_name("y", y2)
    cmd.set_param_by_name("x", gx, adjoint=True)
    cmd.set_param_by_name("y", gy, adjoint=True)
    cmd.set_dim(4)
    cmd.launch()
    np.testing.assert_array_equal(gx.numpy(), [8.0, 10.0, 12.0, 14.0])
    np.testing.assert_array_equal(gy.numpy(), np.ones(4))  # the caller's incoming gradient is kept

    with pytest.raises(LaunchError, match="shape"):
        cmd.set_param_by_name("x", wp.zeros(3, dtype=float), adjoint=True)
    with pytest.raises(LaunchError, match="forward one"):
        wp.Launch(_square, "cpu").set_param_by_name("x", gx, adjoint=True)


def test_setter_errors():
    cmd = wp.Launch(_mixed, "cpu")
    with pytest.raises(LaunchError, match="no parameter 'nope'"):
        cmd.set_param_by_name("nope", 1)
    adj = wp.Launch(_mixed, "cpu", adjoint=True)
    with pytest.raises(LaunchError, match="not an array"):
        adj.set_param_by_name("i", 1, adjoint=True)


@wp.kernel
def _vec_param(v: wp.vec3, out: wp.array(dtype=float)):
    out[0] = v[0] + v[1] + v[2]


@pytest.mark.parametrize("value", [123, 1.5, wp.float32(1.5), wp.int32(2), True, np.float32(1.5), np.int64(3)])
def test_a_single_value_is_not_a_vector(value):
    out = wp.zeros(1, dtype=float)
    with pytest.raises(LaunchError, match="argument 'v' expects vec3f but got a single value"):
        wp.launch(_vec_param, 1, inputs=[value, out])
    cmd = wp.Launch(_vec_param, "cpu")
    with pytest.raises(RuntimeError, match="argument 'v' expects vec3f but got a single value"):
        cmd.set_param_by_name("v", value)


@pytest.mark.parametrize("value", [(1.0, 2.0, 3.0), [1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0]), wp.vec3(1.0, 2.0, 3.0)])
def test_vectors_from_containers(value):
    out = wp.zeros(1, dtype=float)
    wp.launch(_vec_param, 1, inputs=[value, out])
    assert out.numpy()[0] == 6.0
