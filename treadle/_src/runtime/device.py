"""Devices and the runtime that knows them.

The CPU device always exists. CUDA devices are discovered by a *device provider* that a CUDA backend registers
with :func:`register_device_provider`; without one, :func:`is_cuda_available` is ``False`` and every CUDA query
answers as the reference does on a machine without a GPU.

State lives in one :class:`Runtime` object, created lazily on first use by the holder :data:`_HOLDER`; tests call
:func:`reset_runtime` to start from a fresh one.

Device provider protocol (duck-typed; only ``discover`` is required, a plain callable is taken as ``discover``)::

    class CudaProvider:
        name = "cuda"
        def discover(self, runtime) -> list[Device]: ...       # Device objects (or subclasses) "cuda:0", ...
        def toolkit_version(self) -> tuple[int, int]: ...      # NVRTC / toolkit version
        def driver_version(self) -> int | None: ...            # e.g. 12040, None without a driver
        def supported_archs(self) -> list[int]: ...            # e.g. [75, 80, 86, 89, 90]
        def map_device(self, runtime, alias, context) -> Device: ...
        def unmap_device(self, runtime, device) -> None: ...
        def pinned_allocator(self) -> Allocator | None: ...    # page-locked host memory
        def diagnostics(self) -> list[str]: ...                # extra lines for print_diagnostics()
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
from collections.abc import Callable, Iterable
from typing import Any

from ..core.errors import TreadleError
from . import memory, state


class DeviceUnavailableError(TreadleError, ValueError, RuntimeError):
    """A device was requested that does not exist on this machine.

    It derives from both ``ValueError`` and ``RuntimeError``: the reference raises one or the other depending on
    how the device was named, so code catching either keeps working.
    """


class Device:
    """A place where arrays live and kernels run: ``"cpu"`` or ``"cuda:N"``.

    ``str(device)`` is its alias; a device compares equal to its alias string (``device == "cpu"``).
    CUDA backends subclass this and override the CUDA-only members (``context``, ``stream``, ``synchronize``,
    memory queries).
    """

    def __init__(
        self,
        alias: str,
        ordinal: int = -1,
        name: str = "CPU",
        arch: int = 0,
        *,
        is_uva: bool = False,
        is_mempool_supported: bool = False,
        allocator: memory.Allocator | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self.alias = alias
        self.ordinal = ordinal
        self.name = name
        self.arch = arch
        self.is_uva = is_uva
        self.is_mempool_supported = is_mempool_supported
        self.is_mempool_enabled = False
        self.is_ipc_supported = False
        self.is_primary = ordinal >= 0
        self.sm_count = 0
        #: shared memory a CUDA block may use (bytes; 0 on the CPU)
        self.max_shared_memory_per_block = 0
        self.uuid: str | None = None
        self.pci_bus_id: str | None = None
        self.runtime = runtime
        self.allocator: memory.Allocator = allocator if allocator is not None else memory.CpuAllocator()

    # -- identity ---------------------------------------------------------------------------------------------

    @property
    def is_cpu(self) -> bool:
        """True for the host CPU device."""
        return self.ordinal < 0

    @property
    def is_cuda(self) -> bool:
        """True for a CUDA device."""
        return self.ordinal >= 0

    @property
    def is_capturing(self) -> bool:
        """True while a CUDA graph capture is in progress on this device (never on the CPU)."""
        return False

    def __str__(self) -> str:
        return self.alias

    def __repr__(self) -> str:
        return f"'{self.alias}'"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self is other or self.alias == other.alias
        if isinstance(other, str):
            return self.alias == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self.alias)

    # -- CUDA-only members --------------------------------------------------------------------------------------

    @property
    def context(self) -> Any:
        """The CUDA context; ``None`` on the CPU (as in the reference)."""
        return None

    @property
    def has_context(self) -> bool:
        """True if the device has a CUDA context."""
        return self.context is not None

    @property
    def stream(self) -> Any:
        """The device's current stream. CPU devices have none."""
        raise RuntimeError(f"Device {self.alias} is not a CUDA device: streams exist only on CUDA devices")

    @property
    def has_stream(self) -> bool:
        """True if the device has a current stream."""
        return False

    def make_current(self) -> None:
        """Make this device's context current on the calling thread (nothing to do on the CPU)."""

    def synchronize(self) -> None:
        """Wait for all work on the device (CPU work is synchronous: nothing to wait for)."""

    def can_access(self, other: Any) -> bool:
        """True if this device can read memory that lives on ``other`` (a device or an array)."""
        return can_access(self, other)

    # -- memory -------------------------------------------------------------------------------------------------

    @property
    def total_memory(self) -> int:
        """Total memory of the device in bytes (physical RAM for the CPU, 0 when unknown)."""
        return _sysconf_bytes("SC_PHYS_PAGES")

    @property
    def free_memory(self) -> int:
        """Currently available memory of the device in bytes (0 when unknown)."""
        return _sysconf_bytes("SC_AVPHYS_PAGES")

    @property
    def default_allocator(self) -> memory.Allocator:
        """The allocator arrays on this device use unless another is chosen (host memory on the CPU)."""
        return self.allocator

    def get_allocator(self, pinned: bool = False) -> memory.Allocator:
        """The allocator for arrays on this device (``pinned`` asks for page-locked host memory)."""
        if pinned and self.is_cpu and self.runtime is not None and self.runtime.pinned_allocator is not None:
            return self.runtime.pinned_allocator
        return self.allocator


