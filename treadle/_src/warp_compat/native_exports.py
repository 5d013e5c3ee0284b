"""The C entry points of the reference's native core library that Warp-based libraries call through ``ctypes``.

Libraries built on Warp reach a few functions of warp-lang's native library directly, as
``warp._src.context.runtime.core.<symbol>``, to skip Python-side overhead: Newton's host-side transform helpers
call ``wp_builtin_transform_point_transformf_vec3f(t, p, ctypes.byref(out))``, its cloth solver
``wp_array_inner_float_host(a.ptr, b.ptr, out_ptr, n, stride_a, stride_b, length)``. This module compiles a small
shared library of such entry points from Treadle's own native headers (the same C++ the kernels run) and loads it:
:func:`native_core` returns it, with ``argtypes`` set on every function.

The calling convention is the reference's: a builtin ``wp_builtin_<name>_<argument types>`` takes each value
argument by address (a Treadle vector, matrix, quaternion or transform object, or ``ctypes.byref`` of one), each
scalar by value, and the address of the result last; the array reductions take raw addresses, a count, byte strides
and the number of scalars per element. Every function is listed in :data:`BUILTINS` / :data:`REDUCTIONS`; the
library is built once per compiler and header version into Treadle's shared cache.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

# (builtin, C++ expression over a0, a1 ..., argument kinds, result kind) for each precision suffix ("f", "d").
# Kinds: "vec3", "mat33", "mat44", "quat", "transform" (passed by address), "scalar" (by value).
_FAMILY: list[tuple[str, str, tuple[str, ...], str]] = [
    ("quat_from_matrix", "quat_from_matrix(a0)", ("mat33",), "quat"),
    ("quat_from_matrix", "quat_from_matrix(a0)", ("mat44",), "quat"),
    ("quat_to_matrix", "quat_to_matrix(a0)", ("quat",), "mat33"),
    ("quat_inverse", "quat_inverse(a0)", ("quat",), "quat"),
    ("quat_rotate", "quat_rotate(a0, a1)", ("quat", "vec3"), "vec3"),
    ("quat_rotate_inv", "quat_rotate_inv(a0, a1)", ("quat", "vec3"), "vec3"),
    ("quat_from_axis_angle", "quat_from_axis_angle(a0, a1)", ("vec3", "scalar"), "quat"),
    ("mul", "mul(a0, a1)", ("quat", "quat"), "quat"),
    ("mul", "mul(a0, a1)", ("transform", "transform"), "transform"),
    ("transform_multiply", "transform_multiply(a0, a1)", ("transform", "transform"), "transform"),
    ("transform_inverse", "transform_inverse(a0)", ("transform",), "transform"),
    ("transform_point", "transform_point(a0, a1)", ("transform", "vec3"), "vec3"),
    ("transform_point", "transform_point(a0, a1)", ("mat44", "vec3"), "vec3"),
    ("transform_vector", "transform_vector(a0, a1)", ("transform", "vec3"), "vec3"),
    ("transform_vector", "transform_vector(a0, a1)", ("mat44", "vec3"), "vec3"),
]

_CXX = {"vec3": "vec_t<3, {T}>", "mat33": "mat_t<3, 3, {T}>", "mat44": "mat_t<4, 4, {T}>", "quat": "quat_t<{T}>",
        "transform": "transform_t<{T}>", "scalar": "{T}"}
_SUFFIX = {"f": ("float", "float32", ctypes.c_float), "d": ("double", "float64", ctypes.c_double)}


def _short(kind: str, p: str) -> str:
    """The reference's name of a type in a symbol: ``vec3f``, ``mat44d``, ``transformf``, ``float32``."""
    return _SUFFIX[p][1] if kind == "scalar" else f"{kind}{p}"


def _builtins() -> dict[str, tuple[str, tuple[str, ...], str, str]]:
    out = {}
    for p in _SUFFIX:
        for name, expr, args, ret in _FAMILY:
            symbol = f"wp_builtin_{name}_" + "_".join(_short(a, p) for a in args)
            out[symbol] = (expr, args, ret, p)
    return out


#: ``symbol -> (C++ expression, argument kinds, result kind, precision)`` of every exported builtin.
BUILTINS = _builtins()

#: The array reductions over raw addresses: ``symbol -> (C++ scalar type, kind)``.
REDUCTIONS = {
    "wp_array_inner_float_host": ("float", "inner"),
    "wp_array_inner_double_host": ("double", "inner"),
    "wp_array_sum_float_host": ("float", "sum"),
    "wp_array_sum_double_host": ("double", "sum"),
}

