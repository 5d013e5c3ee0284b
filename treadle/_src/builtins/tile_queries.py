"""The tiled geometry queries: BVH boxes and rays, mesh AABBs, their ``_next`` steps and ``tile_query_valid``.

Also under the older names (``bvh_query_aabb_tiled``, ``mesh_query_aabb_next_tiled``, ...). A block traverses one query together: each ``*_next`` step returns a ``(block_dim,)`` int32 tile with one result
per thread (-1 where a thread has none), and ``tile_query_valid`` says whether to continue (true at first, false once
a step found nothing). On the CPU a block is one thread: a step is one BVH traversal step
(``treadle/native/tile_queries.h`` over ``bvh.h``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import type_str
from ..types.vector import vec3f
from . import geometry_types as gt
from .registry import Interp, builtin, need
from .tile_common import GROUP, make_tile

_U64 = scalars.uint64
_QUERIES = (gt.BvhQueryTiled, gt.MeshQueryAABBTiled)


def _start_rule(ret: Any, names: tuple[str, str, str]) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        need(len(types) == 3, f"expected ({', '.join(names)}), got {len(types)} argument(s)")
        need(types[0] == _U64, f"'{names[0]}' must be a uint64 id, got {type_str(types[0])}")
        for n, t in zip(names[1:], types[1:]):
            need(t == vec3f, f"'{n}' must be a vec3, got {type_str(t)}")
        return ret

    return rule


def _next_rule(want: tuple[Any, ...]) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        need(len(types) == 1 and types[0] in want,
             f"expected one {' or '.join(str(w) for w in want)}, got ({', '.join(type_str(t) for t in types)})")
        return make_tile(scalars.int32, (1,))

    return rule


def _valid_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) == 1 and types[0] in _QUERIES, f"tile_query_valid() takes a tiled BVH or mesh query, got "
         f"({', '.join(type_str(t) for t in types)})")
    return scalars.bool


def _declare(name: str, cpp: str, rule: Any, signature: str, doc: str, group: str = GROUP,
             ref: bool = False) -> None:
    builtin(name, group=group, rule=rule, cpp=cpp, differentiable=False, kernel_only=True, interpret=Interp.NONE,
            ref_args=(0,) if ref else (), side_effects=ref, signature=signature, doc=doc)


_AABB = ("id", "low", "high")
_RAY = ("id", "start", "dir")
_BVH_NEXT = "Advance a tiled BVH query: a ``(block_dim,)`` int32 tile with one bound index per thread (-1 where a " \
            "thread has none; on the CPU one index per step)."
_MESH_NEXT = "Advance a tiled mesh AABB query: a ``(block_dim,)`` int32 tile with one face index per thread (-1 " \
             "where a thread has none; on the CPU one index per step)."
_BVH_Q, _MESH_Q = "BvhQueryTiled", "MeshQueryAABBTiled"
#: (name, older name, C++ function, rule, signature after the name, doc)
_TABLE: tuple[tuple[str, str, str, Any, str, str], ...] = (
    ("tile_bvh_query_aabb", "bvh_query_aabb_tiled", "tile_bvh_query_aabb", _start_rule(gt.BvhQueryTiled, _AABB),
     f"(id: uint64, low: vec3, high: vec3) -> {_BVH_Q}",
     "Start a query of the bounds of BVH ``id`` overlapping the box [low, high], traversed by the whole block; "
     "advance it with ``tile_bvh_query_next`` while ``tile_query_valid``."),
    ("tile_bvh_query_ray", "bvh_query_ray_tiled", "tile_bvh_query_ray", _start_rule(gt.BvhQueryTiled, _RAY),
     f"(id: uint64, start: vec3, dir: vec3) -> {_BVH_Q}",
     "Start a query of the bounds of BVH ``id`` that the ray start + t dir (t >= 0, unbounded) hits, traversed by "
     "the whole block; results are not sorted along the ray."),
    ("tile_bvh_query_next", "bvh_query_next_tiled", "tile_bvh_query_next", _next_rule((gt.BvhQueryTiled,)),
     f"(query: {_BVH_Q}) -> tile", _BVH_NEXT),
    ("tile_mesh_query_aabb", "mesh_query_aabb_tiled", "tile_mesh_query_aabb",
     _start_rule(gt.MeshQueryAABBTiled, _AABB), f"(id: uint64, low: vec3, high: vec3) -> {_MESH_Q}",
     "Start a query of the faces of mesh ``id`` whose bounds overlap [low, high], traversed by the whole block; "
     "advance it with ``tile_mesh_query_aabb_next`` while ``tile_query_valid``."),
    ("tile_mesh_query_aabb_next", "mesh_query_aabb_next_tiled", "tile_bvh_query_next",
     _next_rule((gt.MeshQueryAABBTiled,)), f"(query: {_MESH_Q}) -> tile", _MESH_NEXT),
)
for _name, _older, _cpp, _rule, _sig, _doc in _TABLE:
    for _n, _group in ((_name, GROUP), (_older, "Geometry")):
        _declare(_n, _cpp, _rule, _n + _sig, _doc, _group, ref=_name.endswith("_next"))
_declare("tile_query_valid", "tile_query_valid", _valid_rule, "tile_query_valid(query) -> bool",
         "Whether a tiled BVH or mesh query should continue: true at first and after a step that found something, "
         "false after a step that found nothing.")
