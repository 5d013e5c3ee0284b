"""Finding points in a deformed geometry: reference coordinates by Newton steps, cells by a BVH of cell bounds.

A deformed cell maps reference coordinates to ``x(c)``. To find the coordinates of a position ``p`` in a cell,
Newton steps move a point ``y`` of the *base* cell: ``y += F0 F^+ (p - x)`` (``F`` and ``F0`` the deformed and
base deformation gradients, ``F^+`` the pseudo-inverse), and the base geometry converts ``y`` to coordinates (its
own closest point when they must stay in the cell). ``lookup`` takes the cell whose closest point is nearest,
among the candidates of the BVH of the deformed cells' bounds when one is built, else among all cells (of the
requested environment, with several).
"""

from typing import Any

import numpy as np

import treadle as wp

from ..element import Element
from .environments import closest_cell_lookup

#: reference coordinates sampled to bound a deformed cell (corners, edge midpoints, centre)
_BOUND_POINTS = {
    Element.SQUARE: [(a, b, 0.0) for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)],
    Element.CUBE: [(a, b, c) for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0) for c in (0.0, 0.5, 1.0)],
    Element.TRIANGLE: [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5),
                       (0.0, 0.5, 0.5), (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)],
    Element.TETRAHEDRON: [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.5, 0.0, 0.0),
                          (0.0, 0.5, 0.0), (0.0, 0.0, 0.5), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 0.5, 0.5),
                          (0.25, 0.25, 0.25)],
}
_CENTER = {Element.SQUARE: (0.5, 0.5, 0.0), Element.CUBE: (0.5, 0.5, 0.5),
           Element.TRIANGLE: (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0), Element.TETRAHEDRON: (0.25, 0.25, 0.25),
           Element.LINE_SEGMENT: (0.5, 0.0, 0.0)}


def lookup_funcs(ns: dict[str, Any], g: Any, element: Element, S: Any, D: int, key: tuple[Any, ...]) -> dict[str, Any]:
    """Lookup functions of a deformed geometry whose other kernel functions are in ``ns``."""
    from .. import codegen

    CellArg = ns["CellArg"]
    SideArg = ns["SideArg"]
    SampleT = ns["SampleT"]
    Coords = ns["Coords"]
    vecD = ns["vecD"]
    position = ns["cell_position"]
    inverse_f = ns["cell_inverse_deformation_gradient"]
    CENTER = Coords(*_CENTER[element])
    ITERATIONS = 8

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def newton_coords(args: CellArg, cell_index: int, pos: vecD, clamp: int):
        s = SampleT()
        s.element_index = cell_index
        s.element_coords = CENTER
        for _it in range(ITERATIONS):
            x = position(args, s)
            dy = g.cell_deformation_gradient(args.base, s) * (inverse_f(args, s) * (pos - x))
            y = g.cell_position(args.base, s) + dy
            if clamp != 0:
                s.element_coords = g.cell_closest_point(args.base, cell_index, y)[0]
            else:
                s.element_coords = g.cell_coordinates(args.base, cell_index, y)
        d = position(args, s) - pos
        return s.element_coords, wp.dot(d, d)

    @_f
    def cell_coordinates(args: CellArg, cell_index: int, pos: vecD) -> Coords:
        return newton_coords(args, cell_index, pos, 0)[0]

    @_f
    def cell_closest_point(args: CellArg, cell_index: int, pos: vecD):
        return newton_coords(args, cell_index, pos, 1)

    @_f
    def bvh_of(args: CellArg) -> wp.uint64:
        return args.bvh_id

    lookup_in = closest_cell_lookup(CellArg, cell_closest_point, bvh_of, S, key)

    @_f
    def cell_lookup(args: CellArg, pos: vecD) -> SampleT:
        return lookup_in(args, pos, 0, 0)

    @_f
    def cell_lookup_env(args: CellArg, pos: vecD, env: int) -> SampleT:
        return lookup_in(args, pos, env, 1)

    @_f
    def cell_environment(args: CellArg, s: SampleT) -> int:
        return args.cell_env[s.element_index]

    @_f
    def side_environment(args: SideArg, s: SampleT) -> int:
        return args.cell_env[g.side_inner_cell_index(args.base, s.element_index)]

    return {"cell_coordinates": cell_coordinates, "cell_closest_point": cell_closest_point,
            "cell_lookup": cell_lookup, "cell_lookup_env": cell_lookup_env, "cell_environment": cell_environment,
            "side_environment": side_environment}


_KERNELS: dict[Any, Any] = {}


def cell_bounds(geo: Any, device: Any) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners (``(cells, 3)``, padded) of the deformed cells, from positions at sample points."""
    from .. import codegen

    element = geo.reference_cell()
    pts = np.array(_BOUND_POINTS[element], dtype=wp.dtype_to_numpy(geo.scalar_type))
    funcs = geo._funcs
    k = _KERNELS.get(id(funcs))
    if k is None:
        CellArg = funcs.CellArg
        SampleT = geo.sample_type
        Coords = geo.coords_type
        vecD = wp.types.vector(geo.dimension, geo.scalar_type)
        position = funcs.cell_position

        def deformed_cell_points(arg: CellArg, coords: wp.array(dtype=Coords), out: wp.array2d(dtype=vecD)):
            c, q = wp.tid()
            s = SampleT()
            s.element_index = c
            s.element_coords = coords[q]
            out[c, q] = position(arg, s)

        k = _KERNELS[id(funcs)] = codegen.kernel(deformed_cell_points,
                                                 key=f"deformed_cell_points_{codegen.digest(CellArg.key)}")
    n = geo.cell_count()
    out = wp.zeros((n, len(pts)), dtype=wp.types.vector(geo.dimension, geo.scalar_type), device=device)
    wp.launch(k, dim=(n, len(pts)), inputs=[geo.cell_arg_value(device), wp.array(pts, dtype=geo.coords_type,
                                                                                   device=device), out],
              device=device)
    p = out.numpy().astype(np.float64)
    if p.shape[2] == 2:
        p = np.concatenate([p, np.zeros(p.shape[:2] + (1,))], axis=2)
    lo = p.min(axis=1)
    hi = p.max(axis=1)
    # midpoint samples bound straight cells exactly; curved (higher-degree) cells may bulge between them
    pad = 0.25 * (hi - lo).max(axis=1, keepdims=True) + 1.0e-6
    return lo - pad, hi + pad
