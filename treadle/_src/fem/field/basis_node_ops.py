"""Node operators of test and trial fields: the element-local node of the dof being evaluated.

``node_index(f, s)`` is that node's space index, ``at_node(f, s)`` moves ``s`` to it, ``node_count(f, s)`` counts
the element's nodes, and ``node_inner_weight(f, s)`` / ``node_inner_weight_gradient(f, s)`` evaluate its basis
function without the dof's value mapping.
"""

from typing import Any

from .. import codegen
from ..types import ElementKind
from .field import FieldError

_CACHE: dict[tuple[Any, ...], Any] = {}


def basis_node_op(field: Any, domain: Any, op: str, nargs: int) -> Any:
    """The kernel function of node operator ``op`` for a test or trial field on ``domain``."""
    key = (id(field._cell), field._dof_attr, domain.element_kind, id(domain.geometry._funcs), op, nargs)
    f = _CACHE.get(key)
    if f is None:
        f = _CACHE[key] = _make(field, domain, op, nargs)
    return f


def _make(field: Any, domain: Any, op: str, nargs: int) -> Any:
    dom = field.domain_funcs(domain)
    FieldArg = dom.FieldArg
    DS = dom.DOF_SIZE
    cell = field._cell
    geo = domain.geometry._funcs
    shape = field.space.basis.shape.funcs
    node_coords = shape.node_coords_in_element
    weight = shape.element_inner_weight
    weight_grad_world = cell.cell_node_weight_gradient
    element_node_count = dom.element_node_count
    element_space_node = dom.element_space_node
    to_cell_arg = geo.side_to_cell_arg
    inner_index = geo.side_inner_cell_index
    outer_index = geo.side_outer_cell_index
    inner_coords = geo.side_inner_cell_coords
    outer_coords = geo.side_outer_cell_coords
    from_cell = geo.side_from_cell_coords
    node_count = cell.cell_node_count
    is_test = field._dof_attr == "test_dof"
    on_cells = domain.element_kind == ElementKind.CELL
    key = ("basis_node_op", op, nargs, field._dof_attr, FieldArg.key)

    if is_test:
        def local_node(s: Any) -> int:
            return s.test_dof // DS
    else:
        def local_node(s: Any) -> int:
            return s.trial_dof // DS
    local_node = codegen.func(local_node, *key)

    if on_cells:
        def locate(fa: FieldArg, s: Any):
            return fa.elt_arg, s, local_node(s)
    else:
        def locate(fa: FieldArg, s: Any):
            ca = to_cell_arg(fa.elt_arg)
            k = local_node(s)
            ci = inner_index(fa.elt_arg, s.element_index)
            n_in = node_count(ca, fa.eval_arg, ci)
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
        def fn(fa: FieldArg, s: Any) -> int:
            return element_node_count(fa, s.element_index)
    elif op == "node_index":
        def fn(fa: FieldArg, s: Any) -> int:
            return element_space_node(fa, s.element_index, local_node(s))
    elif op == "at_node":
        if on_cells:
            def fn(fa: FieldArg, s: Any):
                r = s
                r.element_coords = type(s.element_coords)(node_coords(local_node(s)))
                return r
        else:
            def fn(fa: FieldArg, s: Any):
                loc = locate(fa, s)
                r = s
                cc = type(s.element_coords)(node_coords(loc[2]))
                r.element_coords = from_cell(fa.elt_arg, s.element_index, loc[1].element_index, cc)
                return r
    elif op in ("node_inner_weight", "node_outer_weight"):
        def fn(fa: FieldArg, s: Any):
            loc = locate(fa, s)
            return weight(loc[1].element_coords, loc[2])
    elif op in ("node_inner_weight_gradient", "node_outer_weight_gradient"):
        def fn(fa: FieldArg, s: Any):
            loc = locate(fa, s)
            return weight_grad_world(loc[0], fa.eval_arg, loc[1], loc[2])
    else:
        raise FieldError(f"test and trial fields do not support fem.{op}")
    return codegen.func(fn, *key)
