"""Function spaces: a basis space whose nodes carry values of a type (scalars, vectors, matrices)."""

from typing import Any

import treadle as wp

from ..polynomial import Polynomial
from .basis_space import BasisSpace, make_polynomial_basis_space
from .dof_mapper import DofMapper, IdentityMapper, is_matrix_type, is_vector_type, type_length
from .shape.base import ElementBasis


def _scalar_of(t: Any) -> Any:
    return getattr(t, "_wp_scalar_type_", t)


class FunctionSpace:
    """Base class of function spaces.

    Attributes:
        basis: the basis space.
        topology: the basis space's topology.
        geometry: the geometry.
        dtype: type of the values of the space's functions.
        dof_mapper: how node values (dofs) map to values.

    """

    def __init__(self, basis: BasisSpace, dtype: Any, dof_mapper: DofMapper) -> None:
        self.basis = basis
        self.topology = basis.topology
        self.geometry = basis.geometry
        self.dtype = dtype
        self.dof_mapper = dof_mapper

    @property
    def name(self) -> str:
        """A name describing the space (part of generated kernel names)."""
        return f"{self.basis.name}_{_type_name(self.dtype)}_{self.dof_mapper.name}"

    @property
    def dof_dtype(self) -> Any:
        """Type of the values stored per node (a Treadle type: a mapper's Python ``float`` is ``wp.float32``)."""
        d = self.dof_mapper.dof_dtype
        return wp.float32 if d is float else d

    @property
    def degree(self) -> int:
        """Polynomial degree of the basis."""
        return self.basis.ORDER

    @property
    def ORDER(self) -> int:  # noqa: N802 - reference attribute name
        """Polynomial degree of the basis."""
        return self.basis.ORDER

    @property
    def NODE_DOF_COUNT(self) -> int:  # noqa: N802
        """Scalars stored per node."""
        return self.dof_mapper.DOF_SIZE

    @property
    def VALUE_DOF_COUNT(self) -> int:  # noqa: N802
        """Scalars per value."""
        return type_length(self.dtype)

    @property
    def dimension(self) -> int:
        """World dimension of the geometry."""
        return self.geometry.dimension

    @property
    def scalar_type(self) -> Any:
        """Scalar type of the values."""
        return _scalar_of(self.dtype)

    def node_count(self) -> int:
        """Number of nodes."""
        return self.basis.node_count()

    def node_positions(self, out: Any = None, device: Any = None) -> Any:
        """World positions of the nodes."""
        return self.basis.node_positions(out=out, device=device)

    def node_triangulation(self) -> Any:
        """Triangles or tetrahedra of nodes covering the geometry (for plotting)."""
        return self.basis.node_triangulation()

    @property
    def gradient_dtype(self) -> Any:
        """Type of the spatial gradient of values (``None`` when not defined)."""
        S = self.scalar_type
        D = self.geometry.dimension
        if is_matrix_type(self.dtype):
            return None
        if is_vector_type(self.dtype):
            return wp.types.matrix(shape=(self.dtype._length_, D), dtype=S)
        return wp.types.vector(D, S)

    @property
    def divergence_dtype(self) -> Any:
        """Type of the divergence of values (``None`` for scalars)."""
        S = self.scalar_type
        if is_matrix_type(self.dtype):
            return wp.types.vector(self.dtype._shape_[0], S)
        if is_vector_type(self.dtype):
            return S
        return None

    def gradient_valid(self) -> bool:
        """Whether ``grad`` applies to this space's functions."""
        return self.gradient_dtype is not None

    def divergence_valid(self) -> bool:
        """Whether ``div`` applies (vector values of the geometry's dimension, or matrices)."""
        if is_vector_type(self.dtype):
            return self.dtype._length_ == self.geometry.dimension
        return is_matrix_type(self.dtype)

    def make_field(self, space_partition: Any = None) -> Any:
        """A :class:`DiscreteField` on this space (values zero)."""
        from ..field.discrete import make_discrete_field

        return make_discrete_field(self, space_partition=space_partition)

    def __str__(self) -> str:
        return self.name


class CollocatedFunctionSpace(FunctionSpace):
    """Values of ``dtype`` attached to every node of a scalar basis (the usual nodal space)."""


