"""Iterative solvers of sparse linear systems (the ``warp.optim.linear`` module of the reference API).

:func:`cg` (conjugate gradient) and :func:`cr` (conjugate residual) for symmetric systems, :func:`bicgstab` and
:func:`gmres` for general ones, each also as a reusable preallocated state (:class:`CG`, :class:`CR`,
:class:`BiCGSTAB`, :class:`GMRES`). The system matrix is a :class:`treadle.sparse.BsrMatrix`, a dense or diagonal
array, or any :class:`LinearOperator` (:func:`aslinearoperator`); :func:`preconditioner` builds Jacobi, block
Jacobi and factorised sparse approximate inverse (:class:`FSAI`) preconditioners. Batched operators
(``batch_offsets``) solve independent subproblems together. Every step runs as Treadle kernels on the system's
device.
"""

from __future__ import annotations

from .._src.optim.linear.fsai import FSAI as FSAI
from .._src.optim.linear.gmres import GMRES as GMRES
from .._src.optim.linear.gmres import gmres as gmres
from .._src.optim.linear.krylov import CG as CG
from .._src.optim.linear.krylov import CR as CR
from .._src.optim.linear.krylov import BiCGSTAB as BiCGSTAB
from .._src.optim.linear.krylov import bicgstab as bicgstab
from .._src.optim.linear.krylov import cg as cg
from .._src.optim.linear.krylov import cr as cr
from .._src.optim.linear.operator import LinearOperator as LinearOperator
from .._src.optim.linear.operator import aslinearoperator as aslinearoperator
from .._src.optim.linear.precond import preconditioner as preconditioner
from .._src.optim.linear.state import LinearSolverState as LinearSolverState

__all__ = [
    "CG",
    "CR",
    "FSAI",
    "GMRES",
    "BiCGSTAB",
    "LinearOperator",
    "LinearSolverState",
    "aslinearoperator",
    "bicgstab",
    "cg",
    "cr",
    "gmres",
    "preconditioner",
]
