"""``treadle.geometry``: iso-surfaces, sparse marching cubes, swept volumes and triangle-mesh utilities.

``import warp.geometry`` resolves here when Warp programs run on Treadle. Everything is built from Treadle kernels.
"""

from __future__ import annotations

from .._src.geometry_lib.delaunay import delaunay_edge_flip as delaunay_edge_flip
from .._src.geometry_lib.delaunay import find_triangle_neighbor_edge_index as find_triangle_neighbor_edge_index
from .._src.geometry_lib.delaunay import tri_tri_adjacency as tri_tri_adjacency
from .._src.geometry_lib.iso_surface import IsoSurfaceBase as IsoSurfaceBase
from .._src.geometry_lib.iso_surface import IsoSurfaceMarchingCubes as IsoSurfaceMarchingCubes
from .._src.geometry_lib.sparse_mc import lipschitz_octree as lipschitz_octree
from .._src.geometry_lib.sparse_mc import sparse_marching_cubes as sparse_marching_cubes
from .._src.geometry_lib.sparse_mc import sparse_marching_cubes_from_cells as sparse_marching_cubes_from_cells
from .._src.geometry_lib.surface_nets import IsoSurfaceNets as IsoSurfaceNets
from .._src.geometry_lib.swept_volume import SweptVolumeSignMode as SweptVolumeSignMode
from .._src.geometry_lib.swept_volume import swept_volume_bounds as swept_volume_bounds
from .._src.geometry_lib.swept_volume import swept_volume_field as swept_volume_field
from .._src.geometry_lib.swept_volume import swept_volume_mesh as swept_volume_mesh
from .._src.geometry_lib.swept_volume import swept_volume_sdf as swept_volume_sdf
