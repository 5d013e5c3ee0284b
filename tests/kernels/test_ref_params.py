"""``wp.ref[T]`` parameters of ``@func``: the function's writes reach the caller's variable, array element, field
or component; the values are differentiable; arguments that name no place are located errors.

References: NumPy float64 computations of the same updates; the gradient of ``sum(5 x^2)`` is ``10 x``.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.struct
class RpCounter:
    n: wp.int32
    v: wp.vec3


@wp.func
def rp_inc(x: wp.ref[wp.int32]):
    x += 1


@wp.func
def rp_inc_twice(x: wp.ref[wp.int32]):
    rp_inc(x)  # a reference forwarded to another reference parameter
    rp_inc(x)


@wp.func
def rp_swap(a: wp.ref[float], b: wp.ref[float]):
    t = a
    a = b
    b = t


@wp.func
def rp_scale_return_old(x: wp.ref[float], s: float) -> float:
    old = x
    if s < 0.0:
        x = 0.0
        return old
    x = x * s
    return old


@wp.func
def rp_bump(c: wp.ref[RpCounter]):
    c.n += 5
    c.v[1] = 2.0


@wp.func
def rp_apply(g: wp.Function, dst: wp.ref[float], x: float):
    dst = g(x)


@wp.func
def rp_triple(x: float):
    return 3.0 * x


@wp.kernel
def rp_kernel(ints: wp.array(dtype=wp.int32), fl: wp.array(dtype=float), olds: wp.array(dtype=float),
              cs: wp.array(dtype=RpCounter), vs: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a = wp.int32(0)
    rp_inc_twice(a)
    ints[i] = a
    rp_inc(ints[i])  # an array element
    x = fl[2 * i]
    y = fl[2 * i + 1]
    rp_swap(x, y)
    fl[2 * i] = x
    fl[2 * i + 1] = y
    olds[i] = rp_scale_return_old(fl[2 * i], 3.0)
    rp_apply(rp_triple, fl[2 * i + 1], fl[2 * i + 1])  # a function argument before the reference
    c = RpCounter()
    rp_bump(c)
    cs[i] = c
    v = wp.vec3(1.0, 2.0, 3.0)
    rp_swap(v[0], v[2])  # vector components
    vs[i] = v


def test_ref_writes_reach_the_caller(device: str) -> None:
    n = 3
    fl0 = np.arange(2 * n, dtype=np.float64)
    ints = wp.zeros(n, dtype=wp.int32, device=device)
    fl = wp.array(fl0.astype(np.float32), device=device)
    olds = wp.zeros(n, dtype=float, device=device)
    cs = wp.zeros(n, dtype=RpCounter, device=device)
    vs = wp.zeros(n, dtype=wp.vec3, device=device)
    wp.launch(rp_kernel, dim=n, inputs=[ints, fl, olds, cs, vs], device=device)
    np.testing.assert_array_equal(ints.numpy(), np.full(n, 3))
    x, y = fl0[1::2], fl0[0::2]  # swapped
    np.testing.assert_allclose(olds.numpy(), x)
    expect = np.empty(2 * n)
    expect[0::2] = 3.0 * x
    expect[1::2] = 3.0 * y
    np.testing.assert_allclose(fl.numpy(), expect)
    got = cs.numpy()
    np.testing.assert_array_equal(got["n"], np.full(n, 5))
    np.testing.assert_allclose(got["v"], np.tile([0.0, 2.0, 0.0], (n, 1)))
    np.testing.assert_allclose(vs.numpy(), np.tile([3.0, 2.0, 1.0], (n, 1)))


@wp.func
def rp_accumulate_square(acc: wp.ref[float], x: float):
    acc += x * x


@wp.kernel
def rp_loss(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    s = 0.0
    rp_accumulate_square(s, x[i])
    rp_accumulate_square(s, 2.0 * x[i])
    wp.atomic_add(loss, 0, s)


def test_ref_values_are_differentiable(device: str) -> None:
    xs = np.array([1.0, -2.0, 0.5], dtype=np.float64)
    x = wp.array(xs.astype(np.float32), requires_grad=True, device=device)
    loss = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(rp_loss, dim=len(xs), inputs=[x, loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy()[0], 5.0 * np.sum(xs * xs), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 10.0 * xs, rtol=1e-6)


@wp.func
def rp_one() -> wp.int32:
    return 1


@wp.kernel(module="unique")
def rp_bad_literal(a: wp.array(dtype=wp.int32)):
    rp_inc(1)


@wp.kernel(module="unique")
def rp_bad_call(a: wp.array(dtype=wp.int32)):
    rp_inc(rp_one())


@wp.kernel(module="unique")
def rp_bad_constructor(a: wp.array(dtype=wp.int32)):
    rp_inc(wp.int32(3))


@wp.kernel(module="unique")
def rp_bad_expression(a: wp.array(dtype=wp.int32)):
    b = a[0]
    rp_inc(b + 1)


@pytest.mark.parametrize("k", [rp_bad_literal, rp_bad_call, rp_bad_constructor, rp_bad_expression])
def test_ref_argument_must_name_a_place(k: wp.Kernel) -> None:
    with pytest.raises(wp.WarpCodegenError, match="passed by reference"):
        wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=wp.int32)])


def test_ref_type() -> None:
    r = wp.ref[wp.float32]
    assert r.dtype is wp.float32
    assert r == wp.ref[wp.float32] and r != wp.ref[wp.int32]
    assert repr(r) == "wp.ref[float32]"


@wp.func_native("x = x + 1;")
def rp_native_inc(x: wp.ref[wp.int32]): ...


@wp.kernel(module="unique")
def rp_native_kernel(a: wp.array(dtype=wp.int32)):
    v = a[0]
    rp_native_inc(v)
    a[0] = v


def test_native_ref_parameters_are_an_error() -> None:
    with pytest.raises(wp.WarpCodegenError, match="not supported in @wp.func_native"):
        wp.launch(rp_native_kernel, dim=1, inputs=[wp.zeros(1, dtype=wp.int32)])
