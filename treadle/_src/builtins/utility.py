"""Thread index, selection, printing, expectations, ``len`` and the array atomics.

Builtins whose lowering is not a plain call carry a :class:`~.registry.Lowering` that the frontend dispatches on
(``tid``, ``atomic``, ``printf``, ``len``); their type rules still live here so docs and checks see one table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import ArrayT, is_composite, is_float, is_int, is_struct, scalar_of, type_str
from .registry import Interp, Lowering, Op, arity, builtin, need, same


def _tid_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 0)
    return scalars.int32


builtin("tid", group="Utility", rule=_tid_rule, kernel_only=True, lowering=Lowering.TID, differentiable=False,
        signature="tid() -> int | tuple of int",
        doc="The index of the current thread: an int for 1-D launches, a tuple for 2-4-D launches.")


def _select_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 3)
    c, a, b = types
    need(c is scalars.bool or is_int(c) or isinstance(c, ArrayT), f"condition must be a bool or int, got {type_str(c)}")
    need(a == b, f"both values must have the same type, got {type_str(a)} and {type_str(b)}")
    return a


builtin("select", group="Utility", rule=_select_rule, op=Op.SELECT,
        host=lambda c, a, b: b if c else a, signature="select(cond, value_if_false, value_if_true)",
        doc="``value_if_true`` if cond else ``value_if_false`` (both are evaluated).")
builtin("where", group="Utility", rule=_select_rule, op=Op.WHERE,
        host=lambda c, a, b: a if c else b, signature="where(cond, value_if_true, value_if_false)",
        doc="``value_if_true`` if cond else ``value_if_false`` (both are evaluated).")


def _print_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(scalars.is_scalar_type(t) or is_composite(t), f"cannot print a value of type {type_str(t)}")
    return None


builtin("print", group="Utility", rule=_print_rule, kernel_only=True, differentiable=False,
        lowering=Lowering.PRINT, side_effects=True, replay=False, interpret=Interp.PRINT, signature="print(value)", doc="Print a value from a kernel (one line).")


def _printf_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    return None


builtin("printf", group="Utility", rule=_printf_rule, kernel_only=True, differentiable=False, lowering=Lowering.PRINTF,
        op=Op.PRINTF, side_effects=True, replay=False, interpret=Interp.PRINTF,
        signature="printf(fmt: str, *args)", doc="C-style formatted printing from a kernel.")


def _expect_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    same(types)
    return None


def _expect_near_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 3)
    a, b, tol = types
    need(a == b and is_float(scalar_of(a)), f"expect_near needs two float values, got {type_str(a)}, {type_str(b)}")
    need(tol == scalar_of(a), f"tolerance must be {type_str(scalar_of(a))}")
    return None


def _host_expect(name: str, want_equal: bool) -> Callable[..., None]:
    """Python-scope ``expect_*`` (a ``@func`` called from Python): prints like the kernel version."""

    def check(a: Any, b: Any, tol: Any = None) -> None:
        a, b = np.asarray(a), np.asarray(b)
        if tol is not None:
            ok = bool(np.all(np.abs(a.astype(np.float64) - b.astype(np.float64)) <= float(tol)))
        else:
            ok = bool(np.array_equal(a, b)) == want_equal
        if not ok:
            print(f"Error, {name}() failed:\n\t Expected: {b}\n\t Actual: {a}", flush=True)

    return check


builtin("expect_eq", group="Utility", rule=_expect_rule, differentiable=False, host=_host_expect("expect_eq", True),
        side_effects=True, replay=False, interpret=Interp.EXPECT_EQ,
        signature="expect_eq(a, b)", doc="Print an error if a != b.")
builtin("expect_neq", group="Utility", rule=_expect_rule, differentiable=False,
        host=_host_expect("expect_neq", False),
        side_effects=True, replay=False, interpret=Interp.EXPECT_NEQ, signature="expect_neq(a, b)", doc="Print an error if a == b.")
builtin("expect_near", group="Utility", rule=_expect_near_rule, differentiable=False,
        host=_host_expect("expect_near", True),
        lowering=Lowering.EXPECT_NEAR, side_effects=True, replay=False, interpret=Interp.EXPECT_NEAR, signature="expect_near(a, b, tolerance=1e-6)",
        doc="Print an error if ``abs(a - b) > tolerance`` (per component).")


def _len_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    t = types[0]
    need(isinstance(t, ArrayT) or is_composite(t), f"len() needs an array, vector or matrix, got {type_str(t)}")
    return scalars.int32


builtin("len", group="Utility", rule=_len_rule, kernel_only=True, differentiable=False, lowering=Lowering.LEN,
        metadata_only=True, shape_query=True, interpret=Interp.LEN,
        signature="len(a: array | Vector | Matrix) -> int", doc="Length of the first dimension.")


def _atomic_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) >= 3 and isinstance(types[0], ArrayT), "expected (array, index..., value)")
    arr: ArrayT = types[0]
    need(len(types) - 2 == arr.ndim, f"expected {arr.ndim} index argument(s) for a {arr.ndim}-d array")
    return arr.dtype


for _op, _doc in (
    ("add", "Atomically add value to arr[i...]; returns the old value."),
    ("sub", "Atomically subtract value from arr[i...]; returns the old value."),
    ("min", "Atomically store min(arr[i...], value); returns the old value."),
    ("max", "Atomically store max(arr[i...], value); returns the old value."),
    ("exch", "Atomically replace arr[i...] by value; returns the old value."),
    ("and", "Atomic bitwise and; returns the old value."),
    ("or", "Atomic bitwise or; returns the old value."),
    ("xor", "Atomic bitwise xor; returns the old value."),
):
    builtin(f"atomic_{_op}", group="Utility", rule=_atomic_rule, kernel_only=True, lowering=Lowering.ATOMIC, atomic=_op,
            differentiable=_op in ("add", "sub", "min", "max"), signature=f"atomic_{_op}(arr, i[, j, k, l], value)",
            doc=_doc)

builtin("atomic_cas", group="Utility", rule=lambda t, c: _atomic_rule([t[0], *t[1:-1]], c), kernel_only=True,
        lowering=Lowering.ATOMIC, atomic="cas", differentiable=False, signature="atomic_cas(arr, i[, j, k, l], compare, value)",
        doc="Atomically store value if arr[i...] == compare; returns the old value.")


def _array_dim_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    need(isinstance(types[0], ArrayT), "expected an array")
    return scalars.int32


builtin("_array_dim", group="Utility", rule=_array_dim_rule, op=Op.SHAPE, kernel_only=True, differentiable=False,
        metadata_only=True, shape_query=True, interpret=Interp.ARRAY_DIM,
        signature="arr.shape[d]", doc="Extent of an array along dimension d.")


def _array_ptr_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(isinstance(types[0], ArrayT) and not types[0].indexed, "expected an array")
    return scalars.uint64


builtin("_array_ptr", group="Utility", rule=_array_ptr_rule, cpp="array_ptr", kernel_only=True, differentiable=False,
        interpret=Interp.ARRAY_PTR,
        signature="arr.ptr", doc="The address of an array's element 0 (a uint64), 0 for a null array.")


def _array_from_ptr_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    from ..types.typesys import normalize_annotation

    need(2 <= len(types) <= 5, "wp.array(ptr=..., shape=...) takes 1 to 4 extents")
    need(is_int(types[0]), "ptr must be an integer address (a uint64, e.g. arr.ptr)")
    need(all(is_int(t) for t in types[2:]), "the extents of shape must be integers")
    dtype = normalize_annotation(consts[1])
    need(scalars.is_scalar_type(dtype) or is_composite(dtype) or is_struct(dtype),
         "dtype must be a scalar, vector, matrix or struct type")
    return ArrayT(dtype, len(types) - 2)


builtin("_array_from_ptr", group="Utility", rule=_array_from_ptr_rule, cpp="array_from_ptr", kernel_only=True,
        differentiable=False, template=lambda types, ret: (ret.dtype,), interpret=Interp.ARRAY_FROM_PTR,
        signature="wp.array(ptr=p, shape=(n, ...), dtype=T)",
        doc="A contiguous array of dtype viewing memory at address ptr (not owned, no gradient).")


def _array_valid_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(isinstance(types[0], ArrayT), "expected an array")
    return scalars.bool


builtin("_array_valid", group="Utility", rule=_array_valid_rule, op=Op.ARRAY_VALID, kernel_only=True,
        differentiable=False, metadata_only=True, interpret=Interp.ARRAY_VALID, signature="bool(arr)",
        doc="True if the array is not null.")


def _grad_array_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    need(isinstance(types[0], ArrayT), "expected an array")
    return types[0]


builtin("_grad_array", group="Utility", rule=_grad_array_rule, cpp="grad_array", kernel_only=True,
        differentiable=False, interpret=Interp.NONE, signature="wp.adjoint[arr]",
        doc="The gradient buffer of an array, as an array (null when it has none); wp.adjoint[arr] in @func_grad.")
builtin("_has_data", group="Utility", rule=_array_valid_rule, cpp="has_data", kernel_only=True,
        differentiable=False, interpret=Interp.NONE, signature="arr.data != null", doc="True if the array's data pointer is not null.")


def _lower_bound_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2, 4)
    arr = types[0]
    need(isinstance(arr, ArrayT) and arr.ndim == 1, "lower_bound needs a 1-d array")
    need(types[-1] == arr.dtype and (is_int(arr.dtype) or is_float(arr.dtype)),
         f"the value must have the array's scalar type {type_str(arr.dtype)}")
    if len(types) == 4:
        need(is_int(types[1]) and is_int(types[2]), "the range bounds must be integers")
    return scalars.int32


builtin("lower_bound", group="Utility", rule=_lower_bound_rule, kernel_only=True, differentiable=False,
        interpret=Interp.LOWER_BOUND,
        signature="lower_bound(arr, value) | lower_bound(arr, arr_begin, arr_end, value) -> int",
        doc="Index of the first element of a sorted 1-d array (or of [arr_begin, arr_end)) not less than value; "
            "the last index of the range when every element is less (as in the reference API).")


def _cast_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    from ..types.typesys import normalize_annotation, type_size

    arity(types, 2)
    target = normalize_annotation(consts[1])
    need(scalars.is_scalar_type(target) or is_composite(target), "cast(x, dtype) needs a scalar or vector dtype")
    need(type_size(types[0]) == type_size(target),
         f"cast() needs types of the same size: {type_str(types[0])} and {type_str(target)} differ")
    return target


def _cast_template(types: Sequence[Any], ret: Any) -> tuple[Any, ...]:
    return (ret,)


builtin("cast", group="Utility", rule=_cast_rule, cpp="bit_cast", kernel_only=True, differentiable=False,
        template=_cast_template, lowering=Lowering.CAST, zero_derivative=True, interpret=Interp.BIT_CAST, signature="cast(a, dtype)", static_args=0,
        doc="Reinterpret the bits of a value as another type of the same size.")
