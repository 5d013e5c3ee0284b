"""Transform builtins (``transformation``, ``transform_point``, ...) and the host utility ``transform_expand``.

A transform is 7 scalars, the translation ``p`` then the rotation quaternion ``q``; it maps ``x`` to
``quat_rotate(q, x) + p`` (see ``treadle/native/transform.h``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..types import scalars
from .quat import dtype_rule, f64, forms, make_type, np_qconj, np_qmul, np_rotate, scalar_template
from .registry import Interp, builtin

GROUP = "Transformations"


def transform_expand(t: Sequence[float]) -> Any:
    """Expand a flat 7-element sequence ``(px, py, pz, qx, qy, qz, qw)`` into a :class:`treadle.transformf`."""
    from ..types.quat import transformf

    values = [float(x) for x in np.asarray(t, dtype=np.float64).reshape(-1)]
    if len(values) != 7:
        raise ValueError(f"transform_expand() needs 7 values, got {len(values)}")
    return transformf(*values)


def np_tf_point(t: Any, x: Any) -> np.ndarray:
    """``transform_point`` for a transform (7 values) or a 4x4 matrix."""
    t = f64(t)
    if t.shape == (4, 4):
        return t[:3, :3] @ f64(x) + t[:3, 3]
    return np_rotate(t[3:], x) + t[:3]


def np_tf_vector(t: Any, x: Any) -> np.ndarray:
    """``transform_vector`` for a transform (7 values) or a 4x4 matrix."""
    t = f64(t)
    if t.shape == (4, 4):
        return t[:3, :3] @ f64(x)
    return np_rotate(t[3:], x)


def np_tf_mul(a: Any, b: Any) -> np.ndarray:
    """``transform_multiply``."""
    a, b = f64(a), f64(b)
    return np.concatenate([a[:3] + np_rotate(a[3:], b[:3]), np_qmul(a[3:], b[3:])])


def np_tf_inverse(t: Any) -> np.ndarray:
    """``transform_inverse``."""
    t = f64(t)
    qi = np_qconj(t[3:])
    return np.concatenate([-np_rotate(qi, t[:3]), qi])


def _transformation_host(*args: Any) -> Any:
    if not args:
        return np.zeros(7)
    if len(args) == 1 and np.ndim(args[0]) == 0:
        return np.full(7, f64(args[0]))
    if len(args) == 1:
        return np.concatenate([f64(args[0]), [0.0, 0.0, 0.0, 1.0]])
    if len(args) == 2:
        return np.concatenate([f64(args[0]), f64(args[1])])
    return f64(args)


def _transformation_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    if not types:
        return make_type("t", scalars.float32)
    return forms((("s",), "t"), (("v3",), "t"), (("v3", "q"), "t"), (("s",) * 7, "t"))(types, consts)


def _set_part(lo: int, hi: int) -> Callable[..., None]:
    """Python scope: update components [lo, hi) of the transform object itself.

    The exported call passes the caller's objects (not NumPy copies) to hosts marked ``_treadle_inplace_``.
    """

    def set_part(t: Any, v: Any) -> None:
        if getattr(type(t), "_wp_generic_type_str_", None) != "transform_t":
            raise TypeError(f"expected a transform to update in place, got {type(t).__name__}")
        values = list(v)
        if len(values) != hi - lo:
            raise ValueError(f"expected {hi - lo} components, got {len(values)}")
        t[lo:hi] = values

    set_part._treadle_inplace_ = True  # type: ignore[attr-defined]
    return set_part


builtin("transformation", group=GROUP, rule=_transformation_rule, template=scalar_template, host=_transformation_host,
        signature="transformation(p: vec3, q: Quaternion) -> Transformation | transformation(p) | "
        "transformation(*args: Float) | transformation()",
        doc="Construct a transform from translation ``p`` and rotation ``q`` (identity when omitted), from 7 "
            "components, from one value for all components, or zero with no arguments.")
builtin("transform_identity", group=GROUP, rule=dtype_rule("t"), template=scalar_template, differentiable=False,
        static_args=1,
        host=lambda dtype=None: np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
        signature="transform_identity(dtype=float32) -> Transformation",
        doc="The identity transform: zero translation, identity rotation.")
builtin("transform_get_translation", group=GROUP, rule=forms((("t",), "v3")), host=lambda t: t[:3],
        signature="transform_get_translation(xform: Transformation) -> vec3", doc="The translation ``xform.p``.")
builtin("transform_get_rotation", group=GROUP, rule=forms((("t",), "q")), host=lambda t: t[3:],
        signature="transform_get_rotation(xform: Transformation) -> Quaternion",
        doc="The rotation ``xform.q``, as stored (not normalized).")
builtin("transform_set_translation", group=GROUP, rule=forms((("t", "v3"), None)), ref_args=(0,),
        interpret=Interp.IN_PLACE, twin="transform_set_translation_copy",
        host=_set_part(0, 3), signature="transform_set_translation(xform: Transformation, p: vec3)",
        doc="Set the translation of the transform variable ``xform`` in place (``xform.p = p``).")
builtin("transform_set_rotation", group=GROUP, rule=forms((("t", "q"), None)), ref_args=(0,),
        interpret=Interp.IN_PLACE, twin="transform_set_rotation_copy",
        host=_set_part(3, 7), signature="transform_set_rotation(xform: Transformation, q: Quaternion)",
        doc="Set the rotation of the transform variable ``xform`` in place (``xform.q = q``).")
builtin("transform_set_translation_copy", group=GROUP, rule=forms((("t", "v3"), "t")),
        host=lambda t, p: np.concatenate([p, t[3:]]),
        signature="transform_set_translation_copy(xform: Transformation, p: vec3) -> Transformation",
        doc="A copy of ``xform`` with translation ``p`` (what ``xform.p = p`` computes).")
builtin("transform_set_rotation_copy", group=GROUP, rule=forms((("t", "q"), "t")),
        host=lambda t, q: np.concatenate([t[:3], q]),
        signature="transform_set_rotation_copy(xform: Transformation, q: Quaternion) -> Transformation",
        doc="A copy of ``xform`` with rotation ``q`` (what ``xform.q = q`` computes).")
builtin("transform_multiply", group=GROUP, rule=forms((("t", "t"), "t")), host=np_tf_mul,
        signature="transform_multiply(a: Transformation, b: Transformation) -> Transformation",
        doc="The composition ``a * b`` (``b`` applied first): translation ``a.p + quat_rotate(a.q, b.p)``, "
            "rotation ``a.q * b.q``.")
builtin("transform_point", group=GROUP, rule=forms((("t", "v3"), "v3"), (("m44", "v3"), "v3")), host=np_tf_point,
        signature="transform_point(xform: Transformation | mat44, point: vec3) -> vec3",
        doc="Transform a point: ``quat_rotate(xform.q, point) + xform.p``, or ``(mat * (point, 1)).xyz``.")
builtin("transform_vector", group=GROUP, rule=forms((("t", "v3"), "v3"), (("m44", "v3"), "v3")), host=np_tf_vector,
        signature="transform_vector(xform: Transformation | mat44, vec: vec3) -> vec3",
        doc="Transform a direction: ``quat_rotate(xform.q, vec)``, or ``(mat * (vec, 0)).xyz``.")
builtin("transform_inverse", group=GROUP, rule=forms((("t",), "t")), host=np_tf_inverse,
        signature="transform_inverse(xform: Transformation) -> Transformation",
        doc="The inverse transform (the rotation must have unit length).")
