"""Quadrature rules integrate polynomials exactly up to their order (reference elements and 1D families), and a
regular quadrature integrates a polynomial over a mesh in a kernel."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
from treadle._src.fem.element import element_quadrature
from treadle.fem import polynomial

from .forms import make_geometry


def _simplex_exact(alpha: tuple[int, ...], dim: int) -> float:
    """Mean of prod(lambda_i^alpha_i) over the unit simplex."""
    return math.factorial(dim) * np.prod([math.factorial(a) for a in alpha]) / math.factorial(dim + sum(alpha))


def _barycentric(element: fem.Element, pts: np.ndarray) -> np.ndarray:
    if element == fem.Element.TRIANGLE:
        return pts[:, :3]
    return np.stack([1.0 - pts.sum(axis=1), pts[:, 0], pts[:, 1], pts[:, 2]], axis=1)


@pytest.mark.parametrize("element", [fem.Element.TRIANGLE, fem.Element.TETRAHEDRON])
@pytest.mark.parametrize("order", range(0, 9))
def test_simplex_rules_are_exact(element: fem.Element, order: int) -> None:
    dim = 2 if element == fem.Element.TRIANGLE else 3
    pts, w = element_quadrature(element, order)
    assert w.sum() == pytest.approx(1.0, abs=1e-13)
    lam = _barycentric(element, pts)
    for alpha in itertools.product(range(order + 1), repeat=dim + 1):
        if sum(alpha) > order:
            continue
        got = float(np.dot(w, np.prod(lam ** np.array(alpha), axis=1)))
        assert got == pytest.approx(_simplex_exact(alpha, dim), abs=1e-13), alpha
    if order >= 1:  # and not for one degree more: the rule is not exact beyond its order in general
        worst = max(abs(float(np.dot(w, np.prod(lam ** np.array(a), axis=1))) - _simplex_exact(a, dim))
                    for a in itertools.product(range(order + 3), repeat=dim + 1) if sum(a) == order + 2)
        assert worst > 1e-12


@pytest.mark.parametrize("element", [fem.Element.LINE_SEGMENT, fem.Element.SQUARE, fem.Element.CUBE])
@pytest.mark.parametrize("family", [fem.Polynomial.GAUSS_LEGENDRE, fem.Polynomial.LOBATTO_GAUSS_LEGENDRE])
@pytest.mark.parametrize("order", range(0, 8))
def test_tensor_rules_are_exact(element: fem.Element, family: fem.Polynomial, order: int) -> None:
    dim = {fem.Element.LINE_SEGMENT: 1, fem.Element.SQUARE: 2, fem.Element.CUBE: 3}[element]
    pts, w = element_quadrature(element, order, family)
    for alpha in itertools.product(range(order + 1), repeat=dim):
        got = float(np.dot(w, np.prod(pts[:, :dim] ** np.array(alpha), axis=1)))
        assert got == pytest.approx(np.prod([1.0 / (a + 1) for a in alpha]), abs=1e-13), alpha


@pytest.mark.parametrize("family", list(fem.Polynomial))
@pytest.mark.parametrize("n", range(1, 7))
def test_1d_families(family: fem.Polynomial, n: int) -> None:
    if family == fem.Polynomial.LOBATTO_GAUSS_LEGENDRE and n == 1:
        pytest.skip("a one-point Lobatto rule is the midpoint")
    x, w = polynomial.quadrature_1d(n, family)
    assert len(x) == n and np.all(np.diff(x) > 0) and np.all((x >= 0) & (x <= 1))
    exact_to = {fem.Polynomial.GAUSS_LEGENDRE: 2 * n - 1, fem.Polynomial.LOBATTO_GAUSS_LEGENDRE: 2 * n - 3,
                fem.Polynomial.EQUISPACED_CLOSED: n - 1 if n % 2 == 0 else n,
                fem.Polynomial.EQUISPACED_OPEN: n - 1 if n % 2 == 0 else n}[family]
    for k in range(exact_to + 1):
        assert float(np.dot(w, x**k)) == pytest.approx(1.0 / (k + 1), abs=1e-12), k
    if family == fem.Polynomial.GAUSS_LEGENDRE:
        ref_x, ref_w = np.polynomial.legendre.leggauss(n)
        np.testing.assert_allclose(x, 0.5 * (ref_x + 1.0), atol=1e-14)
        np.testing.assert_allclose(w, 0.5 * ref_w, atol=1e-14)
    if family == fem.Polynomial.LOBATTO_GAUSS_LEGENDRE:
        assert x[0] == 0.0 and x[-1] == 1.0


def test_lagrange_scales() -> None:
    x = np.array([0.0, 0.25, 1.0])
    scales = polynomial.lagrange_scales(x)
    for i in range(3):
        others = [x[j] for j in range(3) if j != i]
        assert scales[i] == pytest.approx(1.0 / np.prod([x[i] - o for o in others]))
    with pytest.raises(ValueError, match="distinct"):
        polynomial.lagrange_scales(np.array([0.0, 0.0]))


def test_bad_orders() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        element_quadrature(fem.Element.SQUARE, -1)
    with pytest.raises(ValueError, match="at least one point"):
        polynomial.quadrature_1d(0, fem.Polynomial.GAUSS_LEGENDRE)


@fem.integrand
def monomial(s: fem.Sample, domain: fem.Domain, p: wp.vec3):
    x = domain(s)
    return wp.pow(x[0], p[0]) * wp.pow(x[1], p[1]) * wp.pow(x[2], p[2])


@pytest.mark.parametrize("kind", ["tet", "hex"])
def test_regular_quadrature_integrates_monomials_over_meshes(kind: str) -> None:
    geo = make_geometry(kind, 2)
    for order, p in [(1, (1, 0, 0)), (3, (2, 1, 0)), (5, (2, 2, 1))]:
        q = fem.RegularQuadrature(fem.Cells(geo), order)
        got = fem.integrate(monomial, quadrature=q, values={"p": wp.vec3(*p)})
        assert got == pytest.approx(np.prod([1.0 / (a + 1) for a in p]), rel=1e-5), (order, p)
    explicit = fem.ExplicitQuadrature(
        fem.Cells(geo),
        wp.array(np.tile(q.points[None, :, :], (geo.cell_count(), 1, 1)).astype(np.float32), dtype=fem.Coords),
        wp.array(np.tile(q.weights[None, :], (geo.cell_count(), 1)).astype(np.float32), dtype=float))
    got = fem.integrate(monomial, quadrature=explicit, values={"p": wp.vec3(2.0, 2.0, 1.0)})
    assert got == pytest.approx(1.0 / 18.0, rel=1e-5)
