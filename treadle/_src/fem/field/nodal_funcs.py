"""Kernel functions evaluating fields of nodal spaces: discrete fields and test/trial functions.

Two levels:

- *cell* functions take ``(cell_arg, eval_arg, s)`` with ``s`` a sample on a cell: the value, gradient and
  divergence of the field there (for test/trial functions, of one element-local basis function times one dof
  component, both encoded in ``s.test_dof`` / ``s.trial_dof`` as ``local_node * DOF_SIZE + component``);
- *domain* functions take ``(field_arg, s)`` with ``field_arg = {elt_arg, eval_arg}`` and ``s`` a sample on the
  domain's elements. On cells they are the cell functions. On sides, ``inner`` evaluates in the side's inner cell
  and ``outer`` in its outer cell; a test/trial function's local nodes on an interior side are the inner cell's
  nodes followed by the outer cell's (each basis function seen from one side only; integrands are linear in them,
  so the contributions add up to the full function), and on a boundary side only the inner cell's.
"""

from types import SimpleNamespace
from typing import Any

import treadle as wp

from .. import codegen
from ..geometry.sides import side_sample_funcs
from ..types import ElementKind
from .algebra import unit_dof_func, value_funcs

_CACHE: dict[tuple[Any, ...], SimpleNamespace] = {}


def _memo(key: tuple[Any, ...], make: Any) -> SimpleNamespace:
    f = _CACHE.get(key)
    if f is None:
        f = _CACHE[key] = make()
    return f


def discrete_cell_funcs(space: Any, partition: Any) -> SimpleNamespace:
    """Cell functions of a discrete field of ``space`` whose values are stored per node of ``partition``."""
    return _memo(("discrete", space.name, id(space.topology.funcs), id(space.basis.shape.funcs),
                  id(space.dof_mapper.funcs), id(partition.funcs), id(space.geometry._funcs)),
                 lambda: _make_discrete_cell_funcs(space, partition))


def _make_discrete_cell_funcs(space: Any, partition: Any) -> SimpleNamespace:
    if getattr(space, "value", "scalar") != "scalar":
        from .vector_funcs import vector_discrete_cell_funcs

        return vector_discrete_cell_funcs(space, partition)
    geo = space.geometry._funcs
    topo = space.topology.funcs
    shape = space.basis.shape.funcs
    mapper = space.dof_mapper.funcs
    part = partition.funcs
    alg = value_funcs(space.dtype, space.geometry.cell_dimension, space.geometry.dimension)
    T = space.dtype
    D = space.dof_dtype
    EvalArg = codegen.struct("DiscreteFieldEvalArg", {"topo_arg": topo.TopologyArg,
                                                      "partition_arg": part.PartitionArg,
                                                      "dof_values": wp.array(dtype=D)}, space.name, partition.name)
    node_count = topo.element_node_count
    node_index = topo.element_node_index
    partition_index = part.partition_node_index
    weight = shape.element_inner_weight
    weight_grad = shape.element_inner_weight_gradient
    dof_to_value = mapper.dof_to_value
    zero = alg.zero
    inv_f = geo.cell_inverse_deformation_gradient
    key = ("discrete_cell", space.name, partition.name, EvalArg.key)
    out: dict[str, Any] = {"EvalArg": EvalArg}

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f

    def cell_node_value(cell_arg: Any, ea: EvalArg, cell: int, k: int) -> T:
        n = partition_index(ea.partition_arg, node_index(cell_arg, ea.topo_arg, cell, k))
        return dof_to_value(ea.dof_values[n])

    @_f

    def cell_value(cell_arg: Any, ea: EvalArg, s: Any) -> T:
        v = zero()
        for k in range(node_count(cell_arg, ea.topo_arg, s.element_index)):
            v += cell_node_value(cell_arg, ea, s.element_index, k) * weight(s.element_coords, k)
        return v

    @_f

    def cell_node_weight(cell_arg: Any, ea: EvalArg, s: Any, k: int):
        return weight(s.element_coords, k)

    @_f

    def cell_node_weight_gradient(cell_arg: Any, ea: EvalArg, s: Any, k: int):
        return weight_grad(s.element_coords, k) * inv_f(cell_arg, s)

    out.update(cell_node_value=cell_node_value, cell_value=cell_value, cell_node_weight=cell_node_weight,
               cell_node_weight_gradient=cell_node_weight_gradient)

    if alg.G is not None:
        ref_zero = alg.ref_grad_zero
        ref_term = alg.ref_grad_term
        to_world = alg.to_world_grad

        @_f

        def cell_reference_grad(cell_arg: Any, ea: EvalArg, s: Any):
            g = ref_zero()
            for k in range(node_count(cell_arg, ea.topo_arg, s.element_index)):
                g += ref_term(cell_node_value(cell_arg, ea, s.element_index, k), weight_grad(s.element_coords, k))
            return g

        @_f

        def cell_grad(cell_arg: Any, ea: EvalArg, s: Any):
            return to_world(cell_reference_grad(cell_arg, ea, s), inv_f(cell_arg, s))

        out.update(cell_reference_grad=cell_reference_grad, cell_grad=cell_grad)

    if alg.Div is not None:
        div_zero = alg.div_zero
        div_term = alg.div_term

        @_f

        def cell_div(cell_arg: Any, ea: EvalArg, s: Any):
            finv = inv_f(cell_arg, s)
            d = div_zero()
            for k in range(node_count(cell_arg, ea.topo_arg, s.element_index)):
                d += div_term(cell_node_value(cell_arg, ea, s.element_index, k), weight_grad(s.element_coords, k) * finv)
            return d

        out["cell_div"] = cell_div

    return SimpleNamespace(**out)


