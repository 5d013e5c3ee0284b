"""Unstructured meshes: triangles and quadrilaterals (in 2D or on 3D surfaces), tetrahedra and hexahedra.

Cells are given by vertex indices in the reference element's order (``ELEMENT_VERTICES``: counter-clockwise for
triangles and quadrilaterals; for hexahedra the bottom face counter-clockwise, then the top face). Positions are
the reference element mapped linearly (simplices) or multilinearly (quadrilaterals, hexahedra) onto the vertices.
Sides come from :mod:`.mesh_topology`.
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from ..element import ELEMENT_DIMENSION, Element
from ..space.shape.base import reference_vertex_coords
from ..types import OUTSIDE, coords_type, sample_type
from .closest_point import project_on_tet_at_origin, project_on_tri_at_origin
from .environments import check_cell_env, tagged_funcs
from .geometry import Geometry, mat_type, vec_type
from .mesh_topology import CELL_FACETS, build_sides

_REF_VOLUME = {Element.TRIANGLE: 0.5, Element.TETRAHEDRON: 1.0 / 6.0, Element.SQUARE: 1.0, Element.CUBE: 1.0}
_SIDE_OF = {Element.TRIANGLE: Element.LINE_SEGMENT, Element.SQUARE: Element.LINE_SEGMENT,
            Element.TETRAHEDRON: Element.TRIANGLE, Element.CUBE: Element.SQUARE}


@functools.cache
def mesh_funcs(element: Element, D: int, S: Any) -> SimpleNamespace:
    """The kernel functions of meshes of ``element`` cells in dimension ``D``, scalar type ``S``."""
    C = ELEMENT_DIMENSION[element]
    NV = len(reference_vertex_coords(element))
    side_el = _SIDE_OF[element]
    SM = len(CELL_FACETS[element][0])  # vertices per side
    simplex = element in (Element.TRIANGLE, Element.TETRAHEDRON)
    vecD = vec_type(D, S)
    vecC = vec_type(C, S)
    matDC = mat_type(D, C, S)
    matCD = mat_type(C, D, S)
    matCC = mat_type(C, C, S)
    VNV = vec_type(NV, S)
    Coords = coords_type(S)
    SampleT = sample_type(S)
    REFM = mat_type(NV, 3, S)
    REF = REFM(*[float(v) for v in reference_vertex_coords(element).reshape(-1)])
    REF_VOL = _REF_VOLUME[element]
    key = ("mesh", element.value, D, codegen.type_key(S))

    CellArg = codegen.struct("MeshCellArg", {"vertex_indices": wp.array2d(dtype=int), "positions": wp.array(dtype=vecD),
                                             "bvh_id": wp.uint64}, *key)
    SideArg = codegen.struct("MeshSideArg", {"cell_arg": CellArg, "side_vertices": wp.array2d(dtype=int),
                                             "inner": wp.array(dtype=int), "outer": wp.array(dtype=int),
                                             "inner_local": wp.array2d(dtype=int),
                                             "outer_local": wp.array2d(dtype=int)}, *key)
    SideIndexArg = codegen.struct("MeshSideIndexArg", {"boundary": wp.array(dtype=int)}, *key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    # ----------------------------------------------------------------------------------- vertex weights
    if element == Element.TRIANGLE:
        @_f
        def vertex_weights(c: Coords) -> VNV:
            return VNV(c[0], c[1], c[2])
    elif element == Element.TETRAHEDRON:
        @_f
        def vertex_weights(c: Coords) -> VNV:
            return VNV(S(1.0) - c[0] - c[1] - c[2], c[0], c[1], c[2])
    elif element == Element.SQUARE:
        @_f
        def vertex_weights(c: Coords) -> VNV:
            x = c[0]
            y = c[1]
            return VNV((S(1.0) - x) * (S(1.0) - y), x * (S(1.0) - y), x * y, (S(1.0) - x) * y)
    else:
        @_f
        def vertex_weights(c: Coords) -> VNV:
            x = c[0]
            y = c[1]
            z = c[2]
            ox = S(1.0) - x
            oy = S(1.0) - y
            oz = S(1.0) - z
            return VNV(ox * oy * oz, x * oy * oz, x * y * oz, ox * y * oz, ox * oy * z, x * oy * z, x * y * z,
                       ox * y * z)

    # ----------------------------------------------------------------------------------- cells
    @_f
    def cell_position(args: CellArg, s: SampleT) -> vecD:
        w = vertex_weights(s.element_coords)
        x = vecD()
        for v in range(wp.static(NV)):
            x += w[v] * args.positions[args.vertex_indices[s.element_index, v]]
        return x

    if element == Element.SQUARE:
        @_f
        def deformation_at(args: CellArg, cell: int, c: Coords) -> matDC:
            p0 = args.positions[args.vertex_indices[cell, 0]]
            p1 = args.positions[args.vertex_indices[cell, 1]]
            p2 = args.positions[args.vertex_indices[cell, 2]]
            p3 = args.positions[args.vertex_indices[cell, 3]]
            x = c[0]
            y = c[1]
            dx = (p1 - p0) * (S(1.0) - y) + (p2 - p3) * y
            dy = (p3 - p0) * (S(1.0) - x) + (p2 - p1) * x
            return wp.matrix_from_cols(dx, dy)
    elif element == Element.CUBE:
        @_f
        def deformation_at(args: CellArg, cell: int, c: Coords) -> matDC:
            p0 = args.positions[args.vertex_indices[cell, 0]]
            p1 = args.positions[args.vertex_indices[cell, 1]]
            p2 = args.positions[args.vertex_indices[cell, 2]]
            p3 = args.positions[args.vertex_indices[cell, 3]]
            p4 = args.positions[args.vertex_indices[cell, 4]]
            p5 = args.positions[args.vertex_indices[cell, 5]]
            p6 = args.positions[args.vertex_indices[cell, 6]]
            p7 = args.positions[args.vertex_indices[cell, 7]]
            x = c[0]
            y = c[1]
            z = c[2]
            ox = S(1.0) - x
            oy = S(1.0) - y
            oz = S(1.0) - z
            dx = ((p1 - p0) * oy + (p2 - p3) * y) * oz + ((p5 - p4) * oy + (p6 - p7) * y) * z
            dy = ((p3 - p0) * ox + (p2 - p1) * x) * oz + ((p7 - p4) * ox + (p6 - p5) * x) * z
            dz = ((p4 - p0) * ox + (p5 - p1) * x) * oy + ((p7 - p3) * ox + (p6 - p2) * x) * y
            return wp.matrix_from_cols(dx, dy, dz)
    elif element == Element.TRIANGLE:
        @_f
        def deformation_at(args: CellArg, cell: int, c: Coords) -> matDC:
            p0 = args.positions[args.vertex_indices[cell, 0]]
            return wp.matrix_from_cols(args.positions[args.vertex_indices[cell, 1]] - p0,
                                       args.positions[args.vertex_indices[cell, 2]] - p0)
    else:
        @_f
        def deformation_at(args: CellArg, cell: int, c: Coords) -> matDC:
            p0 = args.positions[args.vertex_indices[cell, 0]]
            return wp.matrix_from_cols(args.positions[args.vertex_indices[cell, 1]] - p0,
                                       args.positions[args.vertex_indices[cell, 2]] - p0,
                                       args.positions[args.vertex_indices[cell, 3]] - p0)

    @_f
    def cell_deformation_gradient(args: CellArg, s: SampleT) -> matDC:
        return deformation_at(args, s.element_index, s.element_coords)

    if D == C:
        @_f
        def pseudo_inverse(f: matDC) -> matCD:
            return wp.inverse(f)

        @_f
        def jacobian_measure(f: matDC) -> S:
            return wp.abs(wp.determinant(f))
    else:
        @_f
        def pseudo_inverse(f: matDC) -> matCD:
            ft = wp.transpose(f)
            return wp.inverse(ft * f) * ft

        @_f
        def jacobian_measure(f: matDC) -> S:
            ft = wp.transpose(f)
            return wp.sqrt(wp.abs(wp.determinant(ft * f)))

    @_f
    def cell_inverse_deformation_gradient(args: CellArg, s: SampleT) -> matCD:
        return pseudo_inverse(deformation_at(args, s.element_index, s.element_coords))

    @_f
    def cell_measure(args: CellArg, s: SampleT) -> S:
        return jacobian_measure(deformation_at(args, s.element_index, s.element_coords)) * S(REF_VOL)

    if D == 3 and C == 2:
        @_f
        def normal_at(args: CellArg, cell: int, c: Coords) -> vecD:
            f = deformation_at(args, cell, c)
            return wp.normalize(wp.cross(vecD(f[0, 0], f[1, 0], f[2, 0]), vecD(f[0, 1], f[1, 1], f[2, 1])))
    else:
        @_f
        def normal_at(args: CellArg, cell: int, c: Coords) -> vecD:
            return vecD()

    @_f
    def cell_normal(args: CellArg, s: SampleT) -> vecD:
        return normal_at(args, s.element_index, s.element_coords)

    @_f
    def to_coords(xi: vecC) -> Coords:
        if wp.static(element == Element.TRIANGLE):
            return Coords(S(1.0) - xi[0] - xi[1], xi[0], xi[1])
        elif wp.static(C == 2):
            return Coords(xi[0], xi[1], S(0.0))
        else:
            return Coords(xi[0], xi[1], xi[2])

    @_f
    def from_coords(c: Coords) -> vecC:
        if wp.static(element == Element.TRIANGLE):
            return vecC(c[1], c[2])
        elif wp.static(C == 2):
            return vecC(c[0], c[1])
        else:
            return vecC(c[0], c[1], c[2])

    if simplex:
        @_f
        def cell_coordinates(args: CellArg, cell_index: int, pos: vecD) -> Coords:
            c0 = Coords()
            if wp.static(element == Element.TRIANGLE):
                c0 = Coords(S(1.0), S(0.0), S(0.0))
            f = deformation_at(args, cell_index, c0)
            p0 = args.positions[args.vertex_indices[cell_index, 0]]
            return to_coords(pseudo_inverse(f) * (pos - p0))

        @_f
        def clamp_coords(c: Coords) -> Coords:
            w = vertex_weights(c)
            total = S(0.0)
            for v in range(wp.static(NV)):
                w[v] = wp.max(w[v], S(0.0))
                total += w[v]
            w = w / total
            if wp.static(element == Element.TRIANGLE):
                return Coords(w[0], w[1], w[2])
            else:
                return Coords(w[1], w[2], w[3])
    else:
        @_f
        def cell_coordinates(args: CellArg, cell_index: int, pos: vecD) -> Coords:
            c = Coords(S(0.5), S(0.5), S(0.5))
            if wp.static(C == 2):
                c[2] = S(0.0)
            for _it in range(12):
                w = vertex_weights(c)
                x = vecD()
                for v in range(wp.static(NV)):
                    x += w[v] * args.positions[args.vertex_indices[cell_index, v]]
                step = pseudo_inverse(deformation_at(args, cell_index, c)) * (x - pos)
                for d in range(wp.static(C)):
                    c[d] = c[d] - step[d]
            return c

        @_f
        def clamp_coords(c: Coords) -> Coords:
            r = c
            for d in range(wp.static(C)):
                r[d] = wp.clamp(c[d], S(0.0), S(1.0))
            return r

    @_f
    def position_at(args: CellArg, cell: int, c: Coords) -> vecD:
        w = vertex_weights(c)
        x = vecD()
        for v in range(wp.static(NV)):
            x += w[v] * args.positions[args.vertex_indices[cell, v]]
        return x

    if simplex:
        @_f
        def cell_closest_point(args: CellArg, cell_index: int, pos: vecD) -> tuple[Coords, S]:
            # the exact projection on the closed simplex (clamped coordinates are not the closest point)
            p0 = args.positions[args.vertex_indices[cell_index, 0]]
            e0 = args.positions[args.vertex_indices[cell_index, 1]] - p0
            e1 = args.positions[args.vertex_indices[cell_index, 2]] - p0
            if wp.static(element == Element.TRIANGLE):
                r = project_on_tri_at_origin(pos - p0, e0, e1)
                return Coords(r[1]), S(r[0])
            else:
                e2 = args.positions[args.vertex_indices[cell_index, 3]] - p0
                r = project_on_tet_at_origin(pos - p0, e0, e1, e2)
                return Coords(r[1]), S(r[0])
    else:
        @_f
        def cell_closest_point(args: CellArg, cell_index: int, pos: vecD) -> tuple[Coords, S]:
            c = clamp_coords(cell_coordinates(args, cell_index, pos))
            d = position_at(args, cell_index, c) - pos
            return c, wp.dot(d, d)

    @_f
    def cell_lookup(args: CellArg, pos: vecD) -> SampleT:
        best = S(1.0e30)
        best_cell = -1
        best_coords = Coords()
        n = args.vertex_indices.shape[0]
        if args.bvh_id != wp.uint64(0):
            lo = wp.vec3()
            hi = wp.vec3()
            for d in range(wp.static(D)):
                lo[d] = float(pos[d])
                hi[d] = float(pos[d])
            query = wp.bvh_query_aabb(args.bvh_id, lo, hi)
            cand = 0
            while wp.bvh_query_next(query, cand):
                r = cell_closest_point(args, cand, pos)
                if r[1] < best:
                    best = r[1]
                    best_cell = cand
                    best_coords = r[0]
        if best_cell < 0:
            for cell in range(n):
                r = cell_closest_point(args, cell, pos)
                if r[1] < best:
                    best = r[1]
                    best_cell = cell
                    best_coords = r[0]
        s = SampleT()
        s.element_index = best_cell
        s.element_coords = best_coords
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        return s

    # ----------------------------------------------------------------------------------- sides
    VSM = vec_type(SM, S)
    if side_el == Element.LINE_SEGMENT:
        @_f
        def side_weights(c: Coords) -> VSM:
            return VSM(S(1.0) - c[0], c[0])
    elif side_el == Element.TRIANGLE:
        @_f
        def side_weights(c: Coords) -> VSM:
            return VSM(c[0], c[1], c[2])
    else:
        @_f
        def side_weights(c: Coords) -> VSM:
            return VSM((S(1.0) - c[0]) * (S(1.0) - c[1]), c[0] * (S(1.0) - c[1]), c[0] * c[1],
                       (S(1.0) - c[0]) * c[1])

    @_f
    def side_vertex(args: SideArg, side: int, i: int) -> vecD:
        return args.cell_arg.positions[args.side_vertices[side, i]]

    @_f
    def side_position(args: SideArg, s: SampleT) -> vecD:
        w = side_weights(s.element_coords)
        x = vecD()
        for i in range(wp.static(SM)):
            x += w[i] * side_vertex(args, s.element_index, i)
        return x

    if side_el == Element.LINE_SEGMENT:
        @_f
        def side_deformation_gradient(args: SideArg, s: SampleT) -> vecD:
            return side_vertex(args, s.element_index, 1) - side_vertex(args, s.element_index, 0)

        @_f
        def side_measure(args: SideArg, s: SampleT) -> S:
            return wp.length(side_deformation_gradient(args, s))
    else:
        matD2 = mat_type(D, 2, S)

        @_f
        def side_frame(args: SideArg, s: SampleT) -> matD2:
            side = s.element_index
            p0 = side_vertex(args, side, 0)
            p1 = side_vertex(args, side, 1)
            p2 = side_vertex(args, side, 2)
            if wp.static(side_el == Element.TRIANGLE):
                return wp.matrix_from_cols(p1 - p0, p2 - p0)
            else:
                p3 = side_vertex(args, side, 3)
                u = s.element_coords[0]
                v = s.element_coords[1]
                du = (p1 - p0) * (S(1.0) - v) + (p2 - p3) * v
                dv = (p3 - p0) * (S(1.0) - u) + (p2 - p1) * u
                return wp.matrix_from_cols(du, dv)

        @_f
        def side_deformation_gradient(args: SideArg, s: SampleT) -> matD2:
            return side_frame(args, s)

        @_f
        def side_measure(args: SideArg, s: SampleT) -> S:
            f = side_frame(args, s)
            a = wp.length(wp.cross(vecD(f[0, 0], f[1, 0], f[2, 0]), vecD(f[0, 1], f[1, 1], f[2, 1])))
            if wp.static(side_el == Element.TRIANGLE):
                return S(0.5) * a
            else:
                return a

    @_f
    def side_inner_cell_index(args: SideArg, side: int) -> int:
        return args.inner[side]

    @_f
    def side_outer_cell_index(args: SideArg, side: int) -> int:
        return args.outer[side]

    @_f
    def side_cell_coords(args: SideArg, side: int, sc: Coords, outer: int) -> Coords:
        w = side_weights(sc)
        c = Coords()
        for i in range(wp.static(SM)):
            lv = args.inner_local[side, i]
            if outer != 0:
                lv = args.outer_local[side, i]
            c += w[i] * Coords(REF[lv, 0], REF[lv, 1], REF[lv, 2])
        return c

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args, side, side_coords, 0)

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Coords) -> Coords:
        return side_cell_coords(args, side, side_coords, 1)

    if D == 2:
        @_f
        def side_normal(args: SideArg, s: SampleT) -> vecD:
            t = side_vertex(args, s.element_index, 1) - side_vertex(args, s.element_index, 0)
            return wp.normalize(vecD(t[1], -t[0]))
    elif side_el == Element.LINE_SEGMENT:
        @_f
        def side_normal(args: SideArg, s: SampleT) -> vecD:
            t = side_vertex(args, s.element_index, 1) - side_vertex(args, s.element_index, 0)
            cell = args.inner[s.element_index]
            cc = side_cell_coords(args, s.element_index, s.element_coords, 0)
            return wp.normalize(wp.cross(t, normal_at(args.cell_arg, cell, cc)))
    else:
        @_f
        def side_normal(args: SideArg, s: SampleT) -> vecD:
            f = side_frame(args, s)
            return wp.normalize(wp.cross(vecD(f[0, 0], f[1, 0], f[2, 0]), vecD(f[0, 1], f[1, 1], f[2, 1])))

    CENTER = Coords(*([1.0 / 3.0] * 3 if element == Element.TRIANGLE else
                      [0.25] * 3 if element == Element.TETRAHEDRON else
                      [0.5, 0.5, 0.0] if C == 2 else [0.5] * 3))

    @_f
    def cell_measure_at_center(args: CellArg, cell: int) -> S:
        return jacobian_measure(deformation_at(args, cell, CENTER)) * S(REF_VOL)

    @_f
    def side_measure_ratio(args: SideArg, s: SampleT) -> S:
        m = side_measure(args, s)
        a = cell_measure_at_center(args.cell_arg, args.inner[s.element_index])
        b = cell_measure_at_center(args.cell_arg, args.outer[s.element_index])
        return m / wp.min(a, b)

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Coords) -> Coords:
        outer = 0
        if cell_index == args.inner[side]:
            outer = 0
        elif cell_index == args.outer[side]:
            outer = 1
        else:
            return Coords(S(OUTSIDE))
        eps = S(1.0e-5)
        if wp.static(simplex):
            w = vertex_weights(cell_coords)
            total = S(0.0)
            out = Coords()
            for i in range(wp.static(SM)):
                lv = args.inner_local[side, i]
                if outer != 0:
                    lv = args.outer_local[side, i]
                total += w[lv]
                if wp.static(SM == 2):
                    if i == 1:
                        out[0] = w[lv]
                else:
                    out[i] = w[lv]
            if wp.abs(total - S(1.0)) > eps:
                return Coords(S(OUTSIDE))
            return out
        else:
            l0 = args.inner_local[side, 0]
            l1 = args.inner_local[side, 1]
            l3 = args.inner_local[side, SM - 1]
            if outer != 0:
                l0 = args.outer_local[side, 0]
                l1 = args.outer_local[side, 1]
                l3 = args.outer_local[side, SM - 1]
            r0 = Coords(REF[l0, 0], REF[l0, 1], REF[l0, 2])
            e1 = Coords(REF[l1, 0], REF[l1, 1], REF[l1, 2]) - r0
            e3 = Coords(REF[l3, 0], REF[l3, 1], REF[l3, 2]) - r0
            u = wp.dot(cell_coords - r0, e1)
            v = S(0.0)
            q = r0 + u * e1
            if wp.static(SM == 4):
                v = wp.dot(cell_coords - r0, e3)
                q = q + v * e3
            if wp.length(q - cell_coords) > eps:
                return Coords(S(OUTSIDE))
            return Coords(u, v, S(0.0))

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    @_f
    def side_inner_inverse_deformation_gradient(args: SideArg, s: SampleT) -> matCD:
        cc = side_cell_coords(args, s.element_index, s.element_coords, 0)
        return pseudo_inverse(deformation_at(args.cell_arg, args.inner[s.element_index], cc))

    @_f
    def side_outer_inverse_deformation_gradient(args: SideArg, s: SampleT) -> matCD:
        cc = side_cell_coords(args, s.element_index, s.element_coords, 1)
        return pseudo_inverse(deformation_at(args.cell_arg, args.outer[s.element_index], cc))

    @_f
    def boundary_side_index(args: SideIndexArg, b: int) -> int:
        return args.boundary[b]

    del _f
    return SimpleNamespace(**locals())


class _Mesh(Geometry):
    """Base class of the unstructured meshes."""

    _element: Element
    _index_name = "cell_vertex_indices"

    def __init__(self, cell_vertex_indices: Any, positions: Any, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None, env_count: Any = None) -> None:
        if not isinstance(positions, wp.array) or not isinstance(cell_vertex_indices, wp.array):
            raise TypeError(f"{type(self).__name__}: positions and vertex indices must be Treadle arrays")
        dt = positions.dtype
        length = getattr(dt, "_length_", None)
        scalar = getattr(dt, "_wp_scalar_type_", None)
        if length != self.dimension or scalar not in (wp.float32, wp.float64):
            raise TypeError(f"{type(self).__name__}: positions must be an array of vec{self.dimension} (float32 or "
                            f"float64), got {getattr(dt, '__name__', dt)}")
        nv = len(reference_vertex_coords(self._element))
        if cell_vertex_indices.ndim != 2 or cell_vertex_indices.shape[1] != nv:
            raise ValueError(f"{type(self).__name__}: vertex indices must have shape (cells, {nv}), got "
                             f"{tuple(cell_vertex_indices.shape)}")
        super().__init__(scalar)
        self.positions = positions
        setattr(self, self._index_name, cell_vertex_indices)
        self._cells_np = cell_vertex_indices.numpy().astype(np.int64)
        pos_np = positions.numpy().astype(np.float64)
        if self._cells_np.size and (self._cells_np.min() < 0 or self._cells_np.max() >= len(pos_np)):
            raise ValueError(f"{type(self).__name__}: vertex indices out of range [0, {len(pos_np)})")
        self._env_count = check_cell_env(type(self).__name__, cell_env, env_count, len(self._cells_np))
        self.cell_env = cell_env
        self._base_funcs = mesh_funcs(self._element, self.dimension, scalar)
        self._funcs = self._base_funcs if self._env_count == 1 else tagged_funcs(self._base_funcs, scalar)
        self._sides = build_sides(self._cells_np, self._element, pos_np)
        dev = positions.device
        self._side_vertices = wp.array(self._sides.vertices.astype(np.int32), dtype=int, device=dev)
        self._side_inner = wp.array(self._sides.inner.astype(np.int32), dtype=int, device=dev)
        self._side_outer = wp.array(self._sides.outer.astype(np.int32), dtype=int, device=dev)
        self._side_inner_local = wp.array(self._sides.inner_local.astype(np.int32), dtype=int, device=dev)
        self._side_outer_local = wp.array(self._sides.outer_local.astype(np.int32), dtype=int, device=dev)
        self._boundary = wp.array(self._sides.boundary.astype(np.int32), dtype=int, device=dev)
        self._bvh = None
        if build_bvh:
            self.build_bvh(dev)

    @property
    def cell_vertex_indices(self) -> Any:
        """The cells' vertex indices."""
        return getattr(self, self._index_name)

    def reference_cell(self) -> Element:
        """The cells' reference shape."""
        return self._element

    def reference_side(self) -> Element:
        """The sides' reference shape."""
        return _SIDE_OF[self._element]

    def cell_count(self) -> int:
        """Number of cells."""
        return int(self._cells_np.shape[0])

    def vertex_count(self) -> int:
        """Number of vertices."""
        return int(self.positions.shape[0])

    def side_count(self) -> int:
        """Number of sides."""
        return int(self._sides.vertices.shape[0])

    def boundary_side_count(self) -> int:
        """Number of boundary sides."""
        return int(self._sides.boundary.shape[0])

    def cell_vertex_table(self) -> np.ndarray:
        """The cells' vertex indices (host copy)."""
        return self._cells_np

    def edge_count(self) -> int:
        """Number of distinct edges of the cells."""
        from ..space.shape.base import ELEMENT_EDGES

        pairs = ELEMENT_EDGES[self.reference_cell()]
        if not pairs:  # segments and triangles' own sides: the sides are the edges
            pairs = [tuple(f) for f in CELL_FACETS[self.reference_cell()]]
        cells = self._cells_np
        e = np.concatenate([cells[:, [a, b]] for a, b in pairs])
        return int(len(np.unique(np.sort(e, axis=1), axis=0)))

    def build_bvh(self, device: Any = None) -> None:
        """Build the bounding volume hierarchy of the cells that accelerates ``lookup``."""
        pos = self.positions.numpy().astype(np.float64)
        if pos.shape[1] == 2:
            pos = np.concatenate([pos, np.zeros((len(pos), 1))], axis=1)
        cp = pos[self._cells_np]
        pad = 1.0e-4 * max(float(np.ptp(pos, axis=0).max()), 1.0e-12)
        lo = cp.min(axis=1) - pad
        hi = cp.max(axis=1) + pad
        dev = self.positions.device if device is None else device
        self._bvh_lo = wp.array(lo.astype(np.float32), dtype=wp.vec3, device=dev)
        self._bvh_hi = wp.array(hi.astype(np.float32), dtype=wp.vec3, device=dev)
        self._bvh = wp.Bvh(self._bvh_lo, self._bvh_hi)
        self._invalidate_args()

    def update_bvh(self, device: Any = None) -> None:
        """Rebuild the bounding volume hierarchy after the positions changed."""
        self.build_bvh(device)

    @property
    def bvh_id(self) -> int:
        """Id of the cells' BVH (0 without one)."""
        return 0 if self._bvh is None else int(self._bvh.id)

    @property
    def name(self) -> str:
        """The mesh kind (``_env<n>`` with several environments)."""
        base = super().name
        return base if self._env_count == 1 else f"{base}_env{self._env_count}"

    def environment_count(self) -> int:
        """Number of environments (``cell_env`` gives each cell's)."""
        return self._env_count

    def cell_environments(self) -> np.ndarray:
        """Environment of each cell (host copy)."""
        if self.cell_env is None:
            return np.zeros(self.cell_count(), dtype=np.int64)
        return self.cell_env.numpy().astype(np.int64)

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """Vertex indices, positions and BVH (and the cells' environments)."""
        if self._env_count > 1:
            arg.base = self._base_funcs.CellArg()
            self._fill_base_cell_arg(arg.base, device)
            arg.cell_env = self.cell_env.to(device)
            arg.env_count = self._env_count
            return
        self._fill_base_cell_arg(arg, device)

    def _fill_base_cell_arg(self, arg: Any, device: Any) -> None:
        arg.vertex_indices = self.cell_vertex_indices.to(device)
        arg.positions = self.positions.to(device)
        arg.bvh_id = wp.uint64(self.bvh_id)

    def fill_side_arg(self, arg: Any, device: Any) -> None:
        """Side vertices and neighbouring cells."""
        if self._env_count > 1:
            arg.base = self._base_funcs.SideArg()
            self._fill_base_side_arg(arg.base, device)
            arg.cell_arg = self.cell_arg_value(device)
            return
        self._fill_base_side_arg(arg, device)

    def _fill_base_side_arg(self, arg: Any, device: Any) -> None:
        if self._env_count > 1:
            arg.cell_arg = self._base_funcs.CellArg()
            self._fill_base_cell_arg(arg.cell_arg, device)
        else:
            arg.cell_arg = self.cell_arg_value(device)
        arg.side_vertices = self._side_vertices.to(device)
        arg.inner = self._side_inner.to(device)
        arg.outer = self._side_outer.to(device)
        arg.inner_local = self._side_inner_local.to(device)
        arg.outer_local = self._side_outer_local.to(device)

    def fill_side_index_arg(self, arg: Any, device: Any) -> None:
        """Boundary side list."""
        arg.boundary = self._boundary.to(device)

    def side_vertex_indices(self) -> Any:
        """Vertex indices of each side, outward from its inner cell."""
        return self._side_vertices


