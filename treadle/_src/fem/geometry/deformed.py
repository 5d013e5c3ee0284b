"""``DeformedGeometry``: a geometry whose positions are moved by a vector field.

With ``relative=True`` a point of the base geometry at ``x`` moves to ``x + u(x)``; otherwise to ``u(x)``. Cells,
sides and their numbering are the base geometry's. With ``G`` the world-space Jacobian of the motion at a point
(``I + grad u``, or ``grad u``), the deformation gradient is ``G F``, the cell measure is scaled by ``|det G|``,
side normals follow ``G^{-T} n`` and side measures ``|det G| |G^{-T} n|`` (Nanson's formula).
"""

from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from .. import codegen
from ..types import coords_type, sample_type
from .deformed_lookup import cell_bounds, lookup_funcs
from .geometry import Geometry, mat_type, vec_type
from .sides import side_sample_funcs

_CACHE: dict[tuple[Any, ...], SimpleNamespace] = {}


def _field_funcs(field: Any) -> tuple[Any, Any, Any]:
    """``(EvalArg, value(cell_arg, eval_arg, s), reference_grad(cell_arg, eval_arg, s))`` of a deforming field.

    The reference gradient is the derivative with respect to the cell's reference coordinates. Fields are told
    apart by what they carry (the field classes build deformed geometries, so this module does not import them):
    a discrete field its cell functions, an implicit field its function and gradient.
    """
    kind = getattr(field, "deformation_kind", None)
    if kind == "discrete":
        cell = field._cell
        if getattr(cell, "cell_reference_grad", None) is None:
            raise TypeError("DeformedGeometry: the field's values have no gradient")
        return cell.EvalArg, cell.cell_value, cell.cell_reference_grad
    if kind == "implicit":
        if field.grad_func is None:
            raise TypeError("DeformedGeometry: an ImplicitField deformation needs grad_func")
        key = ("deform_implicit", field.name, id(field.geometry._funcs))
        f = _CACHE.get(key)
        if f is None:
            g = field.geometry._funcs
            args = ", ".join(f"ea.{n}" for n in field._value_names)
            extra = f", {args}" if args else ""
            text = (f"def implicit_value(cell_arg: Any, ea: EvalArg, s: Any):\n"
                    f"    return _func(_position(cell_arg, s){extra})\n\n"
                    f"def implicit_reference_grad(cell_arg: Any, ea: EvalArg, s: Any):\n"
                    f"    return _grad(_position(cell_arg, s){extra}) * _def_grad(cell_arg, s)\n")
            ns = {"Any": Any, "EvalArg": field.EvalArg, "_func": field.func, "_grad": field.grad_func,
                  "_position": g.cell_position, "_def_grad": g.cell_deformation_gradient,
                  "__name__": codegen.GEN_MODULE}
            codegen.exec_source(text, f"deform implicit {codegen.digest(key)}", ns)
            f = SimpleNamespace(value=codegen.func(ns["implicit_value"], *key),
                                grad=codegen.func(ns["implicit_reference_grad"], *key))
            _CACHE[key] = f
        return field.EvalArg, f.value, f.grad
    raise TypeError(f"DeformedGeometry: expected a DiscreteField or an ImplicitField, got {type(field).__name__}")


