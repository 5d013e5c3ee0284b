"""The geometry interface: cells, sides and the kernel functions that map reference coordinates to the world.

A geometry is a set of cells (segments, triangles, squares, tetrahedra, cubes) in a world of ``dimension`` 2 or 3,
and the sides between them. It describes itself to kernels through three argument structs and a table of
``@wp.func`` functions:

- ``CellArg`` (what cell functions read), ``SideArg`` (what side functions read; it holds a ``CellArg``) and
  ``SideIndexArg`` (what enumerating the boundary sides reads), with ``cell_arg_value(device)``...;
- cell functions ``cell_position(arg, s)``, ``cell_deformation_gradient``, ``cell_inverse_deformation_gradient``,
  ``cell_measure``, ``cell_normal``, ``cell_lookup(arg, x)``, ``cell_coordinates(arg, cell, x)``,
  ``cell_closest_point(arg, cell, x)``;
- side functions ``side_position(arg, s)``, ``side_deformation_gradient``, ``side_measure``,
  ``side_measure_ratio``, ``side_normal`` (pointing out of the inner cell), ``side_inner_cell_index(arg, side)``,
  ``side_outer_cell_index``, ``side_inner_cell_coords(arg, side, coords)``, ``side_outer_cell_coords``,
  ``side_from_cell_coords(arg, side, cell, coords)`` (``OUTSIDE`` off the side), ``side_to_cell_arg(arg)`` and
  ``boundary_side_index(index_arg, i)``.

On a boundary side the outer cell is the inner cell.
"""

from types import SimpleNamespace
from typing import Any

import treadle as wp

from ..element import ELEMENT_DIMENSION, Element
from ..types import coords_type, sample_type
from .measures import element_measure, element_normal

#: Names of the kernel functions every geometry provides.
CELL_FUNCS = ("cell_position", "cell_deformation_gradient", "cell_inverse_deformation_gradient", "cell_measure",
              "cell_normal", "cell_lookup", "cell_coordinates", "cell_closest_point")
SIDE_FUNCS = ("side_position", "side_deformation_gradient", "side_measure", "side_measure_ratio", "side_normal",
              "side_inner_cell_index", "side_outer_cell_index", "side_inner_cell_coords", "side_outer_cell_coords",
              "side_from_cell_coords", "side_to_cell_arg", "boundary_side_index", "side_inner_inverse_deformation_gradient",
              "side_outer_inverse_deformation_gradient")


