"""Space partitions: the nodes of a function space that one geometry partition's cells touch.

Field values (``dof_values``) are stored per *partition node*. Over the whole geometry every space node is a
partition node with the same number (:class:`WholeSpacePartition`). Over a cell-based geometry partition, the
partition's nodes are those of its cells (owned nodes first, then the shared nodes another partition owns, then,
``with_halo``, the nodes of the cells across its frontier sides),
and ``partition_node_index(arg, node)`` gives a node's partition number or ``NULL_NODE_INDEX``.
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from ..geometry.partition import GeometryPartition, WholeGeometryPartition
from ..types import NULL_NODE_INDEX


class SpacePartition:
    """Base class of space partitions.

    Attributes:
        space_topology: the topology partitioned.
        geo_partition: the geometry partition it follows.

    """

    def __init__(self, space_topology: Any, geo_partition: GeometryPartition) -> None:
        self.space_topology = space_topology
        self.geo_partition = geo_partition
        self._args: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """A name describing the partition's kind."""
        return type(self).__name__

    def node_count(self) -> int:
        """Nodes of the partition (owned and halo)."""
        raise NotImplementedError

    def owned_node_count(self) -> int:
        """Nodes the partition owns."""
        return self.node_count()

    def interior_node_count(self) -> int:
        """Owned nodes touched only by partition cells."""
        return self.owned_node_count()

    def space_node_indices(self) -> Any:
        """Space node number of each partition node."""
        raise NotImplementedError

    @property
    def PartitionArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the partition's kernel argument."""
        return self.funcs.PartitionArg

    def partition_arg_value(self, device: Any = None) -> Any:
        """The partition's kernel argument on ``device``."""
        key = str(wp.get_device(device))
        v = self._args.get(key)
        if v is None:
            v = self.PartitionArg()
            self.fill_partition_arg(v, wp.get_device(device))
            self._args[key] = v
        return v

    def fill_partition_arg(self, arg: Any, device: Any) -> None:
        """Fill the kernel argument."""

    @property
    def partition_node_index(self) -> Any:
        """Kernel function ``(arg, space node) -> partition node`` (``NULL_NODE_INDEX`` outside)."""
        return self.funcs.partition_node_index

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Recompute the partition after its geometry partition changed."""


@functools.cache
def _whole_funcs() -> SimpleNamespace:
    PartitionArg = codegen.struct("WholeSpacePartitionArg", {"unused": int}, "whole")

    def partition_node_index(arg: PartitionArg, node: int) -> int:
        return node

    return SimpleNamespace(PartitionArg=PartitionArg,
                           partition_node_index=codegen.func(partition_node_index, "whole_space"))


class WholeSpacePartition(SpacePartition):
    """Every node of the space, numbered as in the space."""

    def __init__(self, space_topology: Any) -> None:
        from ..domain import _partition_of

        super().__init__(space_topology, _partition_of(space_topology.geometry)[1])
        self.funcs = _whole_funcs()

    def node_count(self) -> int:
        """All nodes."""
        return self.space_topology.node_count()

    def space_node_indices(self) -> Any:
        """``0, 1, ...``."""
        return wp.array(np.arange(self.node_count(), dtype=np.int32), dtype=int)

    @property
    def env_offsets(self) -> Any:
        """Node ranges of the environments: ``[0, n]`` for the single environment of the whole geometry.

        The environment's nodes are those some cell uses; a node no cell uses belongs to no environment and comes
        after the last one (the ``environmentless`` tail). Numbering follows the space's, so such nodes must already
        be the last ones.
        """
        table = self.space_topology.element_node_indices().numpy()
        used = np.zeros(self.node_count(), dtype=bool)
        used[table.reshape(-1)] = True
        n = int(used.sum())
        if not used[:n].all():
            raise NotImplementedError("env_offsets: nodes no cell uses are interleaved with the others; "
                                      "environment-first renumbering of a whole space is not available")
        return wp.array(np.array([0, n], dtype=np.int32), dtype=int)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WholeSpacePartition) and other.space_topology is self.space_topology

    def __hash__(self) -> int:
        return hash(("whole", id(self.space_topology)))


@functools.cache
def _node_funcs() -> SimpleNamespace:
    PartitionArg = codegen.struct("NodeSpacePartitionArg", {"space_to_partition": wp.array(dtype=int)}, "node")

    def partition_node_index(arg: PartitionArg, node: int) -> int:
        return arg.space_to_partition[node]

    return SimpleNamespace(PartitionArg=PartitionArg,
                           partition_node_index=codegen.func(partition_node_index, "node_space"))


class NodePartition(SpacePartition):
    """The nodes of a cell-based geometry partition's cells (owned first, then halo nodes)."""

    def __init__(self, space_topology: Any, geo_partition: GeometryPartition, with_halo: bool = True,
                 device: Any = None) -> None:
        super().__init__(space_topology, geo_partition)
        self.with_halo = with_halo
        self.funcs = _node_funcs()
        self._device = wp.get_device(device)
        self.rebuild()

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Number the nodes of the partition's cells."""
        topo = self.space_topology
        table = topo.element_node_indices().numpy()
        cells = self.geo_partition._cell_indices_np
        inside = np.zeros(table.shape[0], dtype=bool)
        inside[cells] = True
        nodes_in = np.unique(table[inside])
        nodes_out = np.unique(table[~inside]) if np.any(~inside) else np.zeros(0, dtype=table.dtype)
        shared = np.intersect1d(nodes_in, nodes_out)
        # a shared node belongs to the partition of the lowest-ranked cell using it (deterministic, disjoint)
        first_cell = np.full(topo.node_count(), np.iinfo(np.int64).max)
        np.minimum.at(first_cell, table.reshape(-1), np.repeat(np.arange(table.shape[0]), table.shape[1]))
        owned = nodes_in[inside[first_cell[nodes_in]]]
        # the nodes of the partition's cells always belong to it (shared ones owned by another partition after the
        # owned ones); the halo adds the nodes of the cells across the frontier sides
        shared_elsewhere = np.setdiff1d(nodes_in, owned)
        halo = np.zeros(0, dtype=nodes_in.dtype)
        if self.with_halo:
            halo_cells = getattr(self.geo_partition, "_halo_cells_np", np.zeros(0, dtype=np.int32))
            around = np.unique(table[halo_cells]) if len(halo_cells) else halo
            halo = np.setdiff1d(around[around >= 0], nodes_in)
        interior = np.setdiff1d(owned, shared)
        order = np.concatenate([interior, np.setdiff1d(owned, interior), shared_elsewhere, halo])
        mapping = np.full(topo.node_count(), NULL_NODE_INDEX, dtype=np.int64)
        mapping[order] = np.arange(len(order))
        self._node_indices_np = order.astype(np.int32)
        self._owned = len(owned)
        self._interior = len(interior)
        self._mapping = wp.array(mapping.astype(np.int32), dtype=int, device=self._device)
        self._args.clear()

    def node_count(self) -> int:
        """Owned plus halo nodes."""
        return len(self._node_indices_np)

    def owned_node_count(self) -> int:
        """Nodes owned by the partition."""
        return self._owned

    def interior_node_count(self) -> int:
        """Owned nodes used only by the partition's cells."""
        return self._interior

    def space_node_indices(self) -> Any:
        """Space node number of each partition node."""
        return wp.array(self._node_indices_np, dtype=int, device=self._device)

    def fill_partition_arg(self, arg: Any, device: Any) -> None:
        """The space-to-partition map."""
        arg.space_to_partition = self._mapping.to(device)


