"""Implementations of the domain operators (``position``, ``normal``, ``lookup``...) for each kind of domain."""

from types import SimpleNamespace
from typing import Any

import treadle as wp

from . import codegen
from .field.field import FieldError, Resolved
from .geometry.sides import side_sample_funcs
from .types import ElementKind, coords_type, sample_type

_LOOKUP: dict[int, Any] = {}


def _lookup_func(geo_funcs: SimpleNamespace, S: Any) -> Any:
    """``lookup(cell_arg, x)``, ``lookup(cell_arg, x, max_dist)`` and ``lookup(cell_arg, x, guess)``."""
    f = _LOOKUP.get(id(geo_funcs))
    if f is not None:
        return f
    cell_lookup = geo_funcs.cell_lookup
    CellArg = geo_funcs.CellArg
    key = ("lookup", CellArg.key)

    def lookup(args: CellArg, x: Any):
        return cell_lookup(args, x)

    f = codegen.func(lookup, *key)

    def lookup_dist(args: CellArg, x: Any, max_dist: float):
        return cell_lookup(args, x)

    def lookup_guess(args: CellArg, x: Any, guess: Any):
        return cell_lookup(args, x)

    lookup_radius = getattr(geo_funcs, "cell_lookup_radius", None)
    if lookup_radius is not None:
        # geometries that search a neighbourhood (sparse grids): within max_dist, or as far as the guess is
        position = geo_funcs.cell_position

        def lookup_dist(args: CellArg, x: Any, max_dist: float):  # noqa: F811 - the searching variant
            return lookup_radius(args, x, S(max_dist))

        def lookup_guess(args: CellArg, x: Any, guess: Any):  # noqa: F811
            if guess.element_index < 0:
                return cell_lookup(args, x)
            # the guess cell is no farther than its sample point (twice as far: guess coordinates may lie outside)
            return lookup_radius(args, x, S(2.0) * wp.length(x - position(args, guess)))

    closest = geo_funcs.cell_closest_point
    SampleT = sample_type(S)
    Coords = coords_type(S)

    def lookup_filter(args: CellArg, x: Any, max_dist: float, filter_array: Any, filter_target: Any):
        # the closest of the cells whose filter value is the target (one filter value per cell)
        best = S(1.0e30)
        best_cell = -1
        best_coords = Coords()
        for c in range(filter_array.shape[0]):
            if filter_array[c] == filter_target:
                r = closest(args, c, x)
                if r[1] < best:
                    best = r[1]
                    best_cell = c
                    best_coords = r[0]
        s = SampleT()
        s.element_index = best_cell
        s.element_coords = best_coords
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        return s

    f.add_overload(_renamed(lookup_dist, "lookup"))
    f.add_overload(_renamed(lookup_guess, "lookup"))
    f.add_overload(_renamed(lookup_filter, "lookup"))
    _LOOKUP[id(geo_funcs)] = f
    return f


def _renamed(fn: Any, name: str) -> Any:
    fn.__name__ = name
    return fn


def resolve_domain_op(domain: Any, op: str, nargs: int) -> Resolved:
    """The implementation of operator ``op`` on ``domain`` (called with ``nargs`` arguments, the domain included)."""
    geo = domain.geometry
    g = geo._funcs
    funcs = domain.funcs
    on_cells = domain.element_kind == ElementKind.CELL
    if op == "scalar_type":
        return Resolved(geo.scalar_type, static=True)
    simple = {"position": "element_position", "normal": "element_normal",
              "deformation_gradient": "element_deformation_gradient", "measure": "element_measure",
              "measure_ratio": "element_measure_ratio"}
    if op in simple:
        return Resolved(getattr(funcs, simple[op]))
    if op in ("lookup", "partition_lookup"):
        if not on_cells:
            raise FieldError(f"fem.{op} needs a cell domain: use fem.{op}(fem.cells(domain), x)")
        if not geo.supports_cell_lookup():
            raise FieldError(f"fem.{op}: {geo.name} was built without lookup support (build_bvh=True)")
        return Resolved(_lookup_func(g, geo.scalar_type))
    if op == "element_coordinates":
        if not on_cells:
            return Resolved(_side_coordinates(g))
        return Resolved(g.cell_coordinates)
    if op == "element_closest_point":
        if not on_cells:
            raise FieldError("fem.element_closest_point needs a cell domain")
        return Resolved(g.cell_closest_point)
    if op == "cells":
        if on_cells:
            return Resolved(None)
        return Resolved(g.side_to_cell_arg)
    if op == "environment_index":
        return Resolved(_zero_env())
    if op in ("_to_inner_cell", "_to_outer_cell", "_to_cell_side"):
        if on_cells:
            raise FieldError(f"fem.{op.lstrip('_')} needs a side domain")
        sides = side_sample_funcs(g)
        return Resolved({"_to_inner_cell": sides.inner_sample, "_to_outer_cell": sides.outer_sample,
                         "_to_cell_side": sides.cell_to_side_sample}[op])
    raise FieldError(f"fem.{op} is not available on {type(domain).__name__} domains")


_SIDE_COORDS: dict[int, Any] = {}


def _side_coordinates(g: Any) -> Any:
    """``(side_arg, side, x) -> coords``: the side coordinates of ``x``, through the side's inner cell."""
    f = _SIDE_COORDS.get(id(g))
    if f is None:
        SideArg = g.SideArg
        to_cell = g.side_to_cell_arg
        inner_index = g.side_inner_cell_index
        cell_coordinates = g.cell_coordinates
        from_cell = g.side_from_cell_coords

        def side_coordinates(args: SideArg, side_index: int, x: Any):
            cell = inner_index(args, side_index)
            return from_cell(args, side_index, cell, cell_coordinates(to_cell(args), cell, x))

        f = _SIDE_COORDS[id(g)] = codegen.func(side_coordinates, "side_coordinates", SideArg.key)
    return f


_ENV: list[Any] = []


def _zero_env() -> Any:
    if not _ENV:
        def environment_index(domain_arg: Any, s: Any) -> int:
            return 0

        _ENV.append(codegen.func(environment_index, "env"))
    return _ENV[0]


_CELLS: dict[tuple[Any, ...], Any] = {}


def resolve_field_cells(field: Any, domain: Any) -> Resolved:
    """``cells(f)``: the field argument of ``f`` on the cells of its side domain (itself on cell domains)."""
    if domain.element_kind == ElementKind.CELL:
        return Resolved(None)
    from .domain import Cells

    cells = Cells(domain.geometry_partition)
    key = (field.name, id(domain.geometry._funcs))
    f = _CELLS.get(key)
    if f is None:
        SideFA = field.field_arg_type(domain)
        CellFA = field.field_arg_type(cells)
        to_cell = domain.geometry._funcs.side_to_cell_arg

        def field_cells(fa: SideFA) -> CellFA:
            out = CellFA()
            out.elt_arg = to_cell(fa.elt_arg)
            out.eval_arg = fa.eval_arg
            return out

        f = _CELLS[key] = codegen.func(field_cells, SideFA.key, CellFA.key)
    return Resolved(f, result=cells)
