"""Integrands and operators: the functions ``fem.integrate`` and ``fem.interpolate`` turn into kernels.

An :class:`Integrand` wraps a Python function whose parameters are a :class:`Sample`, fields (annotated
:class:`Field`), domains (:class:`Domain`) and plain values. It is not a kernel function by itself: each
``integrate``/``interpolate`` call specialises it for the fields it is given (see ``integrand_codegen``), replacing
``u(s)``, ``domain(s)`` and operator calls such as ``grad(u, s)`` by calls of the given field's and domain's kernel
functions. An :class:`Operator` is one of those calls: it names what to evaluate, and each field or domain type
provides its implementation.
"""

import inspect
from collections.abc import Callable
from typing import Any

from .types import Domain, Field, Sample


class Integrand:
    """A function of a sample, fields, domains and values, integrated or interpolated by ``treadle.fem``.

    Attributes:
        func: the Python function.
        name: its qualified name.
        module: name of the Python module defining it.
        argspec: its full argument specification.
        kernel_options: options of the kernels generated from it.

    """

    def __init__(self, func: Callable[..., Any], kernel_options: dict[str, Any] | None = None) -> None:
        if not callable(func) or not hasattr(func, "__code__"):
            raise TypeError(f"fem.integrand decorates a Python function, got {type(func).__name__}")
        self.func = func
        self.name = f"{func.__module__}.{func.__qualname__}"
        self.module = func.__module__
        self.argspec = inspect.getfullargspec(func)
        self.kernel_options = dict(kernel_options or {})
        self.cached_kernels: dict[Any, Any] = {}
        self.cached_funcs: dict[Any, Any] = {}
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__wrapped__ = func
        self._params: list[tuple[str, str]] | None = None

    def params(self) -> list[tuple[str, str]]:
        """``(name, kind)`` of each parameter, ``kind`` being ``sample``, ``field``, ``domain`` or ``value``."""
        if self._params is None:
            hints = _annotations(self.func)
            out = []
            for name in self.argspec.args:
                out.append((name, param_kind(hints.get(name, inspect.Parameter.empty))))
            self._params = out
        return self._params

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"integrand '{self.func.__qualname__}' can only be called from another integrand, or passed "
                        "to fem.integrate / fem.interpolate")

    def __repr__(self) -> str:
        return f"<fem.Integrand {self.name}>"


def _annotations(func: Callable[..., Any]) -> dict[str, Any]:
    ann = dict(getattr(func, "__annotations__", {}))
    scope = dict(func.__globals__)
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    for k, v in ann.items():
        if isinstance(v, str):
            try:
                ann[k] = eval(v, scope)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - left as text; reported when the parameter is used
                pass
    return ann


def param_kind(annotation: Any) -> str:
    """What an integrand parameter with this annotation receives."""
    from .types import Sample_f64

    if annotation is Sample or annotation is Sample_f64:
        return "sample"
    if annotation is Field or (isinstance(annotation, type) and issubclass(annotation, Field)):
        return "field"
    if annotation is Domain or (isinstance(annotation, type) and issubclass(annotation, Domain)):
        return "domain"
    return "value"


def integrand(func: Callable[..., Any] | None = None, kernel_options: dict[str, Any] | None = None) -> Any:
    """Decorate a function as an :class:`Integrand`.

    Args:
        func: the function (when used as ``@integrand``).
        kernel_options: options of the kernels generated from it (as ``wp.set_module_options`` takes).

    """
    if func is None:
        return lambda f: Integrand(f, kernel_options)
    return Integrand(func, kernel_options)


class Operator:
    """An operation on a field or domain inside integrands (``grad(u, s)``, ``normal(domain, s)``...).

    Its implementation is provided by the type of its first argument when an integrand is specialised.

    Attributes:
        func: a Python function documenting the operator's signature.
        name: the operator's name.
        attr: what the first argument must be: ``"field"``, ``"domain"`` or ``"any"``.

    """

    def __init__(self, func: Callable[..., Any], attr: str, field_result: Callable[..., Any] | None = None,
                 static: bool = False) -> None:
        self.func = func
        self.name = func.__name__
        self.attr = attr
        self.field_result = field_result
        self.static = static
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__wrapped__ = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"fem.{self.name} can only be used inside a function decorated with @fem.integrand")

    def __repr__(self) -> str:
        return f"<fem.Operator {self.name}>"


