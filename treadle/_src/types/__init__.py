"""Types: scalars, vectors/matrices/quaternions/transforms, structs, the compiler's type system, the array protocol.

The package namespace gathers the type layer's public helpers (``type_length``, ``type_scalar_type``,
``types_equal`` ...), the value types and the generic annotations (``Int``, ``Vector`` ...). Warp-based libraries
reach them under the reference's private path ``warp._src.types`` when ``warp`` resolves to Treadle.
"""

from .generics import Any as Any
from .generics import Cols as Cols
from .generics import DType as DType
from .generics import Float as Float
from .generics import Int as Int
from .generics import Length as Length
from .generics import Matrix as Matrix
from .generics import Quaternion as Quaternion
from .generics import Rows as Rows
from .generics import Scalar as Scalar
from .generics import Transformation as Transformation
from .generics import Vector as Vector
from .typeutil import *  # noqa: F403 - the helpers listed in typeutil.__all__
from .typeutil import __all__ as _typeutil_all

__all__ = [
    "Any", "Cols", "DType", "Float", "Int", "Length", "Matrix", "Quaternion", "Rows", "Scalar", "Transformation",
    "Vector", *_typeutil_all,
]
