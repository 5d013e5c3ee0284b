"""Integrands and meshes shared by the fem tests (shared so that their kernels are built once per session)."""

from __future__ import annotations

import numpy as np

import treadle as wp
import treadle.fem as fem
from treadle._src.fem.utils import grid_to_hexes, grid_to_quads, grid_to_tets, grid_to_tris


@fem.integrand
def diffusion_mass(s: fem.Sample, u: fem.Field, v: fem.Field, a: float, b: float):
    """``a grad u : grad v + b u . v``: stiffness (a=1, b=0), mass (a=0, b=1) or both (any value type)."""
    return a * fem.linalg.generalized_inner(fem.grad(u, s), fem.grad(v, s)) + b * fem.linalg.generalized_inner(
        u(s), v(s))


@wp.func
def cos_solution(x: wp.vec2):
    return wp.cos(wp.pi * x[0]) * wp.cos(wp.pi * x[1])


@wp.func
def cos_solution(x: wp.vec3):  # noqa: F811 - overload
    return wp.cos(wp.pi * x[0]) * wp.cos(wp.pi * x[1]) * wp.cos(wp.pi * x[2])


@fem.integrand
def neumann_rhs(s: fem.Sample, domain: fem.Domain, v: fem.Field, c: float):
    """``c * u_exact * v``: the right-hand side of ``-lap u + u = f`` with ``f = c u_exact``."""
    return c * cos_solution(domain(s)) * v(s)


@fem.integrand
def l2_error(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    """``(u - u_exact)^2``."""
    e = u(s) - cos_solution(domain(s))
    return e * e


def lattice(n: int, dim: int, scalar: type = np.float32) -> np.ndarray:
    """Vertex positions of an ``n^dim`` cell lattice of the unit square/cube, in grid vertex order."""
    x = np.linspace(0.0, 1.0, n + 1)
    return np.stack(np.meshgrid(*([x] * dim), indexing="ij"), -1).reshape(-1, dim).astype(scalar)


def make_geometry(kind: str, n: int) -> fem.Geometry:
    """A unit square/cube geometry of ``n`` cells per side."""
    if kind == "grid2d":
        return fem.Grid2D(res=wp.vec2i(n))
    if kind == "grid3d":
        return fem.Grid3D(res=wp.vec3i(n))
    if kind == "tri":
        return fem.Trimesh2D(wp.array(grid_to_tris(n, n), dtype=int), wp.array(lattice(n, 2), dtype=wp.vec2))
    if kind == "quad":
        return fem.Quadmesh2D(wp.array(grid_to_quads(n, n), dtype=int), wp.array(lattice(n, 2), dtype=wp.vec2))
    if kind == "tet":
        return fem.Tetmesh(wp.array(grid_to_tets(n, n, n), dtype=int), wp.array(lattice(n, 3), dtype=wp.vec3))
    if kind == "hex":
        return fem.Hexmesh(wp.array(grid_to_hexes(n, n, n), dtype=int), wp.array(lattice(n, 3), dtype=wp.vec3))
    raise ValueError(kind)
