"""Kernel functions of :class:`~.nanogrid.Nanogrid`: cells are the voxels of an index volume.

Positions are measured in the *corner lattice*: the index space of the cell volume shifted by half a voxel, so that
cell ``ijk`` (the voxel centred at index point ``ijk``) covers ``[ijk, ijk + 1]`` and its reference coordinates are
the lattice point minus ``ijk``. World position is ``origin + transform * lattice_point``, where ``transform`` is the
volume's index-to-world matrix and ``origin`` the world position of index point ``(-1/2, -1/2, -1/2)``.

A side is a face normal to axis ``a`` at lattice point ``p``; its cells are ``p - e_a`` (below) and ``p`` (above).
Face coordinates ``(u, v)`` run along the axes ``a + 1`` and ``a + 2`` (cyclically). The inner cell is the one below
when it exists; otherwise the face is *flipped*: its inner cell is the one above, its normal points along ``-a`` and
``u`` runs backwards, so that ``u x v`` keeps pointing out of the inner cell.
"""

import functools
from types import SimpleNamespace
from typing import Any

import treadle as wp

from .. import codegen
from ..types import NULL_ELEMENT_INDEX, OUTSIDE, coords_type, sample_type
from .geometry import mat_type, vec_type

#: ``face_flags``: the axis in the low two bits, this bit when the face is flipped.
FLIP_BIT = 4


