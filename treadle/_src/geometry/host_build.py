"""Serial tree builds for CUDA devices run on the host, the result copied to the device.

The SAH/median BVH builder and refit (``native/bvh.h``) and the mesh build (``native/mesh.h``) are serial: on a GPU
they run in one thread. Measured on an H200 against this machine's CPU (2026-11-30, ``tools/gpu_probe.py``): a
180k-triangle ``Mesh`` built in 1.6 s on the GPU and 64 ms on the CPU, its refit took 208 ms against 3.4 ms. So on
a CUDA device the build runs on a CPU twin of the structure (same inputs, same options, so the same tree), and its
buffers are copied to the device arrays the queries read. Inside a graph capture nothing can run on the host, so
builds and refits captured in a graph keep the one-thread kernel (same results, slower). The radix sort of packed
64-bit keys (``HashGrid`` builds, LBVH Morton codes) likewise runs on the host (:class:`HostSort`): a 1M-point
``HashGrid`` built in 648 ms with the one-thread sort, 120 ms so.

``wp.config.geometry_host_builds = False`` keeps every build on the device.
"""

from __future__ import annotations

from typing import Any

from ... import config
from ..lang.array import array
from ..lang.creation import copy, empty
from ..lang.launch import launch
from ..runtime.device import get_device
from ..types import scalars


def host_builds(device: Any) -> bool:
    """Whether a serial build for ``device`` should run on the host now."""
    if not getattr(device, "is_cuda", False) or not getattr(config, "geometry_host_builds", True):
        return False
    from ..backends.cuda.launch import _capturing

    return not _capturing(device, None)


def upload(pairs: list[tuple[array | None, array | None, int]]) -> None:
    """Copy ``(device array, host array, elements)`` pairs host -> device (``elements`` 0: all of it)."""
    for dst, src, count in pairs:
        if dst is None or src is None:
            continue
        n = count if count else src.size
        if n > 0:
            copy(dst, src, count=n)


class HostSort:
    """The serial radix sort of ``n`` packed 64-bit keys run on the host for a CUDA device (buffers kept)."""

    def __init__(self) -> None:
        self.keys: array | None = None
        self.scratch: array | None = None

    def __call__(self, sort_kernel: Any, keys: array, n: int, key_bits: int) -> None:
        """Sort ``keys[:n]`` in place with ``sort_kernel(keys, scratch, n, key_bits)`` launched on the CPU."""
        cpu = get_device("cpu")
        if self.keys is None or self.keys.size < n:
            self.keys = empty(n, dtype=scalars.int64, device=cpu)
            self.scratch = empty(n, dtype=scalars.int64, device=cpu)
        copy(self.keys, keys, count=n)
        launch(sort_kernel, dim=1, inputs=[self.keys, self.scratch, n, key_bits], device=cpu, record_tape=False)
        copy(keys, self.keys, count=n)
