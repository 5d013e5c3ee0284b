"""Interpret mode: run a kernel's typed IR in Python, one thread index after another.

``wp.config.mode = "interpret"`` makes the launch front door (``lang/launch.py``) run CPU launches through the
interpreter backend (``backend.py``) instead of compiling. Nothing is compiled: the kernel is lowered to the same IR the emitter reads, and
:class:`Interpreter` walks it for each thread index in order (so atomics are plain read-modify-writes in thread
order and return the old values).

Semantics come from the one builtin registry: every builtin call runs its NumPy host implementation on NumPy
scalars and arrays in the kernel's precision (float32 rounding, int32 wrap-around, C-style ``/`` and ``%`` on
integers), the same implementations ``wp.sin(1.0)`` uses in Python scope. Builtins that exist only inside kernels
(comparisons, ``print``, ``printf``, ``expect_*``, array shapes, random generators that advance their state) and
the few whose host implementation differs from the native one on edge cases are in :mod:`.interpret_builtins`;
values are described in :mod:`.interpret_values`.

Debugging: set a breakpoint in :meth:`Interpreter.run_thread` (or in :meth:`Interpreter.exec_stmt` with a condition
such as ``self.tid == 7 and stmt.loc.line == 42``) and step through the kernel statement by statement;
``self.loc`` is the user's source location being executed and ``self.variables()`` shows the current function's
variables by name. Errors (out-of-bounds indices, integer division by zero) raise at once as
:class:`~.interpret_values.InterpretError` (a :class:`~treadle.CheckedModeError`), with a traceback frame at the
user's line whose globals are the failing thread's variables, so ``pdb.pm()`` shows them.
"""

from __future__ import annotations

import bdb
import keyword
import operator
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from ...compiler import ir
from ...core.errors import SourceLoc
from ...types import scalars
from ...types.arrays import array_class
from ...types.typesys import ArrayT, TupleT, contains_any, is_composite, scalar_of
from ..args import launch_bounds, pack_arg, value_type
from ..launch_params import ParamSetters
from .handlers import HANDLERS, call_with_refs, host_call, unsupported
from .values import (
    ArrayRef,
    Fault,
    InterpretError,
    OutOfBounds,
    cast_scalar,
    coerce,
    const_value,
    host_value,
    inner_shape,
    load_element,
    np_dtype,
    store_element,
    zero_value,
)

_BREAK, _CONTINUE, _RETURN = 1, 2, 3


class Frame:
    """The state of one kernel or ``@func`` invocation: SSA values, locals (by :class:`~.ir.Local` id), result."""

    __slots__ = ("func", "values", "locals", "ret")

    def __init__(self, func: ir.FuncIR, locals_: dict[int, Any]) -> None:
        self.func = func
        self.values: dict[int, Any] = {}
        self.locals = locals_
        self.ret: Any = None

    def variables(self) -> dict[str, Any]:
        """The function's variables by name (parameters first)."""
        return {loc.name: self.locals[loc.id] for loc in [*self.func.params, *self.func.locals]}


