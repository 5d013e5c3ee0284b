"""Space topologies: which global node each element-local node of a function space is.

A continuous space numbers the nodes it shares between cells once: vertex nodes first (one per geometry vertex),
then edge nodes, face nodes and cell-interior nodes. The numbering is built once, on the host, into an
``(cell_count, nodes_per_element)`` table (:class:`TableSpaceTopology`); kernels read it. A node on an edge or face
shared by several cells is identified by its weights over the entity's vertices taken in increasing global vertex
order, which every cell computes alike. A discontinuous space numbers ``cell * nodes_per_element + local``.
"""

from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from .shape.base import ELEMENT_EDGES, ELEMENT_FACES, NodeEntity, ShapeFunction, _barycentric


class SpaceTopology:
    """Base class: the element-to-node map of a function space on a geometry.

    Attributes:
        geometry: the geometry.
        MAX_NODES_PER_ELEMENT: the most nodes a cell has.

    """

    def __init__(self, geometry: Any, max_nodes_per_element: int) -> None:
        self.geometry = geometry
        self.MAX_NODES_PER_ELEMENT = int(max_nodes_per_element)
        self._args: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """A name describing the topology's kind (part of generated kernel names)."""
        raise NotImplementedError

    @property
    def dimension(self) -> int:
        """The cell dimension of the geometry."""
        return self.geometry.cell_dimension

    def node_count(self) -> int:
        """Number of nodes."""
        raise NotImplementedError

    @property
    def TopologyArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the topology's kernel argument."""
        return self.funcs.TopologyArg

    def topo_arg_value(self, device: Any = None) -> Any:
        """The topology's kernel argument on ``device``."""
        key = str(wp.get_device(device))
        v = self._args.get(key)
        if v is None:
            v = self.TopologyArg()
            self.fill_topo_arg(v, wp.get_device(device))
            self._args[key] = v
        return v

    def fill_topo_arg(self, arg: Any, device: Any) -> None:
        """Fill the topology's kernel argument."""
        raise NotImplementedError

    @property
    def element_node_count(self) -> Any:
        """Kernel function ``(cell_arg, topo_arg, cell) -> node count``."""
        return self.funcs.element_node_count

    @property
    def element_node_index(self) -> Any:
        """Kernel function ``(cell_arg, topo_arg, cell, local node) -> node``."""
        return self.funcs.element_node_index

    def element_node_indices(self, device: Any = None) -> Any:
        """The ``(cell_count, MAX_NODES_PER_ELEMENT)`` array of node indices."""
        raise NotImplementedError

    def is_derived_from(self, other: "SpaceTopology") -> bool:
        """Whether this topology is ``other``."""
        return other is self


class TableSpaceTopology(SpaceTopology):
    """A continuous topology stored as a node table built from the geometry's cell vertices."""

    def __init__(self, geometry: Any, shape: ShapeFunction, cell_vertices: np.ndarray, vertex_count: int,
                 replicas: int = 1) -> None:
        super().__init__(geometry, shape.NODES_PER_ELEMENT)
        self.shape = shape
        self.replicas = replicas
        self.funcs = _table_funcs(signed=shape.value != "scalar")
        self._number(cell_vertices, vertex_count)

    def _number(self, cell_vertices: np.ndarray, vertex_count: int) -> None:
        cv = np.asarray(cell_vertices, dtype=np.int64)
        table, count = build_node_table(cv, self.shape, vertex_count)
        # ``replicas`` copies of a geometry (environments): ``cell_vertices`` and ``vertex_count`` describe one, and
        # each copy's nodes follow the previous copy's, so that environments own disjoint node ranges
        if self.replicas > 1:
            table = np.concatenate([table + e * count for e in range(self.replicas)], axis=0)
            cv = np.concatenate([cv + e * vertex_count for e in range(self.replicas)])
            count *= self.replicas
        self._table_np = table.astype(np.int32)
        self._node_count = int(count)
        self._tables: dict[str, Any] = {}
        self._args.clear()
        self.__dict__.pop("_whole_partition", None)
        self._signs_np = None
        if self.shape.value != "scalar":
            self._signs_np = node_signs(cv, self.shape).astype(np.int32)

    def rebuild(self) -> None:
        """Number the nodes again from the geometry's current cells (after the geometry itself was rebuilt)."""
        if self.replicas > 1:
            raise NotImplementedError(f"{self.name}: rebuilding a topology of several environments is not supported")
        self._number(self.geometry.cell_vertex_table(), self.geometry.vertex_count())

    @property
    def name(self) -> str:
        """``<geometry>_<shape>``."""
        return f"{self.geometry.name}_{self.shape.name}"

    def node_count(self) -> int:
        """Number of distinct nodes."""
        return self._node_count

    def element_node_indices(self, device: Any = None) -> Any:
        """The node table on ``device``."""
        key = str(wp.get_device(device))
        t = self._tables.get(key)
        if t is None:
            t = wp.array(self._table_np, dtype=int, device=device)
            self._tables[key] = t
        return t

    def element_node_signs(self, device: Any = None) -> Any:
        """The ``(cell_count, nodes_per_element)`` orientation signs of vector-valued bases (``None`` for scalar ones)."""
        if self._signs_np is None:
            return None
        key = "signs_" + str(wp.get_device(device))
        t = self._tables.get(key)
        if t is None:
            t = self._tables[key] = wp.array(self._signs_np, dtype=int, device=device)
        return t

    def fill_topo_arg(self, arg: Any, device: Any) -> None:
        """The node table (and the orientation signs of vector-valued bases)."""
        arg.element_nodes = self.element_node_indices(device)
        if self._signs_np is not None:
            arg.element_signs = self.element_node_signs(device)


