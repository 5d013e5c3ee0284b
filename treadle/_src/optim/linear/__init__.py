"""Iterative linear solvers (the public module is :mod:`treadle.optim.linear`)."""

from .dot import TiledDot as TiledDot
from .dot import _create_segmented_tiled_dot_kernels as _create_segmented_tiled_dot_kernels
from .fsai import FSAI as FSAI
from .gmres import GMRES as GMRES
from .gmres import gmres as gmres
from .krylov import CG as CG
from .krylov import CR as CR
from .krylov import BiCGSTAB as BiCGSTAB
from .krylov import bicgstab as bicgstab
from .krylov import cg as cg
from .krylov import cr as cr
from .operator import LinearOperator as LinearOperator
from .operator import aslinearoperator as aslinearoperator
from .precond import preconditioner as preconditioner
from .state import LinearSolverState as LinearSolverState
from .state import _run_solver_loop as _run_solver_loop
