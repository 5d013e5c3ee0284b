"""``Grid3D``: a regular grid of axis-aligned boxes.

Numbering (``res = (nx, ny, nz)``): cell ``(i, j, k)`` is ``(i * ny + j) * nz + k``; vertex ``(i, j, k)`` is
``(i * (ny + 1) + j) * (nz + 1) + k``. Sides are the faces normal to x, then to y, then to z; a face normal to axis
``a`` at lattice position ``p`` (``p[a]`` in ``0..res[a]``) is numbered in x-major order of ``p`` within its group.
Face coordinates ``(u, v)`` run along the axes ``a + 1`` and ``a + 2`` (cyclically), so that ``u x v`` is ``+a``,
except on the low boundary where ``u`` runs backwards (``u x v`` is ``-a``): ``u x v`` is always the normal, which
points out of the inner cell (the one below the face, the only one on a low boundary).
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from ..element import Element
from ..types import OUTSIDE, coords_type, sample_type
from .environments import ReplicatedEnvironments
from .geometry import Geometry, mat_type, vec_type


@functools.cache
def grid3d_funcs(S: Any) -> SimpleNamespace:
    """The kernel functions of 3D grids of scalar type ``S``."""
    vec3 = vec_type(3, S)
    mat33 = mat_type(3, 3, S)
    mat32 = mat_type(3, 2, S)
    Coords = coords_type(S)
    SampleT = sample_type(S)
    key = ("grid3d", codegen.type_key(S))

    CellArg = codegen.struct("Grid3DCellArg", {"res": wp.vec3i, "cell_size": vec3, "origin": vec3}, *key)
    SideArg = codegen.struct("Grid3DSideArg", {"cell_arg": CellArg}, *key)
    SideIndexArg = codegen.struct("Grid3DSideIndexArg", {"res": wp.vec3i}, *key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def cell_ijk(res: wp.vec3i, c: int) -> wp.vec3i:
        nz = res[2]
        ij = c // nz
        k = c - ij * nz
        i = ij // res[1]
        return wp.vec3i(i, ij - i * res[1], k)

    @_f
    def cell_position(args: CellArg, s: SampleT) -> vec3:
        p = cell_ijk(args.res, s.element_index)
        return args.origin + wp.cw_mul(vec3(S(p[0]) + s.element_coords[0], S(p[1]) + s.element_coords[1],
                                            S(p[2]) + s.element_coords[2]), args.cell_size)

    @_f
    def cell_deformation_gradient(args: CellArg, s: SampleT) -> mat33:
        return wp.diag(args.cell_size)

    @_f
    def cell_inverse_deformation_gradient(args: CellArg, s: SampleT) -> mat33:
        return wp.diag(vec3(S(1.0) / args.cell_size[0], S(1.0) / args.cell_size[1], S(1.0) / args.cell_size[2]))

    @_f
    def cell_measure(args: CellArg, s: SampleT) -> S:
        return args.cell_size[0] * args.cell_size[1] * args.cell_size[2]

    @_f
    def cell_normal(args: CellArg, s: SampleT) -> vec3:
        return vec3(S(0.0))

    @_f
    def cell_coordinates(args: CellArg, cell_index: int, pos: vec3) -> Coords:
        p = cell_ijk(args.res, cell_index)
        loc = wp.cw_div(pos - args.origin, args.cell_size)
        return Coords(loc[0] - S(p[0]), loc[1] - S(p[1]), loc[2] - S(p[2]))

    @_f
    def cell_closest_point(args: CellArg, cell_index: int, pos: vec3) -> tuple[Coords, S]:
        c = cell_coordinates(args, cell_index, pos)
        cc = Coords(wp.clamp(c[0], S(0.0), S(1.0)), wp.clamp(c[1], S(0.0), S(1.0)), wp.clamp(c[2], S(0.0), S(1.0)))
        d = wp.cw_mul(vec3(c[0] - cc[0], c[1] - cc[1], c[2] - cc[2]), args.cell_size)
        return cc, wp.dot(d, d)

    @_f
    def cell_lookup(args: CellArg, pos: vec3) -> SampleT:
        loc = wp.cw_div(pos - args.origin, args.cell_size)
        i = wp.clamp(int(wp.floor(loc[0])), 0, args.res[0] - 1)
        j = wp.clamp(int(wp.floor(loc[1])), 0, args.res[1] - 1)
        k = wp.clamp(int(wp.floor(loc[2])), 0, args.res[2] - 1)
        s = SampleT()
        s.element_index = (i * args.res[1] + j) * args.res[2] + k
        s.element_coords = Coords(wp.clamp(loc[0] - S(i), S(0.0), S(1.0)), wp.clamp(loc[1] - S(j), S(0.0), S(1.0)),
                                  wp.clamp(loc[2] - S(k), S(0.0), S(1.0)))
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        return s

    # a side is (axis, lattice position p)
    @_f
    def side_decode(res: wp.vec3i, side: int) -> wp.vec4i:
        nx = res[0]
        ny = res[1]
        nz = res[2]
        nxs = (nx + 1) * ny * nz
        nys = nx * (ny + 1) * nz
        if side < nxs:
            k = side % nz
            ij = side // nz
            return wp.vec4i(0, ij // ny, ij % ny, k)
        side = side - nxs
        if side < nys:
            k = side % nz
            ij = side // nz
            return wp.vec4i(1, ij // (ny + 1), ij % (ny + 1), k)
        side = side - nys
        k = side % (nz + 1)
        ij = side // (nz + 1)
        return wp.vec4i(2, ij // ny, ij % ny, k)

    @_f
    def side_u(d: wp.vec4i, u: S) -> S:
        # faces on a low boundary run their first coordinate backwards, so that u x v is their (outward) normal
        if d[1 + d[0]] == 0:
            return S(1.0) - u
        return u

    @_f
    def side_point(d: wp.vec4i, sc: Coords) -> vec3:
        # lattice point of side coordinates
        a = d[0]
        p = vec3(S(d[1]), S(d[2]), S(d[3]))
        p[(a + 1) % 3] = p[(a + 1) % 3] + side_u(d, sc[0])
        p[(a + 2) % 3] = p[(a + 2) % 3] + sc[1]
        return p

    @_f
    def side_position(args: SideArg, s: SampleT) -> vec3:
        c = args.cell_arg
        d = side_decode(c.res, s.element_index)
        return c.origin + wp.cw_mul(side_point(d, s.element_coords), c.cell_size)

    @_f
    def side_deformation_gradient(args: SideArg, s: SampleT) -> mat32:
        c = args.cell_arg
        d = side_decode(c.res, s.element_index)
        a = d[0]
        m = mat32()
        m[(a + 1) % 3, 0] = c.cell_size[(a + 1) % 3] * (S(1.0) - S(2.0) * side_u(d, S(0.0)))
        m[(a + 2) % 3, 1] = c.cell_size[(a + 2) % 3]
        return m

    @_f
    def side_measure(args: SideArg, s: SampleT) -> S:
        c = args.cell_arg
        a = side_decode(c.res, s.element_index)[0]
        return c.cell_size[(a + 1) % 3] * c.cell_size[(a + 2) % 3]

    @_f
    def side_measure_ratio(args: SideArg, s: SampleT) -> S:
        c = args.cell_arg
        a = side_decode(c.res, s.element_index)[0]
        return S(1.0) / c.cell_size[a]

    @_f
    def side_normal(args: SideArg, s: SampleT) -> vec3:
        d = side_decode(args.cell_arg.res, s.element_index)
        n = vec3(S(0.0))
        n[d[0]] = wp.where(d[1 + d[0]] == 0, S(-1.0), S(1.0))
        return n

    @_f
    def side_cell(res: wp.vec3i, d: wp.vec4i, outer: int) -> int:
        p = wp.vec3i(d[1], d[2], d[3])
        a = d[0]
        if outer == 0:
            p[a] = wp.max(p[a] - 1, 0)
        else:
            p[a] = wp.min(p[a], res[a] - 1)
        return (p[0] * res[1] + p[1]) * res[2] + p[2]

    @_f
    def side_inner_cell_index(args: SideArg, side: int) -> int:
        res = args.cell_arg.res
        return side_cell(res, side_decode(res, side), 0)

    @_f
    def side_outer_cell_index(args: SideArg, side: int) -> int:
        res = args.cell_arg.res
        return side_cell(res, side_decode(res, side), 1)

    @_f
    def side_cell_coords(res: wp.vec3i, side: int, sc: Coords, outer: int) -> Coords:
        d = side_decode(res, side)
        cell = side_cell(res, d, outer)
        p = cell_ijk(res, cell)
        q = side_point(d, sc)
        return Coords(q[0] - S(p[0]), q[1] - S(p[1]), q[2] - S(p[2]))

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args.cell_arg.res, side, side_coords, 0)

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args.cell_arg.res, side, side_coords, 1)

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Coords) -> Coords:
        res = args.cell_arg.res
        d = side_decode(res, side)
        p = cell_ijk(res, cell_index)
        q = vec3(S(p[0]) + cell_coords[0], S(p[1]) + cell_coords[1], S(p[2]) + cell_coords[2])
        a = d[0]
        if wp.abs(q[a] - S(d[1 + a])) > S(1.0e-5):
            return Coords(S(OUTSIDE))
        b = (a + 1) % 3
        c = (a + 2) % 3
        return Coords(side_u(d, q[b] - S(d[1 + b])), q[c] - S(d[1 + c]), S(0.0))

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    @_f
    def side_inner_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat33:
        return cell_inverse_deformation_gradient(args.cell_arg, s)

    @_f
    def side_outer_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat33:
        return cell_inverse_deformation_gradient(args.cell_arg, s)

    @_f
    def boundary_side_index(args: SideIndexArg, b: int) -> int:
        nx = args.res[0]
        ny = args.res[1]
        nz = args.res[2]
        nxs = (nx + 1) * ny * nz
        nys = nx * (ny + 1) * nz
        g = ny * nz
        if b < 2 * g:
            i = wp.where(b < g, 0, nx)
            r = b % g
            return (i * ny + r // nz) * nz + r % nz
        b = b - 2 * g
        g = nx * nz
        if b < 2 * g:
            j = wp.where(b < g, 0, ny)
            r = b % g
            return nxs + ((r // nz) * (ny + 1) + j) * nz + r % nz
        b = b - 2 * g
        g = nx * ny
        k = wp.where(b < g, 0, nz)
        r = b % g
        return nxs + nys + r * (nz + 1) + k

    del _f
    return SimpleNamespace(**locals())


class Grid3D(ReplicatedEnvironments, Geometry):
    """A regular 3D grid of ``res[0] x res[1] x res[2]`` box cells between ``bounds_lo`` and ``bounds_hi``.

    Args:
        res: number of cells along x, y and z.
        bounds_lo: lower corner (default ``(0, 0, 0)``).
        bounds_hi: upper corner (default ``(1, 1, 1)``).
        scalar_type: precision of positions (``wp.float32`` or ``wp.float64``).
        env_count: number of environments: copies of the grid, overlapping in space, numbered one after
            the other (see :mod:`.environments`).

    """

    dimension = 3

    def __init__(self, res: Any, bounds_lo: Any = None, bounds_hi: Any = None, scalar_type: Any = wp.float32,
                 env_count: int = 1) -> None:
        super().__init__(scalar_type)
        r = tuple(int(v) for v in res)
        if len(r) != 3 or min(r) < 1:
            raise ValueError(f"Grid3D: res must be three positive integers, got {res!r}")
        self.res = wp.vec3i(*r)
        lo = np.zeros(3) if bounds_lo is None else np.array([float(v) for v in bounds_lo])
        hi = np.ones(3) if bounds_hi is None else np.array([float(v) for v in bounds_hi])
        if np.any(hi <= lo):
            raise ValueError(f"Grid3D: bounds_hi {tuple(hi)} must exceed bounds_lo {tuple(lo)}")
        self._set_environments(env_count, grid3d_funcs(scalar_type))
        vec3 = vec_type(3, scalar_type)
        self.bounds_lo = vec3(*lo)
        self.bounds_hi = vec3(*hi)
        self.cell_size = vec3(*((hi - lo) / np.array(r)))
        self.origin = self.bounds_lo
        self.extents = vec3(*(hi - lo))

    @property
    def name(self) -> str:
        """``Grid3D`` (``_f64``, ``_env<n>``)."""
        return self._env_name(super().name)

    def reference_cell(self) -> Element:
        """Cubes."""
        return Element.CUBE

    def reference_side(self) -> Element:
        """Squares."""
        return Element.SQUARE

    def _base_cell_count(self) -> int:
        """``nx * ny * nz``."""
        return int(self.res[0]) * int(self.res[1]) * int(self.res[2])

    def _base_vertex_count(self) -> int:
        """``(nx + 1) (ny + 1) (nz + 1)``."""
        return (int(self.res[0]) + 1) * (int(self.res[1]) + 1) * (int(self.res[2]) + 1)

    def edge_count(self) -> int:
        """Edges along x, y and z (of all environments)."""
        nx, ny, nz = (int(r) for r in self.res)
        return self._env_count * (nx * (ny + 1) * (nz + 1) + (nx + 1) * ny * (nz + 1) + (nx + 1) * (ny + 1) * nz)

    def _base_side_count(self) -> int:
        """Faces normal to x, y and z."""
        nx, ny, nz = (int(v) for v in self.res)
        return (nx + 1) * ny * nz + nx * (ny + 1) * nz + nx * ny * (nz + 1)

    def _base_boundary_side_count(self) -> int:
        """``2 (ny nz + nx nz + nx ny)``."""
        nx, ny, nz = (int(v) for v in self.res)
        return 2 * (ny * nz + nx * nz + nx * ny)

    def _fill_base_cell_arg(self, arg: Any, device: Any) -> None:
        """Resolution, cell size and origin."""
        arg.res = self.res
        arg.cell_size = self.cell_size
        arg.origin = self.origin

    def _fill_base_side_arg(self, arg: Any, device: Any) -> None:
        """The cell argument (of one environment)."""
        cell_arg = self._base_funcs.CellArg()
        self._fill_base_cell_arg(cell_arg, device)
        arg.cell_arg = cell_arg

    def _fill_base_side_index_arg(self, arg: Any, device: Any) -> None:
        """The resolution."""
        arg.res = self.res

    def _base_cell_vertex_table(self) -> np.ndarray:
        """Vertices of each cell, ``(cell_count, 8)``: the bottom face counter-clockwise, then the top face."""
        nx, ny, nz = (int(v) for v in self.res)
        i, j, k = (a.reshape(-1) for a in np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"))

        def v(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
            return (a * (ny + 1) + b) * (nz + 1) + c

        return np.stack([v(i, j, k), v(i + 1, j, k), v(i + 1, j + 1, k), v(i, j + 1, k),
                         v(i, j, k + 1), v(i + 1, j, k + 1), v(i + 1, j + 1, k + 1), v(i, j + 1, k + 1)], axis=1)

    def _base_vertex_positions(self) -> np.ndarray:
        """Positions of the vertices, ``(vertex_count, 3)``, in vertex order."""
        nx, ny, nz = (int(v) for v in self.res)
        g = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), np.arange(nz + 1), indexing="ij")
        lo = np.array(self.bounds_lo, dtype=np.float64)
        h = np.array(self.cell_size, dtype=np.float64)
        return np.stack([lo[d] + g[d].reshape(-1) * h[d] for d in range(3)], axis=1)
