"""``Bvh``: a bounding volume hierarchy over axis-aligned boxes, queried in kernels with ``bvh_query_*``.

The item bounds are gathered by a parallel Treadle kernel; the tree is built and refitted by the serial native
builder in ``treadle/native/bvh.h`` (binned SAH or median splits), run by one-thread kernels, or, with
``constructor="lbvh"``, by the parallel Treadle kernels of ``lbvh.py`` (Morton codes, sort, Karras hierarchy).
The object owns the ``bvh_t`` descriptor (its address is :attr:`Bvh.id`; a device copy on CUDA, ``descriptor.py``)
and every buffer it points to. ``Mesh`` reuses :class:`BvhBuffers` for its triangle tree.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..builtins import REGISTRY
from ..builtins.exports import exported_builtins
from ..lang.array import array
from ..lang.creation import copy, empty, zeros
from ..lang.kernel import kernel
from ..lang.launch import launch
from ..runtime.device import get_device
from ..types import scalars
from ..types.vector import vec3f
from .descriptor import DescriptorMirror
from .host_build import host_builds, upload
from .lbvh import LbvhState

tid = exported_builtins()["tid"]
_bvh_build = REGISTRY.builtins["_bvh_build"]
_bvh_refit = REGISTRY.builtins["_bvh_refit"]

#: Accepted constructor names and their builder codes: binned SAH and object median (serial native builder), "lbvh"
#: (Morton codes + Karras hierarchy from Treadle kernels, ``lbvh.py``); "cubql" builds with SAH.
CONSTRUCTORS = {"sah": 0, "median": 1, "lbvh": 2, "cubql": 0}
LBVH = 2


class BvhDesc(ctypes.Structure):
    """Mirror of ``treadle::bvh_t``."""

    _fields_ = [
        ("nodes", ctypes.c_void_p),
        ("items", ctypes.c_void_p),
        ("slot_bounds", ctypes.c_void_p),
        ("item_bounds", ctypes.c_void_p),
        ("scratch", ctypes.c_void_p),
        ("centroids", ctypes.c_void_p),
        ("group_ids", ctypes.c_void_p),
        ("group_starts", ctypes.c_void_p),
        ("group_roots", ctypes.c_void_p),
        ("num_groups", ctypes.c_int32),
        ("num_nodes", ctypes.c_int32),
        ("num_items", ctypes.c_int32),
        ("leaf_size", ctypes.c_int32),
        ("constructor", ctypes.c_int32),
        ("pad", ctypes.c_int32),
    ]


@kernel(enable_backward=False)
def _box_bounds(lowers: array(dtype=vec3f), uppers: array(dtype=vec3f), bounds: array(dtype=float, ndim=2)):
    i = tid()
    lo = lowers[i]
    hi = uppers[i]
    bounds[i, 0] = lo[0]
    bounds[i, 1] = lo[1]
    bounds[i, 2] = lo[2]
    bounds[i, 3] = hi[0]
    bounds[i, 4] = hi[1]
    bounds[i, 5] = hi[2]


@kernel(enable_backward=False)
def _run_build(bvh: scalars.uint64, out: array(dtype=int)):
    out[0] = _bvh_build(bvh)


@kernel(enable_backward=False)
def _run_refit(bvh: scalars.uint64, out: array(dtype=int)):
    out[0] = _bvh_refit(bvh)


def is_cubql_available() -> bool:
    """Whether the cuBQL BVH builder is available (never here: "cubql" builds with SAH)."""
    return False


def parse_constructor(constructor: Any) -> int:
    """The native builder code of a constructor name (``None``: SAH)."""
    if constructor is None:
        return 0
    key = str(constructor).lower()
    if key not in CONSTRUCTORS:
        raise ValueError(f"Unknown BVH constructor '{constructor}', expected one of: {', '.join(CONSTRUCTORS)}")
    return CONSTRUCTORS[key]


def parse_leaf_size(leaf_size: Any) -> int:
    """Validate a leaf size (>= 1)."""
    if leaf_size is None:
        return 1
    if int(leaf_size) < 1:
        raise ValueError(f"leaf_size must be greater than or equal to 1, current value: {leaf_size}")
    return int(leaf_size)


def as_groups(groups: Any, n: int, device: Any) -> np.ndarray | None:
    """Group ids as a NumPy int32 array of length ``n`` (``None`` without groups)."""
    if groups is None:
        return None
    g = groups.numpy() if isinstance(groups, array) else np.asarray(groups)
    g = np.ascontiguousarray(g, dtype=np.int32).reshape(-1)
    if len(g) != n:
        raise ValueError(f"groups has {len(g)} entries for {n} items")
    return g


class BvhBuffers:
    """The native tree of ``n`` items: descriptor plus the buffers it points to.

    The descriptor is mirrored where the device's kernels read it (:class:`DescriptorMirror`): ``id`` is its
    address there. With ``mirror=False`` the caller embeds ``desc`` in its own descriptor and calls :meth:`attach`.
    """

    def __init__(self, n: int, device: Any, leaf_size: int, constructor: int, groups: np.ndarray | None,
                 mirror: bool = True) -> None:
        self.device = device
        self.n = n
        cap = max(n, 1)
        self.desc = BvhDesc()
        self.id = 0
        # uninitialised: the builder writes every entry it later reads
        self.nodes = empty((2 * cap, 8), dtype=scalars.float32, device=device)
        self.items = empty(cap, dtype=scalars.int32, device=device)
        self.slot_bounds = empty((cap, 6), dtype=scalars.float32, device=device)
        self.item_bounds = empty((cap, 6), dtype=scalars.float32, device=device)
        self.scratch = empty(2 * 2 * cap, dtype=scalars.int32, device=device)
        self.centroids = empty((cap, 3), dtype=scalars.float32, device=device)
        self.result = zeros(1, dtype=scalars.int32, device=device)
        d = self.desc
        d.nodes, d.items, d.slot_bounds = self.nodes.ptr, self.items.ptr, self.slot_bounds.ptr
        d.item_bounds, d.scratch, d.centroids = self.item_bounds.ptr, self.scratch.ptr, self.centroids.ptr
        d.num_items, d.leaf_size, d.constructor = n, leaf_size, constructor
        self.set_groups(groups)
        self._prefix = ""
        if mirror:
            # the node count is written by the native builder (bvh.h) and, for LBVH trees, pushed by the host
            self.attach(DescriptorMirror(self.desc, device), self.desc, "")

    def attach(self, mirror: DescriptorMirror, desc: Any, prefix: str) -> None:
        """Use ``desc`` (the ``bvh_t`` at field ``prefix`` of ``mirror``'s descriptor) as this tree's descriptor."""
        self.mirror, self.desc, self._prefix = mirror, desc, prefix
        self.id = mirror.id + (getattr(type(mirror.host), prefix[:-1]).offset if prefix else 0)

    def push(self, *fields: str) -> None:
        """Write the named descriptor fields to the device copy (no-op on the CPU)."""
        self.mirror.push(*(self._prefix + f for f in fields))

    def set_groups(self, groups: np.ndarray | None) -> None:
        """Initial slot order (grouped items sorted by group) and the group tables."""
        self.groups = groups
        self.twin: BvhBuffers | None = None  # the host twin of a CUDA tree (host_build.py), made at its first build
        d = self.desc
        if groups is None or self.n == 0:
            order = np.arange(self.n, dtype=np.int32)
            d.num_groups = 0
            d.group_ids = d.group_starts = d.group_roots = None
        else:
            order = np.argsort(groups, kind="stable").astype(np.int32)
            ids, starts = np.unique(groups[order], return_index=True)
            self.group_ids = array(ids.astype(np.int32), dtype=scalars.int32, device=self.device)
            self.group_starts = array(np.append(starts, self.n).astype(np.int32), dtype=scalars.int32,
                                      device=self.device)
            self.group_roots = zeros(len(ids), dtype=scalars.int32, device=self.device)
            d.num_groups = len(ids)
            d.group_ids, d.group_starts = self.group_ids.ptr, self.group_starts.ptr
            d.group_roots = self.group_roots.ptr
        self.initial_order = order
        # the initial slot order, on the device: builds copy it into ``items`` (a device-side copy; ``numpy()`` of
        # device memory is a host copy, so writing through it would be lost)
        self.order = array(order if self.n else np.zeros(1, np.int32), dtype=scalars.int32, device=self.device)

    def _lbvh(self) -> LbvhState | None:
        """The LBVH builder state when this tree is built by it (not with groups, nor for fewer than 2 items)."""
        if self.desc.constructor != LBVH or self.desc.num_groups or self.n < 2:
            return None
        if getattr(self, "lbvh", None) is None:
            self.lbvh = LbvhState(self)
        return self.lbvh

    def build(self) -> None:
        """Build from ``item_bounds`` (filled by the caller)."""
        lbvh = self._lbvh()
        if lbvh is not None:
            lbvh.build()
            return
        if host_builds(self.device):
            self._on_host(build=True)
            return
        self.reset_items()
        launch(_run_build, dim=1, inputs=[self.id, self.result], device=self.device, record_tape=False)

    def host_twin(self) -> BvhBuffers:
        """The CPU tree with this one's size, options and groups (for builds on the host: ``host_build.py``)."""
        if self.twin is None or self.twin.desc.constructor != self.desc.constructor:  # (rebuild(constructor=))
            self.twin = BvhBuffers(self.n, get_device("cpu"), self.desc.leaf_size, self.desc.constructor,
                                   self.groups)
        return self.twin

    def upload_tree(self, twin: BvhBuffers, items: bool) -> None:
        """Copy ``twin``'s tree (and slot order when ``items``) to this tree's device buffers and descriptor."""
        nodes = int(twin.desc.num_nodes)
        upload([(self.nodes, twin.nodes, 8 * nodes), (self.slot_bounds, twin.slot_bounds, 6 * self.n),
                (self.items, twin.items if items else None, self.n), (self.result, twin.result, 0),
                (getattr(self, "group_roots", None) if items else None, getattr(twin, "group_roots", None), 0)])
        self.desc.num_nodes = nodes
        self.push("num_nodes")

    def _on_host(self, build: bool) -> None:
        """Build (or refit) on the host twin from this tree's ``item_bounds``, then upload the result."""
        twin = self.host_twin()
        if self.n:
            copy(twin.item_bounds, self.item_bounds, count=6 * self.n)
        twin.build() if build else twin.refit()
        self.upload_tree(twin, items=build)

    def reset_items(self) -> None:
        """Copy the initial slot order into ``items`` (before a native build)."""
        if self.n:
            copy(self.items, self.order, count=self.n)

    def refit(self) -> None:
        """Refit from ``item_bounds`` (filled by the caller)."""
        lbvh = self._lbvh()
        if lbvh is not None:
            lbvh.refit()
            return
        if host_builds(self.device) and self.twin is not None:  # a tree built on the host is refitted there
            self._on_host(build=False)
            return
        launch(_run_refit, dim=1, inputs=[self.id, self.result], device=self.device, record_tape=False)


def _check_bounds_array(a: Any, name: str) -> array:
    if not isinstance(a, array):
        raise TypeError(f"Bvh {name} must be a treadle array of vec3, got {type(a).__name__}")
    if a.dtype is not vec3f:
        raise TypeError(f"Bvh {name} must have dtype vec3, got {getattr(a.dtype, '__name__', a.dtype)}")
    if a.ndim != 1:
        a = a.contiguous().reshape((a.size,)) if a.size else a.reshape((0,))
    return a


class Bvh:
    """A bounding volume hierarchy over boxes ``[lowers[i], uppers[i]]``.

    Args:
        lowers: lower corners of the item boxes (array of vec3).
        uppers: upper corners (same length).
        constructor: ``"sah"`` (default), ``"median"``, ``"lbvh"`` (linear BVH from Morton codes, built by Treadle
            kernels; one item per leaf; with groups it builds with SAH); ``"cubql"`` is accepted and builds with SAH.
        groups: optional int32 group id per item; ``bvh_get_group_root`` then restricts queries to one group.
        leaf_size: maximum number of items per leaf (>= 1).

    Queries see the bounds as of the last build or :meth:`refit`.
    """

    def __init__(self, lowers: array, uppers: array, constructor: Any = None, groups: Any = None,
                 leaf_size: int = 1) -> None:
        lowers = _check_bounds_array(lowers, "lowers")
        uppers = _check_bounds_array(uppers, "uppers")
        if lowers.shape[0] != uppers.shape[0]:
            raise RuntimeError("The same number of lower and upper bounds must be provided")
        self.device = get_device(lowers.device)
        self.lowers, self.uppers = lowers, uppers
        self._constructor = parse_constructor(constructor)
        if groups is not None and str(constructor).lower() == "cubql":
            raise RuntimeError("Grouped BVHs are not supported by the cubql constructor")
        self.leaf_size = parse_leaf_size(leaf_size)
        n = lowers.shape[0]
        self.groups = groups
        self._tree = BvhBuffers(n, self.device, self.leaf_size, self._constructor, as_groups(groups, n, self.device))
        self.id = self._tree.id
        self._gather()
        self._tree.build()

    def __del__(self) -> None:
        """Nothing native to release: the buffers are arrays owned by this object."""

    def _gather(self) -> None:
        n = self._tree.n
        if n:
            launch(_box_bounds, dim=n, inputs=[self.lowers, self.uppers, self._tree.item_bounds], device=self.device,
                   record_tape=False)

    def refit(self) -> None:
        """Update the node bounds from the current ``lowers``/``uppers`` (same tree topology)."""
        self._gather()
        self._tree.refit()

    def rebuild(self, constructor: Any = None) -> None:
        """Rebuild the tree from the current bounds (with another constructor if given)."""
        if constructor is not None:
            self._constructor = parse_constructor(constructor)
            self._tree.desc.constructor = self._constructor
            self._tree.push("constructor")
        self._gather()
        self._tree.build()