def _sysconf_bytes(name: str) -> int:
    try:
        return int(os.sysconf(name)) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


class Runtime:
    """Everything Treadle knows about the machine: devices, the current device, device providers."""

    def __init__(self, providers: Iterable[Any] = ()) -> None:
        self.providers: list[Any] = list(providers)
        self.cpu_device = Device("cpu", runtime=self)
        self.cuda_devices: list[Device] = []
        self.pinned_allocator: memory.Allocator | None = None
        self.devices: dict[str, Device] = {"cpu": self.cpu_device}
        for provider in self.providers:
            discover = getattr(provider, "discover", provider)
            for dev in discover(self) or ():
                dev.runtime = self
                self.devices[dev.alias] = dev
                if dev.is_cuda:
                    self.cuda_devices.append(dev)
            make_pinned = getattr(provider, "pinned_allocator", None)
            if make_pinned is not None and self.pinned_allocator is None:
                self.pinned_allocator = make_pinned()
        self.default_device: Device = self.cuda_devices[0] if self.cuda_devices else self.cpu_device
        #: The device used for ``"cuda"`` (the current CUDA device).
        self.current_cuda_device: Device | None = self.cuda_devices[0] if self.cuda_devices else None

    def provider_value(self, method: str, default: Any) -> Any:
        """The answer of the first provider implementing ``method``, or ``default``."""
        for provider in self.providers:
            fn = getattr(provider, method, None)
            if fn is not None:
                return fn()
        return default

    def resolve(self, ident: Any) -> Device:
        """Map a device identifier to a :class:`Device` (see :func:`get_device`)."""
        if ident is None:
            return self.default_device
        if isinstance(ident, Device):
            return ident
        if not isinstance(ident, str):
            raise ValueError(f"Invalid device identifier: {ident!r}; use 'cpu', 'cuda', 'cuda:N' or a Device object")
        dev = self.devices.get(ident)
        if dev is not None:
            return dev
        if ident == "cuda":
            if self.current_cuda_device is None:
                raise DeviceUnavailableError(_no_cuda_message("cuda"))
            return self.current_cuda_device
        if re.fullmatch(r"cuda:\d+", ident):
            if not self.cuda_devices:
                raise DeviceUnavailableError(_no_cuda_message(ident))
            found = ", ".join(d.alias for d in self.cuda_devices)
            raise DeviceUnavailableError(
                f"CUDA device '{ident}' is not available: {len(self.cuda_devices)} CUDA device(s) found ({found})"
            )
        raise ValueError(
            f"Invalid device identifier: {ident!r}; use 'cpu', 'cuda', 'cuda:N' (known devices: "
            f"{', '.join(self.devices)})"
        )


def _no_cuda_message(ident: str) -> str:
    return (
        f"CUDA device '{ident}' is not available: no CUDA driver/GPU was found "
        "(use device='cpu', or check wp.is_cuda_available() first)"
    )


def _start_cpu() -> None:
    from .threadpool import warm_up

    warm_up()  # the CPU device's toolchain and runtime, as a GPU's driver is loaded here


_HOLDER = state.DEVICES
_HOLDER.factory = lambda providers: Runtime(providers)
_HOLDER.start = _start_cpu


def register_device_provider(provider: Any) -> None:
    """Register a device provider (the CUDA backend's hook) and rediscover devices on next use.

    ``provider`` is an object following the protocol in this module's docstring, or a callable
    ``provider(runtime) -> list[Device]``.
    """
    if provider not in _HOLDER.providers:
        _HOLDER.providers.append(provider)
    _HOLDER.reset()


