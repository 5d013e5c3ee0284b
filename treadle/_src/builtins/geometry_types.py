"""Kernel-side types of the spatial data structures: query states and query results.

Query states (``HashGridQuery``, ``BvhQuery``, ``MeshQueryAABB``) are opaque native types
(:class:`~treadle._src.types.typesys.OpaqueType`): kernels hold them in variables and pass them to the ``*_next``
builtins, which update them in place. Their C++ definitions live in ``treadle/native/hashgrid.h`` and ``bvh.h``.

Query results (``MeshQueryPoint``, ``MeshQueryRay``) and ``mesh_get``'s ``Mesh`` view are ordinary ``@struct``
types, so field access (``q.face``) needs nothing special in the compiler. The emitter writes their C++ definitions
into each kernel block; the native query functions are templates on the result type and fill it field by field, so
the headers never name these structs.
"""

from __future__ import annotations

from typing import Any

from ..types import scalars
from ..types.struct import struct
from ..types.typesys import ArrayT, OpaqueType
from ..types.vector import vec3f


class QueryType(OpaqueType):
    """An opaque query state whose precision can be named: ``HashGridQuery[wp.float64]``.

    ``next_builtin`` names the builtin that advances it (``while next(query, index)``), for front ends that lower
    ``for index in query:``.
    """

    def __init__(self, name: str, cname: str, doc: str = "", variants: dict[Any, OpaqueType] | None = None,
                 next_builtin: str = "") -> None:
        super().__init__(name, cname, doc)
        self.variants = variants if variants is not None else {}
        self.next_builtin = next_builtin

    def __getitem__(self, dtype: Any) -> OpaqueType:
        t = self.variants.get(scalars.scalar_from_python(dtype))
        if t is None:
            raise TypeError(f"{self.__name__}[{getattr(dtype, '__name__', dtype)}]: no such precision")
        return t


def _hash_query(name: str, scalar: str, doc: str) -> QueryType:
    return QueryType(name, f"treadle::hash_grid_query_t<treadle::{scalar}>", doc, next_builtin="hash_grid_query_next")


HashGridQuery = _hash_query(
    "HashGridQuery", "float32", "State of a hash-grid neighbour query (from ``hash_grid_query``).")
HashGridQueryH = _hash_query("HashGridQueryH", "half", "Hash-grid query state, float16 points.")
HashGridQueryD = _hash_query("HashGridQueryD", "float64", "Hash-grid query state, float64 points.")
for _q in (HashGridQuery, HashGridQueryH, HashGridQueryD):
    _q.variants.update({scalars.float32: HashGridQuery, scalars.float16: HashGridQueryH,
                        scalars.float64: HashGridQueryD})

BvhQuery = QueryType("BvhQuery", "treadle::bvh_query_t",
                     "State of a BVH traversal (from ``bvh_query_aabb/ray/sphere/capsule``).", next_builtin="bvh_query_next")
MeshQueryAABB = QueryType("MeshQueryAABB", "treadle::bvh_query_t",
                          "State of a mesh AABB or sphere query (from ``mesh_query_aabb`` / ``mesh_query_sphere``).",
                          next_builtin="mesh_query_next")
BvhQueryTiled = QueryType("BvhQueryTiled", "treadle::bvh_query_tiled_t",
                          "State of a BVH query a block traverses together (from ``tile_bvh_query_aabb/ray``).")
MeshQueryAABBTiled = QueryType("MeshQueryAABBTiled", "treadle::bvh_query_tiled_t",
                               "State of a mesh AABB query a block traverses together (from "
                               "``tile_mesh_query_aabb``).")
#: Warp names the erased mesh-query kind ``MeshQuery``; here every mesh query shares one native state.
MeshQuery = MeshQueryAABB


@struct
class MeshQueryPoint:
    """Result of the ``mesh_query_point*`` builtins.

    Attributes:
        result: whether a face was found within the distance limit.
        sign: < 0 if the point is inside the mesh, >= 0 otherwise (0 for the ``_no_sign`` queries).
        face: index of the closest (or furthest) face.
        u: barycentric weight of the face's first vertex.
        v: barycentric weight of the face's second vertex.
    """

    result: scalars.bool
    sign: scalars.float32
    face: scalars.int32
    u: scalars.float32
    v: scalars.float32


@struct
class MeshQueryRay:
    """Result of ``mesh_query_ray``.

    Attributes:
        result: whether a hit was found within ``max_t``.
        sign: > 0 if the ray hit the front of the face, < 0 the back.
        face: index of the hit face.
        t: distance of the hit along the ray, in multiples of ``dir``'s length.
        u: barycentric weight of the face's first vertex.
        v: barycentric weight of the face's second vertex.
        normal: the unit face normal (oriented by the face's winding).
    """

    result: scalars.bool
    sign: scalars.float32
    face: scalars.int32
    t: scalars.float32
    u: scalars.float32
    v: scalars.float32
    normal: vec3f


class _MeshFields:
    """The arrays of a mesh as seen from a kernel (``mesh_get(id).points[i]``)."""

    points: ArrayT(vec3f)
    velocities: ArrayT(vec3f)
    indices: ArrayT(scalars.int32)


_MeshFields.__name__ = _MeshFields.__qualname__ = "Mesh"
#: The struct returned by ``mesh_get``.
MeshView = struct(_MeshFields)
