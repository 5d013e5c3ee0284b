"""Scalar math: trigonometry, exponentials, rounding, min/max/clamp, interpolation.

Documented semantics kept from the reference: ``asin``/``acos`` clamp their argument to [-1, 1]; ``round`` rounds
half away from zero and keeps the type; ``sign(x)`` is -1 for negative x and 1 otherwise; ``step(x)`` is 1 for
negative x and 0 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import is_composite, is_float, is_int, is_vector, scalar_of, type_str
from .registry import Interp, arity, builtin, need, same

GROUP = "Scalar Math"


def _float_unary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(is_float(types[0]), f"expected a float, got {type_str(types[0])}")
    return types[0]


def _num_unary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(is_float(t) or is_int(t) or is_vector(t), f"expected a number or vector, got {type_str(t)}")
    return t


def _scalar_unary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(is_float(t) or is_int(t), f"expected a number, got {type_str(t)}")
    return t


def _float_binary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    need(is_float(types[0]), f"expected floats, got {type_str(types[0])}")
    return same(types)


def _float_pred(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(is_float(t) or (is_composite(t) and is_float(scalar_of(t))), f"expected a float, got {type_str(t)}")
    return scalars.bool


def _minmax(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    if len(types) == 1:
        need(is_vector(types[0]), f"min/max of one argument needs a vector, got {type_str(types[0])}")
        return scalar_of(types[0])
    arity(types, 2)
    t = same(types)
    need(is_float(t) or is_int(t) or is_vector(t), f"expected numbers or vectors, got {type_str(t)}")
    return t


def _clamp(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 3)
    t = same(types)
    need(is_float(t) or is_int(t), f"expected numbers, got {type_str(t)}")
    return t


def _lerp(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 3)
    a, b, t = types
    need(a == b, f"lerp endpoints must have the same type, got {type_str(a)} and {type_str(b)}")
    need(is_float(scalar_of(a)) and t == scalar_of(a), f"lerp needs float values and a {type_str(scalar_of(a))} weight")
    return a


def _smoothstep(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 3)
    t = same(types)
    need(is_float(t), f"expected floats, got {type_str(t)}")
    return t


def _np_round(x: Any) -> Any:
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x)


def _np_sign(x: Any) -> Any:
    return np.where(x < 0, -1, 1).astype(np.asarray(x).dtype)


def _np_step(x: Any) -> Any:
    return np.where(x < 0, 1, 0).astype(np.asarray(x).dtype)


def _np_nonzero(x: Any) -> Any:
    return np.where(x != 0, 1, 0).astype(np.asarray(x).dtype)


def _np_smoothstep(a: Any, b: Any, x: Any) -> Any:
    t = np.clip((x - a) / (b - a), 0, 1)
    return t * t * (x.dtype.type(3) - x.dtype.type(2) * t)


def _np_minmax(fn: Any, red: Any) -> Any:
    def impl(*args: Any) -> Any:
        if len(args) == 1:
            return red(args[0])
        return fn(args[0], args[1])

    return impl


def _reduce(ufunc: Any) -> Any:
    """``min(v)`` / ``max(v)`` of a vector by ``np.fmin`` / ``np.fmax`` (NaN components skipped, as native/vec.h)."""
    def impl(v: Any) -> Any:
        v = np.asarray(v)
        return ufunc.reduce(v.reshape(-1)) if v.size else v

    return impl


def _np_clamp(x: Any, a: Any, b: Any) -> Any:
    """``clamp`` as ``native/scalar.h``: ``fmin(fmax(x, a), b)`` for a NaN ``x``, plain bounds otherwise."""
    return np.where(np.not_equal(x, x), np.fmin(a, b), np.where(x < a, a, np.where(x > b, b, x)))


def _vec_erfinv(x: Any) -> Any:
    # Inverse error function by Newton iterations on math.erf (host path; float64 accuracy).
    def one(y: float) -> float:
        if y <= -1.0:
            return -math.inf
        if y >= 1.0:
            return math.inf
        w = -math.log((1.0 - y) * (1.0 + y))
        z = math.copysign(math.sqrt(max(w, 0.0)), y) * 0.8862269254527580
        for _ in range(60):
            err = math.erf(z) - y
            z -= err / (2.0 / math.sqrt(math.pi) * math.exp(-z * z))
        return z

    return np.vectorize(one, otypes=[np.asarray(x).dtype])(x)


#: Facts of the adjoint shared by several declarations (see ``registry.builtin``).
_SINGULAR: dict[str, Any] = {"singular": True}
_STEP: dict[str, Any] = {"differentiable": False, "zero_derivative": True}

#: name: (host implementation, docstring, further facts of the declaration)
_UNARY_FLOAT: dict[str, tuple[Any, str, dict[str, Any]]] = {
    "acos": (lambda x: np.arccos(np.clip(x, -1, 1)), "Inverse cosine in radians (argument clamped to [-1, 1]).", _SINGULAR),
    "asin": (lambda x: np.arcsin(np.clip(x, -1, 1)), "Inverse sine in radians (argument clamped to [-1, 1]).", _SINGULAR),
    "atan": (np.arctan, "Inverse tangent in radians.", {}),
    "cbrt": (np.cbrt, "Cube root.", _SINGULAR),
    "ceil": (np.ceil, "Smallest integer value not less than x.", _STEP),
    "cos": (np.cos, "Cosine of x in radians.", {"partner": "sin"}),
    "cosh": (np.cosh, "Hyperbolic cosine.", _SINGULAR),
    "degrees": (np.degrees, "Convert radians to degrees.", {}),
    "erf": (np.vectorize(math.erf), "Error function.", {}),
    "erfc": (np.vectorize(math.erfc), "Complementary error function.", {}),
    "erfinv": (_vec_erfinv, "Inverse error function.", {}),
    "erfcinv": (lambda x: _vec_erfinv(1 - x), "Inverse complementary error function.", {}),
    "exp": (np.exp, "e to the power x.", _SINGULAR),
    "floor": (np.floor, "Largest integer value not greater than x.", _STEP),
    "frac": (lambda x: x - np.trunc(x), "Fractional part: x - trunc(x).", {}),
    "log": (np.log, "Natural logarithm.", _SINGULAR),
    "log10": (np.log10, "Base-10 logarithm.", _SINGULAR),
    "log2": (np.log2, "Base-2 logarithm.", _SINGULAR),
    "radians": (np.radians, "Convert degrees to radians.", {}),
    "rint": (np.rint, "Round to the nearest integer value, ties to even.", _STEP),
    "round": (_np_round, "Round to the nearest integer value, ties away from zero.", _STEP),
    "sin": (np.sin, "Sine of x in radians.", {"partner": "cos"}),
    "sinh": (np.sinh, "Hyperbolic sine.", _SINGULAR),
    "sqrt": (np.sqrt, "Square root.", _SINGULAR),
    "tan": (np.tan, "Tangent of x in radians.", _SINGULAR),
    "tanh": (np.tanh, "Hyperbolic tangent.", {}),
    "trunc": (np.trunc, "Round toward zero.", _STEP),
}

for _name, (_host, _doc, _facts) in _UNARY_FLOAT.items():
    builtin(_name, group=GROUP, rule=_float_unary, host=_host, doc=_doc, signature=f"{_name}(x: Float) -> Float",
            **_facts)

builtin("abs", group=GROUP, rule=_num_unary, host=np.abs, interpret=Interp.ABS, signature="abs(x: Scalar | Vector) -> same",
        doc="Absolute value (elementwise for vectors).")
builtin("sign", group=GROUP, rule=_num_unary, host=_np_sign, zero_derivative=True, signature="sign(x: Scalar | Vector) -> same",
        doc="-1 if x < 0, else 1 (elementwise for vectors).")
builtin("step", group=GROUP, rule=_scalar_unary, host=_np_step, **_STEP,
        signature="step(x: Scalar) -> Scalar", doc="1 if x < 0, else 0.")
builtin("nonzero", group=GROUP, rule=_scalar_unary, host=_np_nonzero, **_STEP,
        signature="nonzero(x: Scalar) -> Scalar", doc="1 if x != 0, else 0.")
builtin("atan2", group=GROUP, rule=_float_binary, host=np.arctan2, singular=True, signature="atan2(y: Float, x: Float) -> Float",
        doc="Angle of the point (x, y) in radians.")
builtin("copysign", group=GROUP, rule=_float_binary, host=np.copysign,
        signature="copysign(x: Float, y: Float) -> Float", doc="Magnitude of x with the sign of y.")
builtin("isfinite", group=GROUP, rule=_float_pred, host=lambda x: np.all(np.isfinite(x)), differentiable=False,
        signature="isfinite(x) -> bool", doc="True if x (every component) is finite.")
builtin("isnan", group=GROUP, rule=_float_pred, host=lambda x: np.any(np.isnan(x)), differentiable=False,
        signature="isnan(x) -> bool", doc="True if x (any component) is NaN.")
builtin("isinf", group=GROUP, rule=_float_pred, host=lambda x: np.any(np.isinf(x)), differentiable=False,
        signature="isinf(x) -> bool", doc="True if x (any component) is infinite.")
builtin("min", group=GROUP, rule=_minmax, host=_np_minmax(np.fmin, _reduce(np.fmin)), interpret=Interp.MIN,
        signature="min(a, b) -> same | min(v: Vector) -> Scalar",
        doc="Minimum (elementwise; or of a vector); float NaNs are missing data, as C's fmin.")
builtin("max", group=GROUP, rule=_minmax, host=_np_minmax(np.fmax, _reduce(np.fmax)), interpret=Interp.MAX,
        signature="max(a, b) -> same | max(v: Vector) -> Scalar",
        doc="Maximum (elementwise; or of a vector); float NaNs are missing data, as C's fmax.")
builtin("clamp", group=GROUP, rule=_clamp, host=_np_clamp, interpret=Interp.CLAMP,
        signature="clamp(x: Scalar, a: Scalar, b: Scalar) -> Scalar",
        doc="Clamp x to the range [a, b] (fmin(fmax(x, a), b): a NaN x gives min(a, b)).")
builtin("lerp", group="Utility", rule=_lerp, host=lambda a, b, t: a * (1 - t) + b * t,
        signature="lerp(a: T, b: T, t: Float) -> T", doc="Linear interpolation a*(1-t) + b*t.")
builtin("smoothstep", group="Utility", rule=_smoothstep, host=_np_smoothstep,
        signature="smoothstep(a: Float, b: Float, x: Float) -> Float",
        doc="Smooth Hermite interpolation of x between edges a and b.")
