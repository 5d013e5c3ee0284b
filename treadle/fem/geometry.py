"""Geometry classes of ``treadle.fem`` that are not exported at the top level.

The reference's ``warp.fem.geometry``.
"""

from .._src.fem.geometry.deformed import DeformedGeometry as DeformedGeometry

__all__ = ["DeformedGeometry"]
