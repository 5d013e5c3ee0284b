"""Basis spaces: a topology (which global nodes) and a shape function (which local basis) on a geometry."""

from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from ..element import Element
from ..polynomial import Polynomial
from ..types import make_free_sample
from .shape import make_element_shape_function
from .shape.base import ElementBasis, ShapeFunction
from .topology import DiscontinuousSpaceTopology, SpaceTopology, TableSpaceTopology


class BasisSpace:
    """Base class of basis spaces: scalar basis functions attached to the nodes of a topology.

    Attributes:
        topology: the :class:`SpaceTopology`.
        geometry: the geometry.

    """

    def __init__(self, topology: SpaceTopology) -> None:
        self.topology = topology
        self.geometry = topology.geometry

    @property
    def name(self) -> str:
        """A name describing the basis (part of generated kernel names)."""
        raise NotImplementedError

    @property
    def ORDER(self) -> int:  # noqa: N802 - reference attribute name
        """Polynomial degree of the basis functions."""
        raise NotImplementedError

    def node_count(self) -> int:
        """Number of nodes."""
        return self.topology.node_count()

    def node_positions(self, out: Any = None, device: Any = None) -> Any:
        """World positions of the nodes (an array of vectors of the geometry's dimension)."""
        raise NotImplementedError


class ShapeBasisSpace(BasisSpace):
    """A basis made of one shape function per cell, glued by a topology.

    Args:
        topology: which global node each local node of a cell is.
        shape: the shape function of every cell.

    """

    def __init__(self, topology: SpaceTopology, shape: ShapeFunction) -> None:
        super().__init__(topology)
        self.shape = shape

    @property
    def name(self) -> str:
        """``<topology>``."""
        return self.topology.name

    @property
    def ORDER(self) -> int:  # noqa: N802
        """The shape function's degree."""
        return self.shape.ORDER

    @property
    def value(self) -> str:
        """Kind of basis values: ``scalar``, ``covariant`` or ``contravariant``."""
        return self.shape.value

    def node_positions(self, out: Any = None, device: Any = None) -> Any:
        """World positions of the nodes, evaluated by a kernel over every cell's nodes."""
        geo = self.geometry
        vec = wp.types.vector(geo.dimension, geo.scalar_type)
        n = self.node_count()
        if out is None:
            out = wp.zeros(n, dtype=vec, device=device)
        k = _node_positions_kernel(geo._funcs, self.topology.funcs, self.shape.funcs, geo.dimension,
                                   geo.scalar_type)
        dev = out.device
        wp.launch(k, dim=(geo.cell_count(), self.shape.NODES_PER_ELEMENT), device=dev,
                  inputs=[geo.cell_arg_value(dev), self.topology.topo_arg_value(dev), out])
        return out

    def node_triangulation(self) -> np.ndarray:
        """Triangles (2D cells) or tetrahedra (3D cells) of node indices covering the geometry, for plotting."""
        local = self.shape.element_node_triangulation()
        table = self.topology.element_node_indices().numpy()
        return table[:, local].reshape(-1, local.shape[1])

    def node_coords_in_element(self) -> Any:
        """Kernel function ``(node) -> reference coordinates`` of the shape function."""
        return self.shape.funcs.node_coords_in_element

    def node_quadrature_weight(self) -> Any:
        """Kernel function ``(node) -> nodal quadrature weight``."""
        return self.shape.funcs.node_quadrature_weight


_KERNELS: dict[tuple[Any, ...], Any] = {}


def _node_positions_kernel(geo_funcs: Any, topo_funcs: Any, shape_funcs: Any, dim: int, S: Any) -> Any:
    memo = (id(geo_funcs), id(topo_funcs), id(shape_funcs))
    k = _KERNELS.get(memo)
    if k is None:
        k = _KERNELS[memo] = _make_node_positions_kernel(geo_funcs, topo_funcs, shape_funcs, dim, S)
    return k


def _make_node_positions_kernel(geo_funcs: Any, topo_funcs: Any, shape_funcs: Any, dim: int, S: Any) -> Any:
    vec = wp.types.vector(dim, S)
    cell_position = geo_funcs.cell_position
    node_index = topo_funcs.element_node_index
    node_coords = shape_funcs.node_coords_in_element
    CellArg = geo_funcs.CellArg
    TopoArg = topo_funcs.TopologyArg

    def node_positions(cell_arg: CellArg, topo_arg: TopoArg, out: wp.array(dtype=vec)):
        c, k = wp.tid()
        s = make_free_sample(c, node_coords(k))
        out[node_index(cell_arg, topo_arg, c, k)] = cell_position(cell_arg, s)

    tag = codegen.digest(geo_funcs.CellArg.key, topo_funcs.TopologyArg.key, shape_funcs.key)
    return codegen.kernel(node_positions, key=f"node_positions_{tag}")


def _cell_vertex_table(geo: Any) -> np.ndarray:
    table = getattr(geo, "cell_vertex_table", None)
    if table is None:
        raise TypeError(f"{geo.name} does not describe its cells by vertices; polynomial spaces cannot be built on it")
    return table()


def make_polynomial_basis_space(geo: Any, degree: int = 1, element_basis: ElementBasis | None = None,
                                discontinuous: bool = False, family: Polynomial | None = None) -> ShapeBasisSpace:
    """A piecewise-polynomial basis on a geometry.

    Args:
        geo: the geometry.
        degree: polynomial degree (0 gives one constant per cell, always discontinuous).
        element_basis: kind of basis (Lagrange by default; serendipity and non-conforming polynomials on squares
            and cubes).
        discontinuous: whether nodes are owned by single cells.
        family: point family of tensor-product Lagrange nodes (Gauss-Lobatto-Legendre by default).

    """
    shape = make_element_shape_function(geo.reference_cell(), degree, element_basis, family, geo.scalar_type)
    if degree == 0 or element_basis == ElementBasis.NONCONFORMING_POLYNOMIAL:
        discontinuous = True
    if not discontinuous and not shape.is_continuous_capable():
        # no node on the cell boundary (open point families): nothing to share, each cell owns its nodes
        discontinuous = True
    topo: SpaceTopology
    if discontinuous:
        topo = DiscontinuousSpaceTopology(geo, shape)
    else:
        topo = _continuous_topology(geo, shape)
    return ShapeBasisSpace(topo, shape)


def _continuous_topology(geo: Any, shape: ShapeFunction) -> TableSpaceTopology:
    cache = geo.__dict__.setdefault("_topology_cache", {})
    topo = cache.get(shape.name)
    if topo is None:
        replicas = getattr(geo, "environment_replicas", None)
        if replicas is not None and replicas()[0] > 1:
            n, table = replicas()
            topo = TableSpaceTopology(geo, shape, table, geo.vertex_count() // n, replicas=n)
        else:
            topo = TableSpaceTopology(geo, shape, _cell_vertex_table(geo), geo.vertex_count())
        cache[shape.name] = topo
    return topo


def make_element_based_space_topology(geo: Any, shape: ShapeFunction, discontinuous: bool = False) -> SpaceTopology:
    """The topology of a space made of ``shape`` on every cell of ``geo``.

    Args:
        geo: the geometry.
        shape: the shape function.
        discontinuous: whether nodes are owned by single cells.

    """
    if discontinuous:
        return DiscontinuousSpaceTopology(geo, shape)
    return _continuous_topology(geo, shape)


__all__ = ["BasisSpace", "Element", "ShapeBasisSpace", "make_element_based_space_topology",
           "make_polynomial_basis_space"]
