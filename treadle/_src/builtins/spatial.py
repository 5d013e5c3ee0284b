"""Spatial (6D) builtins on ``spatial_vector`` (= 6-vector) and ``spatial_matrix`` (= 6x6 matrix) values.

A twist is ``(angular w, linear v)``, a wrench ``(torque, force)`` (see ``treadle/native/spatial.h``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import scalars
from .quat import f64, forms, make_type, scalar_template
from .registry import Interp, builtin

GROUP = "Spatial Math"


def np_spatial_cross(a: Any, b: Any) -> np.ndarray:
    """``spatial_cross``: ``(wa x wb, va x wb + wa x vb)``."""
    a, b = f64(a), f64(b)
    return np.concatenate([np.cross(a[:3], b[:3]), np.cross(a[3:], b[:3]) + np.cross(a[:3], b[3:])])


def np_spatial_cross_dual(a: Any, b: Any) -> np.ndarray:
    """``spatial_cross_dual``: ``(w x n + v x f, w x f)``."""
    a, b = f64(a), f64(b)
    return np.concatenate([np.cross(a[:3], b[:3]) + np.cross(a[3:], b[3:]), np.cross(a[:3], b[3:])])


def np_spatial_adjoint(r: Any, s: Any) -> np.ndarray:
    """``[[r, 0], [s, r]]``."""
    r, s = f64(r), f64(s)
    return np.block([[r, np.zeros((3, 3))], [s, r]])


def _spatial_vector_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    if not types:
        return make_type("v6", scalars.float32)
    return forms((("v3", "v3"), "v6"), (("s",) * 6, "v6"))(types, consts)


# Kernel-only, as in the reference: on the module, ``spatial_vector`` is the 6-vector type.
builtin("spatial_vector", group=GROUP, rule=_spatial_vector_rule, template=scalar_template, kernel_only=True, interpret=Interp.NONE,
        signature="spatial_vector(w: vec3, v: vec3) -> spatial_vector | spatial_vector(wx, wy, wz, vx, vy, vz) | "
        "spatial_vector()",
        doc="A 6D spatial vector from its angular (top) and linear (bottom) parts, from 6 components, or zero.")
builtin("spatial_top", group=GROUP, rule=forms((("v6",), "v3")), host=lambda a: a[:3],
        signature="spatial_top(svec: spatial_vector) -> vec3", doc="Components 0-2 (angular velocity or torque).")
builtin("spatial_bottom", group=GROUP, rule=forms((("v6",), "v3")), host=lambda a: a[3:],
        signature="spatial_bottom(svec: spatial_vector) -> vec3", doc="Components 3-5 (linear velocity or force).")
builtin("spatial_dot", group=GROUP, rule=forms((("v6", "v6"), "scalar")), host=lambda a, b: np.dot(f64(a), f64(b)),
        signature="spatial_dot(a: spatial_vector, b: spatial_vector) -> Float",
        doc="Dot product of two spatial vectors (a wrench dotted with a twist is a power).")
builtin("spatial_cross", group=GROUP, rule=forms((("v6", "v6"), "v6")), host=np_spatial_cross,
        signature="spatial_cross(a: spatial_vector, b: spatial_vector) -> spatial_vector",
        doc="Motion cross product of two twists: ``(wa x wb, va x wb + wa x vb)``.")
builtin("spatial_cross_dual", group=GROUP, rule=forms((("v6", "v6"), "v6")), host=np_spatial_cross_dual,
        signature="spatial_cross_dual(a: spatial_vector, b: spatial_vector) -> spatial_vector",
        doc="Force cross product of twist ``a = (w, v)`` and wrench ``b = (n, f)``: ``(w x n + v x f, w x f)``.")
builtin("spatial_adjoint", group=GROUP, rule=forms((("m33", "m33"), "m66")), host=np_spatial_adjoint,
        signature="spatial_adjoint(r: mat33, s: mat33) -> spatial_matrix",
        doc="The 6x6 block matrix ``[[r, 0], [s, r]]``.")
