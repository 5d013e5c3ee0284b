"""Builtins in interpret mode: host implementations, and the kernel-only builtins implemented here.

Most builtin calls run the registry's NumPy host implementation (:func:`host_call`). A declaration that names an
interpreter handler (``Builtin.interpret``, a :class:`~treadle._src.builtins.registry.Interp`) runs the handler that
:data:`HANDLERS` holds for it instead: builtins that exist only in kernels (comparisons, printing, ``expect_*``,
array shapes, ``lower_bound``, bit casts), builtins whose host implementation differs from the native one on edge
cases (``min``/``max``/``clamp``/``abs`` with NaN, ``inverse`` of a singular matrix, integer division by zero), and
builtins that update arguments in place (random states, in-place setters). Output formats follow
``treadle/native/print.h``.
"""

from __future__ import annotations

import operator
import re
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...builtins.registry import Interp, Op
from ...compiler import ir
from ...types.typesys import is_float, is_int, scalar_of
from .values import (
    ArrayRef,
    DivisionByZero,
    Fault,
    InterpretUnsupportedError,
    StructValue,
    array_from_desc,
    cast_scalar,
    coerce,
    format_value,
    load_element,
    max_abs_diff,
)

if TYPE_CHECKING:
    from .interpreter import Frame, Interpreter


def unsupported(what: str) -> Fault:
    """The fault raised for something that has no Python implementation."""
    e = Fault(f"{what} has no Python implementation, so it cannot run in interpret mode; run kernels that use it "
              "with wp.config.mode = 'release' or 'debug'")
    e.kind = InterpretUnsupportedError
    return e



# ----------------------------------------------------------------------------------------------------------------
# Builtins that have no host implementation, or whose host implementation does not cover kernel use
# ----------------------------------------------------------------------------------------------------------------

Handler = Callable[["Interpreter", ir.Call, list[Any], "Frame"], Any]


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, StructValue):
        return all(_equal(a.fields[k], b.fields[k]) for k in a.fields)
    return bool(a == b)


#: The comparison operators (``Builtin.op`` of the ``Interp.COMPARE`` builtins).
_COMPARE: dict[Op, Callable[[Any, Any], Any]] = {
    Op.LT: operator.lt, Op.LE: operator.le, Op.GT: operator.gt, Op.GE: operator.ge,
    Op.EQ: _equal, Op.NE: lambda a, b: not _equal(a, b),
}


