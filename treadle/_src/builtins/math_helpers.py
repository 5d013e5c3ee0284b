"""The reference's 18 math helpers (``norm_huber``, ``quat_to_euler``, ``transform_decompose``, ...) as builtins.

The reference writes these as ``@wp.func`` helpers in Python (float32 only for most); here each is a builtin with a
C++ implementation and an adjoint, generic over the float type (``treadle/native/linalg.h``, ``quat.h``,
``transform.h``, ``spatial.h``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .quat import f64, forms, host_value, np_euler3, np_from_matrix, np_rotate, np_to_matrix, np_twist
from .registry import builtin


def _huber(v: Any, delta: Any = 1.0) -> Any:
    a, d = float(np.dot(f64(v), f64(v))), float(delta)
    return 0.5 * a if a <= d * d else d * (np.sqrt(a) - 0.5 * d)


def _pseudo_huber(v: Any, delta: Any = 1.0) -> Any:
    d = float(delta)
    return d * np.sqrt(1.0 + float(np.dot(f64(v), f64(v))) / (d * d))


def np_to_euler(q: Any, i: int, j: int, k: int) -> np.ndarray:
    """``quat_to_euler`` (direct method of Bernardes and Viollet, as in quat.h)."""
    q, i, j, k = f64(q), int(i), int(j), int(k)
    if not (0 <= i <= 2 and 0 <= j <= 2 and 0 <= k <= 2) or i == j or j == k:
        return np.zeros(3)
    proper = i == k
    kk = 3 - i - j if proper else k
    eps = (i - j) * (j - kk) * (kk - i) // 2
    w, qi, qj, qk = q[3], q[i], q[j], q[kk] * eps
    a, b, c, d = (w, qi, qj, qk) if proper else (w - qj, qi + qk, qj + w, qk - qi)
    t2 = 2 * np.arctan2(np.hypot(c, d), np.hypot(a, b))
    tp, tm = np.arctan2(b, a), np.arctan2(d, c)
    tol = 1.0 / 4096.0  # gimbal lock within 2^-12 rad, as the reference
    if t2 <= tol:
        t1, t2, t3 = 0.0, 0.0, 2 * tp
    elif t2 >= np.pi - tol:
        t1, t2, t3 = 0.0, np.pi, 2 * tm
    else:
        t1, t3 = tp - tm, tp + tm
    if not proper:
        t3, t2 = eps * t3, t2 - np.pi / 2
    e = np.zeros(3)
    e[i], e[j], e[kk] = t1, t2, t3
    return e


def _to_rpy(q: Any) -> np.ndarray:
    x, y, z, w = f64(q)
    return np.array([np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
                     np.arcsin(np.clip(2 * (w * y - z * x), -1, 1)),
                     np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))])


def _compose(p: Any, q: Any, s: Any) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = np_to_matrix(q) * f64(s)[None, :]
    m[:3, 3] = f64(p)
    return m


def _decompose(m: Any, *out: Any) -> Any:
    if out:
        raise TypeError("output arguments work in kernels only; use 'p, q, s = wp.transform_decompose(m)'")
    a = f64(m)
    s = np.linalg.norm(a[:3, :3], axis=0)
    q = np_from_matrix(a[:3, :3] / s[None, :])
    return host_value("v3", a[:3, 3], m), host_value("q", q, m), host_value("v3", s, m)


def _twist_xform(t: Any, x: Any) -> np.ndarray:
    t, x = f64(t), f64(x)
    w = np_rotate(t[3:], x[:3])
    return np.concatenate([w, np_rotate(t[3:], x[3:]) + np.cross(t[:3], w)])


def _wrench_xform(t: Any, x: Any) -> np.ndarray:
    t, x = f64(t), f64(x)
    f = np_rotate(t[3:], x[3:])
    return np.concatenate([np_rotate(t[3:], x[:3]) + np.cross(t[:3], f), f])


_NORM = forms((("vN",), "scalar"), (("vN", "s"), "scalar"))
_VG = "Vector Math"
builtin("norm_l1", group=_VG, rule=forms((("vN",), "scalar")), host=lambda v: np.sum(np.abs(f64(v))),
        signature="norm_l1(v: Vector) -> Float", doc="The L1 norm: the sum of the absolute components.")
builtin("norm_l2", group=_VG, rule=forms((("vN",), "scalar")), host=lambda v: np.linalg.norm(f64(v)),
        signature="norm_l2(v: Vector) -> Float", doc="The L2 (Euclidean) norm.")
builtin("norm_huber", group=_VG, rule=_NORM, host=_huber, signature="norm_huber(v: Vector, delta: Float = 1.0) -> Float",
        doc="Huber norm: ``|v|^2 / 2`` for ``|v| <= delta``, else ``delta (|v| - delta / 2)``.")
builtin("norm_pseudo_huber", group=_VG, rule=_NORM, host=_pseudo_huber,
        signature="norm_pseudo_huber(v: Vector, delta: Float = 1.0) -> Float",
        doc="Pseudo-Huber norm ``delta sqrt(1 + |v|^2 / delta^2)``.")
builtin("smooth_normalize", group=_VG, rule=forms((("vN",), "same"), (("vN", "s"), "same")),
        host=lambda v, delta=1.0: f64(v) / _pseudo_huber(v, delta),
        signature="smooth_normalize(v: Vector, delta: Float = 1.0) -> Vector",
        doc="``v / norm_pseudo_huber(v, delta)``: a normalization that stays smooth at zero.")

_QG = "Quaternion Math"
builtin("quat_from_euler", group=_QG, rule=forms((("v3", "i", "i", "i"), "q")),
        host=lambda e, i, j, k: np_euler3(int(i), int(j), int(k), *(float(e[int(x)]) for x in (i, j, k))),
        signature="quat_from_euler(e: vec3, i: int, j: int, k: int) -> Quaternion",
        doc="The rotation by ``e[i]``, ``e[j]``, ``e[k]`` about the fixed axes i, j, k in that order "
            "(``qk * qj * qi``; ``e[i]`` twice for proper sequences i == k).")
builtin("quat_to_euler", group=_QG, rule=forms((("q", "i", "i", "i"), "v3")), host=np_to_euler,
        signature="quat_to_euler(q: Quaternion, i: int, j: int, k: int) -> vec3",
        doc="Euler angles of a rotation for the fixed-axis sequence i, j, k (see quat_from_euler); at gimbal lock "
            "the first angle is zero.")
builtin("quat_to_rpy", group=_QG, rule=forms((("q",), "v3")), host=_to_rpy,
        signature="quat_to_rpy(q: Quaternion) -> vec3", doc="Roll, pitch and yaw of a rotation (inverse of quat_rpy).")
builtin("quat_twist", group=_QG, rule=forms((("v3", "q"), "q")), host=np_twist,
        signature="quat_twist(axis: vec3, q: Quaternion) -> Quaternion",
        doc="The twist of ``q`` about the unit ``axis`` (swing-twist decomposition).")
builtin("quat_twist_angle", group=_QG, rule=forms((("v3", "q"), "scalar")),
        host=lambda axis, q: 2 * np.arctan2(np.linalg.norm(np_twist(axis, q)[:3]), np_twist(axis, q)[3]),
        signature="quat_twist_angle(axis: vec3, q: Quaternion) -> Float",
        doc="Unsigned twist angle of ``q`` about ``axis``: ``2 acos(quat_twist(axis, q).w)`` (computed with atan2, "
            "accurate for small angles).")
builtin("quat_twist_angle_signed", group=_QG, rule=forms((("v3", "q"), "scalar")),
        host=lambda axis, q: 2 * np.arctan2(np.dot(np_twist(axis, q)[:3], f64(axis)), np_twist(axis, q)[3]),
        signature="quat_twist_angle_signed(axis: vec3, q: Quaternion) -> Float",
        doc="Signed twist angle of ``q`` about ``axis`` (right-hand rule).")

_TG = "Transformations"
builtin("transform_compose", group=_TG, rule=forms((("v3", "q", "v3"), "m44")), host=_compose,
        signature="transform_compose(position: vec3, rotation: Quaternion, scale: vec3) -> mat44",
        doc="The 4x4 matrix ``[[R diag(scale), position], [0, 1]]``.")
builtin("transform_decompose", group=_TG, rule=forms((("m44",), ("v3", "q", "v3")), (("m44", "v3", "q", "v3"), None)),
        ref_args=(1, 2, 3), host=_decompose,
        signature="transform_decompose(m: mat44) -> tuple(vec3, Quaternion, vec3) | transform_decompose(m, p, q, s)",
        doc="Position, rotation and scale of a 4x4 matrix (inverse of transform_compose); in kernels the results "
            "can also be stored in output variables (without gradient), as for svd3.")
builtin("transform_from_matrix", group=_TG, rule=forms((("m44",), "t")),
        host=lambda m: np.concatenate([f64(m)[:3, 3], np_from_matrix(m)]),
        signature="transform_from_matrix(mat: mat44) -> Transformation",
        doc="The transform of a 4x4 rigid matrix: translation from the last column, rotation from the 3x3 block.")
builtin("transform_to_matrix", group=_TG, rule=forms((("t",), "m44")),
        host=lambda t: _compose(f64(t)[:3], f64(t)[3:], np.ones(3)),
        signature="transform_to_matrix(xform: Transformation) -> mat44", doc="The 4x4 matrix ``[[R, p], [0, 1]]``.")

_SG = "Spatial Math"
builtin("transform_twist", group=_SG, rule=forms((("t", "v6"), "v6")), host=_twist_xform,
        signature="transform_twist(t: Transformation, x: spatial_vector) -> spatial_vector",
        doc="A twist ``(w, v)`` in the frame of ``t = (p, R)``: ``(R w, R v + p x R w)``.")
builtin("transform_wrench", group=_SG, rule=forms((("t", "v6"), "v6")), host=_wrench_xform,
        signature="transform_wrench(t: Transformation, x: spatial_vector) -> spatial_vector",
        doc="A wrench ``(tau, f)`` in the frame of ``t = (p, R)``: ``(R tau + p x R f, R f)``.")
builtin("velocity_at_point", group=_SG, rule=forms((("v6", "v3"), "v3")),
        host=lambda qd, r: f64(qd)[3:] + np.cross(f64(qd)[:3], f64(r)),
        signature="velocity_at_point(qd: spatial_vector, r: vec3) -> vec3",
        doc="Linear velocity ``v + w x r`` of a point at offset ``r`` on a body with twist ``qd = (w, v)``.")