def _op(attr: str, static: bool = False, field_result: Callable[..., Any] | None = None) -> Any:
    def wrap(fn: Callable[..., Any]) -> Operator:
        return Operator(fn, attr, field_result=field_result, static=static)

    return wrap


# ---------------------------------------------------------------------------------------------- domain operators
@_op("domain")
def position(domain: Domain, s: Sample) -> Any:
    """World position of the sample ``s`` (also ``domain(s)``)."""


@_op("domain")
def normal(domain: Domain, s: Sample) -> Any:
    """Unit normal at ``s``: out of the inner cell on sides, the surface normal on embedded cells, else zero."""


@_op("domain")
def deformation_gradient(domain: Domain, s: Sample) -> Any:
    """Gradient of the world position with respect to the element's reference coordinates at ``s``."""


@_op("domain")
def measure(domain: Domain, s: Sample) -> Any:
    """Measure (length, area or volume) density of the element at ``s``: integrals sum ``weight * measure``."""


@_op("domain")
def measure_ratio(domain: Domain, s: Sample) -> Any:
    """Ratio of a side's measure to that of its neighbouring cells (the inverse of a length scale; one on cells)."""


@_op("domain")
def lookup(domain: Domain, x: Any, *args: Any) -> Sample:
    """The sample of the cell containing (or closest to) world position ``x``.

    Forms: ``lookup(domain, x)``, ``lookup(domain, x, max_dist)``, ``lookup(domain, x, guess_sample)``,
    ``lookup(domain, x, max_dist, filter_array, filter_target)``.
    """


@_op("domain")
def partition_lookup(domain: Domain, x: Any, *args: Any) -> Sample:
    """Like :func:`lookup`, restricted to the cells of the domain's geometry partition."""


@_op("domain")
def element_coordinates(domain: Domain, element_index: int, x: Any) -> Any:
    """Reference coordinates of world position ``x`` in element ``element_index`` (possibly outside it)."""


@_op("domain")
def element_closest_point(domain: Domain, element_index: int, x: Any) -> Any:
    """``(coords, squared distance)`` of the point of element ``element_index`` closest to ``x``."""


@_op("domain")
def element_index(domain: Domain, domain_element_index: int) -> int:
    """Geometry index of the ``domain_element_index``-th element of the domain."""


@_op("domain")
def element_partition_index(domain: Domain, cell_index: int) -> int:
    """Index of a cell in the domain's geometry partition, or ``NULL_ELEMENT_INDEX``."""


@_op("domain")
def environment_index(domain: Domain, s: Sample) -> int:
    """Environment of the sample (0 on geometries with a single environment)."""


@_op("any", field_result=lambda x: x)
def cells(domain_or_field: Any) -> Any:
    """The cells of a side domain (``lookup(cells(domain), x)``), or the cell-level field of a traced field."""


@_op("any", static=True)
def scalar_type(domain_or_field: Any) -> Any:
    """The geometry's scalar type (``wp.float32`` or ``wp.float64``), usable as a constructor."""


@_op("domain")
def _to_inner_cell(domain: Domain, s: Sample) -> Sample:
    """Implementation of :func:`to_inner_cell`."""


@_op("domain")
def _to_outer_cell(domain: Domain, s: Sample) -> Sample:
    """Implementation of :func:`to_outer_cell`."""


@_op("domain")
def _to_cell_side(domain: Domain, cell_s: Sample, side_index: int) -> Sample:
    """Implementation of :func:`to_cell_side`."""


