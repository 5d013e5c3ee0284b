"""Gradients through fem.integrate and fem.interpolate with a Tape, against central finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem


@fem.integrand
def energy(s: fem.Sample, u: fem.Field, k: float):
    g = fem.grad(u, s)
    return k * wp.dot(g, g) + u(s) * u(s) * u(s)


@fem.integrand
def cubic_load(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * u(s) * v(s)


def _field(geo: fem.Geometry, degree: int, seed: int) -> fem.DiscreteField:
    space = fem.make_polynomial_space(geo, degree=degree)
    u = space.make_field()
    rng = np.random.default_rng(seed)
    u.dof_values = wp.array(rng.uniform(-1, 1, space.node_count()).astype(np.float32), requires_grad=True)
    return u


def test_integral_gradient_matches_finite_differences() -> None:
    geo = fem.Trimesh2D(wp.array(fem.utils.grid_to_tris(2, 2), dtype=int),
                        wp.array(np.stack(np.meshgrid(np.linspace(0, 1, 3), np.linspace(0, 1, 3), indexing="ij"),
                                          -1).reshape(-1, 2).astype(np.float32), dtype=wp.vec2))
    u = _field(geo, 2, 0)
    domain = fem.Cells(geo)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.integrate(energy, domain=domain, fields={"u": u}, values={"k": 0.7}, output=out)
    tape.backward(out)
    grad = u.dof_values.grad.numpy().astype(np.float64)
    x0 = u.dof_values.numpy().astype(np.float64)

    def f(x: np.ndarray) -> float:
        v = u.space.make_field()
        v.dof_values = wp.array(x.astype(np.float32))
        return float(fem.integrate(energy, domain=domain, fields={"u": v}, values={"k": 0.7}))

    eps = 1e-2
    for i in range(0, len(x0), 3):
        e = np.zeros_like(x0)
        e[i] = eps
        fd = (f(x0 + e) - f(x0 - e)) / (2 * eps)
        assert abs(grad[i] - fd) < 2e-3 * max(1.0, abs(fd)), (i, grad[i], fd)


def test_linear_form_jacobian_matches_finite_differences() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2, 2))
    u = _field(geo, 1, 1)
    test = fem.make_test(u.space)
    weights = np.random.default_rng(2).normal(size=u.space.node_count())
    tape = wp.Tape()
    with tape:
        r = fem.integrate(cubic_load, fields={"u": u, "v": test})
    tape.backward(grads={r: wp.array(weights.astype(np.float32))})
    grad = u.dof_values.grad.numpy().astype(np.float64)
    x0 = u.dof_values.numpy().astype(np.float64)

    def f(x: np.ndarray) -> float:
        v = u.space.make_field()
        v.dof_values = wp.array(x.astype(np.float32))
        return float(np.dot(weights, fem.integrate(cubic_load, fields={"u": v, "v": test}).numpy()))

    eps = 1e-2
    for i in range(len(x0)):
        e = np.zeros_like(x0)
        e[i] = eps
        fd = (f(x0 + e) - f(x0 - e)) / (2 * eps)
        assert abs(grad[i] - fd) < 2e-3 * max(1.0, abs(fd)), (i, grad[i], fd)


def test_array_axpy_mixed_precision_and_its_adjoint() -> None:
    x = wp.full(10, 2.0, dtype=float, requires_grad=True)
    y = wp.array(np.arange(10), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        fem.linalg.array_axpy(x=x, y=y, alpha=0.5, beta=4.0)
    np.testing.assert_allclose(y.numpy(), 0.5 * 2.0 + 4.0 * np.arange(10))
    y.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(10, 0.5))
    np.testing.assert_allclose(y.grad.numpy(), np.full(10, 4.0))
    with pytest.raises(TypeError, match="different shapes"):
        fem.linalg.array_axpy(x=wp.zeros(10, dtype=wp.vec2), y=y)
