"""The field interface: what integrand parameters annotated ``fem.Field`` receive.

A field gives kernels a struct argument (``EvalArg``, bundled with the integration domain's element argument into
``{elt_arg, eval_arg}``) and implementations of the operators (:meth:`FieldLike.resolve`): ``inner``, ``outer``,
``grad``, ``div``... For every operator call in an integrand, the field returns a kernel function taking the field
argument and the operator's other arguments, or a constant (``degree``).
"""

from dataclasses import dataclass
from typing import Any

import treadle as wp

from ..types import ElementKind


class FieldError(TypeError):
    """A field cannot provide what an integrand asks of it (an operator, a domain)."""


@dataclass
class Resolved:
    """What an operator call in an integrand becomes.

    Attributes:
        value: a kernel function (called with the call's arguments, the field argument first) or a constant.
        static: whether ``value`` is a constant that replaces the whole call.
        result: for calls returning a field or domain (``cells(domain)``), that field or domain.

    """

    value: Any
    static: bool = False
    result: Any = None


class FieldLike:
    """Base class of everything an integrand's ``fem.Field`` parameter accepts."""

    #: the value type, gradient type and divergence type of the field
    dtype: Any = None

    @property
    def name(self) -> str:
        """A name describing the field's kind (part of generated kernel names)."""
        raise NotImplementedError

    @property
    def geometry(self) -> Any:
        """The geometry the field lives on (``None`` for fields that evaluate anywhere)."""
        return None

    @property
    def degree(self) -> int:
        """Polynomial degree used to choose a default quadrature."""
        return 0

    @property
    def gradient_dtype(self) -> Any:
        """Type of the field's gradient (``None`` when not defined)."""
        return None

    @property
    def divergence_dtype(self) -> Any:
        """Type of the field's divergence (``None`` when not defined)."""
        return None

    def field_arg_type(self, domain: Any) -> Any:
        """Struct type of the integrand argument on ``domain``."""
        raise NotImplementedError

    def field_arg_value(self, domain: Any, device: Any) -> Any:
        """The integrand argument on ``domain``."""
        raise NotImplementedError

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """The implementation of operator ``op`` (called with ``nargs`` arguments, the field included)."""
        raise FieldError(f"{type(self).__name__} does not support fem.{op}")

    def check_domain(self, domain: Any) -> None:
        """Raise if the field cannot be evaluated on ``domain``."""
        geo = self.geometry
        if geo is not None and domain.geometry is not geo:
            raise FieldError(f"{self.name} is defined on geometry {geo.name} (id {id(geo):#x}) but the domain is on "
                             f"{domain.geometry.name} (id {id(domain.geometry):#x}): evaluate a field on another "
                             "geometry through fem.NonconformingField")

    def __str__(self) -> str:
        return self.name


class GeometryField(FieldLike):
    """Base class of fields attached to a geometry (whose values may also deform it)."""

    def make_deformed_geometry(self, relative: bool = True) -> Any:
        """The geometry whose positions are this field's values (``relative``: the original positions plus them)."""
        from ..geometry.deformed import DeformedGeometry

        return DeformedGeometry(self, relative=relative)


def element_kind_name(domain: Any) -> str:
    """``Cells`` or ``Sides``."""
    return "Cells" if domain.element_kind == ElementKind.CELL else "Sides"


__all__ = ["FieldError", "FieldLike", "GeometryField", "Resolved", "wp"]
