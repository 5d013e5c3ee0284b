"""Spatial queries (group "Geometry"): hash grid, BVH and mesh queries, and two triangle/edge primitives.

Every structure is referenced from kernels by a ``uint64`` id: the address of a native descriptor owned by the
Python object (``HashGrid``, ``Bvh``, ``Mesh`` in ``treadle/_src/geometry``). The C++ side lives in
``treadle/native/hashgrid.h``, ``bvh.h`` and ``mesh.h``.

Iteration follows the reference's pattern: a ``*_query`` builtin returns an opaque state, and ``*_next(query,
index)`` updates both arguments in place (``ref_args``)::

    query = wp.hash_grid_query(grid, p, r)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        ...

Queries that return several values return a ``@struct`` (``MeshQueryPoint``, ``MeshQueryRay``); the C++ functions
are templates on that struct (``template=_ret_template``). The older forms with output arguments
(``mesh_query_point(id, p, max_dist, inside, face, u, v) -> bool``) are accepted too; their outputs are passed by
reference. Because ``ref_args`` is declared per builtin, a newer-form argument at an output position (``epsilon`` of
``mesh_query_point_sign_normal``, ``root`` of ``mesh_query_ray``) must then be passed as a variable, not a literal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import ArrayT, is_int, is_struct, type_str
from ..types.vector import vec3d, vec3f, vec3h
from . import geometry_types as gt
from .registry import Interp, NoMatch, builtin, need

GROUP = "Geometry"

_U64, _I32, _F32, _BOOL = scalars.uint64, scalars.int32, scalars.float32, scalars.bool
#: A float parameter: float32/float64 (or an integer), converted by C++ to the parameter's type.
F = "float"
#: An integer parameter of any width.
I = "int"  # noqa: E741
#: Checked by the rule itself.
_ANY = "any"


def _accepts(t: Any, want: Any) -> bool:
    if want is _ANY:
        return True
    if want is F:
        return t in (scalars.float32, scalars.float64) or is_int(t)
    if want is I:
        return is_int(t)
    if isinstance(want, tuple):
        return t in want
    return bool(t == want)


def _want_str(want: Any) -> str:
    if isinstance(want, str):
        return want
    if isinstance(want, tuple):
        return " or ".join(type_str(w) for w in want)
    return type_str(want)


def _check(types: Sequence[Any], spec: Sequence[tuple[str, Any]], required: int) -> None:
    n = len(types)
    if not required <= n <= len(spec):
        want = str(required) if required == len(spec) else f"{required}-{len(spec)}"
        raise NoMatch(f"expected {want} argument(s), got {n}")
    for t, (name, want) in zip(types, spec):
        need(_accepts(t, want), f"'{name}' must be {_want_str(want)}, got {type_str(t)}")


def _rule(ret: Any, *forms: tuple[Sequence[tuple[str, Any]], int, Any]) -> Any:
    """A rule trying each ``(spec, required, ret)`` form in turn (``ret=None`` in a form means the default)."""

    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        errors = []
        for spec, required, form_ret in forms:
            try:
                _check(types, spec, required)
            except NoMatch as e:
                errors.append(str(e))
                continue
            return form_ret if form_ret is not None else ret
        raise NoMatch("; ".join(dict.fromkeys(errors)))

    return rule


def _ret_template(types: Sequence[Any], ret: Any) -> tuple[Any, ...]:
    return (ret,) if is_struct(ret) else ()


def _sig(name: str, spec: Sequence[tuple[str, Any]], required: int, ret: str, defaults: Sequence[str] = ()) -> str:
    parts = []
    for i, (pname, want) in enumerate(spec):
        text = f"{pname}: {_want_str(want)}"
        if i >= required and i - required < len(defaults):
            text += f" = {defaults[i - required]}"
        parts.append(text)
    return f"{name}({', '.join(parts)}) -> {ret}"


def _declare(name: str, doc: str, ret: Any, spec: Sequence[tuple[str, Any]], required: int | None = None, *,
             defaults: Sequence[str] = (), old: tuple[Sequence[tuple[str, Any]], int, Any] | None = None,
             ref_args: tuple[int, ...] = (), cpp: str | None = None, differentiable: bool = False,
             side_effects: bool = False) -> None:
    req = len(spec) if required is None else required
    forms: list[tuple[Sequence[tuple[str, Any]], int, Any]] = [(spec, req, ret)]
    signature = _sig(name, spec, req, _want_str(ret), defaults)
    if old is not None:
        forms.append(old)
        signature += " | " + _sig(name, old[0], old[1], _want_str(old[2]))
    builtin(name, group=GROUP, rule=_rule(ret, *forms), doc=doc, signature=signature, cpp=cpp,
            differentiable=differentiable, kernel_only=True, interpret=Interp.NONE, template=_ret_template, ref_args=ref_args,
            side_effects=side_effects)


# ----------------------------------------------------------------------------------------------------------------
# Hash grid
# ----------------------------------------------------------------------------------------------------------------

_HASH_QUERY = {vec3f: gt.HashGridQuery, vec3h: gt.HashGridQueryH, vec3d: gt.HashGridQueryD}


def _hash_grid_query_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _check(types, [("id", _U64), ("point", (vec3f, vec3h, vec3d)), ("max_dist", _ANY), ("group", I)], 3)
    need(_accepts(types[2], F) or types[2] is scalars.float16, f"'max_dist' must be a float, got {type_str(types[2])}")
    return _HASH_QUERY[types[1]]


def _hash_grid_next_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _check(types, [("query", (gt.HashGridQuery, gt.HashGridQueryH, gt.HashGridQueryD)), ("index", _I32)], 2)
    return _BOOL


builtin("hash_grid_query", group=GROUP, rule=_hash_grid_query_rule, differentiable=False, kernel_only=True, interpret=Interp.NONE,
        signature="hash_grid_query(id: uint64, point: vec3, max_dist: float, group: int32 = <all>) -> HashGridQuery",
        doc="Start a neighbour query of the hash grid ``id``: iterates over the points within ``max_dist`` of "
            "``point`` (and, given ``group``, only points built with that group id). The point's precision "
            "(vec3h/vec3/vec3d) selects the query type; advance it with ``hash_grid_query_next``.")
builtin("hash_grid_query_next", group=GROUP, rule=_hash_grid_next_rule, differentiable=False, kernel_only=True, interpret=Interp.NONE,
        ref_args=(0, 1), signature="hash_grid_query_next(query: HashGridQuery, index: int32) -> bool",
        doc="Advance a hash-grid query: writes the next neighbour's index (into the points the grid was built "
            "from) to ``index`` and returns True, or returns False (``index`` unchanged) when none remain.")
_declare("hash_grid_point_id", "The original index of the point at position ``index`` of the grid's cell-sorted "
         "order (-1 if the grid was never built or reserved). Visiting points in this order improves locality.",
         _I32, [("id", _U64), ("index", I)])

# ----------------------------------------------------------------------------------------------------------------
# BVH
# ----------------------------------------------------------------------------------------------------------------

_ROOT = ("root", I)
_declare("bvh_query_aabb", "Start a query of the items of BVH ``id`` whose bounds overlap the box [low, high] "
         "(from node ``root``, -1: the whole tree). Advance it with ``bvh_query_next``.",
         gt.BvhQuery, [("id", _U64), ("low", vec3f), ("high", vec3f), _ROOT], 3, defaults=["-1"])
_declare("bvh_query_ray", "Start a query of the items of BVH ``id`` whose bounds the ray start + t dir (t >= 0) "
         "hits. ``bvh_query_next``'s ``max_dist`` limits t (in multiples of ``dir``'s length).",
         gt.BvhQuery, [("id", _U64), ("start", vec3f), ("dir", vec3f), _ROOT], 3, defaults=["-1"])
_declare("bvh_query_sphere", "Start a query of the items of BVH ``id`` whose bounds overlap the sphere "
         "(exact sphere-box test; touching counts; a negative radius is treated as 0).",
         gt.BvhQuery, [("id", _U64), ("center", vec3f), ("radius", F), _ROOT], 3, defaults=["-1"])
_declare("bvh_query_capsule", "Start a conservative query of the items of BVH ``id`` whose bounds, grown by "
         "``radius``, the segment start + t dir hits (pass ``max_dist=1.0`` to ``bvh_query_next`` to sweep from "
         "start to start + dir).",
         gt.BvhQuery, [("id", _U64), ("start", vec3f), ("dir", vec3f), ("radius", F), _ROOT], 4, defaults=["-1"])
_declare("bvh_query_next", "Advance a BVH (or mesh AABB/sphere) query: writes the next item's index to ``index`` "
         "and returns True, or returns False (``index`` unchanged) when the query is exhausted. ``max_dist`` "
         "bounds ray and capsule queries (only ever reduce it during a query).",
         _BOOL, [("query", (gt.BvhQuery, gt.MeshQueryAABB)), ("index", _I32), ("max_dist", F)], 2,
         defaults=["inf"], ref_args=(0, 1))
_declare("bvh_get_group_root", "The root node of ``group`` in a BVH built with groups, or -1 (the whole tree) if the "
         "group does not exist.", _I32, [("id", _U64), ("group", I)])

# ----------------------------------------------------------------------------------------------------------------
# Mesh: access and evaluation
# ----------------------------------------------------------------------------------------------------------------

_ID, _FACE = ("id", _U64), ("face", I)
_declare("mesh_get", "The arrays of mesh ``id`` (``points``, ``velocities``, ``indices``).", gt.MeshView, [_ID])
_declare("mesh_get_point", "Vertex ``index`` of mesh ``id`` (``index`` indexes the flat triangle-index array).",
         vec3f, [_ID, ("index", I)])
_declare("mesh_get_velocity", "Velocity of the vertex at ``index`` of the flat triangle-index array "
         "(zero without velocities).", vec3f, [_ID, ("index", I)])
_declare("mesh_get_index", "Entry ``index`` of the flat triangle-index array of mesh ``id``.", _I32,
         [_ID, ("index", I)])
_declare("mesh_get_bvh", "The id of mesh ``id``'s triangle BVH (usable with the ``bvh_query_*`` builtins; items are "
         "face indices).", _U64, [_ID])
_declare("mesh_get_group_root", "The BVH root of ``group`` in a mesh built with groups, or -1.", _I32,
         [_ID, ("group", I)])
_declare("mesh_eval_position", "v0 * bary_u + v1 * bary_v + v2 * (1 - bary_u - bary_v) for the vertices of "
         "``face`` (differentiable in the barycentric coordinates).", vec3f, [_ID, _FACE, ("bary_u", F), ("bary_v", F)],
         differentiable=True)
_declare("mesh_eval_velocity", "The velocities of ``face``'s vertices interpolated like ``mesh_eval_position`` "
         "(zero without velocities; differentiable in the barycentric coordinates).", vec3f,
         [_ID, _FACE, ("bary_u", F), ("bary_v", F)], differentiable=True)
_declare("mesh_eval_face_normal", "normalize(cross(v1 - v0, v2 - v0)) for the vertices of ``face``.", vec3f,
         [_ID, _FACE])

# ----------------------------------------------------------------------------------------------------------------
# Mesh: closest point, rays, boxes
# ----------------------------------------------------------------------------------------------------------------

_PQ = [_ID, ("point", vec3f), ("max_dist", F)]
_OUT4 = [("inside", _F32), ("face", _I32), ("bary_u", _F32), ("bary_v", _F32)]
_OUT3 = _OUT4[1:]
_POINT_DOC = ("Closest point of mesh ``id`` to ``point`` among faces strictly closer than ``max_dist``; returns a "
              "MeshQueryPoint (result, sign, face, u, v). ")

_declare("mesh_query_point", _POINT_DOC + "The sign is a majority vote over three axis-aligned rays (the orientation "
         "of the closest hit on each; a miss votes outside).", gt.MeshQueryPoint, _PQ,
         old=(_PQ + _OUT4, 7, _BOOL), ref_args=(3, 4, 5, 6))
_declare("mesh_query_point_no_sign", _POINT_DOC + "No sign is computed (sign = 0).", gt.MeshQueryPoint, _PQ,
         old=(_PQ + _OUT3, 6, _BOOL), ref_args=(3, 4, 5))
_declare("mesh_query_point_sign_normal", _POINT_DOC + "The sign comes from the angle-weighted pseudo-normal of the "
         "closest feature (face, edge or vertex; ``epsilon`` is relative to the mean edge length).",
         gt.MeshQueryPoint, _PQ + [("epsilon", F)], 3, defaults=["1e-3"],
         old=(_PQ + _OUT4 + [("epsilon", F)], 7, _BOOL), ref_args=(3, 4, 5, 6))
_declare("mesh_query_point_sign_parity", _POINT_DOC + "The point is inside when at least half of ``n_sample`` "
         "perturbed rays cross the mesh an odd number of times.", gt.MeshQueryPoint,
         _PQ + [("n_sample", I), ("perturbation_scale", F)], 3, defaults=["1", "0.1"],
         old=(_PQ + _OUT4 + [("n_sample", I), ("perturbation_scale", F)], 7, _BOOL), ref_args=(3, 4, 5, 6))
_declare("mesh_query_point_sign_winding_number", _POINT_DOC + "Inside when the generalised winding number exceeds "
         "``threshold`` (fast dipole approximation with ``accuracy``; needs support_winding_number=True, otherwise "
         "falls back to mesh_query_point's sign).", gt.MeshQueryPoint,
         _PQ + [("accuracy", F), ("threshold", F)], 3, defaults=["2.0", "0.5"],
         old=(_PQ + _OUT4 + [("accuracy", F), ("threshold", F)], 7, _BOOL), ref_args=(3, 4, 5, 6))
_FQ = [_ID, ("point", vec3f), ("min_dist", F)]
_declare("mesh_query_furthest_point_no_sign", "Furthest point of mesh ``id`` from ``point`` among faces strictly "
         "farther than ``min_dist`` (MeshQueryPoint, no sign).", gt.MeshQueryPoint, _FQ,
         old=(_FQ + _OUT3, 6, _BOOL), ref_args=(3, 4, 5))

_RAY = [_ID, ("start", vec3f), ("dir", vec3f), ("max_t", F)]
_RAY_OUT = [("t", _F32), ("bary_u", _F32), ("bary_v", _F32), ("sign", _F32), ("normal", vec3f), ("face", _I32)]
_declare("mesh_query_ray", "Closest hit of the ray start + t dir, 0 <= t < max_t, with mesh ``id``; returns a "
         "MeshQueryRay (result, sign, face, t, u, v, normal).", gt.MeshQueryRay, _RAY + [_ROOT], 4,
         defaults=["-1"], old=(_RAY + _RAY_OUT + [_ROOT], 10, _BOOL), ref_args=(4, 5, 6, 7, 8, 9))
_declare("mesh_query_ray_anyhit", "True if the ray start + t dir, 0 <= t < max_t, hits any face of mesh ``id``.",
         _BOOL, _RAY + [_ROOT], 4, defaults=["-1"])
_declare("mesh_query_ray_count_intersections", "Number of faces of mesh ``id`` the ray start + t dir (t >= 0) "
         "crosses.", _I32, [_ID, ("start", vec3f), ("dir", vec3f), _ROOT], 3, defaults=["-1"])
_declare("mesh_query_aabb", "Start a query of the faces of mesh ``id`` whose bounds overlap [low, high]; advance "
         "it with ``mesh_query_next``.", gt.MeshQueryAABB, [_ID, ("low", vec3f), ("high", vec3f)])
_declare("mesh_query_sphere", "Start a query of the faces of mesh ``id`` within ``radius`` of ``center`` (closest "
         "point test; touching counts); advance it with ``mesh_query_next``.", gt.MeshQueryAABB,
         [_ID, ("center", vec3f), ("radius", F)])
for _name in ("mesh_query_aabb_next", "mesh_query_next"):
    _declare(_name, "Advance a mesh AABB or sphere query: writes the next face index to ``index`` and returns True, "
             "or returns False when none remain.", _BOOL, [("query", gt.MeshQueryAABB), ("index", _I32)],
             ref_args=(0, 1), cpp="bvh_query_next")

# ----------------------------------------------------------------------------------------------------------------
# Primitives
# ----------------------------------------------------------------------------------------------------------------

_declare("closest_point_edge_edge", "Closest points of segments [p1, q1] and [p2, q2]: returns vec3(s, t, d) with "
         "the points p1 + s (q1 - p1), p2 + t (q2 - p2) and their distance d; a segment of squared length <= epsilon "
         "is treated as a point; differentiable (gradients of s, t and d through the branch taken).", vec3f,
         [("p1", vec3f), ("q1", vec3f), ("p2", vec3f), ("q2", vec3f), ("epsilon", F)], differentiable=True)


def _tri_tri_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) == 6, f"expected 6 arguments, got {len(types)}")
    need(types[0] in (vec3f, vec3d) and all(t == types[0] for t in types),
         "expected six vec3 (or six vec3d) vertices, got " + ", ".join(type_str(t) for t in types))
    return _I32


builtin("intersect_tri_tri", group=GROUP, rule=_tri_tri_rule, differentiable=False, kernel_only=True, interpret=Interp.NONE,
        signature="intersect_tri_tri(v0: vec3, v1: vec3, v2: vec3, u0: vec3, u1: vec3, u2: vec3) -> int32",
        doc="1 if the triangles (v0, v1, v2) and (u0, u1, u2) intersect (coplanar overlap included), else 0.")

# ----------------------------------------------------------------------------------------------------------------
# Internal: builders run by one-thread kernels of treadle/_src/geometry (serial native code, see bvh.h / mesh.h)
# ----------------------------------------------------------------------------------------------------------------

def _hash_sort_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    packed = ArrayT(scalars.int64, 1)
    _check(types, [("packed", packed), ("scratch", packed), ("n", I), ("key_bits", I)], 4)
    return _I32


builtin("_hash_sort", group=GROUP, rule=_hash_sort_rule, cpp="hash_sort_serial", differentiable=False,
        kernel_only=True, interpret=Interp.NONE, side_effects=True,
        signature="_hash_sort(packed: array(int64), scratch: array(int64), n: int, key_bits: int)",
        doc="Sort packed (cell << 32 | index) keys by cell, stably (serial radix sort).")

for _name, _cpp, _doc in (
    ("_hash_bounds", "hash_grid_bounds_serial", "Store the bounding box of a hash grid's points in its descriptor."),
    ("_bvh_build", "bvh_build_serial", "Build the BVH whose descriptor is at ``id``; returns the node count."),
    ("_bvh_refit", "bvh_refit_serial", "Refit the BVH whose descriptor is at ``id``; returns the node count."),
    ("_mesh_build", "mesh_build_serial", "Build a mesh's BVH (and winding-number data); returns the node count."),
    ("_mesh_refit", "mesh_refit_serial", "Refit a mesh's BVH (and winding-number data); returns the node count."),
):
    _declare(_name, _doc, _I32, [_ID], cpp=_cpp, side_effects=True)