class EnvironmentFirstPartition(SpacePartition):
    """The nodes of a geometry partition's cells numbered environment by environment.

    Each environment's nodes (those its cells use) come in increasing space order, environment after environment;
    over the whole geometry, the nodes no cell uses follow as an environment-less tail. ``env_offsets`` gives the
    environments' ranges (``env_count + 1`` entries). With ``max_node_count >= 0`` the partition has exactly that
    many nodes: the list is cut there, or padded with unused capacity.
    """

    def __init__(self, space_topology: Any, geo_partition: GeometryPartition, max_node_count: int = -1,
                 device: Any = None) -> None:
        super().__init__(space_topology, geo_partition)
        self.funcs = _node_funcs()
        self._device = wp.get_device(device)
        self._max_node_count = int(max_node_count)
        self.rebuild()

    def rebuild(self, device: Any = None, temporary_store: Any = None) -> None:
        """Number the nodes of the partition's cells, environment by environment."""
        topo = self.space_topology
        geo = topo.geometry
        n_nodes = topo.node_count()
        table = topo.element_node_indices().numpy()
        whole = isinstance(self.geo_partition, WholeGeometryPartition)
        cells = np.arange(table.shape[0]) if whole else np.asarray(self.geo_partition._cell_indices_np)
        envs_of = getattr(geo, "cell_environments", None)
        cell_env = envs_of() if envs_of is not None else np.zeros(table.shape[0], dtype=np.int64)
        env_count = geo.environment_count() if hasattr(geo, "environment_count") else 1
        node_env = np.full(n_nodes, -1, dtype=np.int64)
        rows = table[cells]
        envs = np.broadcast_to(cell_env[cells][:, None], rows.shape)
        valid = rows >= 0
        node_env[rows[valid]] = envs[valid]
        groups = [np.nonzero(node_env == e)[0] for e in range(env_count)]
        offsets = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
        parts = groups + ([np.nonzero(node_env < 0)[0]] if whole else [])
        order = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        count = len(order)
        if self._max_node_count >= 0:
            order = order[:self._max_node_count]
            offsets = np.minimum(offsets, self._max_node_count)
            count = self._max_node_count
        mapping = np.full(n_nodes, NULL_NODE_INDEX, dtype=np.int64)
        mapping[order] = np.arange(len(order))
        self._count = count
        self._node_indices_np = np.concatenate([order, np.full(count - len(order), NULL_NODE_INDEX)]).astype(np.int32)
        self._env_offsets = wp.array(offsets.astype(np.int32), dtype=int, device=self._device)
        self._space_to_partition = wp.array(mapping.astype(np.int32), dtype=int, device=self._device)
        self._args.clear()

    def node_count(self) -> int:
        """Nodes of the partition (``max_node_count`` when given)."""
        return self._count

    def space_node_indices(self) -> Any:
        """Space node number of each partition node (``NULL_NODE_INDEX`` in unused capacity)."""
        return wp.array(self._node_indices_np, dtype=int, device=self._device)

    @property
    def env_offsets(self) -> Any:
        """Start of each environment's nodes, and the end of the last one."""
        return self._env_offsets

    def fill_partition_arg(self, arg: Any, device: Any) -> None:
        """The space-to-partition map."""
        arg.space_to_partition = self._space_to_partition.to(device)


