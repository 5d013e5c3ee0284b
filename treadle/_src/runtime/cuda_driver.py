"""CUDA devices, contexts, memory, modules and launches through the driver API (``cuda.bindings.driver``).

Importing this module registers a device provider (:func:`~treadle._src.runtime.device.register_device_provider`)
and does nothing else: the driver is looked for when the runtime first discovers devices. On a machine without a
CUDA driver that look-up is one failed ``dlopen`` of ``libcuda`` (``cuda.bindings`` is not even imported), nothing
is printed, and :func:`~treadle._src.runtime.device.is_cuda_available` is ``False``. Asking for a CUDA device then
raises :class:`~treadle._src.runtime.device.DeviceUnavailableError` saying why (no driver, no ``cuda-bindings``,
``cuInit`` failed, no GPU).

Contexts: each device uses its *primary* context, the one the CUDA runtime and therefore PyTorch, JAX and CuPy use,
so pointers and streams are shared with them. Calls that need a context push the device's context only when another
one is current and pop it afterwards (the caller's current context is left as it was); launches make it current.

Memory: the default allocator is ``cuMemAlloc``; with the device's memory pool enabled (the reference's default on
devices that support pools, here ``config.enable_mempools_at_init``) allocations are stream-ordered
(``cuMemAllocAsync`` on the device's current stream), which also works during graph capture. Transfers and memsets
run on the device's current stream; transfers to host memory wait for their stream before returning.

Launches: :class:`CudaFunction` holds a kernel entry of a loaded :class:`CudaModule` and launches it with two
parameters, the launch bounds and the packed ``Args`` struct (``ctypes`` objects), through ``libcuda``'s
``cuLaunchKernel`` directly (the lowest-overhead call Python can make) or ``cuda.bindings`` when that is missing.

Streams and events live in :mod:`.cuda_stream` and are re-exported here.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from pathlib import Path
from typing import Any

from ... import config
from ..core.errors import CheckedModeError, LaunchError, TreadleError
from . import memory
from .device import Device, DeviceUnavailableError, get_runtime, register_device_provider, reset_runtime


class CudaError(TreadleError, RuntimeError):
    """A CUDA driver call failed."""

    def __init__(self, call: str, code: int, name: str, text: str) -> None:
        self.call, self.code, self.name = call, code, name
        super().__init__(f"CUDA driver call {call} failed: {name} ({code}): {text}")


# ---------------------------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------------------------


class _DriverState:
    def __init__(self) -> None:
        self.tried = False
        self.mod: Any = None
        self.error = "CUDA support was not initialised"
        self.lib: Any = None  # libcuda through ctypes (fast launches), or None
        self.lock = threading.Lock()


_STATE = _DriverState()


def _libcuda_names() -> list[str]:
    if sys.platform.startswith("win"):
        return ["nvcuda.dll"]
    if sys.platform == "darwin":
        return []
    return ["libcuda.so.1", "libcuda.so"]


def _init_driver() -> None:
    lib = None
    for name in _libcuda_names():
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        _STATE.error = "no CUDA driver (libcuda) was found"
        return
    try:
        from cuda.bindings import driver as drv
    except Exception as e:  # noqa: BLE001 - not installed, or an incompatible build
        _STATE.error = (f"the CUDA driver is installed but cuda-bindings is not usable ({type(e).__name__}: {e}); "
                        "install it with: pip install 'treadle[cuda]'")
        return
    try:
        (err,) = drv.cuInit(0)
    except Exception as e:  # noqa: BLE001
        _STATE.error = f"cuInit failed: {type(e).__name__}: {e}"
        return
    if int(err) != 0:
        _STATE.error = f"cuInit failed: {_error_name(drv, err)} (no usable GPU, or the driver is too old)"
        return
    _STATE.mod = drv
    _STATE.lib = _bind_fast_calls(lib)


def _bind_fast_calls(lib: Any) -> Any:
    try:
        fn = lib.cuLaunchKernel
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        for name in ("cuCtxGetCurrent", "cuCtxSetCurrent"):
            getattr(lib, name).restype = ctypes.c_int
        lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        return lib
    except AttributeError:  # pragma: no cover - a libcuda without the symbols: use cuda.bindings
        return None


def driver() -> Any:
    """The ``cuda.bindings.driver`` module, initialised, or ``None`` when CUDA is unavailable (see :func:`why`)."""
    if not _STATE.tried:
        with _STATE.lock:
            if not _STATE.tried:
                _init_driver()
                _STATE.tried = True
    return _STATE.mod


def why_unavailable() -> str | None:
    """Why CUDA is unavailable (``None`` when a driver was initialised)."""
    return None if driver() is not None else _STATE.error


def require_driver() -> Any:
    drv = driver()
    if drv is None:
        raise DeviceUnavailableError(f"CUDA is not available: {_STATE.error}")
    return drv


def use_driver(mod: Any, lib: Any = None) -> None:
    """Replace the driver (tests: a fake ``cuda.bindings.driver``; ``None``: detect again on next use)."""
    with _STATE.lock:
        _STATE.tried = mod is not None
        _STATE.mod = mod
        _STATE.lib = lib
        _STATE.error = "CUDA support was not initialised" if mod is None else ""
    _modules.clear()
    reset_runtime()


def _error_name(drv: Any, err: Any) -> str:
    try:
        res = drv.cuGetErrorName(err)
        name = res[1] if isinstance(res, tuple) else res
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001
        return str(err)


def _error_text(drv: Any, err: Any) -> str:
    try:
        res = drv.cuGetErrorString(err)
        text = res[1] if isinstance(res, tuple) else res
        return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001
        return ""


def call(name: str, *args: Any) -> Any:
    """Call driver function ``name``; return its outputs (``None``, one value, or a tuple); raise :class:`CudaError`."""
    drv = require_driver()
    res = getattr(drv, name)(*args)
    err = res[0]
    if int(err) != 0:
        raise CudaError(name, int(err), _error_name(drv, err), _error_text(drv, err))
    if len(res) == 1:
        return None
    return res[1] if len(res) == 2 else res[1:]


def handle(h: Any) -> int:
    """The integer value of a driver handle (``CUstream``, ``CUcontext``, ``CUdeviceptr`` ...) or an int."""
    if h is None:
        return 0
    return h if isinstance(h, int) else int(h)


def enum(group: str, name: str) -> Any:
    return getattr(getattr(require_driver(), group), name)


class ContextGuard:
    """Makes ``device``'s context current for a ``with`` block, restoring the caller's afterwards if it differed."""

    __slots__ = ("ctx", "pushed")

    def __init__(self, device: CudaDevice) -> None:
        self.ctx = device.context
        self.pushed = False

    def __enter__(self) -> ContextGuard:
        cur = call("cuCtxGetCurrent")
        if handle(cur) != handle(self.ctx):
            call("cuCtxPushCurrent", self.ctx)
            self.pushed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pushed:
            call("cuCtxPopCurrent")


# ---------------------------------------------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------------------------------------------


class CudaDevice(Device):
    """A CUDA device (``cuda:N``), using its primary context unless mapped onto an external one."""

    def __init__(self, ordinal: int, alias: str | None = None, context: Any = None) -> None:
        self.handle = call("cuDeviceGet", ordinal)
        name = call("cuDeviceGetName", 256, self.handle)
        name = name.split(b"\0", 1)[0].decode(errors="replace") if isinstance(name, (bytes, bytearray)) else str(name)
        major = self.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = self.attribute("COMPUTE_CAPABILITY_MINOR")
        pools = bool(self.attribute("MEMORY_POOLS_SUPPORTED"))
        super().__init__(alias or f"cuda:{ordinal}", ordinal, name, 10 * major + minor,
                         is_uva=bool(self.attribute("UNIFIED_ADDRESSING")), is_mempool_supported=pools,
                         allocator=None)
        self.allocator = CudaAllocator(self)
        self.is_primary = context is None
        self.is_mempool_enabled = pools and bool(config.enable_mempools_at_init)
        self.is_ipc_supported = bool(self.attribute("IPC_EVENT_SUPPORTED")) and sys.platform.startswith("linux")
        self.sm_count = self.attribute("MULTIPROCESSOR_COUNT")
        self.max_shared_memory_per_block = self.attribute("MAX_SHARED_MEMORY_PER_BLOCK")
        self.max_threads_per_block = self.attribute("MAX_THREADS_PER_BLOCK")
        self.pci_bus_id = (f"{self.attribute('PCI_DOMAIN_ID'):04x}:{self.attribute('PCI_BUS_ID'):02x}:"
                           f"{self.attribute('PCI_DEVICE_ID'):02x}")
        try:
            raw = bytes(call("cuDeviceGetUuid", self.handle).bytes)
            h = raw.hex()
            self.uuid = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        except Exception:  # noqa: BLE001 - informational only
            self.uuid = None
        self._context = context
        self._stream: Any = None

    def attribute(self, name: str) -> int:
        return int(call("cuDeviceGetAttribute", enum("CUdevice_attribute", f"CU_DEVICE_ATTRIBUTE_{name}"),
                        self.handle))

    @property
    def context(self) -> Any:
        """The device's CUDA context (its primary context, retained on first use)."""
        if self._context is None:
            self._context = call("cuDevicePrimaryCtxRetain", self.handle)
        return self._context

    def make_current(self) -> None:
        """Make this device's context current on the calling thread."""
        call("cuCtxSetCurrent", self.context)

    def ensure_current(self) -> None:
        """Make this device's context current if it is not (cheap when it already is)."""
        ctx = handle(self.context)
        lib = _STATE.lib
        if lib is not None:
            cur = ctypes.c_void_p()
            if lib.cuCtxGetCurrent(ctypes.byref(cur)) == 0 and (cur.value or 0) == ctx:
                return
            if lib.cuCtxSetCurrent(ctypes.c_void_p(ctx)) == 0:
                return
        if handle(call("cuCtxGetCurrent")) != ctx:
            call("cuCtxSetCurrent", self.context)

    def guard(self) -> ContextGuard:
        return ContextGuard(self)

    # streams
    @property
    def stream(self) -> Any:
        """The device's current stream (a blocking stream Treadle creates on first use)."""
        if self._stream is None:
            from .cuda_stream import Stream

            self._stream = Stream(self)
        return self._stream

    @stream.setter
    def stream(self, s: Any) -> None:
        self.set_stream(s)

    @property
    def has_stream(self) -> bool:
        return True

    def set_stream(self, stream: Any, sync: bool = True) -> None:
        """Make ``stream`` this device's current stream (``sync``: it first waits for the previous one)."""
        if stream.device is not self:
            raise RuntimeError(f"stream from device {stream.device} cannot be the current stream of {self}")
        if sync and self._stream is not None and self._stream is not stream:
            stream.wait_stream(self._stream)
        self._stream = stream

    @property
    def is_capturing(self) -> bool:
        return self._stream is not None and self._stream.is_capturing

    def synchronize(self) -> None:
        """Wait for all work on this device."""
        with self.guard():
            call("cuCtxSynchronize")

    def can_access_peer(self, other: Device) -> bool:
        if not other.is_cuda or other is self:
            return other is self
        return bool(call("cuDeviceCanAccessPeer", self.handle, other.handle))  # type: ignore[attr-defined]

    # memory
    @property
    def total_memory(self) -> int:
        return int(call("cuDeviceTotalMem", self.handle))

    @property
    def free_memory(self) -> int:
        with self.guard():
            free, _total = call("cuMemGetInfo")
        return int(free)

    def default_mempool(self) -> Any:
        if not self.is_mempool_supported:
            raise RuntimeError(f"device {self} does not support memory pools")
        return call("cuDeviceGetDefaultMemPool", self.handle)


