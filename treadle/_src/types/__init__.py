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
from .typeutil import dtype_from_numpy as dtype_from_numpy
from .typeutil import dtype_to_numpy as dtype_to_numpy
from .typeutil import is_array as is_array
from .typeutil import is_composite as is_composite
from .typeutil import is_float as is_float
from .typeutil import is_int as is_int
from .typeutil import is_matrix as is_matrix
from .typeutil import is_quaternion as is_quaternion
from .typeutil import is_scalar as is_scalar
from .typeutil import is_struct as is_struct
from .typeutil import is_tile as is_tile
from .typeutil import is_transformation as is_transformation
from .typeutil import is_value as is_value
from .typeutil import is_vector as is_vector
from .typeutil import quaternion as quaternion
from .typeutil import transformation as transformation
from .typeutil import type_ctype as type_ctype
from .typeutil import type_is_array as type_is_array
from .typeutil import type_is_composite as type_is_composite
from .typeutil import type_is_float as type_is_float
from .typeutil import type_is_int as type_is_int
from .typeutil import type_is_matrix as type_is_matrix
from .typeutil import type_is_quaternion as type_is_quaternion
from .typeutil import type_is_scalar as type_is_scalar
from .typeutil import type_is_struct as type_is_struct
from .typeutil import type_is_tile as type_is_tile
from .typeutil import type_is_transformation as type_is_transformation
from .typeutil import type_is_value as type_is_value
from .typeutil import type_is_vector as type_is_vector
from .typeutil import type_length as type_length
from .typeutil import type_repr as type_repr
from .typeutil import type_scalar_type as type_scalar_type
from .typeutil import type_size as type_size
from .typeutil import type_size_in_bytes as type_size_in_bytes
from .typeutil import types_equal as types_equal

# Not ``vector`` / ``matrix`` (the type factories): those names are this package's submodules ``vector.py`` and
# ``matrix.py``, which the rest of Treadle imports as ``from ..types import vector``.
