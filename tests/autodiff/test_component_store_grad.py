"""Gradients of assignments to components of array elements (``a[i][0] = v``, ``a[i].x = v``, struct fields)."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.kernel
def _vec_components(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i][0] = 1.0 * x[i]
    y[i].y = 2.0 * x[i] * x[i]
    y[i][2] = 3.0 * x[i]


@wp.kernel
def _mat_entries(x: wp.array(dtype=float), m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    m[i][0, 1] = wp.sin(x[i])
    m[i][1] = wp.vec2(x[i], 4.0 * x[i])


@wp.struct
class _Inner:
    v: wp.vec2
    w: float


@wp.struct
class _Outer:
    inner: _Inner
    s: float


@wp.kernel
def _struct_fields(x: wp.array(dtype=float), o: wp.array(dtype=_Outer)):
    i = wp.tid()
    o[i].inner.v.x = 5.0 * x[i]
    o[i].inner.w = x[i] * x[i] * x[i]
    o[i].s = 7.0


def _grad(kernel, out, seed) -> np.ndarray:
    xs = np.array([0.5, -1.5, 2.0], dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    with wp.Tape() as tape:  # the overwrite check must not see these component updates as reads
        wp.launch(kernel, dim=3, inputs=[x], outputs=[out])
    out.grad = seed
    tape.backward()
    return x.grad.numpy().astype(np.float64), xs.astype(np.float64)


def test_vector_component_stores() -> None:
    y = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
    g, xs = _grad(_vec_components, y, wp.array(np.tile([1.0, 10.0, 100.0], (3, 1)).astype(np.float32),
                                               dtype=wp.vec3))
    np.testing.assert_allclose(g, 1.0 + 10.0 * 4.0 * xs + 300.0, rtol=1e-5)
    # every component was written: the stores consumed their gradients (the old values get none)
    np.testing.assert_allclose(y.grad.numpy(), np.zeros((3, 3)))


@wp.kernel
def _one_component(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i][1] = 2.0 * x[i]


def test_unwritten_components_keep_their_gradient() -> None:
    y = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
    g, _ = _grad(_one_component, y, wp.array(np.tile([1.0, 10.0, 100.0], (3, 1)).astype(np.float32),
                                              dtype=wp.vec3))
    np.testing.assert_allclose(g, 20.0)
    np.testing.assert_allclose(y.grad.numpy(), np.tile([1.0, 0.0, 100.0], (3, 1)))


def test_matrix_entry_and_row_stores() -> None:
    m = wp.zeros(3, dtype=wp.mat22, requires_grad=True)
    seed = np.array([[1.0, 2.0], [3.0, 5.0]], dtype=np.float32)
    g, xs = _grad(_mat_entries, m, wp.array(np.tile(seed, (3, 1, 1)), dtype=wp.mat22))
    np.testing.assert_allclose(g, 2.0 * np.cos(xs) + 3.0 + 4.0 * 5.0, rtol=1e-5)


def test_nested_struct_field_stores() -> None:
    o = wp.zeros(3, dtype=_Outer, requires_grad=True)
    seed = _Outer()
    seed.inner.v = wp.vec2(2.0, 9.0)
    seed.inner.w = 3.0
    seed.s = 11.0
    g, xs = _grad(_struct_fields, o, wp.array([seed] * 3, dtype=_Outer))
    np.testing.assert_allclose(g, 2.0 * 5.0 + 3.0 * 3.0 * xs * xs, rtol=1e-5)
