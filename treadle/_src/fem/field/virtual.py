"""Test and trial fields: the basis functions a linear or bilinear form is integrated against.

``fem.integrate`` evaluates an integrand once per element-local degree of freedom of its test field (and per pair
with its trial field); inside the integrand, the test or trial field is that one basis function times one unit
dof component.
"""

from typing import Any

import treadle as wp

from ..domain import Cells, GeometryDomain
from ..space.partition import SpacePartition, make_space_partition
from .field import FieldError, FieldLike, Resolved
from .nodal_funcs import basis_cell_funcs, basis_domain_funcs, field_arg_struct


class _BasisField(FieldLike):
    _dof_attr = ""

    def __init__(self, space: Any, space_partition: SpacePartition, domain: GeometryDomain,
                 space_restriction: Any = None) -> None:
        self.space = space
        self.space_partition = space_partition
        self.domain = domain
        self.space_restriction = space_restriction
        self.dtype = space.dtype
        self._cell = basis_cell_funcs(space, space_partition, self._dof_attr)

    @property
    def name(self) -> str:
        """``Test_<space>`` or ``Trial_<space>``."""
        return f"{type(self).__name__}_{self.space.name}_{self.space_partition.name}"

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
        """Type of the node values."""
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
    def node_dof_count(self) -> int:
        """Scalars per node (the block size of assembled matrices)."""
        return self.space.dof_mapper.DOF_SIZE

    @property
    def value_dof_count(self) -> int:
        """Scalars per value."""
        return self.space.VALUE_DOF_COUNT

    def node_count(self) -> int:
        """Rows (test) or columns (trial) of assembled results: the partition's nodes."""
        return self.space_partition.node_count()

    @property
    def EvalArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the field's own kernel argument."""
        return self._cell.EvalArg

    def eval_arg_value(self, device: Any = None) -> Any:
        """Topology and partition arguments."""
        arg = self.EvalArg()
        dev = wp.get_device(device)
        arg.topo_arg = self.space.topology.topo_arg_value(dev)
        arg.partition_arg = self.space_partition.partition_arg_value(dev)
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

    def domain_funcs(self, domain: Any) -> Any:
        """Node enumeration and evaluation functions on ``domain``."""
        return basis_domain_funcs(self._cell, domain, self._dof_attr, self.space)

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """Values, gradients and divergences of the basis function being evaluated."""
        self.check_domain(domain)
        if op == "degree":
            return Resolved(self.degree, static=True)
        if op == "scalar_type":
            return Resolved(self.geometry.scalar_type, static=True)
        names = {"inner": "value_inner", "outer": "value_outer", "grad": "grad_inner", "grad_outer": "grad_outer",
                 "div": "div_inner", "div_outer": "div_outer", "reference_grad": "reference_grad_inner"}
        if op in names:
            if nargs > 2:
                raise FieldError(f"fem.{op} of a test or trial field takes (field, sample), not a node index")
            fn = getattr(self.domain_funcs(domain), names[op], None)
            if fn is None:
                what = "gradient" if "grad" in op else "divergence"
                raise FieldError(f"fem.{op}: the values of {self.name} have no {what}")
            return Resolved(fn)
        from .basis_node_ops import basis_node_op

        return Resolved(basis_node_op(self, domain, op, nargs))


class TestField(_BasisField):
    """The test functions of a space on a domain (the rows of assembled vectors and matrices)."""

    _dof_attr = "test_dof"

    def rebind(self, space: Any, space_restriction: Any = None) -> None:
        """Use another space (of the same kind) from now on."""
        self.__init__(space, self.space_partition, self.domain, space_restriction)  # type: ignore[misc]


class TrialField(_BasisField):
    """The trial functions of a space on a domain (the columns of assembled matrices)."""

    _dof_attr = "trial_dof"


class LocalTestField(TestField):
    """Test functions evaluated element by element (accepted for compatibility; same as :class:`TestField`)."""


def _resolve_args(space: Any, space_restriction: Any, space_partition: Any, domain: Any,
                  what: str) -> tuple[SpacePartition, GeometryDomain, Any]:
    from ..space.function_space import FunctionSpace

    if not isinstance(space, FunctionSpace):
        raise TypeError(f"{what}: expected a function space, got {type(space).__name__}")
    if space_restriction is not None:
        space_partition = space_restriction.space_partition
        domain = space_restriction.domain
    if domain is None:
        domain = Cells(space.geometry if space_partition is None else space_partition.geo_partition)
    if not isinstance(domain, GeometryDomain):
        raise TypeError(f"{what}: domain must be a fem domain (fem.Cells, fem.BoundarySides...), got "
                        f"{type(domain).__name__}")
    if domain.geometry is not space.geometry:
        raise FieldError(f"{what}: the domain is on geometry {domain.geometry.name}, the space on "
                         f"{space.geometry.name}")
    if space_partition is None:
        space_partition = make_space_partition(space_topology=space.topology,
                                               geometry_partition=domain.geometry_partition)
    elif space_partition.space_topology is not space.topology:
        raise FieldError(f"{what}: the space partition is not of the space's topology")
    return space_partition, domain, space_restriction


def make_test(space: Any, space_restriction: Any = None, space_partition: Any = None, domain: Any = None,
              device: Any = None) -> TestField:
    """The test field of ``space`` on ``domain``.

    Args:
        space: the function space.
        space_restriction: a space restriction (gives the partition and domain).
        space_partition: which nodes are rows of the results (follows the domain's geometry partition by default).
        domain: integration domain (the geometry's cells by default).
        device: unused (accepted for compatibility).

    """
    part, dom, restr = _resolve_args(space, space_restriction, space_partition, domain, "make_test")
    return TestField(space, part, dom, restr)


def make_trial(space: Any, space_restriction: Any = None, space_partition: Any = None,
               domain: Any = None) -> TrialField:
    """The trial field of ``space`` on ``domain``.

    Args:
        space: the function space.
        space_restriction: a space restriction (gives the partition and domain).
        space_partition: which nodes are columns of the results.
        domain: integration domain (the geometry's cells by default).

    """
    part, dom, restr = _resolve_args(space, space_restriction, space_partition, domain, "make_trial")
    return TrialField(space, part, dom, restr)
