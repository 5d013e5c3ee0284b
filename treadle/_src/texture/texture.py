"""Texture objects: texels on a device, their mip levels and native descriptor (``Texture``).

The descriptor (``treadle::texture_desc_t``, ``treadle/native/texture.h``) points at the texels of every mip level,
stored one after another in one byte array on the texture's device, each level row-major (slice, row, texel,
channel). Sampling is done in software by that header on every device; CUDA hardware texture objects are not used
yet. Mip levels are made on the host by 2x box filtering (each level halves every dimension, rounding down; integer
formats round half to even).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..builtins.texture_types import (
    TEXTURE_TYPES,
    Texture1D,
    Texture2D,
    Texture3D,
    TextureAddressMode,
    TextureDesc,
    TextureFilterMode,
    TextureResourceFlags,
)
from ..geometry.descriptor import DescriptorMirror
from ..lang.array import array
from ..runtime.device import get_device
from ..types import scalars

__all__ = ["Texture", "Texture1D", "Texture2D", "Texture3D", "TextureAddressMode", "TextureFilterMode",
           "TextureResourceFlags"]

# texel formats: NumPy dtype, code in the native descriptor, normalisation divisor (0: none)
_FORMATS: dict[Any, tuple[str, int, float]] = {
    scalars.uint8: ("u1", 0, 255.0), scalars.int8: ("i1", 1, 127.0), scalars.uint16: ("u2", 2, 65535.0),
    scalars.int16: ("i2", 3, 32767.0), scalars.float16: ("f2", 4, 0.0), scalars.float32: ("f4", 5, 0.0),
    scalars.uint32: ("u4", 6, 0.0), scalars.int32: ("i4", 7, 0.0),
}
_BY_NUMPY = {np.dtype(v[0]): k for k, v in _FORMATS.items()}
_SUPPORTED = "uint8, uint16, uint32, int8, int16, int32, float16, float32"



# ----------------------------------------------------------------------------------------------------------------
# Texture objects
# ----------------------------------------------------------------------------------------------------------------

def _mode(value: Any, enum_type: Any, what: str) -> Any:
    try:
        return enum_type(int(value))
    except (ValueError, TypeError):
        raise ValueError(f"invalid {what} {value!r}; use one of {', '.join(m.name for m in enum_type)}") from None


def _mip_chain(base: np.ndarray, ndim: int, levels: int, fmt: str) -> list[np.ndarray]:
    """Levels 1.. by 2x box filtering (each axis halved, odd trailing texels dropped; integers round half to even)."""
    out = [base]
    cur = base
    for _ in range(1, levels):
        sizes = cur.shape[:ndim]
        half = [max(1, n // 2) for n in sizes]
        parts = []
        for offs in itertools.product(*[(0, 1) if n > 1 else (0,) for n in sizes]):
            sl = tuple(slice(o, o + 2 * h, 2) if n > 1 else slice(0, 1) for o, n, h in zip(offs, sizes, half))
            parts.append(cur[sl].astype(np.float64))
        mean = sum(parts) / len(parts)
        cur = mean.astype(fmt) if np.dtype(fmt).kind == "f" else np.rint(mean).astype(fmt)
        out.append(cur)
    return out


class _Keeper:
    """Refers to a texture from the structs that hold it; refreshes their descriptor field (the array protocol)."""

    def __init__(self, tex: Any) -> None:
        self.tex = tex

    def __ctype__(self) -> int:
        return int(self.tex.id)


class Texture:
    """A texture: a 1-3d grid of texels with 1, 2 or 4 channels, sampled in kernels with ``texture_sample``.

    Make one with ``Texture1D`` / ``Texture2D`` / ``Texture3D`` (or ``Texture(ndim, ...)``).

    Args:
        ndim: number of dimensions (``Texture`` only).
        data: initial texels (NumPy or array): ``(width[, C])``, ``(height, width[, C])`` or
            ``(depth, height, width[, C])``, of uint8, uint16, uint32, int8, int16, int32, float16 or float32.
        width, height, depth: the size when ``data`` is ``None`` (texels start at zero).
        num_channels: 1, 2 or 4 when ``data`` is ``None``.
        dtype: the texel type when ``data`` is ``None`` (default float32).
        filter_mode: ``TextureFilterMode.LINEAR`` (default; not allowed for 32-bit integers) or ``CLOSEST``.
        address_mode: one ``TextureAddressMode`` for every axis, or a tuple of one per axis (u, v, w).
        address_mode_u, address_mode_v, address_mode_w: per-axis overrides.
        normalized_coords: coordinates in [0, 1] across the texture (default) or in texels.
        num_mip_levels: 1 (no mipmaps), ``n`` levels, or 0 for the full chain down to 1 texel; made from ``data``.
        mip_filter_mode: filtering between levels for fractional ``lod`` (default LINEAR; CLOSEST for 32-bit ints).
        device: the device of the texels.
        surface_access: accepted for compatibility (CUDA surface objects are not made).
        cuda_array: wrapping an external CUDA array is not supported (must be 0).

    Integer texels read as floats: 8/16-bit unsigned in [0, 1], signed in [-1, 1]; 32-bit integers numerically.
    """

    ndim: int
    _desc: TextureDesc

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Texture:  # Texture(ndim, ...): a texture of that dimensionality
            ndim = kwargs.pop("ndim", None) if "ndim" in kwargs else (args[0] if args else None)
            if "ndim" not in kwargs and args:
                args = args[1:]
            if ndim not in (1, 2, 3):
                raise ValueError(f"Texture ndim must be 1, 2 or 3, got {ndim!r}")
            return _TYPES[int(ndim)](*args, **kwargs)
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # everything is done by __new__ / _init (a struct instance's own __init__ must not run)
        pass

    def _init(self, ndim: int, data: Any = None, width: int = 0, height: int = 0, depth: int = 0,
              num_channels: int = 0, dtype: Any = None, filter_mode: Any = None,
              address_mode: Any = TextureAddressMode.CLAMP, address_mode_u: Any = None,
              address_mode_v: Any = None, address_mode_w: Any = None, normalized_coords: bool = True,
              num_mip_levels: int = 1, mip_filter_mode: Any = None, device: Any = None,
              surface_access: bool = False, cuda_array: int = 0) -> None:
        st = _TYPES[ndim]
        self._setup(st.ctype())
        object.__setattr__(self, "ndim", ndim)
        if cuda_array:
            raise NotImplementedError("wrapping an external CUDA array (cuda_array=) is not supported")
        self._device = get_device(device)
        texels = self._texels(ndim, data, width, height, depth, num_channels, dtype)
        self._dtype = _BY_NUMPY[texels.dtype]
        fmt, code, _ = _FORMATS[self._dtype]
        is_int32 = self._dtype in (scalars.int32, scalars.uint32)
        default = TextureFilterMode.CLOSEST if is_int32 else TextureFilterMode.LINEAR
        filt = _mode(default if filter_mode is None else filter_mode, TextureFilterMode, "filter_mode")
        mip_filt = _mode(default if mip_filter_mode is None else mip_filter_mode, TextureFilterMode, "mip_filter_mode")
        if is_int32 and filt == TextureFilterMode.LINEAR:
            raise ValueError("32-bit integer textures require filter_mode=TextureFilterMode.CLOSEST")
        modes = list(address_mode) if isinstance(address_mode, (tuple, list)) else [address_mode] * 3
        modes = (modes + [modes[-1]] * 3)[:3]
        for i, over in enumerate((address_mode_u, address_mode_v, address_mode_w)):
            if over is not None:
                modes[i] = over
        self._address = tuple(_mode(m, TextureAddressMode, "address_mode") for m in modes)
        self._filter, self._normalized = filt, bool(normalized_coords)
        sizes = texels.shape[:ndim]
        max_levels = int(np.floor(np.log2(max(sizes)))) + 1
        levels = max_levels if int(num_mip_levels) == 0 else int(num_mip_levels)
        if levels < 1 or levels > max_levels:
            raise ValueError(f"num_mip_levels ({num_mip_levels}) exceeds the maximum for base dimensions "
                             f"{tuple(sizes)} ({max_levels})")
        if levels > 1 and data is None:
            raise ValueError("mipmapped textures need data at construction (their levels are made from it)")
        if levels > 1 and is_int32 and mip_filt == TextureFilterMode.LINEAR:
            raise ValueError("mipmapped 32-bit integer textures require mip_filter_mode=TextureFilterMode.CLOSEST")
        self._mip_filter, self._levels = mip_filt, levels
        chain = _mip_chain(texels, ndim, levels, fmt)
        self._shapes = [c.shape for c in chain]
        blob = np.concatenate([c.reshape(-1).view(np.uint8) for c in chain])
        self._storage = array(blob, dtype=scalars.uint8, device=self._device)
        d = TextureDesc()
        d.data = self._storage.ptr or 0
        d.ndim, d.format, d.channels = ndim, code, texels.shape[ndim]
        d.filter, d.mip_filter, d.normalized, d.levels = int(filt), int(mip_filt), int(self._normalized), levels
        d.address[:] = [int(m) for m in self._address]
        off = 0
        for lvl, c in enumerate(chain):
            dims = list(reversed(c.shape[:ndim])) + [1] * (3 - ndim)  # width, height, depth
            d.dims[lvl][:] = dims
            d.offsets[lvl] = off
            off += c.nbytes
        self._desc_obj = d
        self._mirror = DescriptorMirror(d, self._device)
        c_fields = self._ctype
        c_fields._treadle_tex = self._mirror.id
        # a struct holding this texture (a field assignment adopts these references) keeps it alive
        self._refs["_treadle_tex"] = _Keeper(self)
        for name, n in zip(("width", "height", "depth"), list(reversed(sizes))):
            setattr(c_fields, name, int(n))

    @staticmethod
    def _texels(ndim: int, data: Any, width: int, height: int, depth: int, num_channels: int,
                dtype: Any) -> np.ndarray:
        """The base level as a NumPy array of shape (spatial..., channels)."""
        names = ("width", "height", "depth")
        if data is None:
            sizes = (int(width), int(height), int(depth))[:ndim]
            for n, name in zip(sizes, names):
                if n <= 0:
                    raise ValueError(f"Texture {name} must be a positive integer")
            ch = int(num_channels) if num_channels else 1
            if ch not in (1, 2, 4):
                raise ValueError("Texture num_channels must be 1, 2, or 4")
            t = scalars.float32 if dtype is None else scalars.scalar_from_python(dtype)
            if t not in _FORMATS:
                raise ValueError(f"Unsupported texture dtype: {getattr(t, '__name__', t)}. Supported: {_SUPPORTED}")
            return np.zeros((*reversed(sizes), ch), dtype=_FORMATS[t][0])
        # an array of vectors gives one channel per component (its NumPy view has a trailing axis)
        host = data.numpy() if isinstance(data, array) else np.asarray(data)
        if host.dtype not in _BY_NUMPY:
            raise ValueError(f"Unsupported texture dtype: {host.dtype}. Supported: {_SUPPORTED}")
        if host.ndim == ndim:
            host = host[..., None]
        elif host.ndim != ndim + 1:
            raise ValueError(f"{ndim}D texture data must be {ndim}D or {ndim + 1}D array")
        if host.shape[-1] not in (1, 2, 4):
            raise ValueError("Texture num_channels must be 1, 2, or 4")
        if min(host.shape[:ndim]) <= 0:
            raise ValueError(f"Texture data must not be empty, got shape {host.shape}")
        return np.ascontiguousarray(host)

    # -- properties --------------------------------------------------------------------------------------------
    @property
    def id(self) -> int:
        """The address of the native descriptor (on the texture's device)."""
        return int(self._mirror.id)

    @property
    def device(self) -> Any:
        """The device of the texels."""
        return self._device

    @property
    def width(self) -> int:
        """Texels along u."""
        return int(self._desc_obj.dims[0][0])

    @property
    def height(self) -> int:
        """Texels along v (1 for 1-d textures)."""
        return int(self._desc_obj.dims[0][1])

    @property
    def depth(self) -> int:
        """Texels along w (1 for 1-d and 2-d textures)."""
        return int(self._desc_obj.dims[0][2])

    @property
    def num_channels(self) -> int:
        """Channels per texel (1, 2 or 4)."""
        return int(self._desc_obj.channels)

    @property
    def dtype(self) -> Any:
        """The texel type."""
        return self._dtype

    @property
    def filter_mode(self) -> TextureFilterMode:
        """Filtering within a level."""
        return self._filter

    @property
    def mip_filter_mode(self) -> TextureFilterMode:
        """Filtering between mip levels."""
        return self._mip_filter

    @property
    def num_mip_levels(self) -> int:
        """Number of mip levels (1: not mipmapped)."""
        return self._levels

    @property
    def is_mipmapped(self) -> bool:
        """Whether the texture has more than one level."""
        return self._levels > 1

    @property
    def address_mode_u(self) -> TextureAddressMode:
        """Addressing along u."""
        return self._address[0]

    @property
    def address_mode_v(self) -> TextureAddressMode:
        """Addressing along v."""
        return self._address[1]

    @property
    def address_mode_w(self) -> TextureAddressMode:
        """Addressing along w."""
        return self._address[2]

    @property
    def normalized_coords(self) -> bool:
        """Whether coordinates are normalised to [0, 1]."""
        return self._normalized

    def _cuda_handle(self, what: str) -> int:
        if not getattr(self._device, "is_cuda", False):
            raise RuntimeError(f"{what} is only supported for CUDA textures")
        raise RuntimeError(f"{what}: CUDA texture objects are not made (textures are sampled in software on every "
                           "device)")

    @property
    def cuda_array(self) -> int:
        """CUDA array handle (CUDA textures only; not made: textures are sampled in software)."""
        return self._cuda_handle("cuda_array")

    @property
    def cuda_texture(self) -> int:
        """CUDA texture object (CUDA textures only; not made: textures are sampled in software)."""
        return self._cuda_handle("cuda_texture")

    @property
    def cuda_surface(self) -> int:
        """CUDA surface object (CUDA textures only; not made)."""
        return self._cuda_handle("cuda_surface")

    def __del__(self) -> None:
        # the texels and the descriptor are owned by this object; tolerates a texture that was never initialised
        self.__dict__.pop("_storage", None)

    # -- copies --------------------------------------------------------------------------------------------------
    def _shape(self) -> tuple[int, ...]:
        s = self._shapes[0]
        return tuple(s[:-1]) if s[-1] == 1 else tuple(s)

    def _immutable(self, what: str) -> None:
        if self._levels > 1:
            raise RuntimeError(f"{what} is not supported for mipmapped textures; mipmap contents are immutable after "
                               "construction")

    def _check_copy(self, host: np.ndarray, what: str) -> None:
        if tuple(host.shape) != self._shape() and tuple(host.shape) != tuple(self._shapes[0]):
            raise ValueError(f"Incompatible array shape for copy: texture shape={self._shape()}, {what} shape="
                             f"{tuple(host.shape)}")
        if host.dtype != np.dtype(_FORMATS[self._dtype][0]):
            other = _BY_NUMPY.get(host.dtype)
            raise ValueError(f"Incompatible array data type for copy: texture dtype={self._dtype.__name__}, {what} "
                             f"dtype={other.__name__ if other is not None else host.dtype}")

    def copy_from(self, src: Any) -> None:
        """Replace the texels with those of ``src`` (an array, NumPy array or texture of the same shape and type)."""
        self._immutable("copy_from")
        if isinstance(src, Texture):
            if src._shapes[0] != self._shapes[0]:
                raise ValueError(f"Incompatible texture shapes for copy: destination shape={self._shape()}, source "
                                 f"shape={src._shape()}")
            host = src._level(0)
        else:
            host = src.numpy() if isinstance(src, array) else np.asarray(src)
        self._check_copy(host, "source")
        fmt = _FORMATS[self._dtype][0]
        self._storage.assign(np.ascontiguousarray(host.astype(fmt, copy=False)).reshape(-1).view(np.uint8))

    def _level(self, lvl: int) -> np.ndarray:
        fmt = _FORMATS[self._dtype][0]
        raw = self._storage.numpy()
        start = int(self._desc_obj.offsets[lvl])
        shape = self._shapes[lvl]
        n = int(np.prod(shape)) * np.dtype(fmt).itemsize
        return raw[start:start + n].view(fmt).reshape(shape)

    def copy_to(self, dst: Any) -> None:
        """Copy the texels into ``dst`` (an array or NumPy array of the same shape)."""
        self._immutable("copy_to")
        host = self._level(0)
        view = dst.numpy() if isinstance(dst, array) else dst
        self._check_copy(np.empty(view.shape, view.dtype), "destination")
        if isinstance(dst, array):
            dst.assign(host.reshape(view.shape))
        else:
            dst[...] = host.reshape(view.shape)

    def __repr__(self) -> str:
        dims = "x".join(str(n) for n in reversed(self._shapes[0][:self.ndim]))
        return (f"Texture{self.ndim}D({dims}, {self.num_channels} channel(s), {self._dtype.__name__}, "
                f"device={self._device})")


_TYPES = {t.ndim: t for t in TEXTURE_TYPES}
for _t in TEXTURE_TYPES:
    _t.object_type = type(_t.__name__, (Texture, _t.instance_type), {
        "__module__": __name__, "__qualname__": _t.__qualname__, "__doc__": _t.__doc__})