def _compare(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    op = s.overload.builtin.op
    assert op is not None, f"{s.overload.builtin.name} is declared a comparison without an operator"
    a, b = args
    ta, tb = s.overload.arg_types
    if ta != tb:  # a float against an integer or the other float width: in the float type, as C++ compares
        common = np.result_type(*(t._np_ for t in (ta, tb) if is_float(t)))
        a, b = np.asarray(a).astype(common), np.asarray(b).astype(common)
    return np.bool_(_COMPARE[op](a, b))


def _int_division(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    a, b = args
    if is_int(scalar_of(s.overload.arg_types[1])) and np.any(np.asarray(b) == 0):
        a_text = format_value(a).strip()
        raise DivisionByZero(f"integer division or modulo by zero ({a_text} / 0)")
    return host_call(s.overload, args)


def _emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _print(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> None:
    _emit(format_value(args[0]) + "\n")


_PRINTF_SPEC = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(hh|h|ll|l|L|q|j|z|t)?([diouxXeEfFgGaAcs%])")


def _printf(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> None:
    fmt: str = s.overload.fmt or ""
    values = iter(args)
    out: list[str] = []
    pos = 0
    for m in _PRINTF_SPEC.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, length, conv = m.group(1), m.group(2) or "", m.group(3)
        if conv == "%":
            out.append("%")
            continue
        v = next(values, None)
        if v is None:
            out.append(m.group(0))
            continue
        if conv in "eEfFgGaA":
            out.append(f"%{flags}{conv}" % float(v) if conv not in "aA" else float(v).hex())
        elif conv in "cs":
            out.append(f"%{flags}{conv}" % (chr(int(v)) if conv == "c" else format_value(v)))
        else:
            n = int(v)
            if conv in "uoxX" and n < 0:  # unsigned conversions see the two's complement bits
                n += 2**64 if "l" in length or "j" in length or "z" in length else 2**32
            out.append(f"%{flags}{'d' if conv in 'iu' else conv}" % n)
    out.append(fmt[pos:])
    _emit("".join(out))


def _report_expect(name: str, actual: Any, expected: Any) -> None:
    _emit(f"Error, {name}() failed:\n\t Expected: {format_value(expected)}\n\t Actual: {format_value(actual)}\n")


def _expect_eq(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> None:
    if not _equal(args[0], args[1]):
        _report_expect("expect_eq", args[0], args[1])


def _expect_neq(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> None:
    if _equal(args[0], args[1]):
        _report_expect("expect_neq", args[0], args[1])


def _expect_near(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> None:
    actual, expected, tol = args
    d = max_abs_diff(actual, expected)
    if d <= float(tol):
        return
    what = "Max absolute difference" if isinstance(actual, np.ndarray) else "Absolute difference"
    _emit(f"Error, expect_near() failed with tolerance {float(tol):g}\n    Expected: {format_value(expected)}\n"
          f"    Actual: {format_value(actual)}\n    {what}: {d:g}\n")


def _lower_bound(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    ref: ArrayRef = args[0]
    v = args[-1]
    lo, hi = (int(args[1]), int(args[2])) if len(args) == 4 else (0, ref.shape[0])
    hi = hi - 1 if hi > lo else lo  # the last index of the range when every value is less (kernel_support.h)
    while lo < hi:
        mid = lo + (hi - lo) // 2
        ref.check((mid,))
        if load_element(ref, (mid,)) < v:
            lo = mid + 1
        else:
            hi = mid
    return np.int32(lo)


def _array_ptr(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    ref: ArrayRef = args[0]
    return np.uint64(0 if ref.data is None else ref.data.ctypes.data)


def _array_from_ptr(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    from ...types.arrays import contiguous_strides, elem_size

    t = s.result.type  # type: ignore[union-attr]
    shape = tuple(int(n) for n in args[1:])
    desc = {"data": int(args[0]), "ndim": len(shape), "shape": shape,
            "strides": contiguous_strides(shape, elem_size(t.dtype)), "grad": 0}
    return array_from_desc(desc, t, "array from ptr")


def _bit_cast(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    t = s.result.type  # type: ignore[union-attr]
    return np.ascontiguousarray(args[0]).view(scalar_of(t)._np_).reshape(tuple(getattr(t, "_shape_", ())))[()]


# min/max/clamp/abs as the native headers write them (native/scalar.h: fmin/fmax, ties to b), with their argmin.
def _nan(x: Any) -> Any:
    """``x != x`` (NaN; always False for integers), elementwise."""
    return np.not_equal(x, x)


def _c_min(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    if len(args) == 1:
        return args[0][_c_arg(args[0], operator.lt)]
    a, b = args
    return np.where((a < b) | _nan(b), a, b)  # fmin: a NaN operand is missing data (native/scalar.h)


def _c_max(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    if len(args) == 1:
        return args[0][_c_arg(args[0], operator.gt)]
    a, b = args
    return np.where((a > b) | _nan(b), a, b)


def _c_arg(v: np.ndarray, better: Callable[[Any, Any], Any]) -> int:
    k = 0
    for i in range(1, len(v)):
        if better(v[i], v[k]) or v[k] != v[k]:  # NaN components are skipped
            k = i
    return 0 if v[k] != v[k] else k


def _c_clamp(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    x, lo, hi = args
    low = np.where((lo < hi) | _nan(hi), lo, hi)  # clamp(NaN, lo, hi) is min(lo, hi)
    return np.where(_nan(x), low, np.where(x < lo, lo, np.where(x > hi, hi, x)))


def _c_abs(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    x = args[0]
    return np.where(x < 0, -x, x) if np.issubdtype(np.asarray(x).dtype, np.signedinteger) or \
        np.issubdtype(np.asarray(x).dtype, np.floating) else x


def _inverse(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    try:
        return host_call(s.overload, args)
    except np.linalg.LinAlgError:  # the native inverse gives the zero matrix for a singular one
        return np.zeros_like(args[0])


def _identity(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    t = s.result.type  # type: ignore[union-attr]
    return np.eye(t._shape_[0], dtype=scalar_of(t)._np_)


# The Python twins of the random generators (builtins/random.py) draw from a generator object made from the state
# argument but do not return the advanced state. Inside kernels the state variable must advance, so while such a
# builtin runs, the twin's generator class is swapped for a subclass that remembers the generators made; the last
# one's state is written back to the variable. The lock keeps concurrent interpreters from seeing each other's swap.
_RNG_LOCK = threading.Lock()


def _draw(fn: Callable[..., Any], *args: Any) -> tuple[Any, int | None]:
    from ...builtins import random as rnd

    base = rnd._Rng
    made: list[Any] = []

    class Recording(base):  # type: ignore[misc, valid-type]
        def __init__(self, state: Any) -> None:
            super().__init__(state)
            made.append(self)

    with _RNG_LOCK:
        rnd._Rng = Recording  # type: ignore[misc]
        try:
            result = fn(*args)
        finally:
            rnd._Rng = base  # type: ignore[misc]
    return result, (made[-1].s if made else None)


def host_call(ov: Any, args: Sequence[Any]) -> Any:
    """Run a builtin overload's host implementation (typed hosts also receive the argument types)."""
    host = ov.builtin.host
    if getattr(host, "_treadle_typed_", False):
        return host(list(ov.arg_types), *args)
    return host(*args)


def _random(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    """A random generator: the host draws from the state argument, and the state variable advances."""
    b = s.overload.builtin
    if b.host is None:
        raise unsupported(f"the builtin '{b.name}'")
    result, state = _draw(b.host, *args)
    _write_state(s, f, state)
    return result


def _in_place(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    """A builtin that updates its first argument, computed by the host implementation of its copying twin."""
    from ...builtins import REGISTRY

    b = s.overload.builtin
    refs = [i for i, a in enumerate(s.args) if isinstance(a, ir.LocalRef)]
    if not refs:
        return host_call(s.overload, args)
    twin_host: Any = REGISTRY.builtins[b.twin].host
    _fill_refs(s, f, refs[:1], twin_host(*args))
    return None


def call_with_refs(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    """A builtin with by-reference output arguments: the tuple form's result fills the output locals."""
    b = s.overload.builtin
    if b.host is None:
        raise unsupported(f"the builtin '{b.name}'")
    refs = [i for i, a in enumerate(s.args) if isinstance(a, ir.LocalRef)]
    if not refs:  # the tuple-returning form, e.g. ``U, s, V = wp.svd3(A)``
        return host_call(s.overload, args)
    # the output-argument form, e.g. ``wp.svd3(A, U, s, V)``: the host computes the tuple form's result
    _fill_refs(s, f, refs, b.host(*[a for i, a in enumerate(args) if i not in refs]))
    return None


def _fill_refs(s: ir.Call, f: Frame, refs: list[int], outs: Any) -> None:
    if not isinstance(outs, tuple):
        outs = (outs,)
    for i, v in zip(refs, outs):
        local = s.args[i].local
        f.locals[local.id] = coerce(v, local.type)


def _write_state(s: ir.Call, f: Frame, state: int | None) -> None:
    ref = s.args[0]
    if state is not None and isinstance(ref, ir.LocalRef):
        f.locals[ref.local.id] = cast_scalar(state, ref.local.type)


def _sample_cdf(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    from ...builtins import random as rnd

    cdf: ArrayRef = args[1]
    u, state = _draw(lambda st: rnd._Rng(st).unit(), args[0])
    _write_state(s, f, state)
    lo, hi = 0, cdf.shape[0] - 1
    if hi < 0:
        return np.int32(0)
    while lo < hi:
        mid = lo + (hi - lo) // 2
        cdf.check((mid,))
        if load_element(cdf, (mid,)) < u:
            lo = mid + 1
        else:
            hi = mid
    return np.int32(lo)


def _no_host_form(it: Interpreter, s: ir.Call, args: list[Any], f: Frame) -> Any:
    raise unsupported(f"the builtin '{s.overload.builtin.name}'")


#: The handler of each ``Interp`` kind a declaration can name.
HANDLERS: dict[Interp, Handler] = {
    Interp.NONE: _no_host_form,
    Interp.COMPARE: _compare,
    Interp.NOT: lambda it, s, args, f: np.bool_(not args[0]),
    Interp.INT_DIVISION: _int_division,
    Interp.PRINT: _print,
    Interp.PRINTF: _printf,
    Interp.EXPECT_EQ: _expect_eq,
    Interp.EXPECT_NEQ: _expect_neq,
    Interp.EXPECT_NEAR: _expect_near,
    Interp.LEN: lambda it, s, args, f: np.int32(args[0].shape[0]),
    Interp.ARRAY_DIM: lambda it, s, args, f: np.int32(args[0].shape[int(args[1])]),
    Interp.ARRAY_VALID: lambda it, s, args, f: np.bool_(bool(args[0])),
    Interp.ARRAY_PTR: _array_ptr,
    Interp.ARRAY_FROM_PTR: _array_from_ptr,
    Interp.LOWER_BOUND: _lower_bound,
    Interp.IDENTITY: _identity,
    Interp.MIN: _c_min,
    Interp.MAX: _c_max,
    Interp.CLAMP: _c_clamp,
    Interp.ABS: _c_abs,
    Interp.ARGMIN: lambda it, s, args, f: np.uint32(_c_arg(args[0], operator.lt)),
    Interp.ARGMAX: lambda it, s, args, f: np.uint32(_c_arg(args[0], operator.gt)),
    Interp.INVERSE: _inverse,
    Interp.BIT_CAST: _bit_cast,
    Interp.SAMPLE_CDF: _sample_cdf,
    Interp.RANDOM: _random,
    Interp.IN_PLACE: _in_place,
}
