"""One-dimensional point families and rules on ``[0, 1]`` (the reference's ``warp.fem.polynomial``)."""

from .._src.fem.polynomial import Polynomial as Polynomial
from .._src.fem.polynomial import lagrange_scales as lagrange_scales
from .._src.fem.polynomial import quadrature_1d as quadrature_1d

# Polynomial is documented with treadle.fem, which exports it too
__all__ = ["lagrange_scales", "quadrature_1d"]
