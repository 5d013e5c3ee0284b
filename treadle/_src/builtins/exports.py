"""Python-scope callables for the builtins (``wp.sin(1.0)``, ``wp.dot(a, b)``; ``wp.tid`` for kernels only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import REGISTRY, Builtin


def _param_names(b: Builtin) -> list[str]:
    """Parameter names from the first form of the declared signature (``lerp(a: T, b: T, t: Float) -> T``)."""
    sig = b.signature
    if "(" not in sig or ")" not in sig:
        return []
    inner = sig[sig.index("(") + 1 : sig.index(")")]
    names = []
    for part in inner.replace("[", ",").replace("]", ",").split(","):
        part = part.strip().lstrip("*")
        if part:
            names.append(part.split(":")[0].split("=")[0].strip())
    return names


def _with_dtype(value: Any, dtype: Any) -> Any:
    """``value`` converted to the same kind of value with scalar type ``dtype`` (``dtype=`` of constructors)."""
    from ..types import matrix, quat, scalars, vector
    from ..types.typesys import normalize_annotation

    dt = normalize_annotation(dtype)
    kind = getattr(type(value), "_wp_generic_type_str_", None)
    if kind == "quat_t":
        return quat.quaternion(dt)(*value)
    if kind == "transform_t":
        return quat.transformation(dt)(*value)
    if kind == "mat_t":
        return matrix.matrix(type(value)._shape_, dt)(*[x for row in value for x in row])
    if kind == "vec_t":
        return vector.vector(type(value)._length_, dt)(*value)
    if scalars.is_scalar_type(dt):
        return dt(value)
    raise TypeError(f"dtype={dtype!r} does not apply to a {type(value).__name__} result")


def _make(b: Builtin) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        dtype = None
        if kwargs:  # keywords by the declared parameter names; dtype= converts a constructor's result
            names = _param_names(b)
            if "dtype" in kwargs and "dtype" not in names:
                dtype = kwargs.pop("dtype")
            full = list(args)
            for n in names[len(args):]:
                if n not in kwargs:
                    break
                full.append(kwargs.pop(n))
            if kwargs:
                raise TypeError(f"{b.name}() got unexpected keyword argument(s) in Python scope: {', '.join(kwargs)}")
            args = tuple(full)
        if b.host is not None and getattr(b.host, "_treadle_inplace_", False):  # updates its first argument itself
            return b.host(*args)
        result = b.host_call(*args)
        return result if dtype is None else _with_dtype(result, dtype)

    call.__name__ = b.name
    call.__qualname__ = b.name
    call.__doc__ = f"{b.doc}\n\nSignature: ``{b.signature}``. Group: {b.group}."
    call._treadle_builtin_ = b  # type: ignore[attr-defined]
    return call


_cache: dict[str, Callable[..., Any]] = {}


def exported_builtins() -> dict[str, Callable[..., Any]]:
    """Public builtin callables by name (names starting with ``_`` are internal)."""
    if not _cache:
        for name, b in REGISTRY.builtins.items():
            if not name.startswith("_"):
                _cache[name] = _make(b)
    return _cache
