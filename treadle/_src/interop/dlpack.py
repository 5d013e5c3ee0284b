"""DLPack: zero-copy exchange of arrays with PyTorch, NumPy, JAX, CuPy, Paddle and any other DLPack library.

Export: :meth:`array.__dlpack__` / :meth:`array.__dlpack_device__` (declared on the array class, implemented by
:func:`export_array` and :func:`dlpack_device` here) and :func:`to_dlpack`. Import: :func:`from_dlpack` takes any
object with ``__dlpack__`` or a capsule.

The DLPack 1.x structures are declared with ``ctypes``; capsules are made with the CPython capsule API through
``ctypes.pythonapi``. No compiled extension is involved.

Lifetimes, the two rules of the protocol:

- **Export.** Each managed tensor we hand out lives in :data:`_EXPORTS` (keyed by its address) together with its
  shape/stride buffers and the exported array, so the array's memory stays valid until the consumer calls the
  deleter. The deleter drops that entry; it takes effect once (a second call finds nothing to drop and is only
  counted). A capsule that nobody consumed calls the deleter from its destructor.
- **Import.** We rename the capsule to ``used_dltensor[_versioned]`` (so its destructor does nothing) and attach a
  finalizer to the new array that calls the producer's deleter exactly once when the array and all its views are
  gone.
"""

from __future__ import annotations

import ctypes
import enum
import threading
import weakref
from typing import Any

from ..lang import array as _arr
from ..runtime import device as _device
from ..types import scalars
from .common import InteropError, fit_layout, scalar_size, stream_handle, wrap_memory

# ---------------------------------------------------------------------------------------------------------------
# The DLPack ABI (dlpack.h, version 1.x)
# ---------------------------------------------------------------------------------------------------------------

#: The DLPack version we produce (and the highest major version we read).
DLPACK_VERSION = (1, 0)

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1


