"""Gradient checking and Jacobians (the ``warp.autograd`` submodule of the reference API).

``gradcheck`` / ``gradcheck_tape`` compare autodiff gradients with central finite differences; ``jacobian`` /
``jacobian_fd`` compute the Jacobians; ``jacobian_plot`` draws them (needs matplotlib).
"""

from __future__ import annotations

from ._src.autodiff.gradcheck import FunctionMetadata as FunctionMetadata
from ._src.autodiff.gradcheck import gradcheck as gradcheck
from ._src.autodiff.gradcheck import gradcheck_tape as gradcheck_tape
from ._src.autodiff.gradcheck import jacobian as jacobian
from ._src.autodiff.gradcheck import jacobian_fd as jacobian_fd
from ._src.autodiff.jacobian_plot import jacobian_plot as jacobian_plot

__all__ = ["gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd", "jacobian_plot"]
