"""The typed intermediate representation between the Python AST and C++.

A function body is a :class:`Block` of statements. Expressions are lowered to SSA :class:`Value` s produced by
instructions; Python variables live in mutable :class:`Local` slots. Control flow stays structured (``If``,
``ForRange``, ``While``) so that the emitter can write readable C++ and the autodiff pass can build the reverse
sweep per region. Every statement carries the :class:`~treadle._src.core.errors.SourceLoc` of the Python code it came
from.

The IR is closed: every field a pass fills in is declared on its node class, and the classes have ``__slots__``,
so a pass cannot attach anything else. :func:`verify` checks structure and types; the frontend runs its structural
part on every lowered function, and with ``TREADLE_VERIFY_IR=1`` (the test suite sets it) every pass runs the full
check on its result (:func:`verify_pass`).

Only the emitter turns this into text; :func:`format_func` prints it for ``TREADLE_DUMP=ir`` and for tests.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from ..core.errors import SourceLoc
from ..types.typesys import type_str


class Value:
    """An SSA value: the result of exactly one instruction."""

    __slots__ = ("id", "type", "hint")

    def __init__(self, id: int, type: Any, hint: str = "") -> None:
        self.id = id
        self.type = type
        self.hint = hint

    def __repr__(self) -> str:
        return f"%{self.id}"


class Const:
    """A compile-time constant operand.

    ``weak`` marks untyped Python literals: they adapt to the scalar type of the other operand of a binary
    operator (``x * 2.0`` with a float64 ``x`` stays float64).
    """

    __slots__ = ("value", "type", "weak")

    def __init__(self, value: Any, type: Any, weak: bool = False) -> None:
        self.value = value
        self.type = type
        self.weak = weak

    def __repr__(self) -> str:
        return f"{self.value!r}:{type_str(self.type)}"


Operand = Any


class Local:
    """A mutable variable slot (a Python variable of the kernel)."""

    __slots__ = ("id", "name", "type")

    def __init__(self, id: int, name: str, type: Any) -> None:
        self.id = id
        self.name = name
        self.type = type

    def __repr__(self) -> str:
        return f"${self.name}"


class LocalRef:
    """A local passed by reference to a builtin that updates it in place (``hash_grid_query_next(q, index)``)."""

    __slots__ = ("local",)

    def __init__(self, local: Local) -> None:
        self.local = local

    @property
    def type(self) -> Any:
        return self.local.type

    def __repr__(self) -> str:
        return f"&${self.local.name}"


class SliceSpec:
    """``start:stop:step`` in an array subscript (each part an operand or ``None``)."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        self.start = start
        self.stop = stop
        self.step = step

    def __repr__(self) -> str:
        return f"{self.start!r}:{self.stop!r}:{self.step!r}"


@dataclasses.dataclass(eq=False, slots=True)
class Stmt:
    """Base of all statements."""

    loc: SourceLoc | None


@dataclasses.dataclass(eq=False, slots=True)
class Call(Stmt):
    """Call a builtin overload (the registry decides the C++ symbol and adjoint)."""

    result: Value | None
    overload: Any
    args: list[Operand]


@dataclasses.dataclass(eq=False, slots=True)
class CallFunc(Stmt):
    """Call a user ``@func`` instance."""

    result: Value | None
    func: Any
    args: list[Operand]


@dataclasses.dataclass(eq=False, slots=True)
class CallGrad(Stmt):
    """``wp.grad(f)(args)``: the gradient of scalar-valued ``f`` w.r.t. each argument (forward-only)."""

    result: Value
    target: Any  # a builtin Overload or a user FuncInstance
    args: list[Operand]


@dataclasses.dataclass(eq=False, slots=True)
class Construct(Stmt):
    """Build a value of ``result.type`` (vector, matrix, struct, scalar conversion) from ``args``."""

    result: Value
    args: list[Operand]


@dataclasses.dataclass(eq=False, slots=True)
class Extract(Stmt):
    """Read a component: ``src[index...]`` for vectors/matrices/tuples, or field ``name`` of a struct."""

    result: Value
    src: Operand
    index: list[Operand]
    field: str | None = None


@dataclasses.dataclass(eq=False, slots=True)
class Insert(Stmt):
    """A copy of ``src`` with one component (or struct field) replaced by ``value``."""

    result: Value
    src: Operand
    index: list[Operand]
    value: Operand
    field: str | None = None