_REDUCTION_SOURCE = """
template <typename T>
static void inner_host(uint64 a, uint64 b, uint64 out, int count, int stride_a, int stride_b, int len) {
    // accumulated in double whatever T is: the reduction of a long float32 array stays accurate
    double total = 0.0;
    for (int i = 0; i < count; ++i) {
        const T* x = (const T*)(a + (uint64)i * (uint64)stride_a);
        const T* y = (const T*)(b + (uint64)i * (uint64)stride_b);
        for (int k = 0; k < len; ++k) total += (double)x[k] * (double)y[k];
    }
    *(T*)out = (T)total;
}

template <typename T>
static void sum_host(uint64 a, uint64 out, int count, int stride, int len) {
    T* o = (T*)out;
    for (int k = 0; k < len; ++k) {
        double total = 0.0;
        for (int i = 0; i < count; ++i) total += (double)((const T*)(a + (uint64)i * (uint64)stride))[k];
        o[k] = (T)total;
    }
}
"""


def source() -> str:
    """The C++ source of the library."""
    lines = ['#include "treadle.h"', "using namespace treadle;", _REDUCTION_SOURCE, 'extern "C" {']
    for symbol, (expr, args, ret, p) in BUILTINS.items():
        t = _SUFFIX[p][0]
        params = []
        for i, kind in enumerate(args):
            ctype = _CXX[kind].format(T=t)
            params.append(f"{ctype} a{i}" if kind == "scalar" else f"const {ctype}& a{i}")
        params.append(f"{_CXX[ret].format(T=t)}* ret")
        lines.append(f'__attribute__((visibility("default"))) void {symbol}({", ".join(params)}) {{ *ret = {expr}; }}')
    for symbol, (t, kind) in REDUCTIONS.items():
        if kind == "inner":
            lines.append(f'__attribute__((visibility("default"))) void {symbol}(uint64 a, uint64 b, uint64 out, '
                         f"int count, int sa, int sb, int len) {{ inner_host<{t}>(a, b, out, count, sa, sb, len); }}")
        else:
            lines.append(f'__attribute__((visibility("default"))) void {symbol}(uint64 a, uint64 out, int count, '
                         f"int stride, int len) {{ sum_host<{t}>(a, out, count, stride, len); }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


class _ByAddress:
    """``argtypes`` entry of a value passed by address: a Treadle value object, ``ctypes.byref(...)``, an int."""

    @classmethod
    def from_param(cls, obj: Any) -> Any:
        if isinstance(obj, ctypes._SimpleCData | ctypes.Array | ctypes.Structure):
            return ctypes.byref(obj)
        if isinstance(obj, int):
            return ctypes.c_void_p(obj)
        if type(obj).__name__ == "CArgObject" or isinstance(obj, ctypes._Pointer):  # ctypes.byref / pointer
            return obj
        raise TypeError(f"expected a Treadle value (vector, matrix, quaternion, transform), ctypes.byref() of one "
                        f"or an address, got {type(obj).__name__}")


_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-w"]
_lock = threading.Lock()
_library: Any = None


def native_core() -> Any:
    """The loaded library of the reference's native entry points (built on first use), ``argtypes`` set.

    Raises:
        treadle.CompileError: no working C++ compiler (the same requirement as CPU kernels).

    """
    global _library
    with _lock:
        if _library is None:
            from ..runtime.native import get_native_compiler, header_hash
            from ..runtime.threadpool import shared_library

            text = source()
            path = shared_library("treadle_warp_exports", [" ".join(_FLAGS), text, header_hash()],
                                  lambda out: get_native_compiler().compile_raw(text, out, _FLAGS))
            lib = ctypes.CDLL(str(path))
            for symbol, (_expr, args, _ret, p) in BUILTINS.items():
                fn = getattr(lib, symbol)
                fn.argtypes = [_SUFFIX[p][2] if kind == "scalar" else _ByAddress for kind in args] + [_ByAddress]
                fn.restype = None
            for symbol, (_t, kind) in REDUCTIONS.items():
                fn = getattr(lib, symbol)
                u64, i32 = ctypes.c_uint64, ctypes.c_int
                fn.argtypes = [u64, u64, u64, i32, i32, i32, i32] if kind == "inner" else [u64, u64, i32, i32, i32]
                fn.restype = None
            _library = lib
        return _library
