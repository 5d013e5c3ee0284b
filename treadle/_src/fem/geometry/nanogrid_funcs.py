"""Kernel functions of :class:`~.nanogrid.Nanogrid`: cells are the voxels of an index volume.

Positions are measured in the *corner lattice*: the index space of the cell volume shifted by half a voxel, so that
cell ``ijk`` (the voxel centred at index point ``ijk``) covers ``[ijk, ijk + 1]`` and its reference coordinates are
the lattice point minus ``ijk``. World position is ``origin + transform * lattice_point``, where ``transform`` is the
volume's index-to-world matrix and ``origin`` the world position of index point ``(-1/2, -1/2, -1/2)``.

A side is a face normal to axis ``a`` at lattice point ``p``; its cells are ``p - e_a`` (below) and ``p`` (above).
Face coordinates ``(u, v)`` run along the axes ``a + 1`` and ``a + 2`` (cyclically). The inner cell is the one below
when it exists; otherwise the face is *flipped*: its inner cell is the one above, its normal points along ``-a`` and
``u`` runs backwards, so that ``u x v`` keeps pointing out of the inner cell.

Adaptive grids (``adaptive=True``) measure the lattice in units of the finest voxels: cell ``c`` of level ``l``
covers ``[ijk, ijk + 2**l]`` (``ijk`` the finest voxel at its lowest corner, a multiple of ``2**l``), and a side of
level ``k`` covers ``2**k`` lattice units along ``u`` and ``v``; its level is stored above the flip bit.
"""

import functools
from types import SimpleNamespace
from typing import Any

import treadle as wp

from .. import codegen
from ..types import NULL_ELEMENT_INDEX, OUTSIDE, coords_type, sample_type
from .geometry import mat_type, vec_type

#: ``face_flags``: the axis in the low two bits, this bit when the face is flipped, the level above.
FLIP_BIT = 4
LEVEL_SHIFT = 3