@dataclasses.dataclass(eq=False, slots=True)
class ArrayLoad(Stmt):
    """``result = arr[indices]``.

    ``update`` marks the load that an assignment to a component of an array element (``a[i].x = v``,
    ``a[i][0] = v``) makes of the element before storing it back at the same index: the store's adjoint takes (and
    zeroes) the element's gradient and this load passes the untouched components' share back; it is not an input
    of the kernel for the tape's overwrite check.
    """

    result: Value
    array: Operand
    indices: list[Operand]
    update: bool = False


@dataclasses.dataclass(eq=False, slots=True)
class ArrayStore(Stmt):
    """``arr[indices] = value``."""

    array: Operand
    indices: list[Operand]
    value: Operand


@dataclasses.dataclass(eq=False, slots=True)
class ArrayView(Stmt):
    """``result = arr[indices]`` with fewer indices than dimensions: a sub-array."""

    result: Value
    array: Operand
    indices: list[Operand]


@dataclasses.dataclass(eq=False, slots=True)
class LocalArray(Stmt):
    """``result = wp.zeros(shape, dtype)`` inside a kernel: a zeroed array in thread-private memory."""

    result: Value
    shape: tuple[int, ...]


@dataclasses.dataclass(eq=False, slots=True)
class ArrayAtomic(Stmt):
    """``result = atomic_<op>(arr, indices, value)`` returning the old value."""

    result: Value | None
    op: str
    array: Operand
    indices: list[Operand]
    value: Operand
    compare: Operand | None = None


@dataclasses.dataclass(eq=False, slots=True)
class DeclLocal(Stmt):
    """Declare a local (zero-initialised)."""

    local: Local


@dataclasses.dataclass(eq=False, slots=True)
class LoadLocal(Stmt):
    """``result = local``."""

    result: Value
    local: Local


@dataclasses.dataclass(eq=False, slots=True)
class StoreLocal(Stmt):
    """``local = value``."""

    local: Local
    value: Operand


@dataclasses.dataclass(eq=False, slots=True)
class Tid(Stmt):
    """The thread index: ``result`` is the index along launch dimension ``dim``."""

    result: Value
    dim: int


@dataclasses.dataclass(eq=False, slots=True)
class Block:
    """A sequence of statements."""

    stmts: list[Stmt] = dataclasses.field(default_factory=list)
    #: ``@func_grad`` bodies: the locals holding the adjoints of the primal function's parameters.
    adjoint_locals: list[Local] = dataclasses.field(default_factory=list)

    def __iter__(self) -> Iterator[Stmt]:
        return iter(self.stmts)


@dataclasses.dataclass(eq=False, slots=True)
class If(Stmt):
    """``if cond: then else: orelse``."""

    cond: Operand
    then: Block
    orelse: Block


@dataclasses.dataclass(eq=False, slots=True)
class ForRange(Stmt):
    """``for var in range(start, stop, step): body`` (``step`` may be negative).

    ``exit`` (set by ``structurize``) is the flag after whose iteration the loop leaves.
    """

    var: Local
    start: Operand
    stop: Operand
    step: Operand
    body: Block
    exit: Local | None = None


@dataclasses.dataclass(eq=False, slots=True)
class While(Stmt):
    """``while True: cond_block; if not cond: break; body``; ``exit`` as for :class:`ForRange`."""

    cond_block: Block
    cond: Operand
    body: Block
    exit: Local | None = None


@dataclasses.dataclass(eq=False, slots=True)
class Break(Stmt):
    """Leave the innermost loop."""


@dataclasses.dataclass(eq=False, slots=True)
class Continue(Stmt):
    """Next iteration of the innermost loop."""


@dataclasses.dataclass(eq=False, slots=True)
class Return(Stmt):
    """Return from a function (``value`` is ``None`` in kernels and void functions)."""

    value: Operand | None


@dataclasses.dataclass(eq=False, slots=True)
class FuncIR:
    """A lowered kernel or function: parameters, locals and the body.

    ``value_type`` is the type of the value the function's ``return`` statements give (``return_type`` adds the
    by-reference parameters handed back, if any); ``native`` is the C++ body of a ``@func_native`` function (which
    has no IR body); ``retval`` (set by ``structurize``) is the local that holds the return value.
    """

    name: str
    params: list[Local]
    return_type: Any
    body: Block
    locals: list[Local]
    is_kernel: bool
    launch_ndim: int = 1
    loc: SourceLoc | None = None
    value_type: Any = None
    native: str | None = None
    retval: Local | None = None


