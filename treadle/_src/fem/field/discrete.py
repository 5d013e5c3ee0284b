"""Discrete fields: values at the nodes of a function space, interpolated by its basis."""

from typing import Any

import treadle as wp

from .. import codegen
from ..space.partition import SpacePartition, make_space_partition
from .field import FieldError, GeometryField, Resolved
from .nodal_funcs import discrete_cell_funcs, discrete_domain_funcs, field_arg_struct
from .node_ops import node_op_funcs


class DiscreteField(GeometryField):
    """A field given by its values at the nodes of a space partition (``dof_values``).

    Args:
        space: the function space.
        space_partition: which nodes the values are stored for (the whole space by default).

    """

    #: How ``make_deformed_geometry`` reads this field.
    deformation_kind = "discrete"

    def __init__(self, space: Any, space_partition: SpacePartition) -> None:
        self.space = space
        self.space_partition = space_partition
        self.dtype = space.dtype
        self._dof_values = wp.zeros(space_partition.node_count(), dtype=space.dof_dtype)
        self._cell = discrete_cell_funcs(space, space_partition)

    @property
    def name(self) -> str:
        """``Discrete_<space>``."""
        return f"Discrete_{self.space.name}_{self.space_partition.name}"

    @property
    def geometry(self) -> Any:
        """The space's geometry."""
        return self.space.geometry

    @property
    def degree(self) -> int:
        """The space's degree."""
        return self.space.degree

    @property
    def dof_dtype(self) -> Any:
        """Type of the stored node values."""
        return self.space.dof_dtype

    @property
    def gradient_dtype(self) -> Any:
        """The space's gradient type."""
        return self.space.gradient_dtype

    @property
    def divergence_dtype(self) -> Any:
        """The space's divergence type."""
        return self.space.divergence_dtype

    @property
    def dof_values(self) -> Any:
        """The node values: an array of ``space.dof_dtype``, one entry per partition node."""
        return self._dof_values

    @dof_values.setter
    def dof_values(self, values: Any) -> None:
        n = self.space_partition.node_count()
        if not isinstance(values, wp.array):
            values = wp.array(values, dtype=self.space.dof_dtype)
        if values.ndim != 1 or values.shape[0] != n:
            raise ValueError(f"dof_values of {self.name}: expected {n} values (one per partition node), got an "
                             f"array of shape {tuple(values.shape)}")
        if values.dtype != self.space.dof_dtype:
            raise TypeError(f"dof_values of {self.name}: expected dtype {self.space.dof_dtype.__name__}, got "
                            f"{values.dtype.__name__}")
        self._dof_values = values

    @property
    def EvalArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the field's own kernel argument."""
        return self._cell.EvalArg

    def eval_arg_value(self, device: Any = None) -> Any:
        """The field's own kernel argument (topology, partition and node values)."""
        arg = self.EvalArg()
        dev = wp.get_device(device) if device is not None else self._dof_values.device
        arg.topo_arg = self.space.topology.topo_arg_value(dev)
        arg.partition_arg = self.space_partition.partition_arg_value(dev)
        arg.dof_values = self._dof_values if self._dof_values.device == dev else self._dof_values.to(dev)
        return arg

    def field_arg_type(self, domain: Any) -> Any:
        """``{elt_arg, eval_arg}`` for ``domain``."""
        return field_arg_struct(domain, self.EvalArg)

    def field_arg_value(self, domain: Any, device: Any) -> Any:
        """The integrand argument on ``domain``."""
        fa = self.field_arg_type(domain)()
        fa.elt_arg = domain.element_arg_value(device)
        fa.eval_arg = self.eval_arg_value(device)
        return fa

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """Values, gradients, divergences, node queries and the degree of the field."""
        self.check_domain(domain)
        if op == "degree":
            return Resolved(self.degree, static=True)
        if op == "scalar_type":
            return Resolved(self.geometry.scalar_type, static=True)
        if nargs >= 3 or op in ("node_count", "node_index", "at_node", "node_partition_index",
                                "node_inner_weight", "node_outer_weight", "node_inner_weight_gradient",
                                "node_outer_weight_gradient"):
            return Resolved(node_op_funcs(self, domain, op, nargs))
        names = {"inner": "value_inner", "outer": "value_outer", "grad": "grad_inner", "grad_outer": "grad_outer",
                 "div": "div_inner", "div_outer": "div_outer", "reference_grad": "reference_grad_inner"}
        if op not in names:
            raise FieldError(f"discrete fields do not support fem.{op}")
        funcs = discrete_domain_funcs(self._cell, domain)
        fn = getattr(funcs, names[op], None)
        if fn is None:
            what = "gradient" if "grad" in op else "divergence"
            raise FieldError(f"fem.{op}: the values of {self.name} ({codegen.type_key(self.dtype)}) have no {what}")
        return Resolved(fn)

    def trace(self) -> Any:
        """The field itself: discrete fields evaluate on side domains directly."""
        return self

    def set_node_value(self, node_index: int, value: Any) -> None:
        """Set the value of one partition node (from the host)."""
        host = self._dof_values.numpy()
        host[node_index] = value
        self._dof_values.assign(host)


def make_discrete_field(space: Any, space_partition: SpacePartition | None = None) -> DiscreteField:
    """A zero-valued :class:`DiscreteField` on ``space``.

    Args:
        space: the function space.
        space_partition: which nodes to store values for (the whole space by default).

    """
    from ..space.function_space import FunctionSpace

    if not isinstance(space, FunctionSpace):
        raise TypeError(f"make_discrete_field: expected a function space, got {type(space).__name__}")
    if space_partition is None:
        space_partition = make_space_partition(space_topology=space.topology)
    elif space_partition.space_topology is not space.topology:
        raise FieldError("make_discrete_field: the space partition is not of the space's topology")
    return DiscreteField(space, space_partition)
