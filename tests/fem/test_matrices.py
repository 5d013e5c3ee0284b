"""Assembled mass and stiffness matrices against element matrices computed by hand, and vector-valued blocks."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem
from treadle._src.fem.integrate import IntegrateError

from .forms import diffusion_mass


def dense(m: object) -> np.ndarray:
    """A BSR matrix as a dense NumPy array (blocks expanded)."""
    offsets = m.offsets.numpy()
    cols = m.columns.numpy()
    vals = m.values.numpy()
    br, bc = m.block_shape
    out = np.zeros((m.nrow * br, m.ncol * bc))
    for r in range(m.nrow):
        for k in range(offsets[r], offsets[r + 1]):
            out[r * br:(r + 1) * br, cols[k] * bc:(cols[k] + 1) * bc] = np.reshape(vals[k], (br, bc))
    return out


def assemble(geo: fem.Geometry, a: float, b: float, degree: int = 1, dtype: object = float) -> np.ndarray:
    space = fem.make_polynomial_space(geo, degree=degree, dtype=dtype)
    m = fem.integrate(diffusion_mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
                      values={"a": a, "b": b})
    return dense(m)


def test_p1_triangle_element_matrices() -> None:
    pts = np.array([[0.0, 0.0], [2.0, 0.0], [0.5, 1.5]], dtype=np.float32)
    geo = fem.Trimesh2D(wp.array(np.array([[0, 1, 2]]), dtype=int), wp.array(pts, dtype=wp.vec2))
    e1, e2 = pts[1] - pts[0], pts[2] - pts[0]
    area = 0.5 * abs(float(e1[0] * e2[1] - e1[1] * e2[0]))
    mass = area / 12.0 * np.array([[2, 1, 1], [1, 2, 1], [1, 1, 2]])
    # gradients of the barycentric functions: rows of inv([p1 - p0, p2 - p0]) and minus their sum
    jac = np.stack([pts[1] - pts[0], pts[2] - pts[0]], axis=1).astype(np.float64)
    g = np.linalg.inv(jac)
    grads = np.stack([-g.sum(axis=0), g[0], g[1]])
    stiff = area * grads @ grads.T
    np.testing.assert_allclose(assemble(geo, 0.0, 1.0), mass, atol=1e-6)
    np.testing.assert_allclose(assemble(geo, 1.0, 0.0), stiff, atol=1e-5)


def test_q1_rectangle_element_matrices() -> None:
    hx, hy = 2.0, 0.5
    geo = fem.Grid2D(res=wp.vec2i(1, 1), bounds_lo=wp.vec2(0.0, 0.0), bounds_hi=wp.vec2(hx, hy))
    # 1D element matrices on [0, h], tensor products; node (i, j) is vertex i * 2 + j
    m1 = lambda h: h / 6.0 * np.array([[2, 1], [1, 2]])  # noqa: E731
    k1 = lambda h: 1.0 / h * np.array([[1, -1], [-1, 1]])  # noqa: E731
    mass = np.kron(m1(hx), m1(hy))
    stiff = np.kron(k1(hx), m1(hy)) + np.kron(m1(hx), k1(hy))
    np.testing.assert_allclose(assemble(geo, 0.0, 1.0), mass, atol=1e-6)
    np.testing.assert_allclose(assemble(geo, 1.0, 0.0), stiff, atol=1e-5)


def test_p2_segment_of_grid_matrix_sums() -> None:
    # a degree-2 mass matrix sums to the area; stiffness rows sum to zero (constants are in the space)
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.5, 1.0))
    mass = assemble(geo, 0.0, 1.0, degree=2)
    stiff = assemble(geo, 1.0, 0.0, degree=2)
    assert mass.sum() == pytest.approx(1.5, rel=1e-5)
    np.testing.assert_allclose(stiff.sum(axis=1), 0.0, atol=1e-4)
    np.testing.assert_allclose(stiff, stiff.T, atol=1e-5)
    assert np.all(np.linalg.eigvalsh(mass) > 0)


def test_vector_mass_is_scalar_mass_times_identity() -> None:
    geo = fem.Grid2D(res=wp.vec2i(2, 2))
    scalar = assemble(geo, 0.0, 1.0)
    vector = assemble(geo, 0.0, 1.0, dtype=wp.vec2)
    np.testing.assert_allclose(vector, np.kron(scalar, np.eye(2)), atol=1e-6)


@fem.integrand
def _tensor_load(s: fem.Sample, domain: fem.Domain, tau: fem.Field):
    x = domain(s)
    return wp.ddot(tau(s), wp.mat22(1.0, x[0], x[1], 2.0))


def test_matrix_valued_linear_form_into_vectors_of_the_same_scalars() -> None:
    geo = fem.Grid2D(res=wp.vec2i(3))
    space = fem.make_polynomial_space(geo, degree=1, dtype=wp.mat22)
    tau = fem.make_test(space, domain=fem.Cells(geo))
    as_mat = fem.integrate(_tensor_load, fields={"tau": tau})
    assert as_mat.dtype == wp.mat22
    as_vec = fem.integrate(_tensor_load, fields={"tau": tau}, output_dtype=wp.vec4)
    assert as_vec.dtype == wp.vec4
    np.testing.assert_allclose(as_vec.numpy(), as_mat.numpy().reshape(-1, 4), rtol=1e-6)
    # the constant entries: each node's share of the domain's area, times 1 and 2
    np.testing.assert_allclose(as_mat.numpy()[:, 0, 0].sum(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(as_mat.numpy()[:, 1, 1].sum(), 2.0, rtol=1e-5)
    with pytest.raises(IntegrateError, match="dtype"):
        fem.integrate(_tensor_load, fields={"tau": tau}, output=wp.zeros(space.node_count(), dtype=wp.vec3))
