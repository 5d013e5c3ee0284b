"""NanoVDB volumes (group "Volumes"): sampling, gradients, lookups, stores, index grids and transforms.

A volume is referenced by a ``uint64`` id, the address of its NanoVDB grid (``Volume.id``, see
``treadle/_src/volume``); the C++ side is ``treadle/native/volume.h``. Coordinates ``uvw`` / ``(i, j, k)`` are in
index space (voxel units; voxel centres at integers); ``volume_world_to_index`` converts world positions.

The value type is part of each call: the ``_f`` / ``_i`` / ``_v`` forms name it (float32, int32, vec3f), the
generic forms take it as ``dtype=`` (int32, int64, uint32, float32, float64, vec3f, vec3d, vec4f, vec4d) and give
``None`` as its type to the rule (the type itself arrives as the constant). An unsupported ``dtype``, or a ``grad``
or ``value`` argument that does not fit the value type, is an error when the kernel is built. Which type a grid
holds is known only when the kernel runs (the id is a plain integer): a grid of another type reads as zero, and
stores to it do nothing, as in the reference.

Differentiable: ``volume_sample*`` in the sample point under ``Volume.LINEAR`` (the gradient forms also through
``grad``, with the trilinear interpolant's second derivatives), the ``*_index`` forms also in ``voxel_data`` (its
gradient buffer) and ``background``, and the index/world transforms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import ArrayT, is_float, is_int, normalize_annotation, type_str
from ..types.vector import vec3d, vec3f, vec4d, vec4f, vector
from .registry import NOT_CONST, Interp, NoMatch, builtin, need

GROUP = "Volumes"

_U64, _I32, _F32 = scalars.uint64, scalars.int32, scalars.float32
#: Value types a volume builtin can read and write.
VALUE_TYPES = (scalars.int32, scalars.int64, scalars.uint32, scalars.float32, scalars.float64, vec3f, vec3d, vec4f,
               vec4d)
_VALUE_NAMES = ", ".join(type_str(t) for t in VALUE_TYPES)


def grad_type(t: Any) -> Any:
    """The type of the gradient of a value type: vec3 of its scalar, or an N x 3 matrix for N-vectors."""
    from ..types.matrix import matrix

    if t in (vec3f, vec3d, vec4f, vec4d):
        return matrix((t._length_, 3), t._wp_scalar_type_)
    return vector(3, t)


def _dtype(types: Sequence[Any], consts: Sequence[Any], pos: int) -> Any:
    """The ``dtype=`` argument at ``pos``: a type given as a constant (its argument type is ``None``)."""
    if len(types) <= pos or types[pos] is not None or consts[pos] is NOT_CONST:
        raise NoMatch("dtype= (the volume's value type) is required, e.g. dtype=float")
    t = normalize_annotation(scalars.scalar_from_python(consts[pos]))
    need(t in VALUE_TYPES, f"dtype must be one of {_VALUE_NAMES}, got {type_str(t)}")
    return t


def _head(types: Sequence[Any], n: int, names: Sequence[str], kinds: Sequence[str]) -> None:
    """Check the leading arguments: ``"id"`` (uint64), ``"p"`` (vec3f point), ``"int"`` (any integer)."""
    need(len(types) >= n, f"expected at least {n} arguments, got {len(types)}")
    for t, name, kind in zip(types, names, kinds):
        if kind == "id":
            need(t == _U64, f"'{name}' must be a volume id (uint64), got {type_str(t)}")
        elif kind == "p":
            need(t == vec3f, f"'{name}' must be a vec3f in index space, got {type_str(t)}")
        else:
            need(is_int(t), f"'{name}' must be an integer, got {type_str(t)}")


def _count(types: Sequence[Any], n: int, dtype_last: bool = False) -> None:
    if dtype_last and len(types) == n - 1:
        raise NoMatch("dtype= (the volume's value type) is required, e.g. dtype=float")
    need(len(types) == n, f"expected {n} arguments, got {len(types)}")


def _value_template(types: Sequence[Any], ret: Any) -> tuple[Any, ...]:
    return (ret,)


_SAMPLE = (("id", "uvw", "sampling_mode"), ("id", "p", "int"))
_LOOKUP = (("id", "i", "j", "k"), ("id", "int", "int", "int"))


def _declare(name: str, rule: Any, signature: str, doc: str, *, cpp: str | None = None, differentiable: bool = False,
             ref_args: tuple[int, ...] = (), template: Any = _value_template, side_effects: bool = False) -> None:
    builtin(name, group=GROUP, rule=rule, doc=doc, signature=signature, cpp=cpp, differentiable=differentiable,
            kernel_only=True, ref_args=ref_args, template=template, interpret=Interp.NONE, side_effects=side_effects)


# ----------------------------------------------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------------------------------------------

def _sample_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 3, *_SAMPLE)
    _count(types, 4, dtype_last=True)
    return _dtype(types, consts, 3)


def _fixed_sample(t: Any, with_mode: bool = True) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        n = 3 if with_mode else 2
        _head(types, n, _SAMPLE[0][:n], _SAMPLE[1][:n])
        _count(types, n)
        return t

    return rule


_SAMPLE_DOC = ("Sample the volume ``id`` at the index-space point ``uvw``: ``Volume.CLOSEST`` takes the nearest "
               "voxel (halfway cases round away from zero), ``Volume.LINEAR`` interpolates trilinearly (float and "
               "vector types; integer volumes always use the nearest voxel). Where no value is stored the "
               "background is read. Differentiable in ``uvw`` (LINEAR). ")
_declare("volume_sample", _sample_rule, "volume_sample(id: uint64, uvw: vec3f, sampling_mode: int32, dtype) -> dtype",
         _SAMPLE_DOC + "``dtype`` is the volume's value type (" + _VALUE_NAMES + ").", differentiable=True)
_declare("volume_sample_f", _fixed_sample(_F32), "volume_sample_f(id: uint64, uvw: vec3f, sampling_mode: int32) -> float32",
         _SAMPLE_DOC + "For float32 volumes.", cpp="volume_sample", differentiable=True)
_declare("volume_sample_v", _fixed_sample(vec3f), "volume_sample_v(id: uint64, uvw: vec3f, sampling_mode: int32) -> vec3f",
         _SAMPLE_DOC + "For vec3f volumes (each component interpolated).", cpp="volume_sample", differentiable=True)
_declare("volume_sample_i", _fixed_sample(_I32, False), "volume_sample_i(id: uint64, uvw: vec3f) -> int32",
         "The value of the int32 volume ``id`` at the voxel nearest to ``uvw`` (halfway cases round away from zero).",
         template=None)


def _grad_arg(t: Any, g: Any) -> None:
    want = grad_type(t)
    need(g == want, f"'grad' must be a {type_str(want)} (the gradient of a {type_str(t)} value), got {type_str(g)}")


def _sample_grad_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 4, *_SAMPLE)
    _count(types, 5, dtype_last=True)
    t = _dtype(types, consts, 4)
    _grad_arg(t, types[3])
    return t


def _sample_grad_f_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 4, *_SAMPLE)
    _count(types, 4)
    _grad_arg(_F32, types[3])
    return _F32


_GRAD_DOC = ("Like ``volume_sample``, and writes the gradient of the sampled value with respect to ``uvw`` to "
             "``grad`` (a vec3 for scalar volumes, an N x 3 Jacobian for N-vector volumes; zero for CLOSEST). "
             "Differentiable in ``uvw``, also through ``grad`` (the interpolant's mixed second derivatives). ")
_declare("volume_sample_grad", _sample_grad_rule,
         "volume_sample_grad(id: uint64, uvw: vec3f, sampling_mode: int32, grad: vec3 | matrix, dtype) -> dtype",
         _GRAD_DOC, differentiable=True, ref_args=(3,))
_declare("volume_sample_grad_f", _sample_grad_f_rule,
         "volume_sample_grad_f(id: uint64, uvw: vec3f, sampling_mode: int32, grad: vec3f) -> float32",
         _GRAD_DOC + "For float32 volumes.", cpp="volume_sample_grad", differentiable=True, ref_args=(3,))

# ----------------------------------------------------------------------------------------------------------------
# Index grids: values in external arrays
# ----------------------------------------------------------------------------------------------------------------


def _data_and_background(types: Sequence[Any]) -> Any:
    data, bg = types[3], types[4]
    need(isinstance(data, ArrayT) and data.ndim == 1 and not data.indexed and data.dtype in VALUE_TYPES,
         f"'voxel_data' must be a 1-d array of {_VALUE_NAMES}, got {type_str(data)}")
    t = data.dtype
    ok = bg == t or (is_float(t) and (is_float(bg) or is_int(bg))) or (is_int(t) and is_int(bg))
    need(ok, f"'background' must be a {type_str(t)} (the type of voxel_data), got {type_str(bg)}")
    return t


def _sample_index_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 3, *_SAMPLE)
    _count(types, 5)
    return _data_and_background(types)


def _sample_grad_index_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 3, *_SAMPLE)
    _count(types, 6)
    t = _data_and_background(types)
    _grad_arg(t, types[5])
    return t


_INDEX_DOC = ("Sample at ``uvw`` the values an index volume associates with its voxels: voxel ``v`` reads "
              "``voxel_data[volume_lookup_index(id, v)]``, voxels without an index (or beyond the array) read "
              "``background``. Modes as in ``volume_sample``. Differentiable in ``uvw`` (LINEAR), ``voxel_data`` and "
              "``background``. ")
_declare("volume_sample_index", _sample_index_rule,
         "volume_sample_index(id: uint64, uvw: vec3f, sampling_mode: int32, voxel_data: array(T), background: T) -> T",
         _INDEX_DOC, differentiable=True)
_declare("volume_sample_grad_index", _sample_grad_index_rule,
         "volume_sample_grad_index(id: uint64, uvw: vec3f, sampling_mode: int32, voxel_data: array(T), "
         "background: T, grad: vec3 | matrix) -> T",
         _INDEX_DOC + "Also writes the gradient with respect to ``uvw`` to ``grad``.", differentiable=True,
         ref_args=(5,))


def _lookup_index_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 4, *_LOOKUP)
    _count(types, 4)
    return _I32


def _voxel_count_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 1, ("id",), ("id",))
    _count(types, 1)
    return _I32


_declare("volume_lookup_index", _lookup_index_rule, "volume_lookup_index(id: uint64, i: int32, j: int32, k: int32) -> int32",
         "The index of voxel (i, j, k) in [0, volume_voxel_count(id)), or -1 if it has none (index grids: "
         "their voxel indices; value grids: leaf number * 512 + position in the leaf).", template=None)
_declare("volume_voxel_count", _voxel_count_rule, "volume_voxel_count(id: uint64) -> int32",
         "The number of indexable voxels of volume ``id`` (the size a ``voxel_data`` array needs).", template=None)

# ----------------------------------------------------------------------------------------------------------------
# Lookups and stores
# ----------------------------------------------------------------------------------------------------------------


def _lookup_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _head(types, 4, *_LOOKUP)
    _count(types, 5, dtype_last=True)
    return _dtype(types, consts, 4)


def _fixed_lookup(t: Any) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        _head(types, 4, *_LOOKUP)
        _count(types, 4)
        return t

    return rule


_LOOKUP_DOC = ("The value stored at voxel (i, j, k) of volume ``id`` without interpolation (the background where "
               "nothing is stored). ")
_declare("volume_lookup", _lookup_rule, "volume_lookup(id: uint64, i: int32, j: int32, k: int32, dtype) -> dtype",
         _LOOKUP_DOC + "``dtype`` is the volume's value type.")
_declare("volume_lookup_f", _fixed_lookup(_F32), "volume_lookup_f(id: uint64, i: int32, j: int32, k: int32) -> float32",
         _LOOKUP_DOC + "For float32 volumes.", cpp="volume_lookup")
_declare("volume_lookup_i", _fixed_lookup(_I32), "volume_lookup_i(id: uint64, i: int32, j: int32, k: int32) -> int32",
         _LOOKUP_DOC + "For int32 volumes.", cpp="volume_lookup")
_declare("volume_lookup_v", _fixed_lookup(vec3f), "volume_lookup_v(id: uint64, i: int32, j: int32, k: int32) -> vec3f",
         _LOOKUP_DOC + "For vec3f volumes.", cpp="volume_lookup")


def _store_rule(want: Any = None) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        _head(types, 4, *_LOOKUP)
        _count(types, 5)
        v = types[4]
        if want is None:
            need(v in VALUE_TYPES, f"'value' must be one of {_VALUE_NAMES}, got {type_str(v)}")
        else:
            need(v == want, f"'value' must be a {type_str(want)}, got {type_str(v)}")
        return None

    return rule


_STORE_DOC = ("Store ``value`` at voxel (i, j, k) of volume ``id``, where the voxel has leaf storage (a tile "
              "allocated with ``allocate``/``allocate_by_tiles``); elsewhere, or in a volume of another type, nothing "
              "happens. Does not change active states. ")
_declare("volume_store", _store_rule(), "volume_store(id: uint64, i: int32, j: int32, k: int32, value: T)",
         _STORE_DOC + "The value's type must be the volume's.", template=None, side_effects=True)
_declare("volume_store_f", _store_rule(_F32), "volume_store_f(id: uint64, i: int32, j: int32, k: int32, value: float32)",
         _STORE_DOC + "For float32 volumes.", cpp="volume_store", template=None,
         side_effects=True)
_declare("volume_store_i", _store_rule(_I32), "volume_store_i(id: uint64, i: int32, j: int32, k: int32, value: int32)",
         _STORE_DOC + "For int32 volumes.", cpp="volume_store", template=None,
         side_effects=True)
_declare("volume_store_v", _store_rule(vec3f), "volume_store_v(id: uint64, i: int32, j: int32, k: int32, value: vec3f)",
         _STORE_DOC + "For vec3f volumes.", cpp="volume_store", template=None,
         side_effects=True)

# ----------------------------------------------------------------------------------------------------------------
# Transforms
# ----------------------------------------------------------------------------------------------------------------


def _map_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    _count(types, 2)
    need(types[0] == _U64, f"'id' must be a volume id (uint64), got {type_str(types[0])}")
    need(types[1] in (vec3f, vec3d), f"expected a vec3f or vec3d, got {type_str(types[1])}")
    return types[1]


for _name, _arg, _doc in (
    ("volume_index_to_world", "uvw", "The world position of the index-space point ``uvw`` (the volume's affine map, "
                                     "translation included)."),
    ("volume_world_to_index", "xyz", "The index-space point of the world position ``xyz`` (the inverse map)."),
    ("volume_index_to_world_dir", "uvw", "The world-space direction of the index-space direction ``uvw`` (the map's "
                                         "linear part: no translation, no renormalisation)."),
    ("volume_world_to_index_dir", "xyz", "The index-space direction of the world direction ``xyz`` (the inverse "
                                         "map's linear part)."),
):
    _declare(_name, _map_rule, f"{_name}(id: uint64, {_arg}: vec3f | vec3d) -> vec3f | vec3d",
             _doc + " float32 points use the grid's float32 matrices, float64 points its float64 ones. "
                    "Differentiable.", differentiable=True, template=None)
