"""Fields that are not nodal.

A function of position (:class:`ImplicitField`), a constant (:class:`UniformField`), and a discrete field of another geometry looked up by position (:class:`NonconformingField`).
"""

import inspect
from types import SimpleNamespace
from typing import Any

import treadle as wp

from ...types.scalars import scalar_types
from .. import codegen
from ..types import ElementKind
from .algebra import divergence_type, gradient_type
from .field import FieldError, GeometryField, Resolved
from .nodal_funcs import field_arg_struct

_CACHE: dict[tuple[Any, ...], Any] = {}


def _memo(key: tuple[Any, ...], make: Any) -> Any:
    f = _CACHE.get(key)
    if f is None:
        f = _CACHE[key] = make()
    return f


def _value_type(v: Any, hint: Any = None) -> Any:
    # a Python number takes the scalar type the function declares (an int for a uint64 volume or mesh id...)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and hint in scalar_types:
        return hint
    if isinstance(v, wp.array):
        return wp.array(dtype=v.dtype, ndim=v.ndim)
    if isinstance(v, bool):
        return wp.bool
    if isinstance(v, int):
        return wp.int32
    if isinstance(v, float):
        return wp.float32
    return type(v)


class _DomainField(GeometryField):
    """A field attached to a domain (evaluated at the position of the integration domain's samples)."""

    def __init__(self, domain: Any) -> None:
        from ..domain import GeometryDomain

        if not isinstance(domain, GeometryDomain):
            raise TypeError(f"{type(self).__name__}: domain must be a fem domain, got {type(domain).__name__}")
        self.domain = domain

    @property
    def geometry(self) -> Any:
        """The domain's geometry."""
        return self.domain.geometry

    @property
    def element_kind(self) -> ElementKind:
        """The domain's element kind."""
        return self.domain.element_kind

    def field_arg_type(self, domain: Any) -> Any:
        """``{elt_arg, eval_arg}`` for ``domain``."""
        return field_arg_struct(domain, self.EvalArg)

    def field_arg_value(self, domain: Any, device: Any) -> Any:
        """The integrand argument on ``domain``."""
        fa = self.field_arg_type(domain)()
        fa.elt_arg = domain.element_arg_value(device)
        fa.eval_arg = self.eval_arg_value(device)
        return fa

    def trace(self) -> Any:
        """The field itself: it is evaluated from sample positions, on sides as on cells."""
        return self


