"""Binary layouts shared by Python (ctypes) and the native headers (``treadle/native``).

These ctypes structures must match the C++ definitions byte for byte:

- :class:`ArrayDesc` is ``treadle::array_t<T>`` (``native/array.h``);
- :class:`IndexedArrayDesc` is ``treadle::indexedarray_t<T>`` (``native/indexedarray.h``);
- :class:`LaunchBounds` is ``treadle::launch_bounds_t`` (``native/core.h``).
"""

from __future__ import annotations

import ctypes

#: Maximum number of array dimensions (and launch dimensions).
MAX_DIMS = 4


#: ``ArrayDesc.flags`` bit (``TREADLE_ARRAY_KEEP_GRAD`` in native/array.h): the backward pass of a store into the array
#: keeps the element's gradient instead of consuming it (``retain_grad``, or an adjoint array passed to the launch).
ARRAY_KEEP_GRAD = 1


class ArrayDesc(ctypes.Structure):
    """Descriptor of an array passed to native code: pointers, shape and byte strides."""

    _fields_ = [
        ("data", ctypes.c_uint64),
        ("grad", ctypes.c_uint64),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
        ("ndim", ctypes.c_int32),
        ("flags", ctypes.c_int32),
    ]


class IndexedArrayDesc(ctypes.Structure):
    """Descriptor of an indexed array (``treadle::indexedarray_t<T>``, ``native/indexedarray.h``).

    The underlying array, per-dimension ``int32`` index tables (0: the whole dimension) and the extents seen through
    them.
    """

    _fields_ = [
        ("arr", ArrayDesc),
        ("indices", ctypes.c_uint64 * MAX_DIMS),
        ("shape", ctypes.c_int64 * MAX_DIMS),
    ]


class LaunchBounds(ctypes.Structure):
    """The launch grid: shape of the launch in up to 4 dimensions and the total thread count."""

    _fields_ = [
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("ndim", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("size", ctypes.c_int64),
    ]


assert ctypes.sizeof(ArrayDesc) == 88
assert ctypes.sizeof(IndexedArrayDesc) == 152
assert ctypes.sizeof(LaunchBounds) == 48
