"""The named shape-function classes of ``treadle.fem.space.shape``: values against NumPy references."""

from typing import Any

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
from treadle.fem.space import shape as sh

wp.init()


def _evaluate(S: Any, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Weights, gradients (padded to 3), node coordinates, nodal and trace quadrature weights of a scalar shape."""
    N = S.NODES_PER_ELEMENT
    w, g = S.make_element_inner_weight(), S.make_element_inner_weight_gradient()
    nc, qw, tw = S.make_node_coords_in_element(), S.make_node_quadrature_weight(), S.make_trace_node_quadrature_weight()
    dim = S.dimension

    @fem.cache.dynamic_kernel(suffix=S.name)
    def k(p: wp.array(dtype=fem.Coords), val: wp.array2d(dtype=float), grad: wp.array2d(dtype=wp.vec3),
          nco: wp.array(dtype=fem.Coords), qo: wp.array(dtype=float), to: wp.array(dtype=float)):
        i, n = wp.tid()
        val[i, n] = w(p[i], n)
        gg = g(p[i], n)
        v = wp.vec3()
        for d in range(wp.static(dim)):
            v[d] = gg[d]
        grad[i, n] = v
        if i == 0:
            nco[n] = nc(n)
            qo[n] = qw(n)
            to[n] = tw(n)

    P = len(pts)
    val, grad = wp.zeros((P, N), dtype=float), wp.zeros((P, N), dtype=wp.vec3)
    nco, qo, to = wp.zeros(N, dtype=fem.Coords), wp.zeros(N, dtype=float), wp.zeros(N, dtype=float)
    wp.launch(k, dim=(P, N), inputs=[wp.array(pts, dtype=fem.Coords), val, grad, nco, qo, to])
    return val.numpy(), grad.numpy(), nco.numpy(), qo.numpy(), to.numpy()


def _cube_points(dim: int, n: int = 16) -> np.ndarray:
    x = np.zeros((n, 3))
    x[:, :dim] = np.random.default_rng(3).uniform(0.05, 0.95, (n, dim))
    return x


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_square_bspline_matches_tensor_product_of_cardinal_splines(degree: int) -> None:
    from treadle._src.fem.space.shape.bspline import bspline_1d

    S = sh.SquareBSplineShapeFunctions(degree)
    x = _cube_points(2)
    val, grad, nodes, q, _ = _evaluate(S, x)
    ref = bspline_1d(x[:, None, 0] - nodes[None, :, 0], degree) * bspline_1d(x[:, None, 1] - nodes[None, :, 1], degree)
    np.testing.assert_allclose(val, ref, atol=2e-6)
    np.testing.assert_allclose(val.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(q, 1.0 / S.NODES_PER_ELEMENT)
    h = 1e-3
    for d in range(2):
        e = np.zeros(3)
        e[d] = h
        vp, *_ = _evaluate(S, x + e)
        vm, *_ = _evaluate(S, x - e)
        np.testing.assert_allclose((vp - vm) / (2 * h), grad[:, :, d], atol=3e-3)


def test_cube_bspline_nodes_and_counts() -> None:
    S = sh.CubeBSplineShapeFunctions(3)
    assert S.NODES_PER_ELEMENT == 64 and S.value == S.Value.Scalar
    val, _, nodes, _, _ = _evaluate(S, _cube_points(3, 4))
    assert set(np.unique(nodes)) == {-1.0, 0.0, 1.0, 2.0}
    np.testing.assert_allclose(val.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("make", [lambda: sh.SquareNonConformingPolynomialShapeFunctions(2),
                                  lambda: sh.CubeNonConformingPolynomialShapeFunctions(2),
                                  lambda: sh.TriangleNonConformingPolynomialShapeFunctions(3),
                                  lambda: sh.TetrahedronNonConformingPolynomialShapeFunctions(2)])
def test_nonconforming_shapes_are_nodal_with_centred_quadrature(make: Any) -> None:
    S = make()
    _, _, nodes, q, _ = _evaluate(S, _cube_points(3, 1))
    val, *_ = _evaluate(S, nodes.astype(np.float64))
    np.testing.assert_allclose(val, np.eye(S.NODES_PER_ELEMENT), atol=5e-4)
    assert np.isclose(q.sum(), 1.0, atol=1e-6)
    centre = {2: [0.5, 0.5, 0.0], 3: [0.5, 0.5, 0.5]}[S.dimension] if "Square" in S.name or "Cube" in S.name else \
        ([1 / 3] * 3 if S.dimension == 2 else [0.25] * 3)
    np.testing.assert_allclose(q @ nodes, centre, atol=1e-5)


@pytest.mark.parametrize("make,centre", [
    (lambda: sh.SquareBipolynomialShapeFunctions(3, fem.Polynomial.LOBATTO_GAUSS_LEGENDRE), [0.0, 0.5, 0.0]),
    (lambda: sh.SquareSerendipityShapeFunctions(3, fem.Polynomial.LOBATTO_GAUSS_LEGENDRE), [0.0, 0.5, 0.0]),
    (lambda: sh.CubeTripolynomialShapeFunctions(2, fem.Polynomial.LOBATTO_GAUSS_LEGENDRE), [0.0, 0.5, 0.5]),
    (lambda: sh.TrianglePolynomialShapeFunctions(3), [0.0, 0.5, 0.5]),
    (lambda: sh.TetrahedronPolynomialShapeFunctions(2), [0.0, 1 / 3, 1 / 3]),
])
def test_trace_weights_integrate_the_side(make: Any, centre: list[float]) -> None:
    S = make()
    _, _, nodes, _, tw = _evaluate(S, _cube_points(3, 1))
    on = np.abs(nodes[:, 0]) < 1e-6
    assert np.isclose(tw[on].sum(), 1.0, atol=1e-5)
    np.testing.assert_allclose(tw[on] @ nodes[on], centre, atol=1e-5)
    # the rule integrates the restriction of the basis: for Q3 on the side x = 0, the 1D Gauss-Lobatto weights
    if S.name == "Square_P3_LGL":
        np.testing.assert_allclose(np.sort(tw[on]), np.sort([1 / 12, 5 / 12, 5 / 12, 1 / 12]), atol=1e-6)


def test_vector_shape_classes_report_their_value_kind() -> None:
    assert sh.TriangleNedelecFirstKindShapeFunctions(1).value == sh.ShapeValue.CovariantVector
    assert sh.CubeRaviartThomasShapeFunctions(1).value == "contravariant"
    with pytest.raises(NotImplementedError):
        sh.SquareRaviartThomasShapeFunctions(2)
