"""The builtin registry and its groups (importing this package declares every builtin once)."""

from __future__ import annotations

from . import geometry as geometry
from . import linalg as linalg
from . import math_helpers as math_helpers
from . import operators as operators
from . import quat as quat
from . import random as random
from . import scalar_math as scalar_math
from . import spatial as spatial
from . import texture as texture
from . import tile_core as tile_core
from . import tile_linalg as tile_linalg
from . import tile_ops as tile_ops
from . import tile_queries as tile_queries
from . import tile_scatter as tile_scatter
from . import tile_stack as tile_stack
from . import transform as transform
from . import utility as utility
from . import vector_math as vector_math
from . import volume as volume
from .exports import exported_builtins as exported_builtins
from .registry import REGISTRY as REGISTRY
from .registry import Builtin as Builtin