class Geometry:
    """Base class of geometries (see the module documentation for what a geometry provides to kernels).

    Attributes:
        dimension: dimension of the world the geometry lives in.
        scalar_type: ``wp.float32`` or ``wp.float64``: the precision of positions and reference coordinates.

    """

    dimension: int = 0
    _funcs: SimpleNamespace
    #: kernel functions: the measure of an element, and the normal of a side, from its deformation gradient
    _element_measure = element_measure
    _element_normal = element_normal

    def __init__(self, scalar_type: Any = wp.float32) -> None:
        if scalar_type not in (wp.float32, wp.float64):
            raise TypeError(f"scalar_type must be wp.float32 or wp.float64, got {scalar_type!r}")
        self.scalar_type = scalar_type
        self._cell_arg: dict[str, Any] = {}
        self._side_arg: dict[str, Any] = {}
        self._side_index_arg: dict[str, Any] = {}

    # ---------------------------------------------------------------------------------------- description
    @property
    def name(self) -> str:
        """A name describing the kind of geometry (part of generated kernel names)."""
        suffix = "_f64" if self.scalar_type is wp.float64 else ""
        return f"{type(self).__name__}{suffix}"

    @property
    def cell_dimension(self) -> int:
        """Dimension of the cells (2 for triangles in 3D)."""
        return ELEMENT_DIMENSION[self.reference_cell()]

    def reference_cell(self) -> Element:
        """The reference shape of the cells."""
        raise NotImplementedError

    def reference_side(self) -> Element:
        """The reference shape of the sides."""
        raise NotImplementedError

    def cell_count(self) -> int:
        """Number of cells."""
        raise NotImplementedError

    def side_count(self) -> int:
        """Number of sides (interior and boundary)."""
        raise NotImplementedError

    def boundary_side_count(self) -> int:
        """Number of boundary sides (sides with a single neighbouring cell)."""
        raise NotImplementedError

    def vertex_count(self) -> int:
        """Number of vertices."""
        raise NotImplementedError

    @property
    def sample_type(self) -> Any:
        """The :class:`Sample` struct of this geometry's precision."""
        return sample_type(self.scalar_type)

    @property
    def coords_type(self) -> Any:
        """The reference coordinates vector of this geometry's precision."""
        return coords_type(self.scalar_type)

    def supports_cell_lookup(self, device: Any = None) -> bool:
        """Whether ``cell_lookup`` (``fem.lookup``) works on this geometry."""
        return True

    def __str__(self) -> str:
        return self.name

    # ---------------------------------------------------------------------------------------- kernel arguments
    @property
    def CellArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the cell functions' first argument."""
        return self._funcs.CellArg

    @property
    def SideArg(self) -> Any:  # noqa: N802
        """Struct type of the side functions' first argument."""
        return self._funcs.SideArg

    @property
    def SideIndexArg(self) -> Any:  # noqa: N802
        """Struct type of the argument of ``boundary_side_index``."""
        return self._funcs.SideIndexArg

    def _device_key(self, device: Any) -> str:
        return str(wp.get_device(device))

    def cell_arg_value(self, device: Any = None) -> Any:
        """The ``CellArg`` value of this geometry on ``device``."""
        key = self._device_key(device)
        v = self._cell_arg.get(key)
        if v is None:
            v = self.CellArg()
            self.fill_cell_arg(v, wp.get_device(device))
            self._cell_arg[key] = v
        return v

    def side_arg_value(self, device: Any = None) -> Any:
        """The ``SideArg`` value of this geometry on ``device``."""
        key = self._device_key(device)
        v = self._side_arg.get(key)
        if v is None:
            v = self.SideArg()
            self.fill_side_arg(v, wp.get_device(device))
            self._side_arg[key] = v
        return v

    def side_index_arg_value(self, device: Any = None) -> Any:
        """The ``SideIndexArg`` value of this geometry on ``device``."""
        key = self._device_key(device)
        v = self._side_index_arg.get(key)
        if v is None:
            v = self.SideIndexArg()
            self.fill_side_index_arg(v, wp.get_device(device))
            self._side_index_arg[key] = v
        return v

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """Fill a ``CellArg`` value."""
        raise NotImplementedError

    def fill_side_arg(self, arg: Any, device: Any) -> None:
        """Fill a ``SideArg`` value."""
        raise NotImplementedError

    def fill_side_index_arg(self, arg: Any, device: Any) -> None:
        """Fill a ``SideIndexArg`` value."""
        raise NotImplementedError

    def _invalidate_args(self) -> None:
        self._cell_arg.clear()
        self._side_arg.clear()
        self._side_index_arg.clear()

    # ---------------------------------------------------------------------------------------- kernel functions
    def __getattr__(self, name: str) -> Any:
        # the kernel functions live in a table shared by all geometries of a kind and precision
        if name in CELL_FUNCS or name in SIDE_FUNCS:
            funcs = self.__dict__.get("_funcs")
            if name == "side_normal" and funcs is not None and self.cell_dimension != self.dimension:
                # sides of a surface in space are curves: no hyperplane normal is published (``fem.normal`` on
                # them still gives the conormal within the surface, through the domain's own table)
                return None
            if funcs is not None:
                return getattr(funcs, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def vec_type(n: int, scalar: Any) -> Any:
    """``wp.vector(n, scalar)``."""
    return wp.types.vector(length=n, dtype=scalar)


def mat_type(r: int, c: int, scalar: Any) -> Any:
    """``wp.matrix((r, c), scalar)``."""
    return wp.types.matrix(shape=(r, c), dtype=scalar)
