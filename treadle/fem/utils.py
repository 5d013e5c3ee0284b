"""Mesh topologies of dense grids (the reference's ``warp.fem.utils``)."""

from .._src.fem.utils import grid_to_hexes as grid_to_hexes
from .._src.fem.utils import grid_to_quads as grid_to_quads
from .._src.fem.utils import grid_to_tets as grid_to_tets
from .._src.fem.utils import grid_to_tris as grid_to_tris

__all__ = ["grid_to_hexes", "grid_to_quads", "grid_to_tets", "grid_to_tris"]
