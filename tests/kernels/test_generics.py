"""Generic kernels and functions (``typing.Any``), explicit overloads, closures over constants."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

import treadle as wp

SCALE = wp.constant(3.0)
OFFSET = 2
VEC = wp.constant(wp.vec3(1.0, 2.0, 3.0))


@wp.func
def gadd(a: Any, b: Any):
    return a + b


@wp.kernel
def generic_scale(a: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    a[i] = gadd(a[i] * s, a[i])


@wp.kernel
def uses_constants(out: wp.array(dtype=float), vout: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = float(i) * SCALE + float(OFFSET)
    vout[i] = VEC * float(i)


def make_kernel(k: float):
    @wp.kernel(module="unique")
    def closure_kernel(out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = k * float(i)

    return closure_kernel


def test_generic_kernel_instances(device):
    a = wp.array(np.arange(4, dtype=np.float32), device=device)
    wp.launch(generic_scale, dim=4, inputs=[a, 2.0], device=device)
    np.testing.assert_allclose(a.numpy(), np.arange(4) * 3.0)
    b = wp.array(np.arange(4, dtype=np.float64), dtype=wp.float64, device=device)
    wp.launch(generic_scale, dim=4, inputs=[b, wp.float64(2.0)], device=device)
    np.testing.assert_allclose(b.numpy(), np.arange(4) * 3.0)
    c = wp.array(np.ones((3, 3), dtype=np.float32), dtype=wp.vec3, device=device)
    wp.launch(generic_scale, dim=3, inputs=[c, 4.0], device=device)
    np.testing.assert_allclose(c.numpy(), np.full((3, 3), 5.0))
    d = wp.array(np.arange(4, dtype=np.int32), dtype=int, device=device)
    wp.launch(generic_scale, dim=4, inputs=[d, 5], device=device)
    np.testing.assert_array_equal(d.numpy(), np.arange(4) * 6)


def test_explicit_overload(device):
    wp.overload(generic_scale, [wp.array(dtype=wp.float16), wp.float16])
    a = wp.array(np.arange(4, dtype=np.float16), dtype=wp.float16, device=device)
    wp.launch(generic_scale, dim=4, inputs=[a, wp.float16(2.0)], device=device)
    np.testing.assert_allclose(a.numpy(), np.arange(4) * 3.0)


def test_constants(device):
    out = wp.zeros(5, dtype=float, device=device)
    vout = wp.zeros(5, dtype=wp.vec3, device=device)
    wp.launch(uses_constants, dim=5, inputs=[out, vout], device=device)
    np.testing.assert_allclose(out.numpy(), np.arange(5) * 3.0 + 2.0)
    np.testing.assert_allclose(vout.numpy(), np.outer(np.arange(5), [1, 2, 3]))


def test_closures_capture_values(device):
    k2, k5 = make_kernel(2.0), make_kernel(5.0)
    o2 = wp.zeros(3, dtype=float, device=device)
    o5 = wp.zeros(3, dtype=float, device=device)
    wp.launch(k2, dim=3, inputs=[o2], device=device)
    wp.launch(k5, dim=3, inputs=[o5], device=device)
    np.testing.assert_allclose(o2.numpy(), [0, 2, 4])
    np.testing.assert_allclose(o5.numpy(), [0, 5, 10])


def test_recorded_launch_replays(device):
    out = wp.zeros(4, dtype=float, device=device)
    cmd = wp.launch(generic_scale, dim=4, inputs=[out, 1.0], device=device, record_cmd=True)
    out.fill_(1.0)
    cmd.launch()
    cmd.launch()
    np.testing.assert_allclose(out.numpy(), [4.0] * 4)
    cmd.set_param_at_index(1, 0.0)
    cmd.launch()
    np.testing.assert_allclose(out.numpy(), [4.0] * 4)


@wp.func
def first_component(v: wp.types.vector(length=Any, dtype=float)) -> float:
    return v[0] * float(len(v))


@wp.kernel
def generic_vec_kernel(out: wp.array(dtype=float)):
    out[0] = first_component(wp.vec2(1.0, 2.0))
    out[1] = first_component(wp.vec4(3.0, 0.0, 0.0, 0.0))


def test_generic_vector_annotations(device):
    out = wp.zeros(2, dtype=float, device=device)
    wp.launch(generic_vec_kernel, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [2.0, 12.0])


@wp.func
def times_two(x: float) -> float:
    return 2.0 * x


@wp.func
def plus_one(x: float) -> float:
    return x + 1.0


FUNCS = [times_two, plus_one]
TABLE = [1.5, 2.5, 3.5]


@wp.kernel
def static_kernel(out: wp.array(dtype=float)):
    v = wp.vec3()
    for i in range(3):  # unrolled: i is a constant in each copy
        v[i] = wp.static(TABLE[i]) * float(wp.static(i + 1))
    out[0] = v[0] + v[1] + v[2]
    acc = 1.0
    for j in range(2):
        acc = wp.static(FUNCS[j])(acc)
    out[1] = acc
    out[2] = wp.static(len(TABLE) * 10)


def test_static_expressions_and_unrolled_loops(device):
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(static_kernel, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [1.5 + 5.0 + 10.5, 3.0, 30.0])


class Mode(enum.IntEnum):
    ADD = 1
    MUL = 2


class Flags(enum.IntFlag):
    A = 1
    B = 4


@wp.kernel
def enum_kernel(mode: int, out: wp.array(dtype=int)):
    if mode == Mode.ADD:
        out[0] = 10 + 5
    elif mode == Mode.MUL:
        out[0] = 10 * 5
    out[1] = int(Flags.A | Flags.B)


def test_intenum_and_intflag_constants(device):
    out = wp.zeros(2, dtype=int, device=device)
    wp.launch(enum_kernel, dim=1, inputs=[Mode.MUL, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [50, 5])
    wp.launch(enum_kernel, dim=1, inputs=[int(Mode.ADD), out], device=device)
    assert out.numpy()[0] == 15


@wp.kernel
def type_of_values(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = type(out[i])(a[i]) * type(out[i])(2)


def test_type_of_value_in_kernels(device):
    a = wp.array(np.array([1, 2, 3], dtype=np.int32), dtype=int, device=device)
    out = wp.zeros(3, dtype=wp.float64, device=device)
    wp.launch(type_of_values, dim=3, inputs=[a, out], device=device)
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])


def test_overload_decorator_finds_custom_named_kernels():
    import pytest

    @wp.kernel(name="custom_named_generic_kernel")
    def custom_named(x: Any, out: wp.array(dtype=float)):
        out[0] = float(x) * 2.0

    @wp.overload
    def custom_named(x: float, out: wp.array(dtype=float)): ...  # noqa: F811

    assert custom_named.key == "custom_named_generic_kernel" and len(custom_named.overloads) == 1
    out = wp.zeros(1, dtype=float)
    wp.launch(custom_named, dim=1, inputs=[1.5, out])
    assert out.numpy()[0] == 3.0

    def twice(x: Any):
        return

    wp.kernel(name="twice_a")(twice)
    wp.kernel(name="twice_b")(twice)
    with pytest.raises(RuntimeError, match="Ambiguous"):

        @wp.overload
        def twice(x: float): ...

    with pytest.raises(TypeError, match="Return annotations"):

        def custom_named(x: float, out: wp.array(dtype=float)) -> float: ...  # noqa: F811

        wp.overload(custom_named)


def test_overload_stub_may_say_it_returns_none():
    @wp.kernel
    def returns_nothing(x: Any):
        return

    kernel = returns_nothing

    @wp.overload
    def returns_nothing(x: float) -> None: ...  # noqa: F811

    def returns_nothing(x: int) -> type(None): ...  # noqa: F811

    wp.overload(returns_nothing)
    assert len(kernel.overloads) == 2
