"""Dirichlet boundary conditions by projection.

A projector ``P`` (typically diagonal, assembled with ``assembly="nodal"`` from a boundary integrand) selects the
constrained degrees of freedom. Projecting ``A x = b`` onto the free ones with the fixed values ``u0``:
``A <- (I - P) A (I - P) + P`` and ``b <- (I - P) (b - A u0) + P u0``, so that ``x = u0`` on constrained dofs and
the free ones solve the original equations.
"""

from typing import Any

import treadle as wp


def _sparse() -> Any:
    import treadle.sparse as sp

    return sp


def normalize_dirichlet_projector(projector_matrix: Any, fixed_value: Any = None) -> None:
    """Scale a projector's rows so that its diagonal blocks are the identity (or zero), in place.

    Each row ``i`` with a non-zero diagonal block ``P_ii`` is multiplied by ``P_ii^{-1}``; ``fixed_value[i]`` (the
    value the row constrains to, assembled with the same weights) is multiplied alike. Rows with a zero diagonal
    block are left alone.

    Args:
        projector_matrix: the projector (a square ``BsrMatrix``).
        fixed_value: the constrained values, one per row (updated in place), or ``None``.

    """
    from .dirichlet_kernels import normalize_projector

    normalize_projector(projector_matrix, fixed_value)


def project_system_rhs(system_matrix: Any, system_rhs: Any, projector_matrix: Any, fixed_value: Any = None) -> None:
    """``b <- (I - P) (b - A u0) + P u0`` in place (``u0`` is ``fixed_value``, zero when ``None``).

    Args:
        system_matrix: ``A``.
        system_rhs: ``b`` (updated).
        projector_matrix: ``P``.
        fixed_value: ``u0``.

    """
    sp = _sparse()
    if fixed_value is None:
        tmp = wp.clone(system_rhs)
        sp.bsr_mv(projector_matrix, tmp, system_rhs, alpha=-1.0, beta=1.0)
        return
    # r = b - A u0; b = r - P r + P u0
    r = wp.clone(system_rhs)
    sp.bsr_mv(system_matrix, fixed_value, r, alpha=-1.0, beta=1.0)
    wp.copy(system_rhs, r)
    sp.bsr_mv(projector_matrix, r, system_rhs, alpha=-1.0, beta=1.0)
    sp.bsr_mv(projector_matrix, fixed_value, system_rhs, alpha=1.0, beta=1.0)


def project_system_matrix(system_matrix: Any, projector_matrix: Any) -> None:
    """``A <- (I - P) A (I - P) + P`` in place.

    Args:
        system_matrix: ``A`` (updated).
        projector_matrix: ``P``.

    """
    sp = _sparse()
    n = system_matrix.nrow
    if projector_matrix.nrow != n or projector_matrix.ncol != n or system_matrix.ncol != n:
        raise ValueError(f"project_system_matrix: the system is {system_matrix.nrow}x{system_matrix.ncol} blocks, "
                         f"the projector {projector_matrix.nrow}x{projector_matrix.ncol}; both must be square and "
                         "of the same size")
    from .dirichlet_kernels import project_with_diagonal_projector

    # the usual projector (nodal assembly) is block diagonal: then every block is scaled in place
    if project_with_diagonal_projector(system_matrix, projector_matrix):
        return
    complement = sp.bsr_identity(n, block_type=system_matrix.values.dtype, device=system_matrix.device)
    sp.bsr_axpy(projector_matrix, complement, alpha=-1.0, beta=1.0)
    left = sp.bsr_mm(complement, system_matrix)
    projected = sp.bsr_mm(left, complement)
    sp.bsr_axpy(projector_matrix, projected, alpha=1.0, beta=1.0)
    sp.bsr_assign(dest=system_matrix, src=projected)


def project_linear_system(system_matrix: Any, system_rhs: Any, projector_matrix: Any, fixed_value: Any = None,
                          normalize_projector: bool = True) -> None:
    """Apply Dirichlet conditions to ``A x = b`` by projection, in place (see the module documentation).

    Args:
        system_matrix: ``A`` (updated).
        system_rhs: ``b`` (updated).
        projector_matrix: ``P`` (normalized in place first when ``normalize_projector``).
        fixed_value: the constrained values ``u0`` (normalized with the projector), or ``None`` for zero.
        normalize_projector: make ``P``'s diagonal blocks the identity first.

    """
    if normalize_projector:
        normalize_dirichlet_projector(projector_matrix, fixed_value)
    project_system_rhs(system_matrix, system_rhs, projector_matrix, fixed_value)
    project_system_matrix(system_matrix, projector_matrix)
