"""Small dense linear algebra for integrands, and ``array_axpy`` (the reference's ``warp.fem.linalg``)."""

from .._src.fem.linalg import array_axpy as array_axpy
from .._src.fem.linalg import generalized_inner as generalized_inner
from .._src.fem.linalg import generalized_outer as generalized_outer
from .._src.fem.linalg import householder_make_hessenberg as householder_make_hessenberg
from .._src.fem.linalg import householder_qr_decomposition as householder_qr_decomposition
from .._src.fem.linalg import inverse_qr as inverse_qr
from .._src.fem.linalg import skew_part as skew_part
from .._src.fem.linalg import solve_triangular as solve_triangular
from .._src.fem.linalg import spherical_part as spherical_part
from .._src.fem.linalg import symmetric_eigenvalues_qr as symmetric_eigenvalues_qr
from .._src.fem.linalg import symmetric_part as symmetric_part
from .._src.fem.linalg import tridiagonal_symmetric_eigenvalues_qr as tridiagonal_symmetric_eigenvalues_qr

__all__ = ["array_axpy", "generalized_inner", "generalized_outer", "householder_make_hessenberg",
           "householder_qr_decomposition", "inverse_qr", "skew_part", "solve_triangular", "spherical_part",
           "symmetric_eigenvalues_qr", "symmetric_part", "tridiagonal_symmetric_eigenvalues_qr"]