def _cuda_discover(runtime: Any) -> list[Device]:
    if driver() is None:
        return []
    try:
        count = int(call("cuDeviceGetCount"))
        return [CudaDevice(i) for i in range(count)]
    except CudaError as e:
        _STATE.error = str(e)
        return []


class CudaProvider:
    """The device provider of the CUDA backend (protocol: ``runtime/device.py``)."""

    name = "cuda"

    def discover(self, runtime: Any) -> list[Device]:
        return _cuda_discover(runtime)

    def toolkit_version(self) -> tuple[int, int]:
        try:
            from cuda.bindings import nvrtc

            err, major, minor = nvrtc.nvrtcVersion()
            return (int(major), int(minor)) if int(err) == 0 else (0, 0)
        except Exception:  # noqa: BLE001
            return (0, 0)

    def driver_version(self) -> int | None:
        return int(call("cuDriverGetVersion")) if driver() is not None else None

    def supported_archs(self) -> list[int]:
        try:
            from cuda.bindings import nvrtc

            err, archs = nvrtc.nvrtcGetSupportedArchs()
            return sorted(int(a) for a in archs) if int(err) == 0 else []
        except Exception:  # noqa: BLE001
            return []

    def map_device(self, runtime: Any, alias: str, context: Any) -> Device:
        require_driver()
        if context is None:
            context = call("cuCtxGetCurrent")
            if not handle(context):
                raise RuntimeError("map_cuda_device(): no context given and no CUDA context is current")
        call("cuCtxPushCurrent", context)
        try:
            ordinal = int(call("cuCtxGetDevice"))
        finally:
            call("cuCtxPopCurrent")
        return CudaDevice(ordinal, alias=alias, context=context)

    def unmap_device(self, runtime: Any, device: Any) -> None:
        device._stream = None  # the external context stays owned by whoever created it

    def pinned_allocator(self) -> memory.Allocator | None:
        return PinnedAllocator() if driver() is not None else None

    def diagnostics(self) -> list[str]:
        reason = why_unavailable()
        return [f"CUDA driver API: {'cuda.bindings' if reason is None else reason}"]


