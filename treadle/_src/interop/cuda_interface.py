"""The CUDA Array Interface (version 3): exporting CUDA arrays and viewing any object that exposes one.

Export (``array.__cuda_array_interface__``): ``shape`` (vector/matrix elements add their trailing dimensions),
``typestr`` of the scalar (structs: ``|V<n>`` plus ``descr``), ``data = (pointer, False)``, ``strides`` (``None``
when C-contiguous), ``version = 3`` and ``stream``: the handle of the device's current stream, the stream the data
was produced on, which a consumer must synchronise with before reading (v3 stream semantics; ``1`` stands for the
legacy default stream because ``0`` is not allowed).

Import (:func:`from_cuda_array_interface`, used by ``wp.array(obj)``, ``wp.from_cuda_array_interface`` and by
``wp.launch`` for array arguments): a zero-copy view on the CUDA device owning the pointer, keeping ``obj`` alive.
When the interface names a stream, the device's current stream waits for the work submitted to it so far (an
event, no host synchronisation). Parsing needs no GPU: a fake driver answers the device query in the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lang import array as _arr
from ..types import scalars
from .common import InteropError, fit_layout, wrap_memory

CU_STREAM_LEGACY = 1
CU_STREAM_PER_THREAD = 2


def export_interface(a: Any) -> dict[str, Any]:
    """The ``__cuda_array_interface__`` dict of a CUDA array (``AttributeError`` for other arrays)."""
    if a._is_annotation or not getattr(a.device, "is_cuda", False):
        raise AttributeError("__cuda_array_interface__ is only available for arrays on CUDA devices")
    npdt = _arr.numpy_scalar_dtype(a.dtype)
    ishape = _arr.inner_shape(a.dtype)
    shape = (*a.shape, *ishape)
    strides = (*a.strides, *_arr.contiguous_strides(ishape, npdt.itemsize)) if ishape else tuple(a.strides)
    iface: dict[str, Any] = {
        "shape": shape,
        "typestr": npdt.str,
        "data": (int(a.ptr or 0), False),
        "strides": None if a.is_contiguous else strides,
        "version": 3,
    }
    if npdt.names:
        iface["descr"] = npdt.descr
    handle = int(a.device.stream.cuda_stream)
    iface["stream"] = handle if handle else CU_STREAM_LEGACY
    return iface


def _interface_of(obj: Any) -> dict[str, Any]:
    iface = obj if isinstance(obj, dict) else getattr(obj, "__cuda_array_interface__", None)
    if not isinstance(iface, dict):
        raise InteropError(f"{type(obj).__name__} does not expose a __cuda_array_interface__ dict")
    for key in ("shape", "typestr", "data"):
        if key not in iface:
            raise InteropError(f"__cuda_array_interface__ has no '{key}' entry")
    version = int(iface.get("version", 0))
    if not 0 <= version <= 3:
        raise InteropError(f"__cuda_array_interface__ version {version} is not supported (0 to 3 are)")
    if iface.get("mask") is not None:
        raise InteropError("__cuda_array_interface__ with a mask is not supported")
    return iface


def _numpy_dtype(iface: dict[str, Any]) -> np.dtype:
    typestr = str(iface["typestr"])
    descr = iface.get("descr")
    if typestr.startswith("|V") and descr and not (len(descr) == 1 and descr[0][0] == ""):
        return np.dtype([tuple(d) for d in descr])
    return np.dtype(typestr)


def device_of_pointer(ptr: int) -> Any:
    """The CUDA device owning ``ptr`` (unified addressing)."""
    from ..runtime import cuda_driver as cd
    from ..runtime.device import get_device

    drv = cd.require_driver()
    attr = drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    ordinal = cd.call("cuPointerGetAttribute", attr, ptr)
    return get_device(f"cuda:{int(getattr(ordinal, 'value', ordinal))}")


def wait_for_producer(device: Any, stream: Any) -> None:
    """Make ``device``'s current stream wait for the work on the producer's ``stream`` handle (v3 semantics)."""
    if stream is None:
        return
    handle = int(stream)
    if handle == 0:
        raise InteropError("__cuda_array_interface__ 'stream' must not be 0 (use 1 for the legacy default stream)")
    current = device.stream
    if handle == current.cuda_stream:
        return
    from ..runtime.cuda_stream import Event, Stream

    producer = Stream(device, cuda_stream=handle)
    current.wait_event(producer.record_event(Event(device)))


def from_cuda_array_interface(obj: Any, dtype: Any = None, shape: Any = None, strides: Any = None,
                              device: Any = None, owner: bool = True) -> Any:
    """A zero-copy Treadle array viewing ``obj``'s CUDA memory.

    Args:
        obj: an object exposing ``__cuda_array_interface__``, or the interface dict itself.
        dtype: element type (default: the interface's scalar type; a vector/matrix type consumes the trailing
            dimensions).
        shape: overrides the interface's shape.
        strides: overrides the interface's byte strides.
        device: the device expected to own the memory (checked against the pointer's device).
        owner: keep ``obj`` alive for as long as the view exists.

    Raises:
        InteropError: malformed interface, unsupported type or layout, or memory on another device.
    """
    iface = _interface_of(obj)
    npdt = _numpy_dtype(iface)
    ptr, _readonly = iface["data"]
    ptr = int(ptr or 0)
    fshape = tuple(int(n) for n in (iface["shape"] if shape is None else shape))
    if strides is None:
        strides = iface.get("strides")
    fstrides = (tuple(int(s) for s in strides) if strides is not None
                else _arr.contiguous_strides(fshape, npdt.itemsize))
    if npdt.names:
        target = _arr.normalize_dtype(dtype) if dtype is not None else None
        if target is None or not _arr.is_struct_type(target) or _arr.elem_size(target) != npdt.itemsize:
            raise InteropError("a structured __cuda_array_interface__ needs dtype= a struct of the same size")
        elem, oshape, ostrides = target, fshape, fstrides
    else:
        src = scalars.scalar_from_numpy(npdt)
        if src is None:
            raise InteropError(f"__cuda_array_interface__ typestr {iface['typestr']!r} has no Treadle type")
        elem, oshape, ostrides = fit_layout(src, fshape, fstrides, dtype, "__cuda_array_interface__ object")
    if not oshape:
        oshape, ostrides = (1,), (_arr.elem_size(elem),)
    if ptr:
        dev = device_of_pointer(ptr)
        if device is not None:
            from ..runtime.device import get_device

            want = get_device(device)
            if want != dev:
                raise InteropError(f"the __cuda_array_interface__ memory is on '{dev}', not on '{want}'")
    else:
        from ..runtime.device import get_device

        dev = get_device(device if device is not None else "cuda")
    wait_for_producer(dev, iface.get("stream"))
    return wrap_memory(ptr, elem, tuple(oshape), tuple(ostrides), dev, obj if owner else None)


# ``array.__cuda_array_interface__`` and ``wp.array(obj)`` of such an object (lang/array.py) call these
_arr.PROTOCOLS.cuda_export = export_interface
_arr.PROTOCOLS.cuda_import = from_cuda_array_interface