def unregister_device_provider(provider: Any) -> None:
    """Remove a provider registered with :func:`register_device_provider`."""
    if provider in _HOLDER.providers:
        _HOLDER.providers.remove(provider)
    _HOLDER.reset()


def get_runtime() -> Runtime:
    """The runtime, created on first use."""
    return _HOLDER.get()


def reset_runtime() -> None:
    """Drop the runtime so that the next use rediscovers devices (for tests); providers stay registered."""
    _HOLDER.reset()


# ---------------------------------------------------------------------------------------------------------------
# Public functions (reference API)
# ---------------------------------------------------------------------------------------------------------------


def init() -> None:
    """Initialize the runtime (discover devices). Idempotent and silent; called implicitly on first use."""
    get_runtime()


def get_device(ident: Any = None) -> Device:
    """Return the device named by ``ident``.

    ``ident`` is ``None`` (the current device), ``"cpu"``, ``"cuda"`` (the current CUDA device), ``"cuda:N"``,
    an alias registered with :func:`map_cuda_device`, or a :class:`Device`.

    Raises:
        ValueError: ``ident`` names no device, or names a CUDA device this machine does not have.
    """
    if ident is None:
        rt = _HOLDER.runtime
        if rt is not None:
            return rt.default_device
    return get_runtime().resolve(ident)


def set_device(ident: Any) -> None:
    """Make ``ident`` the current device (the default for allocations and launches)."""
    rt = get_runtime()
    dev = rt.resolve(ident)
    rt.default_device = dev
    if rt is _HOLDER.runtime:
        state.publish_devices(rt)  # what the native launch path reads
    if dev.is_cuda:
        rt.current_cuda_device = dev
    dev.make_current()


def get_devices() -> list[Device]:
    """All devices: the CPU first, then CUDA devices."""
    rt = get_runtime()
    return [rt.cpu_device, *rt.cuda_devices]


def get_preferred_device() -> Device:
    """``cuda:0`` when a GPU is available, else the CPU."""
    rt = get_runtime()
    return rt.cuda_devices[0] if rt.cuda_devices else rt.cpu_device


def get_cuda_devices() -> list[Device]:
    """All CUDA devices (empty without a GPU)."""
    return list(get_runtime().cuda_devices)


def get_cuda_device_count() -> int:
    """Number of CUDA devices (0 without a GPU)."""
    return len(get_runtime().cuda_devices)


def get_cuda_device(ordinal: int | None = None) -> Device:
    """The CUDA device ``ordinal`` (``None``: the current CUDA device)."""
    rt = get_runtime()
    if ordinal is None:
        return rt.resolve("cuda")
    return rt.resolve(f"cuda:{int(ordinal)}")


def is_cpu_available() -> bool:
    """True: the CPU device always exists."""
    return True


def is_cuda_available() -> bool:
    """True if at least one CUDA device was found."""
    return bool(get_runtime().cuda_devices)


def is_device_available(device: Any) -> bool:
    """True if ``device`` (a :class:`Device` or an identifier) exists on this machine."""
    rt = get_runtime()
    if isinstance(device, Device):
        return device in rt.devices.values()
    try:
        rt.resolve(device)
    except ValueError:
        return False
    return True


class ScopedDevice:
    """Context manager making a device current for a ``with`` block.

    Example::

        with wp.ScopedDevice("cpu"):
            a = wp.zeros(10)  # on the CPU
    """

    def __init__(self, device: Any) -> None:
        self.device = get_device(device)
        self._saved: tuple[Device, Device | None] | None = None

    def __enter__(self) -> Device:
        rt = get_runtime()
        self._saved = (rt.default_device, rt.current_cuda_device)
        set_device(self.device)
        return self.device

    def __exit__(self, *exc: object) -> None:
        assert self._saved is not None
        rt = get_runtime()
        rt.default_device, rt.current_cuda_device = self._saved
        if rt is _HOLDER.runtime:
            state.publish_devices(rt)
        rt.default_device.make_current()


def synchronize() -> None:
    """Wait for all outstanding work on all devices."""
    for dev in get_runtime().cuda_devices:
        dev.synchronize()


def synchronize_device(device: Any = None) -> None:
    """Wait for all outstanding work on ``device`` (default: the current device)."""
    get_device(device).synchronize()


def get_cuda_supported_archs() -> list[int]:
    """CUDA architectures the CUDA compiler can target (e.g. ``[75, 80, 86]``); ``[]`` without CUDA support."""
    return list(get_runtime().provider_value("supported_archs", []))