class Trimesh2D(_Mesh):
    """A mesh of triangles in the plane.

    Args:
        tri_vertex_indices: ``(cells, 3)`` int array, counter-clockwise vertices.
        positions: array of ``vec2`` vertex positions (float32 or float64).
        build_bvh: build the BVH that speeds up ``fem.lookup``.
        temporary_store: unused (accepted for compatibility).
        cell_env: environment of each cell (int32 array), for meshes holding several independent environments.
        env_count: number of environments (required with ``cell_env``).

    """

    dimension = 2
    _element = Element.TRIANGLE
    _index_name = "tri_vertex_indices"

    def __init__(self, tri_vertex_indices: Any, positions: Any, build_bvh: bool = False, temporary_store: Any = None,
                 cell_env: Any = None, env_count: Any = None) -> None:
        super().__init__(tri_vertex_indices, positions, build_bvh, temporary_store, cell_env, env_count)


class Trimesh3D(_Mesh):
    """A surface mesh of triangles in 3D (``fem.normal`` gives the triangles' normals).

    Args:
        tri_vertex_indices: ``(cells, 3)`` int array.
        positions: array of ``vec3`` vertex positions.
        build_bvh: build the BVH that speeds up ``fem.lookup``.
        temporary_store: unused (accepted for compatibility).
        cell_env: environment of each cell (int32 array), for meshes holding several independent environments.
        env_count: number of environments (required with ``cell_env``).

    """

    dimension = 3
    _element = Element.TRIANGLE
    _index_name = "tri_vertex_indices"

    def __init__(self, tri_vertex_indices: Any, positions: Any, build_bvh: bool = False, temporary_store: Any = None,
                 cell_env: Any = None, env_count: Any = None) -> None:
        super().__init__(tri_vertex_indices, positions, build_bvh, temporary_store, cell_env, env_count)


