"""Array utilities built from Treadle kernels (the ``warp.utils`` submodule of the reference API).

Sorting (:func:`radix_sort_pairs`, :func:`segmented_sort_pairs`), scans and reductions (:func:`array_scan`,
:func:`array_sum`, :func:`array_inner`), :func:`array_cast`, :func:`runlength_encode`, graph colouring for parallel
solvers and :func:`create_warp_function`. The profiling and logging helpers live on the top-level module
(``wp.ScopedTimer``, ``wp.get_logger``), as in the reference.
"""

from __future__ import annotations

from ._src.utils.cast import array_cast as array_cast
from ._src.utils.coloring import GraphColoringAlgorithm as GraphColoringAlgorithm
from ._src.utils.coloring import graph_coloring_assign as graph_coloring_assign
from ._src.utils.coloring import graph_coloring_balance as graph_coloring_balance
from ._src.utils.coloring import graph_coloring_get_groups as graph_coloring_get_groups
from ._src.utils.common import UtilsTypeError as UtilsTypeError
from ._src.utils.common import UtilsValueError as UtilsValueError
from ._src.utils.functions import create_warp_function as create_warp_function
from ._src.utils.reduce import array_inner as array_inner
from ._src.utils.reduce import array_scan as array_scan
from ._src.utils.reduce import array_sum as array_sum
from ._src.utils.runlength import runlength_encode as runlength_encode
from ._src.utils.sort import radix_sort_pairs as radix_sort_pairs
from ._src.utils.sort import segmented_sort_pairs as segmented_sort_pairs

__all__ = [
    "GraphColoringAlgorithm",
    "UtilsTypeError",
    "UtilsValueError",
    "array_cast",
    "array_inner",
    "array_scan",
    "array_sum",
    "create_warp_function",
    "graph_coloring_assign",
    "graph_coloring_balance",
    "graph_coloring_get_groups",
    "radix_sort_pairs",
    "runlength_encode",
    "segmented_sort_pairs",
]
