"""``Mesh``: a triangle mesh with a BVH over its faces, queried in kernels with ``mesh_query_*``.

The object owns the native ``mesh_t`` descriptor (its address is :attr:`Mesh.id`, a device copy on CUDA:
``descriptor.py``; its first member is the face BVH, so the same id works with the ``bvh_query_*`` builtins) and
the buffers it points to; the point, velocity and index arrays are the user's, referenced, not copied. Face bounds,
vertex pseudo-normals, the tree and the winding-number dipoles are computed by the serial native builder in
``treadle/native/mesh.h``, run by one-thread kernels; the face corners around each point (topology, fixed for the
mesh's life; edge neighbours and vertex pseudo-normals are derived from it on demand) are computed once with NumPy.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..builtins import REGISTRY
from ..builtins.geometry_types import MeshView
from ..core import abi
from ..lang.array import array
from ..lang.creation import copy, zeros
from ..lang.kernel import kernel
from ..lang.launch import launch
from ..runtime.device import get_device
from ..types import scalars
from ..types.typesys import ArrayT
from ..types.vector import vec3f
from .bvh import LBVH, BvhBuffers, BvhDesc, as_groups, parse_constructor, parse_leaf_size
from .descriptor import DescriptorMirror
from .host_build import host_builds, upload

_mesh_build = REGISTRY.builtins["_mesh_build"]
_mesh_refit = REGISTRY.builtins["_mesh_refit"]

#: Leaf size of mesh BVHs when not given (closest-point queries favour a few faces per leaf).
DEFAULT_LEAF_SIZE = 4


class MeshDesc(ctypes.Structure):
    """Mirror of ``treadle::mesh_t``."""

    _fields_ = [
        ("bvh", BvhDesc),
        ("points", abi.ArrayDesc),
        ("velocities", abi.ArrayDesc),
        ("indices", abi.ArrayDesc),
        ("num_points", ctypes.c_int32),
        ("num_faces", ctypes.c_int32),
        ("vertex_corners_start", ctypes.c_void_p),
        ("vertex_corners", ctypes.c_void_p),
        ("winding", ctypes.c_void_p),
        ("avg_edge", ctypes.c_float),
        ("pad", ctypes.c_int32),
    ]


@kernel(enable_backward=False)
def _run_mesh_build(mesh: scalars.uint64, out: array(dtype=int)):
    out[0] = _mesh_build(mesh)


@kernel(enable_backward=False)
def _run_mesh_refit(mesh: scalars.uint64, out: array(dtype=int)):
    out[0] = _mesh_refit(mesh)


def vertex_corners(tris: np.ndarray, num_points: int) -> tuple[np.ndarray, np.ndarray]:
    """The face corners (3 f + k) around each point, as CSR: ``(starts[num_points + 1], corners)``."""
    flat = tris.reshape(-1).astype(np.int64)
    # one sort of (point, corner) packed in 64 bits orders the corners by point
    packed = (flat << 32) | np.arange(len(flat), dtype=np.int64)
    packed.sort()
    corners = (packed & 0xFFFFFFFF).astype(np.int32)
    starts = np.zeros(num_points + 1, np.int32)
    np.cumsum(np.bincount(flat, minlength=num_points), out=starts[1:])
    return starts, corners if len(corners) else np.zeros(1, np.int32)


def _vec3_array(a: Any, name: str) -> array:
    if not isinstance(a, array) or a.dtype is not vec3f:
        raise TypeError(f"Mesh {name} must be an array of vec3")
    return a


class Mesh:
    """A triangle mesh for closest-point, ray, box and sphere queries in kernels.

    Args:
        points: vertex positions (array of vec3).
        indices: flat int32 array of vertex indices, 3 per triangle.
        velocities: optional per-vertex velocities (``mesh_eval_velocity``).
        support_winding_number: also maintain the data for ``mesh_query_point_sign_winding_number``.
        bvh_constructor: ``"sah"`` (default) or ``"median"`` (``"lbvh"``/``"cubql"`` build with SAH).
        bvh_leaf_size: faces per BVH leaf (default 4).
        groups: optional int32 group id per face (``mesh_get_group_root``).

    After changing the points in place (or assigning :attr:`points`), call :meth:`refit`.
    """

    #: the fields of ``mesh_get(id)`` in kernels, arrays as array annotations
    vars = {n: array(dtype=t.dtype, ndim=t.ndim) if isinstance(t, ArrayT) else t for n, t in MeshView.vars.items()}

    def __init__(self, points: array, indices: array, velocities: array | None = None,
                 support_winding_number: bool = False, bvh_constructor: Any = None, bvh_leaf_size: int | None = None,
                 groups: Any = None) -> None:
        self._points = _vec3_array(points, "points")
        if velocities is not None:
            _vec3_array(velocities, "velocities")
        if not isinstance(indices, array) or indices.dtype is not scalars.int32:
            raise TypeError("Mesh indices must be an int32 array")
        if indices.ndim != 1:
            indices = indices.contiguous().reshape((indices.size,))
        self.indices = indices
        self._velocities = velocities
        self.device = get_device(points.device)
        self.support_winding_number = bool(support_winding_number)
        self.groups = groups
        num_faces = indices.shape[0] // 3
        tris = indices.numpy()[: 3 * num_faces].reshape(-1, 3)
        if num_faces and (tris.min() < 0 or tris.max() >= points.shape[0]):
            raise ValueError(f"Mesh indices must lie in [0, {points.shape[0]})")
        leaf = DEFAULT_LEAF_SIZE if bvh_leaf_size is None else parse_leaf_size(bvh_leaf_size)
        constructor = parse_constructor(bvh_constructor)
        constructor = 0 if constructor == LBVH else constructor  # the mesh tree is refitted natively: SAH
        self._tree = BvhBuffers(num_faces, self.device, leaf, constructor,
                                as_groups(groups, num_faces, self.device), mirror=False)
        self._desc = d = MeshDesc()
        d.bvh = self._tree.desc
        d.num_points = points.shape[0]
        d.num_faces = num_faces
        starts, corners = vertex_corners(tris, points.shape[0])
        self._vertex_corners_start = array(starts, dtype=scalars.int32, device=self.device)
        self._vertex_corners = array(corners, dtype=scalars.int32, device=self.device)
        d.vertex_corners_start = self._vertex_corners_start.ptr
        d.vertex_corners = self._vertex_corners.ptr
        if self.support_winding_number:
            self._winding = zeros((2 * max(num_faces, 1), 8), dtype=scalars.float32, device=self.device)
            d.winding = self._winding.ptr
        self._write_arrays()
        # where the device's kernels read it (a device allocation on CUDA); the mean edge length and the node count
        # are written by the native builder (mesh.h)
        self._mirror = DescriptorMirror(d, self.device, device_fields=("avg_edge",))
        self.id = self._mirror.id
        # the descriptor now holds the BVH fields: point the tree's helpers at the embedded copy
        self._tree.attach(self._mirror, d.bvh, "bvh.")
        self._host: Mesh | None = None  # the CPU twin that builds and refits a CUDA mesh (host_build.py)
        self._options = (bvh_constructor, bvh_leaf_size)
        if host_builds(self.device):
            self._host_build()
            return
        self._tree.reset_items()
        launch(_run_mesh_build, dim=1, inputs=[self.id, self._tree.result], device=self.device, record_tape=False)

    def _host_build(self) -> None:
        """Build a CPU twin from host copies of the points and indices, and upload its tree."""
        constructor, leaf = self._options
        groups = as_groups(self.groups, self._tree.n, self.device)
        self._host = Mesh(self._points.to("cpu"), self.indices.to("cpu"),
                          support_winding_number=self.support_winding_number, bvh_constructor=constructor,
                          bvh_leaf_size=leaf, groups=groups)
        self._upload(items=True)

    def _upload(self, items: bool) -> None:
        """Copy the twin's tree, face bounds, winding data and mean edge length to this mesh's device buffers."""
        h = self._host
        assert h is not None
        t, ht = self._tree, h._tree
        t.upload_tree(ht, items)
        nodes = int(ht.desc.num_nodes)
        upload([(t.item_bounds, ht.item_bounds, 6 * t.n),
                (getattr(self, "_winding", None), getattr(h, "_winding", None), 8 * nodes)])
        self._desc.avg_edge = h._desc.avg_edge
        self._mirror.push("avg_edge", device_written=True)

    def __del__(self) -> None:
        """Nothing native to release: the buffers are arrays owned by this object."""

    def _set_arrays(self) -> None:
        self._write_arrays()
        self._mirror.push("points", "velocities", "indices")

    def _write_arrays(self) -> None:
        d = self._desc
        ctypes.memmove(ctypes.addressof(d.points), ctypes.addressof(self._points.__ctype__()),
                       ctypes.sizeof(abi.ArrayDesc))
        ctypes.memmove(ctypes.addressof(d.indices), ctypes.addressof(self.indices.__ctype__()),
                       ctypes.sizeof(abi.ArrayDesc))
        if self._velocities is not None:
            ctypes.memmove(ctypes.addressof(d.velocities), ctypes.addressof(self._velocities.__ctype__()),
                           ctypes.sizeof(abi.ArrayDesc))
        else:
            ctypes.memset(ctypes.addressof(d.velocities), 0, ctypes.sizeof(abi.ArrayDesc))

    @property
    def points(self) -> array:
        """The vertex positions (assign an array of the same shape, then call :meth:`refit`)."""
        return self._points

    @points.setter
    def points(self, value: array) -> None:
        value = _vec3_array(value, "points")
        if value.shape != self._points.shape:
            raise RuntimeError(f"The new points and the original points must have the same shape, the new points' "
                               f"shape is {value.shape}, while the old points' shape is {self._points.shape}.")
        self._points = value
        self._set_arrays()

    @property
    def velocities(self) -> array | None:
        """The vertex velocities, or None."""
        return self._velocities

    @velocities.setter
    def velocities(self, value: array | None) -> None:
        if value is not None:
            value = _vec3_array(value, "velocities")
            if value.shape != self._points.shape:
                raise RuntimeError("The new velocities must have the same shape as the points")
        self._velocities = value
        self._set_arrays()

    def refit(self) -> None:
        """Update the face bounds, BVH and sign data from the current points (same topology)."""
        self._set_arrays()
        if self._host is not None and host_builds(self.device):
            copy(self._host.points, self._points)  # device -> host, same shape
            self._host.refit()
            self._upload(items=False)
            return
        launch(_run_mesh_refit, dim=1, inputs=[self.id, self._tree.result], device=self.device, record_tape=False)
