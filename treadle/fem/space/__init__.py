"""Function space classes and shape functions of ``treadle.fem`` (the reference's ``warp.fem.space``)."""

from ..._src.fem.space.function_space import CollocatedFunctionSpace as CollocatedFunctionSpace
from . import shape as shape

__all__ = ["CollocatedFunctionSpace", "shape"]
