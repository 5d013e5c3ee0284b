"""Access between CUDA devices: peer access to default allocations and to memory pools.

``target`` is the device whose memory is read, ``peer`` the device that reads it. Both must be CUDA devices; the
queries answer ``False`` for any other device, and enabling access for one raises ``ValueError`` (disabling it does
nothing), as the reference does. Peer access to default allocations is a property of a pair of contexts
(``cuCtxEnablePeerAccess``), access to a memory pool one of the pool and the reading device (``cuMemPoolSetAccess``).
What was set is remembered per pair, so that queries during graph capture (when the driver cannot be asked) give the
current setting.
"""

from __future__ import annotations

from typing import Any

from .cuda_driver import CudaError, call, enum
from .device import Device, get_device

#: (target context, peer context) -> peer access enabled, as last set or read
_PEER: dict[tuple[int, int], bool] = {}
#: (target ordinal, peer ordinal) -> memory pool access enabled, as last set or read
_POOL: dict[tuple[int, int], bool] = {}


def _cuda_pair(target: Any, peer: Any) -> tuple[Device, Device, bool]:
    t, p = get_device(target), get_device(peer)
    return t, p, bool(t.is_cuda and p.is_cuda)


def _ctx_key(t: Device, p: Device) -> tuple[int, int]:
    return id(t.context), id(p.context)


def is_peer_access_supported(target_device: Any, peer_device: Any) -> bool:
    """Whether ``peer_device`` can directly access the memory of ``target_device`` on this system."""
    t, p, cuda = _cuda_pair(target_device, peer_device)
    if not cuda:
        return False
    if t == p:
        return True
    return bool(p.can_access_peer(t))  # type: ignore[attr-defined]


def is_peer_access_enabled(target_device: Any, peer_device: Any) -> bool:
    """Whether ``peer_device`` can currently access ``target_device``'s default (non-pooled) allocations."""
    t, p, cuda = _cuda_pair(target_device, peer_device)
    if not cuda:
        return False
    if t.context is p.context:
        return True
    return _PEER.get(_ctx_key(t, p), False)


def set_peer_access_enabled(target_device: Any, peer_device: Any, enable: bool) -> None:
    """Enable or disable direct access from ``peer_device`` to ``target_device``'s default allocations.

    Raises:
        ValueError: enabling it where either device is not a CUDA device.
        RuntimeError: enabling it where the system does not support it, or the driver refuses.
    """
    t, p, cuda = _cuda_pair(target_device, peer_device)
    if not cuda:
        if enable:
            raise ValueError("Peer access is only supported between CUDA devices")
        return
    if t.context is p.context:
        return
    if not is_peer_access_supported(t, p):
        if enable:
            raise RuntimeError(f"Device {p} cannot access device {t}")
        return
    with p.guard():  # type: ignore[attr-defined]
        try:
            if enable:
                call("cuCtxEnablePeerAccess", t.context, 0)
            else:
                call("cuCtxDisablePeerAccess", t.context)
        except CudaError as e:
            already = "ALREADY_ENABLED" if enable else "NOT_ENABLED"
            if already not in e.name:
                action = "enable" if enable else "disable"
                raise RuntimeError(f"Failed to {action} peer access from device {p} to device {t}: {e}") from None
    _PEER[_ctx_key(t, p)] = bool(enable)


def is_mempool_access_supported(target_device: Any, peer_device: Any) -> bool:
    """Whether ``peer_device`` can directly access the memory pool of ``target_device``."""
    t = get_device(target_device)
    return bool(t.is_mempool_supported) and is_peer_access_supported(t, peer_device)


def _pool_location(p: Device) -> Any:
    from .cuda_driver import require_driver

    loc = require_driver().CUmemLocation()
    loc.type = enum("CUmemLocationType", "CU_MEM_LOCATION_TYPE_DEVICE")
    loc.id = p.ordinal
    return loc