def walk(block: Block) -> Iterator[Stmt]:
    """Yield every statement of ``block`` and of its nested blocks, in program order."""
    for s in block.stmts:
        yield s
        if isinstance(s, If):
            yield from walk(s.then)
            yield from walk(s.orelse)
        elif isinstance(s, ForRange):
            yield from walk(s.body)
        elif isinstance(s, While):
            yield from walk(s.cond_block)
            yield from walk(s.body)


def _fmt_stmt(s: Stmt, indent: str, out: list[str]) -> None:
    def res(v: Value | None) -> str:
        return f"{v!r}:{type_str(v.type)} = " if v is not None else ""

    if isinstance(s, Call):
        out.append(f"{indent}{res(s.result)}{s.overload.builtin.name}{tuple(s.args)!r}")
    elif isinstance(s, CallFunc):
        out.append(f"{indent}{res(s.result)}call {s.func.name}{tuple(s.args)!r}")
    elif isinstance(s, CallGrad):
        target = s.target.builtin.name if hasattr(s.target, "builtin") else s.target.name  # an overload or a @func
        out.append(f"{indent}{res(s.result)}grad {target}{tuple(s.args)!r}")
    elif isinstance(s, Construct):
        out.append(f"{indent}{res(s.result)}construct{tuple(s.args)!r}")
    elif isinstance(s, Extract):
        what = f".{s.field}" if s.field else f"{s.index!r}"
        out.append(f"{indent}{res(s.result)}extract {s.src!r}{what}")
    elif isinstance(s, Insert):
        what = f".{s.field}" if s.field else f"{s.index!r}"
        out.append(f"{indent}{res(s.result)}insert {s.src!r}{what} <- {s.value!r}")
    elif isinstance(s, ArrayLoad):
        out.append(f"{indent}{res(s.result)}load {s.array!r}{s.indices!r}")
    elif isinstance(s, ArrayView):
        out.append(f"{indent}{res(s.result)}view {s.array!r}{s.indices!r}")
    elif isinstance(s, LocalArray):
        out.append(f"{indent}{res(s.result)}local_array{s.shape!r}")
    elif isinstance(s, ArrayStore):
        out.append(f"{indent}store {s.array!r}{s.indices!r} <- {s.value!r}")
    elif isinstance(s, ArrayAtomic):
        out.append(f"{indent}{res(s.result)}atomic_{s.op} {s.array!r}{s.indices!r} {s.value!r}")
    elif isinstance(s, DeclLocal):
        out.append(f"{indent}local {s.local!r}:{type_str(s.local.type)}")
    elif isinstance(s, LoadLocal):
        out.append(f"{indent}{res(s.result)}{s.local!r}")
    elif isinstance(s, StoreLocal):
        out.append(f"{indent}{s.local!r} <- {s.value!r}")
    elif isinstance(s, Tid):
        out.append(f"{indent}{res(s.result)}tid[{s.dim}]")
    elif isinstance(s, If):
        out.append(f"{indent}if {s.cond!r}:")
        _fmt_block(s.then, indent + "  ", out)
        if s.orelse.stmts:
            out.append(f"{indent}else:")
            _fmt_block(s.orelse, indent + "  ", out)
    elif isinstance(s, ForRange):
        out.append(f"{indent}for {s.var!r} in range({s.start!r}, {s.stop!r}, {s.step!r}):")
        _fmt_block(s.body, indent + "  ", out)
    elif isinstance(s, While):
        out.append(f"{indent}while:")
        _fmt_block(s.cond_block, indent + "  ", out)
        out.append(f"{indent}  check {s.cond!r}")
        _fmt_block(s.body, indent + "  ", out)
    elif isinstance(s, Break):
        out.append(f"{indent}break")
    elif isinstance(s, Continue):
        out.append(f"{indent}continue")
    elif isinstance(s, Return):
        out.append(f"{indent}return {s.value!r}")
    else:  # pragma: no cover - new statement kinds must be added here
        out.append(f"{indent}{s!r}")


def _fmt_block(block: Block, indent: str, out: list[str]) -> None:
    for s in block.stmts:
        _fmt_stmt(s, indent, out)