def make_space_partition(space_topology: Any, geometry_partition: GeometryPartition | None = None,
                         with_halo: bool = True, max_node_count: int = -1, environment_first: bool = False, *,
                         device: Any = None, temporary_store: Any = None) -> SpacePartition:
    """The partition of a space's nodes that follows a geometry partition.

    Args:
        space_topology: the space's topology (a function space is accepted too).
        geometry_partition: the geometry partition (the whole geometry when ``None``).
        with_halo: include the nodes the partition's cells share with cells outside it.
        max_node_count: with ``environment_first``, the exact number of partition nodes (a cut or a capacity);
            otherwise unused.
        environment_first: number the nodes environment by environment (see :class:`EnvironmentFirstPartition`;
            over a geometry partition it needs ``with_halo=False``).
        device: device of the partition's arrays.
        temporary_store: unused (accepted for compatibility).

    """
    topo = space_topology
    if topo is None:
        raise TypeError("make_space_partition needs a space topology")
    topo = getattr(topo, "topology", topo)
    if environment_first:
        if geometry_partition is None:
            from ..domain import _partition_of

            geometry_partition = _partition_of(topo.geometry)[1]
        elif geometry_partition.geometry is not topo.geometry:
            raise ValueError("make_space_partition: the geometry partition is not of the space's geometry")
        if with_halo and not isinstance(geometry_partition, WholeGeometryPartition):
            raise ValueError("make_space_partition: environment_first partitions of a geometry partition do not "
                             "support with_halo=True (halo nodes would mix environments' ranges); pass "
                             "with_halo=False")
        return EnvironmentFirstPartition(topo, geometry_partition, max_node_count, device=device)
    if geometry_partition is None or isinstance(geometry_partition, WholeGeometryPartition):
        part = topo.__dict__.get("_whole_partition")
        if part is None:
            part = WholeSpacePartition(topo)
            topo.__dict__["_whole_partition"] = part
        return part
    if geometry_partition.geometry is not topo.geometry:
        raise ValueError("make_space_partition: the geometry partition is not of the space's geometry")
    return NodePartition(topo, geometry_partition, with_halo=with_halo, device=device)