class DiscontinuousSpaceTopology(SpaceTopology):
    """Nodes owned by a single cell: node ``cell * nodes_per_element + local``."""

    def __init__(self, geometry: Any, shape: ShapeFunction) -> None:
        super().__init__(geometry, shape.NODES_PER_ELEMENT)
        self.shape = shape
        self.funcs = _discontinuous_funcs(shape.NODES_PER_ELEMENT)

    @property
    def name(self) -> str:
        """``<geometry>_<shape>_d``."""
        return f"{self.geometry.name}_{self.shape.name}_d"

    def node_count(self) -> int:
        """``cell_count * nodes_per_element``."""
        return self.geometry.cell_count() * self.MAX_NODES_PER_ELEMENT

    def fill_topo_arg(self, arg: Any, device: Any) -> None:
        """Nothing to fill."""

    def rebuild(self) -> None:
        """Nothing to renumber: node indices follow the geometry's current cell count."""

    def element_node_indices(self, device: Any = None) -> Any:
        """``cell * nodes_per_element + local`` as an array."""
        n = self.MAX_NODES_PER_ELEMENT
        c = self.geometry.cell_count()
        return wp.array(np.arange(c * n, dtype=np.int32).reshape(c, n), dtype=int, device=device)


_TABLE_FUNCS: dict[bool, Any] = {}


def _table_funcs(signed: bool = False) -> Any:
    """Kernel functions of a node table; ``signed`` adds the per-node orientation signs of vector-valued bases."""
    f = _TABLE_FUNCS.get(signed)
    if f is None:
        from types import SimpleNamespace

        fields = {"element_nodes": wp.array2d(dtype=int)}
        if signed:
            fields["element_signs"] = wp.array2d(dtype=int)
        TopologyArg = codegen.struct("SignedTableTopologyArg" if signed else "TableTopologyArg", fields,
                                     "signed" if signed else "table")
        SIGNED = signed

        def table_element_node_count(cell_arg: Any, topo_arg: TopologyArg, element_index: int) -> int:
            return topo_arg.element_nodes.shape[1]

        def table_element_node_index(cell_arg: Any, topo_arg: TopologyArg, element_index: int, node: int) -> int:
            return topo_arg.element_nodes[element_index, node]

        def table_element_node_sign(cell_arg: Any, topo_arg: TopologyArg, element_index: int, node: int) -> int:
            if wp.static(SIGNED):
                return topo_arg.element_signs[element_index, node]
            return 1

        tag = ("table", signed)
        f = _TABLE_FUNCS[signed] = SimpleNamespace(
            TopologyArg=TopologyArg, element_node_count=codegen.func(table_element_node_count, *tag),
            element_node_index=codegen.func(table_element_node_index, *tag),
            element_node_sign=codegen.func(table_element_node_sign, *tag))
    return f


def node_signs(cell_vertices: np.ndarray, shape: ShapeFunction) -> np.ndarray:
    """Per cell and local node of a vector-valued basis: ``+1`` or ``-1`` orienting its edge or face globally.

    An edge is oriented from its lower to its higher global vertex index; a face's vertex cycle is read starting at
    its lowest global vertex, and oriented positively when the next vertex has a lower index than the previous one.
    Cells sharing an entity see its vertices in the same or the reverse order, so the product of this orientation
    and the basis function's own orientation against the local vertex order (``shape.node_orientations()``) gives
    the same world direction from every cell.
    """
    ents = shape.node_entity_vertices()
    orient = shape.node_orientations()
    out = np.empty((cell_vertices.shape[0], len(ents)), dtype=np.int64)
    for k, ent in enumerate(ents):
        g = cell_vertices[:, list(ent)]
        if len(ent) == 2:
            s = np.where(g[:, 0] < g[:, 1], 1, -1)
        else:
            lo = np.argmin(g, axis=1)
            rows = np.arange(len(g))
            nxt = g[rows, (lo + 1) % len(ent)]
            prv = g[rows, (lo - 1) % len(ent)]
            s = np.where(nxt < prv, 1, -1)
        out[:, k] = s * orient[k]
    return out


