"""Quaternion builtins, and the signature helpers shared by the quaternion, transform, spatial and linalg groups.

Quaternions are ``(x, y, z, w)`` with ``w`` the real part (see ``treadle/native/quat.h``). Host implementations
compute in float64 with NumPy and mirror the C++ code, so Python-scope calls and kernels agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import TupleT, generic_kind, is_float, is_int, normalize_annotation, scalar_of, type_str
from .registry import NOT_CONST, NoMatch, builtin, need

GROUP = "Quaternion Math"

# ----------------------------------------------------------------------------------------------------------------
# Signatures: argument kinds relative to one float scalar type T
# ----------------------------------------------------------------------------------------------------------------
# "s": T, "i": any integer, "v2"/"v3"/"v4"/"v6": vectors of T, "m22"/"m33"/"m44"/"m66": matrices of T,
# "q": quaternion of T, "t": transform of T, "vN": a float vector of any length, "mNN": a square matrix (2-4).


def make_type(kind: str, st: Any) -> Any:
    """The type of a signature kind for scalar type ``st``."""
    from ..types.matrix import matrix
    from ..types.quat import quaternion, transformation
    from ..types.vector import vector

    if isinstance(kind, tuple):
        return TupleT(tuple(make_type(k, st) for k in kind))
    if kind == "s":
        return st
    if kind == "q":
        return quaternion(st)
    if kind == "t":
        return transformation(st)
    if kind[0] == "v":
        return vector(int(kind[1:]), st)
    if kind[0] == "m":
        return matrix((int(kind[1]), int(kind[2])), st)
    raise ValueError(kind)


def _fits(kind: str, t: Any, st: Any) -> bool:
    if kind == "i":
        return is_int(t)
    if kind == "vN":
        return generic_kind(t) == "vec_t" and scalar_of(t) == st
    if kind == "mNN":
        return generic_kind(t) == "mat_t" and t._shape_[0] == t._shape_[1] and t._shape_[0] in (2, 3, 4) and \
            scalar_of(t) == st
    return t == make_type(kind, st)


def forms(*overloads: tuple[Sequence[str], Any]) -> Callable[[Sequence[Any], Sequence[Any]], Any]:
    """A type rule from ``(argument kinds, result kind)`` pairs; all kinds share one float scalar type.

    The result kind may be a tuple of kinds (a tuple result), ``None``, ``"same"`` (the first argument's type) or
    ``"scalar"`` (the scalar type).
    """
    want = " | ".join("(" + ", ".join(a) + ")" for a, _ in overloads)

    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        for args, ret in overloads:
            if len(args) != len(types):
                continue
            first = next((t for k, t in zip(args, types) if k != "i"), None)
            st = scalar_of(first) if first is not None else scalars.float32
            if not is_float(st) or not all(_fits(k, t, st) for k, t in zip(args, types)):
                continue
            if ret is None:
                return None
            if ret == "same":
                return types[0]
            if ret == "scalar":
                return st
            if isinstance(ret, tuple):
                return TupleT(tuple(make_type(k, st) for k in ret))
            return make_type(ret, st)
        raise NoMatch(_Mismatch(want, types))

    return rule


class _Mismatch:
    """The message of a ``forms`` rule's NoMatch, formatted only when read (type rules are probed a lot)."""

    def __init__(self, want: str, types: Sequence[Any]) -> None:
        self.want, self.types = want, tuple(types)

    def __str__(self) -> str:
        return f"expected arguments {self.want} of one float type, got ({', '.join(type_str(t) for t in self.types)})"


def dtype_rule(kind: str) -> Callable[[Sequence[Any], Sequence[Any]], Any]:
    """Rule of ``quat_identity(dtype=float32)``-style builtins (the dtype is a type, not a value)."""

    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        need(len(types) <= 1, "expected at most one argument (dtype)")
        if not types:
            return make_type(kind, scalars.float32)
        dt = consts[0] if consts and consts[0] is not NOT_CONST else types[0]
        need(dt is not None, "dtype must be a type such as wp.float64")  # kernels pass it as a static argument
        dt = normalize_annotation(dt)
        need(is_float(dt), f"dtype must be a float type, got {type_str(dt)}")
        return make_type(kind, dt)

    return rule


def scalar_template(types: Sequence[Any], ret: Any) -> tuple[Any, ...]:
    """C++ template argument ``<T>`` for builtins whose overloads cannot deduce T (constructors)."""
    return (scalar_of(ret),)


# ----------------------------------------------------------------------------------------------------------------
# NumPy helpers (float64), shared by the host implementations of the groups
# ----------------------------------------------------------------------------------------------------------------


def f64(x: Any) -> np.ndarray:
    """``x`` as a float64 array."""
    return np.asarray(x, dtype=np.float64)


def host_value(kind: str, x: Any, like: Any) -> Any:
    """A host value of signature kind ``kind`` holding ``x``, in the precision of NumPy value ``like``."""
    st = scalars.scalar_from_numpy(np.asarray(like).dtype)
    if kind == "s":
        return float(np.asarray(x, dtype=st._np_))
    t = make_type(kind, st)
    return t(*np.asarray(x, dtype=st._np_).reshape(-1).tolist())


def np_qmul(a: Any, b: Any) -> np.ndarray:
    """Hamilton product of ``(x, y, z, w)`` quaternions."""
    a, b = f64(a), f64(b)
    v = a[3] * b[:3] + b[3] * a[:3] + np.cross(a[:3], b[:3])
    return np.concatenate([v, [a[3] * b[3] - np.dot(a[:3], b[:3])]])


def np_qconj(q: Any) -> np.ndarray:
    """The conjugate (``quat_inverse``)."""
    q = f64(q)
    return np.array([-q[0], -q[1], -q[2], q[3]])


def np_rotate(q: Any, v: Any, sign: float = 1.0) -> np.ndarray:
    """``quat_rotate`` (``sign=1``) or ``quat_rotate_inv`` (``sign=-1``), same formula as the C++ code."""
    q, v = f64(q), f64(v)
    u, w = q[:3], q[3]
    return v * (2 * w * w - 1) + sign * np.cross(u, v) * (2 * w) + u * (2 * np.dot(u, v))


def np_to_matrix(q: Any) -> np.ndarray:
    """``quat_to_matrix``."""
    return np.stack([np_rotate(q, e) for e in np.eye(3)], axis=1)


def np_normalize(v: Any) -> np.ndarray:
    """``v / |v|`` (zero for zero)."""
    v = f64(v)
    n = np.sqrt(np.dot(v, v))
    return v / n if n > 0 else np.zeros_like(v)


def np_from_matrix(m: Any) -> np.ndarray:
    """``quat_from_matrix``: Shepperd's method on the top-left 3x3 block, then normalized."""
    m = f64(m)[:3, :3]
    d = np.diag(m)
    if d.sum() > 0:
        b = 3
    elif d[0] > d[1] and d[0] > d[2]:
        b = 0
    else:
        b = 1 if d[1] > d[2] else 2
    signs = [1.0 if (b == 3 or b == i) else -1.0 for i in range(3)]
    r = np.sqrt(1.0 + np.dot(signs, d))
    q = np.zeros(4)
    for c in range(4):
        if c == b:
            q[c] = 0.5 * r
        elif c != 3 and b != 3:
            q[c] = (m[c, b] + m[b, c]) / (2 * r)
        else:
            a = b if c == 3 else c
            i, j = (a + 2) % 3, (a + 1) % 3
            q[c] = (m[i, j] - m[j, i]) / (2 * r)
    return np_normalize(q)


def np_axis_quat(axis: int, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about coordinate axis ``axis``."""
    q = np.zeros(4)
    q[axis] = np.sin(0.5 * angle)
    q[3] = np.cos(0.5 * angle)
    return q


def np_euler3(i: int, j: int, k: int, ai: float, aj: float, ak: float) -> np.ndarray:
    """``qk qj qi``."""
    return np_qmul(np_axis_quat(k, ak), np_qmul(np_axis_quat(j, aj), np_axis_quat(i, ai)))


def np_twist(axis: Any, q: Any) -> np.ndarray:
    """``quat_twist``."""
    axis, q = f64(axis), f64(q)
    return np_normalize(np.concatenate([axis * np.dot(q[:3], axis), [q[3]]]))


def _axis_angle(q: Any) -> tuple[np.ndarray, float]:
    q = f64(q)
    sign = -1.0 if q[3] < 0 else 1.0
    v = q[:3] * sign
    s = np.sqrt(np.dot(v, v))
    return (v / s if s > 0 else np.zeros(3)), 2.0 * np.arctan2(s, sign * q[3])


def _host_axis_angle(q: Any, *out: Any) -> Any:
    if out:
        raise TypeError("output arguments work in kernels only; use 'axis, angle = wp.quat_to_axis_angle(q)'")
    axis, angle = _axis_angle(q)
    return host_value("v3", axis, q), host_value("s", angle, q)


def _slerp(a: Any, b: Any, t: Any) -> np.ndarray:
    a = f64(a)
    p = np_qmul(np_qconj(a), b)
    sign = -1.0 if p[3] < 0 else 1.0
    v, w = p[:3] * sign, p[3] * sign
    s = np.sqrt(np.dot(v, v))
    phi = float(t) * np.arctan2(s, w)
    k = np.sin(phi) / s if s > np.finfo(np.asarray(t).dtype).eps * w else (float(t) / w if w > 0 else 0.0)
    return np_qmul(a, np.concatenate([v * k, [np.cos(phi)]]))


def _between(a: Any, b: Any) -> np.ndarray:
    an, bn = np_normalize(a), np_normalize(b)
    return np_normalize(np.concatenate([np.cross(an, bn), [1.0 + np.dot(an, bn)]]))


def _quaternion_host(*args: Any) -> Any:
    if not args:
        return np.zeros(4, dtype=np.float32)
    if len(args) == 2:
        return np.concatenate([f64(args[0]), [f64(args[1])]])
    if len(args) == 1:
        return args[0]
    return f64(args)


# ----------------------------------------------------------------------------------------------------------------
# Declarations
# ----------------------------------------------------------------------------------------------------------------


def _quaternion_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    if not types:
        return make_type("q", scalars.float32)
    if len(types) == 1 and generic_kind(types[0]) == "quat_t":
        return types[0]
    return forms((("s", "s", "s", "s"), "q"), (("v3", "s"), "q"))(types, consts)


builtin("quaternion", group=GROUP, rule=_quaternion_rule, template=scalar_template, host=_quaternion_host,
        signature="quaternion(x: Float, y: Float, z: Float, w: Float) -> Quaternion | quaternion(ijk: vec3, "
        "real: Float) | quaternion(quat: Quaternion) | quaternion()",
        doc="Construct a quaternion from its components, from its vector and real parts, or as a copy; with no "
            "arguments, the zero quaternion (``(x, y, z, w)`` order).")
builtin("quat_identity", group=GROUP, rule=dtype_rule("q"), template=scalar_template, differentiable=False,
        static_args=1,
        host=lambda dtype=None: np.array([0.0, 0.0, 0.0, 1.0]), signature="quat_identity(dtype=float32) -> Quaternion",
        doc="The identity quaternion ``(0, 0, 0, 1)``.")
builtin("quat_from_axis_angle", group=GROUP, rule=forms((("v3", "s"), "q")),
        host=lambda axis, angle: np.concatenate([f64(axis) * np.sin(0.5 * angle), [np.cos(0.5 * angle)]]),
        signature="quat_from_axis_angle(axis: vec3, angle: Float) -> Quaternion",
        doc="The rotation of ``angle`` radians about the unit ``axis``: ``(axis * sin(angle / 2), cos(angle / 2))``.")
builtin("quat_to_axis_angle", group=GROUP, rule=forms((("q",), ("v3", "s")), (("q", "v3", "s"), None)),
        ref_args=(1, 2), host=_host_axis_angle,
        signature="quat_to_axis_angle(quat: Quaternion) -> tuple(vec3, Float) | quat_to_axis_angle(quat, axis, angle)",
        doc="The axis and angle (in [0, pi]) of a rotation quaternion, returned as a tuple or stored in the output "
            "arguments ``axis`` and ``angle`` (then without gradient). The axis is zero for a zero angle.")
builtin("quat_from_matrix", group=GROUP, rule=forms((("m33",), "q"), (("m44",), "q")), host=np_from_matrix,
        signature="quat_from_matrix(mat: mat33 | mat44) -> Quaternion",
        doc="The unit quaternion of a rotation matrix (of the top-left 3x3 block of a 4x4 matrix).")
builtin("quat_to_matrix", group=GROUP, rule=forms((("q",), "m33")), host=np_to_matrix,
        signature="quat_to_matrix(quat: Quaternion) -> mat33",
        doc="The 3x3 rotation matrix of a unit quaternion (``m @ v == quat_rotate(quat, v)``).")
builtin("quat_rpy", group=GROUP, rule=forms((("s", "s", "s"), "q")),
        host=lambda r, p, y: np_euler3(0, 1, 2, float(r), float(p), float(y)),
        signature="quat_rpy(roll: Float, pitch: Float, yaw: Float) -> Quaternion",
        doc="The rotation by roll about x, then pitch about y, then yaw about z (fixed axes): ``qz * qy * qx``.")
builtin("quat_inverse", group=GROUP, rule=forms((("q",), "q")), host=np_qconj,
        signature="quat_inverse(quat: Quaternion) -> Quaternion",
        doc="The conjugate ``(-x, -y, -z, w)``, the inverse of a unit quaternion.")
builtin("quat_rotate", group=GROUP, rule=forms((("q", "v3"), "v3")), host=np_rotate,
        signature="quat_rotate(quat: Quaternion, vec: vec3) -> vec3", doc="Rotate ``vec`` by a unit quaternion.")
builtin("quat_rotate_inv", group=GROUP, rule=forms((("q", "v3"), "v3")), host=lambda q, v: np_rotate(q, v, -1.0),
        signature="quat_rotate_inv(quat: Quaternion, vec: vec3) -> vec3",
        doc="Rotate ``vec`` by the inverse of a unit quaternion.")
builtin("quat_slerp", group=GROUP, rule=forms((("q", "q", "s"), "q")), host=_slerp,
        signature="quat_slerp(a: Quaternion, b: Quaternion, t: Float) -> Quaternion",
        doc="Spherical linear interpolation along the shortest arc from ``a`` (t = 0) to +-normalize(b) (t = 1).")
builtin("quat_between_vectors", group=GROUP, rule=forms((("v3", "v3"), "q")), host=_between,
        signature="quat_between_vectors(a: vec3, b: vec3) -> Quaternion",
        doc="The shortest-arc rotation taking the direction of ``a`` onto that of ``b`` (opposite directions are "
            "not handled).")