@functools.cache
def nanogrid_funcs(S: Any) -> SimpleNamespace:
    """The kernel functions of sparse voxel grids of scalar type ``S``."""
    vec3 = vec_type(3, S)
    mat33 = mat_type(3, 3, S)
    mat32 = mat_type(3, 2, S)
    Coords = coords_type(S)
    SampleT = sample_type(S)
    FLIP = FLIP_BIT
    key = ("nanogrid", codegen.type_key(S))

    CellArg = codegen.struct("NanogridCellArg", {
        "cell_grid": wp.uint64, "cell_ijk": wp.array(dtype=wp.vec3i), "transform": mat33, "inv_transform": mat33,
        "origin": vec3, "cell_volume": S}, *key)
    SideArg = codegen.struct("NanogridSideArg", {
        "cell_arg": CellArg, "face_ijk": wp.array(dtype=wp.vec3i), "face_flags": wp.array(dtype=int),
        "face_cells": wp.array(dtype=wp.vec2i)}, *key)
    SideIndexArg = codegen.struct("NanogridSideIndexArg", {"boundary_faces": wp.array(dtype=int)}, *key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def lattice_point(ijk: wp.vec3i, c: Coords) -> vec3:
        return vec3(S(ijk[0]) + c[0], S(ijk[1]) + c[1], S(ijk[2]) + c[2])

    @_f
    def cell_position(args: CellArg, s: SampleT) -> vec3:
        return args.origin + args.transform * lattice_point(args.cell_ijk[s.element_index], s.element_coords)

    @_f
    def cell_deformation_gradient(args: CellArg, s: SampleT) -> mat33:
        return args.transform

    @_f
    def cell_inverse_deformation_gradient(args: CellArg, s: SampleT) -> mat33:
        return args.inv_transform

    @_f
    def cell_measure(args: CellArg, s: SampleT) -> S:
        return args.cell_volume

    @_f
    def cell_normal(args: CellArg, s: SampleT) -> vec3:
        return vec3(S(0.0))

    @_f
    def local_coords(ijk: wp.vec3i, uvw: vec3) -> Coords:
        return Coords(uvw[0] - S(ijk[0]), uvw[1] - S(ijk[1]), uvw[2] - S(ijk[2]))

    @_f
    def cell_coordinates(args: CellArg, cell_index: int, pos: vec3) -> Coords:
        return local_coords(args.cell_ijk[cell_index], args.inv_transform * (pos - args.origin))

    @_f
    def clamp_coords(c: Coords) -> Coords:
        return Coords(wp.clamp(c[0], S(0.0), S(1.0)), wp.clamp(c[1], S(0.0), S(1.0)), wp.clamp(c[2], S(0.0), S(1.0)))

    @_f
    def cell_closest_point(args: CellArg, cell_index: int, pos: vec3) -> tuple[Coords, S]:
        c = cell_coordinates(args, cell_index, pos)
        cc = clamp_coords(c)
        d = args.transform * vec3(c[0] - cc[0], c[1] - cc[1], c[2] - cc[2])
        return cc, wp.dot(d, d)

    @_f
    def cell_lookup(args: CellArg, pos: vec3) -> SampleT:
        # the voxel holding the point; when it is not a cell, the closest cell among its 26 neighbours
        # (reference coordinates are then those of the point itself, outside [0, 1])
        uvw = args.inv_transform * (pos - args.origin)
        ijk = wp.vec3i(int(wp.floor(uvw[0])), int(wp.floor(uvw[1])), int(wp.floor(uvw[2])))
        cell = wp.volume_lookup_index(args.cell_grid, ijk[0], ijk[1], ijk[2])
        best = ijk
        if cell < 0:
            best_d = S(1.0e30)
            for n in range(27):
                if n != 13:
                    nb = wp.vec3i(ijk[0] + n // 9 - 1, ijk[1] + (n // 3) % 3 - 1, ijk[2] + n % 3 - 1)
                    c = wp.volume_lookup_index(args.cell_grid, nb[0], nb[1], nb[2])
                    if c >= 0:
                        lc = local_coords(nb, uvw)
                        cc = clamp_coords(lc)
                        d = args.transform * vec3(lc[0] - cc[0], lc[1] - cc[1], lc[2] - cc[2])
                        dd = wp.dot(d, d)
                        if dd < best_d:
                            best_d = dd
                            cell = c
                            best = nb
        s = SampleT()
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        if cell < 0:
            s.element_index = NULL_ELEMENT_INDEX
            s.element_coords = Coords(S(OUTSIDE))
        else:
            s.element_index = int(cell)
            s.element_coords = local_coords(best, uvw)
        return s

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
        for di in range(-r[0], r[0] + 1):
            for dj in range(-r[1], r[1] + 1):
                for dk in range(-r[2], r[2] + 1):
                    nb = wp.vec3i(ijk[0] + di, ijk[1] + dj, ijk[2] + dk)
                    c = wp.volume_lookup_index(args.cell_grid, nb[0], nb[1], nb[2])
                    if c >= 0:
                        lc = local_coords(nb, uvw)
                        cc = clamp_coords(lc)
                        d = args.transform * vec3(lc[0] - cc[0], lc[1] - cc[1], lc[2] - cc[2])
                        dd = wp.dot(d, d)
                        if dd <= best_d:
                            best_d = dd
                            s.element_index = int(c)
                            s.element_coords = lc
        return s

    # ------------------------------------------------------------------------------------------------ sides
    @_f
    def side_u(flags: int, u: S) -> S:
        if flags & FLIP:
            return S(1.0) - u
        return u

    @_f
    def side_point(p: wp.vec3i, flags: int, sc: Coords) -> vec3:
        a = flags & 3
        q = vec3(S(p[0]), S(p[1]), S(p[2]))
        q[(a + 1) % 3] = q[(a + 1) % 3] + side_u(flags, sc[0])
        q[(a + 2) % 3] = q[(a + 2) % 3] + sc[1]
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
        sign = S(1.0) - S(2.0) * S((flags & FLIP) // FLIP)
        m = mat32()
        for r in range(3):
            m[r, 0] = t[r, b] * sign
            m[r, 1] = t[r, c]
        return m

    @_f
    def side_measure(args: SideArg, s: SampleT) -> S:
        t = args.cell_arg.transform
        a = args.face_flags[s.element_index] & 3
        b = (a + 1) % 3
        c = (a + 2) % 3
        return wp.length(wp.cross(vec3(t[0, b], t[1, b], t[2, b]), vec3(t[0, c], t[1, c], t[2, c])))

    @_f
    def side_measure_ratio(args: SideArg, s: SampleT) -> S:
        return side_measure(args, s) / args.cell_arg.cell_volume

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
        return local_coords(args.cell_arg.cell_ijk[cell], q)

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args, side, side_coords, 0)

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args, side, side_coords, 1)

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Coords) -> Coords:
        q = lattice_point(args.cell_arg.cell_ijk[cell_index], cell_coords)
        p = args.face_ijk[side]
        flags = args.face_flags[side]
        a = flags & 3
        if wp.abs(q[a] - S(p[a])) > S(1.0e-5):
            return Coords(S(OUTSIDE))
        b = (a + 1) % 3
        c = (a + 2) % 3
        return Coords(side_u(flags, q[b] - S(p[b])), q[c] - S(p[c]), S(0.0))

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    @_f
    def side_inner_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat33:
        return args.cell_arg.inv_transform

    @_f
    def side_outer_inverse_deformation_gradient(args: SideArg, s: SampleT) -> mat33:
        return args.cell_arg.inv_transform

    @_f
    def boundary_side_index(args: SideIndexArg, b: int) -> int:
        return args.boundary_faces[b]

    del _f
    return SimpleNamespace(**locals())
