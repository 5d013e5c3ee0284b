"""Internal path of the autograd tools (kept for programs that import it from the reference's layout)."""

from __future__ import annotations

from .autodiff.gradcheck import FunctionMetadata as FunctionMetadata  # noqa: F401