def is_mempool_access_enabled(target_device: Any, peer_device: Any) -> bool:
    """Whether ``peer_device`` can currently access allocations from ``target_device``'s memory pool."""
    t, p, cuda = _cuda_pair(target_device, peer_device)
    if not cuda or not t.is_mempool_supported:
        return False
    if t == p:
        return True
    key = (t.ordinal, p.ordinal)
    if p.is_capturing:
        return _POOL.get(key, False)
    flags = call("cuMemPoolGetAccess", t.default_mempool(), _pool_location(p))  # type: ignore[attr-defined]
    enabled = int(flags) == int(enum("CUmemAccess_flags", "CU_MEM_ACCESS_FLAGS_PROT_READWRITE"))
    _POOL[key] = enabled
    return enabled


def set_mempool_access_enabled(target_device: Any, peer_device: Any, enable: bool) -> None:
    """Enable or disable access from ``peer_device`` to allocations from ``target_device``'s memory pool.

    Raises:
        ValueError: enabling it where either device is not a CUDA device.
        RuntimeError: enabling it where the target has no memory pool or the system does not support the access.
    """
    t, p, cuda = _cuda_pair(target_device, peer_device)
    if not cuda:
        if enable:
            raise ValueError("Memory pool access is only supported between CUDA devices")
        return
    if not t.is_mempool_supported:
        if enable:
            raise RuntimeError(f"Device {t} does not support memory pools")
        return
    if t == p:
        return
    if not is_peer_access_supported(t, p):
        if enable:
            raise RuntimeError(f"Device {p} cannot access device {t}")
        return
    from .cuda_driver import require_driver

    desc = require_driver().CUmemAccessDesc()
    desc.location = _pool_location(p)
    flag = "CU_MEM_ACCESS_FLAGS_PROT_READWRITE" if enable else "CU_MEM_ACCESS_FLAGS_PROT_NONE"
    desc.flags = enum("CUmemAccess_flags", flag)
    try:
        call("cuMemPoolSetAccess", t.default_mempool(), [desc], 1)  # type: ignore[attr-defined]
    except CudaError as e:
        action = "enable" if enable else "disable"
        raise RuntimeError(f"Failed to {action} memory pool access from device {p} to device {t}: {e}") from None
    _POOL[(t.ordinal, p.ordinal)] = bool(enable)


class _ScopedAccess:
    """Sets one kind of access from ``peer_device`` to ``target_device`` inside a ``with`` block, restoring it after."""

    _query: Any = None
    _set: Any = None

    def __init__(self, target_device: Any, peer_device: Any, enable: bool = True) -> None:
        self.target_device = get_device(target_device)
        self.peer_device = get_device(peer_device)
        self.enable = enable
        self.saved = False

    def __enter__(self) -> Any:
        self.saved = type(self)._query(self.target_device, self.peer_device)
        type(self)._set(self.target_device, self.peer_device, self.enable)
        return self

    def __exit__(self, *exc: object) -> None:
        type(self)._set(self.target_device, self.peer_device, self.saved)


class ScopedPeerAccess(_ScopedAccess):
    """``with wp.ScopedPeerAccess(target, peer, enable=True):`` sets peer access inside the block.

    The previous setting comes back on exit.
    """

    _query = staticmethod(is_peer_access_enabled)
    _set = staticmethod(set_peer_access_enabled)


class ScopedMempoolAccess(_ScopedAccess):
    """``with wp.ScopedMempoolAccess(target, peer, enable=True):`` sets memory pool access inside the block.

    The previous setting comes back on exit.
    """

    _query = staticmethod(is_mempool_access_enabled)
    _set = staticmethod(set_mempool_access_enabled)


def check_p2p() -> bool:
    """Whether peer-to-peer transfers can work between every pair of CUDA devices (``True`` with fewer than two)."""
    from .device import get_cuda_device, get_cuda_device_count

    n = get_cuda_device_count()
    devs = [get_cuda_device(i) for i in range(n)]
    return all(is_peer_access_supported(a, b) for a in devs for b in devs if a != b)
