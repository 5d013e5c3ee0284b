"""Generic annotations: the type variables ``Int``/``Float``/``Scalar``/... and ``Vector``/``Matrix``/... families.

``wp.Int``, ``wp.Float`` and ``wp.Scalar`` annotate ``@func`` parameters that accept any scalar of that kind (the
compiler specialises each call; it knows them by name). ``Vector[Length, Scalar]``, ``Matrix[Rows, Cols, Scalar]``,
``Quaternion[Float]`` and ``Transformation[Float]`` name whole families of value types in Python-side annotations, as
the reference's type module does (``Vector[Any, Int]``: an integer vector of any length). They are ordinary
``typing.Generic`` classes: subscripting them makes a ``typing`` alias, nothing is instantiated.
"""

from __future__ import annotations

import typing
from typing import Any as Any
from typing import Generic

#: Any integer scalar type (a ``@func`` parameter annotated so is specialised per call).
Int = typing.TypeVar("Int")
#: Any floating-point scalar type.
Float = typing.TypeVar("Float")
#: Any scalar type.
Scalar = typing.TypeVar("Scalar")
#: A number of components (vector length).
Length = typing.TypeVar("Length")
#: A number of matrix rows.
Rows = typing.TypeVar("Rows")
#: A number of matrix columns.
Cols = typing.TypeVar("Cols")
#: An element type.
DType = typing.TypeVar("DType")

__all__ = ["Any", "Cols", "DType", "Float", "Int", "Length", "Matrix", "Quaternion", "Rows", "Scalar",
           "Transformation", "Vector"]


class Vector(Generic[Length, Scalar]):
    """The family of vector types ``vector(length, dtype)``, for annotations: ``Vector[Literal[3], Float]``."""


class Matrix(Generic[Rows, Cols, Scalar]):
    """The family of matrix types ``matrix((rows, cols), dtype)``, for annotations."""


class Quaternion(Generic[Float]):
    """The family of quaternion types (``quatf``, ``quatd``, ``quath``), for annotations."""


class Transformation(Generic[Float]):
    """The family of transform types (``transformf``, ``transformd``, ``transformh``), for annotations."""
