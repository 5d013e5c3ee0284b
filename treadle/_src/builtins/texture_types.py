"""The kernel-side texture types ``Texture1D`` / ``Texture2D`` / ``Texture3D``, the mode enums and the descriptor.

Each texture name is at once the constructor of textures and a ``@struct`` type, so that it works as a kernel
parameter, a struct field and an annotation with no special case in the compiler: ``Texture2D`` is a
:class:`TextureType` (a :class:`~treadle._src.lang.struct.Struct`) whose C++ struct holds the address of a native
descriptor (``_treadle_tex``) and the texture's size (``width``, ``height``, ``depth``, readable in kernels).
Calling it makes a texture object (``texture.py``), an instance of that struct (``isinstance(t, wp.Texture2D)``),
so a launch or a struct field copies its fields like any struct value.

This module depends only on the type layer, so that the builtin registry can name these types.
"""

from __future__ import annotations

import ctypes
import enum
import typing
from typing import Any

from ..types import scalars
from ..types.struct import Struct

MAX_LEVELS = 16

class TextureFilterMode(enum.IntEnum):
    """Filtering within a mip level (``filter_mode``) or between levels (``mip_filter_mode``)."""

    CLOSEST = 0
    LINEAR = 1


class TextureAddressMode(enum.IntEnum):
    """Addressing of texels outside the texture: repeat, clamp to the edge, mirror, or the zero border."""

    WRAP = 0
    CLAMP = 1
    MIRROR = 2
    BORDER = 3


class TextureResourceFlags(enum.IntFlag):
    """How an externally registered texture resource is used (graphics interop)."""

    NONE = 0
    READ_ONLY = 1
    WRITE_DISCARD = 2
    SURFACE_LDST = 4
    TEXTURE_GATHER = 8


class TextureDesc(ctypes.Structure):
    """Mirror of ``treadle::texture_desc_t``."""

    _fields_ = [
        ("data", ctypes.c_uint64),
        ("ndim", ctypes.c_int32),
        ("format", ctypes.c_int32),
        ("channels", ctypes.c_int32),
        ("filter", ctypes.c_int32),
        ("mip_filter", ctypes.c_int32),
        ("normalized", ctypes.c_int32),
        ("levels", ctypes.c_int32),
        ("address", ctypes.c_int32 * 3),
        ("dims", (ctypes.c_int32 * 3) * MAX_LEVELS),
        ("offsets", ctypes.c_int64 * MAX_LEVELS),
    ]


# ----------------------------------------------------------------------------------------------------------------
# The kernel-side types
# ----------------------------------------------------------------------------------------------------------------

class TextureType(Struct):
    """The type of ``ndim``-dimensional textures: a struct for kernels, a constructor in Python."""

    def __init__(self, cls: type, ndim: int) -> None:
        super().__init__(cls)
        self.ndim = ndim
        #: the class of texture objects of this type (set by ``texture.py``)
        self.object_type: Any = None
        # ``Texture2D.__new__(Texture2D)``: an uninitialised texture object, as for a class
        self.__new__ = lambda _cls, *args, **kwargs: object.__new__(self.object_type)  # type: ignore[method-assign]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Create a texture (see ``Texture`` for the arguments)."""
        obj = object.__new__(self.object_type)
        obj._init(self.ndim, *args, **kwargs)
        return obj


class _Tex1:
    """A 1-d texture: ``Texture1D(data, ...)`` with data of shape ``(width,)`` or ``(width, channels)``.

    In kernels: ``texture_sample(tex, u, dtype=...)``; ``tex.width``.
    """

    _treadle_tex: scalars.uint64
    width: scalars.int32


class _Tex2:
    """A 2-d texture: data of shape ``(height, width)`` or ``(height, width, channels)``.

    In kernels: ``texture_sample(tex, uv, dtype=...)`` or ``texture_sample(tex, u, v, dtype=...)``;
    ``tex.width``, ``tex.height``.
    """

    _treadle_tex: scalars.uint64
    width: scalars.int32
    height: scalars.int32


class _Tex3:
    """A 3-d texture: data of shape ``(depth, height, width)`` or ``(depth, height, width, channels)``.

    In kernels: ``texture_sample(tex, uvw, dtype=...)`` or ``texture_sample(tex, u, v, w, dtype=...)``;
    ``tex.width``, ``tex.height``, ``tex.depth``.
    """

    _treadle_tex: scalars.uint64
    width: scalars.int32
    height: scalars.int32
    depth: scalars.int32


for _c, _n in ((_Tex1, "Texture1D"), (_Tex2, "Texture2D"), (_Tex3, "Texture3D")):
    _c.__name__ = _c.__qualname__ = _n
    _c.__module__ = __name__




Texture1D: typing.Any = TextureType(_Tex1, 1)
Texture2D: typing.Any = TextureType(_Tex2, 2)
Texture3D: typing.Any = TextureType(_Tex3, 3)
TEXTURE_TYPES: tuple[TextureType, ...] = (Texture1D, Texture2D, Texture3D)