def deformed_funcs(base: Any, field: Any, relative: bool) -> SimpleNamespace:
    """The kernel functions of ``base`` deformed by ``field``."""
    from ..element import Element

    EvalArg, value, ref_grad = _field_funcs(field)
    key = ("deformed", base.name, field.name, relative)
    f = _CACHE.get(key)
    if f is not None:
        return f
    g = base._funcs
    S = base.scalar_type
    D = base.dimension
    C = base.cell_dimension
    vecD = vec_type(D, S)
    matDC = mat_type(D, C, S)
    SampleT = sample_type(S)
    Coords = coords_type(S)
    ckey = ("deformed", g.CellArg.key, EvalArg.key, relative)
    lookup_fields = {"bvh_id": wp.uint64, "cell_env": wp.array(dtype=int)}
    CellArg = codegen.struct("DeformedCellArg", {"base": g.CellArg, "field": EvalArg, **lookup_fields}, *ckey)
    SideArg = codegen.struct("DeformedSideArg", {"base": g.SideArg, "field": EvalArg, **lookup_fields}, *ckey)
    SideIndexArg = g.SideIndexArg
    sides = side_sample_funcs(g)
    REL = relative
    TRI = base.reference_cell() == Element.TRIANGLE
    EMBEDDED = D > C
    SIDE_DIM = C - 1
    # triangle sides (of tetrahedra) have barycentric coordinates: their corners are (1,0,0), (0,1,0), (0,0,1)
    SIDE_TRI = base.reference_side() == Element.TRIANGLE

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *ckey)

    @_f
    def jacobian_measure(f: Any) -> S:
        if wp.static(EMBEDDED):
            return wp.sqrt(wp.abs(wp.determinant(wp.transpose(f) * f)))
        else:
            return wp.abs(wp.determinant(f))

    @_f
    def pseudo_inverse(f: Any):
        if wp.static(EMBEDDED):
            ft = wp.transpose(f)
            return wp.inverse(ft * f) * ft
        else:
            return wp.inverse(f)

    @_f
    def deformation_at(base_arg: Any, ea: EvalArg, s: Any) -> matDC:
        grad = matDC(ref_grad(base_arg, ea, s))
        if wp.static(REL):
            return g.cell_deformation_gradient(base_arg, s) + grad
        else:
            return grad

    @_f
    def cell_position(args: CellArg, s: SampleT) -> vecD:
        v = vecD(value(args.base, args.field, s))
        if wp.static(REL):
            return g.cell_position(args.base, s) + v
        else:
            return v

    @_f
    def cell_deformation_gradient(args: CellArg, s: SampleT) -> matDC:
        return deformation_at(args.base, args.field, s)

    @_f
    def cell_inverse_deformation_gradient(args: CellArg, s: SampleT):
        return pseudo_inverse(deformation_at(args.base, args.field, s))

    @_f
    def cell_measure(args: CellArg, s: SampleT) -> S:
        # the base measure carries the reference element's volume
        base_f = g.cell_deformation_gradient(args.base, s)
        return g.cell_measure(args.base, s) * jacobian_measure(deformation_at(args.base, args.field, s)) / \
            jacobian_measure(base_f)

    @_f
    def cell_normal(args: CellArg, s: SampleT) -> vecD:
        if wp.static(EMBEDDED):
            f = deformation_at(args.base, args.field, s)
            return wp.normalize(wp.cross(vecD(f[0, 0], f[1, 0], f[2, 0]), vecD(f[0, 1], f[1, 1], f[2, 1])))
        else:
            return vecD()

    found = lookup_funcs(dict(locals()), g, base.reference_cell(), S, D, ckey)
    cell_coordinates = found["cell_coordinates"]
    cell_closest_point = found["cell_closest_point"]
    cell_lookup = None if getattr(g, "multi_environment", False) else found["cell_lookup"]
    cell_lookup_env = found["cell_lookup_env"]
    cell_environment = found["cell_environment"]
    side_environment = found["side_environment"]
    multi_environment = getattr(g, "multi_environment", False)

    # sides: the side-to-cell reference map is affine; its columns come from two or three evaluations
    VecC = vec_type(C, S)
    if TRI:
        @_f
        def ref_of(c: Coords) -> VecC:
            return VecC(c[1], c[2])
    elif C == 2:
        @_f
        def ref_of(c: Coords) -> VecC:
            return VecC(c[0], c[1])
    else:
        @_f
        def ref_of(c: Coords) -> VecC:
            return VecC(c[0], c[1], c[2])

    @_f
    def side_frame(args: SideArg, s: SampleT, f: matDC):
        # f (D x C) times d(cell reference coords)/d(side coords)
        side = s.element_index
        if wp.static(SIDE_TRI):
            c0 = g.side_inner_cell_coords(args.base, side, Coords(S(1.0), S(0.0), S(0.0)))
            cu = g.side_inner_cell_coords(args.base, side, Coords(S(0.0), S(1.0), S(0.0)))
            cv = g.side_inner_cell_coords(args.base, side, Coords(S(0.0), S(0.0), S(1.0)))
        else:
            c0 = g.side_inner_cell_coords(args.base, side, Coords())
            cu = g.side_inner_cell_coords(args.base, side, Coords(S(1.0), S(0.0), S(0.0)))
            cv = g.side_inner_cell_coords(args.base, side, Coords(S(0.0), S(1.0), S(0.0)))
        du = f * (ref_of(cu) - ref_of(c0))
        if wp.static(SIDE_DIM == 1):
            return du
        else:
            dv = f * (ref_of(cv) - ref_of(c0))
            return wp.matrix_from_cols(du, dv)

    @_f
    def side_cell_deformation(args: SideArg, s: SampleT) -> matDC:
        cs = sides.inner_sample(args.base, s)
        return deformation_at(g.side_to_cell_arg(args.base), args.field, cs)

    @_f
    def side_base_cell_deformation(args: SideArg, s: SampleT) -> matDC:
        cs = sides.inner_sample(args.base, s)
        return g.cell_deformation_gradient(g.side_to_cell_arg(args.base), cs)

    @_f
    def side_position(args: SideArg, s: SampleT) -> vecD:
        cs = sides.inner_sample(args.base, s)
        v = vecD(value(g.side_to_cell_arg(args.base), args.field, cs))
        if wp.static(REL):
            return g.side_position(args.base, s) + v
        else:
            return v

    @_f
    def side_deformation_gradient(args: SideArg, s: SampleT):
        return side_frame(args, s, side_cell_deformation(args, s))

    @_f
    def frame_normal(args: SideArg, s: SampleT, fr: Any, cell_f: matDC) -> vecD:
        if wp.static(SIDE_DIM == 1):
            if wp.static(D == 2):
                return vecD(fr[1], -fr[0])
            else:
                n_cell = wp.cross(vecD(cell_f[0, 0], cell_f[1, 0], cell_f[2, 0]),
                                  vecD(cell_f[0, 1], cell_f[1, 1], cell_f[2, 1]))
                return wp.cross(fr, n_cell)
        else:
            return wp.cross(vecD(fr[0, 0], fr[1, 0], fr[2, 0]), vecD(fr[0, 1], fr[1, 1], fr[2, 1]))

    @_f
    def frame_measure(fr: Any) -> S:
        if wp.static(SIDE_DIM == 1):
            return wp.length(fr)
        else:
            return wp.length(wp.cross(vecD(fr[0, 0], fr[1, 0], fr[2, 0]), vecD(fr[0, 1], fr[1, 1], fr[2, 1])))

    @_f
    def side_normal(args: SideArg, s: SampleT) -> vecD:
        bf = side_base_cell_deformation(args, s)
        df = side_cell_deformation(args, s)
        nb = frame_normal(args, s, side_frame(args, s, bf), bf)
        sign = wp.where(wp.dot(nb, g.side_normal(args.base, s)) < S(0.0), S(-1.0), S(1.0))
        return sign * wp.normalize(frame_normal(args, s, side_frame(args, s, df), df))

    @_f
    def side_measure(args: SideArg, s: SampleT) -> S:
        bf = side_base_cell_deformation(args, s)
        df = side_cell_deformation(args, s)
        return g.side_measure(args.base, s) * frame_measure(side_frame(args, s, df)) / \
            frame_measure(side_frame(args, s, bf))

    @_f
    def side_measure_ratio(args: SideArg, s: SampleT) -> S:
        return g.side_measure_ratio(args.base, s)

    @_f
    def side_inner_cell_index(args: SideArg, side: int) -> int:
        return g.side_inner_cell_index(args.base, side)

    @_f
    def side_outer_cell_index(args: SideArg, side: int) -> int:
        return g.side_outer_cell_index(args.base, side)

    @_f
    def side_inner_cell_coords(args: SideArg, side: int, side_coords: Any):
        return g.side_inner_cell_coords(args.base, side, side_coords)

    @_f
    def side_outer_cell_coords(args: SideArg, side: int, side_coords: Any):
        return g.side_outer_cell_coords(args.base, side, side_coords)

    @_f
    def side_from_cell_coords(args: SideArg, side: int, cell_index: int, cell_coords: Any):
        return g.side_from_cell_coords(args.base, side, cell_index, cell_coords)

    @_f
    def side_to_cell_arg(args: SideArg) -> CellArg:
        c = CellArg()
        c.base = g.side_to_cell_arg(args.base)
        c.field = args.field
        c.bvh_id = args.bvh_id
        c.cell_env = args.cell_env
        return c

    @_f
    def side_inner_inverse_deformation_gradient(args: SideArg, s: SampleT):
        return cell_inverse_deformation_gradient(side_to_cell_arg(args), sides.inner_sample(args.base, s))

    @_f
    def side_outer_inverse_deformation_gradient(args: SideArg, s: SampleT):
        return cell_inverse_deformation_gradient(side_to_cell_arg(args), sides.outer_sample(args.base, s))

    boundary_side_index = g.boundary_side_index
    del _f
    f = SimpleNamespace(**{k: v for k, v in locals().items() if k not in ("f", "base", "field", "g", "key", "found",
                                                                        "lookup_fields")})
    _CACHE[key] = f
    return f