def basis_cell_funcs(space: Any, partition: Any, dof_attr: str) -> SimpleNamespace:
    """Cell functions of the test (``dof_attr="test_dof"``) or trial (``"trial_dof"``) functions of ``space``."""
    # the cell functions take the local node and component explicitly: test and trial functions share them
    return _memo(("basis", space.name, id(space.topology.funcs), id(space.basis.shape.funcs),
                  id(space.dof_mapper.funcs), id(partition.funcs), id(space.geometry._funcs)),
                 lambda: _make_basis_cell_funcs(space, partition, "any"))


def _make_basis_cell_funcs(space: Any, partition: Any, dof_attr: str) -> SimpleNamespace:
    if getattr(space, "value", "scalar") != "scalar":
        from .vector_funcs import vector_basis_cell_funcs

        return vector_basis_cell_funcs(space, partition)
    geo = space.geometry._funcs
    topo = space.topology.funcs
    shape = space.basis.shape.funcs
    mapper = space.dof_mapper.funcs
    part = partition.funcs
    alg = value_funcs(space.dtype, space.geometry.cell_dimension, space.geometry.dimension)
    T = space.dtype
    DS = space.dof_mapper.DOF_SIZE
    EvalArg = codegen.struct("BasisFieldEvalArg", {"topo_arg": topo.TopologyArg, "partition_arg": part.PartitionArg},
                             space.name, partition.name)
    weight = shape.element_inner_weight
    weight_grad = shape.element_inner_weight_gradient
    dof_to_value = mapper.dof_to_value
    unit = unit_dof_func(space.dof_dtype)
    inv_f = geo.cell_inverse_deformation_gradient
    key = ("basis_cell", space.name, partition.name, EvalArg.key)
    out: dict[str, Any] = {"EvalArg": EvalArg, "DOF_SIZE": DS}

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    # (local node, component) -> value of that basis function times the unit dof
    @_f
    def cell_basis_value(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int) -> T:
        return dof_to_value(unit(c)) * weight(s.element_coords, k)

    enum = node_enumeration_funcs(topo, part, EvalArg, key)
    cell_node_count = enum.cell_node_count
    cell_partition_node = enum.cell_partition_node
    cell_space_node = enum.cell_space_node

    @_f

    def cell_node_weight(cell_arg: Any, ea: EvalArg, s: Any, k: int):
        return weight(s.element_coords, k)

    @_f

    def cell_node_weight_gradient(cell_arg: Any, ea: EvalArg, s: Any, k: int):
        return weight_grad(s.element_coords, k) * inv_f(cell_arg, s)

    out.update(cell_basis_value=cell_basis_value, cell_node_count=cell_node_count,
               cell_partition_node=cell_partition_node, cell_space_node=cell_space_node,
               cell_node_weight=cell_node_weight, cell_node_weight_gradient=cell_node_weight_gradient)
    if alg.G is not None:
        ref_term = alg.ref_grad_term
        to_world = alg.to_world_grad

        @_f

        def cell_basis_reference_grad(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int):
            return ref_term(dof_to_value(unit(c)), weight_grad(s.element_coords, k))

        @_f

        def cell_basis_grad(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int):
            return to_world(ref_term(dof_to_value(unit(c)), weight_grad(s.element_coords, k)), inv_f(cell_arg, s))

        out.update(cell_basis_reference_grad=cell_basis_reference_grad, cell_basis_grad=cell_basis_grad)
    if alg.Div is not None:
        div_term = alg.div_term

        @_f

        def cell_basis_div(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int):
            return div_term(dof_to_value(unit(c)), weight_grad(s.element_coords, k) * inv_f(cell_arg, s))

        out["cell_basis_div"] = cell_basis_div
    return SimpleNamespace(**out)


