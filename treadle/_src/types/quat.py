"""Quaternion, transform and spatial types.

- ``quaternion(dtype)``: 4 components in ``x, y, z, w`` order (``w`` is the real part);
  ``_wp_generic_type_str_ = "quat_t"``, ``_wp_type_params_ = [dtype]``. Aliases ``quat``/``quath``/``quatf``/``quatd``.
- ``transformation(dtype)``: 7 components, the translation ``p`` (vec3) then the rotation ``q`` (quat);
  ``_wp_generic_type_str_ = "transform_t"``, ``_wp_type_params_ = [dtype]``. Aliases ``transform``/``transformh``/
  ``transformf``/``transformd``. ``.p`` and ``.q`` read and write the two parts on the host.
- ``spatial_vector*`` and ``spatial_matrix*`` are the plain ``vector(6, t)`` and ``matrix((6, 6), t)`` types.

Both families derive from :class:`~treadle._src.types.vector.vec_base`: indexing, equality, printing and
component-wise ``+``/``-``/scalar ``*`` behave as for vectors. ``q1 * q2`` is the quaternion product and
``t1 * t2`` the composition of transforms, as in kernels.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import scalars
from .matrix import matrix
from .vector import (
    COMPOSITE_FACTORIES,
    SCALAR_SUFFIX,
    cached_type,
    flatten_values,
    is_number,
    make_composite_class,
    normalize_scalar,
    vec_base,
    vector,
)


# The host forms evaluate the native functions' expressions term by term in the same order (elementwise NumPy
# operations round each step to the component type, as the C++ does), so a product computed on the host equals the
# one a kernel or the native library computes, bit for bit.
def _dot3(a: np.ndarray, b: np.ndarray) -> Any:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], dtype=a.dtype)


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of two ``(x, y, z, w)`` quaternions."""
    p, q = a, b
    return np.array([p[3] * q[0] + q[3] * p[0] + p[1] * q[2] - p[2] * q[1],
                     p[3] * q[1] + q[3] * p[1] + p[2] * q[0] - p[0] * q[2],
                     p[3] * q[2] + q[3] * p[2] + p[0] * q[1] - p[1] * q[0],
                     p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]], dtype=a.dtype)