class Interpreter:
    """Runs one kernel instance's IR for every thread index of a launch grid."""

    def __init__(self, inst: Any, shape: tuple[int, ...], args: Sequence[Any]) -> None:
        self.inst = inst
        self.ir: ir.FuncIR = inst.ir
        self.key: str = inst.kernel.key
        self.shape = shape
        self.args = list(args)
        #: Source location of the statement being executed.
        self.loc: SourceLoc | None = None
        #: Flat index of the current thread, and its index along each launch dimension.
        self.tid = 0
        self.tid_nd: tuple[int, ...] = (0,)
        #: Call stack of the current thread (innermost last).
        self.frames: list[Frame] = []
        self._consts: dict[int, Any] = {}
        self._zeros: dict[Any, Any] = {}
        self._dispatch: dict[type, Callable[[Any, Frame], Any]] = {
            ir.Call: self.exec_call,
            ir.CallFunc: self.exec_call_func,
            ir.Construct: self.exec_construct,
            ir.Extract: self.exec_extract,
            ir.Insert: self.exec_insert,
            ir.ArrayLoad: self.exec_load,
            ir.ArrayStore: self.exec_store,
            ir.ArrayView: self.exec_view,
            ir.ArrayAtomic: self.exec_atomic,
            ir.LocalArray: self.exec_local_array,
            ir.CallGrad: self.exec_call_grad,
            ir.DeclLocal: _no_op,
            ir.LoadLocal: self.exec_load_local,
            ir.StoreLocal: self.exec_store_local,
            ir.Tid: self.exec_tid,
            ir.If: self.exec_if,
            ir.ForRange: self.exec_for,
            ir.While: self.exec_while,
            ir.Break: lambda s, f: _BREAK,
            ir.Continue: lambda s, f: _CONTINUE,
            ir.Return: self.exec_return,
        }

    # Driver -----------------------------------------------------------------------------------------------------
    def run(self) -> None:
        """Run every thread of the launch grid, in order of the flat thread index."""
        size = 1
        for n in self.shape:
            size *= n
        with np.errstate(all="ignore"):  # wrap-around and inf/nan are results here, as in compiled code
            for flat in range(size):
                self.run_thread(flat)

    def run_thread(self, flat: int) -> None:
        """Run the kernel body for one thread (a good place for a pdb breakpoint)."""
        self.tid = flat
        self.tid_nd = tuple(int(i) for i in np.unravel_index(flat, self.shape)) if len(self.shape) > 1 else (flat,)
        self.frames = [self.new_frame(self.ir, self.args)]
        try:
            self.exec_block(self.ir.body, self.frames[0])
            return
        except (InterpretError, bdb.BdbQuit):
            raise
        except Fault as e:
            kind, what, cause = e.kind, str(e), None
        except Exception as e:  # noqa: BLE001 - any failure of a host implementation is reported at the user's line
            kind, what, cause = InterpretError, f"{type(e).__name__}: {e}", e
        self.fail(kind, what, cause)

    def variables(self) -> dict[str, Any]:
        """The variables of the innermost function of the current thread, by name."""
        return self.frames[-1].variables() if self.frames else {}

    def fail(self, kind: type[InterpretError], what: str, cause: BaseException | None = None) -> NoReturn:
        """Raise ``kind`` for the current statement and thread, from a frame at the user's line."""
        loc = self.loc
        thread = f"thread {self.tid}" + (f" {self.tid_nd}" if len(self.shape) > 1 else "")
        text = f"{loc}: " if loc is not None else ""
        text += f"kernel '{self.key}', {thread}: {what}"
        shown = loc.render() if loc is not None else ""
        if shown:
            text += "\n" + shown
        exc = kind(text)
        exc.loc = loc  # type: ignore[attr-defined]
        exc.thread = self.tid  # type: ignore[attr-defined]
        exc.__cause__ = cause
        exc.__suppress_context__ = True
        _raise_at(exc, loc, self.variables())

    def new_frame(self, func: ir.FuncIR, args: Sequence[Any]) -> Frame:
        """A frame with the parameters bound and every local zero-initialised (as the emitted C++ declares them)."""
        values = {p.id: a for p, a in zip(func.params, args)}
        for loc in func.locals:
            values[loc.id] = self.zero(loc.type)
        return Frame(func, values)

    def zero(self, t: Any) -> Any:
        try:
            z = self._zeros.get(t)
        except TypeError:  # an unhashable type
            return zero_value(t)
        if z is None:
            z = self._zeros[t] = zero_value(t)
        return z

    def call_function(self, func: ir.FuncIR, args: Sequence[Any]) -> Any:
        """Run a ``@func`` body and return its result (a frame is pushed on :attr:`frames` while it runs)."""
        frame = self.new_frame(func, args)
        self.frames.append(frame)
        self.exec_block(func.body, frame)
        self.frames.pop()
        if func.return_type is None:
            return None
        if frame.ret is None:  # fell off the end: the emitted C++ returns a default-constructed value
            return self.zero(func.return_type)
        return coerce(frame.ret, func.return_type)

    # Statements -------------------------------------------------------------------------------------------------
    def exec_block(self, block: ir.Block, frame: Frame) -> int:
        """Run a block; returns 0, or the jump (break/continue/return) that left it."""
        for stmt in block.stmts:
            jump = self.exec_stmt(stmt, frame)
            if jump:
                return jump  # type: ignore[no-any-return]
        return 0

    def exec_stmt(self, stmt: ir.Stmt, frame: Frame) -> Any:
        """Run one statement (``self.loc`` is its source location)."""
        self.loc = stmt.loc
        return self._dispatch[type(stmt)](stmt, frame)

    def operand(self, op: Any, frame: Frame) -> Any:
        """The value of an operand: an SSA value, a constant or a by-reference local."""
        cls = type(op)
        if cls is ir.Value:
            return frame.values[op.id]
        if cls is ir.Const:
            key = id(op)
            if key in self._consts:
                return self._consts[key]
            v = self._consts[key] = const_value(op.value, op.type)
            return v
        if cls is ir.LocalRef:
            return frame.locals[op.local.id]
        if op is None:
            return None
        raise InterpretError(f"internal error: cannot evaluate operand {op!r}")

    def exec_call(self, s: ir.Call, f: Frame) -> None:
        ov = s.overload
        b = ov.builtin
        args = [self.operand(a, f) for a in s.args]
        if b.interpret is not None:
            result = HANDLERS[b.interpret](self, s, args, f)
        elif b.ref_args:
            result = call_with_refs(self, s, args, f)
        elif b.host is not None:
            result = host_call(ov, args)
        else:
            raise unsupported(f"the builtin '{b.name}'")
        if s.result is not None:
            f.values[s.result.id] = coerce(result, s.result.type)

    def exec_call_func(self, s: ir.CallFunc, f: Frame) -> None:
        if getattr(s.func.ir, "native", None) is not None:
            raise unsupported(f"the @wp.func_native function '{s.func.name}'")
        args = [self.operand(a, f) for a in s.args]
        result = self.call_function(s.func.ir, args)
        self.loc = s.loc
        if s.result is not None:
            f.values[s.result.id] = result

    def exec_call_grad(self, s: ir.CallGrad, f: Frame) -> None:
        raise unsupported("wp.grad(f)(...)")

    def exec_construct(self, s: ir.Construct, f: Frame) -> None:
        t = s.result.type
        args = [self.operand(a, f) for a in s.args]
        if scalars.is_scalar_type(t):
            v: Any = cast_scalar(args[0], t)
        elif is_composite(t):
            v = _build_composite(t, args)
        elif isinstance(t, TupleT):
            v = tuple(args)
        else:  # structs start zeroed; fields are set by the Insert statements that follow
            v = zero_value(t)
        f.values[s.result.id] = v

    def exec_extract(self, s: ir.Extract, f: Frame) -> None:
        src = self.operand(s.src, f)
        if s.field is not None:
            v = src.fields[s.field]
        elif isinstance(src, tuple):
            v = src[int(self.operand(s.index[0], f))]
        else:
            v = src[self.component_index(src, s.index, f)]
        f.values[s.result.id] = v

    def exec_insert(self, s: ir.Insert, f: Frame) -> None:
        src = self.operand(s.src, f)
        value = self.operand(s.value, f)
        if s.field is not None:
            new = src.replace(s.field, value)
        else:
            new = src.copy()
            new[self.component_index(src, s.index, f)] = value
        f.values[s.result.id] = new

    def component_index(self, src: np.ndarray, index: list[Any], f: Frame) -> tuple[int, ...]:
        idx = tuple(int(self.operand(i, f)) for i in index)
        for d, i in enumerate(idx):
            n = src.shape[d]
            if not 0 <= i < n:
                raise OutOfBounds(f"component index {i} is out of range for {n} components")
        return idx

    def array_index(self, ref: ArrayRef, indices: list[Any], f: Frame) -> tuple[int, ...]:
        idx = tuple(int(self.operand(i, f)) for i in indices)
        ref.check(idx)
        return idx

    def exec_load(self, s: ir.ArrayLoad, f: Frame) -> None:
        ref = self.operand(s.array, f)
        f.values[s.result.id] = load_element(ref, self.array_index(ref, s.indices, f))

    def exec_store(self, s: ir.ArrayStore, f: Frame) -> None:
        ref = self.operand(s.array, f)
        store_element(ref, self.array_index(ref, s.indices, f), self.operand(s.value, f))

    def exec_view(self, s: ir.ArrayView, f: Frame) -> None:
        ref: ArrayRef = self.operand(s.array, f)
        if ref.data is None:
            raise OutOfBounds(f"array '{ref.name}' is null (None was passed)")
        key: list[Any] = []
        for d, i in enumerate(s.indices):
            if isinstance(i, ir.SliceSpec):
                start, stop, step = (None if p is None else int(self.operand(p, f)) for p in (i.start, i.stop, i.step))
                if step == 0:
                    raise Fault("slice step cannot be zero")
                key.append(slice(start, stop, step))
            else:
                k = int(self.operand(i, f))
                ref.check_dim(d, k)
                key.append(k)
        text = ", ".join(_slice_text(k) for k in key)
        f.values[s.result.id] = ref.view(tuple(key), s.result.type.ndim, f"{ref.name}[{text}]")

    def exec_local_array(self, s: ir.LocalArray, f: Frame) -> None:
        t: ArrayT = s.result.type
        data = np.zeros(tuple(s.shape) + inner_shape(t.dtype), dtype=np_dtype(t.dtype))
        f.values[s.result.id] = ArrayRef(data, t.dtype, t.ndim, "local array")

    def exec_atomic(self, s: ir.ArrayAtomic, f: Frame) -> None:
        ref = self.operand(s.array, f)
        idx = self.array_index(ref, s.indices, f)
        value = self.operand(s.value, f)
        old = load_element(ref, idx)
        op = s.op
        if op == "cas":
            compare = self.operand(s.compare, f)
            # Compared bit for bit, as the native compare-and-swap does.
            new = value if np.asarray(old).tobytes() == np.asarray(compare).tobytes() else old
        else:
            new = _ATOMIC_OPS[op](old, value)
        store_element(ref, idx, coerce(new, ref.dtype))
        if s.result is not None:
            f.values[s.result.id] = old

    def exec_load_local(self, s: ir.LoadLocal, f: Frame) -> None:
        f.values[s.result.id] = f.locals[s.local.id]

    def exec_store_local(self, s: ir.StoreLocal, f: Frame) -> None:
        f.locals[s.local.id] = self.operand(s.value, f)

    def exec_tid(self, s: ir.Tid, f: Frame) -> None:
        if s.dim < 0:
            v = self.tid
        else:
            v = self.tid_nd[s.dim] if s.dim < len(self.tid_nd) else 0
        f.values[s.result.id] = np.int32(v)

    def exec_if(self, s: ir.If, f: Frame) -> int:
        return self.exec_block(s.then if self.operand(s.cond, f) else s.orelse, f)

    def exec_for(self, s: ir.ForRange, f: Frame) -> int:
        it = int(self.operand(s.start, f))
        stop = int(self.operand(s.stop, f))
        step = int(self.operand(s.step, f))
        if step == 0:
            raise Fault("range() step is zero: the loop would never end")
        make = s.var.type._np_.type
        var = s.var.id
        exit_flag = getattr(s, "exit", None)
        while it < stop if step > 0 else it > stop:
            f.locals[var] = make(it) if -(2**31) <= it < 2**31 else cast_scalar(it, s.var.type)
            jump = self.exec_block(s.body, f)
            if jump == _BREAK:
                break
            if jump == _RETURN:
                return _RETURN
            # As in the emitted C++, `continue` skips the end-of-iteration exit test.
            if jump != _CONTINUE and exit_flag is not None and f.locals[exit_flag.id]:
                break
            it += step
            self.loc = s.loc
        return 0

    def exec_while(self, s: ir.While, f: Frame) -> int:
        exit_flag = getattr(s, "exit", None)
        while True:
            self.exec_block(s.cond_block, f)
            if not self.operand(s.cond, f):
                break
            jump = self.exec_block(s.body, f)
            if jump == _BREAK:
                break
            if jump == _RETURN:
                return _RETURN
            if jump != _CONTINUE and exit_flag is not None and f.locals[exit_flag.id]:
                break
            self.loc = s.loc
        return 0

    def exec_return(self, s: ir.Return, f: Frame) -> int:
        if s.value is not None:
            f.ret = self.operand(s.value, f)
        return _RETURN


