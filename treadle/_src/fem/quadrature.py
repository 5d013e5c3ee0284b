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


class NodalQuadrature(Quadrature):
    """The nodes of a function space as quadrature points, with the space's nodal weights.

    Unlike ``assembly="nodal"``, this makes no assumption on the integrand: it is evaluated at every node of every
    element. On side domains, the nodes of the neighbouring cells that lie on the side are the points.

    Args:
        domain: the domain.
        space: a function space (its basis is used).
        basis_space: a basis space, instead of ``space``.
        space_partition: the partition whose nodes are visited (that of the domain's geometry partition by default);
            point indices are space node numbers.

    """

    def __init__(self, domain: GeometryDomain, space: Any = None, basis_space: Any = None,
                 space_partition: Any = None) -> None:
        super().__init__(domain)
        from .field.virtual import TestField
        from .space.function_space import make_collocated_function_space
        from .space.partition import make_space_partition

        if space is None:
            if basis_space is None:
                raise TypeError("NodalQuadrature needs a space or a basis_space")
            space = make_collocated_function_space(basis_space, dtype=domain.geometry.scalar_type)
        if space_partition is None:
            space_partition = make_space_partition(space_topology=space.topology,
                                                   geometry_partition=domain.geometry_partition)
        self.space = space
        self.space_partition = space_partition
        self._test = TestField(space, space_partition, domain)
        self.funcs = _nodal_quadrature_funcs(self._test, domain)

    @property
    def name(self) -> str:
        """``Nodal_<space>``."""
        return f"Nodal_{self.space.name}"

    def max_points_per_element(self) -> int:
        """Nodes per element (twice on sides)."""
        return self.space.topology.MAX_NODES_PER_ELEMENT * (2 if self.domain.element_kind.value else 1)

    def total_point_count(self) -> int:
        """Nodes of the space (point indices are space node numbers)."""
        return self.space.node_count()

    def fill_arg(self, arg: Any, device: Any) -> None:
        """The space's topology and partition."""
        v = self._test.eval_arg_value(device)
        arg.topo_arg = v.topo_arg
        arg.partition_arg = v.partition_arg


_NODAL: dict[tuple[Any, ...], SimpleNamespace] = {}


def _nodal_quadrature_funcs(test: Any, domain: GeometryDomain) -> SimpleNamespace:
    from .field.nodal_funcs import basis_domain_funcs
    from .nodal import nodal_funcs

    key = (id(test._cell), domain.element_kind, id(domain.geometry._funcs))
    f = _NODAL.get(key)
    if f is not None:
        return f
    dom = basis_domain_funcs(test._cell, domain, "test_dof", test.space)
    nf = nodal_funcs(test, domain)
    FieldArg = dom.FieldArg
    Arg = test._cell.EvalArg
    count = dom.element_node_count
    snode = dom.element_space_node
    ncoords = nf.node_coords
    nweight = nf.node_weight
    S = domain.geometry.scalar_type
    Coords = coords_type(S)
    fkey = ("nodal_quadrature", FieldArg.key)

    def _f(fn: Any) -> Any:
        return codegen.func(fn, *fkey)

    @_f
    def field_arg(elt_arg: Any, qp_arg: Arg) -> FieldArg:
        fa = FieldArg()
        fa.elt_arg = elt_arg
        fa.eval_arg = qp_arg
        return fa

    @_f
    def point_count(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int) -> int:
        return count(field_arg(elt_arg, qp_arg), element)

    @_f
    def point_coords(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> Coords:
        c = ncoords(field_arg(elt_arg, qp_arg), element, q)
        if c[0] <= S(-1.0e7):
            return Coords(S(0.25))
        return c

    @_f
    def point_weight(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> S:
        fa = field_arg(elt_arg, qp_arg)
        c = ncoords(fa, element, q)
        if c[0] <= S(-1.0e7):
            return S(0.0)
        return nweight(fa, element, q)

    @_f
    def point_index(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> int:
        # the node's space number (fem.node_partition_index gives its number in a field's partition)
        return snode(field_arg(elt_arg, qp_arg), element, q)

    f = SimpleNamespace(Arg=Arg, point_count=point_count, point_coords=point_coords, point_weight=point_weight,
                        point_index=point_index)
    _NODAL[key] = f
    return f