def _quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by the unit quaternion ``q``."""
    u, w = q[:3], q[3]
    two, one = q.dtype.type(2), q.dtype.type(1)
    return (v * (two * w * w - one) + _cross3(u, v) * (two * w) + u * (two * _dot3(u, v))).astype(q.dtype)


class quat_base(vec_base):
    """Base class of quaternion types."""

    _type_ = ctypes.c_float
    _length_ = 0
    _wp_generic_type_str_ = "quat_t"

    def __new__(cls, *args: Any, dtype: Any = None) -> Any:
        # quat(x, y, z, w, dtype=wp.float64): an instance of the quaternion type of that precision.
        if dtype is not None:
            target = quaternion(dtype)
            if target is not cls:
                return target(*args)
        return super().__new__(cls)

    def __init__(self, *args: Any, dtype: Any = None) -> None:
        # Host convenience beyond the reference: quat(vec3, w) as in kernels.
        if len(args) == 2 and not is_number(args[0]) and is_number(args[1]):
            args = (*flatten_values(args[0]), args[1])
        super().__init__(*args)

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, quat_base):
            self._operand(other, "*")  # checks the scalar type
            with np.errstate(all="ignore"):
                return self._result(_quat_mul(self._to_numpy(), other._to_numpy()))
        return super().__mul__(other)


class transform_base(vec_base):
    """Base class of transform types: translation ``p`` (3 components) then rotation ``q`` (4 components)."""

    _type_ = ctypes.c_float
    _length_ = 0
    _wp_generic_type_str_ = "transform_t"
    _xyzw_ = False  # no .x/.y/.z/.w on transforms (as in the reference)

    def __new__(cls, *args: Any, p: Any = None, q: Any = None, dtype: Any = None) -> Any:
        # transform(p, q, dtype=wp.float64): an instance of the transform type of that precision.
        if dtype is not None:
            target = transformation(dtype)
            if target is not cls:
                return target(*args, p=p, q=q)
        return super().__new__(cls)

    def __init__(self, *args: Any, p: Any = None, q: Any = None, dtype: Any = None) -> None:
        if p is not None or q is not None:
            if len(args) == 1 and p is None:  # transform((x, y, z), q=...)
                p, args = args[0], ()
            if args:
                raise TypeError("transform() takes positional components, or p (positionally or by keyword) and q")
            args = (p if p is not None else (0, 0, 0), q if q is not None else (0, 0, 0, 1))
        if not args:
            args = (0, 0, 0, 0, 0, 0, 1)
        elif len(args) == 1 and not is_number(args[0]):
            values = flatten_values(args[0])
            if len(values) == 3:  # a translation alone: identity rotation
                args = (*values, 0, 0, 0, 1)
        elif len(args) == 2 and not is_number(args[0]) and not is_number(args[1]):
            pv, qv = flatten_values(args[0]), flatten_values(args[1])
            if len(pv) != 3 or len(qv) != 4:
                raise ValueError(
                    f"transform(p, q) needs a 3-component p and a 4-component q, got {len(pv)} and {len(qv)}"
                )
            args = (*pv, *qv)
        super().__init__(*args)

    @property
    def p(self) -> Any:
        """The translation (a copy, as a vec3 of the same scalar type)."""
        return vector(3, self._wp_scalar_type_)._from_numpy(self._to_numpy()[:3])

    @p.setter
    def p(self, value: Any) -> None:
        self[0:3] = value

    @property
    def q(self) -> Any:
        """The rotation (a copy, as a quaternion of the same scalar type)."""
        return quaternion(self._wp_scalar_type_)._from_numpy(self._to_numpy()[3:])

    @q.setter
    def q(self, value: Any) -> None:
        self[3:7] = value

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, transform_base):
            self._operand(other, "*")  # checks the scalar type
            a, b = self._to_numpy(), other._to_numpy()
            with np.errstate(all="ignore"):
                p = a[:3] + _quat_rotate(a[3:], b[:3])
                q = _quat_mul(a[3:], b[3:])
            return self._result(np.concatenate([p, q]))
        return super().__mul__(other)


def _suffix(dtype: Any) -> str:
    return SCALAR_SUFFIX.get(dtype) or f"_{dtype.__name__}"


def quaternion(dtype: Any) -> type[quat_base]:
    """The quaternion type with components of scalar type ``dtype`` (cached)."""
    dtype = normalize_scalar(dtype)

    def make() -> type:
        return make_composite_class(
            f"quat{_suffix(dtype)}", quat_base, 4, dtype, {"_shape_": (4,), "_wp_type_params_": [dtype]}
        )

    return cached_type(("quat", dtype), make)


def transformation(dtype: Any) -> type[transform_base]:
    """The transform type (translation + rotation) with components of scalar type ``dtype`` (cached)."""
    dtype = normalize_scalar(dtype)

    def make() -> type:
        return make_composite_class(
            f"transform{_suffix(dtype)}", transform_base, 7, dtype, {"_shape_": (7,), "_wp_type_params_": [dtype]}
        )

    return cached_type(("transform", dtype), make)


quath = quaternion(scalars.float16)
quatf = quaternion(scalars.float32)
quatd = quaternion(scalars.float64)
quat = quatf

transformh = transformation(scalars.float16)
transformf = transformation(scalars.float32)
transformd = transformation(scalars.float64)
transform = transformf

spatial_vectorh = vector(6, scalars.float16)
spatial_vectorf = vector(6, scalars.float32)
spatial_vectord = vector(6, scalars.float64)
spatial_vector = spatial_vectorf

spatial_matrixh = matrix((6, 6), scalars.float16)
spatial_matrixf = matrix((6, 6), scalars.float32)
spatial_matrixd = matrix((6, 6), scalars.float64)
spatial_matrix = spatial_matrixf


# Callable in kernels as constructors (compiler/lower_call.py call_type_factory).
quaternion._treadle_type_factory_ = "quaternion"  # type: ignore[attr-defined]
transformation._treadle_type_factory_ = "transformation"  # type: ignore[attr-defined]
COMPOSITE_FACTORIES["quat"] = quaternion  # unpickling (vector.class_from_key)
COMPOSITE_FACTORIES["transform"] = transformation
