"""Node-level operators of discrete fields.

``node_count``, ``node_index``, ``at_node``, node weights and the contribution of a single element-local node
(``inner(f, s, k)``, ``grad(f, s, k)``).

On sides, element-local nodes are the inner cell's followed by the outer cell's (the inner cell's only on boundary
sides), as for test functions.
"""

from typing import Any

from .. import codegen
from ..types import ElementKind
from .field import FieldError
from .nodal_funcs import field_arg_struct

_CACHE: dict[tuple[Any, ...], Any] = {}


def node_op_funcs(field: Any, domain: Any, op: str, nargs: int) -> Any:
    """The kernel function of node operator ``op`` for a discrete field on ``domain``."""
    key = (id(field._cell), domain.element_kind, id(domain.geometry._funcs), op, nargs)
    f = _CACHE.get(key)
    if f is None:
        f = _CACHE[key] = _make(field, domain, op, nargs)
    return f


def _make(field: Any, domain: Any, op: str, nargs: int) -> Any:
    cell = field._cell
    space = field.space
    FieldArg = field_arg_struct(domain, cell.EvalArg)
    geo = domain.geometry._funcs
    topo = space.topology.funcs
    shape = space.basis.shape.funcs
    part = field.space_partition.funcs
    node_count = topo.element_node_count
    node_index = topo.element_node_index
    node_coords = shape.node_coords_in_element
    weight = shape.element_inner_weight
    node_value = cell.cell_node_value
    node_weight_gradient = cell.cell_node_weight_gradient
    partition_index = part.partition_node_index
    key = ("node_op", op, nargs, FieldArg.key)
    on_cells = domain.element_kind == ElementKind.CELL
    to_cell_arg = geo.side_to_cell_arg
    inner_index = geo.side_inner_cell_index
    outer_index = geo.side_outer_cell_index
    inner_coords = geo.side_inner_cell_coords
    outer_coords = geo.side_outer_cell_coords
    from_cell = geo.side_from_cell_coords

    # (cell_arg, cell sample, cell-local node) of the k-th element-local node at s
    if on_cells:
        def locate(fa: FieldArg, s: Any, k: int):
            return fa.elt_arg, s, k
    else:
        def locate(fa: FieldArg, s: Any, k: int):
            ca = to_cell_arg(fa.elt_arg)
            ci = inner_index(fa.elt_arg, s.element_index)
            n_in = node_count(ca, fa.eval_arg.topo_arg, ci)
            cs = s
            if k < n_in:
                cs.element_index = ci
                cs.element_coords = inner_coords(fa.elt_arg, s.element_index, s.element_coords)
                return ca, cs, k
            cs.element_index = outer_index(fa.elt_arg, s.element_index)
            cs.element_coords = outer_coords(fa.elt_arg, s.element_index, s.element_coords)
            return ca, cs, k - n_in
    locate = codegen.func(locate, *key)

    if op == "node_count":
        if on_cells:
            def fn(fa: FieldArg, s: Any) -> int:
                return node_count(fa.elt_arg, fa.eval_arg.topo_arg, s.element_index)
        else:
            def fn(fa: FieldArg, s: Any) -> int:
                ca = to_cell_arg(fa.elt_arg)
                ci = inner_index(fa.elt_arg, s.element_index)
                co = outer_index(fa.elt_arg, s.element_index)
                n = node_count(ca, fa.eval_arg.topo_arg, ci)
                if co != ci:
                    n += node_count(ca, fa.eval_arg.topo_arg, co)
                return n
    elif op == "node_index":
        def fn(fa: FieldArg, s: Any, k: int) -> int:
            loc = locate(fa, s, k)
            return node_index(loc[0], fa.eval_arg.topo_arg, loc[1].element_index, loc[2])
    elif op == "node_partition_index":
        def fn(fa: FieldArg, node: int) -> int:
            return partition_index(fa.eval_arg.partition_arg, node)
    elif op == "at_node":
        if on_cells:
            def fn(fa: FieldArg, s: Any, k: int):
                r = s
                r.element_coords = type(s.element_coords)(node_coords(k))
                return r
        else:
            def fn(fa: FieldArg, s: Any, k: int):
                loc = locate(fa, s, k)
                r = s
                cell_coords = type(s.element_coords)(node_coords(loc[2]))
                r.element_coords = from_cell(fa.elt_arg, s.element_index, loc[1].element_index, cell_coords)
                return r
    elif op in ("node_inner_weight", "node_outer_weight"):
        def fn(fa: FieldArg, s: Any, k: int):
            loc = locate(fa, s, k)
            return weight(loc[1].element_coords, loc[2])
    elif op in ("node_inner_weight_gradient", "node_outer_weight_gradient"):
        def fn(fa: FieldArg, s: Any, k: int):
            loc = locate(fa, s, k)
            return node_weight_gradient(loc[0], fa.eval_arg, loc[1], loc[2])
    elif op in ("inner", "outer"):
        def fn(fa: FieldArg, s: Any, k: int):
            loc = locate(fa, s, k)
            return node_value(loc[0], fa.eval_arg, loc[1].element_index, loc[2]) * weight(loc[1].element_coords,
                                                                                         loc[2])
    elif op in ("grad", "grad_outer") and getattr(cell, "cell_grad", None) is not None:
        from .algebra import value_funcs

        alg = value_funcs(space.dtype, space.geometry.cell_dimension, space.geometry.dimension)
        term = alg.ref_grad_term

        def fn(fa: FieldArg, s: Any, k: int):
            loc = locate(fa, s, k)
            return term(node_value(loc[0], fa.eval_arg, loc[1].element_index, loc[2]),
                        node_weight_gradient(loc[0], fa.eval_arg, loc[1], loc[2]))
    else:
        raise FieldError(f"discrete fields do not support fem.{op} with {nargs} arguments")
    return codegen.func(fn, *key)