def node_enumeration_funcs(topo: Any, part: Any, EvalArg: Any, key: tuple[Any, ...]) -> SimpleNamespace:
    """``cell_node_count``, ``cell_partition_node`` and ``cell_space_node`` of a basis field's cell nodes."""
    node_count = topo.element_node_count
    node_index = topo.element_node_index
    partition_index = part.partition_node_index

    def cell_node_count(cell_arg: Any, ea: EvalArg, cell: int) -> int:
        return node_count(cell_arg, ea.topo_arg, cell)

    def cell_partition_node(cell_arg: Any, ea: EvalArg, cell: int, k: int) -> int:
        return partition_index(ea.partition_arg, node_index(cell_arg, ea.topo_arg, cell, k))

    def cell_space_node(cell_arg: Any, ea: EvalArg, cell: int, k: int) -> int:
        return node_index(cell_arg, ea.topo_arg, cell, k)

    return SimpleNamespace(**{f.__name__: codegen.func(f, *key) for f in (cell_node_count, cell_partition_node,
                                                                          cell_space_node)})


# ------------------------------------------------------------------------------------------- domain level
def field_arg_struct(domain: Any, eval_arg: Any) -> Any:
    """The struct an integrand's field parameter receives: the domain's element argument and the field's own."""
    return codegen.struct("FieldArg", {"elt_arg": domain.ElementArg, "eval_arg": eval_arg},
                          domain.ElementArg.key, eval_arg.key)


_OPS_VALUE = ("value", "reference_grad", "grad", "div")


def discrete_domain_funcs(cell: SimpleNamespace, domain: Any) -> SimpleNamespace:
    """Domain functions ``inner``, ``outer``, ``grad_inner``... of a discrete field's cell functions."""
    kind = domain.element_kind
    return _memo(("discrete_domain", id(cell), kind, id(domain.geometry._funcs)),
                 lambda: _make_discrete_domain_funcs(cell, domain))


def _make_discrete_domain_funcs(cell: SimpleNamespace, domain: Any) -> SimpleNamespace:
    FieldArg = field_arg_struct(domain, cell.EvalArg)
    geo = domain.geometry._funcs
    key = ("discrete_domain", FieldArg.key)
    out: dict[str, Any] = {"FieldArg": FieldArg}
    to_cell_arg = geo.side_to_cell_arg
    sides = side_sample_funcs(geo)
    for op in _OPS_VALUE:
        fn = getattr(cell, "cell_" + op, None)
        if fn is None:
            continue
        out.update(_wrap_cell_op(op, fn, domain.element_kind, FieldArg, to_cell_arg, sides, key))
    for name in ("cell_node_weight", "cell_node_weight_gradient"):
        fn = getattr(cell, name, None)
        if fn is None:  # vector-valued bases have no scalar node weights
            continue
        out.update(_wrap_node_op(name[5:], fn, domain.element_kind, FieldArg, to_cell_arg, sides, key))
    return SimpleNamespace(**out)


def _wrap_cell_op(op: str, fn: Any, kind: ElementKind, FieldArg: Any, to_cell_arg: Any, sides: Any,
                  key: tuple[Any, ...]) -> dict[str, Any]:
    inner_sample = sides.inner_sample
    outer_sample = sides.outer_sample
    if kind == ElementKind.CELL:
        def inner(fa: FieldArg, s: Any):
            return fn(fa.elt_arg, fa.eval_arg, s)

        f = codegen.func(inner, op, *key)
        return {f"{op}_inner": f, f"{op}_outer": f}

    def side_inner(fa: FieldArg, s: Any):
        return fn(to_cell_arg(fa.elt_arg), fa.eval_arg, inner_sample(fa.elt_arg, s))

    def side_outer(fa: FieldArg, s: Any):
        return fn(to_cell_arg(fa.elt_arg), fa.eval_arg, outer_sample(fa.elt_arg, s))

    return {f"{op}_inner": codegen.func(side_inner, op, *key), f"{op}_outer": codegen.func(side_outer, op, *key)}