class FieldValues(dict):
    """The ``values`` of an implicit field: a dict whose entries also read and write as attributes.

    ``field.values.scale = v`` replaces the value passed to the field's function from the next launch on (the
    value's type must stay the same: it is part of the kernels' signature).
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"implicit field values have no entry {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self:
            raise AttributeError(f"implicit field values have no entry {name!r}")
        self[name] = value


class ImplicitField(_DomainField):
    """A field given by a kernel function of position: ``func(x, **values)``.

    Args:
        domain: where the field is defined.
        func: a ``@wp.func`` whose first parameter is the world position and whose other parameters are named in
            ``values``.
        values: values of ``func``'s other parameters, by name.
        grad_func: its gradient with respect to the position (same parameters), for ``fem.grad``.
        div_func: its divergence (same parameters), for ``fem.div``.
        degree: polynomial degree used to choose default quadratures.

    """

    #: How ``make_deformed_geometry`` reads this field.
    deformation_kind = "implicit"

    def __init__(self, domain: Any, func: Any, values: dict[str, Any] | None = None, grad_func: Any = None,
                 div_func: Any = None, degree: int = 0) -> None:
        super().__init__(domain)
        if not isinstance(func, wp.Function):
            raise TypeError(f"ImplicitField: func must be a @wp.func, got {type(func).__name__}")
        self.func = func
        self.grad_func = grad_func
        self.div_func = div_func
        self._degree = int(degree)
        params = list(inspect.signature(func.func).parameters)
        self._value_names = params[1:]
        self.values = FieldValues(values or {})
        missing = [n for n in self._value_names if n not in self.values]
        extra = [n for n in self.values if n not in self._value_names]
        if missing or extra:
            raise FieldError(f"ImplicitField: {func.__name__}'s parameters after the position are "
                             f"{self._value_names}; values= gives {sorted(self.values)}")
        hints = getattr(func.func, "__annotations__", {})
        self._types = {n: _value_type(self.values[n], hints.get(n)) for n in self._value_names}
        self._eval_struct = codegen.struct("ImplicitFieldArg", dict(self._types) or {"unused": int}, func.key,
                                           tuple(codegen.type_key(t) for t in self._types.values()))
        self.dtype = self._return_type()

    def _return_type(self) -> Any:
        vec = wp.types.vector(self.geometry.dimension, self.geometry.scalar_type)
        fdef = self.func.defs()[0]
        types = [vec] + [self._types[n] for n in self._value_names]
        try:
            inst = fdef.instance(tuple(fdef.param_types[i] if not _generic(fdef.param_types[i]) else t
                                       for i, t in enumerate(types)))
        except Exception as e:  # noqa: BLE001 - reported with the field's context
            raise FieldError(f"ImplicitField: cannot evaluate {self.func.__name__}(x: {vec.__name__}, ...): {e}") from None
        return inst.return_type

    @property
    def name(self) -> str:
        """``Implicit_<func>``."""
        return f"Implicit_{self.func.key}_{codegen.digest(tuple(codegen.type_key(t) for t in self._types.values()))}"

    @property
    def degree(self) -> int:
        """The degree given at construction."""
        return self._degree

    @property
    def gradient_dtype(self) -> Any:
        """Gradient type of the values."""
        return gradient_type(self.dtype, self.geometry.dimension)

    @property
    def divergence_dtype(self) -> Any:
        """Divergence type of the values."""
        return divergence_type(self.dtype)

    @property
    def EvalArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct of the ``values``."""
        return self._eval_struct

    def eval_arg_value(self, device: Any = None) -> Any:
        """The ``values`` as a struct."""
        arg = self._eval_struct()
        for n in self._value_names:
            v = self.values[n]
            if isinstance(v, wp.array) and device is not None:
                v = v.to(device)
            setattr(arg, n, v)
        return arg

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """``inner``/``outer`` call ``func`` at the sample's position; ``grad``/``div`` call ``grad_func``/``div_func``."""
        if op == "degree":
            return Resolved(self.degree, static=True)
        if op == "scalar_type":
            return Resolved(self.geometry.scalar_type, static=True)
        target = {"inner": self.func, "outer": self.func, "grad": self.grad_func, "grad_outer": self.grad_func,
                  "div": self.div_func, "div_outer": self.div_func}.get(op, "missing")
        if target == "missing":
            raise FieldError(f"implicit fields do not support fem.{op}")
        if target is None:
            raise FieldError(f"fem.{op} of an ImplicitField needs {'grad_func' if 'grad' in op else 'div_func'}")
        return Resolved(_implicit_eval(target, domain, self._eval_struct, tuple(self._value_names)))

    def check_domain(self, domain: Any) -> None:
        """Implicit fields evaluate on any domain of the same geometry (or of a deformed copy of it)."""
        if domain.geometry is not self.geometry and getattr(domain.geometry, "base", None) is not self.geometry:
            super().check_domain(domain)


def _generic(t: Any) -> bool:
    from ...types.typesys import contains_any

    return contains_any(t)


def _implicit_eval(func: Any, domain: Any, EvalArg: Any, names: tuple[str, ...]) -> Any:
    key = ("implicit", func.key, id(func), domain.element_kind, id(domain.geometry._funcs), EvalArg.key)

    def make() -> Any:
        FieldArg = field_arg_struct(domain, EvalArg)
        position = domain.funcs.element_position
        args = ", ".join(f"fa.eval_arg.{n}" for n in names)
        call = f"_func(_position(fa.elt_arg, s){', ' + args if args else ''})"
        text = f"def implicit_eval(fa: FieldArg, s: Any):\n    return {call}\n"
        ns = {"FieldArg": FieldArg, "_position": position, "_func": func, "Any": Any,
              "__name__": codegen.GEN_MODULE}
        codegen.exec_source(text, f"implicit {codegen.digest(key)}", ns)
        return codegen.func(ns["implicit_eval"], *key[:1], func.key, EvalArg.key, FieldArg.key)

    return _memo(key, make)


