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

import numpy as np

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
    """Symmetric matrices stored as coordinates in an orthonormal basis.

    The basis is orthonormal for the half Frobenius product ``(a : b) / 2``, so dof vectors and tensors have the
    same norms. ``VOIGT``: the diagonal entries (times ``sqrt(2)``) then the off-diagonal pairs, ``(xx, yy, xy)`` in
    2D and ``(xx, yy, zz, yz, xz, xy)`` in 3D. ``DB16``: the spherical part first, then deviatoric diagonal
    directions (``diag(1, -1)``; in 3D also ``diag(-1, -1, 2) / sqrt(3)``, the spherical direction being
    ``sqrt(2/3) I``), then the off-diagonal pairs.
    """

    class Mapping(enum.Enum):
        """Which basis."""

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


def symmetric_basis(n: int, mapping: int) -> list[list[list[float]]]:
    """The orthonormal basis (for ``(a : b) / 2``) of ``n x n`` symmetric matrices of a mapping."""
    r2 = math.sqrt(2.0)

    def diag(*d: float) -> list[list[float]]:
        return [[d[i] if i == j else 0.0 for j in range(n)] for i in range(n)]

    def pair(i: int, j: int) -> list[list[float]]:
        return [[1.0 if (a, b) in ((i, j), (j, i)) else 0.0 for b in range(n)] for a in range(n)]

    pairs = [pair(0, 1)] if n == 2 else [pair(1, 2), pair(0, 2), pair(0, 1)]
    if mapping == 0:
        return [diag(*[r2 if k == i else 0.0 for k in range(n)]) for i in range(n)] + pairs
    if n == 2:
        return [diag(1.0, 1.0), diag(1.0, -1.0)] + pairs
    r3 = math.sqrt(3.0)
    return [diag(*[math.sqrt(2.0 / 3.0)] * 3), diag(1.0, -1.0, 0.0), diag(-1.0 / r3, -1.0 / r3, 2.0 / r3)] + pairs


@functools.cache
def _symmetric_funcs(dtype: Any, mapping: int) -> SimpleNamespace:
    S = _scalar_of(dtype)
    n = dtype._shape_[0]
    D = wp.types.vector(3 if n == 2 else 6, S)
    basis = symmetric_basis(n, mapping)
    key = ("symmetric", codegen.type_key(dtype), mapping)
    # straight-line code: each value entry a combination of dofs, each dof the half Frobenius product with its
    # basis tensor (symmetrised, so that a non-symmetric value maps to its symmetric part)
    entries = []
    for i in range(n):
        for j in range(n):
            terms = [f"S({b[i][j]!r}) * dof[{k}]" for k, b in enumerate(basis) if b[i][j] != 0.0]
            entries.append(" + ".join(terms) if terms else "S(0.0)")
    dofs = []
    npS = np.float64 if S == wp.float64 else np.float32
    for b in basis:
        # the product with the basis tensor, divided by that tensor's own product evaluated in the scalar type in
        # the same order (about 2): a unit dof comes back exactly, whatever the rounding of irrational entries
        nz = [(i, j) for i in range(n) for j in range(n) if b[i][j] != 0.0]
        terms = [f"S({b[i][j]!r}) * val[{i}, {j}]" for i, j in nz]
        norm = npS(0.0)
        for i, j in nz:
            c = npS(b[i][j])
            norm = npS(norm + c * c)
        dofs.append(f"({' + '.join(terms)}) / S({float(norm)!r})")
    text = (f"def dof_to_value(dof: D) -> M:\n    return M({', '.join(entries)})\n\n"
            f"def value_to_dof(val: M) -> D:\n    return D({', '.join(dofs)})\n")
    ns = codegen.exec_source(text, f"symmetric mapper {codegen.digest(*key)}",
                             {"D": D, "M": dtype, "S": S, "__name__": codegen.GEN_MODULE})
    return SimpleNamespace(dof_to_value=codegen.func(ns["dof_to_value"], *key),
                           value_to_dof=codegen.func(ns["value_to_dof"], *key))


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
        # a single-precision scalar dof is reported as Python ``float``, like the reference
        self.dof_dtype = (float if S is wp.float32 else S) if n == 2 else wp.types.vector(3, S)
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
