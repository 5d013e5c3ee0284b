"""Finite elements: geometries, function spaces, fields, integrands and the assembly of linear systems.

The ``warp.fem`` module of the reference API. Write the weak form of a problem as ``@integrand`` functions of a
:class:`Sample`, fields and domains; :func:`integrate` assembles them over a domain into numbers, vectors or
:class:`treadle.sparse.BsrMatrix` matrices, and :func:`interpolate` evaluates them at nodes or quadrature points.
Everything runs as Treadle kernels specialised for the fields given, and is differentiable through a
:class:`treadle.Tape`.
"""

from __future__ import annotations

from .._src.fem.cache import Temporary as Temporary
from .._src.fem.cache import TemporaryStore as TemporaryStore
from .._src.fem.cache import borrow_temporary as borrow_temporary
from .._src.fem.cache import borrow_temporary_like as borrow_temporary_like
from .._src.fem.cache import set_default_temporary_store as set_default_temporary_store
from .._src.fem.domain import BoundarySides as BoundarySides
from .._src.fem.domain import Cells as Cells
from .._src.fem.domain import FrontierSides as FrontierSides
from .._src.fem.domain import GeometryDomain as GeometryDomain
from .._src.fem.domain import Sides as Sides
from .._src.fem.domain import Subdomain as Subdomain
from .._src.fem.element import Element as Element
from .._src.fem.field.discrete import DiscreteField as DiscreteField
from .._src.fem.field.discrete import make_discrete_field as make_discrete_field
from .._src.fem.field.field import FieldLike as FieldLike
from .._src.fem.field.field import GeometryField as GeometryField
from .._src.fem.field.virtual import make_test as make_test
from .._src.fem.field.virtual import make_trial as make_trial
from .._src.fem.geometry.geometry import Geometry as Geometry
from .._src.fem.geometry.grid2d import Grid2D as Grid2D
from .._src.fem.geometry.partition import CellBasedGeometryPartition as CellBasedGeometryPartition
from .._src.fem.geometry.partition import ExplicitGeometryPartition as ExplicitGeometryPartition
from .._src.fem.geometry.partition import GeometryPartition as GeometryPartition
from .._src.fem.geometry.partition import LinearGeometryPartition as LinearGeometryPartition
from .._src.fem.integrate import integrate as integrate
from .._src.fem.operator import D as D
from .._src.fem.operator import Integrand as Integrand
from .._src.fem.operator import Operator as Operator
from .._src.fem.operator import at_node as at_node
from .._src.fem.operator import average as average
from .._src.fem.operator import cells as cells
from .._src.fem.operator import curl as curl
from .._src.fem.operator import deformation_gradient as deformation_gradient
from .._src.fem.operator import degree as degree
from .._src.fem.operator import div as div
from .._src.fem.operator import div_outer as div_outer
from .._src.fem.operator import element_closest_point as element_closest_point
from .._src.fem.operator import element_coordinates as element_coordinates
from .._src.fem.operator import element_index as element_index
from .._src.fem.operator import element_partition_index as element_partition_index
from .._src.fem.operator import environment_index as environment_index
from .._src.fem.operator import grad as grad
from .._src.fem.operator import grad_average as grad_average
from .._src.fem.operator import grad_jump as grad_jump
from .._src.fem.operator import grad_outer as grad_outer
from .._src.fem.operator import inner as inner
from .._src.fem.operator import integrand as integrand
from .._src.fem.operator import jump as jump
from .._src.fem.operator import lookup as lookup
from .._src.fem.operator import measure as measure
from .._src.fem.operator import measure_ratio as measure_ratio
from .._src.fem.operator import node_count as node_count
from .._src.fem.operator import node_index as node_index
from .._src.fem.operator import node_inner_weight as node_inner_weight
from .._src.fem.operator import node_inner_weight_gradient as node_inner_weight_gradient
from .._src.fem.operator import node_outer_weight as node_outer_weight
from .._src.fem.operator import node_outer_weight_gradient as node_outer_weight_gradient
from .._src.fem.operator import node_partition_index as node_partition_index
from .._src.fem.operator import normal as normal
from .._src.fem.operator import outer as outer
from .._src.fem.operator import partition_lookup as partition_lookup
from .._src.fem.operator import position as position
from .._src.fem.operator import scalar_type as scalar_type
from .._src.fem.operator import to_cell_side as to_cell_side
from .._src.fem.operator import to_inner_cell as to_inner_cell
from .._src.fem.operator import to_outer_cell as to_outer_cell
from .._src.fem.polynomial import Polynomial as Polynomial
from .._src.fem.quadrature import ExplicitQuadrature as ExplicitQuadrature
from .._src.fem.quadrature import Quadrature as Quadrature
from .._src.fem.quadrature import RegularQuadrature as RegularQuadrature
from .._src.fem.space.basis_space import BasisSpace as BasisSpace
from .._src.fem.space.basis_space import ShapeBasisSpace as ShapeBasisSpace
from .._src.fem.space.basis_space import make_element_based_space_topology as make_element_based_space_topology
from .._src.fem.space.basis_space import make_polynomial_basis_space as make_polynomial_basis_space
from .._src.fem.space.dof_mapper import DofMapper as DofMapper
from .._src.fem.space.dof_mapper import SkewSymmetricTensorMapper as SkewSymmetricTensorMapper
from .._src.fem.space.dof_mapper import SymmetricTensorMapper as SymmetricTensorMapper
from .._src.fem.space.function_space import FunctionSpace as FunctionSpace
from .._src.fem.space.function_space import make_collocated_function_space as make_collocated_function_space
from .._src.fem.space.function_space import make_polynomial_space as make_polynomial_space
from .._src.fem.space.partition import SpacePartition as SpacePartition
from .._src.fem.space.partition import make_space_partition as make_space_partition
from .._src.fem.space.shape import ElementBasis as ElementBasis
from .._src.fem.space.shape import ShapeFunction as ShapeFunction
from .._src.fem.space.shape import make_element_shape_function as make_element_shape_function
from .._src.fem.space.topology import SpaceTopology as SpaceTopology
from .._src.fem.types import NULL_ELEMENT_INDEX as NULL_ELEMENT_INDEX
from .._src.fem.types import NULL_NODE_INDEX as NULL_NODE_INDEX
from .._src.fem.types import NULL_QP_INDEX as NULL_QP_INDEX
from .._src.fem.types import OUTSIDE as OUTSIDE
from .._src.fem.types import Coords as Coords
from .._src.fem.types import Coords_f64 as Coords_f64
from .._src.fem.types import Domain as Domain
from .._src.fem.types import ElementIndex as ElementIndex
from .._src.fem.types import ElementKind as ElementKind
from .._src.fem.types import Field as Field
from .._src.fem.types import NodeIndex as NodeIndex
from .._src.fem.types import QuadraturePointIndex as QuadraturePointIndex
from .._src.fem.types import Sample as Sample
from .._src.fem.types import Sample_f64 as Sample_f64
from .._src.fem.types import make_free_sample as make_free_sample
from .._src.fem.dirichlet import normalize_dirichlet_projector as normalize_dirichlet_projector
from .._src.fem.dirichlet import project_linear_system as project_linear_system
from .._src.fem.dirichlet import project_system_matrix as project_system_matrix
from .._src.fem.dirichlet import project_system_rhs as project_system_rhs
