"""Geometries made of several copies ("environments") of one base geometry.

With ``env_count`` environments, element ``e * n + i`` (``n`` cells, sides, vertices or boundary sides of the base)
is element ``i`` of environment ``e``. The environments overlap in space: they are independent simulations that
share one set of arrays. The kernel functions of the copies wrap the base's: they reduce element indices to the
base, and put the cells they return back in the caller's environment. ``lookup`` needs an environment (an index, or
a sample whose environment is taken), since a position alone is ambiguous.
"""

from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import codegen
from ..types import NULL_ELEMENT_INDEX, sample_type

_CACHE: dict[int, SimpleNamespace] = {}


def replicated_funcs(base: SimpleNamespace, S: Any) -> SimpleNamespace:
    """The kernel functions of ``env_count`` copies of the geometry whose functions are ``base``."""
    f = _CACHE.get(id(base))
    if f is None:
        f = _CACHE[id(base)] = _make_replicated_funcs(base, S)
    return f


def _make_replicated_funcs(base: SimpleNamespace, S: Any) -> SimpleNamespace:
    SampleT = sample_type(S)
    key = ("envs", base.CellArg.key)
    CellArg = codegen.struct("EnvCellArg", {"base": base.CellArg, "cells": int, "env_count": int}, *key)
    SideArg = codegen.struct("EnvSideArg", {"base": base.SideArg, "cell_arg": CellArg, "sides": int}, *key)
    SideIndexArg = codegen.struct("EnvSideIndexArg", {"base": base.SideIndexArg, "sides": int, "boundary": int},
                                  *key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    @_f
    def local_sample(s: SampleT, n: int) -> SampleT:
        out = SampleT()
        out.element_index = s.element_index - (s.element_index // n) * n
        out.element_coords = s.element_coords
        out.qp_index = s.qp_index
        out.qp_weight = s.qp_weight
        out.test_dof = s.test_dof
        out.trial_dof = s.trial_dof
        return out

    def _cell_sample_fn(name: str) -> Any:
        fn = getattr(base, name)

        def wrapped(args: CellArg, s: SampleT):
            return fn(args.base, local_sample(s, args.cells))

        wrapped.__name__ = f"env_{name}"
        return _f(wrapped)

    def _side_sample_fn(name: str) -> Any:
        fn = getattr(base, name)

        def wrapped(args: SideArg, s: SampleT):
            return fn(args.base, local_sample(s, args.sides))

        wrapped.__name__ = f"env_{name}"
        return _f(wrapped)

    out: dict[str, Any] = {"CellArg": CellArg, "SideArg": SideArg, "SideIndexArg": SideIndexArg,
                           "multi_environment": True}
    for name in ("cell_position", "cell_deformation_gradient", "cell_inverse_deformation_gradient", "cell_measure",
                 "cell_normal"):
        out[name] = _cell_sample_fn(name)
    for name in ("side_position", "side_deformation_gradient", "side_measure", "side_measure_ratio", "side_normal",
                 "side_inner_inverse_deformation_gradient", "side_outer_inverse_deformation_gradient"):
        out[name] = _side_sample_fn(name)

    b_coordinates = base.cell_coordinates
    b_closest = base.cell_closest_point
    b_lookup = base.cell_lookup
    b_inner = base.side_inner_cell_index
    b_outer = base.side_outer_cell_index
    b_inner_coords = base.side_inner_cell_coords
    b_outer_coords = base.side_outer_cell_coords
    b_from_cell = base.side_from_cell_coords
    b_boundary = base.boundary_side_index

    @_f
    def cell_coordinates(args: CellArg, cell_index: int, pos: Any):
        return b_coordinates(args.base, cell_index - (cell_index // args.cells) * args.cells, pos)

    @_f
    def cell_closest_point(args: CellArg, cell_index: int, pos: Any):
        return b_closest(args.base, cell_index - (cell_index // args.cells) * args.cells, pos)

    @_f
    def cell_lookup_env(args: CellArg, pos: Any, env: int) -> SampleT:
        s = b_lookup(args.base, pos)
        if env < 0 or env >= args.env_count or s.element_index == NULL_ELEMENT_INDEX:
            s.element_index = NULL_ELEMENT_INDEX
        else:
            s.element_index = s.element_index + env * args.cells
        return s

    @_f
    def cell_environment(args: CellArg, s: SampleT) -> int:
        return s.element_index // args.cells

    @_f
    def side_environment(args: SideArg, s: SampleT) -> int:
        return s.element_index // args.sides

    @_f
    def side_inner_cell_index(args: SideArg, side: int) -> int:
        env = side // args.sides
        return b_inner(args.base, side - env * args.sides) + env * args.cell_arg.cells

    @_f
    def side_outer_cell_index(args: SideArg, side: int) -> int:
        env = side // args.sides
        return b_outer(args.base, side - env * args.sides) + env * args.cell_arg.cells

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Any):
        return b_inner_coords(args.base, side - (side // args.sides) * args.sides, side_coords)

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Any):
        return b_outer_coords(args.base, side - (side // args.sides) * args.sides, side_coords)

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Any):
        n = args.cell_arg.cells
        return b_from_cell(args.base, side - (side // args.sides) * args.sides, cell_index - (cell_index // n) * n,
                           cell_coords)

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    @_f
    def boundary_side_index(args: SideIndexArg, b: int) -> int:
        env = b // args.boundary
        return b_boundary(args.base, b - env * args.boundary) + env * args.sides

    out.update({k: v for k, v in locals().items() if k in (
        "cell_coordinates", "cell_closest_point", "cell_lookup_env", "cell_environment", "side_environment",
        "side_inner_cell_index", "side_outer_cell_index", "side_inner_cell_coords", "side_outer_cell_coords",
        "side_from_cell_coords", "side_to_cell_arg", "boundary_side_index")})
    out["cell_lookup"] = None
    return SimpleNamespace(**out)


class ReplicatedEnvironments:
    """Mixin of geometries that can be made of ``env_count`` copies of themselves (see the module documentation).

    The geometry implements ``_base_cell_count()`` (and the side, boundary and vertex counts) and fills the base's
    arguments with ``_fill_base_cell_arg`` and friends; the mixin scales the counts and wraps the arguments.
    """

    _env_count: int = 1
    _base_funcs: SimpleNamespace

    def _set_environments(self, env_count: int, base_funcs: SimpleNamespace) -> None:
        env_count = int(env_count)
        if env_count < 1:
            raise ValueError(f"{type(self).__name__}: env_count must be at least 1, got {env_count}")
        self._env_count = env_count
        self._base_funcs = base_funcs
        self._funcs = base_funcs if env_count == 1 else replicated_funcs(base_funcs, self.scalar_type)  # type: ignore[attr-defined]

    def environment_count(self) -> int:
        """Number of environments (independent copies of the base geometry)."""
        return self._env_count

    def _env_name(self, name: str) -> str:
        return name if self._env_count == 1 else f"{name}_env{self._env_count}"

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """The base's cell argument (wrapped with the per-environment cell count when there are several)."""
        if self._env_count == 1:
            self._fill_base_cell_arg(arg, device)
            return
        base = self._base_funcs.CellArg()
        self._fill_base_cell_arg(base, device)
        arg.base = base
        arg.cells = self._base_cell_count()
        arg.env_count = self._env_count

    def fill_side_arg(self, arg: Any, device: Any) -> None:
        """The base's side argument (wrapped when there are several environments)."""
        if self._env_count == 1:
            self._fill_base_side_arg(arg, device)
            return
        base = self._base_funcs.SideArg()
        self._fill_base_side_arg(base, device)
        arg.base = base
        arg.cell_arg = self.cell_arg_value(device)  # type: ignore[attr-defined]
        arg.sides = self._base_side_count()

    def fill_side_index_arg(self, arg: Any, device: Any) -> None:
        """The base's boundary enumeration (wrapped when there are several environments)."""
        if self._env_count == 1:
            self._fill_base_side_index_arg(arg, device)
            return
        base = self._base_funcs.SideIndexArg()
        self._fill_base_side_index_arg(base, device)
        arg.base = base
        arg.sides = self._base_side_count()
        arg.boundary = self._base_boundary_side_count()

    def cell_count(self) -> int:
        """Cells of all environments."""
        return self._env_count * self._base_cell_count()

    def side_count(self) -> int:
        """Sides of all environments."""
        return self._env_count * self._base_side_count()

    def boundary_side_count(self) -> int:
        """Boundary sides of all environments."""
        return self._env_count * self._base_boundary_side_count()

    def vertex_count(self) -> int:
        """Vertices of all environments."""
        return self._env_count * self._base_vertex_count()

    def cell_vertex_table(self) -> np.ndarray:
        """Vertices of each cell: the base's table, repeated with each environment's vertex offset."""
        t = self._base_cell_vertex_table()
        nv = self._base_vertex_count()
        return np.concatenate([t + e * nv for e in range(self._env_count)], axis=0)

    def vertex_positions(self) -> np.ndarray:
        """Vertex positions: the base's, repeated for each environment."""
        return np.tile(self._base_vertex_positions(), (self._env_count, 1))

    def cell_environments(self) -> np.ndarray:
        """Environment of each cell."""
        return np.repeat(np.arange(self._env_count), self._base_cell_count())

    def environment_replicas(self) -> tuple[int, Any]:
        """``(env_count, base cell vertex table)``: lets spaces number their nodes environment by environment."""
        return self._env_count, self._base_cell_vertex_table()

    # the geometry provides these
    def _base_cell_count(self) -> int:
        raise NotImplementedError

    def _base_side_count(self) -> int:
        raise NotImplementedError

    def _base_boundary_side_count(self) -> int:
        raise NotImplementedError

    def _base_vertex_count(self) -> int:
        raise NotImplementedError

    def _base_cell_vertex_table(self) -> np.ndarray:
        raise NotImplementedError

    def _base_vertex_positions(self) -> np.ndarray:
        raise NotImplementedError

    def _fill_base_cell_arg(self, arg: Any, device: Any) -> None:
        raise NotImplementedError

    def _fill_base_side_arg(self, arg: Any, device: Any) -> None:
        raise NotImplementedError

    def _fill_base_side_index_arg(self, arg: Any, device: Any) -> None:
        raise NotImplementedError


__all__ = ["ReplicatedEnvironments", "replicated_funcs"]


_TAGGED: dict[int, SimpleNamespace] = {}


def tagged_funcs(base: SimpleNamespace, S: Any) -> SimpleNamespace:
    """The kernel functions of a geometry whose cells carry an environment index (``cell_env``).

    Cells and sides keep their numbers; ``lookup`` in an environment considers that environment's cells only (the
    base's BVH, when its cell argument has one, gives the candidates).
    """
    f = _TAGGED.get(id(base))
    if f is None:
        f = _TAGGED[id(base)] = _make_tagged_funcs(base, S)
    return f


def _make_tagged_funcs(base: SimpleNamespace, S: Any) -> SimpleNamespace:
    import treadle as wp

    SampleT = sample_type(S)
    key = ("tagged_envs", base.CellArg.key)
    CellArg = codegen.struct("TaggedEnvCellArg", {"base": base.CellArg, "cell_env": wp.array(dtype=int),
                                                  "env_count": int}, *key)
    SideArg = codegen.struct("TaggedEnvSideArg", {"base": base.SideArg, "cell_arg": CellArg}, *key)
    HAS_BVH = hasattr(base.CellArg(), "bvh_id")

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *key)

    out: dict[str, Any] = {"CellArg": CellArg, "SideArg": SideArg, "SideIndexArg": base.SideIndexArg,
                           "multi_environment": True, "cell_lookup": None,
                           "boundary_side_index": base.boundary_side_index}
    # cells and sides keep their numbers: the base's functions, called with the base part of the argument
    for name in ("cell_position", "cell_deformation_gradient", "cell_inverse_deformation_gradient", "cell_measure",
                 "cell_normal"):
        out[name] = codegen.forwarder(getattr(base, name), CellArg, "base", 1, f"tagged_{name}")
    for name, n in (("side_position", 1), ("side_deformation_gradient", 1), ("side_measure", 1),
                    ("side_measure_ratio", 1), ("side_normal", 1), ("side_inner_inverse_deformation_gradient", 1),
                    ("side_outer_inverse_deformation_gradient", 1), ("side_inner_cell_index", 1),
                    ("side_outer_cell_index", 1), ("side_inner_cell_coords", 2), ("side_outer_cell_coords", 2),
                    ("side_from_cell_coords", 3)):
        out[name] = codegen.forwarder(getattr(base, name), SideArg, "base", n, f"tagged_{name}")

    b_coordinates = base.cell_coordinates
    b_closest = base.cell_closest_point
    b_inner = base.side_inner_cell_index

    cell_coordinates = codegen.forwarder(b_coordinates, CellArg, "base", 2, "tagged_cell_coordinates")
    cell_closest_point = codegen.forwarder(b_closest, CellArg, "base", 2, "tagged_cell_closest_point")

    if HAS_BVH:
        @_f
        def bvh_of(args: CellArg) -> wp.uint64:
            return args.base.bvh_id
    else:
        @_f
        def bvh_of(args: CellArg) -> wp.uint64:
            return wp.uint64(0)
    lookup_in = closest_cell_lookup(CellArg, cell_closest_point, bvh_of, S, key)

    @_f
    def cell_lookup_env(args: CellArg, pos: Any, env: int) -> SampleT:
        return lookup_in(args, pos, env, 1)

    @_f
    def cell_environment(args: CellArg, s: SampleT) -> int:
        return args.cell_env[s.element_index]

    @_f
    def side_environment(args: SideArg, s: SampleT) -> int:
        return args.cell_arg.cell_env[b_inner(args.base, s.element_index)]

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        return args.cell_arg

    out.update(cell_coordinates=cell_coordinates, cell_closest_point=cell_closest_point,
               cell_lookup_env=cell_lookup_env, cell_environment=cell_environment,
               side_environment=side_environment, side_to_cell_arg=side_to_cell_arg)
    return SimpleNamespace(**out)


def closest_cell_lookup(CellArg: Any, closest: Any, bvh_of: Any, S: Any, key: tuple[Any, ...]) -> Any:  # noqa: N803
    """``(args, pos, env, filtered) -> sample``: the cell whose closest point to ``pos`` is nearest.

    Candidates are the cells whose BVH boxes (``bvh_of(args)``, 0 for none) hold ``pos``, else every cell; with
    ``filtered``, only the cells of environment ``env`` (``args.cell_env``).
    """
    import treadle as wp

    SampleT = sample_type(S)

    def lookup_in(args: CellArg, pos: Any, env: int, filtered: int) -> SampleT:
        best = S(1.0e30)
        s = SampleT()
        s.element_index = NULL_ELEMENT_INDEX
        bvh = bvh_of(args)
        if bvh != wp.uint64(0):
            lo = wp.vec3()
            for d in range(len(pos)):
                lo[d] = float(pos[d])
            query = wp.bvh_query_aabb(bvh, lo, lo)
            cand = 0
            while wp.bvh_query_next(query, cand):
                if filtered == 0 or args.cell_env[cand] == env:
                    r = closest(args, cand, pos)
                    if r[1] < best:
                        best = r[1]
                        s.element_index = cand
                        s.element_coords = r[0]
        if s.element_index == NULL_ELEMENT_INDEX:
            for c in range(args.cell_env.shape[0]):
                if filtered == 0 or args.cell_env[c] == env:
                    r = closest(args, c, pos)
                    if r[1] < best:
                        best = r[1]
                        s.element_index = c
                        s.element_coords = r[0]
        s.qp_index = -1
        s.test_dof = -1
        s.trial_dof = -1
        return s

    return codegen.func(lookup_in, "closest_cell_lookup", *key)


def check_cell_env(owner: str, cell_env: Any, env_count: Any, cell_count: int) -> int:
    """Validate a geometry's ``cell_env`` / ``env_count`` arguments; returns the environment count."""
    import treadle as wp

    if cell_env is None:
        if env_count is not None and int(env_count) != 1:
            raise ValueError(f"{owner}: env_count={env_count} needs cell_env, the environment of each cell")
        return 1
    if env_count is None:
        raise ValueError(f"{owner}: Environment count must be provided (env_count) along with cell_env")
    if cell_env.dtype != wp.int32:
        raise ValueError(f"{owner}: cell_env must be an array of dtype wp.int32, got {cell_env.dtype.__name__}")
    if cell_env.ndim != 1 or cell_env.shape[0] != cell_count:
        raise ValueError(f"{owner}: cell_env must have one entry per cell ({cell_count}), got shape "
                         f"{tuple(cell_env.shape)}")
    env_count = int(env_count)
    envs = cell_env.numpy()
    if env_count < 1 or (envs.size and (envs.min() < 0 or envs.max() >= env_count)):
        raise ValueError(f"{owner}: cell_env values must lie in [0, env_count={env_count})")
    return env_count