def _no_op(s: Any, f: Frame) -> None:
    return None


def _slice_text(k: Any) -> str:
    if isinstance(k, slice):
        return ":".join("" if p is None else str(p) for p in (k.start, k.stop, k.step)).rstrip(":") or ":"
    return str(k)


def _raise_at(exc: BaseException, loc: SourceLoc | None, variables: dict[str, Any]) -> NoReturn:
    """Raise ``exc`` from a code object placed at the user's file and line.

    The traceback then ends at the kernel line that failed (shown with its source), and ``pdb.pm()`` stops there
    with the thread's variables as globals.
    """
    if loc is None or loc.line < 2 or not loc.file:
        raise exc
    name = (loc.func or "kernel").split(".")[-1]
    if not name.isidentifier() or keyword.iskeyword(name):
        name = "kernel"
    code = compile("\n" * (loc.line - 2) + f"def {name}():\n    raise __treadle_error__\n", loc.file, "exec")
    scope: dict[str, Any] = dict(variables)
    scope["__treadle_error__"] = exc
    exec(code, scope)  # noqa: S102 - our own two-line function, compiled only to carry the user's file and line
    scope[name]()
    raise exc  # pragma: no cover - the call above always raises


# ----------------------------------------------------------------------------------------------------------------
# Values
# ----------------------------------------------------------------------------------------------------------------