class UniformField(_DomainField):
    """A constant field.

    Args:
        domain: where the field is defined.
        value: its value (a scalar, vector or matrix; Python floats become ``wp.float32``).

    """

    def __init__(self, domain: Any, value: Any) -> None:
        super().__init__(domain)
        self.dtype = _value_type(value)
        self.value = self.dtype(value) if not isinstance(value, self.dtype) else value
        self._eval_struct = codegen.struct("UniformFieldArg", {"value": self.dtype}, codegen.type_key(self.dtype))

    @property
    def name(self) -> str:
        """``Uniform_<type>``."""
        return f"Uniform_{codegen.type_key(self.dtype)}"

    @property
    def EvalArg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct holding the value."""
        return self._eval_struct

    def eval_arg_value(self, device: Any = None) -> Any:
        """The value as a struct."""
        arg = self._eval_struct()
        arg.value = self.value
        return arg

    @property
    def gradient_dtype(self) -> Any:
        """Gradient type of the value."""
        return gradient_type(self.dtype, self.geometry.dimension)

    @property
    def divergence_dtype(self) -> Any:
        """Divergence type of the value."""
        return divergence_type(self.dtype)

    def check_domain(self, domain: Any) -> None:
        """Uniform fields evaluate on any domain."""

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """The value; zero gradients and divergences."""
        if op == "degree":
            return Resolved(0, static=True)
        if op == "scalar_type":
            return Resolved(domain.geometry.scalar_type, static=True)
        key = ("uniform", op, self._eval_struct.key, id(domain.geometry._funcs), domain.element_kind)

        def make() -> Any:
            FieldArg = field_arg_struct(domain, self._eval_struct)
            if op in ("inner", "outer"):
                def uniform_value(fa: FieldArg, s: Any):
                    return fa.eval_arg.value
                return codegen.func(uniform_value, *key, FieldArg.key)
            if op in ("grad", "grad_outer", "div", "div_outer"):
                t = gradient_type(self.dtype, domain.geometry.dimension) if "grad" in op else divergence_type(
                    self.dtype)
                if t is None:
                    raise FieldError(f"fem.{op}: a uniform {codegen.type_key(self.dtype)} field has none")
                T = t
                if getattr(T, "_shape_", None) is None:
                    def uniform_zero(fa: FieldArg, s: Any) -> T:
                        return T(0.0)
                else:
                    def uniform_zero(fa: FieldArg, s: Any) -> T:
                        return T()
                return codegen.func(uniform_zero, *key, FieldArg.key)
            raise FieldError(f"uniform fields do not support fem.{op}")

        return Resolved(_memo(key, make))


class NonconformingField(_DomainField):
    """A discrete field of one geometry evaluated on another, by looking up each sample's position.

    Args:
        domain: where the field is evaluated (any geometry).
        field: a :class:`DiscreteField` (of the other geometry).
        background: value where the position falls outside ``field``'s geometry (where gradients and divergences
            are zero).

    """

    def __init__(self, domain: Any, field: Any, background: Any = 0.0) -> None:
        super().__init__(domain)
        from .discrete import DiscreteField

        if not isinstance(field, DiscreteField):
            raise TypeError(f"NonconformingField: field must be a DiscreteField, got {type(field).__name__}")
        envs = [getattr(g, "environment_count", lambda: 1)() for g in (self.domain.geometry, field.geometry)]
        if envs[0] != envs[1]:
            raise ValueError(f"NonconformingField: the domain's and the field's geometries need matching environment "
                             f"counts (a sample is looked up in its own environment), got {envs[0]} and {envs[1]}")
        self.field = field
        self.dtype = field.dtype
        self.background = field.dtype(background) if not isinstance(background, field.dtype) else background
        geo = field.geometry
        self._eval_struct = codegen.struct("NonconformingFieldArg", {
            "cell_arg": geo.CellArg, "eval_arg": field.EvalArg, "background": field.dtype}, field.name)

    @property
    def name(self) -> str:
        """``Nonconforming_<field>``."""
        return f"Nonconforming_{self.field.name}"

    @property
    def degree(self) -> int:
        """The discrete field's degree."""
        return self.field.degree

    @property
    def gradient_dtype(self) -> Any:
        """The discrete field's gradient type."""
        return self.field.gradient_dtype

    @property
    def divergence_dtype(self) -> Any:
        """The discrete field's divergence type."""
        return self.field.divergence_dtype

    @property
    def EvalArg(self) -> Any:  # noqa: N802 - reference attribute name
        """The other geometry's cell argument, the field's argument and the background value."""
        return self._eval_struct

    def eval_arg_value(self, device: Any = None) -> Any:
        """The struct of the field on its own geometry."""
        arg = self._eval_struct()
        arg.cell_arg = self.field.geometry.cell_arg_value(device)
        arg.eval_arg = self.field.eval_arg_value(device)
        arg.background = self.background
        return arg

    def check_domain(self, domain: Any) -> None:
        """Any domain."""

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """Values and gradients of the looked-up field."""
        if op == "degree":
            return Resolved(self.degree, static=True)
        if op == "scalar_type":
            return Resolved(domain.geometry.scalar_type, static=True)
        cell_fn = {"inner": "cell_value", "outer": "cell_value", "grad": "cell_grad", "grad_outer": "cell_grad",
                   "div": "cell_div", "div_outer": "cell_div"}.get(op)
        if cell_fn is None or getattr(self.field._cell, cell_fn, None) is None:
            raise FieldError(f"nonconforming fields do not support fem.{op} here")
        key = ("nonconforming", op, self._eval_struct.key, id(domain.geometry._funcs), domain.element_kind)

        def make() -> Any:
            FieldArg = field_arg_struct(domain, self._eval_struct)
            position = domain.funcs.element_position
            lookup = _sample_lookup(domain, self.field.geometry._funcs)
            closest = self.field.geometry._funcs.cell_closest_point
            measure = self.field.geometry._funcs.cell_measure
            fn = getattr(self.field._cell, cell_fn)
            zero_val = op in ("inner", "outer")
            dim = self.field.geometry.cell_dimension

            def nonconforming(fa: FieldArg, s: Any):
                x = position(fa.elt_arg, s)
                cs = lookup(fa.elt_arg, fa.eval_arg.cell_arg, s, x)
                r = closest(fa.eval_arg.cell_arg, cs.element_index, x)
                size = measure(fa.eval_arg.cell_arg, cs)
                h = wp.pow(type(size)(size), type(size)(1.0 / float(wp.static(dim))))
                v = fn(fa.eval_arg.cell_arg, fa.eval_arg.eval_arg, cs)
                # outside: farther than rounding from the closest cell (points on its boundary are inside), where
                # the field is the constant background (its gradient and divergence vanish)
                if r[1] > type(r[1])(1.0e-6) * type(r[1])(h * h):
                    if wp.static(zero_val):
                        v = fa.eval_arg.background
                    else:
                        v = v - v
                return v

            return codegen.func(nonconforming, *key, FieldArg.key)

        return Resolved(_memo(key, make))


def _sample_lookup(domain: Any, src: Any) -> Any:
    """``(elt_arg, cell_arg, s, x) -> sample``: ``x`` looked up in the source geometry.

    With several environments, the lookup stays in the environment of ``s``.
    """
    dom = domain.geometry._funcs
    multi = getattr(src, "multi_environment", False)
    key = ("nonconforming_lookup", id(dom), id(src), domain.element_kind, multi)

    def make() -> Any:
        if multi:
            env_of = dom.cell_environment if domain.element_kind == ElementKind.CELL else dom.side_environment
            lookup_env = src.cell_lookup_env

            def sample_lookup(elt_arg: Any, cell_arg: Any, s: Any, x: Any):
                return lookup_env(cell_arg, x, env_of(elt_arg, s))
        else:
            lookup = src.cell_lookup

            def sample_lookup(elt_arg: Any, cell_arg: Any, s: Any, x: Any):
                return lookup(cell_arg, x)
        return codegen.func(sample_lookup, "nonconforming_lookup", dom.CellArg.key, src.CellArg.key,
                            int(domain.element_kind.value), multi)

    return _memo(key, make)


__all__ = ["ImplicitField", "NonconformingField", "SimpleNamespace", "UniformField"]
