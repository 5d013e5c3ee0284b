"""Restrictions: the nodes of a space (partition) that a domain's elements touch, and fields seen on a domain."""

from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .domain import Cells, GeometryDomain
from .types import NULL_NODE_INDEX


class SpaceRestriction:
    """The nodes of a space partition that the elements of ``domain`` touch.

    Attributes:
        space_partition: the space partition.
        space_topology: its topology.
        domain: the domain.
        node_partition_indices: partition index of each restricted node (increasing).
        node_element_offsets: for restricted node ``i``, its ``(element, local node)`` pairs are entries
            ``node_element_offsets[i]`` to ``node_element_offsets[i + 1]`` of ``node_element_indices`` (domain
            element numbers) and ``node_element_local`` (element-local node numbers).

    """

    def __init__(self, space_partition: Any, domain: GeometryDomain, device: Any = None,
                 temporary_store: Any = None) -> None:
        if not isinstance(domain, GeometryDomain):
            raise TypeError(f"SpaceRestriction: domain must be a fem domain, got {type(domain).__name__}")
        if domain.geometry is not space_partition.space_topology.geometry:
            raise ValueError("SpaceRestriction: the domain is not on the space's geometry")
        self.space_partition = space_partition
        self.space_topology = space_partition.space_topology
        self.domain = domain
        self._device = wp.get_device(device)
        self.rebuild()

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Recompute the restricted nodes (after the partition or domain changed)."""
        from .field.nodal_funcs import basis_cell_funcs, basis_domain_funcs
        from .field.virtual import TestField

        part = self.space_partition
        space = _SpaceLike(self.space_topology)
        test = TestField.__new__(TestField)
        test.space = space
        test.space_partition = part
        test.domain = self.domain
        test._cell = basis_cell_funcs(space, part, "test_dof")
        dom = basis_domain_funcs(test._cell, self.domain, "test_dof", space)
        n_elem = self.domain.element_count()
        m = self.space_topology.MAX_NODES_PER_ELEMENT * (2 if self.domain.element_kind.value else 1)
        nodes = wp.full(n_elem * m, -1, dtype=int, device=self._device)
        if n_elem:
            k = _enumerate_kernel(dom, self.domain, m)
            fa = dom.FieldArg()
            fa.elt_arg = self.domain.element_arg_value(self._device)
            ea = test._cell.EvalArg()
            ea.topo_arg = self.space_topology.topo_arg_value(self._device)
            ea.partition_arg = part.partition_arg_value(self._device)
            fa.eval_arg = ea
            wp.launch(k, dim=(n_elem, m), inputs=[fa, self.domain.element_index_arg_value(self._device), nodes],
                      device=self._device)
        table = nodes.numpy().reshape(n_elem, m)
        valid = (table >= 0) & (table != NULL_NODE_INDEX)
        elem, local = np.nonzero(valid)
        node = table[elem, local]
        order = np.lexsort((local, elem, node))
        node, elem, local = node[order], elem[order], local[order]
        uniq, starts = np.unique(node, return_index=True)
        offsets = np.append(starts, len(node)).astype(np.int32)
        dev = self._device
        self._node_np = uniq.astype(np.int32)
        self.node_partition_indices = wp.array(self._node_np, dtype=int, device=dev)
        self.node_element_offsets = wp.array(offsets, dtype=int, device=dev)
        self.node_element_indices = wp.array(elem.astype(np.int32), dtype=int, device=dev)
        self.node_element_local = wp.array(local.astype(np.int32), dtype=int, device=dev)

    def node_count(self) -> int:
        """Number of restricted nodes."""
        return int(len(self._node_np))

    def node_count_sync(self) -> int:
        """Number of restricted nodes (already on the host)."""
        return self.node_count()

    def total_node_element_count(self) -> int:
        """Number of (node, element) pairs."""
        return int(self.node_element_indices.shape[0])


class _SpaceLike:
    """The parts of a function space that node enumeration needs (scalar values on a topology)."""

    def __init__(self, topology: Any) -> None:
        from .space.dof_mapper import IdentityMapper

        self.topology = topology
        self.geometry = topology.geometry
        self.basis = _BasisLike(topology)
        self.dtype = topology.geometry.scalar_type
        self.dof_dtype = self.dtype
        self.dof_mapper = IdentityMapper(self.dtype)

    @property
    def name(self) -> str:
        return f"{self.topology.name}_nodes"


class _BasisLike:
    def __init__(self, topology: Any) -> None:
        self.shape = topology.shape


_ENUM: dict[tuple[Any, ...], Any] = {}


def _enumerate_kernel(dom: Any, domain: Any, m: int) -> Any:
    key = (id(dom), id(domain.funcs.element_index), m)
    k = _ENUM.get(key)
    if k is None:
        FieldArg = dom.FieldArg
        IndexArg = domain.ElementIndexArg
        element_index = domain.funcs.element_index
        count = dom.element_node_count
        pnode = dom.element_partition_node
        M = m

        def enumerate_nodes(fa: FieldArg, index_arg: IndexArg, out: wp.array(dtype=int)):
            d, i = wp.tid()
            e = element_index(index_arg, d)
            if e < 0:
                return
            if i < count(fa, e):
                out[d * M + i] = pnode(fa, e, i)

        tag = codegen.digest(FieldArg.key, IndexArg.key, m)
        k = _ENUM[key] = codegen.kernel(enumerate_nodes, key=f"enumerate_nodes_{tag}")
    return k


def make_space_restriction(space_partition: Any = None, domain: GeometryDomain | None = None,
                           space_topology: Any = None, device: Any = None,
                           temporary_store: Any = None) -> SpaceRestriction:
    """The nodes of a space partition touched by a domain.

    Args:
        space_partition: the partition (the whole space of ``space_topology`` by default).
        domain: the domain (the cells of the partition's geometry partition by default).
        space_topology: the topology, when no partition is given (a function space is accepted too).
        device: device of the restriction's arrays.
        temporary_store: unused (accepted for compatibility).

    """
    from .space.partition import make_space_partition

    if space_partition is None:
        if space_topology is None:
            raise ValueError("make_space_restriction: One of `space_partition` or `space_topology` must be provided")
        space_partition = make_space_partition(space_topology=getattr(space_topology, "topology", space_topology),
                                               geometry_partition=None if domain is None else
                                               domain.geometry_partition)
    if domain is None:
        domain = Cells(space_partition.geo_partition)
    return SpaceRestriction(space_partition, domain, device=device, temporary_store=temporary_store)


class FieldRestriction:
    """A discrete field seen on a domain (as an interpolation destination, or integrand argument).

    Attributes:
        field: the discrete field.
        domain: the domain.
        space_restriction: the nodes of the field's space on the domain.

    """

    def __init__(self, field: Any, space_restriction: SpaceRestriction) -> None:
        self.field = field
        self.space_restriction = space_restriction
        self.domain = space_restriction.domain

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["field"], name)


def make_restriction(field: Any, space_restriction: SpaceRestriction | None = None,
                     domain: GeometryDomain | None = None, device: Any = None) -> FieldRestriction:
    """Restrict a discrete field to a domain (or to a space restriction's nodes).

    Args:
        field: the discrete field.
        space_restriction: the restriction (built from ``domain`` when ``None``).
        domain: the domain.
        device: device of the restriction's arrays.

    """
    if space_restriction is None:
        space_restriction = make_space_restriction(space_partition=field.space_partition, domain=domain,
                                                   device=device)
    return FieldRestriction(field, space_restriction)
