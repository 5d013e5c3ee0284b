"""Degree-of-freedom mappers: how a node's stored values (dofs) become a field value, and back.

The identity mapper stores the value itself. Tensor mappers store only the independent entries of symmetric or
skew-symmetric matrices. Each mapper provides kernel functions ``dof_to_value(dof)`` and ``value_to_dof(value)``,
and ``DOF_SIZE``, the number of scalars per node.
"""

import enum
import functools
import math
from types import SimpleNamespace
from typing import Any

import treadle as wp

from .. import codegen


def _scalar_of(t: Any) -> Any:
    return getattr(t, "_wp_scalar_type_", t)


def type_length(t: Any) -> int:
    """Number of scalars in a scalar, vector or matrix type."""
    shape = getattr(t, "_shape_", None)
    if shape is not None:
        return int(math.prod(shape))
    length = getattr(t, "_length_", None)
    return int(length) if length is not None else 1


def is_vector_type(t: Any) -> bool:
    """Whether ``t`` is a vector type."""
    return getattr(t, "_shape_", None) is not None and len(t._shape_) == 1


def is_matrix_type(t: Any) -> bool:
    """Whether ``t`` is a matrix type."""
    return getattr(t, "_shape_", None) is not None and len(t._shape_) == 2


class DofMapper:
    """Base class of dof mappers.

    Attributes:
        value_dtype: type of field values.
        dof_dtype: type of the stored per-node values.
        DOF_SIZE: scalars per node.

    """

    value_dtype: Any
    dof_dtype: Any
    DOF_SIZE: int
    funcs: SimpleNamespace

    @property
    def name(self) -> str:
        """Name of the mapping (part of generated kernel names)."""
        raise NotImplementedError

    @property
    def dof_to_value(self) -> Any:
        """Kernel function ``dof -> value``."""
        return self.funcs.dof_to_value

    @property
    def value_to_dof(self) -> Any:
        """Kernel function ``value -> dof``."""
        return self.funcs.value_to_dof

    def __str__(self) -> str:
        return self.name


class IdentityMapper(DofMapper):
    """Values stored as they are."""

    def __init__(self, dtype: Any) -> None:
        if dtype is float:
            dtype = wp.float32
        self.value_dtype = dtype
        self.dof_dtype = dtype
        self.DOF_SIZE = type_length(dtype)
        self.funcs = _identity_funcs(dtype)

    @property
    def name(self) -> str:
        """``Identity``."""
        return "Identity"


@functools.cache
def _identity_funcs(dtype: Any) -> SimpleNamespace:
    T = dtype

    def dof_to_value(dof: T) -> T:
        return dof

    def value_to_dof(val: T) -> T:
        return val

    key = ("identity", codegen.type_key(dtype))
    return SimpleNamespace(dof_to_value=codegen.func(dof_to_value, *key), value_to_dof=codegen.func(value_to_dof, *key))


class SymmetricTensorMapper(DofMapper):
    """Symmetric matrices stored as their independent entries.

    ``VOIGT``: ``(xx, yy, xy)`` in 2D, ``(xx, yy, zz, yz, xz, xy)`` in 3D. ``DB16``: the same entries with the
    off-diagonal ones scaled by ``sqrt(2)``, so that the map preserves the Frobenius inner product.
    """

    class Mapping(enum.Enum):
        """Which storage convention."""

        VOIGT = 0
        DB16 = 1

    def __init__(self, dtype: Any, mapping: "SymmetricTensorMapper.Mapping" = Mapping.VOIGT) -> None:
        shape = getattr(dtype, "_shape_", None)
        if shape is None or tuple(shape) not in ((2, 2), (3, 3)):
            raise TypeError(f"SymmetricTensorMapper: dtype must be a 2x2 or 3x3 matrix type, got {dtype!r}")
        self.value_dtype = dtype
        self.mapping = SymmetricTensorMapper.Mapping(mapping)
        n = shape[0]
        self.DOF_SIZE = 3 if n == 2 else 6
        self.dof_dtype = wp.types.vector(self.DOF_SIZE, _scalar_of(dtype))
        self.funcs = _symmetric_funcs(dtype, self.mapping.value)

    @property
    def name(self) -> str:
        """``SymmetricVoigt`` or ``SymmetricDB16``."""
        return "SymmetricVoigt" if self.mapping == SymmetricTensorMapper.Mapping.VOIGT else "SymmetricDB16"