@functools.cache
def nanogrid_funcs(S: Any, adaptive: bool = False) -> SimpleNamespace:
    """The kernel functions of sparse voxel grids of scalar type ``S`` (with cells of several levels: adaptive)."""
    vec3 = vec_type(3, S)
    mat33 = mat_type(3, 3, S)
    mat32 = mat_type(3, 2, S)
    Coords = coords_type(S)
    SampleT = sample_type(S)
    FLIP = FLIP_BIT
    LSHIFT = LEVEL_SHIFT
    ADAPTIVE = adaptive
    key = ("nanogrid", codegen.type_key(S), adaptive)

    cell_fields = {"cell_grid": wp.uint64, "cell_ijk": wp.array(dtype=wp.vec3i), "transform": mat33,
                   "inv_transform": mat33, "origin": vec3, "cell_volume": S}
    if adaptive:
        cell_fields.update({"cell_level": wp.array(dtype=int), "level_count": int})
    CellArg = codegen.struct("NanogridCellArg", cell_fields, *key)
    SideArg = codegen.struct("NanogridSideArg", {
        "cell_arg": CellArg, "face_ijk": wp.array(dtype=wp.vec3i), "face_flags": wp.array(dtype=int),
        "face_cells": wp.array(dtype=wp.vec2i)}, *key)
    SideIndexArg = codegen.struct("NanogridSideIndexArg", {"boundary_faces": wp.array(dtype=int)}, *key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def lattice_point(ijk: wp.vec3i, c: Coords, h: S) -> vec3:
        return vec3(S(ijk[0]) + h * c[0], S(ijk[1]) + h * c[1], S(ijk[2]) + h * c[2])

    @_f
    def cell_scale(args: CellArg, cell: int) -> S:
        # edge length of a cell in lattice units
        if wp.static(ADAPTIVE):
            return S(1 << args.cell_level[cell])
        return S(1.0)

    @_f
    def cell_position(args: CellArg, s: SampleT) -> vec3:
        c = s.element_index
        return args.origin + args.transform * lattice_point(args.cell_ijk[c], s.element_coords, cell_scale(args, c))

    @_f
    def cell_deformation_gradient(args: CellArg, s: SampleT) -> mat33:
        return args.transform * cell_scale(args, s.element_index)

    @_f
    def cell_inverse_deformation_gradient(args: CellArg, s: SampleT) -> mat33:
        return args.inv_transform * (S(1.0) / cell_scale(args, s.element_index))

    @_f
    def cell_measure(args: CellArg, s: SampleT) -> S:
        h = cell_scale(args, s.element_index)
        return args.cell_volume * h * h * h

    @_f
    def cell_normal(args: CellArg, s: SampleT) -> vec3:
        return vec3(S(0.0))

    @_f
    def local_coords(ijk: wp.vec3i, uvw: vec3, h: S) -> Coords:
        return Coords((uvw[0] - S(ijk[0])) / h, (uvw[1] - S(ijk[1])) / h, (uvw[2] - S(ijk[2])) / h)

    @_f
    def cell_coordinates(args: CellArg, cell_index: int, pos: vec3) -> Coords:
        return local_coords(args.cell_ijk[cell_index], args.inv_transform * (pos - args.origin),
                            cell_scale(args, cell_index))

    @_f
    def clamp_coords(c: Coords) -> Coords:
        return Coords(wp.clamp(c[0], S(0.0), S(1.0)), wp.clamp(c[1], S(0.0), S(1.0)), wp.clamp(c[2], S(0.0), S(1.0)))

    @_f
    def cell_closest_point(args: CellArg, cell_index: int, pos: vec3) -> tuple[Coords, S]:
        c = cell_coordinates(args, cell_index, pos)
        cc = clamp_coords(c)
        d = args.transform * (vec3(c[0] - cc[0], c[1] - cc[1], c[2] - cc[2]) * cell_scale(args, cell_index))
        return cc, wp.dot(d, d)

    @_f
    def find_cell(args: CellArg, v: wp.vec3i) -> int:
        # the cell covering lattice voxel v: on adaptive grids, the one whose level aligns its origin on v
        if wp.static(ADAPTIVE):
            for lvl in range(args.level_count):
                o = wp.vec3i((v[0] >> lvl) << lvl, (v[1] >> lvl) << lvl, (v[2] >> lvl) << lvl)
                c = wp.volume_lookup_index(args.cell_grid, o[0], o[1], o[2])
                if c >= 0:
                    if args.cell_level[c] == lvl:
                        return int(c)
            return -1
        return int(wp.volume_lookup_index(args.cell_grid, v[0], v[1], v[2]))

    @_f
    def outside_distance(args: CellArg, cell: int, uvw: vec3) -> S:
        # squared world distance from a lattice point to a cell
        lc = local_coords(args.cell_ijk[cell], uvw, cell_scale(args, cell))
        cc = clamp_coords(lc)
        d = args.transform * (vec3(lc[0] - cc[0], lc[1] - cc[1], lc[2] - cc[2]) * cell_scale(args, cell))
        return wp.dot(d, d)

    @_f
    def make_sample(args: CellArg, cell: int, uvw: vec3) -> SampleT:
        s = SampleT()
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        if cell < 0:
            s.element_index = NULL_ELEMENT_INDEX
            s.element_coords = Coords(S(OUTSIDE))
        else:
            s.element_index = cell
            s.element_coords = local_coords(args.cell_ijk[cell], uvw, cell_scale(args, cell))
        return s

    @_f
    def cell_lookup(args: CellArg, pos: vec3) -> SampleT:
        # the cell holding the point; when there is none, the closest cell among the 26 neighbouring voxels
        # (reference coordinates are then those of the point itself, outside [0, 1])
        uvw = args.inv_transform * (pos - args.origin)
        ijk = wp.vec3i(int(wp.floor(uvw[0])), int(wp.floor(uvw[1])), int(wp.floor(uvw[2])))
        cell = find_cell(args, ijk)
        if cell < 0:
            best_d = S(1.0e30)
            for n in range(27):
                if n != 13:
                    nb = wp.vec3i(ijk[0] + n // 9 - 1, ijk[1] + (n // 3) % 3 - 1, ijk[2] + n % 3 - 1)
                    c = find_cell(args, nb)
                    if c >= 0:
                        dd = outside_distance(args, c, uvw)
                        if dd < best_d:
                            best_d = dd
                            cell = c
        return make_sample(args, cell, uvw)

    @_f
    def cell_lookup_radius(args: CellArg, pos: vec3, radius: S) -> SampleT:
        # ``cell_lookup``, then, when it finds no cell, the closest cell within ``radius`` (at most 16 voxels away)
        s = cell_lookup(args, pos)
        if s.element_index != NULL_ELEMENT_INDEX or not (radius > S(0.0)):
            return s
        uvw = args.inv_transform * (pos - args.origin)
        inv = args.inv_transform
        r = wp.vec3i()
        for a in range(3):
            r[a] = wp.min(int(wp.ceil(radius * wp.length(vec3(inv[a, 0], inv[a, 1], inv[a, 2])))), 16)
        ijk = wp.vec3i(int(wp.floor(uvw[0])), int(wp.floor(uvw[1])), int(wp.floor(uvw[2])))
        best_d = radius * radius
        cell = -1
        for di in range(-r[0], r[0] + 1):
            for dj in range(-r[1], r[1] + 1):
                for dk in range(-r[2], r[2] + 1):
                    c = find_cell(args, wp.vec3i(ijk[0] + di, ijk[1] + dj, ijk[2] + dk))
                    if c >= 0:
                        dd = outside_distance(args, c, uvw)
                        if dd <= best_d:
                            best_d = dd
                            cell = c
        if cell < 0:
            return s
        return make_sample(args, cell, uvw)

    # ------------------------------------------------------------------------------------------------ sides
    @_f
    def side_u(flags: int, u: S) -> S:
        if flags & FLIP:
            return S(1.0) - u
        return u

    @_f
    def side_scale(flags: int) -> S:
        if wp.static(ADAPTIVE):
            return S(1 << (flags >> LSHIFT))
        return S(1.0)

    @_f
    def side_point(p: wp.vec3i, flags: int, sc: Coords) -> vec3:
        a = flags & 3
        h = side_scale(flags)
        q = vec3(S(p[0]), S(p[1]), S(p[2]))
        q[(a + 1) % 3] = q[(a + 1) % 3] + h * side_u(flags, sc[0])
        q[(a + 2) % 3] = q[(a + 2) % 3] + h * sc[1]
        return q

    @_f
    def side_position(args: SideArg, s: SampleT) -> vec3:
        c = args.cell_arg
        f = s.element_index
        return c.origin + c.transform * side_point(args.face_ijk[f], args.face_flags[f], s.element_coords)

    @_f
    def side_deformation_gradient(args: SideArg, s: SampleT) -> mat32:
        t = args.cell_arg.transform
        flags = args.face_flags[s.element_index]
        a = flags & 3
        b = (a + 1) % 3
        c = (a + 2) % 3
        h = side_scale(flags)
        sign = S(1.0) - S(2.0) * S((flags & FLIP) // FLIP)
        m = mat32()
        for r in range(3):
            m[r, 0] = t[r, b] * sign * h
            m[r, 1] = t[r, c] * h
        return m

    @_f
    def side_measure(args: SideArg, s: SampleT) -> S:
        t = args.cell_arg.transform
        flags = args.face_flags[s.element_index]
        a = flags & 3
        b = (a + 1) % 3
        c = (a + 2) % 3
        h = side_scale(flags)
        return wp.length(wp.cross(vec3(t[0, b], t[1, b], t[2, b]), vec3(t[0, c], t[1, c], t[2, c]))) * h * h

    @_f
    def side_measure_ratio(args: SideArg, s: SampleT) -> S:
        # side measure over the measure of the smaller neighbour cell
        cells = args.face_cells[s.element_index]
        h = wp.min(cell_scale(args.cell_arg, cells[0]), cell_scale(args.cell_arg, cells[1]))
        return side_measure(args, s) / (args.cell_arg.cell_volume * h * h * h)

    @_f
    def side_normal(args: SideArg, s: SampleT) -> vec3:
        # the gradient of the lattice coordinate along the face's axis, pointing out of the inner cell
        inv = args.cell_arg.inv_transform
        flags = args.face_flags[s.element_index]
        a = flags & 3
        n = wp.normalize(vec3(inv[a, 0], inv[a, 1], inv[a, 2]))
        if flags & FLIP:
            return -n
        return n

    @_f
    def side_inner_cell_index(args: SideArg, side: int) -> int:
        return args.face_cells[side][0]

    @_f
    def side_outer_cell_index(args: SideArg, side: int) -> int:
        return args.face_cells[side][1]

    @_f
    def side_cell_coords(args: SideArg, side: int, sc: Coords, outer: int) -> Coords:
        cell = args.face_cells[side][outer]
        q = side_point(args.face_ijk[side], args.face_flags[side], sc)
        return local_coords(args.cell_arg.cell_ijk[cell], q, cell_scale(args.cell_arg, cell))

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args, side, side_coords, 0)

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args, side, side_coords, 1)

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Coords) -> Coords:
        q = lattice_point(args.cell_arg.cell_ijk[cell_index], cell_coords, cell_scale(args.cell_arg, cell_index))
        p = args.face_ijk[side]
        flags = args.face_flags[side]
        a = flags & 3
        if wp.abs(q[a] - S(p[a])) > S(1.0e-5):
            return Coords(S(OUTSIDE))
        b = (a + 1) % 3
        c = (a + 2) % 3
        h = side_scale(flags)
        u = (q[b] - S(p[b])) / h
        v = (q[c] - S(p[c])) / h
        if wp.static(ADAPTIVE):
            # a coarse cell's face holds several sides: the point may lie on another one
            eps = S(1.0e-5)
            if u < -eps or u > S(1.0) + eps or v < -eps or v > S(1.0) + eps:
                return Coords(S(OUTSIDE))
        return Coords(side_u(flags, u), v, S(0.0))

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    @_f
    def side_inner_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat33:
        h = cell_scale(args.cell_arg, args.face_cells[s.element_index][0])
        return args.cell_arg.inv_transform * (S(1.0) / h)

    @_f
    def side_outer_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat33:
        h = cell_scale(args.cell_arg, args.face_cells[s.element_index][1])
        return args.cell_arg.inv_transform * (S(1.0) / h)

    @_f
    def boundary_side_index(args: SideIndexArg, b: int) -> int:
        return args.boundary_faces[b]

    del _f
    return SimpleNamespace(**locals())
