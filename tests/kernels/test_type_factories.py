"""Type factories called in kernels (``wp.types.vector/quaternion/transformation``), ``mod`` on vectors,
``wp.static(len(v))``, ``quat_identity(dtype=...)``, and ``expect_*`` called from Python scope.

References: NumPy float64 (``np.fmod`` for the C remainder).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

vec3h = wp.types.vector(3, wp.float16)


@wp.kernel
def factories(inp: wp.array(dtype=wp.float16), out: wp.array(dtype=float)):
    v2 = wp.types.vector(inp[0], length=2)  # fill constructor, dtype from the value
    v10 = wp.types.vector(length=10, dtype=float)
    v10[3] = 2.0
    q = wp.types.quaternion(inp[0], inp[1], inp[2], inp[3])
    q2 = wp.types.quaternion(wp.types.vector(inp[0], inp[1], inp[2]), inp[3])
    q3 = wp.types.quaternion(q, dtype=wp.float64)
    t = wp.types.transformation(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity(), dtype=wp.float64)
    qi = wp.quat_identity(dtype=wp.float16)
    ti = wp.transform_identity(dtype=wp.float64)
    out[0] = float(v2[1])
    out[1] = v10[3] + v10[0]
    out[2] = float(q2[3])
    out[3] = float(q3[2])
    out[4] = float(t[2])
    out[5] = float(qi[3]) + float(ti[6])


def test_type_factories_in_kernels(device):
    inp = wp.array(np.array([1, 2, 3, 4], dtype=np.float16), dtype=wp.float16, device=device)
    out = wp.zeros(6, dtype=float, device=device)
    wp.launch(factories, dim=1, inputs=[inp, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 4.0, 3.0, 3.0, 2.0])


@wp.kernel
def vec_mod(a: wp.array(dtype=vec3h), b: wp.array(dtype=vec3h), out: wp.array(dtype=vec3h),
            ai: wp.array(dtype=wp.vec3i), bi: wp.array(dtype=wp.vec3i), outi: wp.array(dtype=wp.vec3i),
            loss: wp.array(dtype=wp.float16)):
    out[0] = wp.mod(a[0], b[0])
    outi[0] = ai[0] % bi[0]
    loss[0] = wp.dot(wp.mod(a[0], b[0]), vec3h(wp.float16(1.0), wp.float16(1.0), wp.float16(1.0)))


def test_mod_on_vectors(device):
    a_np = np.array([[5.5, -5.5, 3.0]], dtype=np.float16)
    b_np = np.array([[2.0, 2.0, -2.0]], dtype=np.float16)
    ai_np = np.array([[7, -7, 5]], dtype=np.int32)
    bi_np = np.array([[2, 2, -3]], dtype=np.int32)
    a = wp.array(a_np, dtype=vec3h, device=device, requires_grad=True)
    b = wp.array(b_np, dtype=vec3h, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=vec3h, device=device, requires_grad=True)
    outi = wp.zeros(1, dtype=wp.vec3i, device=device)
    loss = wp.zeros(1, dtype=wp.float16, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(vec_mod, dim=1, inputs=[a, b, out, wp.array(ai_np, dtype=wp.vec3i, device=device),
                                          wp.array(bi_np, dtype=wp.vec3i, device=device), outi, loss], device=device)
    np.testing.assert_array_equal(out.numpy(), np.fmod(a_np, b_np))
    np.testing.assert_array_equal(outi.numpy(), np.fmod(ai_np, bi_np))
    tape.backward(loss=loss)
    # d fmod(a, b) / da = 1, / db = -trunc(a / b)
    np.testing.assert_array_equal(a.grad.numpy(), np.ones_like(a_np))
    np.testing.assert_array_equal(b.grad.numpy(), -np.trunc(a_np.astype(np.float64) / b_np))
    # Python scope: the same C remainder
    assert wp.vec3i(7, -7, 5) % wp.vec3i(2, 2, -3) == wp.vec3i(1, -1, 2)
    assert wp.vec3(5.5, -5.5, 3.0) % 2.0 == wp.vec3(1.5, -1.5, 1.0)


@wp.func
def _double(x: float):
    return x * 2.0


@wp.kernel
def static_len(v1: wp.vec2, v3: wp.types.vector(Any, float), out: wp.array(dtype=int)):
    out[0] = wp.static(len(v1))
    out[1] = wp.static(len(v3))
    f = _double
    out[2] = int(wp.static(f)(2.0))


def test_static_sees_vector_parameters_and_function_aliases(device):
    out = wp.zeros(3, dtype=int, device=device)
    wp.launch(static_len, dim=1, inputs=[wp.vec2(), wp.types.vector(5, float)(), out], device=device)
    np.testing.assert_array_equal(out.numpy(), [2, 5, 4])


@wp.func
def _checks(x: float):
    wp.expect_eq(x, 1.0)
    wp.expect_neq(x, 2.0)
    wp.expect_near(x, 1.05, 0.1)


def test_expect_from_python_scope(capfd):
    _checks(1.0)  # a @func called from Python runs as Python: expect_* compare on the host
    assert "failed" not in capfd.readouterr().out
    wp.expect_eq(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 4.0))
    wp.expect_near(1.0, 1.5, 0.1)
    out = capfd.readouterr().out
    assert out.count("Error, expect_eq() failed") == 1 and out.count("Error, expect_near() failed") == 1


def test_step_nonzero_are_scalar_only():
    import pytest

    @wp.kernel(module="unique")
    def bad(v: wp.vec3):
        wp.step(v)

    with pytest.raises(Exception, match="step"):
        wp.launch(bad, dim=1, inputs=[wp.vec3()])
    assert wp.step(-1.0) == 1.0 and wp.nonzero(3) == 1


@wp.kernel
def constants_and_properties(a: wp.array(dtype=Any), out: wp.array(dtype=wp.float64)):
    out[0] = wp.float64(2.0) * wp.pi  # weak literal: computed in float64
    out[1] = wp.float64(wp.sin(wp.HALF_PI)) + wp.float64(wp.TAU)
    v = wp.types.vector(length=2, dtype=type(a[0]))
    m = wp.identity(n=v.length, dtype=v.dtype) * a[0]
    out[2] = wp.float64(wp.trace(m))
    out[3] = wp.float64(len(v) + wp.mat33().shape[1])


def test_constants_and_composite_properties(device):
    assert wp.pi == np.pi and wp.TAU == 2 * np.pi and wp.e == np.e and np.isinf(wp.inf) and np.isnan(wp.NAN)
    out = wp.zeros(4, dtype=wp.float64, device=device)
    wp.launch(constants_and_properties, dim=1, inputs=[wp.array([1.5], dtype=wp.float32, device=device), out],
              device=device)
    np.testing.assert_allclose(out.numpy(), [2 * np.pi, 1.0 + np.float32(2 * np.pi), 3.0, 5.0], rtol=1e-7)


@wp.kernel
def dtype_keyword_ctors(out: wp.array(dtype=wp.transformd), q_out: wp.array(dtype=wp.quatd)):
    q_out[0] = wp.quat(1.0, 2.0, 3.0, 4.0, dtype=wp.float64)
    out[0] = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity(), dtype=wp.float64)


def test_dtype_keyword_in_constructors(device):
    out = wp.zeros(1, dtype=wp.transformd, device=device)
    q_out = wp.zeros(1, dtype=wp.quatd, device=device)
    wp.launch(dtype_keyword_ctors, dim=1, inputs=[out, q_out], device=device)
    np.testing.assert_array_equal(out.numpy()[0], [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(q_out.numpy()[0], [1, 2, 3, 4])
    # Python scope: the same forms, and keywords by parameter name for builtins
    q = wp.quat(1.0, 2.0, 3.0, 4.0, dtype=wp.float64)
    assert type(q) is wp.quatd and list(q) == [1.0, 2.0, 3.0, 4.0]
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity(), dtype=wp.float64)
    assert type(t) is wp.transformd and list(t) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    assert type(wp.quat_identity(dtype=wp.float64)) is wp.quatd
    assert type(wp.quaternion(1.0, 2.0, 3.0, 4.0, dtype=wp.float64)) is wp.quatd
    assert wp.lerp(a=1.0, b=3.0, t=0.5) == 2.0


@wp.struct
class _Point:
    x: float
    y: float

    def norm2(self) -> float:
        return self.x * self.x + self.y * self.y

    @property
    def total(self) -> float:
        return self.x + self.y


def test_struct_methods_on_the_host():
    p = _Point()
    p.x, p.y = 3.0, 4.0
    assert p.norm2() == 25.0 and p.total == 7.0


vec1f = wp.types.vector(1, float)
vec2f = wp.types.vector(2, float)
vec3f = wp.types.vector(3, float)


@wp.kernel
def vector_slices(out: wp.array(dtype=wp.vec4), parts: wp.array(dtype=wp.vec3)):
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    parts[0] = v[1:]
    parts[1] = wp.vec3(v[::-2][0], v[::-2][1], v[1::-2][0])
    v[1:] = vec3f(5.0, 6.0, 7.0)
    v[::-2] = vec2f(23.0, 24.0)
    v[1:] += vec3f(26.0, 27.0, 28.0)
    v[:] %= wp.vec4(32.0, 33.0, 34.0, 35.0)
    out[0] = v


@wp.kernel
def vector_slice_grad(arr_x: wp.array(dtype=wp.vec2), arr_y: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    y = arr_y[i]
    y[:2] = arr_x[i]
    y[1:-1] += arr_x[i][:2]
    y[3:1:-1] -= arr_x[i][0:]
    arr_y[i] = y


def test_vector_slices(device):
    out = wp.zeros(1, dtype=wp.vec4, device=device)
    parts = wp.zeros(2, dtype=wp.vec3, device=device)
    wp.launch(vector_slices, dim=1, inputs=[out, parts], device=device)
    v = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(parts.numpy(), [v[1:], [v[::-2][0], v[::-2][1], v[1::-2][0]]])
    v[1:] = [5.0, 6.0, 7.0]
    v[::-2] = [23.0, 24.0]
    v[1:] += [26.0, 27.0, 28.0]
    v = np.fmod(v, [32.0, 33.0, 34.0, 35.0])
    np.testing.assert_array_equal(out.numpy()[0], v)

    x = wp.ones(1, dtype=wp.vec2, requires_grad=True, device=device)
    y = wp.zeros(1, dtype=wp.vec4, requires_grad=True, device=device)
    tape = wp.Tape(check_overwrites=False)  # y is read and written by the same launch, element by element
    with tape:
        wp.launch(vector_slice_grad, 1, inputs=(x,), outputs=(y,), device=device)
    y.grad = wp.ones_like(y)
    tape.backward()
    np.testing.assert_array_equal(y.numpy()[0], [1.0, 2.0, 0.0, -1.0])
    np.testing.assert_array_equal(x.grad.numpy()[0], [1.0, 1.0])


def test_transform_positional_p_with_keyword_q():
    assert list(wp.transform((1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert list(wp.transform(q=(4.0, 5.0, 6.0, 7.0))) == [0.0, 0.0, 0.0, 4.0, 5.0, 6.0, 7.0]
    assert list(wp.transform(p=(1.0, 2.0, 3.0))) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]


vec7f = wp.types.vector(7, float)


@wp.kernel
def transform_keywords(out: wp.array(dtype=wp.transform), out_d: wp.array(dtype=wp.transformd)):
    out[0] = wp.transform(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat(4.0, 5.0, 6.0, 7.0))
    out[1] = wp.transform(p=wp.vec3(1.0, 2.0, 3.0))
    out[2] = wp.transform(wp.vec3(1.0, 2.0, 3.0), q=wp.quat(4.0, 5.0, 6.0, 7.0))
    t = wp.transform(1.5)
    wp.expect_eq(t[:] == vec7f(1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5), True)
    out_d[0] = wp.transform(q=wp.quatd(0.0, 0.0, 1.0, 0.0), dtype=wp.float64)


def test_transform_keywords_in_kernels(device):
    out = wp.zeros(3, dtype=wp.transform, device=device)
    out_d = wp.zeros(1, dtype=wp.transformd, device=device)
    wp.launch(transform_keywords, dim=1, inputs=[out, out_d], device=device)
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 0, 0, 0, 1], [1, 2, 3, 4, 5, 6, 7]])
    np.testing.assert_array_equal(out_d.numpy()[0], [0, 0, 0, 0, 0, 1, 0])


def test_transform_setters_update_in_place_on_the_host():
    t = wp.types.transformation(dtype=wp.float32)()
    wp.transform_set_translation(t, wp.vec3f(1.0, 2.0, 3.0))
    wp.transform_set_rotation(t, wp.quatf(0.0, 0.0, 0.0, 1.0))
    assert list(t) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]


@wp.kernel
def factory_casts(a: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat22d), out: wp.array(dtype=wp.vec3h),
                  outm: wp.array(dtype=wp.mat22h), outf: wp.array(dtype=float)):
    out[0] = wp.types.vector(a[0], dtype=wp.float16)  # length taken from the vector: a cast, not a fill
    outm[0] = wp.types.matrix(m[0], dtype=wp.float16)  # shape taken from the matrix
    v = wp.types.vector(wp.vec2(1.5, 2.5))  # same type: a copy
    e = wp.types.vector(1.0, 2.0, 3.0, dtype=float)
    f = wp.types.vector(4.0, length=3)
    outf[0] = wp.length(wp.types.vector(a[0], dtype=wp.float32)) + v[1] + e[2] + f[0]


def test_type_factory_casts_in_kernels(device):
    a_np = np.array([[1.25, -2.5, 3.0]])
    m_np = np.array([[[1.0, 2.0], [3.0, -4.5]]])
    a = wp.array(a_np, dtype=wp.vec3d, device=device, requires_grad=True)
    m = wp.array(m_np, dtype=wp.mat22d, device=device)
    out = wp.zeros(1, dtype=vec3h, device=device)
    outm = wp.zeros(1, dtype=wp.mat22h, device=device)
    outf = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(factory_casts, dim=1, inputs=[a, m, out, outm, outf], device=device)
    np.testing.assert_array_equal(out.numpy(), a_np.astype(np.float16))
    np.testing.assert_array_equal(outm.numpy(), m_np.astype(np.float16))
    np.testing.assert_allclose(outf.numpy()[0], np.linalg.norm(a_np[0]) + 2.5 + 3.0 + 4.0, rtol=1e-6)
    tape.backward(loss=outf)  # the gradient flows back through the float64 -> float32 cast
    np.testing.assert_allclose(a.grad.numpy()[0], a_np[0] / np.linalg.norm(a_np[0]), rtol=1e-6)


mat32d = wp.types.matrix(shape=(3, 2), dtype=wp.float64)


@wp.kernel
def shape_keywords(out: wp.array(dtype=mat32d), out2: wp.array(dtype=wp.mat22)):
    c = mat32d(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    d = mat32d(c, shape=(3, 2))  # a shape= that agrees with the type is accepted
    w = wp.vec3(wp.vec3(1.0, 2.0, 3.0), length=3)
    out[0] = d + mat32d(wp.types.matrix(1.0, shape=(3, 2)))
    out2[0] = wp.matrix(wp.mat22(1.0, 2.0, 3.0, 4.0), shape=(2, 2)) * w[1]


def test_constructor_shape_keywords(device):
    out = wp.zeros(1, dtype=mat32d, device=device)
    out2 = wp.zeros(1, dtype=wp.mat22, device=device)
    wp.launch(shape_keywords, dim=1, inputs=[out, out2], device=device)
    np.testing.assert_array_equal(out.numpy()[0], np.arange(1.0, 7.0).reshape(3, 2) + 1.0)
    np.testing.assert_array_equal(out2.numpy()[0], 2.0 * np.array([[1.0, 2.0], [3.0, 4.0]]))