@functools.cache
def _symmetric_funcs(dtype: Any, mapping: int) -> SimpleNamespace:
    S = _scalar_of(dtype)
    n = dtype._shape_[0]
    D = wp.types.vector(3 if n == 2 else 6, S)
    M = dtype
    c = math.sqrt(2.0) if mapping == 1 else 1.0
    inv = 1.0 / c
    key = ("symmetric", codegen.type_key(dtype), mapping)
    if n == 2:
        def dof_to_value(dof: D) -> M:
            o = dof[2] * S(inv)
            return M(dof[0], o, o, dof[1])

        def value_to_dof(val: M) -> D:
            return D(val[0, 0], val[1, 1], S(0.5 * c) * (val[0, 1] + val[1, 0]))
    else:
        def dof_to_value(dof: D) -> M:
            yz = dof[3] * S(inv)
            xz = dof[4] * S(inv)
            xy = dof[5] * S(inv)
            return M(dof[0], xy, xz, xy, dof[1], yz, xz, yz, dof[2])

        def value_to_dof(val: M) -> D:
            h = S(0.5 * c)
            return D(val[0, 0], val[1, 1], val[2, 2], h * (val[1, 2] + val[2, 1]), h * (val[0, 2] + val[2, 0]),
                     h * (val[0, 1] + val[1, 0]))
    return SimpleNamespace(dof_to_value=codegen.func(dof_to_value, *key), value_to_dof=codegen.func(value_to_dof, *key))


class SkewSymmetricTensorMapper(DofMapper):
    """Skew-symmetric matrices stored as their independent entries: ``xy`` in 2D (a scalar), ``(yz, zx, xy)`` in 3D.

    In 3D the stored vector ``w`` is the axial vector: the matrix is ``W`` with ``W v = cross(w, v)``.
    """

    def __init__(self, dtype: Any) -> None:
        shape = getattr(dtype, "_shape_", None)
        if shape is None or tuple(shape) not in ((2, 2), (3, 3)):
            raise TypeError(f"SkewSymmetricTensorMapper: dtype must be a 2x2 or 3x3 matrix type, got {dtype!r}")
        self.value_dtype = dtype
        S = _scalar_of(dtype)
        n = shape[0]
        self.DOF_SIZE = 1 if n == 2 else 3
        self.dof_dtype = S if n == 2 else wp.types.vector(3, S)
        self.funcs = _skew_funcs(dtype)

    @property
    def name(self) -> str:
        """``SkewSymmetric``."""
        return "SkewSymmetric"


@functools.cache
def _skew_funcs(dtype: Any) -> SimpleNamespace:
    S = _scalar_of(dtype)
    n = dtype._shape_[0]
    M = dtype
    key = ("skew", codegen.type_key(dtype))
    if n == 2:
        def dof_to_value(dof: S) -> M:
            return M(S(0.0), -dof, dof, S(0.0))

        def value_to_dof(val: M) -> S:
            return S(0.5) * (val[1, 0] - val[0, 1])
    else:
        D = wp.types.vector(3, S)

        def dof_to_value(dof: D) -> M:
            return M(S(0.0), -dof[2], dof[1], dof[2], S(0.0), -dof[0], -dof[1], dof[0], S(0.0))

        def value_to_dof(val: M) -> D:
            h = S(0.5)
            return D(h * (val[2, 1] - val[1, 2]), h * (val[0, 2] - val[2, 0]), h * (val[1, 0] - val[0, 1]))
    return SimpleNamespace(dof_to_value=codegen.func(dof_to_value, *key), value_to_dof=codegen.func(value_to_dof, *key))
