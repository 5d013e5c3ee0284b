"""Moving samples between sides and cells: the inner and outer cell samples of a side sample, and back."""

from types import SimpleNamespace
from typing import Any

from .. import codegen

_SIDE_SAMPLES: dict[int, SimpleNamespace] = {}


def side_sample_funcs(geo_funcs: SimpleNamespace) -> SimpleNamespace:
    """Side sample conversions of a geometry's function table.

    Kernel functions ``inner_sample(side_arg, s)``, ``outer_sample(side_arg, s)`` and
    ``cell_to_side_sample(side_arg, cell_s, side)``.
    """
    f = _SIDE_SAMPLES.get(id(geo_funcs))
    if f is not None:
        return f
    g = geo_funcs
    SideArg = g.SideArg
    inner_index = g.side_inner_cell_index
    outer_index = g.side_outer_cell_index
    inner_coords = g.side_inner_cell_coords
    outer_coords = g.side_outer_cell_coords
    from_cell = g.side_from_cell_coords
    key = ("side_samples", SideArg.key)

    def inner_sample(args: SideArg, s: Any):
        c = s
        c.element_index = inner_index(args, s.element_index)
        c.element_coords = inner_coords(args, s.element_index, s.element_coords)
        return c

    def outer_sample(args: SideArg, s: Any):
        c = s
        c.element_index = outer_index(args, s.element_index)
        c.element_coords = outer_coords(args, s.element_index, s.element_coords)
        return c

    def cell_to_side_sample(args: SideArg, cell_s: Any, side: int):
        c = cell_s
        c.element_index = side
        c.element_coords = from_cell(args, side, cell_s.element_index, cell_s.element_coords)
        return c

    def side_is_boundary(args: SideArg, side: int) -> bool:
        return inner_index(args, side) == outer_index(args, side)

    f = SimpleNamespace(**{fn.__name__: codegen.func(fn, *key) for fn in (inner_sample, outer_sample,
                                                                          cell_to_side_sample, side_is_boundary)})
    _SIDE_SAMPLES[id(geo_funcs)] = f
    return f
