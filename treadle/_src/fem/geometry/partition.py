"""Geometry partitions: the subset of a geometry's cells (and their sides) that one process or pass works on.

A partition maps its own cell, side, boundary-side and frontier-side numbers to the geometry's
(``cell_index(arg, i)``...). :class:`WholeGeometryPartition` is the identity. Cell-based partitions list their
cells; their sides are the sides touching those cells, their boundary sides the geometry boundary sides among
them, and their frontier sides the sides between a partition cell and a cell outside it.
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from .. import codegen


class GeometryPartition:
    """Base class of geometry partitions.

    Attributes:
        geometry: the partitioned geometry.

    """

    def __init__(self, geometry: Any) -> None:
        self.geometry = geometry
        self._args: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """A name describing the kind of partition."""
        return f"{self.geometry.name}_{type(self).__name__}"

    def cell_count(self) -> int:
        """Cells in the partition."""
        raise NotImplementedError

    def side_count(self) -> int:
        """Sides touching the partition's cells."""
        raise NotImplementedError

    def boundary_side_count(self) -> int:
        """Geometry boundary sides touching the partition's cells."""
        raise NotImplementedError

    def frontier_side_count(self) -> int:
        """Sides between a partition cell and a cell outside the partition."""
        raise NotImplementedError

    @property
    def CellArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the partition's kernel argument."""
        return self.funcs.CellArg

    def cell_arg_value(self, device: Any = None) -> Any:
        """The partition's kernel argument on ``device``."""
        key = str(wp.get_device(device))
        v = self._args.get(key)
        if v is None:
            v = self.CellArg()
            self.fill_cell_arg(v, wp.get_device(device))
            self._args[key] = v
        return v

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """Fill the partition's kernel argument."""
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name in ("cell_index", "partition_cell_index", "side_index", "boundary_side_index",
                    "frontier_side_index"):
            funcs = self.__dict__.get("funcs")
            if funcs is not None:
                return getattr(funcs, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class WholeGeometryPartition(GeometryPartition):
    """The whole geometry: every cell and side, numbered as in the geometry."""

    def __init__(self, geometry: Any) -> None:
        super().__init__(geometry)
        self.funcs = _whole_funcs(geometry._funcs)

    def cell_count(self) -> int:
        """All cells."""
        return self.geometry.cell_count()

    def side_count(self) -> int:
        """All sides."""
        return self.geometry.side_count()

    def boundary_side_count(self) -> int:
        """All boundary sides."""
        return self.geometry.boundary_side_count()

    def frontier_side_count(self) -> int:
        """None."""
        return 0

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """The geometry's boundary side enumeration."""
        arg.side_index_arg = self.geometry.side_index_arg_value(device)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WholeGeometryPartition) and other.geometry is self.geometry

    def __hash__(self) -> int:
        return hash(("whole", id(self.geometry)))


_WHOLE: dict[int, SimpleNamespace] = {}


def _whole_funcs(geo_funcs: SimpleNamespace) -> SimpleNamespace:
    f = _WHOLE.get(id(geo_funcs))
    if f is not None:
        return f
    CellArg = codegen.struct("WholePartitionArg", {"side_index_arg": geo_funcs.SideIndexArg}, geo_funcs.CellArg.key)
    geo_boundary = geo_funcs.boundary_side_index
    key = ("whole", geo_funcs.CellArg.key)

    def cell_index(arg: CellArg, i: int) -> int:
        return i

    def partition_cell_index(arg: CellArg, cell: int) -> int:
        return cell

    def side_index(arg: CellArg, i: int) -> int:
        return i

    def boundary_side_index(arg: CellArg, i: int) -> int:
        return geo_boundary(arg.side_index_arg, i)

    def frontier_side_index(arg: CellArg, i: int) -> int:
        return -1

    f = SimpleNamespace(CellArg=CellArg, **{fn.__name__: codegen.func(fn, *key) for fn in (
        cell_index, partition_cell_index, side_index, boundary_side_index, frontier_side_index)})
    _WHOLE[id(geo_funcs)] = f
    return f


@functools.cache
def _cell_based_funcs() -> SimpleNamespace:
    CellArg = codegen.struct("CellBasedPartitionArg", {
        "cell_indices": wp.array(dtype=int), "partition_cell_indices": wp.array(dtype=int),
        "side_indices": wp.array(dtype=int), "boundary_side_indices": wp.array(dtype=int),
        "frontier_side_indices": wp.array(dtype=int)}, "cellbased")
    key = ("cellbased",)

    def cell_index(arg: CellArg, i: int) -> int:
        return arg.cell_indices[i]

    def cell_count(arg: CellArg) -> int:
        return arg.cell_indices.shape[0]

    def partition_cell_index(arg: CellArg, cell: int) -> int:
        return arg.partition_cell_indices[cell]

    def side_index(arg: CellArg, i: int) -> int:
        return arg.side_indices[i]

    def boundary_side_index(arg: CellArg, i: int) -> int:
        return arg.boundary_side_indices[i]

    def frontier_side_index(arg: CellArg, i: int) -> int:
        return arg.frontier_side_indices[i]

    return SimpleNamespace(CellArg=CellArg, **{fn.__name__: codegen.func(fn, *key) for fn in (
        cell_index, cell_count, partition_cell_index, side_index, boundary_side_index, frontier_side_index)})


