"""Cell functions of fields of vector-valued bases (Nedelec, Raviart-Thomas): Piola-mapped values.

A node's world value at a cell sample is ``M (sign * phi(xi))`` with ``M = F^-T`` (covariant) or ``F / |F|``
(contravariant) and ``phi`` the reference vector of the shape function; its world gradient is
``M (sign * dphi/dxi) F^-1`` (the map's own variation is not differentiated, exact on affine cells), so ``div`` is
the gradient's trace and ``curl`` its skew part as for any vector field. Interpolating a world value ``v`` into a
node's dof pulls it back (``F^T v``, or ``|F| F^-1 v``) and projects it on the node's dual vector.

The functions mirror :mod:`.nodal_funcs` (same names and signatures) so the domain-level wrappers apply unchanged.
"""

from types import SimpleNamespace
from typing import Any

import treadle as wp

from .. import codegen


def _maps(space: Any, key: tuple[Any, ...]) -> tuple[Any, Any]:
    """``(value_map(cell_arg, s), inverse_value_map(cell_arg, s))`` of the space's Piola map."""
    geo = space.geometry._funcs
    f_of = geo.cell_deformation_gradient
    inv_f = geo.cell_inverse_deformation_gradient
    S = space.geometry.scalar_type
    square = space.geometry.dimension == space.geometry.cell_dimension

    if space.value == "covariant":
        def value_map(cell_arg: Any, s: Any):
            return wp.transpose(inv_f(cell_arg, s))

        def inverse_value_map(cell_arg: Any, s: Any):
            return wp.transpose(f_of(cell_arg, s))
    else:
        if square:
            def measure(F: Any) -> S:
                return wp.abs(wp.determinant(F))
        else:
            def measure(F: Any) -> S:
                return wp.sqrt(wp.abs(wp.determinant(wp.transpose(F) * F)))
        measure = codegen.func(measure, "piola_measure", *key)

        def value_map(cell_arg: Any, s: Any):
            F = f_of(cell_arg, s)
            return F / measure(F)

        def inverse_value_map(cell_arg: Any, s: Any):
            return inv_f(cell_arg, s) * measure(f_of(cell_arg, s))
    return codegen.func(value_map, "piola", *key), codegen.func(inverse_value_map, "piola_inv", *key)


def _common(space: Any, partition: Any, what: str, fields: dict[str, Any]) -> SimpleNamespace:
    """What both kinds of cell functions use: types, the eval-argument struct, the Piola maps, kernel functions."""
    geo = space.geometry._funcs
    topo = space.topology.funcs
    shape = space.basis.shape.funcs
    S = space.geometry.scalar_type
    dim = space.geometry.dimension
    EvalArg = codegen.struct(what, {"topo_arg": topo.TopologyArg, "partition_arg": partition.funcs.PartitionArg,
                                    **fields}, space.name, partition.name)
    key = (what, space.name, partition.name, EvalArg.key)
    value_map, inverse_value_map = _maps(space, key)
    return SimpleNamespace(T=space.dtype, S=S, G=wp.types.matrix(shape=(dim, dim), dtype=S), EvalArg=EvalArg,
                           key=key, value_map=value_map, inverse_value_map=inverse_value_map, topo=topo,
                           node_count=topo.element_node_count, node_index=topo.element_node_index,
                           node_sign=topo.element_node_sign, partition_index=partition.funcs.partition_node_index,
                           weight=shape.element_inner_weight, weight_grad=shape.element_inner_weight_gradient,
                           dual=shape.node_dual_weight, inv_f=geo.cell_inverse_deformation_gradient)


