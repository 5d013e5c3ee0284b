"""Memory allocation behind a small allocator interface.

The CPU allocator hands out 64-byte aligned buffers owned by NumPy (aligned buffers vectorize well and let JAX
import them zero-copy). A CUDA backend plugs in its own :class:`Allocator` subclass with the same interface:
``alloc(nbytes) -> Allocation``, ``free(allocation)``, ``memset``, ``memcpy`` and the host transfer pair
``copy_from_host``/``copy_to_host``.
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import Any

import numpy as np

#: Alignment in bytes of every CPU allocation.
ALIGNMENT = 64


@dataclasses.dataclass
class Allocation:
    """A block of memory: its address, its size, and the object that keeps it alive.

    Attributes:
        ptr: the address of the first byte (aligned to :data:`ALIGNMENT` on the CPU).
        nbytes: the usable size in bytes.
        owner: an object whose lifetime is the memory's lifetime (a NumPy buffer on the CPU). Memory is
            released when the last reference to ``owner`` goes away.
        allocator: the allocator that made it.
    """

    ptr: int
    nbytes: int
    owner: Any
    allocator: Allocator | None = None


def alloc_cpu(nbytes: int) -> tuple[np.ndarray, int]:
    """Allocate ``nbytes`` of host memory aligned to 64 bytes.

    Returns:
        ``(buffer, address)``: a ``uint8`` NumPy array of length ``nbytes`` that owns the memory (keep it alive
        as long as the address is used) and the aligned address of its first byte. ``nbytes == 0`` returns an
        empty buffer with a valid, aligned, non-null address.
    """
    if nbytes < 0:
        raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    base = raw.ctypes.data
    offset = (-base) % ALIGNMENT
    buf = raw[offset : offset + nbytes]  # a view: its .base keeps `raw` alive
    return buf, base + offset


class Allocator:
    """Interface of device allocators. Addresses are plain integers."""

    #: True if the memory can be read and written directly by the host CPU.
    host_accessible: bool = True

    def alloc(self, nbytes: int) -> Allocation:
        """Allocate ``nbytes`` (uninitialized) and return the :class:`Allocation`."""
        raise NotImplementedError

    def free(self, allocation: Allocation) -> None:
        """Release ``allocation`` early (it is released anyway when its owner is garbage collected)."""
        allocation.owner = None

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        """Set ``nbytes`` bytes at ``ptr`` to the byte ``value``."""
        raise NotImplementedError

    def memcpy(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` between two blocks of this allocator's memory."""
        raise NotImplementedError

    def copy_from_host(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from host address ``src`` into this allocator's memory at ``dst``."""
        self.memcpy(dst, src, nbytes)

    def copy_to_host(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from this allocator's memory at ``src`` to host address ``dst``."""
        self.memcpy(dst, src, nbytes)


#: Host memsets at least this large (``zero_()`` of big arrays and gradients) run on the thread pool: a 4 MB gradient
#: that two threads wrote in a backward pass is cleared in about half the time, each thread in its own cache.
PARALLEL_MEMSET_BYTES = 2 << 20


class CpuAllocator(Allocator):
    """Host memory: 64-byte aligned NumPy-owned buffers."""

    host_accessible = True

    def alloc(self, nbytes: int) -> Allocation:
        """Allocate ``nbytes`` of aligned host memory."""
        buf, ptr = alloc_cpu(nbytes)
        return Allocation(ptr=ptr, nbytes=nbytes, owner=buf, allocator=self)

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        """Set ``nbytes`` bytes at ``ptr`` to the byte ``value`` (large buffers on the thread pool's threads)."""
        if nbytes >= PARALLEL_MEMSET_BYTES:
            from .threadpool import parallel_memset

            if parallel_memset(ptr, value & 0xFF, nbytes):
                return
        if nbytes > 0:
            ctypes.memset(ptr, value & 0xFF, nbytes)

    def memcpy(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from ``src`` to ``dst`` (regions may overlap)."""
        if nbytes > 0:
            ctypes.memmove(dst, src, nbytes)