class DeformedGeometry(Geometry):
    """A geometry moved by a vector field (see the module documentation).

    Args:
        field: a vector :class:`DiscreteField` or :class:`ImplicitField` (with ``grad_func``) on the base geometry,
            of the geometry's dimension.
        relative: whether the field is a displacement (``x + u(x)``) or the new position (``u(x)``).
        build_bvh: build the BVH of the deformed cells right away (see :meth:`build_bvh`).

    """

    def __init__(self, field: Any, relative: bool = True, build_bvh: bool = False) -> None:
        base = field.geometry
        super().__init__(base.scalar_type)
        if getattr(field.dtype, "_length_", None) != base.dimension:
            raise TypeError(f"DeformedGeometry: the field's values must be vectors of dimension {base.dimension}, "
                            f"got {getattr(field.dtype, '__name__', field.dtype)}")
        self.base = base
        self.field = field
        self.relative = bool(relative)
        self.dimension = base.dimension
        self._funcs = deformed_funcs(base, field, self.relative)
        self._groups: dict[str, Any] = {}
        self._bvh = None
        if build_bvh:
            self.build_bvh(field.dof_values.device if hasattr(field, "dof_values") else None)

    @property
    def name(self) -> str:
        """``Deformed_<base>_<field>``."""
        return f"Deformed_{self.base.name}_{codegen.digest(self.field.name, self.relative)}"

    def reference_cell(self) -> Any:
        """The base geometry's cells."""
        return self.base.reference_cell()

    def reference_side(self) -> Any:
        """The base geometry's sides."""
        return self.base.reference_side()

    def cell_count(self) -> int:
        """The base geometry's cell count."""
        return self.base.cell_count()

    def side_count(self) -> int:
        """The base geometry's side count."""
        return self.base.side_count()

    def boundary_side_count(self) -> int:
        """The base geometry's boundary side count."""
        return self.base.boundary_side_count()

    def vertex_count(self) -> int:
        """The base geometry's vertex count."""
        return self.base.vertex_count()

    def cell_vertex_table(self) -> Any:
        """The base geometry's cell vertices (spaces on a deformed geometry number nodes as on the base)."""
        return self.base.cell_vertex_table()

    def supports_cell_lookup(self, device: Any = None) -> bool:
        """Lookups by deformed position work (faster once :meth:`build_bvh` was called)."""
        return True

    def environment_count(self) -> int:
        """The base geometry's environment count."""
        return getattr(self.base, "environment_count", lambda: 1)()

    def cell_environments(self) -> np.ndarray:
        """The base geometry's cell environments."""
        envs = getattr(self.base, "cell_environments", None)
        return envs() if envs is not None else np.zeros(self.cell_count(), dtype=np.int64)

    def cell_bvh_groups(self, device: Any = None) -> Any:
        """The BVH group (environment) of each cell."""
        key = str(wp.get_device(device))
        groups = self._groups.get(key)
        if groups is None:
            groups = self._groups[key] = wp.array(self.cell_environments().astype(np.int32), dtype=int,
                                                  device=device)
        return groups

    def build_bvh(self, device: Any = None) -> None:
        """Build the BVH of the deformed cells' bounds that speeds up ``fem.lookup`` (again after the field moves)."""
        dev = wp.get_device(device)
        self._bvh = None
        lo, hi = cell_bounds(self, dev)
        self._bvh_lo = wp.array(lo.astype(np.float32), dtype=wp.vec3, device=dev)
        self._bvh_hi = wp.array(hi.astype(np.float32), dtype=wp.vec3, device=dev)
        self._bvh = wp.Bvh(self._bvh_lo, self._bvh_hi)

    def update_bvh(self, device: Any = None) -> None:
        """Rebuild the BVH after the deformation changed."""
        self.build_bvh(device)

    def _fill_lookup(self, arg: Any, device: Any) -> None:
        bvh = getattr(self, "_bvh", None)
        arg.bvh_id = wp.uint64(0 if bvh is None else int(bvh.id))
        arg.cell_env = self.cell_bvh_groups(device)

    def fill_cell_arg(self, arg: Any, device: Any) -> None:
        """The base cell argument, the field's argument and the lookup data."""
        arg.base = self.base.cell_arg_value(device)
        arg.field = self.field.eval_arg_value(device)
        self._fill_lookup(arg, device)

    def fill_side_arg(self, arg: Any, device: Any) -> None:
        """The base side argument, the field's argument and the lookup data."""
        arg.base = self.base.side_arg_value(device)
        arg.field = self.field.eval_arg_value(device)
        self._fill_lookup(arg, device)

    def fill_side_index_arg(self, arg: Any, device: Any) -> None:
        """The base geometry's boundary enumeration."""
        self.base.fill_side_index_arg(arg, device)

    def cell_arg_value(self, device: Any = None) -> Any:
        """Rebuilt at each call: the field's values may have been replaced."""
        arg = self.CellArg()
        self.fill_cell_arg(arg, wp.get_device(device))
        return arg

    def side_arg_value(self, device: Any = None) -> Any:
        """Rebuilt at each call: the field's values may have been replaced."""
        arg = self.SideArg()
        self.fill_side_arg(arg, wp.get_device(device))
        return arg
