"""Linear BVH construction (``Bvh(..., constructor="lbvh")``) from Treadle kernels only, so any backend runs it.

1. ``_lbvh_scene``: the bounds of the item centroids (atomic min/max).
2. ``_lbvh_codes``: a 30-bit Morton code per item centroid (10 bits per axis), packed above the item index into a
   unique 64-bit key; the keys are radix-sorted by the hash grid's sort kernel (Morton bits only, stable).
3. ``_lbvh_hierarchy``: one thread per internal node finds the range of sorted keys it covers and its split from the
   length of common key prefixes (Karras, "Maximizing parallelism in the construction of BVHs, octrees and k-d
   trees", 2012). Internal nodes are ``0 .. n-2`` (the root is 0), leaf ``k`` is node ``n - 1 + k`` and holds slot k.
4. ``_lbvh_bounds``: one thread per leaf writes its bounds and climbs towards the root; at each internal node the
   second child to arrive (``atomic_cas`` on a per-node flag) takes the union of both children and goes on. Refit
   runs the same kernel.

The nodes use the native ``bvh_node_t`` layout, so the queries in ``treadle/native/bvh.h`` traverse the tree
unchanged. Karras trees are not stored parent-before-child, so they are refitted by ``_lbvh_bounds`` rather than by
the native reverse sweep. Leaves hold one item each (``leaf_size`` is not used); groups fall back to the SAH builder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..builtins import REGISTRY
from ..builtins.exports import exported_builtins
from ..lang.array import array
from ..lang.creation import full, zeros
from ..lang.kernel import func, kernel
from ..lang.launch import launch
from ..types import scalars
from .host_build import HostSort, host_builds

if TYPE_CHECKING:
    from .bvh import BvhBuffers

_B = exported_builtins()
tid, atomic_min, atomic_max, atomic_cas = _B["tid"], _B["atomic_min"], _B["atomic_max"], _B["atomic_cas"]
clamp, min_, max_ = _B["clamp"], _B["min"], _B["max"]
_hash_sort = REGISTRY.builtins["_hash_sort"]

int64 = scalars.int64
_MORTON_BITS = 30


@kernel(enable_backward=False)
def _lbvh_scene_init(scene: array(dtype=float)):
    a = tid()
    scene[a] = 3.0e38
    scene[3 + a] = -3.0e38


@kernel(enable_backward=False)
def _lbvh_scene(bounds: array(dtype=float, ndim=2), scene: array(dtype=float)):
    i = tid()
    for a in range(3):
        c = 0.5 * (bounds[i, a] + bounds[i, 3 + a])
        atomic_min(scene, a, c)
        atomic_max(scene, 3 + a, c)


@func
def _spread_bits(v: scalars.int64) -> scalars.int64:
    """Insert two zero bits between each of the low 10 bits of ``v``."""
    x = v & int64(0x3FF)
    x = (x | (x << int64(16))) & int64(0x030000FF)
    x = (x | (x << int64(8))) & int64(0x0300F00F)
    x = (x | (x << int64(4))) & int64(0x030C30C3)
    x = (x | (x << int64(2))) & int64(0x09249249)
    return x


@func
def _quantize(c: float, lo: float, hi: float) -> scalars.int64:
    ext = hi - lo
    q = 0.0
    if ext > 0.0:
        q = (c - lo) / ext * 1023.0
    return int64(clamp(int(q + 0.5), 0, 1023))


@kernel(enable_backward=False)
def _lbvh_codes(bounds: array(dtype=float, ndim=2), scene: array(dtype=float), packed: array(dtype=scalars.int64)):
    i = tid()
    x = _quantize(0.5 * (bounds[i, 0] + bounds[i, 3]), scene[0], scene[3])
    y = _quantize(0.5 * (bounds[i, 1] + bounds[i, 4]), scene[1], scene[4])
    z = _quantize(0.5 * (bounds[i, 2] + bounds[i, 5]), scene[2], scene[5])
    code = (_spread_bits(x) << int64(2)) | (_spread_bits(y) << int64(1)) | _spread_bits(z)
    packed[i] = (code << int64(32)) | int64(i)


@kernel(enable_backward=False)
def _lbvh_sort(packed: array(dtype=scalars.int64), scratch: array(dtype=scalars.int64), n: int, key_bits: int):
    _hash_sort(packed, scratch, n, key_bits)


@func
def _clz64(v: scalars.int64) -> int:
    """Leading zero bits of a 64-bit value (64 for 0)."""
    if v == int64(0):
        return 64
    x = v
    n = 0
    if (x >> int64(32)) == int64(0):
        n += 32
        x = x << int64(32)
    if (x >> int64(48)) == int64(0):
        n += 16
        x = x << int64(16)
    if (x >> int64(56)) == int64(0):
        n += 8
        x = x << int64(8)
    if (x >> int64(60)) == int64(0):
        n += 4
        x = x << int64(4)
    if (x >> int64(62)) == int64(0):
        n += 2
        x = x << int64(2)
    if (x >> int64(63)) == int64(0):
        n += 1
    return n


@func
def _prefix(keys: array(dtype=scalars.int64), i: int, j: int) -> int:
    """Common prefix length of sorted keys i and j (-1 outside the array); keys are unique."""
    if j < 0 or j >= keys.shape[0]:
        return -1
    return _clz64(keys[i] ^ keys[j])


@kernel(enable_backward=False)
def _lbvh_leaves(keys: array(dtype=scalars.int64), items: array(dtype=scalars.int32),
                 ints: array(dtype=scalars.int32, ndim=2)):
    k = tid()
    n = keys.shape[0]
    items[k] = scalars.int32(int(keys[k] & int64(0xFFFFFFFF)))
    ints[n - 1 + k, 3] = scalars.int32(k)
    ints[n - 1 + k, 7] = scalars.int32(-1)


@kernel(enable_backward=False)
def _lbvh_hierarchy(keys: array(dtype=scalars.int64), ints: array(dtype=scalars.int32, ndim=2),
                    parent: array(dtype=int)):
    i = tid()
    n = keys.shape[0]
    d = 1
    if _prefix(keys, i, i + 1) < _prefix(keys, i, i - 1):
        d = -1
    # the far end of the range: grow exponentially, then binary search
    d_min = _prefix(keys, i, i - d)
    l_max = 2
    while _prefix(keys, i, i + l_max * d) > d_min:
        l_max = l_max * 2
    length = 0
    t = l_max // 2
    while t >= 1:
        if _prefix(keys, i, i + (length + t) * d) > d_min:
            length = length + t
        t = t // 2
    j = i + length * d
    # the split: the last key sharing more than the node's common prefix with key i
    d_node = _prefix(keys, i, j)
    s = 0
    step = length
    while step > 1:
        step = (step + 1) // 2
        if _prefix(keys, i, i + (s + step) * d) > d_node:
            s = s + step
    gamma = i + s * d + min_(d, 0)
    left = gamma
    if min_(i, j) == gamma:
        left = n - 1 + gamma
    right = gamma + 1
    if max_(i, j) == gamma + 1:
        right = n + gamma
    ints[i, 3] = scalars.int32(left)
    ints[i, 7] = scalars.int32(right)
    parent[left] = i
    parent[right] = i


@kernel(enable_backward=False)
def _lbvh_bounds(item_bounds: array(dtype=float, ndim=2), items: array(dtype=scalars.int32),
                 slot_bounds: array(dtype=float, ndim=2), nodes: array(dtype=float, ndim=2),
                 ints: array(dtype=scalars.int32, ndim=2), parent: array(dtype=int), flags: array(dtype=int)):
    k = tid()
    n = items.shape[0]
    item = int(items[k])
    leaf = n - 1 + k
    for a in range(3):
        lo = item_bounds[item, a]
        hi = item_bounds[item, 3 + a]
        slot_bounds[k, a] = lo
        slot_bounds[k, 3 + a] = hi
        nodes[leaf, a] = lo
        nodes[leaf, 4 + a] = hi
    p = parent[leaf]
    while p >= 0:
        if atomic_cas(flags, p, 0, 1) == 0:
            break  # the first child to arrive: the other one finishes this node
        left = int(ints[p, 3])
        right = int(ints[p, 7])
        for a in range(3):
            nodes[p, a] = min_(nodes[left, a], nodes[right, a])
            nodes[p, 4 + a] = max_(nodes[left, 4 + a], nodes[right, 4 + a])
        p = parent[p]


class LbvhState:
    """The extra buffers of an LBVH tree (parents, arrival flags, keys) and an int32 view of the nodes."""

    def __init__(self, tree: BvhBuffers) -> None:
        n, dev = tree.n, tree.device
        self.tree = tree
        self.keys = zeros(n, dtype=scalars.int64, device=dev)
        self.scratch = zeros(n, dtype=scalars.int64, device=dev)
        self.parent = full(2 * n - 1, -1, dtype=scalars.int32, device=dev)
        self.flags = zeros(max(n - 1, 1), dtype=scalars.int32, device=dev)
        self.scene = zeros(6, dtype=scalars.float32, device=dev)
        self.ints = array(ptr=tree.nodes.ptr, dtype=scalars.int32, shape=tuple(tree.nodes.shape), device=dev)
        self.host_sort = HostSort()  # the Morton code sort of a CUDA tree outside graph capture (host_build.py)

    def _launch(self, k: Any, dim: int, inputs: list[Any]) -> None:
        launch(k, dim=dim, inputs=inputs, device=self.tree.device, record_tape=False)

    def build(self) -> None:
        t, n = self.tree, self.tree.n
        self._launch(_lbvh_scene_init, 3, [self.scene])
        self._launch(_lbvh_scene, n, [t.item_bounds, self.scene])
        self._launch(_lbvh_codes, n, [t.item_bounds, self.scene, self.keys])
        if host_builds(t.device):
            self.host_sort(_lbvh_sort, self.keys, n, _MORTON_BITS)
        else:
            self._launch(_lbvh_sort, 1, [self.keys, self.scratch, n, _MORTON_BITS])
        self._launch(_lbvh_leaves, n, [self.keys, t.items, self.ints])
        self._launch(_lbvh_hierarchy, n - 1, [self.keys, self.ints, self.parent])
        t.desc.num_nodes = 2 * n - 1
        t.push("num_nodes")
        self.refit()

    def refit(self) -> None:
        t, n = self.tree, self.tree.n
        self.flags.zero_()
        self._launch(_lbvh_bounds, n, [t.item_bounds, t.items, t.slot_bounds, t.nodes, self.ints, self.parent,
                                       self.flags])
