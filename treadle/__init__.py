"""Treadle: differentiable, high-performance simulation kernels in Python.

``import treadle as wp`` runs programs written for NVIDIA Warp's documented API.
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import typing as _typing

from . import autograd as autograd
from . import config as config
from . import types as types
from ._src.autodiff.tape import OverwriteError as OverwriteError
from ._src.autodiff.tape import Tape as Tape
from ._src.builtins import exported_builtins as _exported_builtins
from ._src.builtins.geometry_types import BvhQuery as BvhQuery
from ._src.builtins.geometry_types import BvhQueryTiled as BvhQueryTiled
from ._src.builtins.geometry_types import HashGridQuery as HashGridQuery
from ._src.builtins.geometry_types import HashGridQueryD as HashGridQueryD
from ._src.builtins.geometry_types import HashGridQueryH as HashGridQueryH
from ._src.builtins.geometry_types import MeshQuery as MeshQuery
from ._src.builtins.geometry_types import MeshQueryAABB as MeshQueryAABB
from ._src.builtins.geometry_types import MeshQueryAABBTiled as MeshQueryAABBTiled
from ._src.builtins.geometry_types import MeshQueryPoint as MeshQueryPoint
from ._src.builtins.geometry_types import MeshQueryRay as MeshQueryRay
from ._src.builtins.transform import transform_expand as transform_expand
from ._src.compiler.lower_expr import register_bare_names as _register_bare_names
from ._src.core.errors import CheckedModeError as CheckedModeError
from ._src.core.errors import CodegenError as CodegenError
from ._src.core.errors import CompileError as CompileError
from ._src.core.errors import DroppedGradientWarning as DroppedGradientWarning
from ._src.core.errors import LaunchError as LaunchError
from ._src.core.errors import ToolchainError as ToolchainError
from ._src.core.errors import TreadleError as TreadleError
from ._src.core.errors import UnsupportedConstructError as UnsupportedConstructError
from ._src.core.errors import WarpCodegenAttributeError as WarpCodegenAttributeError
from ._src.core.errors import WarpCodegenError as WarpCodegenError
from ._src.core.errors import WarpCodegenIndexError as WarpCodegenIndexError
from ._src.core.errors import WarpCodegenKeyError as WarpCodegenKeyError
from ._src.core.errors import WarpCodegenTypeError as WarpCodegenTypeError
from ._src.core.errors import WarpCodegenValueError as WarpCodegenValueError

# The array protocols (``__dlpack__``, ``__cuda_array_interface__``) are installed by these two modules at import.
from ._src.interop import cuda_interface as _cuda_interface  # noqa: F401
from ._src.interop.dlpack import from_dlpack as from_dlpack
from ._src.interop.dlpack import to_dlpack as to_dlpack
from ._src.lang.array import array as array
from ._src.lang.array import array1d as array1d
from ._src.lang.array import array2d as array2d
from ._src.lang.array import array3d as array3d
from ._src.lang.array import array4d as array4d
from ._src.lang.array import from_ptr as from_ptr
from ._src.lang.constants import HALF_PI as HALF_PI
from ._src.lang.constants import INF as INF
from ._src.lang.constants import LN2 as LN2
from ._src.lang.constants import LN10 as LN10
from ._src.lang.constants import LOG2E as LOG2E
from ._src.lang.constants import LOG10E as LOG10E
from ._src.lang.constants import NAN as NAN
from ._src.lang.constants import PHI as PHI
from ._src.lang.constants import PI as PI
from ._src.lang.constants import TAU as TAU
from ._src.lang.constants import E as E
from ._src.lang.constants import e as e
from ._src.lang.constants import half_pi as half_pi
from ._src.lang.constants import inf as inf
from ._src.lang.constants import ln2 as ln2
from ._src.lang.constants import ln10 as ln10
from ._src.lang.constants import log2e as log2e
from ._src.lang.constants import log10e as log10e
from ._src.lang.constants import nan as nan
from ._src.lang.constants import phi as phi
from ._src.lang.constants import pi as pi
from ._src.lang.constants import tau as tau
from ._src.lang.creation import clone as clone
from ._src.lang.creation import copy as copy
from ._src.lang.creation import empty as empty
from ._src.lang.creation import empty_like as empty_like
from ._src.lang.creation import from_numpy as from_numpy
from ._src.lang.creation import full as full
from ._src.lang.creation import full_like as full_like
from ._src.lang.creation import ones as ones
from ._src.lang.creation import ones_like as ones_like
from ._src.lang.creation import zeros as zeros
from ._src.lang.creation import zeros_like as zeros_like
from ._src.lang.function import Function as Function
from ._src.lang.indexedarray import indexedarray as indexedarray
from ._src.lang.indexedarray import indexedarray1d as indexedarray1d
from ._src.lang.indexedarray import indexedarray2d as indexedarray2d
from ._src.lang.indexedarray import indexedarray3d as indexedarray3d
from ._src.lang.indexedarray import indexedarray4d as indexedarray4d
from ._src.lang.kernel import Kernel as Kernel
from ._src.lang.kernel import Module as Module
from ._src.lang.kernel import ModuleBuildOptions as ModuleBuildOptions
from ._src.lang.kernel import adjoint as adjoint
from ._src.lang.kernel import constant as constant
from ._src.lang.kernel import func as func
from ._src.lang.kernel import func_grad as func_grad
from ._src.lang.kernel import func_native as func_native
from ._src.lang.kernel import func_replay as func_replay
from ._src.lang.kernel import get_module as get_module
from ._src.lang.kernel import grad as grad
from ._src.lang.kernel import kernel as kernel
from ._src.lang.kernel import overload as overload
from ._src.lang.kernel import static as static
from ._src.lang.launch import Launch as Launch
from ._src.lang.launch import launch as launch
from ._src.lang.launch import launch_tiled as launch_tiled
from ._src.lang.map import map as map  # noqa: A004 - the reference API name
from ._src.lang.module_api import force_load as force_load
from ._src.lang.module_api import get_module_options as get_module_options
from ._src.lang.module_api import load_module as load_module
from ._src.lang.module_api import set_module_options as set_module_options
from ._src.runtime.cache import clear_kernel_cache as clear_kernel_cache
from ._src.runtime.device import Device as Device
from ._src.runtime.device import ScopedDevice as ScopedDevice
from ._src.runtime.device import can_access as can_access
from ._src.runtime.device import get_cuda_device as get_cuda_device
from ._src.runtime.device import get_cuda_device_count as get_cuda_device_count
from ._src.runtime.device import get_cuda_devices as get_cuda_devices
from ._src.runtime.device import get_cuda_driver_version as get_cuda_driver_version
from ._src.runtime.device import get_cuda_supported_archs as get_cuda_supported_archs
from ._src.runtime.device import get_cuda_toolkit_version as get_cuda_toolkit_version
from ._src.runtime.device import get_device as get_device
from ._src.runtime.device import get_devices as get_devices
from ._src.runtime.device import get_preferred_device as get_preferred_device
from ._src.runtime.device import init as init
from ._src.runtime.device import is_cpu_available as is_cpu_available
from ._src.runtime.device import is_cuda_available as is_cuda_available
from ._src.runtime.device import is_device_available as is_device_available
from ._src.runtime.device import map_cuda_device as map_cuda_device
from ._src.runtime.device import print_diagnostics as print_diagnostics
from ._src.runtime.device import set_device as set_device
from ._src.runtime.device import synchronize as synchronize
from ._src.runtime.device import synchronize_device as synchronize_device
from ._src.runtime.device import unmap_cuda_device as unmap_cuda_device
from ._src.texture.texture import Texture as Texture
from ._src.texture.texture import Texture1D as Texture1D
from ._src.texture.texture import Texture2D as Texture2D
from ._src.texture.texture import Texture3D as Texture3D
from ._src.texture.texture import TextureAddressMode as TextureAddressMode
from ._src.texture.texture import TextureFilterMode as TextureFilterMode
from ._src.texture.texture import TextureResourceFlags as TextureResourceFlags
from ._src.types.arrays import dtype_from_numpy as dtype_from_numpy
from ._src.types.arrays import dtype_to_numpy as dtype_to_numpy
from ._src.types.matrix import mat22 as mat22
from ._src.types.matrix import mat22d as mat22d
from ._src.types.matrix import mat22f as mat22f
from ._src.types.matrix import mat22h as mat22h
from ._src.types.matrix import mat33 as mat33
from ._src.types.matrix import mat33d as mat33d
from ._src.types.matrix import mat33f as mat33f
from ._src.types.matrix import mat33h as mat33h
from ._src.types.matrix import mat44 as mat44
from ._src.types.matrix import mat44d as mat44d
from ._src.types.matrix import mat44f as mat44f
from ._src.types.matrix import mat44h as mat44h
from ._src.types.matrix import matrix as matrix
from ._src.types.quat import quat as quat
from ._src.types.quat import quatd as quatd
from ._src.types.quat import quatf as quatf
from ._src.types.quat import quath as quath
from ._src.types.quat import spatial_matrix as spatial_matrix
from ._src.types.quat import spatial_matrixd as spatial_matrixd
from ._src.types.quat import spatial_matrixf as spatial_matrixf
from ._src.types.quat import spatial_matrixh as spatial_matrixh
from ._src.types.quat import spatial_vector as spatial_vector
from ._src.types.quat import spatial_vectord as spatial_vectord
from ._src.types.quat import spatial_vectorf as spatial_vectorf
from ._src.types.quat import spatial_vectorh as spatial_vectorh
from ._src.types.quat import transform as transform
from ._src.types.quat import transformd as transformd
from ._src.types.quat import transformf as transformf
from ._src.types.quat import transformh as transformh
from ._src.types.scalars import bfloat16 as bfloat16
from ._src.types.scalars import bool as bool  # noqa: A004
from ._src.types.scalars import float16 as float16
from ._src.types.scalars import float32 as float32
from ._src.types.scalars import float64 as float64
from ._src.types.scalars import handle as handle
from ._src.types.scalars import int8 as int8
from ._src.types.scalars import int16 as int16
from ._src.types.scalars import int32 as int32
from ._src.types.scalars import int64 as int64
from ._src.types.scalars import uint8 as uint8
from ._src.types.scalars import uint16 as uint16
from ._src.types.scalars import uint32 as uint32
from ._src.types.scalars import uint64 as uint64
from ._src.types.struct import struct as struct
from ._src.types.typesys import ref as ref
from ._src.types.typesys import tile as tile
from ._src.types.typesys import tile_stack as tile_stack
from ._src.types.vector import vec2 as vec2
from ._src.types.vector import vec2b as vec2b
from ._src.types.vector import vec2d as vec2d
from ._src.types.vector import vec2f as vec2f
from ._src.types.vector import vec2h as vec2h
from ._src.types.vector import vec2i as vec2i
from ._src.types.vector import vec2l as vec2l
from ._src.types.vector import vec2s as vec2s
from ._src.types.vector import vec2ub as vec2ub
from ._src.types.vector import vec2ui as vec2ui
from ._src.types.vector import vec2ul as vec2ul
from ._src.types.vector import vec2us as vec2us
from ._src.types.vector import vec3 as vec3
from ._src.types.vector import vec3b as vec3b
from ._src.types.vector import vec3d as vec3d
from ._src.types.vector import vec3f as vec3f
from ._src.types.vector import vec3h as vec3h
from ._src.types.vector import vec3i as vec3i
from ._src.types.vector import vec3l as vec3l
from ._src.types.vector import vec3s as vec3s
from ._src.types.vector import vec3ub as vec3ub
from ._src.types.vector import vec3ui as vec3ui
from ._src.types.vector import vec3ul as vec3ul
from ._src.types.vector import vec3us as vec3us
from ._src.types.vector import vec4 as vec4
from ._src.types.vector import vec4b as vec4b
from ._src.types.vector import vec4d as vec4d
from ._src.types.vector import vec4f as vec4f
from ._src.types.vector import vec4h as vec4h
from ._src.types.vector import vec4i as vec4i
from ._src.types.vector import vec4l as vec4l
from ._src.types.vector import vec4s as vec4s
from ._src.types.vector import vec4ub as vec4ub
from ._src.types.vector import vec4ui as vec4ui
from ._src.types.vector import vec4ul as vec4ul
from ._src.types.vector import vec4us as vec4us
from ._src.types.vector import vector as vector
from .config import LOG_DEBUG as LOG_DEBUG
from .config import LOG_ERROR as LOG_ERROR
from .config import LOG_INFO as LOG_INFO
from .config import LOG_WARNING as LOG_WARNING
from .config import DeterministicMode as DeterministicMode

# isort: split
# JAX FFI primitives and the PyTorch custom-op helper.

# isort: split
# Graph capture of launches.
from ._src.lang.conditional import capture_if as capture_if
from ._src.lang.conditional import capture_while as capture_while
from ._src.lang.conditional import is_conditional_graph_supported as is_conditional_graph_supported
from ._src.runtime.graph import Graph as Graph
from ._src.runtime.graph import ScopedCapture as ScopedCapture
from ._src.runtime.graph import capture_begin as capture_begin
from ._src.runtime.graph import capture_end as capture_end
from ._src.runtime.graph import capture_launch as capture_launch

# isort: split
# CUDA runtime: streams, events, memory pools; ahead-of-time compilation.
from ._src.lang.module_api import compile_aot_module as compile_aot_module
from ._src.runtime.cuda_driver import Event as Event
from ._src.runtime.cuda_driver import ScopedMempool as ScopedMempool
from ._src.runtime.cuda_driver import ScopedStream as ScopedStream
from ._src.runtime.cuda_driver import Stream as Stream
from ._src.runtime.cuda_driver import get_event_elapsed_time as get_event_elapsed_time
from ._src.runtime.cuda_driver import get_mempool_release_threshold as get_mempool_release_threshold
from ._src.runtime.cuda_driver import get_mempool_used_mem_current as get_mempool_used_mem_current
from ._src.runtime.cuda_driver import get_mempool_used_mem_high as get_mempool_used_mem_high
from ._src.runtime.cuda_driver import get_stream as get_stream
from ._src.runtime.cuda_driver import is_mempool_enabled as is_mempool_enabled
from ._src.runtime.cuda_driver import is_mempool_supported as is_mempool_supported
from ._src.runtime.cuda_driver import record_event as record_event
from ._src.runtime.cuda_driver import set_mempool_enabled as set_mempool_enabled
from ._src.runtime.cuda_driver import set_mempool_release_threshold as set_mempool_release_threshold
from ._src.runtime.cuda_driver import set_stream as set_stream
from ._src.runtime.cuda_driver import synchronize_event as synchronize_event
from ._src.runtime.cuda_driver import synchronize_stream as synchronize_stream
from ._src.runtime.cuda_driver import wait_event as wait_event
from ._src.runtime.cuda_driver import wait_stream as wait_stream
from ._src.runtime.peer_access import ScopedMempoolAccess as ScopedMempoolAccess
from ._src.runtime.peer_access import ScopedPeerAccess as ScopedPeerAccess
from ._src.runtime.peer_access import is_mempool_access_enabled as is_mempool_access_enabled
from ._src.runtime.peer_access import is_mempool_access_supported as is_mempool_access_supported
from ._src.runtime.peer_access import is_peer_access_enabled as is_peer_access_enabled
from ._src.runtime.peer_access import is_peer_access_supported as is_peer_access_supported
from ._src.runtime.peer_access import set_mempool_access_enabled as set_mempool_access_enabled
from ._src.runtime.peer_access import set_peer_access_enabled as set_peer_access_enabled

# isort: split
# Profiling and logging.
from ._src.core.logger import Logger as Logger
from ._src.core.logger import ScopedLogger as ScopedLogger
from ._src.core.logger import ScopedLogLevel as ScopedLogLevel
from ._src.core.logger import get_logger as get_logger
from ._src.core.logger import set_logger as set_logger
from ._src.runtime.memtrack import ScopedMemoryTracker as ScopedMemoryTracker
from ._src.runtime.memtrack import print_memory_report as print_memory_report
from ._src.runtime.profiling import TIMING_ALL as TIMING_ALL
from ._src.runtime.profiling import TIMING_GRAPH as TIMING_GRAPH
from ._src.runtime.profiling import TIMING_KERNEL as TIMING_KERNEL
from ._src.runtime.profiling import TIMING_KERNEL_BUILTIN as TIMING_KERNEL_BUILTIN
from ._src.runtime.profiling import TIMING_MEMCPY as TIMING_MEMCPY
from ._src.runtime.profiling import TIMING_MEMSET as TIMING_MEMSET
from ._src.runtime.profiling import ScopedCudaProfiler as ScopedCudaProfiler
from ._src.runtime.profiling import ScopedTimer as ScopedTimer
from ._src.runtime.profiling import TimingResult as TimingResult
from ._src.runtime.profiling import cuda_profiler_start as cuda_profiler_start
from ._src.runtime.profiling import cuda_profiler_stop as cuda_profiler_stop
from ._src.runtime.profiling import timing_begin as timing_begin
from ._src.runtime.profiling import timing_end as timing_end
from ._src.runtime.profiling import timing_print as timing_print

# Generic annotations of ``@func`` parameters: any integer / floating-point / scalar type (each call specialises).
from ._src.types.generics import Float as Float
from ._src.types.generics import Int as Int
from ._src.types.generics import Scalar as Scalar

__version__ = config.version

#: What a ``device=`` argument accepts: a :class:`Device`, a name such as ``"cpu"`` or ``"cuda:0"``, or ``None``
#: (the default device).
DeviceLike = _typing.Union[Device, str, None]

#: Scalar constructor aliases of the reference (``wp.float(x)``, ``wp.int(x)`` in kernels).
float = float32  # noqa: A001
int = int32  # noqa: A001

# Builtins callable from Python scope (and resolvable as ``wp.<name>`` inside kernels).
for _name, _fn in _exported_builtins().items():
    if _name not in globals() or _name in ("identity", "matrix_from_cols", "matrix_from_rows"):
        globals()[_name] = _fn
del _name, _fn

# Kernel code may name these builtins and types without the ``wp.`` prefix, as in the reference.
_register_bare_names(_sys.modules[__name__])
del _register_bare_names, _sys


# Submodules and names imported on first use, so that they cost nothing at ``import treadle``.
_LAZY_SUBMODULES = frozenset({"fem", "geometry", "render", "sparse", "utils", "warp_compat"})
_LAZY_NAMES = {"install_warp_alias": "warp_compat"}
# Geometry, volumes and the framework interop load on first use too: together they are a fifth of the
# start-up, and most programs use one of them or none (``wp.Mesh`` and ``wp.from_torch`` work as before).
_LAZY_NAMES.update({
    "Bvh": "_src.geometry.bvh",
    "HashGrid": "_src.geometry.hash_grid",
    "JaxCallableGraphMode": "_src.interop.jax_kernel",
    "JaxModulePreloadMode": "_src.interop.jax_kernel",
    "MarchingCubes": "_src.geometry.marching_cubes",
    "Mesh": "_src.geometry.mesh",
    "TorchOp": "_src.interop.torch_op",
    "Volume": "_src.volume.volume",
    "clear_jax_callable_graph_cache": "_src.interop.jax_kernel",
    "device_from_jax": "_src.interop.jax",
    "device_from_paddle": "_src.interop.paddle",
    "device_from_torch": "_src.interop.torch",
    "device_to_jax": "_src.interop.jax",
    "device_to_paddle": "_src.interop.paddle",
    "device_to_torch": "_src.interop.torch",
    "dtype_from_jax": "_src.interop.jax",
    "dtype_from_paddle": "_src.interop.paddle",
    "dtype_from_torch": "_src.interop.torch",
    "dtype_to_jax": "_src.interop.jax",
    "dtype_to_paddle": "_src.interop.paddle",
    "dtype_to_torch": "_src.interop.torch",
    "from_jax": "_src.interop.jax",
    "from_paddle": "_src.interop.paddle",
    "from_torch": "_src.interop.torch",
    "is_cubql_available": "_src.geometry.bvh",
    "jax_callable": "_src.interop.jax_kernel",
    "jax_kernel": "_src.interop.jax_kernel",
    "stream_from_paddle": "_src.interop.paddle",
    "stream_from_torch": "_src.interop.torch",
    "stream_to_torch": "_src.interop.torch",
    "to_jax": "_src.interop.jax",
    "to_paddle": "_src.interop.paddle",
    "to_torch": "_src.interop.torch",
    "torch_op": "_src.interop.torch_op",
})


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
        globals()[name] = value  # later reads are plain lookups
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_SUBMODULES, *_LAZY_NAMES})