def format_func(f: FuncIR) -> str:
    """Readable text of a lowered function (for dumps and tests)."""
    params = ", ".join(f"{p.name}: {type_str(p.type)}" for p in f.params)
    out = [f"{'kernel' if f.is_kernel else 'func'} {f.name}({params}) -> {type_str(f.return_type)}:"]
    _fmt_block(f.body, "  ", out)
    return "\n".join(out)


def operands(s: Stmt) -> Iterator[Any]:
    """The operands ``s`` itself reads (not those of nested blocks; a ``While``'s condition is included)."""

    def flat(op: Any) -> Iterator[Any]:
        if isinstance(op, SliceSpec):
            for part in (op.start, op.stop, op.step):
                yield from flat(part)
        elif op is not None:
            yield op

    for name in ("args", "index", "indices"):
        for op in getattr(s, name, None) or []:
            yield from flat(op)
    for name in ("src", "value", "array", "cond", "start", "stop", "step", "compare"):
        yield from flat(getattr(s, name, None))


class IRError(AssertionError):
    """The IR breaks an invariant (a compiler bug, not a user error)."""


def verify_enabled() -> bool:
    """Whether every pass verifies its result in full (``TREADLE_VERIFY_IR=1``; the test suite sets it)."""
    return os.environ.get("TREADLE_VERIFY_IR", "") not in ("", "0")


def verify_pass(f: FuncIR, stage: str, structure_only: bool = False) -> None:
    """Verify the result of a pass: always its structure if ``structure_only``, in full with ``TREADLE_VERIFY_IR``."""
    if verify_enabled():
        try:
            verify(f, types=True)
        except IRError as e:
            raise IRError(f"after {stage}: {e}") from None
    elif structure_only:
        verify(f, types=False)


def verify(f: FuncIR, types: bool = True) -> None:
    """Check the invariants of ``f`` (raises :class:`IRError`).

    Structure: each value is defined once and before its uses (in program order, which nested blocks follow),
    break/continue are inside loops, locals are the function's own. Types (``types=True``): every statement's
    operands and result have the types the statement implies (see :func:`_check_types`).
    """
    defined: set[int] = set()
    own = {loc.id for loc in (*f.params, *f.locals, *f.body.adjoint_locals)}

    def use(op: Any) -> None:
        if isinstance(op, Value) and op.id not in defined:
            raise IRError(f"IR: {op!r} used before definition in {f.name}")
        if isinstance(op, LocalRef) and op.local.id not in own:
            raise IRError(f"IR: {op!r} is not a local of {f.name}")

    def define(v: Value | None) -> None:
        if v is None:
            return
        if v.id in defined:
            raise IRError(f"IR: {v!r} defined twice in {f.name}")
        defined.add(v.id)

    def check(block: Block, in_loop: bool) -> None:
        for s in block.stmts:
            for op in operands(s):
                if not (isinstance(s, While) and op is s.cond):  # defined in the condition block, checked below
                    use(op)
            if isinstance(s, (Break, Continue)) and not in_loop:
                raise IRError(f"IR: {type(s).__name__} outside a loop in {f.name}")
            local = getattr(s, "local", None)
            if isinstance(local, Local) and local.id not in own:
                raise IRError(f"IR: {local!r} is not a local of {f.name}")
            if isinstance(s, If):
                check(s.then, in_loop)
                check(s.orelse, in_loop)
            elif isinstance(s, ForRange):
                check(s.body, True)
            elif isinstance(s, While):
                check(s.cond_block, True)
                use(s.cond)
                check(s.body, True)
            define(getattr(s, "result", None))
            if types:
                _check_types(f, s)

    check(f.body, False)


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def _is_int_type(t: Any) -> bool:
    from ..types.typesys import is_int

    return t is not None and is_int(t)


