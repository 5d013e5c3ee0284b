"""``IsoSurfaceBase`` and ``IsoSurfaceMarchingCubes``: the common interface of dense iso-surface extractors.

``IsoSurfaceMarchingCubes`` is Treadle's ``MarchingCubes`` (the same kernels, case table and gradients) behind the
``IsoSurfaceBase`` interface. Its class tables describe that case table in the corner and edge numbering that the
API documents (corners counter-clockwise around the bottom face, then the top face; edges around the bottom, around
the top, then upward), which is also the corner order of ``sparse_marching_cubes_from_cells``'s corner values.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

import treadle as wp

from ..geometry.marching_cubes import EDGES, MarchingCubes, case_tables, extract_surface
from ._common import field_arg, vec3_arg


def _api_corners() -> tuple[tuple[int, int, int], ...]:
    ring = ((0, 0), (1, 0), (1, 1), (0, 1))  # counter-clockwise seen from +z
    return tuple((x, y, z) for z in (0, 1) for x, y in ring)


def _api_edges(corners: tuple[tuple[int, int, int], ...]) -> tuple[tuple[int, int], ...]:
    def oriented(a: int, b: int) -> tuple[int, int]:  # from the corner with the smaller coordinates
        return (a, b) if corners[a] < corners[b] else (b, a)

    ring = [oriented(c, (c + 1) % 4) for c in range(4)]
    return tuple(ring + [(a + 4, b + 4) for a, b in ring] + [(c, c + 4) for c in range(4)])


#: Corner offsets in the documented numbering.
API_CORNERS = _api_corners()
#: Cell edges (corner pairs, from the lower corner) in the documented numbering.
API_EDGES = _api_edges(API_CORNERS)
#: Treadle's corner index (x + 2 y + 4 z) of each documented corner.
API_TO_CORNER = tuple(x + 2 * y + 4 * z for x, y, z in API_CORNERS)


def _api_tables() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(case -> index range (257 entries, 3 per triangle), the cell edges of every triangle), documented numbering."""
    tri_edges, tri_counts = case_tables()
    to_api_edge = {}
    for e, (a, b) in enumerate(API_EDGES):
        pa, pb = API_TO_CORNER[a], API_TO_CORNER[b]
        to_api_edge[EDGES.index((min(pa, pb), max(pa, pb)))] = e
    ranges, local = [0], []
    for api_case in range(256):
        case = sum(1 << API_TO_CORNER[r] for r in range(8) if api_case >> r & 1)
        local += [to_api_edge[int(e)] for e in tri_edges[case, : 3 * tri_counts[case]]]
        ranges.append(len(local))
    return tuple(ranges), tuple(local)


