"""Integration domains: the cells of a geometry, its sides, its boundary sides, or a subset of those.

A domain tells kernels which elements to visit (``element_count()`` elements, the ``i``-th being
``element_index(index_arg, i)`` in the geometry) and how to evaluate positions, normals and measures on them (the
geometry's cell or side functions, under ``element_*`` names).
"""

from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .element import ELEMENT_DIMENSION, Element
from .geometry.partition import GeometryPartition, WholeGeometryPartition
from .types import ElementKind


def _partition_of(geometry: Any) -> tuple[Any, GeometryPartition]:
    from .geometry.geometry import Geometry

    if isinstance(geometry, GeometryPartition):
        return geometry.geometry, geometry
    if isinstance(geometry, Geometry):
        part = geometry.__dict__.get("_whole_partition")
        if part is None:
            part = WholeGeometryPartition(geometry)
            geometry.__dict__["_whole_partition"] = part
        return geometry, part
    raise TypeError(f"a domain needs a geometry or a geometry partition, got {type(geometry).__name__}")


class GeometryDomain:
    """Base class of domains.

    Attributes:
        geometry: the geometry.
        geometry_partition: the partition whose elements the domain covers.

    """

    element_kind: ElementKind

    def __init__(self, geometry: Any) -> None:
        self.geometry, self.geometry_partition = _partition_of(geometry)
        self._index_args: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """A name describing the domain's kind (part of generated kernel names)."""
        return f"{self.geometry_partition.name}_{type(self).__name__}"

    @property
    def dimension(self) -> int:
        """Dimension of the elements."""
        return ELEMENT_DIMENSION[self.reference_element()]

    def reference_element(self) -> Element:
        """Reference shape of the elements."""
        if self.element_kind == ElementKind.CELL:
            return self.geometry.reference_cell()
        return self.geometry.reference_side()

    def element_count(self) -> int:
        """Number of elements."""
        raise NotImplementedError

    def geometry_element_count(self) -> int:
        """Number of elements of this kind in the whole geometry."""
        if self.element_kind == ElementKind.CELL:
            return self.geometry.cell_count()
        return self.geometry.side_count()

    @property
    def ElementArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the element functions' first argument (the geometry's cell or side argument)."""
        return self.geometry.CellArg if self.element_kind == ElementKind.CELL else self.geometry.SideArg

    def element_arg_value(self, device: Any = None) -> Any:
        """The element argument on ``device``."""
        if self.element_kind == ElementKind.CELL:
            return self.geometry.cell_arg_value(device)
        return self.geometry.side_arg_value(device)

    @property
    def ElementIndexArg(self) -> Any:  # noqa: N802
        """Struct type of ``element_index``'s first argument."""
        return self.geometry_partition.CellArg

    def element_index_arg_value(self, device: Any = None) -> Any:
        """The element index argument on ``device``."""
        return self.geometry_partition.cell_arg_value(device)

    @property
    def partitioned(self) -> bool:
        """Whether the domain covers a geometry partition (not the whole geometry).

        Integrands then receive the partition's argument with the element argument (:attr:`IntegrandArg`), for
        ``element_partition_index`` and ``partition_lookup``.
        """
        return not isinstance(self.geometry_partition, WholeGeometryPartition)

    @property
    def IntegrandArg(self) -> Any:  # noqa: N802
        """Struct type a ``fem.Domain`` integrand parameter receives.

        The element argument, with the partition's argument on partitioned domains (``{elt_arg, part_arg}``).
        """
        if not self.partitioned:
            return self.ElementArg
        return _packed_arg(self.ElementArg, self.geometry_partition.CellArg)

    def integrand_arg_value(self, device: Any = None) -> Any:
        """The :attr:`IntegrandArg` value on ``device``."""
        if not self.partitioned:
            return self.element_arg_value(device)
        v = self.IntegrandArg()
        v.elt_arg = self.element_arg_value(device)
        v.part_arg = self.geometry_partition.cell_arg_value(device)
        return v

    @property
    def funcs(self) -> SimpleNamespace:
        """The domain's kernel functions (``element_index``, ``element_position``, ...)."""
        f = self.__dict__.get("_funcs")
        if f is None:
            f = self._make_funcs()
            self.__dict__["_funcs"] = f
        return f

    def _make_funcs(self) -> SimpleNamespace:
        g = self.geometry._funcs
        if self.element_kind == ElementKind.CELL:
            return SimpleNamespace(
                element_position=g.cell_position, element_deformation_gradient=g.cell_deformation_gradient,
                element_inverse_deformation_gradient=g.cell_inverse_deformation_gradient,
                element_normal=g.cell_normal, element_measure=g.cell_measure,
                element_measure_ratio=_unit_ratio(g), element_lookup=g.cell_lookup,
                element_coordinates=g.cell_coordinates, element_closest_point=g.cell_closest_point,
                element_index=self._index_func())
        return SimpleNamespace(
            element_position=g.side_position, element_deformation_gradient=g.side_deformation_gradient,
            element_normal=g.side_normal, element_measure=g.side_measure,
            element_measure_ratio=g.side_measure_ratio, element_index=self._index_func(),
            element_lookup=None, element_coordinates=None, element_closest_point=None)

    def _index_func(self) -> Any:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name.startswith("element_") and name not in ("element_kind",):
            return getattr(self.funcs, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def supports_lookup(self, device: Any = None) -> bool:
        """Whether ``lookup`` works on this domain's geometry."""
        return self.geometry.supports_cell_lookup(device)

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and other.geometry_partition == self.geometry_partition  # type: ignore[attr-defined]
                and self._identity() == other._identity())  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), id(self.geometry_partition), self._identity()))

    def _identity(self) -> Any:
        return None