_PROVIDER = CudaProvider()
register_device_provider(_PROVIDER)


def cuda_device(device: Any) -> CudaDevice:
    """The :class:`CudaDevice` for ``device`` (anything ``get_device`` accepts); RuntimeError for the CPU."""
    from .device import get_device

    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"Device {dev} is not a CUDA device")
    return dev  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------------------------


class _DeviceMemory:
    """Owner of one device allocation: freed when the last reference goes (or by ``release``)."""

    __slots__ = ("ptr", "device", "pooled", "__weakref__")

    def __init__(self, ptr: int, device: CudaDevice, pooled: bool) -> None:
        self.ptr, self.device, self.pooled = ptr, device, pooled

    def release(self) -> None:
        ptr, self.ptr = self.ptr, 0
        if not ptr or _STATE.mod is None:
            return
        try:
            with self.device.guard():
                if self.pooled:
                    call("cuMemFreeAsync", ptr, self.device.stream.cuda_stream)
                else:
                    call("cuMemFree", ptr)
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may already be gone
            pass

    def __del__(self) -> None:
        self.release()


class CudaAllocator(memory.Allocator):
    """Device memory of one CUDA device (stream-ordered pool when enabled, else ``cuMemAlloc``)."""

    host_accessible = False

    def __init__(self, device: CudaDevice) -> None:
        self.device = device

    def _stream(self) -> int:
        return self.device.stream.cuda_stream  # type: ignore[no-any-return]

    def alloc(self, nbytes: int) -> memory.Allocation:
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        dev = self.device
        pooled = dev.is_mempool_enabled
        with dev.guard():
            size = max(int(nbytes), 1)
            ptr = call("cuMemAllocAsync", size, self._stream()) if pooled else call("cuMemAlloc", size)
        owner = _DeviceMemory(handle(ptr), dev, pooled)
        return memory.Allocation(ptr=owner.ptr, nbytes=int(nbytes), owner=owner, allocator=self)

    def free(self, allocation: memory.Allocation) -> None:
        owner = allocation.owner
        if isinstance(owner, _DeviceMemory):
            owner.release()
        allocation.owner = None

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes > 0:
            with self.device.guard():
                call("cuMemsetD8Async", ptr, value & 0xFF, nbytes, self._stream())

    def memset32(self, ptr: int, value: int, count: int) -> None:
        """Fill ``count`` 32-bit words with ``value`` (zeros/full of 4-byte types without a kernel)."""
        if count > 0:
            with self.device.guard():
                call("cuMemsetD32Async", ptr, value & 0xFFFFFFFF, count, self._stream())

    def memcpy(self, dst: int, src: int, nbytes: int) -> None:
        """Copy between any two addresses the device can reach (device, peer or pinned memory; unified addressing)."""
        if nbytes > 0:
            with self.device.guard():
                call("cuMemcpyAsync", dst, src, nbytes, self._stream())

    def copy_peer(self, dst: int, src_device: Any, src: int, nbytes: int) -> None:
        """Copy from another CUDA device's memory on this device's current stream, after the source's stream."""
        if nbytes <= 0:
            return
        stream = self.device.stream
        if src_device is not self.device:
            stream.wait_stream(src_device.stream)
        with self.device.guard():
            call("cuMemcpyPeerAsync", dst, self.device.context, src, src_device.context, nbytes, stream.cuda_stream)

    def copy_from_host(self, dst: int, src: int, nbytes: int) -> None:
        """Host -> device on the current stream (pageable sources are staged before this returns)."""
        if nbytes > 0:
            with self.device.guard():
                call("cuMemcpyHtoDAsync", dst, src, nbytes, self._stream())

    def copy_to_host(self, dst: int, src: int, nbytes: int) -> None:
        """Device -> host; returns when the data is in ``dst``."""
        if nbytes > 0:
            s = self._stream()
            with self.device.guard():
                call("cuMemcpyDtoHAsync", dst, src, nbytes, s)
                call("cuStreamSynchronize", s)


