"""Quadrature formulas over domains: which points of each element an integral samples, with which weights.

A quadrature gives kernels, for each domain element, ``point_count(elt_arg, qp_arg, domain_element, element)``
points with reference coordinates ``point_coords(...)``, weights ``point_weight(...)`` (fractions of the
element's reference measure) and a global index ``point_index(...)``.
"""

from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .domain import GeometryDomain
from .element import element_quadrature
from .polynomial import Polynomial
from .types import coords_type


class Quadrature:
    """Base class of quadrature formulas.

    Attributes:
        domain: the domain integrated over.

    """

    def __init__(self, domain: GeometryDomain) -> None:
        if not isinstance(domain, GeometryDomain):
            raise TypeError(f"a quadrature needs a domain (fem.Cells, fem.Sides...), got {type(domain).__name__}")
        self.domain = domain
        self._args: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """A name describing the formula's kind (part of generated kernel names)."""
        raise NotImplementedError

    @property
    def Arg(self) -> Any:  # noqa: N802 - reference attribute name
        """Struct type of the quadrature's kernel argument."""
        return self.funcs.Arg

    def arg_value(self, device: Any = None) -> Any:
        """The quadrature's kernel argument on ``device``."""
        key = str(wp.get_device(device))
        v = self._args.get(key)
        if v is None:
            v = self.Arg()
            self.fill_arg(v, wp.get_device(device))
            self._args[key] = v
        return v

    def fill_arg(self, arg: Any, device: Any) -> None:
        """Fill the kernel argument."""
        raise NotImplementedError

    def max_points_per_element(self) -> int:
        """The most points an element has."""
        raise NotImplementedError

    def total_point_count(self) -> int:
        """Number of points over the whole domain (the range of ``point_index``)."""
        raise NotImplementedError

    def evaluation_point_count(self) -> int:
        """Number of distinct evaluation points (the range of ``point_index``)."""
        return self.total_point_count()

    def __getattr__(self, name: str) -> Any:
        if name in ("point_count", "point_coords", "point_weight", "point_index"):
            funcs = self.__dict__.get("funcs")
            if funcs is not None:
                return getattr(funcs, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class RegularQuadrature(Quadrature):
    """The same rule on every element: exact for polynomials up to degree ``order`` on the reference element.

    Args:
        domain: the domain.
        order: polynomial degree integrated exactly.
        family: point family of tensor-product rules (Gauss-Legendre by default).

    """

    def __init__(self, domain: GeometryDomain, order: int, family: Polynomial | None = None) -> None:
        super().__init__(domain)
        self.order = int(order)
        self.family = Polynomial.GAUSS_LEGENDRE if family is None else Polynomial(family)
        pts, w = element_quadrature(domain.reference_element(), self.order, self.family)
        self._points = pts
        self._weights = w
        self.funcs = _regular_funcs(domain.geometry.scalar_type)

    @property
    def name(self) -> str:
        """``Regular``."""
        return "Regular"

    @property
    def points(self) -> np.ndarray:
        """Reference coordinates of the rule's points, ``(n, 3)``."""
        return self._points

    @property
    def weights(self) -> np.ndarray:
        """Weights of the rule's points."""
        return self._weights

    def max_points_per_element(self) -> int:
        """The rule's size."""
        return len(self._weights)

    def total_point_count(self) -> int:
        """Elements times the rule's size."""
        return self.domain.element_count() * len(self._weights)

    def fill_arg(self, arg: Any, device: Any) -> None:
        """The rule's points and weights."""
        S = self.domain.geometry.scalar_type
        arg.points = wp.array(self._points, dtype=coords_type(S), device=device)
        arg.weights = wp.array(self._weights, dtype=S, device=device)


_REGULAR: dict[Any, SimpleNamespace] = {}


def _regular_funcs(S: Any) -> SimpleNamespace:
    f = _REGULAR.get(S)
    if f is not None:
        return f
    Coords = coords_type(S)
    Arg = codegen.struct("RegularQuadratureArg", {"points": wp.array(dtype=Coords), "weights": wp.array(dtype=S)},
                         codegen.type_key(S))
    key = ("regular", codegen.type_key(S))

    def point_count(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int) -> int:
        return qp_arg.weights.shape[0]

    def point_coords(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> Coords:
        return qp_arg.points[q]

    def point_weight(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> S:
        return qp_arg.weights[q]

    def point_index(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> int:
        return domain_element * qp_arg.weights.shape[0] + q

    f = SimpleNamespace(Arg=Arg, **{fn.__name__: codegen.func(fn, *key) for fn in (
        point_count, point_coords, point_weight, point_index)})
    _REGULAR[S] = f
    return f


class ExplicitQuadrature(Quadrature):
    """Points and weights given per element: row ``i`` of ``points``/``weights`` for the ``i``-th domain element.

    Args:
        domain: the domain.
        points: ``(element_count, n)`` array of reference coordinates (:data:`Coords`).
        weights: ``(element_count, n)`` array of weights.

    """

    def __init__(self, domain: GeometryDomain, points: Any, weights: Any) -> None:
        super().__init__(domain)
        if points.ndim != 2 or weights.ndim != 2 or tuple(points.shape) != tuple(weights.shape):
            raise ValueError("ExplicitQuadrature: points and weights must be 2D arrays of the same shape, got "
                             f"{tuple(points.shape)} and {tuple(weights.shape)}")
        if points.shape[0] != domain.element_count():
            raise ValueError(f"ExplicitQuadrature: {points.shape[0]} rows of points for {domain.element_count()} "
                             "domain elements")
        self._point_array = points
        self._weight_array = weights
        self.funcs = _explicit_funcs(points.dtype, weights.dtype)

    @property
    def name(self) -> str:
        """``Explicit``."""
        return "Explicit"

    def max_points_per_element(self) -> int:
        """Columns of the arrays."""
        return int(self._point_array.shape[1])

    def total_point_count(self) -> int:
        """Entries of the arrays."""
        return int(self._point_array.shape[0] * self._point_array.shape[1])

    def fill_arg(self, arg: Any, device: Any) -> None:
        """The arrays."""
        arg.points = self._point_array.to(device)
        arg.weights = self._weight_array.to(device)


_EXPLICIT: dict[Any, SimpleNamespace] = {}


def _explicit_funcs(coords: Any, S: Any) -> SimpleNamespace:
    f = _EXPLICIT.get((coords, S))
    if f is not None:
        return f
    Arg = codegen.struct("ExplicitQuadratureArg", {"points": wp.array2d(dtype=coords),
                                                   "weights": wp.array2d(dtype=S)}, codegen.type_key(S))
    key = ("explicit", codegen.type_key(coords), codegen.type_key(S))

    def point_count(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int) -> int:
        return qp_arg.points.shape[1]

    def point_coords(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> coords:
        return qp_arg.points[domain_element, q]

    def point_weight(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> S:
        return qp_arg.weights[domain_element, q]

    def point_index(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> int:
        return domain_element * qp_arg.points.shape[1] + q

    f = SimpleNamespace(Arg=Arg, **{fn.__name__: codegen.func(fn, *key) for fn in (
        point_count, point_coords, point_weight, point_index)})
    _EXPLICIT[(coords, S)] = f
    return f