def _check_types(f: FuncIR, s: Stmt) -> None:  # noqa: C901 - one case per statement kind
    """The type rules of the statements (operands typed ``None`` are compile-time arguments, not checked)."""
    from ..types import scalars
    from ..types.typesys import ArrayT, is_composite, is_struct

    def fail(why: str) -> None:
        raise IRError(f"IR: {why} in {f.name}: {_stmt_text(s)}")

    def want(v: Any, t: Any, what: str) -> None:
        if v is not None and v.type is not None and t is not None and not _same(v.type, t):
            fail(f"{what} has type {type_str(v.type)}, expected {type_str(t)}")

    def ints(ops: list[Any], what: str) -> None:
        for i in ops:
            if isinstance(i, SliceSpec):
                ints([x for x in (i.start, i.stop, i.step) if x is not None], what)
            elif i is not None and i.type is not None and not _is_int_type(i.type):
                fail(f"{what} of type {type_str(i.type)}")

    def array(op: Any) -> Any:
        t = getattr(op, "type", None)
        if not isinstance(t, ArrayT):
            fail(f"an array operand of type {type_str(t)}")
        return t

    def condition(c: Any) -> None:
        t = getattr(c, "type", None)
        if not (t is scalars.bool or _is_int_type(t)):
            fail(f"a condition of type {type_str(t)}")

    r = getattr(s, "result", None)
    if isinstance(r, Value) and r.type is None and not isinstance(s, (Call, CallFunc)):
        fail("an untyped result")
    if isinstance(s, Call):
        ret = s.overload.ret
        if s.result is None:
            return
        want(s.result, ret, "the result")
    elif isinstance(s, (LoadLocal, StoreLocal)):
        if isinstance(s, LoadLocal):
            want(s.result, s.local.type, "the loaded value")
        else:
            want(s.value, s.local.type, "the stored value")
    elif isinstance(s, (ArrayLoad, ArrayStore, ArrayAtomic)):
        t = array(s.array)
        ints(s.indices, "an index")
        if isinstance(s, ArrayStore):
            if len(s.indices) == t.ndim:
                want(s.value, t.dtype, "the stored value")
        elif isinstance(s, ArrayAtomic):
            if len(s.indices) != t.ndim:
                fail(f"{len(s.indices)} indices for a {t.ndim}-d array")
            want(s.value, t.dtype, "the atomic's value")
            want(s.compare, t.dtype, "the compared value")
            want(s.result, t.dtype, "the old value")
        elif len(s.indices) == t.ndim and not any(isinstance(i, SliceSpec) for i in s.indices):
            want(s.result, t.dtype, "the loaded element")
    elif isinstance(s, ArrayView):
        array(s.array)
        ints(s.indices, "an index")
        if not isinstance(s.result.type, ArrayT):
            fail("a view that is not an array")
    elif isinstance(s, LocalArray):
        if not isinstance(s.result.type, ArrayT) or s.result.type.ndim != len(s.shape):
            fail("a local array of the wrong dimensionality")
    elif isinstance(s, Insert):
        want(s.result, s.src.type, "the updated value")
        ints(s.index, "a component index")
    elif isinstance(s, Extract):
        if s.field is None and not (is_composite(s.src.type) or _is_tuple(s.src.type)):
            fail(f"a component of {type_str(s.src.type)}")
        if s.field is not None and not is_struct(s.src.type):
            fail(f"field '{s.field}' of {type_str(s.src.type)}")
        ints(s.index, "a component index")
    elif isinstance(s, Tid):
        if not _is_int_type(s.result.type):
            fail("a thread index that is not an integer")
    elif isinstance(s, If):
        condition(s.cond)
    elif isinstance(s, While):
        condition(s.cond)
    elif isinstance(s, ForRange):
        if not _is_int_type(s.var.type):
            fail(f"a loop variable of type {type_str(s.var.type)}")
        for part in (s.start, s.stop, s.step):
            want(part, s.var.type, "a range bound")
    elif isinstance(s, Return):
        if f.is_kernel and s.value is not None:
            fail("a kernel returning a value")
        if s.value is not None:
            want(s.value, f.return_type, "the returned value")


def _is_tuple(t: Any) -> bool:
    from ..types.typesys import TupleT

    return isinstance(t, TupleT)


def _stmt_text(s: Stmt) -> str:
    out: list[str] = []
    _fmt_stmt(s, "", out)
    return out[0] if out else type(s).__name__


def local_array_values(f: FuncIR) -> set[int]:
    """Ids of the values that refer to thread-private local arrays (directly, through variables or views)."""
    vals: set[int] = set()
    locs: set[int] = set()
    for _ in range(2):  # twice, so values flowing around loops are seen
        for s in walk(f.body):
            if isinstance(s, LocalArray):
                vals.add(s.result.id)
            elif isinstance(s, StoreLocal) and isinstance(s.value, Value) and s.value.id in vals:
                locs.add(s.local.id)
            elif isinstance(s, LoadLocal) and s.local.id in locs:
                vals.add(s.result.id)
            elif isinstance(s, ArrayView) and isinstance(s.array, Value) and s.array.id in vals:
                vals.add(s.result.id)
    return vals
