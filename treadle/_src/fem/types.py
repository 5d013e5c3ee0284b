"""The value types of integrands: samples, coordinates, index types and the argument tags.

A :class:`Sample` is the point an integrand is evaluated at: an element of the integration domain, coordinates in
that element's reference shape, the quadrature point's index and weight, and (for linear and bilinear forms) the
element-local degrees of freedom of the test and trial functions being evaluated.

Reference coordinates (:data:`Coords`, always three components; unused ones are zero):

- segments ``(t, 0, 0)``, squares ``(x, y, 0)``, cubes ``(x, y, z)``, each in ``[0, 1]``;
- triangles: barycentric ``(l0, l1, l2)`` (summing to one) of the vertices;
- tetrahedra: ``(l1, l2, l3)``, the barycentric weights of vertices 1, 2, 3 (``l0 = 1 - l1 - l2 - l3``).
"""

import enum
from typing import Any

import treadle as wp

#: Coordinates of a point in an element's reference shape.
Coords = wp.vec3f
#: Reference coordinates in double precision (geometries with ``scalar_type=wp.float64``).
Coords_f64 = wp.vec3d
#: Index of an element (cell or side) in a geometry.
ElementIndex = int
#: Index of a node in a function space.
NodeIndex = int
#: Index of a quadrature point.
QuadraturePointIndex = int

#: An element index meaning "no element" (a failed lookup, a boundary side's missing outer cell).
NULL_ELEMENT_INDEX = -1
#: A quadrature point index meaning "no quadrature point".
NULL_QP_INDEX = -1
#: A node index meaning "no node" (a node outside a space partition).
NULL_NODE_INDEX = 2147483647
#: Reference-coordinate value marking a point outside an element (``Coords(OUTSIDE)``).
OUTSIDE = -1.0e8
#: A degree-of-freedom index meaning "not a test/trial evaluation" (``Sample.test_dof``, ``Sample.trial_dof``).
NULL_DOF_INDEX = -1


class ElementKind(enum.Enum):
    """Whether the elements of a domain are the cells of a geometry or their sides."""

    CELL = 0
    SIDE = 1


@wp.struct
class Sample:
    """A point at which an integrand is evaluated.

    Attributes:
        element_index: index of the element in the geometry (a cell, or a side for side domains).
        element_coords: reference coordinates of the point in the element.
        qp_index: index of the quadrature point (``NULL_QP_INDEX`` when not at a quadrature point).
        qp_weight: the quadrature weight (in reference measure).
        test_dof: element-local degree of freedom of the test function being evaluated.
        trial_dof: element-local degree of freedom of the trial function being evaluated.

    """

    element_index: int
    element_coords: wp.vec3f
    qp_index: int
    qp_weight: wp.float32
    test_dof: int
    trial_dof: int


@wp.struct
class Sample_f64:  # noqa: N801 - the reference API's name
    """A :class:`Sample` with double-precision coordinates and weight (geometries with ``scalar_type=wp.float64``).

    Attributes:
        element_index: index of the element in the geometry.
        element_coords: reference coordinates of the point in the element.
        qp_index: index of the quadrature point.
        qp_weight: the quadrature weight.
        test_dof: element-local test degree of freedom.
        trial_dof: element-local trial degree of freedom.

    """

    element_index: int
    element_coords: wp.vec3d
    qp_index: int
    qp_weight: wp.float64
    test_dof: int
    trial_dof: int


def sample_type(scalar: Any) -> Any:
    """The sample struct of a scalar type (:class:`Sample` or :class:`Sample_f64`)."""
    return Sample_f64 if scalar is wp.float64 else Sample


def coords_type(scalar: Any) -> Any:
    """The coordinates vector of a scalar type."""
    return wp.vec3d if scalar is wp.float64 else wp.vec3f


@wp.func
def make_free_sample(element_index: int, element_coords: wp.vec3f) -> Sample:
    """A :class:`Sample` at given element coordinates, not at any quadrature point and not evaluating test/trial dofs.

    Args:
        element_index: the element.
        element_coords: reference coordinates in that element.

    """
    s = Sample()
    s.element_index = element_index
    s.element_coords = element_coords
    s.qp_index = NULL_QP_INDEX
    s.qp_weight = wp.float32(0.0)
    s.test_dof = NULL_DOF_INDEX
    s.trial_dof = NULL_DOF_INDEX
    return s


@wp.func
def make_free_sample(element_index: int, element_coords: wp.vec3d) -> Sample_f64:  # noqa: F811 - overload
    """A double-precision free sample."""
    s = Sample_f64()
    s.element_index = element_index
    s.element_coords = element_coords
    s.qp_index = NULL_QP_INDEX
    s.qp_weight = wp.float64(0.0)
    s.test_dof = NULL_DOF_INDEX
    s.trial_dof = NULL_DOF_INDEX
    return s


class Field:
    """Annotation of an integrand parameter that receives a field.

    At :func:`~treadle.fem.integrate` / :func:`~treadle.fem.interpolate` time the parameter takes the field passed
    under its name in ``fields=``: a :class:`DiscreteField`, a test or trial field, an :class:`ImplicitField`, a
    :class:`UniformField`, a :class:`NonconformingField`... Inside the integrand, ``f(s)`` evaluates it and the
    operators (``grad(f, s)``, ``div(f, s)``...) differentiate it.
    """


class Domain:
    """Annotation of an integrand parameter that receives the integration domain.

    Inside the integrand, ``domain(s)`` is the world position of the sample and the operators (``normal``,
    ``measure``, ``lookup``...) query the geometry.
    """
