"""Native descriptors of the spatial structures, where the device's kernels can read them.

A ``HashGrid``, ``Bvh`` or ``Mesh`` id is the address of a native descriptor (``hash_grid_t``, ``bvh_t``,
``mesh_t``) that the query builtins dereference. The Python object keeps a ``ctypes`` mirror of it on the host.

- On a device whose memory the host can address (the CPU), the id is the mirror's own address: one copy.
- On a device whose memory it cannot (CUDA), the descriptor lives in an allocation of that device (made through the
  device's allocator, like any array) and the id is its device address. Host-side changes are written to it by
  :meth:`DescriptorMirror.push`, with a small kernel whose arguments carry the bytes by value: it is ordered on the
  device's stream with the launches around it and can be recorded in a graph, unlike a copy from pageable memory.

Some fields are written by device code only (a BVH's node count, a hash grid's point bounds, a mesh's mean edge
length); pushes name the fields the host owns, so they never overwrite those. Every field is pushed as the 8-byte
words that contain it, so a host-owned field must not share a word with a device-written one (checked).
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..builtins.exports import exported_builtins
from ..lang.array import array
from ..lang.creation import zeros
from ..lang.kernel import kernel
from ..lang.launch import launch
from ..types import scalars
from ..types.vector import vector

tid = exported_builtins()["tid"]

_CHUNK = 16
_Words = vector(length=_CHUNK, dtype=scalars.int64)


@kernel(enable_backward=False)
def _desc_store(dst: array(dtype=scalars.int64), first: int, words: _Words):
    i = tid()
    dst[first + i] = words[i]


def field_span(struct: type, name: str) -> tuple[int, int]:
    """Byte range ``[start, end)`` of field ``name`` of a ctypes structure (``"bvh.num_nodes"`` for nested ones)."""
    start = 0
    for part in name.split("."):
        f = getattr(struct, part)
        start += f.offset
        struct = dict((n, t) for n, t, *_ in struct._fields_)[part]
        size = f.size
    return start, start + size


class DescriptorMirror:
    """A ctypes descriptor and, on devices the host cannot address, its device copy.

    Args:
        host: the ctypes structure (kept alive here).
        device: the structure's device.
        device_fields: names of the fields only device code writes (never pushed).
    """

    def __init__(self, host: ctypes.Structure, device: Any, device_fields: tuple[str, ...] = ()) -> None:
        self.host = host
        self.device = device
        self.nbytes = ctypes.sizeof(host)
        self._device_words: set[int] = set()
        for f in device_fields:
            s, e = field_span(type(host), f)
            self._device_words.update(range(s // 8, (e + 7) // 8))
        if device.allocator.host_accessible:
            self.storage: array | None = None
            self.id = ctypes.addressof(host)
        else:
            # zero-initialised: device-written fields start as the host's defaults (zeros)
            self.storage = zeros((self.nbytes + 7) // 8, dtype=scalars.int64, device=device)
            self.id = self.storage.ptr
            self.push()

    @property
    def on_device(self) -> bool:
        """Whether the descriptor is a device copy (pushes write to it)."""
        return self.storage is not None

    def push(self, *fields: str, device_written: bool = False) -> None:
        """Write the named host fields (all host-owned fields when none are named) to the device copy.

        ``device_written``: the named fields may be ones device code writes (a value computed on the host instead,
        e.g. by a host build: ``host_build.py``).
        """
        if self.storage is None:
            return
        nwords = (self.nbytes + 7) // 8
        if fields:
            words: set[int] = set()
            for f in fields:
                s, e = field_span(type(self.host), f)
                span = set(range(s // 8, (e + 7) // 8))
                if span & self._device_words and not device_written:
                    raise RuntimeError(f"descriptor field {f} shares a word with a device-written field")
                words |= span
        else:
            words = set(range(nwords)) - self._device_words
        raw = (ctypes.c_int64 * nwords)()
        ctypes.memmove(raw, ctypes.addressof(self.host), self.nbytes)
        for first, count in _runs(sorted(words)):
            while count:
                k = min(count, _CHUNK)
                vals = list(raw[first:first + k]) + [0] * (_CHUNK - k)
                launch(_desc_store, dim=k, inputs=[self.storage, first, _Words(*vals)], device=self.device,
                       record_tape=False)
                first, count = first + k, count - k


def _runs(words: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs ``(first, count)`` of sorted word indices."""
    out: list[tuple[int, int]] = []
    for w in words:
        if out and out[-1][0] + out[-1][1] == w:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((w, 1))
    return out
