"""Vector and matrix math: products, norms, transposes, determinants, inverses and constructors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import is_float, is_matrix, is_vector, scalar_of, type_str
from .registry import NOT_CONST, Interp, NoMatch, arity, builtin, need, same

GROUP = "Vector Math"


def _vec(n: int, t: Any) -> Any:
    from ..types.vector import vector

    return vector(n, t)


def _mat(r: int, c: int, t: Any) -> Any:
    from ..types.matrix import matrix

    return matrix((r, c), t)


def _vec_to_scalar(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(is_vector(types[0]) or getattr(types[0], "_wp_generic_type_str_", None) == "quat_t",
         f"expected a vector, got {type_str(types[0])}")
    return scalar_of(types[0])


def _float_vec_to_scalar(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = _vec_to_scalar(types, consts)
    need(is_float(t), f"expected a float vector, got {type_str(types[0])}")
    return t


def _dot(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    t = same(types)
    need(is_vector(t) or getattr(t, "_wp_generic_type_str_", None) == "quat_t", f"expected vectors, got {type_str(t)}")
    return scalar_of(t)


def _cross(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    t = same(types)
    need(is_vector(t) and t._length_ == 3, f"cross() needs two 3-vectors, got {type_str(t)}")
    return t


def _normalize(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need((is_vector(t) or getattr(t, "_wp_generic_type_str_", None) == "quat_t") and is_float(scalar_of(t)),
         f"expected a float vector, got {type_str(t)}")
    return t


def _outer(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    a, b = types
    need(is_vector(a) and is_vector(b) and scalar_of(a) == scalar_of(b), "outer() needs two vectors of one scalar type")
    return _mat(a._length_, b._length_, scalar_of(a))


def _transpose(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(is_matrix(types[0]), f"expected a matrix, got {type_str(types[0])}")
    r, c = types[0]._shape_
    return _mat(c, r, scalar_of(types[0]))


def _square_to_scalar(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(is_matrix(t) and t._shape_[0] == t._shape_[1], f"expected a square matrix, got {type_str(t)}")
    return scalar_of(t)


def _det(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    s = _square_to_scalar(types, consts)
    need(types[0]._shape_[0] in (2, 3, 4), "determinant() supports 2x2, 3x3 and 4x4 matrices")
    return s


def _inverse(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _det(types, consts)
    need(is_float(scalar_of(types[0])), "inverse() needs a float matrix")
    return types[0]


def _same_square(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _square_to_scalar(types, consts)
    return types[0]


def _cw(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    t = same(types)
    need(is_vector(t) or is_matrix(t), f"expected vectors or matrices, got {type_str(t)}")
    return t


def _diag(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(is_vector(types[0]), f"diag() needs a vector, got {type_str(types[0])}")
    n = types[0]._length_
    return _mat(n, n, scalar_of(types[0]))


def _get_diag(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(is_matrix(t) and t._shape_[0] == t._shape_[1], f"get_diag() needs a square matrix, got {type_str(t)}")
    return _vec(t._shape_[0], scalar_of(t))


def _skew(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(is_vector(types[0]) and types[0]._length_ == 3, f"skew() needs a 3-vector, got {type_str(types[0])}")
    return _mat(3, 3, scalar_of(types[0]))


def _ddot(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    t = same(types)
    need(is_matrix(t), f"ddot() needs two matrices, got {type_str(t)}")
    return scalar_of(t)


def _argminmax(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(is_vector(types[0]), f"expected a vector, got {type_str(types[0])}")
    return scalars.uint32


def _identity(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    n, dtype = consts
    if n is NOT_CONST or not isinstance(n, int):
        raise NoMatch("identity(n, dtype) needs a compile-time constant size n")
    from ..types.typesys import normalize_annotation

    dtype = normalize_annotation(dtype)
    need(scalars.is_scalar_type(dtype), "identity(n, dtype) needs a scalar dtype")
    return _mat(n, n, dtype)


def _from_vectors(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) >= 1, "expected at least one vector")
    t = same(types)
    need(is_vector(t), f"expected vectors, got {type_str(t)}")
    return t


def _from_cols(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = _from_vectors(types, consts)
    return _mat(t._length_, len(types), scalar_of(t))


def _from_rows(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = _from_vectors(types, consts)
    return _mat(len(types), t._length_, scalar_of(t))


def _mat_template(types: Sequence[Any], ret: Any) -> tuple[Any, ...]:
    return (ret._shape_[0], scalar_of(ret))


def np_linalg_host(fn: Any) -> Any:
    """Host implementation calling NumPy ``linalg`` function ``fn``, which has no float16: half computes in float32."""

    def impl(m: Any) -> Any:
        m = np.asarray(m)
        return fn(m.astype(np.float32)) if m.dtype == np.float16 else fn(m)

    return impl


def _np_normalize(v: Any) -> Any:
    n = np.sqrt(np.dot(v.reshape(-1), v.reshape(-1)))
    return v / n if n > 0 else np.zeros_like(v)


builtin("dot", group=GROUP, rule=_dot, host=lambda a, b: np.dot(a.reshape(-1), b.reshape(-1)),
        signature="dot(a: Vector, b: Vector) -> Scalar", doc="Dot product of two vectors.")
builtin("cross", group=GROUP, rule=_cross, host=np.cross, signature="cross(a: vec3, b: vec3) -> vec3",
        doc="Cross product of two 3-vectors.")
builtin("length", group=GROUP, rule=_float_vec_to_scalar, singular=True, host=lambda v: np.sqrt(np.dot(v, v)),
        signature="length(v: Vector) -> Float", doc="Euclidean length of a vector.")
builtin("length_sq", group=GROUP, rule=_vec_to_scalar, host=lambda v: np.dot(v, v),
        signature="length_sq(v: Vector) -> Scalar", doc="Squared length of a vector.")
builtin("normalize", group=GROUP, rule=_normalize, singular=True, host=_np_normalize,
        signature="normalize(v: Vector) -> Vector", doc="Unit vector in the direction of v (zero for a zero vector).")
builtin("outer", group=GROUP, rule=_outer, host=np.outer, signature="outer(a: Vector, b: Vector) -> Matrix",
        doc="Outer product a b^T.")
builtin("transpose", group=GROUP, rule=_transpose, host=np.transpose, signature="transpose(m: Matrix) -> Matrix",
        doc="Matrix transpose.")
builtin("determinant", group=GROUP, rule=_det, host=np_linalg_host(np.linalg.det), signature="determinant(m: Matrix) -> Scalar",
        doc="Determinant of a 2x2, 3x3 or 4x4 matrix.")
builtin("inverse", group=GROUP, rule=_inverse, singular=True, interpret=Interp.INVERSE, host=np_linalg_host(np.linalg.inv), signature="inverse(m: Matrix) -> Matrix",
        doc="Inverse of a 2x2, 3x3 or 4x4 matrix.")
builtin("trace", group=GROUP, rule=_square_to_scalar, host=np.trace, signature="trace(m: Matrix) -> Scalar",
        doc="Sum of the diagonal.")
builtin("diag", group=GROUP, rule=_diag, host=np.diag, signature="diag(v: Vector) -> Matrix",
        doc="Square matrix with v on the diagonal.")
builtin("get_diag", group=GROUP, rule=_get_diag, host=np.diag, signature="get_diag(m: Matrix) -> Vector",
        doc="The diagonal of a square matrix.")
builtin("skew", group=GROUP, rule=_skew,
        host=lambda v: np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]], dtype=v.dtype),
        signature="skew(v: vec3) -> mat33", doc="The cross-product matrix of v: skew(a) * b == cross(a, b).")
builtin("ddot", group=GROUP, rule=_ddot, host=lambda a, b: np.sum(a * b), signature="ddot(a: Matrix, b: Matrix)",
        doc="Double dot (Frobenius) product of two matrices.")
builtin("cw_mul", group=GROUP, rule=_cw, host=np.multiply, signature="cw_mul(a, b)",
        doc="Component-wise product.")
builtin("cw_div", group=GROUP, rule=_cw, host=np.divide, signature="cw_div(a, b)",
        doc="Component-wise division.")
builtin("argmin", group=GROUP, rule=_argminmax, host=np.argmin, differentiable=False, interpret=Interp.ARGMIN,
        signature="argmin(v: Vector) -> uint32", doc="Index of the smallest component.")
builtin("argmax", group=GROUP, rule=_argminmax, host=np.argmax, differentiable=False, interpret=Interp.ARGMAX,
        signature="argmax(v: Vector) -> uint32", doc="Index of the largest component.")
builtin("identity", group=GROUP, rule=_identity, interpret=Interp.IDENTITY, template=_mat_template, static_args=2,
        host=lambda n, dtype: np.eye(n, dtype=scalars.scalar_from_python(dtype)._np_),
        signature="identity(n: int, dtype) -> Matrix", doc="The n x n identity matrix.")
builtin("matrix_from_cols", group=GROUP, rule=_from_cols, host=lambda *c: np.stack(c, axis=1),
        signature="matrix_from_cols(*cols: Vector) -> Matrix", doc="Matrix whose columns are the given vectors.")
builtin("matrix_from_rows", group=GROUP, rule=_from_rows, host=lambda *r: np.stack(r, axis=0),
        signature="matrix_from_rows(*rows: Vector) -> Matrix", doc="Matrix whose rows are the given vectors.")