_PACKED: dict[tuple[Any, Any], Any] = {}


def _packed_arg(element_arg: Any, partition_arg: Any) -> Any:
    key = (element_arg.key, partition_arg.key)
    t = _PACKED.get(key)
    if t is None:
        t = _PACKED[key] = codegen.struct("PartitionedDomainArg", {"elt_arg": element_arg, "part_arg": partition_arg},
                                          *key)
    return t


_RATIO: dict[int, Any] = {}


def _unit_ratio(g: SimpleNamespace) -> Any:
    f = _RATIO.get(id(g))
    if f is None:
        CellArg = g.CellArg

        def cell_measure_ratio(args: CellArg, s: Any):
            return type(s.qp_weight)(1.0)

        f = _RATIO[id(g)] = codegen.func(cell_measure_ratio, CellArg.key)
    return f


class Cells(GeometryDomain):
    """The cells of a geometry (or of a geometry partition)."""

    element_kind = ElementKind.CELL

    def element_count(self) -> int:
        """Cells of the partition."""
        return self.geometry_partition.cell_count()

    def _index_func(self) -> Any:
        return self.geometry_partition.funcs.cell_index


class Sides(GeometryDomain):
    """All sides of a geometry (or those touching a partition's cells)."""

    element_kind = ElementKind.SIDE

    def element_count(self) -> int:
        """Sides of the partition."""
        return self.geometry_partition.side_count()

    def _index_func(self) -> Any:
        return self.geometry_partition.funcs.side_index


class BoundarySides(Sides):
    """The sides of a geometry that have a single neighbouring cell."""

    def element_count(self) -> int:
        """Boundary sides of the partition."""
        return self.geometry_partition.boundary_side_count()

    def _index_func(self) -> Any:
        return self.geometry_partition.funcs.boundary_side_index


class FrontierSides(Sides):
    """The sides between a partition's cells and cells outside it."""

    def element_count(self) -> int:
        """Frontier sides of the partition."""
        return self.geometry_partition.frontier_side_count()

    def _index_func(self) -> Any:
        return self.geometry_partition.funcs.frontier_side_index


class Subdomain(GeometryDomain):
    """A subset of another domain's elements, given by a mask or a list of indices into that domain.

    Args:
        domain: the parent domain.
        element_mask: an int array with one entry per parent element (non-zero: included).
        element_indices: an int array of parent element numbers (``0 <= i < domain.element_count()``).
        temporary_store: unused (accepted for compatibility).

    """

    def __init__(self, domain: GeometryDomain, element_mask: Any = None, element_indices: Any = None,
                 temporary_store: Any = None) -> None:
        if not isinstance(domain, GeometryDomain):
            raise TypeError(f"Subdomain: domain must be a GeometryDomain, got {type(domain).__name__}")
        if (element_mask is None) == (element_indices is None):
            raise ValueError("Subdomain: give exactly one of element_mask and element_indices")
        self.parent = domain
        self.geometry = domain.geometry
        self.geometry_partition = domain.geometry_partition
        self.element_kind = domain.element_kind
        self._index_args = {}
        if element_mask is not None:
            mask = element_mask.numpy()
            if mask.shape[0] != domain.element_count():
                raise ValueError(f"Subdomain: element_mask has {mask.shape[0]} entries, the domain has "
                                 f"{domain.element_count()} elements")
            idx = np.nonzero(mask)[0].astype(np.int32)
            device = element_mask.device
        else:
            idx = element_indices.numpy().astype(np.int32)
            device = element_indices.device
        self.element_indices = wp.array(idx, dtype=int, device=device)

    @property
    def name(self) -> str:
        """``<parent>_Subdomain``."""
        return f"{self.parent.name}_Subdomain"

    def element_count(self) -> int:
        """Number of listed elements."""
        return int(self.element_indices.shape[0])

    @property
    def ElementIndexArg(self) -> Any:  # noqa: N802
        """The parent's index argument and the element list."""
        return _subdomain_funcs(self.parent).IndexArg

    def element_index_arg_value(self, device: Any = None) -> Any:
        """The index argument on ``device``."""
        key = str(wp.get_device(device))
        v = self._index_args.get(key)
        if v is None:
            v = self.ElementIndexArg()
            v.parent = self.parent.element_index_arg_value(device)
            v.indices = self.element_indices.to(device)
            self._index_args[key] = v
        return v

    def _index_func(self) -> Any:
        return _subdomain_funcs(self.parent).element_index

    def _identity(self) -> Any:
        return id(self)


_SUB: dict[int, SimpleNamespace] = {}


def _subdomain_funcs(parent: GeometryDomain) -> SimpleNamespace:
    parent_index = parent.funcs.element_index
    f = _SUB.get(id(parent_index))
    if f is None:
        IndexArg = codegen.struct("SubdomainIndexArg", {"parent": parent.ElementIndexArg,
                                                        "indices": wp.array(dtype=int)}, parent.ElementIndexArg.key)

        def element_index(arg: IndexArg, i: int) -> int:
            return parent_index(arg.parent, arg.indices[i])

        f = SimpleNamespace(IndexArg=IndexArg, element_index=codegen.func(element_index, IndexArg.key))
        _SUB[id(parent_index)] = f
    return f
