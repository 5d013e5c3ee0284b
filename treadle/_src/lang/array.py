"""``array``: typed, strided, multi-dimensional arrays on a device (and array type annotations).

An :class:`array` is either

- a **concrete array**: ``ptr`` (int address, ``None`` when empty), ``shape``, ``strides`` (bytes), ``dtype``,
  ``device``, optional ``grad``; passed to native code as :class:`~treadle._src.core.abi.ArrayDesc` via
  :meth:`array.__ctype__`; or
- an **annotation** (``wp.array(dtype=float)``, ``wp.array2d(dtype=wp.vec3)``, ``wp.array[float]``): only
  ``dtype`` and ``ndim``; recognised with :func:`is_array_annotation`.

Element types and their helpers (element sizes, NumPy dtypes, strides) are the type layer's
(``types/arrays.py``); the class declares the array protocol there (``_treadle_array_``) and registers itself, so
the layers below recognise and make arrays without importing this module.
"""

from __future__ import annotations

import ctypes
import math
import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import abi
from ..core.errors import CopyError, CopyTypeError, ShapeError
from ..runtime import device as _device
from ..runtime import graph as _graph
from ..runtime import memtrack as _memtrack
from ..runtime.recording import active_tape
from ..types import arrays as _arrays
from ..types import scalars
from ..types.arrays import (
    _extent,
    _fit_inner,
    _is_contiguous,
    _struct_records,
    contiguous_strides,
    elem_size,
    inner_shape,
    is_composite_type,
    is_struct_type,
    normalize_dtype,
    normalize_shape,
    numpy_scalar_dtype,
    to_numpy,
    type_name,
    types_equal,
    value_bytes,
)
from ..types.struct import annotation_union

MAX_DIMS = abi.MAX_DIMS


class _Protocols:
    """The foreign-array protocols of arrays, implemented by the interop layer, which registers them when imported.

    ``dlpack_export`` / ``dlpack_device``: ``interop/dlpack.py``; ``cuda_export`` / ``cuda_import`` (the CUDA Array
    Interface): ``interop/cuda_interface.py``. ``import treadle`` imports both.
    """

    dlpack_export: Callable[..., Any] | None = None
    dlpack_device: Callable[[Any], Any] | None = None
    cuda_export: Callable[[Any], Any] | None = None
    cuda_import: Callable[..., Any] | None = None


PROTOCOLS = _Protocols()


def _protocol(name: str) -> Callable[..., Any]:
    fn = getattr(PROTOCOLS, name)
    if fn is None:
        raise RuntimeError(f"the interop layer is not loaded ({name}); import treadle first")
    return fn  # type: ignore[no-any-return]


class _HostView:
    """Carries an ``__array_interface__`` and keeps the array alive while NumPy views of it exist."""

    def __init__(self, owner: array, interface: dict[str, Any]) -> None:
        self.owner = owner
        self.__array_interface__ = interface


# ---------------------------------------------------------------------------------------------------------------
# array
# ---------------------------------------------------------------------------------------------------------------