class IsoSurfaceBase(abc.ABC):
    """Interface of iso-surface extractors for dense 3-d scalar fields sampled at grid nodes.

    An instance is made for a grid size; :meth:`surface` extracts the surface of a field of that size into
    :attr:`verts` (vec3 positions) and :attr:`indices` (flat int32, one group of vertex indices per face). The
    class method :meth:`extract` does the same without an instance. Faces are wound counter-clockwise seen from the
    side of larger values (outside, for a signed distance that is negative inside). Vertex positions are
    differentiable with respect to the field when it has ``requires_grad=True`` and the call runs under a
    ``wp.Tape``; ``indices`` carry no gradient.

    Args:
        nx: grid nodes along x.
        ny: grid nodes along y.
        nz: grid nodes along z.
        lower: position of node (0, 0, 0); ``None``: the origin.
        upper: position of node (nx - 1, ny - 1, nz - 1); ``None``: (nx - 1, ny - 1, nz - 1), i.e. node indices.

    Attributes:
        nx, ny, nz: the grid nodes per axis.
        lower, upper: the domain corners as given.
        verts: the vertex positions of the last :meth:`surface` call (``None`` before).
        indices: the face vertex indices of the last :meth:`surface` call (``None`` before).
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower: Any = None, upper: Any = None) -> None:
        self.nx, self.ny, self.nz = int(nx), int(ny), int(nz)
        self.lower = lower
        self.upper = upper
        self.verts: Any = None
        self.indices: Any = None

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """Set new grid dimensions, used by the next :meth:`surface` call.

        Args:
            nx: new number of nodes along x.
            ny: new number of nodes along y.
            nz: new number of nodes along z.
        """
        self.nx, self.ny, self.nz = int(nx), int(ny), int(nz)

    def _check_field_shape(self, field: Any) -> None:
        """Raise ``ValueError`` unless ``field`` is an array of shape (nx, ny, nz)."""
        shape = tuple(getattr(field, "shape", ()) or ())
        if shape != (self.nx, self.ny, self.nz):
            raise ValueError(f"{type(self).__name__}.surface(): field shape {shape} does not match the grid "
                             f"({self.nx}, {self.ny}, {self.nz})")

    @abc.abstractmethod
    def surface(self, field: Any, threshold: float) -> None:
        """Extract the ``threshold`` iso-surface of ``field`` into :attr:`verts` and :attr:`indices`.

        Args:
            field: float32 array of shape (nx, ny, nz).
            threshold: the iso-value.
        """

    @classmethod
    @abc.abstractmethod
    def extract(cls, field: Any, threshold: float = 0.0, *, lower: Any = None, upper: Any = None
                ) -> tuple[Any, Any]:
        """Stateless extraction: ``(verts, indices)`` of the ``threshold`` iso-surface of ``field``.

        Args:
            field: 3-d float32 array of node values.
            threshold: the iso-value.
            lower: position of node (0, 0, 0) (default: the origin).
            upper: position of the last node (default: its indices).
        """


class IsoSurfaceMarchingCubes(MarchingCubes, IsoSurfaceBase):
    """Marching cubes behind the :class:`IsoSurfaceBase` interface.

    One vertex per grid edge that the surface crosses (shared by the cells around the edge, so the mesh is
    watertight where the surface stays inside the grid), placed by linear interpolation along the edge; gradients
    flow from the vertex positions back to the field through that interpolation. Cell cases follow Treadle's case
    table (ambiguous faces keep their diagonal corners below the threshold apart), described by the class tables
    below in the documented numbering.

    Args:
        nx: grid nodes along x.
        ny: grid nodes along y.
        nz: grid nodes along z.
        lower: position of node (0, 0, 0) (default: the origin).
        upper: position of node (nx - 1, ny - 1, nz - 1) (default: node indices).
        domain_bounds_lower_corner: older name of ``lower``.
        domain_bounds_upper_corner: older name of ``upper``.
    """

    #: Offset of each cell corner from the cell's minimum corner.
    CUBE_CORNER_OFFSETS = API_CORNERS
    #: The two corners (from the lower one) of each cell edge.
    EDGE_TO_CORNERS = API_EDGES
    #: Per case (bit ``c`` set: corner ``c`` below the threshold), the range of its entries in ``TRI_LOCAL_INDICES``.
    CASE_TO_TRI_RANGE, TRI_LOCAL_INDICES = _api_tables()

    def __init__(self, nx: int, ny: int, nz: int, lower: Any = None, upper: Any = None, *,
                 domain_bounds_lower_corner: Any = None, domain_bounds_upper_corner: Any = None) -> None:
        IsoSurfaceBase.__init__(self, nx, ny, nz, lower=lower if lower is not None else domain_bounds_lower_corner,
                                upper=upper if upper is not None else domain_bounds_upper_corner)
        self.device = wp.get_device()
        self.max_verts = self.max_tris = 0

    def resize(self, nx: int, ny: int, nz: int, max_verts: int | None = None, max_tris: int | None = None) -> None:
        """Set new grid dimensions for the next :meth:`surface` call (the other arguments are accepted and unused).

        Args:
            nx: new number of nodes along x.
            ny: new number of nodes along y.
            nz: new number of nodes along z.
            max_verts: accepted for compatibility.
            max_tris: accepted for compatibility.
        """
        self.nx, self.ny, self.nz = int(nx), int(ny), int(nz)

    def surface(self, field: Any, threshold: float) -> None:
        """Extract the ``threshold`` iso-surface of ``field`` (shape (nx, ny, nz)) into ``verts`` / ``indices``.

        Args:
            field: float32 array of shape (nx, ny, nz).
            threshold: the iso-value.
        """
        self._check_field_shape(field)
        self.verts, self.indices = type(self).extract(field, threshold, lower=self.lower, upper=self.upper)

    @classmethod
    def extract(cls, field: Any, threshold: float = 0.0, *, lower: Any = None, upper: Any = None
                ) -> tuple[Any, Any]:
        """``(verts, indices)``: the triangles of the ``threshold`` iso-surface of ``field``.

        Args:
            field: 3-d float32 array of node values; its shape sets the grid.
            threshold: the iso-value.
            lower: position of node (0, 0, 0) (default: the origin).
            upper: position of the last node (default: its indices, so vertices are in grid units).

        Returns:
            vec3 vertex positions and a flat int32 array of three vertex indices per triangle.

        Raises:
            ValueError: ``field`` is not a 3-d array or has fewer than two nodes on an axis.
            TypeError: ``field`` is not float32.
        """
        where = f"{cls.__name__}.extract"
        field_arg(field, where)
        nx, ny, nz = field.shape
        lo = vec3_arg(lower, f"{where}: lower", (0.0, 0.0, 0.0))
        hi = vec3_arg(upper, f"{where}: upper", (float(nx - 1), float(ny - 1), float(nz - 1)))
        return extract_surface(field, float(threshold), lo, hi)


# ``wp.MarchingCubes`` is the same algorithm; let it count as an IsoSurfaceBase too.
IsoSurfaceBase.register(MarchingCubes)

#: Treadle corner index (bit order) per documented corner, as an array for kernels.
API_TO_CORNER_NP = np.asarray(API_TO_CORNER, np.int32)
