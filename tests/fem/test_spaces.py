"""Function spaces: node counts of continuous and discontinuous spaces, and exact reproduction of polynomials of
the space's degree (values and gradients) by interpolation, for Lagrange P3/Q3, serendipity S2/S3 and
non-conforming P2 bases."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem

from .forms import make_geometry


@wp.func
def poly(x: wp.vec2, k: float):
    return wp.pow(x[0], k) + wp.pow(x[1], k) + wp.pow(x[0], k - 1.0) * x[1] + 0.5


@wp.func
def poly_grad(x: wp.vec2, k: float):
    return wp.vec2(k * wp.pow(x[0], k - 1.0) + (k - 1.0) * wp.pow(x[0], k - 2.0) * x[1],
                   k * wp.pow(x[1], k - 1.0) + wp.pow(x[0], k - 1.0))


@wp.func
def poly(x: wp.vec3, k: float):  # noqa: F811 - overload
    return wp.pow(x[0], k) + wp.pow(x[2], k) + x[1] * wp.pow(x[2], k - 1.0) + 0.5


@wp.func
def poly_grad(x: wp.vec3, k: float):  # noqa: F811 - overload
    return wp.vec3(k * wp.pow(x[0], k - 1.0), wp.pow(x[2], k - 1.0),
                   k * wp.pow(x[2], k - 1.0) + (k - 1.0) * x[1] * wp.pow(x[2], k - 2.0))


@fem.integrand
def h1_error(s: fem.Sample, u: fem.Field, f: fem.Field):
    d = u(s) - f(s)
    g = fem.grad(u, s) - fem.grad(f, s)
    return d * d + wp.dot(g, g)


SPACES = [
    ("tri", 3, None, False),
    ("grid2d", 3, None, False),
    ("grid3d", 2, fem.ElementBasis.SERENDIPITY, False),
    ("quad", 3, fem.ElementBasis.SERENDIPITY, False),
    ("grid2d", 2, fem.ElementBasis.NONCONFORMING_POLYNOMIAL, True),
]


@pytest.mark.parametrize(("kind", "degree", "basis", "disc"), SPACES,
                         ids=[f"{k}-{d}-{b.name if b else 'P'}" for k, d, b, _ in SPACES])
def test_polynomials_of_the_degree_are_reproduced(kind: str, degree: int, basis: object, disc: bool) -> None:
    geo = make_geometry(kind, 2)
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=basis, discontinuous=disc)
    exact = fem.ImplicitField(fem.Cells(geo), poly, values={"k": float(degree)}, grad_func=poly_grad, degree=degree)
    u = space.make_field()
    fem.interpolate(exact, dest=u)
    err = fem.integrate(h1_error, quadrature=fem.RegularQuadrature(fem.Cells(geo), 2 * degree), fields={"u": u,
                                                                                                         "f": exact})
    assert err < 1e-8, err


def test_node_counts() -> None:
    n = 3
    tri = make_geometry("tri", n)
    v, e, c = (n + 1) ** 2, 3 * n * n + 2 * n, 2 * n * n
    assert tri.vertex_count() == v and tri.side_count() == e and tri.cell_count() == c
    for k in (1, 2, 3):
        space = fem.make_polynomial_space(tri, degree=k)
        assert space.node_count() == v + e * (k - 1) + c * (k - 1) * (k - 2) // 2
        assert fem.make_polynomial_space(tri, degree=k, discontinuous=True).node_count() == c * (k + 1) * (k + 2) // 2
    grid = make_geometry("grid2d", n)
    for k in (1, 2, 3):
        assert fem.make_polynomial_space(grid, degree=k).node_count() == (k * n + 1) ** 2
        assert fem.make_polynomial_space(grid, degree=k, element_basis=fem.ElementBasis.SERENDIPITY
                                         ).node_count() == v + (2 * n * (n + 1)) * (k - 1)
    hexes = make_geometry("hex", 2)
    assert fem.make_polynomial_space(hexes, degree=2).node_count() == 5**3
    tets = make_geometry("tet", 2)
    assert tets.cell_count() == 40 and tets.vertex_count() == 27
    edges = len({tuple(sorted(p)) for t in fem.utils.grid_to_tets(2, 2, 2) for p in
                 [(t[0], t[1]), (t[0], t[2]), (t[0], t[3]), (t[1], t[2]), (t[1], t[3]), (t[2], t[3])]})
    assert fem.make_polynomial_space(tets, degree=2).node_count() == 27 + edges
    assert fem.make_polynomial_space(grid, degree=0).node_count() == n * n


def test_node_positions_and_vector_spaces() -> None:
    geo = make_geometry("grid2d", 2)
    space = fem.make_polynomial_space(geo, degree=2)
    pos = space.node_positions().numpy()
    assert pos.shape == (25, 2)
    # the degree-2 nodes of a 2x2 grid are the 5x5 lattice of step 1/4
    lattice = {(round(4 * x), round(4 * y)) for x, y in pos}
    assert lattice == {(i, j) for i in range(5) for j in range(5)}
    vspace = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec2)
    assert vspace.dtype == wp.vec2 and vspace.dof_dtype == wp.vec2 and vspace.node_count() == 9
    assert vspace.gradient_dtype == wp.mat22 and vspace.divergence_dtype == wp.float32
    tspace = fem.make_polynomial_space(geo, degree=1, dof_mapper=fem.SymmetricTensorMapper(wp.mat22))
    assert tspace.dtype == wp.mat22 and tspace.dof_dtype == wp.vec3
    f = tspace.make_field()
    assert f.dof_values.shape == (9,) and f.dof_values.dtype == wp.vec3


@pytest.mark.parametrize("mapping", ["VOIGT", "DB16"])
@pytest.mark.parametrize("n", [2, 3])
def test_symmetric_mapper_is_orthonormal(mapping: str, n: int) -> None:
    # unit dofs map to tensors of unit half Frobenius norm, mutually orthogonal, and back to themselves
    mat = wp.mat22 if n == 2 else wp.mat33
    m = fem.SymmetricTensorMapper(mat, mapping=fem.SymmetricTensorMapper.Mapping[mapping])
    size = m.dof_dtype._length_
    tensors = []
    for k in range(size):
        e = np.zeros(size, dtype=np.float32)
        e[k] = 1.0
        t = np.array(m.dof_to_value(m.dof_dtype(e))).reshape(n, n)
        np.testing.assert_allclose(t, t.T)
        np.testing.assert_allclose(np.array(m.value_to_dof(mat(t.reshape(-1)))), e, atol=1e-6)
        tensors.append(t)
    gram = np.array([[0.5 * np.sum(a * b) for b in tensors] for a in tensors])
    np.testing.assert_allclose(gram, np.eye(size), atol=1e-6)