def _build_composite(t: Any, args: list[Any]) -> np.ndarray:
    """``T(args...)`` for a vector/matrix type, with the C++ constructors' meaning."""
    dtype = scalar_of(t)._np_
    shape = tuple(t._shape_)
    if not args:
        return np.zeros(shape, dtype=dtype)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, np.ndarray):  # conversion from another precision (static_cast per component)
            return np.asarray(a).astype(dtype).reshape(shape)
        return np.full(shape, a, dtype=dtype)  # one scalar fills every component
    if isinstance(args[0], np.ndarray):  # a matrix from row vectors
        return np.stack(args).astype(dtype).reshape(shape)
    return np.array(args, dtype=dtype).reshape(shape)


def _atomic_min(old: Any, v: Any) -> Any:
    return np.where((v < old) | np.not_equal(old, old), v, old)  # fmin of slot and value (native/atomic.h)


def _atomic_max(old: Any, v: Any) -> Any:
    return np.where((v > old) | np.not_equal(old, old), v, old)


_ATOMIC_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "min": _atomic_min,
    "max": _atomic_max,
    "exch": lambda old, v: v,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}


# ----------------------------------------------------------------------------------------------------------------
# Launch
# ----------------------------------------------------------------------------------------------------------------


def instance_for(kernel: Any, args: Sequence[Any]) -> Any:
    """The kernel instance for these arguments (generic kernels are specialised on the argument types)."""
    if kernel.is_generic:
        return kernel.get_instance(tuple(value_type(v, t) for v, t in zip(args, kernel.param_types)))
    return kernel.get_instance(None)