class CellBasedGeometryPartition(GeometryPartition):
    """A partition given by a list of cells (see the module documentation for its sides)."""

    def __init__(self, geometry: Any, device: Any = None) -> None:
        super().__init__(geometry)
        self.funcs = _cell_based_funcs()
        self._device = wp.get_device(device)
        self._cell_indices_np = np.zeros(0, dtype=np.int32)

    def _set_cells(self, cells: np.ndarray) -> None:
        geo = self.geometry
        cells = np.unique(np.asarray(cells, dtype=np.int64))
        n_cells = geo.cell_count()
        part = np.full(n_cells, -1, dtype=np.int64)
        part[cells] = np.arange(len(cells))
        inner, outer = side_cells(geo)
        in_part = part[inner] >= 0
        out_part = part[outer] >= 0
        sides = np.nonzero(in_part | out_part)[0]
        boundary = np.nonzero(inner == outer)[0]
        boundary = boundary[in_part[boundary]]
        frontier = np.nonzero(in_part != out_part)[0]
        dev = self._device
        self._cell_indices_np = cells.astype(np.int32)
        # cells outside the partition across its frontier sides (their nodes are the spaces' halo)
        across = np.concatenate([inner[frontier], outer[frontier]])
        self._halo_cells_np = np.unique(across[part[across] < 0]).astype(np.int32)
        self.cell_indices = wp.array(cells.astype(np.int32), dtype=int, device=dev)
        self.partition_cell_indices = wp.array(part.astype(np.int32), dtype=int, device=dev)
        self.side_indices = wp.array(sides.astype(np.int32), dtype=int, device=dev)
        self.boundary_side_indices = wp.array(boundary.astype(np.int32), dtype=int, device=dev)
        self.frontier_side_indices = wp.array(frontier.astype(np.int32), dtype=int, device=dev)
        self._args.clear()

    def cell_count(self) -> int:
        """Cells listed."""
        return int(self.cell_indices.shape[0])

    def side_count(self) -> int:
        """Sides touching them."""
        return int(self.side_indices.shape[0])

    def boundary_side_count(self) -> int:
        """Boundary sides among them."""
        return int(self.boundary_side_indices.shape[0])

    def frontier_side_count(self) -> int:
        """Sides with one cell in the partition and one outside."""
        return int(self.frontier_side_indices.shape[0])

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """The index arrays."""
        arg.cell_indices = self.cell_indices.to(device)
        arg.partition_cell_indices = self.partition_cell_indices.to(device)
        arg.side_indices = self.side_indices.to(device)
        arg.boundary_side_indices = self.boundary_side_indices.to(device)
        arg.frontier_side_indices = self.frontier_side_indices.to(device)


class LinearGeometryPartition(CellBasedGeometryPartition):
    """The ``partition_rank``-th of ``partition_count`` contiguous ranges of cells.

    Args:
        geometry: the geometry.
        partition_rank: which range.
        partition_count: how many ranges.
        device: device of the index arrays.
        temporary_store: unused (accepted for compatibility).

    """

    def __init__(self, geometry: Any, partition_rank: int, partition_count: int, device: Any = None,
                 temporary_store: Any = None) -> None:
        super().__init__(geometry, device)
        if not 0 <= partition_rank < partition_count:
            raise ValueError(f"partition_rank {partition_rank} is not in [0, {partition_count})")
        n = geometry.cell_count()
        begin = n * partition_rank // partition_count
        end = n * (partition_rank + 1) // partition_count
        self.partition_rank = partition_rank
        self.partition_count = partition_count
        self._set_cells(np.arange(begin, end))


class ExplicitGeometryPartition(CellBasedGeometryPartition):
    """The cells whose entry in ``cell_mask`` is non-zero.

    Args:
        geometry: the geometry.
        cell_mask: an int array with one entry per cell.
        max_cell_count: unused (accepted for compatibility).
        max_side_count: unused (accepted for compatibility).
        temporary_store: unused (accepted for compatibility).

    """

    def __init__(self, geometry: Any, cell_mask: Any, max_cell_count: int = -1, max_side_count: int = -1,
                 temporary_store: Any = None) -> None:
        super().__init__(geometry, cell_mask.device)
        mask = cell_mask.numpy()
        if mask.shape[0] != geometry.cell_count():
            raise ValueError(f"ExplicitGeometryPartition: cell_mask has {mask.shape[0]} entries, the geometry has "
                             f"{geometry.cell_count()} cells")
        self._set_cells(np.nonzero(mask)[0])


def side_cells(geo: Any) -> tuple[np.ndarray, np.ndarray]:
    """Inner and outer cell of every side of ``geo`` (host arrays), computed by a kernel once per geometry."""
    cached = geo.__dict__.get("_side_cells")
    if cached is not None:
        return cached
    n = geo.side_count()
    inner = wp.zeros(n, dtype=int)
    outer = wp.zeros(n, dtype=int)
    if n:
        wp.launch(_side_cells_kernel(geo._funcs), dim=n, inputs=[geo.side_arg_value(), inner, outer])
    result = (inner.numpy().astype(np.int64), outer.numpy().astype(np.int64))
    geo.__dict__["_side_cells"] = result
    return result


_SIDE_CELLS: dict[int, Any] = {}


def _side_cells_kernel(geo_funcs: SimpleNamespace) -> Any:
    k = _SIDE_CELLS.get(id(geo_funcs))
    if k is None:
        SideArg = geo_funcs.SideArg
        inner_fn = geo_funcs.side_inner_cell_index
        outer_fn = geo_funcs.side_outer_cell_index

        def side_cells(arg: SideArg, inner: wp.array(dtype=int), outer: wp.array(dtype=int)):
            i = wp.tid()
            inner[i] = inner_fn(arg, i)
            outer[i] = outer_fn(arg, i)

        k = codegen.kernel(side_cells, key=f"side_cells_{codegen.digest(SideArg.key)}")
        _SIDE_CELLS[id(geo_funcs)] = k
    return k