_DISC_FUNCS: dict[int, Any] = {}


def _discontinuous_funcs(npe: int) -> Any:
    f = _DISC_FUNCS.get(npe)
    if f is None:
        from types import SimpleNamespace

        TopologyArg = codegen.struct("DiscontinuousTopologyArg", {"unused": int}, "disc")
        NPE = npe

        def element_node_count(cell_arg: Any, topo_arg: TopologyArg, element_index: int) -> int:
            return NPE

        def element_node_index(cell_arg: Any, topo_arg: TopologyArg, element_index: int, node: int) -> int:
            return element_index * NPE + node

        def element_node_sign(cell_arg: Any, topo_arg: TopologyArg, element_index: int, node: int) -> int:
            return 1

        f = SimpleNamespace(TopologyArg=TopologyArg,
                            element_node_count=codegen.func(element_node_count, "disc", npe),
                            element_node_index=codegen.func(element_node_index, "disc", npe),
                            element_node_sign=codegen.func(element_node_sign, "disc", npe))
        _DISC_FUNCS[npe] = f
    return f


def build_node_table(cell_vertices: np.ndarray, shape: ShapeFunction, vertex_count: int) -> tuple[np.ndarray, int]:
    """Number the nodes of a continuous space (see the module documentation).

    Args:
        cell_vertices: ``(cell_count, vertices_per_cell)`` vertex indices in the reference element's order.
        shape: the shape function (its node coordinates and entities).
        vertex_count: number of geometry vertices.

    Returns:
        ``(table, node_count)``: ``(cell_count, nodes_per_element)`` int64 node indices and the number of nodes.

    """
    element = shape.element
    entities = shape.node_entities()
    coords = shape.node_coords()
    weights = _barycentric(element, coords)  # (npe, vertices_per_cell)
    n_cells = cell_vertices.shape[0]
    npe = shape.NODES_PER_ELEMENT
    table = np.full((n_cells, npe), -1, dtype=np.int64)
    offset = 0

    # vertices
    by_entity: dict[tuple[int, int], list[int]] = {}
    for n, (kind, idx) in enumerate(entities):
        by_entity.setdefault((int(kind), idx), []).append(n)
    vertex_nodes = [(idx, ns[0]) for (kind, idx), ns in by_entity.items() if kind == NodeEntity.VERTEX]
    has_vertices = bool(vertex_nodes)
    for v, n in vertex_nodes:
        table[:, n] = cell_vertices[:, v]
    if has_vertices:
        offset = int(vertex_count)

    # edges, then faces: shared entities numbered through a unique of their sorted vertex ids
    for kind, entity_list in ((NodeEntity.EDGE, ELEMENT_EDGES[element]), (NodeEntity.FACE, ELEMENT_FACES[element])):
        per = [by_entity.get((int(kind), e), []) for e in range(len(entity_list))]
        m = max((len(p) for p in per), default=0)
        if m == 0:
            continue
        keys = np.stack([np.sort(cell_vertices[:, list(ent)], axis=1) for ent in entity_list], axis=1)  # C, E, nv
        nv = keys.shape[2]
        flat = keys.reshape(-1, nv)
        _, ids = np.unique(flat, axis=0, return_inverse=True)
        ids = ids.reshape(n_cells, len(entity_list))
        count = int(ids.max()) + 1 if ids.size else 0
        for e, ent in enumerate(entity_list):
            nodes = per[e]
            if not nodes:
                continue
            ent = list(ent)
            w = weights[np.array(nodes)][:, ent]  # (m, nv) weights over the entity's vertices
            order = np.argsort(cell_vertices[:, ent], axis=1, kind="stable")  # C, nv: increasing global id
            k = np.take_along_axis(np.broadcast_to(w[None], (n_cells, len(nodes), nv)),
                                   np.broadcast_to(order[:, None, :], (n_cells, len(nodes), nv)), axis=2)
            q = np.rint(k * 4096.0).astype(np.int64)
            scalar = np.zeros((n_cells, len(nodes)), dtype=np.int64)
            for j in range(nv):
                scalar = scalar * 4097 + q[:, :, j]
            rank = np.argsort(np.argsort(-scalar, axis=1, kind="stable"), axis=1, kind="stable")
            for a, n in enumerate(nodes):
                table[:, n] = offset + ids[:, e] * m + rank[:, a]
        offset += count * m

    interior = by_entity.get((int(NodeEntity.INTERIOR), 0), [])
    if interior:
        m = len(interior)
        for a, n in enumerate(interior):
            table[:, n] = offset + np.arange(n_cells) * m + a
        offset += n_cells * m
    if np.any(table < 0):  # pragma: no cover - every node lies on some entity
        raise RuntimeError(f"node table of {shape.name}: unnumbered nodes")
    return table, offset
