"""``Grid2D``: a regular grid of axis-aligned rectangles.

Numbering (``res = (nx, ny)``): cell ``(i, j)`` is ``i * ny + j``; vertex ``(i, j)`` is ``i * (ny + 1) + j``. Sides
are the vertical segments ``x = i`` (``i`` in ``0..nx``, ``j`` in ``0..ny-1``, index ``i * ny + j``) followed by
the horizontal ones ``y = j`` (index ``(nx + 1) * ny + i * (ny + 1) + j``). A side's inner cell is the one below
it (left or bottom; the only one on the low boundary), and its normal points out of the inner cell. Each side's
coordinate runs so that the normal is ``(t_y, -t_x)`` of its tangent ``t`` (``fem.Geometry._element_normal`` of its
deformation gradient).
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from ..element import Element
from ..types import NULL_ELEMENT_INDEX, OUTSIDE, coords_type, sample_type
from .environments import ReplicatedEnvironments
from .geometry import Geometry, mat_type, vec_type


@functools.cache
def grid2d_funcs(S: Any) -> SimpleNamespace:
    """The kernel functions of 2D grids of scalar type ``S``."""
    vec2 = vec_type(2, S)
    mat22 = mat_type(2, 2, S)
    Coords = coords_type(S)
    SampleT = sample_type(S)
    key = ("grid2d", codegen.type_key(S))

    CellArg = codegen.struct("Grid2DCellArg", {"res": wp.vec2i, "cell_size": vec2, "origin": vec2}, *key)
    SideArg = codegen.struct("Grid2DSideArg", {"cell_arg": CellArg}, *key)
    SideIndexArg = codegen.struct("Grid2DSideIndexArg", {"res": wp.vec2i}, *key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def cell_position(args: CellArg, s: SampleT) -> vec2:
        ny = args.res[1]
        i = s.element_index // ny
        j = s.element_index - i * ny
        x = S(i) + s.element_coords[0]
        y = S(j) + s.element_coords[1]
        return args.origin + vec2(x * args.cell_size[0], y * args.cell_size[1])

    @_f
    def cell_deformation_gradient(args: CellArg, s: SampleT) -> mat22:
        return wp.diag(args.cell_size)

    @_f
    def cell_inverse_deformation_gradient(args: CellArg, s: SampleT) -> mat22:
        return wp.diag(vec2(S(1.0) / args.cell_size[0], S(1.0) / args.cell_size[1]))

    @_f
    def cell_measure(args: CellArg, s: SampleT) -> S:
        return args.cell_size[0] * args.cell_size[1]

    @_f
    def cell_normal(args: CellArg, s: SampleT) -> vec2:
        return vec2(S(0.0))

    @_f
    def cell_coordinates(args: CellArg, cell_index: int, pos: vec2) -> Coords:
        ny = args.res[1]
        i = cell_index // ny
        j = cell_index - i * ny
        loc = pos - args.origin
        return Coords(loc[0] / args.cell_size[0] - S(i), loc[1] / args.cell_size[1] - S(j), S(0.0))

    @_f
    def cell_closest_point(args: CellArg, cell_index: int, pos: vec2) -> tuple[Coords, S]:
        c = cell_coordinates(args, cell_index, pos)
        cc = Coords(wp.clamp(c[0], S(0.0), S(1.0)), wp.clamp(c[1], S(0.0), S(1.0)), S(0.0))
        d = vec2((c[0] - cc[0]) * args.cell_size[0], (c[1] - cc[1]) * args.cell_size[1])
        return cc, wp.dot(d, d)

    @_f
    def cell_lookup(args: CellArg, pos: vec2) -> SampleT:
        loc = pos - args.origin
        fx = loc[0] / args.cell_size[0]
        fy = loc[1] / args.cell_size[1]
        i = wp.clamp(int(wp.floor(fx)), 0, args.res[0] - 1)
        j = wp.clamp(int(wp.floor(fy)), 0, args.res[1] - 1)
        s = SampleT()
        s.element_index = i * args.res[1] + j
        s.element_coords = Coords(wp.clamp(fx - S(i), S(0.0), S(1.0)), wp.clamp(fy - S(j), S(0.0), S(1.0)), S(0.0))
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        return s

    # sides: (axis, i, j) of a side index
    @_f
    def _side_decode(res: wp.vec2i, side: int) -> wp.vec3i:
        nx = res[0]
        ny = res[1]
        xsides = (nx + 1) * ny
        if side < xsides:
            i = side // ny
            return wp.vec3i(0, i, side - i * ny)
        k = side - xsides
        i = k // (ny + 1)
        return wp.vec3i(1, i, k - i * (ny + 1))

    @_f
    def _side_param(d: wp.vec3i, t: S) -> S:
        # sides run so that their normal (t_y, -t_x) points out of the inner cell: vertical sides upwards except
        # on the left boundary, horizontal sides leftwards except on the bottom boundary
        flip = False
        if d[0] == 0:
            flip = d[1] == 0
        else:
            flip = d[2] != 0
        if flip:
            return S(1.0) - t
        return t

    @_f
    def side_position(args: SideArg, s: SampleT) -> vec2:
        c = args.cell_arg
        d = _side_decode(c.res, s.element_index)
        t = _side_param(d, s.element_coords[0])
        if d[0] == 0:
            return c.origin + vec2(S(d[1]) * c.cell_size[0], (S(d[2]) + t) * c.cell_size[1])
        return c.origin + vec2((S(d[1]) + t) * c.cell_size[0], S(d[2]) * c.cell_size[1])

    @_f
    def side_deformation_gradient(args: SideArg, s: SampleT) -> vec2:
        d = _side_decode(args.cell_arg.res, s.element_index)
        sign = S(1.0) - S(2.0) * _side_param(d, S(0.0))
        if d[0] == 0:
            return vec2(S(0.0), sign * args.cell_arg.cell_size[1])
        return vec2(sign * args.cell_arg.cell_size[0], S(0.0))

    @_f
    def side_measure(args: SideArg, s: SampleT) -> S:
        d = _side_decode(args.cell_arg.res, s.element_index)
        return args.cell_arg.cell_size[1 - d[0]]

    @_f
    def side_measure_ratio(args: SideArg, s: SampleT) -> S:
        d = _side_decode(args.cell_arg.res, s.element_index)
        return S(1.0) / args.cell_arg.cell_size[d[0]]

    @_f
    def side_normal(args: SideArg, s: SampleT) -> vec2:
        d = _side_decode(args.cell_arg.res, s.element_index)
        sign = S(1.0)
        if d[1 + d[0]] == 0:
            sign = S(-1.0)
        n = vec2(S(0.0))
        n[d[0]] = sign
        return n

    @_f
    def side_inner_cell_index(args: SideArg, side: int) -> int:
        d = _side_decode(args.cell_arg.res, side)
        i = d[1]
        j = d[2]
        if d[0] == 0:
            i = wp.max(i - 1, 0)
        else:
            j = wp.max(j - 1, 0)
        return i * args.cell_arg.res[1] + j

    @_f
    def side_outer_cell_index(args: SideArg, side: int) -> int:
        res = args.cell_arg.res
        d = _side_decode(res, side)
        i = d[1]
        j = d[2]
        if d[0] == 0:
            i = wp.min(i, res[0] - 1)
        else:
            j = wp.min(j, res[1] - 1)
        return i * res[1] + j

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        d = _side_decode(args.cell_arg.res, side)
        t = _side_param(d, side_coords[0])
        if d[0] == 0:
            return Coords(wp.where(d[1] == 0, S(0.0), S(1.0)), t, S(0.0))
        return Coords(t, wp.where(d[2] == 0, S(0.0), S(1.0)), S(0.0))

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        res = args.cell_arg.res
        d = _side_decode(res, side)
        t = _side_param(d, side_coords[0])
        if d[0] == 0:
            return Coords(wp.where(d[1] == res[0], S(1.0), S(0.0)), t, S(0.0))
        return Coords(t, wp.where(d[2] == res[1], S(1.0), S(0.0)), S(0.0))

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Coords) -> Coords:
        res = args.cell_arg.res
        d = _side_decode(res, side)
        ci = cell_index // res[1]
        cj = cell_index - ci * res[1]
        x = S(ci) + cell_coords[0]
        y = S(cj) + cell_coords[1]
        eps = S(1.0e-5)
        if d[0] == 0:
            if wp.abs(x - S(d[1])) > eps:
                return Coords(S(OUTSIDE))
            return Coords(_side_param(d, y - S(d[2])), S(0.0), S(0.0))
        if wp.abs(y - S(d[2])) > eps:
            return Coords(S(OUTSIDE))
        return Coords(_side_param(d, x - S(d[1])), S(0.0), S(0.0))

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    @_f
    def side_inner_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat22:
        return cell_inverse_deformation_gradient(args.cell_arg, s)

    @_f
    def side_outer_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat22:
        return cell_inverse_deformation_gradient(args.cell_arg, s)

    @_f
    def boundary_side_index(args: SideIndexArg, b: int) -> int:
        nx = args.res[0]
        ny = args.res[1]
        if b < ny:
            return b
        if b < 2 * ny:
            return nx * ny + (b - ny)
        k = b - 2 * ny
        xsides = (nx + 1) * ny
        if k < nx:
            return xsides + k * (ny + 1)
        k = k - nx
        return xsides + k * (ny + 1) + ny

    del _f
    return SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_") or k == "_side_decode"})


class Grid2D(ReplicatedEnvironments, Geometry):
    """A regular 2D grid of ``res[0] x res[1]`` rectangular cells between ``bounds_lo`` and ``bounds_hi``.

    Args:
        res: number of cells along x and y.
        bounds_lo: lower corner (default ``(0, 0)``).
        bounds_hi: upper corner (default ``(1, 1)``).
        scalar_type: precision of positions (``wp.float32`` or ``wp.float64``).
        env_count: number of environments: copies of the grid, overlapping in space, numbered one after
            the other (see :mod:`.environments`).

    """

    dimension = 2

    def __init__(self, res: Any, bounds_lo: Any = None, bounds_hi: Any = None, scalar_type: Any = wp.float32,
                 env_count: int = 1) -> None:
        super().__init__(scalar_type)
        r = tuple(int(v) for v in res)
        if len(r) != 2 or min(r) < 1:
            raise ValueError(f"Grid2D: res must be two positive integers, got {res!r}")
        self.res = wp.vec2i(*r)
        lo = np.zeros(2) if bounds_lo is None else np.array([float(v) for v in bounds_lo])
        hi = np.ones(2) if bounds_hi is None else np.array([float(v) for v in bounds_hi])
        if np.any(hi <= lo):
            raise ValueError(f"Grid2D: bounds_hi {tuple(hi)} must exceed bounds_lo {tuple(lo)}")
        self._set_environments(env_count, grid2d_funcs(scalar_type))
        vec2 = vec_type(2, scalar_type)
        self.bounds_lo = vec2(*lo)
        self.bounds_hi = vec2(*hi)
        self.cell_size = vec2(*((hi - lo) / np.array(r)))
        self.origin = self.bounds_lo
        self.extents = vec2(*(hi - lo))

    @property
    def name(self) -> str:
        """``Grid2D`` (``_f64``, ``_env<n>``)."""
        return self._env_name(super().name)

    def reference_cell(self) -> Element:
        """Squares."""
        return Element.SQUARE

    def reference_side(self) -> Element:
        """Segments."""
        return Element.LINE_SEGMENT

    def _base_cell_count(self) -> int:
        """``res[0] * res[1]``."""
        return int(self.res[0]) * int(self.res[1])

    def _base_vertex_count(self) -> int:
        """``(res[0] + 1) * (res[1] + 1)``."""
        return (int(self.res[0]) + 1) * (int(self.res[1]) + 1)

    def _base_side_count(self) -> int:
        """Vertical plus horizontal sides."""
        nx, ny = int(self.res[0]), int(self.res[1])
        return (nx + 1) * ny + nx * (ny + 1)

    def _base_boundary_side_count(self) -> int:
        """``2 * (res[0] + res[1])``."""
        return 2 * (int(self.res[0]) + int(self.res[1]))

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
        """Vertices of each cell, ``(cell_count, 4)``, counter-clockwise from the lower-left corner."""
        nx, ny = int(self.res[0]), int(self.res[1])
        i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
        i, j = i.reshape(-1), j.reshape(-1)

        def v(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return a * (ny + 1) + b

        return np.stack([v(i, j), v(i + 1, j), v(i + 1, j + 1), v(i, j + 1)], axis=1)

    def _base_vertex_positions(self) -> np.ndarray:
        """Positions of the vertices, ``(vertex_count, 2)``, in vertex order."""
        nx, ny = int(self.res[0]), int(self.res[1])
        i, j = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="ij")
        lo = np.array(self.bounds_lo, dtype=np.float64)
        h = np.array(self.cell_size, dtype=np.float64)
        return np.stack([lo[0] + i.reshape(-1) * h[0], lo[1] + j.reshape(-1) * h[1]], axis=1)


__all__ = ["NULL_ELEMENT_INDEX", "Grid2D", "grid2d_funcs"]
