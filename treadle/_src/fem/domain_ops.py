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


class MissingOverload(FieldError):
    """No overload of a domain operator accepts the call's arguments (reported as a code generation error)."""


_ENV_LOOKUP: dict[int, Any] = {}


def _env_lookup_func(geo_funcs: SimpleNamespace, S: Any) -> Any:
    """``lookup`` on several environments.

    Overloads ``(cell_arg, x, env)``, ``(cell_arg, x, guess)`` (in the guess's environment) and
    ``(cell_arg, x, max_dist, env)``.
    """
    f = _ENV_LOOKUP.get(id(geo_funcs))
    if f is not None:
        return f
    lookup_env = geo_funcs.cell_lookup_env
    environment = geo_funcs.cell_environment
    CellArg = geo_funcs.CellArg
    SampleT = sample_type(S)

    def lookup(args: CellArg, x: Any, env: int):
        return lookup_env(args, x, env)

    f = codegen.func(lookup, "env_lookup", CellArg.key)

    def lookup_guess(args: CellArg, x: Any, guess: SampleT):
        return lookup_env(args, x, environment(args, guess))

    def lookup_dist(args: CellArg, x: Any, max_dist: float, env: int):
        return lookup_env(args, x, env)

    f.add_overload(_renamed(lookup_guess, "lookup"))
    f.add_overload(_renamed(lookup_dist, "lookup"))
    _ENV_LOOKUP[id(geo_funcs)] = f
    return f


def _renamed(fn: Any, name: str) -> Any:
    fn.__name__ = name
    return fn


def resolve_domain_op(domain: Any, op: str, nargs: int) -> Resolved:
    """The implementation of operator ``op`` on ``domain`` (called with ``nargs`` arguments, the domain included).

    On a partitioned domain the integrand's domain argument also holds the partition's: the element functions are
    called through forwarders that pass its element part.
    """
    if op in ("element_partition_index", "partition_lookup"):
        return _partition_op(domain, op, nargs)
    res = _resolve(domain, op, nargs)
    if not getattr(domain, "partitioned", False) or res.static or res.value is None:
        return res
    if op == "cells":
        return Resolved(_cells_forward(domain, res.value), result=res.result)
    return Resolved(_forward(domain, res.value, nargs), result=res.result)


_FORWARD: dict[tuple[Any, ...], Any] = {}


def _forward(domain: Any, fn: Any, nargs: int) -> Any:
    """``(packed domain arg, *args) -> fn(elt_arg, *args)``."""
    return codegen.forwarder(fn, domain.IntegrandArg, "elt_arg", nargs - 1,
                             f"partitioned_{getattr(fn, '__name__', 'op')}")


def _cells_forward(domain: Any, to_cell: Any) -> Any:
    """``cells(domain)`` of a partitioned side domain: the cell argument, with the same partition argument."""
    from .domain import Cells

    SideD = domain.IntegrandArg
    CellD = Cells(domain.geometry_partition).IntegrandArg
    key = (id(to_cell), SideD.key, "cells")
    f = _FORWARD.get(key)
    if f is None:
        def partitioned_cells(d: SideD) -> CellD:
            out = CellD()
            out.elt_arg = to_cell(d.elt_arg)
            out.part_arg = d.part_arg
            return out

        f = _FORWARD[key] = codegen.func(partitioned_cells, "partitioned_cells", SideD.key)
    return f


def _partition_op(domain: Any, op: str, nargs: int) -> Resolved:
    """``element_partition_index`` and ``partition_lookup`` (plain ``lookup`` over the whole geometry)."""
    if not getattr(domain, "partitioned", False):
        if op == "element_partition_index":
            return Resolved(_identity_index())
        return _resolve(domain, "lookup", nargs)
    if domain.element_kind != ElementKind.CELL and op == "partition_lookup":
        raise FieldError("fem.partition_lookup needs a cell domain: use fem.partition_lookup(fem.cells(domain), x)")
    part = domain.geometry_partition.funcs
    DArg = domain.IntegrandArg
    key = (op, DArg.key, nargs)
    f = _FORWARD.get(key)
    if f is not None:
        return Resolved(f)
    if op == "element_partition_index":
        partition_cell_index = part.partition_cell_index

        def element_partition_index(d: DArg, cell_index: int) -> int:
            return partition_cell_index(d.part_arg, cell_index)

        f = codegen.func(element_partition_index, "partition_index", DArg.key)
    else:
        geo = domain.geometry
        closest = geo._funcs.cell_closest_point
        cell_count = part.cell_count
        cell_index = part.cell_index
        SampleT = sample_type(geo.scalar_type)
        S = geo.scalar_type
        extra = "".join(f", a{i}: Any" for i in range(nargs - 2))

        text = (f"def partition_lookup(d: DArg, x: Any{extra}):\n"
                "    # the closest of the partition's cells (a position on a shared boundary stays in the partition)\n"
                "    best = S(1.0e30)\n"
                "    s = SampleT()\n"
                "    s.element_index = -1\n"
                "    for i in range(cell_count(d.part_arg)):\n"
                "        c = cell_index(d.part_arg, i)\n"
                "        r = closest(d.elt_arg, c, x)\n"
                "        if r[1] < best:\n"
                "            best = r[1]\n"
                "            s.element_index = c\n"
                "            s.element_coords = r[0]\n"
                "    s.qp_index = -1\n"
                "    s.test_dof = -1\n"
                "    s.trial_dof = -1\n"
                "    return s\n")
        ns = codegen.exec_source(text, f"partition_lookup {codegen.digest(DArg.key, nargs)}",
                                 {"DArg": DArg, "Any": Any, "S": S, "SampleT": SampleT, "closest": closest,
                                  "cell_count": cell_count, "cell_index": cell_index,
                                  "__name__": codegen.GEN_MODULE})
        f = codegen.func(ns["partition_lookup"], "partition_lookup", DArg.key, nargs)
    _FORWARD[key] = f
    return Resolved(f)


_IDENTITY: list[Any] = []


def _identity_index() -> Any:
    if not _IDENTITY:
        def element_partition_index(domain_arg: Any, cell_index: int) -> int:
            return cell_index

        _IDENTITY.append(codegen.func(element_partition_index, "whole_partition_index"))
    return _IDENTITY[0]


def _resolve(domain: Any, op: str, nargs: int) -> Resolved:
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
        if getattr(g, "multi_environment", False):
            if nargs <= 2:
                raise MissingOverload(f"Couldn't find function overload for 'cell_lookup' taking a position alone: "
                                      f"{geo.name} has {geo.environment_count()} overlapping environments; pass "
                                      f"the environment index (fem.{op}(domain, x, env)) or a guess sample")
            return Resolved(_env_lookup_func(g, geo.scalar_type))
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
        if getattr(g, "multi_environment", False):
            return Resolved(g.cell_environment if on_cells else g.side_environment)
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