class array:
    """A multi-dimensional array of ``dtype`` elements on a device, or an array type annotation.

    ``wp.array(dtype=float)`` (no data, shape or ptr) is an annotation for kernel signatures; with ``data``
    (NumPy array, list, array), ``shape`` (allocate) or ``ptr`` (wrap external memory) it is a concrete array.
    """

    #: ndim of the annotation made by ``array[dtype]`` (``array2d[dtype]`` ... set 2..4).
    _default_ndim = 1
    #: the array protocol of the type layer (``types/arrays.py``): instances are arrays or array annotations
    _treadle_array_ = True

    def __init__(
        self,
        data: Any = None,
        dtype: Any = Any,
        shape: Any = None,
        strides: tuple[int, ...] | None = None,
        ptr: int | None = None,
        capacity: int | None = None,
        device: Any = None,
        pinned: bool = False,
        copy: bool = True,
        deleter: Any = None,
        ndim: int | None = None,
        grad: array | None = None,
        requires_grad: bool = False,
        retain_grad: bool = False,
    ) -> None:
        self._reset_fields()
        self.deleter = deleter
        if data is None and shape is None and ptr is None:
            self._init_annotation(normalize_dtype(dtype, annotation=True), ndim)
            return
        dtype = normalize_dtype(dtype)
        dev = _device.get_device(device)
        if data is not None and _has_cuda_interface(data):  # CuPy, Numba, PyTorch ... arrays on CUDA: a view
            self._init_from_cuda_interface(data, dtype, shape, device, pinned)
        elif data is not None:
            self._init_from_data(data, dtype, shape, dev, pinned, copy)
        elif ptr is not None:
            self._init_from_ptr(ptr, dtype, shape, strides, capacity, dev, deleter)
        else:
            if dtype is Any:
                raise TypeError(
                    "A concrete type is required to allocate an array: pass dtype=wp.float32 (or another type)"
                )
            self._init_alloc(normalize_shape(shape), dtype, dev, pinned, strides)
        if grad is not None:
            self.grad = grad
        elif requires_grad:
            self._alloc_grad()
        if retain_grad:
            self.retain_grad = True  # checked: needs a gradient

    # -- construction -------------------------------------------------------------------------------------------

    def _reset_fields(self) -> None:
        self.dtype: Any = Any
        self.ndim = 0
        self.shape: tuple[int, ...] = ()
        self.strides: tuple[int, ...] = ()
        self.size = 0
        self.capacity = 0
        self.ptr: int | None = None
        self.device: Any = None
        self.pinned = False
        self.deleter = None
        self._retain_grad = False
        self._is_annotation = False
        self._owner: Any = None
        self._grad: array | None = None
        self._requires_grad = False
        self._ctype: abi.ArrayDesc | None = None
        self._host_iface: tuple[dict[str, Any], np.dtype | None] | None = None

    def _init_annotation(self, dtype: Any, ndim: int | None) -> None:
        ndim = self._default_ndim if ndim is None else int(ndim)
        if not 1 <= ndim <= MAX_DIMS:
            raise ValueError(f"Array annotations need 1 to {MAX_DIMS} dimensions, got ndim={ndim}")
        self._is_annotation = True
        self.dtype = dtype
        self.ndim = ndim
        self.shape = (0,) * ndim
        self.strides = (0,) * ndim

    def _set_layout(self, dtype: Any, shape: tuple[int, ...], strides: tuple[int, ...], ptr: int | None) -> None:
        self.dtype = dtype
        self.shape = shape
        self.strides = strides
        self.ndim = len(shape)
        self.size = math.prod(shape)
        self.ptr = ptr

    def _init_alloc(self, shape: tuple[int, ...], dtype: Any, dev: Any, pinned: bool,
                    strides: Any = None) -> None:
        itemsize = elem_size(dtype)
        if strides is None:
            strides = contiguous_strides(shape, itemsize)
            nbytes = math.prod(shape) * itemsize
        else:
            strides = tuple(operator.index(s) for s in strides)
            if len(strides) != len(shape):
                raise ValueError(f"Invalid number of strides, expected {len(shape)} strides, got {len(strides)} "
                                 f"(one byte stride for each dimension of shape {shape})")
            if any(s < 0 for s in strides):
                raise NotImplementedError(f"Negative strides are not supported when allocating an array, got "
                                          f"{strides}; allocate with positive strides and take a view")
            nbytes = _extent(shape, strides, itemsize)
        ptr = None
        if nbytes > 0:
            alloc = dev.get_allocator(pinned).alloc(nbytes)
            self._owner = alloc
            ptr = alloc.ptr
            if _memtrack.is_tracking():
                _memtrack.record_allocation(alloc.owner if alloc.owner is not None else alloc, dev, nbytes,
                                            f"array[{type_name(dtype)}, {', '.join(str(n) for n in shape)}]")
        self._set_layout(dtype, shape, strides, ptr)
        self.capacity = nbytes
        self.device = dev
        self.pinned = bool(pinned) and dev.get_allocator(True) is not dev.allocator

    def _init_from_ptr(
        self, ptr: int, dtype: Any, shape: Any, strides: Any, capacity: Any, dev: Any, deleter: Any
    ) -> None:
        if shape is None:
            raise TypeError("shape is required when creating an array from ptr=...")
        if dtype is Any:
            raise TypeError("A concrete type is required when creating an array from ptr=...: pass dtype=...")
        shape = normalize_shape(shape)
        itemsize = elem_size(dtype)
        strides = contiguous_strides(shape, itemsize) if strides is None else tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(f"strides {strides} must have one entry per dimension of shape {shape}")
        self._set_layout(dtype, shape, strides, int(ptr) if ptr else None)
        self.capacity = _extent(shape, strides, itemsize) if capacity is None else int(capacity)
        self.device = dev
        if deleter is not None and ptr:
            weakref.finalize(self, deleter, int(ptr), self.capacity)

    def _init_from_cuda_interface(self, data: Any, dtype: Any, shape: Any, device: Any, pinned: bool) -> None:
        """A view of an object's CUDA memory (``__cuda_array_interface__``); a copy when another device is asked."""
        view = _protocol("cuda_import")(data, dtype=None if dtype is Any else dtype, shape=shape)
        dev = view.device if device is None else _device.get_device(device)
        if dev == view.device:
            self._set_layout(view.dtype, view.shape, view.strides, view.ptr)
            self.capacity, self.device, self._owner = view.capacity, view.device, view
            return
        self._init_alloc(view.shape, view.dtype, dev, pinned)
        copy_array(self, view)

    def _init_from_data(self, data: Any, dtype: Any, shape: Any, dev: Any, pinned: bool, copy: bool) -> None:
        if isinstance(data, array) and not data._is_annotation:
            if not copy and data.device == dev and (dtype is Any or types_equal(dtype, data.dtype)) and shape is None:
                self._set_layout(data.dtype, data.shape, data.strides, data.ptr)
                self.capacity, self.device, self.pinned, self._owner = data.capacity, dev, data.pinned, data
                return
            if dtype is Any:
                dtype = data.dtype
        if dtype is not Any and is_struct_type(dtype):
            arr = _struct_records(data, dtype)
        else:
            arr = to_numpy(data)
            if arr.ndim == 0 and isinstance(data, np.ndarray) and not inner_shape(dtype):
                # a 0-d NumPy array becomes a one-element array, as in the reference (a Python scalar does not)
                arr = arr.reshape(1)
            if arr.ndim == 0:
                raise TypeError(
                    f"Data must be a sequence or array, got scalar {data!r}; use wp.full(shape, value) to fill an array"
                )
            if dtype is Any:
                found = scalars.scalar_from_numpy(arr.dtype)
                if found is None:
                    raise TypeError(f"Unsupported input data dtype {arr.dtype}: pass dtype=... or convert the data")
                dtype = found
            if arr.dtype.kind not in "biuf" and scalars.scalar_from_numpy(arr.dtype) is None:
                raise TypeError(f"Failed to convert input data of dtype {arr.dtype} to an array of {type_name(dtype)}")
        ishape = inner_shape(dtype)
        if shape is not None:
            outer = normalize_shape(shape)
            try:
                arr = arr.reshape(outer + ishape)
            except ValueError as e:
                raise ValueError(
                    f"Failed to reshape the input data to the given shape {outer} and type {type_name(dtype)}: {e}"
                ) from None
        else:
            arr = _fit_inner(arr, dtype)
        outer = normalize_shape(arr.shape[: arr.ndim - len(ishape)])
        npdt = numpy_scalar_dtype(dtype)
        itemsize = elem_size(dtype)
        if not copy and dev.is_cpu and self._can_alias(arr, npdt, ishape, itemsize):
            self._set_layout(dtype, outer, tuple(arr.strides[: len(outer)]), arr.ctypes.data if arr.size else None)
            self.capacity = _extent(outer, self.strides, itemsize)
            self.device = dev
            self._owner = arr
            return
        self._init_alloc(outer, dtype, dev, pinned)
        if self.size == 0:
            return
        if dev.allocator.host_accessible:
            self._host_numpy()[...] = arr
        else:
            host = np.ascontiguousarray(arr, dtype=npdt)
            dev.allocator.copy_from_host(self.ptr, host.ctypes.data, self.capacity)

    @staticmethod
    def _can_alias(arr: np.ndarray, npdt: np.dtype, ishape: tuple[int, ...], itemsize: int) -> bool:
        if arr.dtype != npdt or any(s < 0 for s in arr.strides):
            return False
        k = len(ishape)
        if k and tuple(arr.strides[arr.ndim - k :]) != contiguous_strides(ishape, npdt.itemsize):
            return False
        return arr.ctypes.data % npdt.alignment == 0 and all(s % npdt.alignment == 0 for s in arr.strides)

    def _make_view(self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: Any = None) -> array:
        v = array.__new__(array)
        v._reset_fields()
        ptr = self.ptr + offset if self.ptr is not None else None
        v._set_layout(self.dtype if dtype is None else dtype, shape, strides, ptr)
        v.capacity = _extent(shape, strides, elem_size(v.dtype))
        v.device, v.pinned, v._owner = self.device, self.pinned, self
        if self._grad is not None:
            # reinterpreting views keep the gradient, reinterpreted the same way (as the reference does)
            v._grad = self._grad._make_view(offset, shape, strides, dtype=dtype)
            v._requires_grad = self._requires_grad
        return v

    # -- gradients ----------------------------------------------------------------------------------------------

    def _zeros_with_layout(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> array:
        """A new zeroed array of this one's dtype, device and pinning with the given shape and byte strides."""
        g = array.__new__(array)
        g._reset_fields()
        if _is_contiguous(shape, strides, elem_size(self.dtype)):
            g._init_alloc(shape, self.dtype, self.device, self.pinned)
            g._zero()
            return g
        itemsize = elem_size(self.dtype)
        span = -(-_extent(shape, strides, itemsize) // itemsize)
        g._init_alloc((span,), self.dtype, self.device, self.pinned)
        g._zero()
        return g._make_view(0, shape, strides)

    def _alloc_grad(self) -> None:
        # The gradient has the same byte strides as the data: native code indexes both with one set of strides.
        self._grad = self._zeros_with_layout(self.shape, self.strides)
        self._requires_grad = True
        self._ctype = None

    @property
    def grad(self) -> array | None:
        """The gradient array (same shape, dtype and strides), or ``None``."""
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is None:
            self._grad = None
            self._requires_grad = False
            self._retain_grad = False
        else:
            if not isinstance(value, array):
                value = array(value, dtype=self.dtype, device=self.device)
            if value.shape != self.shape:
                raise ValueError(
                    f"The given gradient array is incompatible: expected shape {self.shape}, got {value.shape}"
                )
            if not types_equal(value.dtype, self.dtype):
                raise ValueError(
                    f"The given gradient array is incompatible: expected dtype {type_name(self.dtype)}, "
                    f"got {type_name(value.dtype)}"
                )
            if value.device != self.device:
                raise ValueError(f"The given gradient array is on device {value.device}, expected {self.device}")
            if value.size and value.strides != self.strides:
                raise ValueError(
                    f"The given gradient array has strides {value.strides}, but the array has strides {self.strides}; "
                    "gradients must have the same memory layout (use a contiguous array for both)"
                )
            self._grad = value
            self._requires_grad = True
        self._ctype = None

    @property
    def retain_grad(self) -> bool:
        """Keep this array's gradient when the backward pass goes through a store into it.

        By default the adjoint of ``a[i] = v`` passes ``a.grad[i]`` to ``v`` and then zeroes it (the store replaced
        the element's earlier value); with ``retain_grad`` every writer of the element receives its gradient.
        """
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value: bool) -> None:
        if value and self._grad is None:
            raise ValueError("retain_grad=True needs a gradient: create the array with requires_grad=True (or set "
                             "requires_grad first)")
        self._retain_grad = bool(value)
        self._ctype = None

    @property
    def requires_grad(self) -> bool:
        """Whether this array has a gradient; setting ``True`` allocates a zero gradient, ``False`` drops it."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self._grad is None:
            self._alloc_grad()
        elif not value:
            self._grad = None
            self._requires_grad = False
            self._retain_grad = False
            self._ctype = None

    # -- properties ---------------------------------------------------------------------------------------------

    @property
    def is_contiguous(self) -> bool:
        """True if elements are laid out densely in C order."""
        if self._is_annotation:
            return False
        return _is_contiguous(self.shape, self.strides, elem_size(self.dtype))

    @property
    def vars(self) -> dict[str, Any]:
        """Not supported: struct-of-arrays access (accepted name of the reference API)."""
        raise AttributeError("array.vars is not supported")

    def __ctype__(self) -> abi.ArrayDesc:
        """The native descriptor (cached; rebuilt when ``grad`` changes)."""
        desc = self._ctype
        if desc is None:
            if self._is_annotation:
                raise TypeError("An array annotation (wp.array(dtype=...)) has no storage; pass a concrete array")
            desc = abi.ArrayDesc()
            desc.data = self.ptr or 0
            desc.grad = (self._grad.ptr or 0) if self._grad is not None else 0
            for i in range(self.ndim):
                desc.shape[i] = self.shape[i]
                desc.strides[i] = self.strides[i]
            desc.ndim = self.ndim
            desc.flags = abi.ARRAY_KEEP_GRAD if self._retain_grad else 0
            self._ctype = desc
        return desc

    #: read flag for the tape's overwrite check: set when a launch or copy recorded on a checking tape reads the array
    #: (``wp.config.verify_autograd_array_access``), cleared by that tape's ``backward()`` / ``reset()``
    _is_read = False
    #: ids of the tapes whose recorded reads set the flag (``None``: none)
    _read_by: set[int] | None = None

    def mark_init(self) -> None:
        """Clear this array's read flag."""
        self._is_read = False
        self._read_by = None

    def mark_read(self, reader: int | None = None) -> None:
        """Flag this array (and the arrays it is a view of) as read by a recorded launch or function."""
        node: Any = self
        while isinstance(node, array):
            node._is_read = True
            if reader is not None:
                if node._read_by is None:
                    node._read_by = set()
                node._read_by.add(reader)
            node = node._owner

    def _unmark_read(self, reader: int) -> None:
        node: Any = self
        while isinstance(node, array):
            if node._read_by:
                node._read_by.discard(reader)
            if not node._read_by:
                node._is_read = False
            node = node._owner

    def mark_write(self, **kwargs: Any) -> None:
        """Warn if this array is about to be written after a recorded launch read it.

        Keyword arguments (e.g. ``kernel_name``, ``arg_name``, ``operation``) describe the writer in the message.
        ``Tape.backward()`` raises ``wp.OverwriteError`` for the overwrites that would make gradients wrong.
        """
        if self._is_read:
            import warnings

            who = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            warnings.warn(f"array of shape {self.shape} is overwritten after a recorded launch read it"
                          + (f" ({who})" if who else "") + "; gradients that need its old values would be wrong",
                          UserWarning, stacklevel=2)

    # -- host access --------------------------------------------------------------------------------------------

    def _check_concrete(self, what: str) -> None:
        if self._is_annotation:
            raise TypeError(f"{what} needs a concrete array, not an array annotation (wp.array(dtype=...))")

    def _interface(self, void: bool = False) -> dict[str, Any]:
        npdt = numpy_scalar_dtype(self.dtype)
        ishape = inner_shape(self.dtype)
        desc: dict[str, Any] = {
            "data": (self.ptr or 0, False),
            "shape": self.shape + ishape,
            "strides": self.strides + contiguous_strides(ishape, npdt.itemsize),
            "typestr": f"|V{npdt.itemsize}" if void or npdt.names else npdt.str,
            "version": 3,
        }
        if npdt.names and not void:
            desc["descr"] = npdt.descr
        return desc

    def _host_numpy(self) -> np.ndarray:
        """A NumPy view of host-accessible memory (structs: a structured view)."""
        cached = self._host_iface
        if cached is None:  # the layout never changes: build the interface once (no reference back to self)
            npdt = numpy_scalar_dtype(self.dtype)
            void = bool(npdt.names) or npdt.kind == "V"  # structs, and extension dtypes such as ml_dtypes' bfloat16
            cached = self._host_iface = (self._interface(void=void), npdt if void else None)
        view = np.asarray(_HostView(self, cached[0]))
        return view if cached[1] is None else view.view(cached[1])

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """NumPy's array interface (host memory only)."""
        if self._is_annotation or not self.device.allocator.host_accessible:
            raise AttributeError("__array_interface__ is only available for CPU arrays; use .numpy() to copy to host")
        return self._interface()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface (v3, with the producing stream) of an array on a CUDA device."""
        return _protocol("cuda_export")(self)  # type: ignore[no-any-return]

    # DLPack protocol, implemented by the interop layer (interop/dlpack.py), which builds on this one.
    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        """A DLPack capsule viewing this array (zero-copy); see :func:`treadle._src.interop.dlpack.export_array`."""
        return _protocol("dlpack_export")(self, stream=stream, max_version=max_version, dl_device=dl_device,
                                          copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device_type, device_id)`` of this array in DLPack terms (``(1, 0)`` for the CPU)."""
        return _protocol("dlpack_device")(self)  # type: ignore[no-any-return]

    def numpy(self) -> np.ndarray:
        """A NumPy view of the data (zero-copy on the CPU; a host copy for device memory).

        Vector/matrix elements give extra trailing dimensions, structs a structured array.
        """
        if self._is_annotation:
            return np.empty((0,), dtype=numpy_scalar_dtype(self.dtype) if self.dtype is not Any else np.float32)
        if self.device.allocator.host_accessible:
            return self._host_numpy()
        npdt = numpy_scalar_dtype(self.dtype)
        host = np.empty(self.shape + inner_shape(self.dtype), dtype=npdt)
        if self.size and self.is_contiguous:
            self.device.allocator.copy_to_host(host.ctypes.data, self.ptr, host.nbytes)
        elif self.size:
            host.reshape(-1).view(np.uint8)[...] = _device_read(self).reshape(-1)
        return host

    def _elements(self, raw: np.ndarray) -> list[Any]:
        """Python values of the elements in ``raw`` (a NumPy array of stored values, outer dims flattened)."""
        dtype = self.dtype
        if is_struct_type(dtype):
            return [dtype.from_numpy_value(v, self.device) for v in raw.reshape(-1)]
        if is_composite_type(dtype):
            n = math.prod(dtype._shape_)
            flat = np.ascontiguousarray(raw).reshape(-1, n)
            make = getattr(dtype, "from_buffer_copy", None)
            if make is not None:
                return [make(row) for row in flat]
            return [dtype(*row.tolist()) for row in flat]
        return raw.reshape(-1).tolist()  # type: ignore[no-any-return]

    def list(self) -> list[Any]:
        """All elements as a flat list of Python values (numbers, vector/matrix instances, struct instances)."""
        self._check_concrete("list()")
        return self._elements(self.numpy())

    # -- element and slice access -------------------------------------------------------------------------------

    def _parse_index(self, key: Any) -> tuple[int, tuple[int, ...], tuple[int, ...], bool]:
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = (slice(None),) * (self.ndim - len(key) + 1)
            key = key[:at] + fill + key[at + 1 :]
        if len(key) > self.ndim:
            raise IndexError(f"too many indices for array: array has {self.ndim} dimension(s), got {len(key)} indices")
        offset = 0
        shape: list[int] = []
        strides: list[int] = []
        for dim, k in enumerate(key):
            n, st = self.shape[dim], self.strides[dim]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step <= 0:
                    raise ValueError("Negative slice steps are not supported; reverse with NumPy (a.numpy()[::-1])")
                count = len(range(start, stop, step))
                offset += start * st if count else 0
                shape.append(count)
                strides.append(st * step)
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise TypeError(f"Invalid index {k!r}: arrays accept ints, slices and ... (Ellipsis)") from None
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
                offset += (i + n if i < 0 else i) * st
        full = len(shape) == 0 and len(key) == self.ndim
        shape.extend(self.shape[len(key) :])
        strides.extend(self.strides[len(key) :])
        return offset, tuple(shape), tuple(strides), full

    def __getitem__(self, key: Any) -> Any:
        self._check_concrete("Indexing")
        if isinstance(key, array) or (isinstance(key, tuple) and any(isinstance(k, array) for k in key)):
            from .indexedarray import index_with_arrays  # arr[idx_array, ...] is an indexed view

            return index_with_arrays(self, key if isinstance(key, tuple) else (key,))
        offset, shape, strides, full = self._parse_index(key)
        if not full:
            return self._make_view(offset, shape, strides)
        itemsize = elem_size(self.dtype)
        raw = np.empty(itemsize, dtype=np.uint8)
        assert self.ptr is not None
        self.device.allocator.copy_to_host(raw.ctypes.data, self.ptr + offset, itemsize)
        values = raw.view(numpy_scalar_dtype(self.dtype))
        return self._elements(values)[0]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._check_concrete("Item assignment")
        offset, shape, strides, full = self._parse_index(key)
        if full:
            shape, strides = (1,), (elem_size(self.dtype),)
        target = self._make_view(offset, shape, strides)
        if isinstance(value, array) or (not full and self._is_many(value)):
            target.assign(value)
        else:
            target.fill_(value)

    def _is_many(self, value: Any) -> bool:
        if is_struct_type(self.dtype):
            return isinstance(value, (list, tuple, np.ndarray))
        if is_composite_type(type(value)) or isinstance(value, scalars.scalar_base):
            return False
        return bool(np.ndim(value) > len(inner_shape(self.dtype)))

    def __len__(self) -> int:
        return self.shape[0] if not self._is_annotation else 0

    # -- filling and copying ------------------------------------------------------------------------------------

    def zero_(self) -> None:
        """Set all elements to zero (recorded, not run, inside a CPU graph capture)."""
        self._check_concrete("zero_()")
        if _graph.STATE.count and _graph.record_op(self._zero, self):
            return
        self._zero()

    def _zero(self) -> None:
        if self.size == 0:
            return
        if self.is_contiguous:
            self.device.allocator.memset(self.ptr, 0, self.size * elem_size(self.dtype))
        else:
            self._fill_raw(np.zeros(elem_size(self.dtype), dtype=np.uint8))

    def fill_(self, value: Any) -> None:
        """Set every element to ``value`` (a number, a vector/matrix or sequence, or a struct instance).

        Inside a CPU graph capture the fill is recorded (with ``value`` as of now) and runs on each replay.
        """
        self._check_concrete("fill_()")
        elem = value_bytes(value, self.dtype)
        if _graph.STATE.count and _graph.record_op(lambda: self._fill_elem(elem), self):
            return
        self._fill_elem(elem)

    def _fill(self, value: Any) -> None:
        self._fill_elem(value_bytes(value, self.dtype))

    def _fill_elem(self, elem: Any) -> None:
        if self.size == 0:
            return
        if self.device.allocator.host_accessible:
            self._host_numpy()[...] = elem
        else:
            self._fill_raw(np.frombuffer(elem.tobytes(), dtype=np.uint8))

    def _fill_raw(self, raw: np.ndarray) -> None:
        if self.device.allocator.host_accessible:
            itemsize = elem_size(self.dtype)
            iface = {
                "data": (self.ptr, False),
                "shape": (*self.shape, itemsize),
                "strides": (*self.strides, 1),
                "typestr": "|u1",
                "version": 3,
            }
            np.asarray(_HostView(self, iface))[...] = raw
            return
        words = raw.view(np.uint32) if raw.nbytes % 4 == 0 else None
        memset32 = getattr(self.device.allocator, "memset32", None)
        if self.is_contiguous and memset32 is not None and words is not None and np.all(words == words[0]):
            memset32(self.ptr, int(words[0]), self.size * raw.nbytes // 4)  # a device memset, no host buffer
            return
        host = np.tile(raw, self.size)
        if not self.is_contiguous:
            _device_write(self, host)
            return
        self.device.allocator.copy_from_host(self.ptr, host.ctypes.data, host.nbytes)

    def assign(self, src: Any) -> None:
        """Copy ``src`` (an array, NumPy array or list) into this array; shapes (or sizes) must match."""
        self._check_concrete("assign()")
        if not isinstance(src, array):
            src = array(src, dtype=self.dtype, device="cpu", copy=False)
        if src.shape != self.shape and src.size != self.size:
            raise ValueError(f"assign(): shape mismatch: destination shape {self.shape}, source shape {src.shape}")
        copy_array(self, src)
        record_copy(self, src)  # on a recording tape: the gradient flows back from self to src

    # -- views --------------------------------------------------------------------------------------------------

    def reshape(self, shape: Any) -> array:
        """A view with a new shape (``-1`` infers one dimension); the array must be contiguous."""
        self._check_concrete("reshape()")
        dims = list(normalize_shape(shape, allow_infer=True))
        if dims.count(-1) > 1:
            raise ValueError("Cannot infer shape if more than one index is -1")
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or self.size % known:
                raise ShapeError(
                    f"cannot reshape array of shape {self.shape} (size {self.size}) into shape {tuple(dims)}"
                )
            dims[dims.index(-1)] = self.size // known
        new = tuple(dims)
        if math.prod(new) != self.size:
            raise ShapeError(
                f"cannot reshape array of shape {self.shape} (size {self.size}) into shape {new} "
                f"(size {math.prod(new)})"
            )
        if not self.is_contiguous:
            raise ValueError("Reshaping non-contiguous arrays is unsupported; call .contiguous() first")
        return self._make_view(0, new, contiguous_strides(new, elem_size(self.dtype)))

    def flatten(self) -> array:
        """A 1-D view of a contiguous array."""
        self._check_concrete("flatten()")
        if not self.is_contiguous:
            raise ValueError("Flattening non-contiguous arrays is unsupported; call .contiguous() first")
        return self.reshape(-1)

    def view(self, dtype: Any) -> array:
        """The same memory reinterpreted as ``dtype``.

        ``dtype`` has the size of this array's element type; or this array holds vectors/matrices and ``dtype`` is a
        scalar of the size of their components (the components become trailing dimensions: ``vec4`` ``(n,)`` ->
        ``float32`` ``(n, 4)``); or this array holds scalars and ``dtype`` is a vector/matrix type of components of
        that size, whose shape the contiguous trailing dimensions match (``(n, 4)`` -> ``vec4`` ``(n,)``; a lone
        vector or matrix gives shape ``(1,)``).
        """
        self._check_concrete("view()")
        dtype = normalize_dtype(dtype)
        src, size, new = self.dtype, elem_size(self.dtype), elem_size(dtype)
        what = f"cannot create an array view with dtype {type_name(dtype)} from source dtype {type_name(src)}"
        if new == size:
            return self._make_view(0, self.shape, self.strides, dtype=dtype)
        if is_composite_type(src) and scalars.is_scalar_type(dtype):  # components as trailing dimensions
            scalar = src._wp_scalar_type_
            if elem_size(scalar) != new:
                raise TypeError(f"{what}: source scalar dtype {type_name(scalar)} has size {elem_size(scalar)} "
                                f"bytes, but target dtype has size {new} bytes")
            inner = tuple(src._shape_)
            shape = (*self.shape, *inner)
            if len(shape) > MAX_DIMS:
                raise TypeError(f"{what}: the view would have {len(shape)} dimensions (at most {MAX_DIMS})")
            return self._make_view(0, shape, (*self.strides, *contiguous_strides(inner, new)), dtype=dtype)
        if scalars.is_scalar_type(src) and is_composite_type(dtype):  # trailing dimensions as one element
            scalar = dtype._wp_scalar_type_
            if elem_size(scalar) != size:
                raise TypeError(f"{what}: source dtype has size {size} bytes, but target scalar dtype "
                                f"{type_name(scalar)} has size {elem_size(scalar)} bytes")
            inner = tuple(dtype._shape_)
            k = len(inner)
            if self.ndim < k or tuple(self.shape[-k:]) != inner or \
                    tuple(self.strides[-k:]) != contiguous_strides(inner, size):
                raise TypeError(f"{what}: the last {k} dimension(s) of the source must be contiguous with shape "
                                f"{inner}, got shape {self.shape} and strides {self.strides}")
            shape, strides = tuple(self.shape[:-k]), tuple(self.strides[:-k])
            if not shape:  # no 0-dimensional arrays: a lone vector or matrix is an array of one
                shape, strides = (1,), (new,)
            return self._make_view(0, shape, strides, dtype=dtype)
        raise TypeError(f"{what}: source dtype has size {size} bytes, but target dtype has size {new} bytes")

    def transpose(self, axes: Any = None) -> array:
        """A view with permuted dimensions (reversed by default)."""
        self._check_concrete("transpose()")
        order = tuple(reversed(range(self.ndim))) if axes is None else tuple(operator.index(a) for a in axes)
        if sorted(order) != list(range(self.ndim)):
            raise ValueError(f"axes {order} must be a permutation of the {self.ndim} dimensions of the array")
        return self._make_view(0, tuple(self.shape[a] for a in order), tuple(self.strides[a] for a in order))

    def contiguous(self) -> array:
        """This array if it is contiguous, else a contiguous copy."""
        self._check_concrete("contiguous()")
        if self.is_contiguous:
            return self
        out = array(shape=self.shape, dtype=self.dtype, device=self.device, requires_grad=self.requires_grad)
        copy_array(out, self)
        return out

    def to(self, device: Any, requires_grad: bool | None = None) -> array:
        """This array on ``device`` (itself if already there, else a copy)."""
        self._check_concrete("to()")
        dev = _device.get_device(device)
        if dev == self.device:
            return self
        rg = self.requires_grad if requires_grad is None else requires_grad
        out = array(shape=self.shape, dtype=self.dtype, device=dev, requires_grad=rg)
        copy_array(out, self.contiguous() if self.device.allocator.host_accessible else self)
        return out

    def ipc_handle(self) -> bytes:
        """CUDA IPC handle of the allocation (CUDA arrays only)."""
        self._check_concrete("ipc_handle()")
        get = getattr(self.device.allocator, "ipc_handle", None)
        if self.device.is_cpu or get is None:
            raise RuntimeError(f"IPC requires a CUDA device; this array is on '{self.device}'")
        return get(self)  # type: ignore[no-any-return]

    def cptr(self) -> Any:
        """A ctypes pointer to the first element (the scalar type for vectors/matrices)."""
        self._check_concrete("cptr()")
        if is_struct_type(self.dtype):
            ctype = self.dtype.ctype
        elif is_composite_type(self.dtype):
            ctype = self.dtype._wp_scalar_type_._type_
        else:
            ctype = self.dtype._type_
        return ctypes.cast(self.ptr or 0, ctypes.POINTER(ctype))

    # -- host arithmetic ----------------------------------------------------------------------------------------

    def _arith(self, other: Any, op: Any, reverse: bool = False) -> array:
        """``self op other`` elementwise on the host (``other``: a scalar, composite or array).

        A new array of this dtype on this device, with the kernel semantics of the dtype (integer wrap-around, C
        remainder).
        """
        self._check_concrete("Arithmetic")
        npdt = numpy_scalar_dtype(self.dtype)
        a = self.numpy()
        b = other.numpy() if isinstance(other, array) else np.asarray(getattr(other, "value", other))
        with np.errstate(all="ignore"):
            r = op(b.astype(npdt), a) if reverse else op(a, b.astype(npdt))
        return array(np.asarray(r).astype(npdt), dtype=self.dtype, device=self.device)

    def __add__(self, other: Any) -> array:
        return self._arith(other, np.add)

    def __radd__(self, other: Any) -> array:
        return self._arith(other, np.add, True)

    def __sub__(self, other: Any) -> array:
        return self._arith(other, np.subtract)

    def __rsub__(self, other: Any) -> array:
        return self._arith(other, np.subtract, True)

    def __mul__(self, other: Any) -> array:
        return self._arith(other, np.multiply)

    def __rmul__(self, other: Any) -> array:
        return self._arith(other, np.multiply, True)

    def __truediv__(self, other: Any) -> array:
        return self._arith(other, np.true_divide)

    def __rtruediv__(self, other: Any) -> array:
        return self._arith(other, np.true_divide, True)

    def __mod__(self, other: Any) -> array:
        return self._arith(other, np.fmod)

    # in place, as the reference does: the array keeps its memory (views of it, and gradients that views share,
    # see the result)
    def _arith_inplace(self, other: Any, op: Any) -> array:
        self.assign(self._arith(other, op))
        return self

    def __iadd__(self, other: Any) -> array:
        return self._arith_inplace(other, np.add)

    def __isub__(self, other: Any) -> array:
        return self._arith_inplace(other, np.subtract)

    def __imul__(self, other: Any) -> array:
        return self._arith_inplace(other, np.multiply)

    def __itruediv__(self, other: Any) -> array:
        return self._arith_inplace(other, np.true_divide)

    def __rmod__(self, other: Any) -> array:
        return self._arith(other, np.fmod, True)

    # -- display ------------------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        if self._is_annotation:
            return f"array(ndim={self.ndim}, dtype={type_name(self.dtype)})"
        return f"array(shape={self.shape}, dtype={type_name(self.dtype)})"

    def __str__(self) -> str:
        if self._is_annotation:
            return repr(self)
        return str(self.numpy())

    def __or__(self, other: Any) -> Any:
        """``wp.array(dtype=float) | None`` (or ``wp.array[float] | None``) in an annotation: an ``Optional``."""
        if not self._is_annotation:
            return NotImplemented  # a concrete array: ``|`` is not defined on array values
        return annotation_union(self, other)

    def __ror__(self, other: Any) -> Any:
        """``None | wp.array(dtype=float)`` in an annotation."""
        if not self._is_annotation:
            return NotImplemented
        return annotation_union(other, self)

    def __class_getitem__(cls, dtype: Any) -> array:
        """``wp.array[float]``: an annotation of a 1-D array (``array2d[...]``: 2-D, ...).

        ``wp.array[float, 2]`` (or ``typing.Literal[2]``) gives the number of dimensions.
        """
        if isinstance(dtype, tuple) and len(dtype) == 2:
            import typing

            dtype, nd = dtype
            if typing.get_origin(nd) is typing.Literal:
                (nd,) = typing.get_args(nd)
            if not isinstance(nd, int) or not 1 <= nd <= 4:
                raise TypeError(f"wp.array[dtype, ndim]: ndim must be 1 to 4, got {nd!r}")
            return array(dtype=dtype, ndim=nd)
        return array(dtype=dtype, ndim=cls._default_ndim)


def _fixed_ndim_array(n: int) -> type:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> array:  # noqa: N807
        if len(args) <= 10 and "ndim" not in kwargs:  # ndim is the 11th positional parameter
            kwargs["ndim"] = n
        return array(*args, **kwargs)

    doc = f"A {n}-D array: ``array{n}d(dtype=...)`` is an annotation, ``array{n}d(data, dtype=...)`` an array."
    return type(f"array{n}d", (array,), {"__new__": __new__, "_default_ndim": n, "__doc__": doc})


_arrays.register_array_class(array)

array1d = _fixed_ndim_array(1)
array2d = _fixed_ndim_array(2)
array3d = _fixed_ndim_array(3)
array4d = _fixed_ndim_array(4)


def is_array(x: Any) -> bool:
    """True for a concrete array (not an annotation)."""
    return isinstance(x, array) and not x._is_annotation


def is_array_annotation(x: Any) -> bool:
    """True for an array type annotation such as ``wp.array(dtype=float)`` or ``wp.array2d[wp.vec3]``."""
    return isinstance(x, array) and x._is_annotation


def from_ptr(ptr: int, length: int, dtype: Any = None, shape: Any = None, device: Any = None) -> array:
    """Wrap ``length`` elements of external memory at address ``ptr`` (no copy, no ownership)."""
    dtype = scalars.float32 if dtype is None else dtype
    return array(ptr=ptr, dtype=dtype, shape=(length,) if shape is None else shape, device=device)


def copy_array(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0) -> None:
    """Copy elements from ``src`` to ``dest`` (see :func:`treadle._src.lang.creation.copy`).

    ``creation.copy`` checks the offsets and count (:func:`check_copy_counts`) before it calls this.
    """
    for a, name in ((dest, "dest"), (src, "src")):
        if not is_array(a):
            raise TypeError(f"copy(): {name} must be an array, got {type(a).__name__}")
    if not types_equal(dest.dtype, src.dtype):
        raise CopyTypeError(
            f"Incompatible array data types: destination dtype={type_name(dest.dtype)}, source dtype="
            f"{type_name(src.dtype)}; convert first (wp.array(src.numpy(), dtype=...)) or reinterpret with src.view()"
        )
    if getattr(dest, "_indexed_", False) or getattr(src, "_indexed_", False):
        # Indexed arrays: gathered/scattered through their index tables (host round trip).
        if count or dest_offset or src_offset:
            raise CopyError("copy(): offsets and counts are not supported with indexed or Fabric arrays")
        if dest.shape != src.shape:
            raise CopyError(f"copy(): shape mismatch: destination {dest.shape}, source {src.shape}")
        if dest.size:
            dest.assign(src.numpy())
        return
    itemsize = elem_size(dest.dtype)
    if count == 0 and dest_offset == 0 and src_offset == 0 and dest.shape == src.shape:
        if dest.size == 0:
            return
        if dest.is_contiguous and src.is_contiguous:
            _copy_bytes(dest, dest.ptr, src, src.ptr, dest.size * itemsize)  # type: ignore[arg-type]
            return
        if dest.device.allocator.host_accessible and src.device.allocator.host_accessible:
            dest._host_numpy()[...] = src._host_numpy()
            return
        # device memory on either side: gather the source into contiguous host bytes, scatter into the destination
        if src.device.allocator.host_accessible:
            data = np.ascontiguousarray(src._host_numpy()).reshape(-1).view(np.uint8)
        else:
            data = _device_read(src)
        if dest.device.allocator.host_accessible:
            dest._host_numpy().reshape(-1).view(np.uint8)[...] = data.reshape(-1)
        else:
            _device_write(dest, data)
        return
    if not (dest.is_contiguous and src.is_contiguous):
        raise noncontiguous_copy_error(dest, src)
    if count == 0:
        count = src.size - src_offset
    check_copy_range(dest, src, dest_offset, src_offset, count)
    if count:
        _copy_bytes(dest, dest.ptr + dest_offset * itemsize, src, src.ptr + src_offset * itemsize, count * itemsize)  # type: ignore[operator]


def record_copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0) -> None:
    """On a recording tape, record a copy so that ``backward()`` adds ``dest.grad`` into ``src.grad``."""
    tape = active_tape()
    if tape is not None:
        tape.record_copy(dest, src, dest_offset, src_offset, count)


def noncontiguous_copy_error(dest: array, src: array) -> CopyError:
    """The error of a flat copy (offsets, count or another shape) that non-contiguous arrays cannot take."""
    what = (f"a copy between arrays of different shapes ({src.shape} -> {dest.shape})" if dest.shape != src.shape
            else "a copy with offsets or a count")
    return CopyError(f"copy(): {what} of non-contiguous arrays is only supported for 1-D arrays (strided views); "
                     "call .contiguous() first")


def check_copy_counts(dest_offset: Any, src_offset: Any, count: Any) -> None:
    """``wp.copy``'s offsets and count: non-negative integers (checked before any pointer arithmetic)."""
    for what, v in (("Source offset", src_offset), ("Destination offset", dest_offset), ("count", count)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise CopyError(f"copy(): offsets and count must be integers, got {what.lower()} {v!r}")
        if v < 0:
            raise CopyError(f"copy(): {what} must be non-negative, got {v}")


def check_copy_range(dest: array, src: array, dest_offset: int, src_offset: int, count: int) -> None:
    """``count`` elements from ``src_offset`` of ``src`` to ``dest_offset`` of ``dest`` stay within both."""
    if src_offset + count > src.size:
        raise CopyError(f"copy(): the range [{src_offset}, {src_offset + count}) exceeds the source size {src.size}")
    if dest_offset + count > dest.size:
        raise CopyError(f"copy(): copying {count} elements to offset {dest_offset} exceeds the destination size "
                        f"{dest.size}")


def _copy_bytes(dest: array, dst: int, src: array, srcp: int, nbytes: int) -> None:
    da, sa = dest.device.allocator, src.device.allocator
    if sa.host_accessible and not da.host_accessible:
        da.copy_from_host(dst, srcp, nbytes)
    elif da.host_accessible and not sa.host_accessible:
        sa.copy_to_host(dst, srcp, nbytes)
    elif da.host_accessible or da is sa:
        da.memcpy(dst, srcp, nbytes)
    elif hasattr(da, "copy_peer"):  # between two CUDA devices
        da.copy_peer(dst, src.device, srcp, nbytes)
    else:
        raise NotImplementedError(f"Copying between devices {src.device} and {dest.device} is not supported yet")


def _has_cuda_interface(data: Any) -> bool:
    if isinstance(data, (array, np.ndarray, list, tuple)):
        return False
    try:
        return hasattr(data, "__cuda_array_interface__")
    except Exception:  # noqa: BLE001 - a property that fails for host data (e.g. CPU tensors)
        return False


def _strided_bytes(a: array, raw: np.ndarray) -> np.ndarray:
    """A byte view of ``a``'s elements inside ``raw`` (its memory from the first element to the last)."""
    itemsize = elem_size(a.dtype)
    return np.lib.stride_tricks.as_strided(raw, shape=(*a.shape, itemsize), strides=(*a.strides, 1))


def _device_read(a: array) -> np.ndarray:
    """The elements of a non-contiguous device array as contiguous host bytes (copies the spanned memory)."""
    extent = _extent(a.shape, a.strides, elem_size(a.dtype))
    raw = np.empty(extent, dtype=np.uint8)
    if extent:
        a.device.allocator.copy_to_host(raw.ctypes.data, a.ptr, extent)
    return np.ascontiguousarray(_strided_bytes(a, raw))


def _device_write(a: array, data: np.ndarray) -> None:
    """Store contiguous host bytes into the elements of a (non-contiguous) device array, keeping the gaps."""
    extent = _extent(a.shape, a.strides, elem_size(a.dtype))
    if not extent:
        return
    raw = np.empty(extent, dtype=np.uint8)
    alloc = a.device.allocator
    alloc.copy_to_host(raw.ctypes.data, a.ptr, extent)
    _strided_bytes(a, raw)[...] = np.asarray(data, dtype=np.uint8).reshape((*a.shape, elem_size(a.dtype)))
    alloc.copy_from_host(a.ptr, raw.ctypes.data, extent)
    synchronize = getattr(a.device, "synchronize", None)
    if synchronize is not None:
        synchronize()  # raw is freed on return: the upload must have read it