def launch_shape(dim: Any) -> tuple[int, ...]:
    """The launch grid of ``dim`` as a tuple."""
    b = launch_bounds(dim)  # the same validation (and messages) as compiled launches
    return tuple(int(b.shape[i]) for i in range(b.ndim))


def argument_values(inst: Any, args: Sequence[Any], device: Any) -> list[Any]:
    """Check the arguments as a compiled launch does, then convert them to interpreter values."""
    array = array_class()
    kernel = inst.kernel
    values = []
    for name, t, v in zip(kernel.param_names, inst.types, args):
        pack_arg(name, t, v, device, kernel)  # raises the usual LaunchError for a wrong argument
        if isinstance(t, ArrayT) and v is not None and not isinstance(v, array):
            v = array(v, dtype=None if contains_any(t.dtype) else t.dtype, copy=False)
        values.append(host_value(v, t, name))
    return values


class InterpretedLaunch(ParamSetters):
    """What ``wp.launch(..., record_cmd=True)`` returns in interpret mode: replays the launch in the interpreter."""

    def __init__(self, inst: Any, shape: tuple[int, ...], args: list[Any], device: Any) -> None:
        self.kernel = inst.kernel
        self.instance = inst
        self.shape = shape
        self.args = args
        self.device = device

    def set_dim(self, dim: Any) -> None:
        """Change the launch grid."""
        self.shape = launch_shape(dim)

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        """Replace one argument by position."""
        if adjoint:
            raise NotImplementedError("gradient buffers of recorded adjoint launches are not supported in interpret "
                                      "mode; record the launch with wp.config.mode = 'release'")
        self.args[index] = value

    def launch(self, stream: Any = None) -> None:
        """Run the recorded launch again (interpreted)."""
        Interpreter(self.instance, self.shape, argument_values(self.instance, self.args, self.device)).run()


__all__ = ["Interpreter", "InterpretedLaunch", "InterpretError", "argument_values", "instance_for", "launch_shape"]