class _HostMemory:
    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __del__(self) -> None:
        ptr, self.ptr = self.ptr, 0
        if ptr and _STATE.mod is not None:
            try:
                call("cuMemFreeHost", ptr)
            except Exception:  # noqa: BLE001
                pass


class PinnedAllocator(memory.Allocator):
    """Page-locked host memory (``cuMemHostAlloc``, portable across contexts): fast, asynchronous transfers."""

    host_accessible = True

    def alloc(self, nbytes: int) -> memory.Allocation:
        devs = get_runtime().cuda_devices
        if not devs:
            raise DeviceUnavailableError(f"pinned memory needs CUDA: {why_unavailable() or 'no CUDA device'}")
        with devs[0].guard():  # type: ignore[attr-defined]
            ptr = handle(call("cuMemHostAlloc", max(int(nbytes), 1), 1))  # CU_MEMHOSTALLOC_PORTABLE
        return memory.Allocation(ptr=ptr, nbytes=int(nbytes), owner=_HostMemory(ptr), allocator=self)

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes > 0:
            ctypes.memset(ptr, value & 0xFF, nbytes)

    def memcpy(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes > 0:
            ctypes.memmove(dst, src, nbytes)


# Memory pools (reference API) ----------------------------------------------------------------------------------


def is_mempool_supported(device: Any = None) -> bool:
    """Whether the device has a stream-ordered memory pool (always ``False`` on the CPU)."""
    from .device import get_device

    return bool(get_device(device).is_mempool_supported)


def is_mempool_enabled(device: Any = None) -> bool:
    """Whether allocations on the device come from its memory pool."""
    from .device import get_device

    return bool(get_device(device).is_mempool_enabled)


def set_mempool_enabled(device: Any, enable: bool) -> None:
    """Allocate from the device's memory pool (needed for allocations during graph capture) or not."""
    from .device import get_device

    dev = get_device(device)
    if not dev.is_cuda:
        if enable:
            raise ValueError("Memory pools are only supported on CUDA devices")
        return
    if enable and not dev.is_mempool_supported:
        raise RuntimeError(f"Device {dev} does not support memory pools")
    dev.is_mempool_enabled = bool(enable)


class ScopedMempool:
    """``with wp.ScopedMempool(device, enable):`` enables or disables the device's memory pool inside the block.

    The previous setting comes back on exit. On the CPU, which has no memory pools, ``enable=False`` does nothing
    and ``enable=True`` raises ``ValueError`` on entry, as :func:`set_mempool_enabled` does.
    """

    def __init__(self, device: Any, enable: bool) -> None:
        from .device import get_device

        self.device = get_device(device)
        self.enable = bool(enable)
        self._saved: bool | None = None

    def __enter__(self) -> ScopedMempool:
        self._saved = is_mempool_enabled(self.device)
        set_mempool_enabled(self.device, self.enable)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            set_mempool_enabled(self.device, self._saved)
            self._saved = None


def _pool_device(device: Any) -> CudaDevice:
    from .device import get_device

    dev = get_device(device)
    if not dev.is_cuda:
        raise ValueError("Memory pools are only supported on CUDA devices")
    if not dev.is_mempool_supported:
        raise RuntimeError(f"Device {dev} does not support memory pools")
    return dev  # type: ignore[return-value]


def _pool_attr(device: Any, name: str) -> int:
    dev = _pool_device(device)
    value = call("cuMemPoolGetAttribute", dev.default_mempool(), enum("CUmemPool_attribute", name))
    return int(getattr(value, "value", value))


def get_mempool_release_threshold(device: Any = None) -> int:
    """Bytes the pool keeps reserved before releasing memory to the system at synchronisation points."""
    return _pool_attr(device, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")


def set_mempool_release_threshold(device: Any, threshold: int | float) -> None:
    """Set the pool's release threshold: bytes, or a fraction (0..1] of the device's memory."""
    dev = _pool_device(device)
    if threshold < 0:
        raise ValueError(f"release threshold must be non-negative, got {threshold}")
    value = int(threshold * dev.total_memory) if 0 < threshold <= 1 and isinstance(threshold, float) else int(threshold)
    drv = require_driver()
    call("cuMemPoolSetAttribute", dev.default_mempool(), enum("CUmemPool_attribute", "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD"),
         drv.cuuint64_t(value))


def get_mempool_used_mem_current(device: Any = None) -> int:
    """Bytes of the device's pool in use by the application."""
    return _pool_attr(device, "CU_MEMPOOL_ATTR_USED_MEM_CURRENT")


def get_mempool_used_mem_high(device: Any = None) -> int:
    """High-water mark of the pool's bytes in use."""
    return _pool_attr(device, "CU_MEMPOOL_ATTR_USED_MEM_HIGH")


# ---------------------------------------------------------------------------------------------------------------
# Modules and launches
# ---------------------------------------------------------------------------------------------------------------

_modules: dict[tuple[str, str], CudaModule] = {}


def load_module(device: Any, image: Path | bytes, label: str | None = None) -> CudaModule:
    """Load a CUBIN/PTX file (memoised per device and path) or image bytes onto ``device``."""
    dev = cuda_device(device)
    if isinstance(image, (bytes, bytearray)):
        return CudaModule(dev, bytes(image), label or "<image>")
    key = (dev.alias, str(image))
    mod = _modules.get(key)
    if mod is None:
        mod = CudaModule(dev, Path(image).read_bytes(), str(image))
        _modules[key] = mod
    return mod


class CudaModule:
    """A loaded CUDA module (``cuModuleLoadData``) on one device."""

    def __init__(self, device: CudaDevice, image: bytes, label: str) -> None:
        self.device = device
        self.label = label
        if label.endswith(".ptx") and not image.endswith(b"\0"):
            image += b"\0"
        with device.guard():
            self.handle = call("cuModuleLoadData", image)

    def function(self, entry: str, **meta: Any) -> CudaFunction:
        """The kernel ``entry`` (an ``extern "C" __global__`` name); ``meta``: see :class:`CudaFunction`."""
        return CudaFunction(self, call("cuModuleGetFunction", self.handle, entry.encode()), entry, **meta)

    def global_address(self, name: str) -> tuple[int, int] | None:
        """``(address, size)`` of a ``__device__`` variable, or ``None`` when the module has none of that name."""
        try:
            with self.device.guard():
                ptr, size = call("cuModuleGetGlobal", self.handle, name.encode())
        except CudaError:
            return None
        return handle(ptr), int(size)

    def read_global(self, name: str, ctype: Any) -> Any:
        """The value of a ``__device__`` variable as ``ctype`` (after all work on the device finishes)."""
        where = self.global_address(name)
        if where is None:
            return None
        out = ctype()
        with self.device.guard():
            call("cuCtxSynchronize")
            call("cuMemcpyDtoH", ctypes.addressof(out), where[0], min(where[1], ctypes.sizeof(out)))
        return out

    def zero_global(self, name: str) -> None:
        where = self.global_address(name)
        if where is not None:
            with self.device.guard():
                call("cuMemsetD8Async", where[0], 0, where[1], self.device.stream.cuda_stream)


_MAX_GRID = 2**31 - 1
#: Grid-stride kernels launch at most this many waves of resident blocks (``max_blocks=0``); each thread then loops.
#: Measured on an H200 (saxpy over 2^28 floats): one block per index 2.76 TB/s, one full wave 3.59 TB/s.
GRID_WAVES = 1


class CudaFunction:
    """One kernel entry point of a :class:`CudaModule`, ready to launch.

    Args:
        block_dim: the most threads per block it was compiled for (its ``__launch_bounds__``).
        grid_stride: whether it loops over the launch (any grid size works) or expects one CUDA thread per index.
        name: the kernel's name for error messages; ``locs``: checked-mode source locations.
        ckpt_bytes: the per-thread checkpoint capacity of a backward pass with loops (0: it has none).
    """

    def __init__(self, module: CudaModule, fn: Any, entry: str, block_dim: int = 256, grid_stride: bool = True,
                 name: str | None = None, locs: list[Any] | None = None, ckpt_bytes: int = 0) -> None:
        self.module = module
        self.device = module.device
        self.fn = fn
        self.handle = handle(fn)
        self.entry = entry
        self.block_dim = int(block_dim)
        self.grid_stride = grid_stride
        self.name = name or entry
        self.locs = locs or []
        self.ckpt_bytes = ckpt_bytes
        self._params = (ctypes.c_void_p * 2)()
        self._resident: dict[int, int] = {}

    def launch_config(self, size: int, block_dim: int | None = None, max_blocks: int = 0) -> tuple[int, int]:
        """``(blocks, threads per block)`` for a launch of ``size`` threads."""
        block = self.block_dim if not block_dim or block_dim <= 0 else int(block_dim)
        if block > self.block_dim:
            raise LaunchError(f"kernel '{self.name}' was compiled for at most {self.block_dim} threads per block "
                              f"(its launch_bounds / block_dim); block_dim={block} is too large")
        if size <= 0:
            return 0, block
        blocks = -(-int(size) // block)
        if self.grid_stride:
            blocks = min(blocks, max_blocks if max_blocks > 0 else self.resident_blocks(block) * GRID_WAVES)
        elif max_blocks > 0 and blocks > max_blocks:
            raise LaunchError(f"kernel '{self.name}' has no grid-stride loop, so max_blocks={max_blocks} cannot "
                              f"cover {size} threads")
        elif blocks > _MAX_GRID:
            raise LaunchError(f"kernel '{self.name}': {size} threads need more than 2^31-1 blocks")
        return blocks, block

    def resident_blocks(self, block: int) -> int:
        """How many blocks of ``block`` threads the whole device runs at once (``_MAX_GRID`` when unknown)."""
        n = self._resident.get(block)
        if n is None:
            try:
                per_sm = int(call("cuOccupancyMaxActiveBlocksPerMultiprocessor", self.fn, block, 0))
                n = per_sm * int(self.device.sm_count) if per_sm > 0 else _MAX_GRID
            except Exception:  # noqa: BLE001 - a driver without occupancy queries: no cap
                n = _MAX_GRID
            self._resident[block] = n
        return n

    def launch(self, bounds: Any, args: Any, stream: Any = None, block_dim: int | None = None,
               max_blocks: int = 0) -> None:
        """Launch over ``bounds`` (a ``LaunchBounds``) with ``args`` (the packed ``Args``; both ctypes objects).

        Parameters are copied by the driver during the call, so both objects may be reused at once.
        """
        blocks, block = self.launch_config(bounds.size, block_dim, max_blocks)
        if blocks == 0:
            return
        s = stream.cuda_stream if stream is not None else self.device.stream.cuda_stream
        p = self._params
        p[0] = ctypes.addressof(bounds)
        p[1] = ctypes.addressof(args)
        self.device.ensure_current()
        lib = _STATE.lib
        if lib is not None:
            err = lib.cuLaunchKernel(self.handle, blocks, 1, 1, block, 1, 1, 0, s, ctypes.addressof(p), None)
            if err != 0:
                drv = require_driver()
                code = drv.CUresult(err)
                raise CudaError("cuLaunchKernel", err, _error_name(drv, code), _error_text(drv, code))
        else:
            call("cuLaunchKernel", self.fn, blocks, 1, 1, block, 1, 1, 0, s, ctypes.addressof(p), 0)

    def check_errors(self) -> None:
        """After launches: raise what the kernels recorded (checked-mode errors, checkpoint overflow).

        Waits for all work on the device. Each error is reported once (the record is cleared).
        """
        mod = self.module
        over = mod.read_global("treadle_cuda_ckpt_overflow", ctypes.c_uint64)
        if over is not None and over.value:
            mod.zero_global("treadle_cuda_ckpt_overflow")
            raise LaunchError(
                f"the backward pass of kernel '{self.name}' on {self.device} needs {over.value} bytes of loop "
                f"checkpoints per thread, more than the {self.ckpt_bytes} it was compiled with, so its gradients "
                f"are incomplete; raise the module option, e.g. wp.set_module_options({{'cuda_ckpt_bytes': "
                f"{_round_up(over.value)}}}), or run the backward pass on the CPU")
        err = mod.read_global("treadle_cuda_checked_error", ctypes.c_int64 * 6)
        if err is not None and err[0] == 1:
            mod.zero_global("treadle_cuda_checked_error")
            raise CheckedModeError(checked_message(self.name, list(err)[1:], self.locs))


def _round_up(n: int) -> int:
    p = 256
    while p < n:
        p *= 2
    return p


def checked_message(name: str, rec: list[int], locs: list[Any]) -> str:
    """The message of a failed checked-mode check (``rec``: location, thread, dimension, index, extent)."""
    from ..core.errors import checked_mode_message

    return checked_mode_message(rec, locs, name)


# Streams and events (reference API) live in cuda_stream.py; re-exported lazily (no import cycle).
_STREAM_NAMES = ("Event", "ScopedStream", "Stream", "get_event_elapsed_time", "get_stream", "record_event",
                 "set_stream", "synchronize_event", "synchronize_stream", "wait_event", "wait_stream")


def __getattr__(name: str) -> Any:
    if name in _STREAM_NAMES:
        from . import cuda_stream

        return getattr(cuda_stream, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