def _wrap_node_op(op: str, fn: Any, kind: ElementKind, FieldArg: Any, to_cell_arg: Any, sides: Any,
                  key: tuple[Any, ...]) -> dict[str, Any]:
    inner_sample = sides.inner_sample
    outer_sample = sides.outer_sample
    if kind == ElementKind.CELL:
        def inner(fa: FieldArg, s: Any, k: int):
            return fn(fa.elt_arg, fa.eval_arg, s, k)

        f = codegen.func(inner, op, *key)
        return {f"{op}_inner": f, f"{op}_outer": f}

    def side_inner(fa: FieldArg, s: Any, k: int):
        return fn(to_cell_arg(fa.elt_arg), fa.eval_arg, inner_sample(fa.elt_arg, s), k)

    def side_outer(fa: FieldArg, s: Any, k: int):
        return fn(to_cell_arg(fa.elt_arg), fa.eval_arg, outer_sample(fa.elt_arg, s), k)

    return {f"{op}_inner": codegen.func(side_inner, op, *key), f"{op}_outer": codegen.func(side_outer, op, *key)}


def basis_domain_funcs(cell: SimpleNamespace, domain: Any, dof_attr: str, space: Any) -> SimpleNamespace:
    """Domain functions of test/trial functions (values, gradients, node enumeration) on ``domain``."""
    return _memo(("basis_domain", id(cell), domain.element_kind, id(domain.geometry._funcs), dof_attr),
                 lambda: _make_basis_domain_funcs(cell, domain, dof_attr, space))


def _make_basis_domain_funcs(cell: SimpleNamespace, domain: Any, dof_attr: str, space: Any) -> SimpleNamespace:
    FieldArg = field_arg_struct(domain, cell.EvalArg)
    geo = domain.geometry._funcs
    DS = cell.DOF_SIZE
    alg = value_funcs(space.dtype, space.geometry.cell_dimension, space.geometry.dimension)
    key = ("basis_domain", dof_attr, FieldArg.key)
    to_cell_arg = geo.side_to_cell_arg
    sides = side_sample_funcs(geo)
    inner_sample = sides.inner_sample
    outer_sample = sides.outer_sample
    inner_index = geo.side_inner_cell_index
    outer_index = geo.side_outer_cell_index
    node_count = cell.cell_node_count
    partition_node = cell.cell_partition_node
    space_node = cell.cell_space_node
    is_test = dof_attr == "test_dof"
    out: dict[str, Any] = {"FieldArg": FieldArg, "DOF_SIZE": DS}

    if is_test:
        def dof_of(s: Any) -> int:
            return s.test_dof
    else:
        def dof_of(s: Any) -> int:
            return s.trial_dof
    dof_of = codegen.func(dof_of, *key)

    if domain.element_kind == ElementKind.CELL:
        def element_node_count(fa: FieldArg, element: int) -> int:
            return node_count(fa.elt_arg, fa.eval_arg, element)

        def element_partition_node(fa: FieldArg, element: int, k: int) -> int:
            return partition_node(fa.elt_arg, fa.eval_arg, element, k)

        def element_space_node(fa: FieldArg, element: int, k: int) -> int:
            return space_node(fa.elt_arg, fa.eval_arg, element, k)
    else:
        def element_node_count(fa: FieldArg, element: int) -> int:
            ca = to_cell_arg(fa.elt_arg)
            ci = inner_index(fa.elt_arg, element)
            co = outer_index(fa.elt_arg, element)
            n = node_count(ca, fa.eval_arg, ci)
            if co != ci:
                n += node_count(ca, fa.eval_arg, co)
            return n

        def element_partition_node(fa: FieldArg, element: int, k: int) -> int:
            ca = to_cell_arg(fa.elt_arg)
            ci = inner_index(fa.elt_arg, element)
            n_in = node_count(ca, fa.eval_arg, ci)
            if k < n_in:
                return partition_node(ca, fa.eval_arg, ci, k)
            return partition_node(ca, fa.eval_arg, outer_index(fa.elt_arg, element), k - n_in)

        def element_space_node(fa: FieldArg, element: int, k: int) -> int:
            ca = to_cell_arg(fa.elt_arg)
            ci = inner_index(fa.elt_arg, element)
            n_in = node_count(ca, fa.eval_arg, ci)
            if k < n_in:
                return space_node(ca, fa.eval_arg, ci, k)
            return space_node(ca, fa.eval_arg, outer_index(fa.elt_arg, element), k - n_in)

    out.update(element_node_count=codegen.func(element_node_count, *key),
               element_partition_node=codegen.func(element_partition_node, *key),
               element_space_node=codegen.func(element_space_node, *key))

    zeros = {"value": alg.zero}
    if alg.G is not None:
        zeros["reference_grad"] = alg.ref_grad_zero
        zeros["grad"] = _zero_of(alg.G, key)
    if alg.Div is not None:
        zeros["div"] = alg.div_zero
    for op, zero in zeros.items():
        fn = getattr(cell, f"cell_basis_{op}", None)
        if fn is None:  # e.g. no reference gradient for vector-valued bases
            continue
        out.update(_basis_op(op, fn, zero, domain.element_kind, FieldArg, DS, dof_of, to_cell_arg, inner_sample,
                             outer_sample, inner_index, outer_index, node_count, key))
    v2d = getattr(cell, "cell_value_to_dof", None)
    if v2d is not None:
        out["value_to_dof"] = _value_to_dof(v2d, domain.element_kind, FieldArg, to_cell_arg, inner_sample,
                                            outer_sample, inner_index, node_count, key)
    return SimpleNamespace(**out)


