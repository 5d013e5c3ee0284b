"""Textures (group "Textures"): ``texture_sample``.

A texture argument is a ``Texture1D`` / ``Texture2D`` / ``Texture3D`` struct (``treadle/_src/texture``); the C++
side is ``treadle/native/texture.h``. Call forms: ``texture_sample(tex1d, u)``, ``(tex2d, uv)`` or
``(tex2d, u, v)``, ``(tex3d, uvw)`` or ``(tex3d, u, v, w)``, each followed by ``dtype=`` (float, vec2f or vec4f:
how many channels are read) and an optional ``lod=`` (float). ``dtype`` arrives as a constant whose argument type
is ``None``; without it the sample is a float (channel 0). The rule accepts ``dtype`` and ``lod`` in either order
after the coordinates, as keyword arguments follow the positional ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import is_float, is_int, normalize_annotation, type_str
from ..types.vector import vec2f, vec3f, vec4f
from .registry import NOT_CONST, Interp, NoMatch, builtin, need
from .texture_types import TEXTURE_TYPES

GROUP = "Textures"
_F32 = scalars.float32
_RESULTS = (_F32, vec2f, vec4f)
#: (ndim, vector form) -> the form code F of ``treadle::texture_sample<R, F>``
_FORMS = {(1, False): 1, (2, True): 2, (2, False): 3, (3, True): 4, (3, False): 5}


def _number(t: Any) -> bool:
    return is_float(t) or is_int(t)


def _parse(types: Sequence[Any], consts: Sequence[Any]) -> tuple[Any, int]:
    """The result type and the form code of a call, or :class:`NoMatch`."""
    need(len(types) >= 2, f"expected a texture and coordinates, got {len(types)} argument(s)")
    tex = types[0]
    need(any(tex is t for t in TEXTURE_TYPES),
         f"the first argument must be a Texture1D, Texture2D or Texture3D, got {type_str(tex)}")
    ndim = tex.ndim
    vec = {2: vec2f, 3: vec3f}.get(ndim)
    if vec is not None and types[1] == vec:
        form, rest = _FORMS[(ndim, True)], 2
    else:
        coords = types[1:1 + ndim]
        want = f"{ndim} float coordinate(s)" + (f" or a {type_str(vec)}" if vec is not None else "")
        need(len(coords) == ndim and all(t is not None and _number(t) for t in coords),
             f"a Texture{ndim}D is sampled at {want}, got ({', '.join(type_str(t) for t in types[1:])})")
        form, rest = _FORMS[(ndim, False)], 1 + ndim
    ret, lods = _F32, 0
    for t, c in zip(types[rest:], consts[rest:]):
        if t is None:
            if c is NOT_CONST:
                raise NoMatch("dtype must be a type")
            r = normalize_annotation(scalars.scalar_from_python(c))
            need(r in _RESULTS, f"dtype must be float, vec2f or vec4f (channels read), got {type_str(r)}")
            ret = r
        else:
            need(_number(t) and lods == 0, f"unexpected argument of type {type_str(t)} after the coordinates (only "
                                           "dtype= and lod= follow them)")
            lods += 1
    return ret, form


def _rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    return _parse(types, consts)[0]


def _template(types: Sequence[Any], ret: Any) -> tuple[Any, ...]:
    return ret, _parse(types, [NOT_CONST if t is not None else ret for t in types])[1]


builtin("texture_sample", group=GROUP, rule=_rule, template=_template, kernel_only=True, interpret=Interp.NONE, differentiable=True,
        signature="texture_sample(tex: Texture1D | Texture2D | Texture3D, uv: float | vec2f | vec3f | floats, "
                  "dtype: float | vec2f | vec4f, lod: float32 = 0.0) -> dtype",
        doc="Sample a texture at normalised ([0, 1]) or texel coordinates (as the texture was made), with its "
            "filter and address modes; ``lod`` selects the mip level (negative: level 0; clamped to the last level; "
            "fractional values blend two levels when ``mip_filter_mode`` is LINEAR). ``dtype`` is float (channel "
            "0), vec2f or vec4f (channels beyond the texture's read 0). 8/16-bit integer texels read normalised, "
            "32-bit integers numerically. Differentiable in the coordinates (LINEAR filtering) and in ``lod`` "
            "(linear mip blending, unclamped).")
