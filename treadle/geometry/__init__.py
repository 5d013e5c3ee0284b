"""``treadle.geometry``: iso-surfaces, sparse marching cubes, swept volumes and triangle-mesh utilities.

``import warp.geometry`` resolves here when Warp programs run on Treadle. Everything is built from Treadle kernels.
"""

from __future__ import annotations

from .._src.geometry_lib.iso_surface import IsoSurfaceBase as IsoSurfaceBase
from .._src.geometry_lib.iso_surface import IsoSurfaceMarchingCubes as IsoSurfaceMarchingCubes
from .._src.geometry_lib.sparse_mc import lipschitz_octree as lipschitz_octree
from .._src.geometry_lib.sparse_mc import sparse_marching_cubes as sparse_marching_cubes
from .._src.geometry_lib.sparse_mc import sparse_marching_cubes_from_cells as sparse_marching_cubes_from_cells
from .._src.geometry_lib.surface_nets import IsoSurfaceNets as IsoSurfaceNets