class VectorValuedFunctionSpace(FunctionSpace):
    """Vector values from a vector-valued basis (Nedelec, Raviart-Thomas): one scalar dof per node.

    A basis function's world value is its reference vector mapped by the covariant Piola map ``F^-T`` (``value ==
    "covariant"``, tangential components continuous) or the contravariant one ``F / |F|`` (``"contravariant"``,
    normal components continuous), times its node's orientation sign.
    """

    def __init__(self, basis: BasisSpace) -> None:
        S = basis.geometry.scalar_type
        dtype = wp.types.vector(basis.geometry.dimension, S)
        super().__init__(basis, dtype, IdentityMapper(S))

    @property
    def value(self) -> str:
        """``covariant`` or ``contravariant``."""
        return self.basis.value


class CovariantFunctionSpace(VectorValuedFunctionSpace):
    """Values of an H(curl)-conforming basis (covariant Piola map)."""


class ContravariantFunctionSpace(VectorValuedFunctionSpace):
    """Values of an H(div)-conforming basis (contravariant Piola map)."""


def make_covariant_function_space(basis_space: BasisSpace) -> CovariantFunctionSpace:
    """A function space of the covariant vector-valued ``basis_space`` (e.g. Nedelec)."""
    if getattr(basis_space, "value", "scalar") != "covariant":
        raise ValueError("make_covariant_function_space: the basis space is not covariant vector-valued")
    return CovariantFunctionSpace(basis_space)


def make_contravariant_function_space(basis_space: BasisSpace) -> ContravariantFunctionSpace:
    """A function space of the contravariant vector-valued ``basis_space`` (e.g. Raviart-Thomas)."""
    if getattr(basis_space, "value", "scalar") != "contravariant":
        raise ValueError("make_contravariant_function_space: the basis space is not contravariant vector-valued")
    return ContravariantFunctionSpace(basis_space)


def _vector_space(basis: BasisSpace, dtype: Any, dof_mapper: DofMapper | None) -> VectorValuedFunctionSpace:
    space = (CovariantFunctionSpace if basis.value == "covariant" else ContravariantFunctionSpace)(basis)
    if dof_mapper is not None:
        raise ValueError(f"{basis.name}: vector-valued bases store one scalar per node and take no dof_mapper")
    if dtype is not None and dtype is not float and is_vector_type(dtype) and dtype._length_ != space.dtype._length_:
        raise ValueError(f"{basis.name}: values are vectors of length {space.dtype._length_} (the geometry's "
                         f"dimension), got dtype {_type_name(dtype)}")
    return space


def _type_name(t: Any) -> str:
    return getattr(t, "__name__", str(t))


def make_collocated_function_space(basis_space: BasisSpace, dtype: Any = None,
                                   dof_mapper: DofMapper | None = None) -> CollocatedFunctionSpace:
    """A function space with values of ``dtype`` at every node of ``basis_space``.

    Args:
        basis_space: the scalar basis.
        dtype: value type (scalar, vector or matrix; ``float`` means ``wp.float32``).
        dof_mapper: how values are stored (the identity by default; the mapper's value type wins).

    """
    if getattr(basis_space, "value", "scalar") != "scalar":
        return _vector_space(basis_space, dtype, dof_mapper)
    if dtype is None:
        dtype = basis_space.geometry.scalar_type
    if dtype is float:
        dtype = wp.float32
    if dof_mapper is None:
        dof_mapper = IdentityMapper(dtype)
    else:
        dtype = dof_mapper.value_dtype
    return CollocatedFunctionSpace(basis_space, dtype, dof_mapper)


def make_polynomial_space(geo: Any, dtype: Any = None, dof_mapper: DofMapper | None = None, degree: int = 1,
                          element_basis: ElementBasis | None = None, discontinuous: bool = False,
                          family: Polynomial | None = None) -> CollocatedFunctionSpace:
    """A piecewise-polynomial function space on a geometry.

    Args:
        geo: the geometry.
        dtype: value type (scalar, vector or matrix; ``float`` means ``wp.float32``; the geometry's scalar type
            by default).
        dof_mapper: how values are stored (the identity by default).
        degree: polynomial degree.
        element_basis: kind of basis (Lagrange by default).
        discontinuous: whether nodes are owned by single cells.
        family: point family of tensor-product Lagrange nodes.

    """
    basis = make_polynomial_basis_space(geo, degree=degree, element_basis=element_basis,
                                        discontinuous=discontinuous, family=family)
    if basis.value != "scalar":
        return _vector_space(basis, dtype, dof_mapper)
    if dtype is None:
        dtype = geo.scalar_type
    return make_collocated_function_space(basis, dtype=dtype, dof_mapper=dof_mapper)