class DLDeviceType(enum.IntEnum):
    """Device types of the DLPack standard (those Treadle can meet)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


class DLDataTypeCode(enum.IntEnum):
    """Type codes of the DLPack standard."""

    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLOpaqueHandle = 3
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.c_void_p),  # int64_t*: plain addresses, set and read without pointer objects
        ("strides", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    """The legacy (pre-1.0) managed tensor, carried by capsules named ``dltensor``."""

    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """The 1.x managed tensor, carried by capsules named ``dltensor_versioned``."""

    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert ctypes.sizeof(DLTensor) == 48 and ctypes.sizeof(DLManagedTensor) == 64
assert ctypes.sizeof(DLManagedTensorVersioned) == 80

#: Most dimensions an export can have: the array's, plus two inner dimensions for matrices.
_MAX_EXPORT_DIMS = _arr.MAX_DIMS + 2


class _LegacyBlock(ctypes.Structure):
    """One export in one allocation: the managed tensor, then its shape and strides."""

    _fields_ = [("managed", DLManagedTensor), ("dims", ctypes.c_int64 * (2 * _MAX_EXPORT_DIMS))]


class _VersionedBlock(ctypes.Structure):
    _fields_ = [("managed", DLManagedTensorVersioned), ("dims", ctypes.c_int64 * (2 * _MAX_EXPORT_DIMS))]


_DIMS_OFFSET = {_LegacyBlock: _LegacyBlock.dims.offset, _VersionedBlock: _VersionedBlock.dims.offset}

_B = scalars
_TO_DL: dict[Any, tuple[int, int]] = {
    _B.bool: (DLDataTypeCode.kDLBool, 8),
    _B.int8: (DLDataTypeCode.kDLInt, 8),
    _B.int16: (DLDataTypeCode.kDLInt, 16),
    _B.int32: (DLDataTypeCode.kDLInt, 32),
    _B.int64: (DLDataTypeCode.kDLInt, 64),
    _B.uint8: (DLDataTypeCode.kDLUInt, 8),
    _B.uint16: (DLDataTypeCode.kDLUInt, 16),
    _B.uint32: (DLDataTypeCode.kDLUInt, 32),
    _B.uint64: (DLDataTypeCode.kDLUInt, 64),
    _B.float16: (DLDataTypeCode.kDLFloat, 16),
    _B.float32: (DLDataTypeCode.kDLFloat, 32),
    _B.float64: (DLDataTypeCode.kDLFloat, 64),
    _B.bfloat16: (DLDataTypeCode.kDLBfloat, 16),
}
_TO_DL = {k: (int(code), bits) for k, (code, bits) in _TO_DL.items()}  # plain ints: cheaper to store in ctypes
_FROM_DL: dict[tuple[int, int], Any] = {v: k for k, v in _TO_DL.items()}

# ---------------------------------------------------------------------------------------------------------------
# Capsule API through ctypes
# ---------------------------------------------------------------------------------------------------------------

_api = ctypes.pythonapi
_P = ctypes.PYFUNCTYPE  # holds the GIL, turns a set Python error into an exception
_capsule_new = _P(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(("PyCapsule_New", _api))
_capsule_is_valid = _P(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_capsule_get_pointer = _P(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_capsule_set_name = _P(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(("PyCapsule_SetName", _api))
_incref = _P(None, ctypes.py_object)(("Py_IncRef", _api))
# Used inside the capsule destructor, where the capsule is a dying object: plain C calls that only read it, with no
# Python error check (an unrelated pending error must not be raised inside the destructor).
_raw_is_valid = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

_LEGACY = b"dltensor"
_VERSIONED = b"dltensor_versioned"
# Capsules keep a pointer to their name: the names live in buffers that are never freed.
_NAME_BUFFERS = {
    name: ctypes.create_string_buffer(name) for name in (_LEGACY, _VERSIONED, b"used_dltensor", b"used_dltensor_versioned")
}

_DeleterT = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _name_ptr(name: bytes) -> int:
    return ctypes.addressof(_NAME_BUFFERS[name])


# ---------------------------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------------------------


class _ExportRegistry:
    """Managed tensors handed to consumers and not yet released, keyed by address.

    This is process-wide state by necessity: the deleter is a C function pointer called by foreign code, which can
    only find its tensor through its address.
    """

    def __init__(self) -> None:
        self._live: dict[int, tuple[Any, ...]] = {}
        # Re-entrant: a garbage collection inside a locked section can destroy an unconsumed capsule, whose
        # destructor releases through this registry on the same thread.
        self._lock = threading.RLock()
        self.exported = 0
        self.released = 0
        self.unknown_releases = 0

    def add(self, addr: int, keep: tuple[Any, ...]) -> None:
        with self._lock:
            self._live[addr] = keep
            self.exported += 1

    def release(self, addr: int) -> None:
        with self._lock:
            keep = self._live.pop(addr, None)
            if keep is None:
                self.unknown_releases += 1
            else:
                self.released += 1
        del keep  # outside the lock: dropping the last reference may free the array (and run other finalizers)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "live": len(self._live),
                "exported": self.exported,
                "released": self.released,
                "unknown_releases": self.unknown_releases,
            }


_EXPORTS = _ExportRegistry()


def _on_release(addr: int | None) -> None:
    try:
        if addr:
            _EXPORTS.release(addr)
    except BaseException:  # never let an exception cross into the consumer's C code
        pass


def _on_capsule_destroyed(capsule: int | None) -> None:
    # Only an unconsumed capsule still carries its original name; a consumer renames it and calls the deleter itself.
    try:
        for name in (_VERSIONED, _LEGACY):
            if capsule and _raw_is_valid(capsule, name):
                _on_release(_raw_get_pointer(capsule, name))
                return
    except BaseException:
        pass


_RELEASE = _DeleterT(_on_release)
_CAPSULE_DESTRUCTOR = _DeleterT(_on_capsule_destroyed)
_RELEASE_ADDR = ctypes.cast(_RELEASE, ctypes.c_void_p).value
_DESTRUCTOR_ADDR = ctypes.cast(_CAPSULE_DESTRUCTOR, ctypes.c_void_p).value
# Foreign code may call the deleter (or drop a capsule) while the interpreter tears this module down: keep the
# callbacks and name buffers alive for the life of the process.
_KEEP_FOREVER = (_RELEASE, _CAPSULE_DESTRUCTOR, _NAME_BUFFERS)
_incref(_KEEP_FOREVER)


def export_stats() -> dict[str, int]:
    """Counters of DLPack exports: ``live`` (not yet released), ``exported``, ``released``, ``unknown_releases``.

    ``unknown_releases`` counts deleter calls for tensors that were already released (a consumer bug); tests use
    these numbers to check that each deleter runs exactly once.
    """
    return _EXPORTS.stats()


def dlpack_device(arr: Any) -> tuple[DLDeviceType, int]:
    """``(device_type, device_id)`` of an array, as ``__dlpack_device__`` reports it."""
    arr._check_concrete("__dlpack_device__()")
    dev = arr.device
    if dev.is_cuda:
        return (DLDeviceType.kDLCUDA, int(dev.ordinal))
    return (DLDeviceType.kDLCPU, 0)


def _dl_layout(arr: Any) -> tuple[tuple[int, int], tuple[int, ...], tuple[int, ...]]:
    """DLPack ``(code, bits)``, shape and element strides of an array (vector/matrix types add inner dims)."""
    dtype = arr.dtype
    if _arr.is_struct_type(dtype):
        raise InteropError(
            f"Cannot export an array of struct {_arr.type_name(dtype)} through DLPack: DLPack has no record types; "
            "export each field as its own array, or view the memory as bytes (arr.view(...)) first"
        )
    scalar = dtype._wp_scalar_type_
    code_bits = _TO_DL[scalar]
    itemsize = scalar_size(scalar)
    bad = [s for s in arr.strides if s % itemsize]
    if bad:
        raise InteropError(
            f"Cannot export an array with byte strides {arr.strides} through DLPack: strides must be multiples of "
            f"the {itemsize}-byte {scalar.__name__} size (DLPack counts strides in elements); make a contiguous "
            "copy first (arr.contiguous())"
        )
    ishape = _arr.inner_shape(dtype)
    shape = tuple(arr.shape) + ishape
    strides = tuple(s // itemsize for s in arr.strides) + _arr.contiguous_strides(ishape, 1)
    return code_bits, shape, strides


def _sync_for_consumer(arr: Any, stream: Any) -> None:
    dev = arr.device
    if not dev.is_cuda:
        if stream is not None and stream != -1:
            raise InteropError(f"DLPack stream must be None or -1 for arrays on the CPU, got stream={stream!r}")
        return
    if stream == -1:  # the consumer asked for no synchronisation
        return
    if stream == 0:
        raise InteropError("DLPack stream 0 is ambiguous and not allowed: pass 1 for the legacy default stream")
    # Work queued on Treadle's streams must finish before the consumer's stream reads the data. Waiting for the device
    # is always correct; an event recorded on our stream and awaited on theirs will be cheaper once streams land.
    dev.synchronize()


def export_array(
    arr: Any, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: bool | None = None
) -> Any:
    """Implementation of :meth:`array.__dlpack__`: a DLPack capsule viewing ``arr`` (no copy unless asked).

    Args:
        arr: a concrete array of scalar, vector or matrix elements.
        stream: the consumer's stream (CUDA: a ``cudaStream_t`` integer, 1 = legacy default, -1 = no sync;
            CPU: ``None`` or -1).
        max_version: the highest DLPack version the consumer reads; ``(1, x)`` or higher gives a
            ``dltensor_versioned`` capsule, ``None`` a legacy ``dltensor`` capsule.
        dl_device: the device the consumer wants; a different one is served by a copy to the CPU only.
        copy: ``True`` always copies, ``False`` never copies, ``None`` copies only when needed.

    Raises:
        InteropError: struct elements, strides that are not whole elements, or an impossible device/copy request.
    """
    arr._check_concrete("__dlpack__()")
    versioned = max_version is not None and int(tuple(max_version)[0]) >= 1
    src, copied = arr, False
    if dl_device is not None and tuple(int(x) for x in dl_device) != tuple(dlpack_device(arr)):
        wanted = tuple(int(x) for x in dl_device)
        if wanted[0] != DLDeviceType.kDLCPU or copy is False:
            raise InteropError(
                f"Cannot export an array on {arr.device} to DLPack device {wanted} without a copy"
                + ("" if copy is False else ": only copies to the CPU are supported")
            )
        src, copied = arr.to("cpu", requires_grad=False), True
    if copy is True and not copied:
        from ..lang.creation import clone

        src, copied = clone(arr, requires_grad=False), True
    code_bits, shape, strides = _dl_layout(src)
    _sync_for_consumer(arr, stream)

    ndim = len(shape)
    block_type = _VersionedBlock if versioned else _LegacyBlock
    block = block_type()
    managed = block.managed
    if versioned:
        managed.version.major, managed.version.minor = DLPACK_VERSION
        managed.flags = FLAG_IS_COPIED if copied else 0
    addr = ctypes.addressof(block)
    dims = addr + _DIMS_OFFSET[block_type]
    block.dims[: 2 * ndim] = shape + strides
    t = managed.dl_tensor
    t.data = src.ptr
    dev_type, dev_id = dlpack_device(src)
    t.device.device_type, t.device.device_id = dev_type, dev_id
    t.ndim = ndim
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code_bits[0], code_bits[1], 1
    t.shape, t.strides = dims, dims + 8 * ndim
    managed.deleter = _RELEASE_ADDR
    _EXPORTS.add(addr, (block, src))
    try:
        return _capsule_new(addr, _name_ptr(_VERSIONED if versioned else _LEGACY), _DESTRUCTOR_ADDR)
    except BaseException:
        _EXPORTS.release(addr)
        raise


def to_dlpack(wp_array: Any) -> Any:
    """A legacy DLPack capsule (``dltensor``) viewing ``wp_array`` without copying.

    The capsule can be handed to any DLPack consumer (``torch.utils.dlpack.from_dlpack``, ``jax.dlpack``, ...)
    exactly once; the array stays alive until the consumer releases it.
    """
    if not _arr.is_array(wp_array):
        raise TypeError(f"to_dlpack() expects a Treadle array, got {type(wp_array).__name__}")
    return export_array(wp_array)


# ---------------------------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------------------------


def is_capsule(obj: Any) -> bool:
    """True for a Python capsule object."""
    return type(obj).__name__ == "PyCapsule"


_HOST_TYPES = (int(DLDeviceType.kDLCPU), int(DLDeviceType.kDLCUDAHost))
_CUDA_TYPES = (int(DLDeviceType.kDLCUDA), int(DLDeviceType.kDLCUDAManaged))


def device_from_dl(device_type: int, device_id: int) -> Any:
    """The Treadle device of a DLPack ``(device_type, device_id)``."""
    if device_type in _HOST_TYPES:
        return _device.get_device("cpu")
    if device_type in _CUDA_TYPES:
        return _device.get_device(f"cuda:{int(device_id)}")
    try:
        name = f" ({DLDeviceType(device_type).name})"
    except ValueError:
        name = ""
    raise InteropError(f"Unsupported source device for DLPack: device_type={device_type}, device_id={device_id}{name}; "
                       "Treadle works with CPU and CUDA memory")


def _consumer_stream(device_type: int, device_id: int) -> int | None:
    if device_type not in _CUDA_TYPES:
        return None
    dev = device_from_dl(device_type, device_id)
    try:
        return stream_handle(dev.stream)
    except (RuntimeError, AttributeError, TypeError):
        return 1  # the legacy default stream (the DLPack default)


def _request_capsule(obj: Any) -> Any:
    dl_dev = getattr(obj, "__dlpack_device__", None)
    dev_type, dev_id = dl_dev() if dl_dev is not None else (DLDeviceType.kDLCPU, 0)
    device_from_dl(int(dev_type), int(dev_id))  # refuse unsupported devices before the producer exports anything
    kwargs: dict[str, Any] = {}
    stream = _consumer_stream(int(dev_type), int(dev_id))
    if stream is not None:
        kwargs["stream"] = stream
    try:
        return obj.__dlpack__(max_version=DLPACK_VERSION, **kwargs)
    except TypeError:  # a producer from before DLPack 1.0 does not know max_version
        return obj.__dlpack__(**kwargs)


def _call_foreign_deleter(managed: int, deleter: int | None) -> None:
    if deleter:
        _DeleterT(deleter)(managed)


def _describe_dl_dtype(code: int, bits: int, lanes: int) -> str:
    try:
        kind = DLDataTypeCode(code).name[3:].lower()
    except ValueError:
        kind = f"code{code}"
    return f"{kind}{bits}" + (f"x{lanes}" if lanes != 1 else "")


def _read_tensor(t: DLTensor, dtype: Any) -> tuple[Any, Any, tuple[int, ...], tuple[int, ...], int]:
    """Device, element type, shape, byte strides and data address of a DLTensor (checked)."""
    dev = device_from_dl(t.device.device_type, t.device.device_id)
    code, bits, lanes = int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)
    scalar = _FROM_DL.get((code, bits)) if lanes == 1 else None
    if scalar is None:
        names = ", ".join(s.__name__ for s in _TO_DL)
        raise InteropError(
            f"DLPack data type {_describe_dl_dtype(code, bits, lanes)} is not supported by Treadle (supported: {names})"
        )
    ndim = int(t.ndim)
    shape = tuple((ctypes.c_int64 * ndim).from_address(t.shape)) if ndim else ()
    itemsize = scalar_size(scalar)
    if t.strides and ndim:
        strides = tuple(s * itemsize for s in (ctypes.c_int64 * ndim).from_address(t.strides))
    else:
        strides = _arr.contiguous_strides(shape, itemsize)
    data = (t.data or 0) + t.byte_offset
    if dtype is None and 0 < ndim <= _arr.MAX_DIMS and min(strides) >= 0:
        return dev, scalar, shape, strides, data  # already a valid Treadle layout
    wdtype, outer, byte_strides = fit_layout(scalar, shape, strides, dtype, "DLPack tensor")
    return dev, wdtype, outer, byte_strides, data


def import_capsule(capsule: Any, dtype: Any = None) -> Any:
    """A Treadle array viewing the tensor of an unused DLPack capsule (legacy or versioned); consumes the capsule."""
    if _capsule_is_valid(capsule, _VERSIONED):
        name, versioned = _VERSIONED, True
    elif _capsule_is_valid(capsule, _LEGACY):
        name, versioned = _LEGACY, False
    else:
        raise InteropError(
            "from_dlpack(): expected an unused DLPack capsule ('dltensor' or 'dltensor_versioned'); "
            "a capsule can be consumed only once (this one may already be 'used_dltensor')"
        )
    ptr = int(_capsule_get_pointer(capsule, name))
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned:
        managed = DLManagedTensorVersioned.from_address(ptr)
        if managed.version.major != DLPACK_VERSION[0]:
            # Left unconsumed: the capsule's destructor returns the tensor to its producer.
            raise InteropError(
                f"DLPack version {managed.version.major}.{managed.version.minor} is not supported "
                f"(Treadle reads {DLPACK_VERSION[0]}.x)"
            )
    else:
        managed = DLManagedTensor.from_address(ptr)
    dev, wdtype, shape, strides, data = _read_tensor(managed.dl_tensor, dtype)
    deleter = managed.deleter
    if _capsule_set_name(capsule, _name_ptr(b"used_" + name)) != 0:
        raise InteropError("from_dlpack(): could not mark the capsule as used")
    try:
        result = wrap_memory(data, wdtype, shape, strides, dev, owner=None)
    except BaseException:
        _call_foreign_deleter(ptr, deleter)
        raise
    # Runs once, when the array and every view of it are gone (or at exit, while the producer is still loaded).
    weakref.finalize(result, _call_foreign_deleter, ptr, deleter)
    return result


def from_dlpack(source: Any, dtype: Any = None, hint: Any = None) -> Any:
    """A Treadle array sharing the memory of ``source`` (no copy).

    Args:
        source: any object implementing ``__dlpack__`` (PyTorch, NumPy, JAX, CuPy, Paddle, Treadle arrays) or an
            unused DLPack capsule (legacy ``dltensor`` or ``dltensor_versioned``).
        dtype: the element type of the result; ``None`` maps the source's scalar type. A vector/matrix type
            consumes the trailing dimensions (``dtype=wp.vec3`` on ``(N, 3)`` data gives ``N`` vectors).
        hint: accepted for compatibility (the reference uses it for texture handles); ignored.

    The source's memory stays alive as long as the returned array (or any view of it) exists; the producer's
    deleter is called exactly once after that. Writes through the array are seen by the source and vice versa
    (except for producers that forbid writes, such as JAX: treat those arrays as read-only).

    Raises:
        InteropError: unsupported data type or device, or a ``dtype`` that does not fit the data.
    """
    del hint
    if is_capsule(source):
        capsule = source
    elif hasattr(source, "__dlpack__"):
        capsule = _request_capsule(source)
    else:
        raise TypeError(
            f"from_dlpack() expects an object implementing __dlpack__ or a DLPack capsule, got {type(source).__name__}"
        )
    return import_capsule(capsule, dtype)


__all__ = [
    "DLDeviceType",
    "DLPACK_VERSION",
    "InteropError",
    "device_from_dl",
    "dlpack_device",
    "export_array",
    "export_stats",
    "from_dlpack",
    "import_capsule",
    "is_capsule",
    "to_dlpack",
]


# ``array.__dlpack__`` / ``__dlpack_device__`` (lang/array.py) call these
_arr.PROTOCOLS.dlpack_export = export_array
_arr.PROTOCOLS.dlpack_device = dlpack_device