class Quadmesh2D(_Mesh):
    """A mesh of quadrilaterals in the plane.

    Args:
        quad_vertex_indices: ``(cells, 4)`` int array, counter-clockwise vertices.
        positions: array of ``vec2`` vertex positions.
        build_bvh: build the BVH that speeds up ``fem.lookup``.
        temporary_store: unused (accepted for compatibility).
        cell_env: environment of each cell (int32 array), for meshes holding several independent environments.
        env_count: number of environments (required with ``cell_env``).

    """

    dimension = 2
    _element = Element.SQUARE
    _index_name = "quad_vertex_indices"

    def __init__(self, quad_vertex_indices: Any, positions: Any, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None, env_count: Any = None) -> None:
        super().__init__(quad_vertex_indices, positions, build_bvh, temporary_store, cell_env, env_count)


class Quadmesh3D(_Mesh):
    """A surface mesh of quadrilaterals in 3D.

    Args:
        quad_vertex_indices: ``(cells, 4)`` int array.
        positions: array of ``vec3`` vertex positions.
        build_bvh: build the BVH that speeds up ``fem.lookup``.
        temporary_store: unused (accepted for compatibility).
        cell_env: environment of each cell (int32 array), for meshes holding several independent environments.
        env_count: number of environments (required with ``cell_env``).

    """

    dimension = 3
    _element = Element.SQUARE
    _index_name = "quad_vertex_indices"

    def __init__(self, quad_vertex_indices: Any, positions: Any, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None, env_count: Any = None) -> None:
        super().__init__(quad_vertex_indices, positions, build_bvh, temporary_store, cell_env, env_count)