def vector_discrete_cell_funcs(space: Any, partition: Any) -> SimpleNamespace:
    """Cell functions of a discrete field of a vector-valued space (see the module documentation)."""
    c = _common(space, partition, "VectorFieldEvalArg", {"dof_values": wp.array(dtype=space.geometry.scalar_type)})
    T, S, G, EvalArg = c.T, c.S, c.G, c.EvalArg
    value_map, node_count, node_index, node_sign = c.value_map, c.node_count, c.node_index, c.node_sign
    partition_index, weight, weight_grad, inv_f = c.partition_index, c.weight, c.weight_grad, c.inv_f

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *c.key)

    @_f
    def cell_node_value(cell_arg: Any, ea: EvalArg, cell: int, k: int) -> S:
        n = partition_index(ea.partition_arg, node_index(cell_arg, ea.topo_arg, cell, k))
        return ea.dof_values[n] * S(node_sign(cell_arg, ea.topo_arg, cell, k))

    @_f
    def cell_value(cell_arg: Any, ea: EvalArg, s: Any) -> T:
        v = weight(s.element_coords, 0) * S(0.0)
        for k in range(node_count(cell_arg, ea.topo_arg, s.element_index)):
            v += cell_node_value(cell_arg, ea, s.element_index, k) * weight(s.element_coords, k)
        return value_map(cell_arg, s) * v

    @_f
    def cell_grad(cell_arg: Any, ea: EvalArg, s: Any) -> G:
        g = weight_grad(s.element_coords, 0) * S(0.0)
        for k in range(node_count(cell_arg, ea.topo_arg, s.element_index)):
            g += cell_node_value(cell_arg, ea, s.element_index, k) * weight_grad(s.element_coords, k)
        return value_map(cell_arg, s) * g * inv_f(cell_arg, s)

    @_f
    def cell_div(cell_arg: Any, ea: EvalArg, s: Any) -> S:
        return wp.trace(cell_grad(cell_arg, ea, s))

    return SimpleNamespace(EvalArg=EvalArg, cell_node_value=cell_node_value, cell_value=cell_value,
                           cell_grad=cell_grad, cell_div=cell_div)


def vector_basis_cell_funcs(space: Any, partition: Any) -> SimpleNamespace:
    """Cell functions of test/trial functions of a vector-valued space (one scalar dof per node)."""
    from .nodal_funcs import node_enumeration_funcs

    c = _common(space, partition, "VectorBasisEvalArg", {})
    T, S, G, EvalArg = c.T, c.S, c.G, c.EvalArg
    value_map, inverse_value_map, node_sign = c.value_map, c.inverse_value_map, c.node_sign
    weight, weight_grad, dual, inv_f = c.weight, c.weight_grad, c.dual, c.inv_f
    enum = node_enumeration_funcs(c.topo, partition.funcs, EvalArg, c.key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *c.key)

    @_f
    def cell_basis_value(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int) -> T:
        sign = S(node_sign(cell_arg, ea.topo_arg, s.element_index, k))
        return value_map(cell_arg, s) * (weight(s.element_coords, k) * sign)

    @_f
    def cell_basis_grad(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int) -> G:
        sign = S(node_sign(cell_arg, ea.topo_arg, s.element_index, k))
        return value_map(cell_arg, s) * (weight_grad(s.element_coords, k) * sign) * inv_f(cell_arg, s)

    @_f
    def cell_basis_div(cell_arg: Any, ea: EvalArg, s: Any, k: int, c: int) -> S:
        return wp.trace(cell_basis_grad(cell_arg, ea, s, k, c))

    @_f
    def cell_value_to_dof(cell_arg: Any, ea: EvalArg, s: Any, k: int, v: T) -> S:
        sign = S(node_sign(cell_arg, ea.topo_arg, s.element_index, k))
        return wp.dot(inverse_value_map(cell_arg, s) * v, dual(k)) * sign

    return SimpleNamespace(EvalArg=EvalArg, DOF_SIZE=1, cell_basis_value=cell_basis_value,
                           cell_basis_grad=cell_basis_grad, cell_basis_div=cell_basis_div,
                           cell_value_to_dof=cell_value_to_dof, **vars(enum))
