"""Kernel caching helpers and temporary arrays of ``treadle.fem`` (the reference's ``warp.fem.cache``)."""

from .._src.fem.cache import Temporary as Temporary
from .._src.fem.cache import TemporaryStore as TemporaryStore
from .._src.fem.cache import borrow_temporary as borrow_temporary
from .._src.fem.cache import borrow_temporary_like as borrow_temporary_like
from .._src.fem.cache import dynamic_func as dynamic_func
from .._src.fem.cache import dynamic_kernel as dynamic_kernel
from .._src.fem.cache import set_default_temporary_store as set_default_temporary_store

# TemporaryStore is documented with treadle.fem, which exports it too
__all__ = ["Temporary", "borrow_temporary", "borrow_temporary_like", "dynamic_func",
           "dynamic_kernel", "set_default_temporary_store"]