def _value_to_dof(fn: Any, kind: ElementKind, FieldArg: Any, to_cell_arg: Any, inner_sample: Any, outer_sample: Any,
                  inner_index: Any, node_count: Any, key: tuple[Any, ...]) -> Any:
    """Domain function ``(fa, s, k, value) -> dof`` of element-local node ``k`` (vector-valued bases)."""
    if kind == ElementKind.CELL:
        def value_to_dof(fa: FieldArg, s: Any, k: int, v: Any):
            return fn(fa.elt_arg, fa.eval_arg, s, k, v)
    else:
        def value_to_dof(fa: FieldArg, s: Any, k: int, v: Any):
            ca = to_cell_arg(fa.elt_arg)
            n_in = node_count(ca, fa.eval_arg, inner_index(fa.elt_arg, s.element_index))
            if k < n_in:
                return fn(ca, fa.eval_arg, inner_sample(fa.elt_arg, s), k, v)
            return fn(ca, fa.eval_arg, outer_sample(fa.elt_arg, s), k - n_in, v)
    return codegen.func(value_to_dof, "value_to_dof", *key)


def _zero_of(t: Any, key: tuple[Any, ...]) -> Any:
    T = t

    def zero_of() -> T:
        return T()

    return codegen.func(zero_of, codegen.type_key(t), *key)


def _basis_op(op: str, fn: Any, zero: Any, kind: ElementKind, FieldArg: Any, DS: int, dof_of: Any, to_cell_arg: Any,
              inner_sample: Any, outer_sample: Any, inner_index: Any, outer_index: Any, node_count: Any,
              key: tuple[Any, ...]) -> dict[str, Any]:
    if kind == ElementKind.CELL:
        def inner(fa: FieldArg, s: Any):
            dof = dof_of(s)
            k = dof // DS
            return fn(fa.elt_arg, fa.eval_arg, s, k, dof - k * DS)

        f = codegen.func(inner, op, *key)
        return {f"{op}_inner": f, f"{op}_outer": f}

    def side_inner(fa: FieldArg, s: Any):
        dof = dof_of(s)
        k = dof // DS
        ca = to_cell_arg(fa.elt_arg)
        cs = inner_sample(fa.elt_arg, s)
        if k < node_count(ca, fa.eval_arg, cs.element_index):
            return fn(ca, fa.eval_arg, cs, k, dof - k * DS)
        return zero()

    def side_outer(fa: FieldArg, s: Any):
        dof = dof_of(s)
        k = dof // DS
        ca = to_cell_arg(fa.elt_arg)
        ci = inner_index(fa.elt_arg, s.element_index)
        co = outer_index(fa.elt_arg, s.element_index)
        cs = outer_sample(fa.elt_arg, s)
        if ci == co:
            return fn(ca, fa.eval_arg, cs, k, dof - k * DS)
        n_in = node_count(ca, fa.eval_arg, ci)
        if k >= n_in:
            return fn(ca, fa.eval_arg, cs, k - n_in, dof - k * DS)
        return zero()

    return {f"{op}_inner": codegen.func(side_inner, op, *key), f"{op}_outer": codegen.func(side_outer, op, *key)}
