"""The package: lazy import, the Warp alias, and every public name of the reference's warp.fem present."""

from __future__ import annotations

import os
import subprocess
import sys

import treadle.fem as fem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: The public names of the reference's warp.fem (version 1.19), as a fact to match.
REFERENCE_NAMES = """AdaptiveNanogrid BasisSpace BoundarySides CellBasedGeometryPartition Cells Coords Coords_f64 D
DiscreteField DofMapper Domain Element ElementBasis ElementIndex ElementKind ExplicitGeometryPartition
ExplicitQuadrature Field FieldLike FrontierSides FunctionSpace Geometry GeometryDomain GeometryField
GeometryPartition Grid2D Grid3D Hexmesh ImplicitField Integrand LinearGeometryPartition NULL_ELEMENT_INDEX
NULL_NODE_INDEX NULL_QP_INDEX Nanogrid NodalQuadrature NodeIndex NonconformingField OUTSIDE Operator
PicQuadrature PointBasisSpace Polynomial Quadmesh2D Quadmesh3D Quadrature QuadraturePointIndex RegularQuadrature
Sample Sample_f64 ShapeBasisSpace ShapeFunction Sides SkewSymmetricTensorMapper SpacePartition SpaceRestriction
SpaceTopology Subdomain SymmetricTensorMapper Temporary TemporaryStore Tetmesh Trimesh2D Trimesh3D UniformField
adaptive_nanogrid_from_field adaptive_nanogrid_from_hierarchy at_node average borrow_temporary
borrow_temporary_like cache cells curl deformation_gradient degree div div_outer element_closest_point
element_coordinates element_index element_partition_index environment_index field geometry grad grad_average
grad_jump grad_outer inner integrand integrate interpolate jump linalg lookup make_collocated_function_space
make_contravariant_function_space make_covariant_function_space make_discrete_field
make_element_based_space_topology make_element_shape_function make_free_sample make_polynomial_basis_space
make_polynomial_space make_restriction make_space_partition make_space_restriction make_test make_trial measure
measure_ratio node_count node_index node_inner_weight node_inner_weight_gradient node_outer_weight
node_outer_weight_gradient node_partition_index normal normalize_dirichlet_projector outer partition_lookup
polynomial position project_linear_system project_system_matrix project_system_rhs scalar_type
set_default_temporary_store space to_cell_side to_inner_cell to_outer_cell utils""".split()


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=True).stdout


def test_import_treadle_does_not_import_fem() -> None:
    out = _run("import sys, treadle; print('treadle._src.fem' in sys.modules, 'treadle.fem' in sys.modules); "
               "treadle.fem; print('treadle.fem' in sys.modules)")
    assert out.split() == ["False", "False", "True"]


def test_warp_alias_serves_fem() -> None:
    out = _run("import treadle; treadle.install_warp_alias(subprocesses=False); import warp.fem as f; "
               "import warp.fem.linalg as la; import treadle.fem; print(f is treadle.fem, la is treadle.fem.linalg)")
    assert out.split() == ["True", "True"]


#: Reference names not provided yet (sparse-volume geometries, H(curl)/H(div) spaces, radial-basis point spaces);
#: docs/fem.md lists them. The test fails when another name goes missing, and when one of these arrives (so that
#: this list shrinks with the package).
NOT_YET = {"PointBasisSpace"}


def test_reference_names_present() -> None:
    missing = {n for n in REFERENCE_NAMES if not hasattr(fem, n)}
    assert missing == NOT_YET, (sorted(missing - NOT_YET), sorted(NOT_YET - missing))
