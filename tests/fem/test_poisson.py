"""Convergence under refinement: ``-lap u + u = f`` with the exact solution ``cos(pi x) cos(pi y) [cos(pi z)]``
(zero normal derivative on the unit square/cube, so the natural boundary condition holds), solved with Lagrange
elements of degree 1 and 2; the L2 error must fall as ``h^(degree + 1)``."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
import treadle.optim.linear as linear

from .forms import diffusion_mass, l2_error, make_geometry, neumann_rhs


def solve_error(kind: str, n: int, degree: int) -> float:
    geo = make_geometry(kind, n)
    dim = geo.dimension
    space = fem.make_polynomial_space(geo, degree=degree)
    test = fem.make_test(space)
    trial = fem.make_trial(space)
    order = 2 * degree + 2
    rhs = fem.integrate(neumann_rhs, quadrature=fem.RegularQuadrature(test.domain, order), fields={"v": test},
                        values={"c": dim * np.pi**2 + 1.0})
    matrix = fem.integrate(diffusion_mass, fields={"u": trial, "v": test}, values={"a": 1.0, "b": 1.0})
    x = wp.zeros_like(rhs)
    _, residual, _ = linear.cg(matrix, rhs, x, tol=1.0e-7, maxiter=2000)
    u = space.make_field()
    u.dof_values = x
    err2 = fem.integrate(l2_error, quadrature=fem.RegularQuadrature(fem.Cells(geo), order), fields={"u": u})
    return float(np.sqrt(err2))


CASES = [("grid2d", (4, 8)), ("tri", (4, 8)), ("tet", (4, 8)), ("hex", (2, 4))]


@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize(("kind", "sizes"), CASES, ids=[c[0] for c in CASES])
def test_l2_convergence_rate(kind: str, sizes: tuple[int, int], degree: int) -> None:
    coarse, fine = (solve_error(kind, n, degree) for n in sizes)
    rate = np.log2(coarse / fine)
    # asymptotic rate degree + 1; the coarsest meshes are a little below it
    assert rate > degree + 1 - 0.35, (kind, degree, coarse, fine, rate)
    assert fine < (0.05 if degree == 1 else 0.01)