def get_cuda_toolkit_version() -> tuple[int, int]:
    """Version ``(major, minor)`` of the CUDA toolkit (NVRTC) in use; ``(0, 0)`` without CUDA support."""
    return tuple(get_runtime().provider_value("toolkit_version", (0, 0)))  # type: ignore[return-value]


def get_cuda_driver_version() -> int | None:
    """The CUDA driver version (e.g. ``12040``); ``None`` when no driver is installed (as in the reference)."""
    return get_runtime().provider_value("driver_version", None)  # type: ignore[no-any-return]


def can_access(device: Any, resource: Any) -> bool:
    """Whether ``device`` can directly access ``resource`` (an array, or another device).

    The CPU can access host arrays; a CUDA device can access its own memory, pinned host memory, and peer
    devices when the backend says so.
    """
    target = get_device(device)
    pinned = False
    if isinstance(resource, Device) or isinstance(resource, str):
        source = get_device(resource)
    elif hasattr(resource, "device") and hasattr(resource, "ptr"):
        source = get_device(resource.device)
        pinned = bool(getattr(resource, "pinned", False))
    else:
        raise TypeError(f"can_access() expects an array or a device as resource, got {type(resource).__name__}")
    if target == source:
        return True
    if target.is_cpu:
        return False
    if source.is_cpu:
        return pinned and target.is_uva
    peer = getattr(target, "can_access_peer", None)
    return bool(peer(source)) if peer is not None else False


def map_cuda_device(alias: str, context: Any = None) -> Device:
    """Register an external CUDA context under ``alias`` (requires a CUDA backend)."""
    rt = get_runtime()
    for provider in rt.providers:
        fn = getattr(provider, "map_device", None)
        if fn is not None:
            dev: Device = fn(rt, alias, context)
            dev.runtime = rt
            rt.devices[alias] = dev
            return dev
    raise DeviceUnavailableError(
        f"cannot map CUDA device '{alias}': CUDA is not available (no CUDA driver/GPU was found)"
    )


def unmap_cuda_device(alias: str) -> None:
    """Remove a device registered with :func:`map_cuda_device`."""
    rt = get_runtime()
    dev = rt.devices.get(alias)
    if dev is None or not dev.is_cuda:
        if not rt.cuda_devices:
            raise DeviceUnavailableError(
                f"cannot unmap CUDA device '{alias}': CUDA is not available (no CUDA driver/GPU was found)"
            )
        raise ValueError(f"unmap_cuda_device(): no CUDA device is mapped under alias '{alias}'")
    for provider in rt.providers:
        fn = getattr(provider, "unmap_device", None)
        if fn is not None:
            fn(rt, dev)
            break
    del rt.devices[alias]
    if rt.default_device is dev:
        rt.default_device = get_preferred_device()
    if rt is _HOLDER.runtime:
        state.publish_devices(rt)


def _find_cxx() -> str:
    from ... import config

    if config.cxx:
        return config.cxx
    for name in ("clang++", "g++", "c++"):
        path = shutil.which(name)
        if path:
            return path
    return "not found (install clang++ or g++, or set TREADLE_CXX)"


def print_diagnostics() -> None:
    """Print a short report about this installation to stdout: versions, devices, compiler."""
    import numpy as np

    from ... import config

    rt = get_runtime()
    out: Callable[[str], None] = print
    out(f"Treadle {config.version}")
    out(f"   Python {platform.python_version()} ({sys.executable}), NumPy {np.__version__}")
    out(f"   Platform {platform.platform()}")
    out("   Devices:")
    for dev in get_devices():
        extra = f" (sm_{dev.arch}, {dev.total_memory / 2**30:.1f} GiB)" if dev.is_cuda else ""
        out(f'     "{dev.alias}"{" " * max(1, 10 - len(dev.alias))}: "{dev.name}"{extra}')
    if rt.cuda_devices:
        tk = get_cuda_toolkit_version()
        out(f"   CUDA toolkit {tk[0]}.{tk[1]}, driver {get_cuda_driver_version()}")
    else:
        out("   CUDA: not available (no CUDA driver/GPU was found)")
    out(f"   C++ compiler: {_find_cxx()}")
    out(f"   Kernel cache: {config.kernel_cache_dir or '(default)'}")
    for provider in rt.providers:
        lines = getattr(provider, "diagnostics", None)
        for line in lines() if lines is not None else ():
            out(f"   {line}")