# ---------------------------------------------------------------------------------------------- field operators
@_op("field")
def inner(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """Value of ``f`` at ``s`` (also ``f(s)``); on sides, seen from the inner cell.

    With ``node_index_in_elt`` (discrete fields), only that element-local node's contribution.
    """


@_op("field")
def outer(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """Value of ``f`` at ``s`` seen from the outer cell of a side (the inner value elsewhere)."""


@_op("field")
def grad(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """World-space gradient of ``f`` at ``s`` (inner cell on sides)."""


@_op("field")
def grad_outer(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """World-space gradient of ``f`` at ``s`` seen from the outer cell."""


@_op("field")
def div(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """Divergence of ``f`` at ``s`` (inner cell on sides)."""


@_op("field")
def div_outer(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """Divergence of ``f`` at ``s`` seen from the outer cell."""


@_op("field", static=True)
def degree(f: Field) -> int:
    """Polynomial degree of ``f`` (a constant)."""


@_op("field")
def at_node(f: Field, s: Sample, node_index_in_elt: Any = None) -> Sample:
    """``s`` moved to an element-local node of ``f`` (the node of the test/trial dof being evaluated)."""


@_op("field")
def node_count(f: Field, s: Sample) -> int:
    """Number of element-local nodes of ``f`` in the element of ``s``."""


@_op("field")
def node_index(f: Field, s: Sample, node_index_in_elt: Any = None) -> int:
    """Space node index of an element-local node of ``f``."""


@_op("field")
def node_partition_index(f: Field, node_index: int) -> int:
    """Partition node index of a space node of a discrete field (``NULL_NODE_INDEX`` outside the partition)."""


@_op("field")
def node_inner_weight(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """Weight (basis function value) at ``s`` of an element-local node of ``f``, inner cell."""


@_op("field")
def node_outer_weight(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """Weight at ``s`` of an element-local node of ``f``, outer cell."""


@_op("field")
def node_inner_weight_gradient(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """World gradient at ``s`` of an element-local node's weight, inner cell."""


@_op("field")
def node_outer_weight_gradient(f: Field, s: Sample, node_index_in_elt: Any = None) -> Any:
    """World gradient at ``s`` of an element-local node's weight, outer cell."""


# ---------------------------------------------------------------------------------------------- composite integrands
def _composites() -> dict[str, Integrand]:
    from . import linalg

    def D(f: Field, s: Sample):  # noqa: N802 - reference name
        """Symmetric part of the (inner) gradient of ``f`` at ``s``."""
        return linalg.symmetric_part(grad(f, s))

    def curl(f: Field, s: Sample):
        """Skew part of the (inner) gradient of ``f`` as a vector ``w`` with ``cross(w, v) = skew(grad f) v``.

        In 2D, the scalar ``(dv/dx - du/dy) / 2``.
        """
        return linalg.skew_vector(grad(f, s))

    def jump(f: Field, s: Sample):
        """Inner minus outer value of ``f`` on an interior side (zero on cells and boundary sides)."""
        return inner(f, s) - outer(f, s)

    def average(f: Field, s: Sample):
        """Mean of the inner and outer values of ``f`` (the value on cells and boundary sides)."""
        return 0.5 * (inner(f, s) + outer(f, s))

    def grad_jump(f: Field, s: Sample):
        """Inner minus outer gradient of ``f`` on an interior side."""
        return grad(f, s) - grad_outer(f, s)

    def grad_average(f: Field, s: Sample):
        """Mean of the inner and outer gradients of ``f``."""
        return 0.5 * (grad(f, s) + grad_outer(f, s))

    def to_inner_cell(domain: Domain, s: Sample) -> Sample:
        """The sample of the side sample ``s`` in the side's inner cell."""
        return _to_inner_cell(domain, s)

    def to_outer_cell(domain: Domain, s: Sample) -> Sample:
        """The sample of the side sample ``s`` in the side's outer cell."""
        return _to_outer_cell(domain, s)

    def to_cell_side(domain: Domain, cell_s: Sample, side_index: int) -> Sample:
        """The cell sample ``cell_s`` as a sample of side ``side_index`` (coordinates ``OUTSIDE`` if not on it)."""
        return _to_cell_side(domain, cell_s, side_index)

    return {f.__name__: Integrand(f) for f in (D, curl, jump, average, grad_jump, grad_average, to_inner_cell,
                                               to_outer_cell, to_cell_side)}


_C = _composites()
D = _C["D"]
curl = _C["curl"]
jump = _C["jump"]
average = _C["average"]
grad_jump = _C["grad_jump"]
grad_average = _C["grad_average"]
to_inner_cell = _C["to_inner_cell"]
to_outer_cell = _C["to_outer_cell"]
to_cell_side = _C["to_cell_side"]
del _C

__all__ = ["D", "Integrand", "Operator", "at_node", "average", "cells", "curl", "deformation_gradient", "degree",
           "div", "div_outer", "element_closest_point", "element_coordinates", "element_index",
           "element_partition_index", "environment_index", "grad", "grad_average", "grad_jump", "grad_outer",
           "inner", "integrand", "jump", "lookup", "measure", "measure_ratio", "node_count", "node_index",
           "node_inner_weight", "node_inner_weight_gradient", "node_outer_weight", "node_outer_weight_gradient",
           "node_partition_index", "normal", "outer", "partition_lookup", "position", "scalar_type",
           "to_cell_side", "to_inner_cell", "to_outer_cell"]
