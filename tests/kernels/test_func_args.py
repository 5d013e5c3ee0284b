"""Functions passed to ``@func`` parameters (static dispatch), generic scalar categories (``wp.Float``...),
``arr.dtype`` in kernels, and builtin/type names used without the ``wp.`` prefix.

References are NumPy float64 computations of the same expressions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import treadle as wp


@wp.func
def fa_double(x: float):
    return x * 2.0


@wp.func
def fa_cube(x: float):
    return x * x * x


@wp.func
def fa_apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def fa_apply_any(g: Any, x: Any):
    f = g  # a compile-time alias of the function argument
    return f(x)


@wp.func
def fa_apply_default(g: Callable = fa_double, x: float = 3.0):
    return g(x)


@wp.func
def fa_nested(x: float):
    return fa_apply(fa_cube, x) + fa_apply(g=fa_double, x=x)


@wp.func
def fa_binary(g: wp.Function, x: float, y: float):
    return g(x, y)


@wp.kernel
def fa_kernel(xs: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    x = xs[i]
    out[i, 0] = fa_apply(fa_double, x)
    out[i, 1] = fa_apply(fa_cube, x)
    out[i, 2] = fa_apply_any(wp.sin, x)
    out[i, 3] = fa_apply_default()
    out[i, 4] = fa_nested(x)
    out[i, 5] = fa_binary(wp.max, x, 0.25)


@wp.kernel
def fa_grad_kernel(xs: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, fa_apply(fa_cube, xs[i]) + fa_apply_any(wp.sin, xs[i]))


def test_function_arguments(device):
    x = np.array([-1.5, 0.1, 0.7, 2.0], dtype=np.float32)
    xs = wp.array(x, device=device)
    out = wp.zeros((4, 6), dtype=float, device=device)
    wp.launch(fa_kernel, dim=4, inputs=[xs, out], device=device)
    xd = x.astype(np.float64)
    expected = np.stack([2 * xd, xd**3, np.sin(xd), np.full(4, 6.0), xd**3 + 2 * xd, np.maximum(xd, 0.25)], axis=1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_function_argument_gradient(device):
    x = np.array([-1.5, 0.1, 0.7, 2.0], dtype=np.float32)
    xs = wp.array(x, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(fa_grad_kernel, dim=4, inputs=[xs, loss], device=device)
    tape.backward(loss)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(xs.grad.numpy(), 3 * xd**2 + np.cos(xd), rtol=1e-5)


@wp.func
def fa_vec_sum(v: wp.types.vector(3, wp.Float)) -> wp.Float:
    return v[0] + v[1] + v[2]


@wp.func
def fa_int_twice(x: wp.Int) -> wp.Int:
    return x + x


@wp.kernel
def fa_category_kernel(out: wp.array(dtype=float), outd: wp.array(dtype=wp.float64), outi: wp.array(dtype=int)):
    out[0] = fa_vec_sum(wp.vec3(1.0, 2.0, 3.5))
    outd[0] = fa_vec_sum(wp.vec3d(0.25, 0.5, 1.0))
    outi[0] = fa_int_twice(21)


@wp.kernel
def fa_dtype_kernel(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    T = a.dtype
    out[i] = T(2) * a[i] + type(a[i])(1)


@wp.kernel
def fa_bare_names(out: wp.array(dtype=float)):
    v = vec3(1.0, 2.0, 3.0)  # noqa: F821 (resolved like the reference: builtins and types need no wp. prefix)
    out[0] = length(v)  # noqa: F821
    expect_eq(v[1], 2.0)  # noqa: F821


def test_scalar_categories_dtype_and_bare_names(device):
    out = wp.zeros(1, dtype=float, device=device)
    outd = wp.zeros(1, dtype=wp.float64, device=device)
    outi = wp.zeros(1, dtype=int, device=device)
    wp.launch(fa_category_kernel, dim=1, inputs=[out, outd, outi], device=device)
    assert out.numpy()[0] == 6.5 and outd.numpy()[0] == 1.75 and outi.numpy()[0] == 42

    for dt, npdt in ((wp.int32, np.int32), (wp.float64, np.float64)):
        a = wp.array(np.array([1, 5, -3], dtype=npdt), dtype=dt, device=device)
        o = wp.zeros(3, dtype=dt, device=device)
        wp.launch(fa_dtype_kernel, dim=3, inputs=[a, o], device=device)
        np.testing.assert_array_equal(o.numpy(), np.array([3, 11, -5], dtype=npdt))

    wp.launch(fa_bare_names, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy()[0], np.sqrt(14.0), rtol=1e-6)


@wp.func
def fa_takes_float(g: float, x: float):
    return g + x


@wp.kernel
def fa_bad_kernel(out: wp.array(dtype=float)):
    out[0] = fa_takes_float(fa_double, 1.0)


def test_function_argument_type_errors():
    with pytest.raises(wp.WarpCodegenTypeError if hasattr(wp, "WarpCodegenTypeError") else Exception,
                       match="fa_takes_float"):
        wp.launch(fa_bad_kernel, dim=1, inputs=[wp.zeros(1, dtype=float)])


@wp.struct
class Cplx:
    real: float
    imag: float


@wp.func
def add(a: Cplx, b: Cplx) -> Cplx:  # operators on structs resolve to @func's named like the operator
    return Cplx(a.real + b.real, a.imag + b.imag)


@wp.func
def mul(a: Cplx, b: Cplx) -> Cplx:
    return Cplx(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)


@wp.kernel
def struct_operators(out: wp.array(dtype=float)):
    a = Cplx(1.0, 2.0)
    b = Cplx(3.0, 4.0)
    c = a + b
    d = a * b
    out[0] = c.real
    out[1] = c.imag
    out[2] = d.real
    out[3] = d.imag
    out[4] = 2.0 * 3.0 + 1.0  # plain numbers still use the builtins


def test_operators_on_structs(device):
    out = wp.zeros(5, dtype=float, device=device)
    wp.launch(struct_operators, dim=1, inputs=[out], device=device)
    z = (1 + 2j) * (3 + 4j)
    np.testing.assert_array_equal(out.numpy(), [4.0, 6.0, z.real, z.imag, 7.0])


@wp.kernel(enable_backward=False)
def grad_through_function_argument(out: wp.array(dtype=float)):
    out[0] = wp.grad(fa_apply)(fa_cube, 2.0)
    out[1] = wp.grad(fa_apply_any)(wp.sin, 0.5)


def test_grad_of_function_taking_a_function(device):
    out = wp.zeros(2, dtype=float, device=device)
    wp.launch(grad_through_function_argument, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [12.0, np.cos(0.5)], rtol=1e-6)


@wp.kernel(enable_backward=False)
def grad_alias(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    g = wp.grad(fa_cube)  # a compile-time alias of the gradient function
    out[i] = g(x[i])


def test_grad_function_alias(device):
    x = np.array([0.5, -2.0], dtype=np.float32)
    out = wp.zeros(2, dtype=float, device=device)
    wp.launch(grad_alias, dim=2, inputs=[wp.array(x, device=device), out], device=device)
    np.testing.assert_allclose(out.numpy(), 3 * x.astype(np.float64) ** 2, rtol=1e-6)


def test_func_signature_introspection():
    import inspect

    assert list(inspect.signature(fa_apply_default).parameters) == ["g", "x"]