class Tetmesh(_Mesh):
    """A mesh of tetrahedra.

    Args:
        tet_vertex_indices: ``(cells, 4)`` int array (positively oriented cells give outward normals directly;
            others are handled too).
        positions: array of ``vec3`` vertex positions.
        build_bvh: build the BVH that speeds up ``fem.lookup``.
        temporary_store: unused (accepted for compatibility).
        cell_env: environment of each cell (int32 array), for meshes holding several independent environments.
        env_count: number of environments (required with ``cell_env``).

    """

    dimension = 3
    _element = Element.TETRAHEDRON
    _index_name = "tet_vertex_indices"

    def __init__(self, tet_vertex_indices: Any, positions: Any, build_bvh: bool = False, temporary_store: Any = None,
                 cell_env: Any = None, env_count: Any = None) -> None:
        super().__init__(tet_vertex_indices, positions, build_bvh, temporary_store, cell_env, env_count)


class Hexmesh(_Mesh):
    """A mesh of hexahedra.

    Args:
        hex_vertex_indices: ``(cells, 8)`` int array: the bottom face counter-clockwise, then the top face.
        positions: array of ``vec3`` vertex positions.
        assume_parallelepiped_cells: accepted for compatibility (positions are always trilinear).
        build_bvh: build the BVH that speeds up ``fem.lookup``.
        temporary_store: unused (accepted for compatibility).
        cell_env: environment of each cell (int32 array), for meshes holding several independent environments.
        env_count: number of environments (required with ``cell_env``).

    """

    dimension = 3
    _element = Element.CUBE
    _index_name = "hex_vertex_indices"

    def __init__(self, hex_vertex_indices: Any, positions: Any, assume_parallelepiped_cells: bool = False,
                 build_bvh: bool = False, temporary_store: Any = None, cell_env: Any = None,
                 env_count: Any = None) -> None:
        super().__init__(hex_vertex_indices, positions, build_bvh, temporary_store, cell_env, env_count)
