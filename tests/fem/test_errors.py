"""Bad input gives a clear error naming the problem, at the user's line for mistakes inside integrands."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
from treadle._src.core.errors import CodegenError
from treadle._src.fem.field.field import FieldError
from treadle._src.fem.integrand_codegen import IntegrandError
from treadle._src.fem.integrate import IntegrateError


@fem.integrand
def mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def scaled(s: fem.Sample, u: fem.Field, k: float):
    return k * u(s)


@fem.integrand
def bad_types(s: fem.Sample, u: fem.Field):
    x = wp.vec3(1.0, 2.0, 3.0)
    return u(s) + x  # scalar + vec3: a type error on this line


@fem.integrand
def grad_of_value(s: fem.Sample, u: fem.Field, k: float):
    return fem.grad(k, s)  # an operator applied to a value


@fem.integrand
def normal_of_field(s: fem.Sample, u: fem.Field):
    return fem.normal(u, s)[0]


@fem.integrand
def vector_form(s: fem.Sample, v: fem.Field):
    return wp.vec2(1.0, 2.0) * v(s)


def _line_of(fn: object, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.func)  # type: ignore[attr-defined]
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


@pytest.fixture(scope="module")
def setup() -> tuple[fem.Geometry, object]:
    geo = fem.Grid2D(res=wp.vec2i(2))
    return geo, fem.make_polynomial_space(geo, degree=1)


def test_type_error_in_integrand_points_at_its_line(setup: tuple) -> None:
    geo, space = setup
    with pytest.raises(CodegenError) as info:
        fem.integrate(bad_types, domain=fem.Cells(geo), fields={"u": space.make_field()})
    err = info.value
    assert err.loc.file == __file__
    assert err.loc.line == _line_of(bad_types, "u(s) + x")
    assert "u(s) + x" in str(err)


def test_operator_on_a_value(setup: tuple) -> None:
    geo, space = setup
    with pytest.raises(IntegrandError, match=r"first argument of fem.grad must be a fem.Field") as info:
        fem.integrate(grad_of_value, domain=fem.Cells(geo), fields={"u": space.make_field()}, values={"k": 1.0})
    assert f"{__file__}:{_line_of(grad_of_value, 'fem.grad(k, s)')}" in str(info.value)


def test_domain_operator_on_a_field(setup: tuple) -> None:
    geo, space = setup
    with pytest.raises(IntegrandError, match=r"fem.normal applies to domains, not to a field"):
        fem.integrate(normal_of_field, domain=fem.Cells(geo), fields={"u": space.make_field()})


def test_field_argument_given_a_non_field(setup: tuple) -> None:
    geo, space = setup
    with pytest.raises(IntegrandError, match=r"fields\['u'\].*must be a field.*got a float"):
        fem.integrate(scaled, domain=fem.Cells(geo), fields={"u": 1.0}, values={"k": 1.0})


def test_field_given_to_a_value_parameter(setup: tuple) -> None:
    geo, space = setup
    u = space.make_field()
    with pytest.raises(IntegrandError, match=r"parameter 'k' .* is not annotated fem.Field"):
        fem.integrate(scaled, domain=fem.Cells(geo), fields={"u": u, "k": u})
    with pytest.raises(IntegrandError, match=r"parameter 'u' .* is a fem.Field and cannot be given in values"):
        fem.integrate(scaled, domain=fem.Cells(geo), fields={}, values={"u": 1.0, "k": 1.0})


def test_missing_and_unknown_arguments(setup: tuple) -> None:
    geo, space = setup
    with pytest.raises(IntegrandError, match=r"needs a field for parameter 'u'"):
        fem.integrate(scaled, domain=fem.Cells(geo), values={"k": 1.0})
    with pytest.raises(IntegrandError, match=r"needs a value for parameter 'k'"):
        fem.integrate(scaled, domain=fem.Cells(geo), fields={"u": space.make_field()})
    with pytest.raises(IntegrandError, match=r"has no parameter 'w'"):
        fem.integrate(scaled, domain=fem.Cells(geo), fields={"u": space.make_field()}, values={"k": 1.0, "w": 2})


def test_mismatched_geometries(setup: tuple) -> None:
    geo, space = setup
    other = fem.Grid2D(res=wp.vec2i(3))
    with pytest.raises(IntegrandError, match=r"NonconformingField"):
        fem.integrate(scaled, domain=fem.Cells(other), fields={"u": space.make_field()}, values={"k": 1.0})
    with pytest.raises(FieldError, match=r"the domain is on geometry"):
        fem.make_test(space, domain=fem.Cells(other))
    test = fem.make_test(space)
    trial = fem.make_trial(fem.make_polynomial_space(other))
    with pytest.raises(IntegrateError, match=r"trial field is defined on domain"):
        fem.integrate(mass, fields={"u": trial, "v": test})


def test_form_shape_errors(setup: tuple) -> None:
    geo, space = setup
    with pytest.raises(IntegrateError, match=r"trial field needs a test field"):
        fem.integrate(mass, domain=fem.Cells(geo), fields={"u": fem.make_trial(space), "v": space.make_field()})
    with pytest.raises(IntegrateError, match=r"must return a scalar"):
        fem.integrate(vector_form, fields={"v": fem.make_test(space)})
    with pytest.raises(IntegrateError, match=r"give a domain, a quadrature, or a test field"):
        fem.integrate(scaled, fields={"u": space.make_field()}, values={"k": 1.0})


def test_not_an_integrand(setup: tuple) -> None:
    geo, _ = setup

    def plain(s: fem.Sample) -> float:
        return 1.0

    with pytest.raises(TypeError, match=r"'plain' is not an integrand; decorate it with @fem.integrand"):
        fem.integrate(plain, domain=fem.Cells(geo))
    with pytest.raises(TypeError, match=r"can only be called from another integrand"):
        mass(None, None, None)
    with pytest.raises(TypeError, match=r"fem.grad can only be used inside"):
        fem.grad(None, None)


def test_space_and_field_arguments(setup: tuple) -> None:
    geo, space = setup
    # open point families have no node on cell boundaries: each cell owns its nodes (no error)
    open_space = fem.make_polynomial_space(geo, degree=2, family=fem.Polynomial.GAUSS_LEGENDRE)
    assert open_space.node_count() == 9 * geo.cell_count()
    u = space.make_field()
    with pytest.raises(ValueError, match=r"expected 9 values"):
        u.dof_values = wp.zeros(3, dtype=float)
    with pytest.raises(TypeError, match=r"expected dtype float32"):
        u.dof_values = wp.zeros(9, dtype=wp.float64)
    with pytest.raises(TypeError, match=r"expected a function space"):
        fem.make_test(geo)
    with pytest.raises(ValueError, match=r"res must be two positive integers"):
        fem.Grid2D(res=wp.vec2i(0, 2))
    with pytest.raises(TypeError, match=r"positions must be an array of vec2"):
        fem.Trimesh2D(wp.array(np.array([[0, 1, 2]]), dtype=int), wp.zeros(3, dtype=wp.vec3))
    with pytest.raises(ValueError, match=r"vertex indices out of range"):
        fem.Trimesh2D(wp.array(np.array([[0, 1, 5]]), dtype=int), wp.zeros(3, dtype=wp.vec2))
