"""Array utilities built on Treadle (the ``warp.utils`` group of the reference API).

The package namespace holds the same functions as ``treadle.utils``: the reference keeps them in its private
``warp._src.utils`` module, where Warp-based libraries also call them (``wp._src.utils.array_scan``).
"""

# internal in the reference (``warp._src.utils.check_p2p``), where its tests and multi-GPU programs import it from
from ..runtime.peer_access import check_p2p as check_p2p
from .cast import array_cast as array_cast
from .coloring import GraphColoringAlgorithm as GraphColoringAlgorithm
from .coloring import graph_coloring_assign as graph_coloring_assign
from .coloring import graph_coloring_balance as graph_coloring_balance
from .coloring import graph_coloring_get_groups as graph_coloring_get_groups
from .functions import create_warp_function as create_warp_function
from .reduce import array_inner as array_inner
from .reduce import array_scan as array_scan
from .reduce import array_sum as array_sum
from .runlength import runlength_encode as runlength_encode
from .sort import radix_sort_pairs as radix_sort_pairs
from .sort import segmented_sort_pairs as segmented_sort_pairs
