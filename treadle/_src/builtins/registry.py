"""The one table of builtins.

Each builtin is declared once (see :func:`builtin`): name, type rule, C++ symbol or operator, differentiability and
the adjoint's properties, side effects, doc group, docstring, the host implementation and how the interpreter runs
it, and how the frontend lowers it. Everything else reads this declaration, never a table of builtin names of its
own: type inference (:meth:`Builtin.resolve`), the frontend (:class:`Lowering`), the C++ emitter (``Overload.cpp``,
:class:`Op`), autodiff (``adj_<cpp>`` by convention, see ``treadle/native``; ``zero_derivative``, ``singular``,
``pass_through``, ``replay``), the IR analyses (``metadata_only``, ``shape_query``, ``infix``), the interpreter
(:class:`Interp`), Python-scope calls (:meth:`Builtin.host_call`), the public module attributes and the docs.

Type rules are plain functions ``rule(types, consts) -> return type`` that raise :class:`NoMatch` when the
argument types do not fit. ``consts`` holds the Python value of each argument that is a compile-time constant
(``NOT_CONST`` otherwise), for builtins whose result type depends on a value (``identity(n=3, dtype=float)``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..types.typesys import is_composite, scalar_of, type_str


class NoMatch(Exception):
    """Raised by a type rule whose argument types do not fit."""


class _NotConst:
    def __repr__(self) -> str:
        return "NOT_CONST"


NOT_CONST: Any = _NotConst()

TypeRule = Callable[[Sequence[Any], Sequence[Any]], Any]


class Op(enum.Enum):
    """A builtin that the emitters write as a C++ operator or special form instead of a ``treadle::`` call.

    The value of a binary or unary operator member is its C++ spelling.
    """

    SELECT = "select"  #: ``cond ? value_if_true : value_if_false`` from ``select(cond, if_false, if_true)``
    WHERE = "where"  #: ``cond ? a : b`` from ``where(cond, a, b)``
    SHAPE = "shape"  #: ``arr.shape[d]``
    PRINTF = "printf"  #: ``treadle::printf_flush(fmt, ...)`` with the overload's format string
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="
    NOT = "!"  #: unary
    ARRAY_VALID = "(bool)"  #: unary: an array's data pointer is not null

    @property
    def binary(self) -> bool:
        """True for the infix comparison operators."""
        return self in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE)


class Lowering(enum.Enum):
    """How the frontend lowers a call of the builtin (``compiler/lower_call.py`` has one lowering per member)."""

    CALL = "call"  #: resolve the overload for the argument types and emit an ``ir.Call``
    TID = "tid"  #: ``wp.tid()``: thread indices (``ir.Tid``), unpacked by the assignment
    PRINT = "print"  #: ``print(...)``: formatted printing of any value
    PRINTF = "printf"  #: ``printf(fmt, ...)``: a constant format string and scalar arguments
    ATOMIC = "atomic"  #: ``atomic_<op>(arr, i..., value)``: an ``ir.ArrayAtomic``
    LEN = "len"  #: ``len(x)``: a constant for vectors, matrices and tuples, a shape query for arrays
    CAST = "cast"  #: ``cast(a, dtype)``: the type argument is a compile-time constant
    EXPECT_NEAR = "expect_near"  #: the tolerance argument is optional
    TILE = "tile"  #: arguments bound to ``Builtin.params`` (keywords, defaults, compile-time shapes, in-place tiles)


class Interp(enum.Enum):
    """How interpret mode runs a builtin whose host implementation alone does not cover kernel use.

    A builtin without this fact runs its host implementation (through its by-reference arguments, if it has any).
    ``backends/interpret/handlers.py`` implements one handler per member; ``NONE`` states that the builtin has no
    Python form, so interpret mode reports it as unsupported.
    """

    NONE = "none"  #: no host form (native-only builtins: spatial queries, volumes, textures)
    COMPARE = "compare"  #: a comparison operator (``Builtin.op``); vectors and structs compare whole
    NOT = "not"
    INT_DIVISION = "int_division"  #: integer division by zero is a fault, as in checked kernels
    PRINT = "print"  #: ``print(value)``: one value on a line
    PRINTF = "printf"  #: the formatted form every kernel ``print``/``printf`` lowers to (``Overload.fmt``)
    EXPECT_EQ = "expect_eq"
    EXPECT_NEQ = "expect_neq"
    EXPECT_NEAR = "expect_near"
    LEN = "len"
    ARRAY_DIM = "array_dim"
    ARRAY_VALID = "array_valid"
    ARRAY_PTR = "array_ptr"
    ARRAY_FROM_PTR = "array_from_ptr"
    LOWER_BOUND = "lower_bound"
    IDENTITY = "identity"
    MIN = "min"  #: NaN handling and argmin of the native headers
    MAX = "max"
    CLAMP = "clamp"
    ABS = "abs"
    ARGMIN = "argmin"
    ARGMAX = "argmax"
    INVERSE = "inverse"  #: a singular matrix gives the zero matrix
    BIT_CAST = "bit_cast"
    SAMPLE_CDF = "sample_cdf"
    RANDOM = "random"  #: the host draws from the state argument, which advances in place
    IN_PLACE = "in_place"  #: updates its first argument; ``Builtin.twin`` computes the new value as a copy


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclasses.dataclass(frozen=True)
class Param:
    """A parameter of a builtin lowered with :attr:`Lowering.TILE`.

    Attributes:
        name: the keyword name.
        default: the value when the call omits it (``REQUIRED``: the call must give it; ``None``: the parameter is
            then absent, neither a type-rule entry nor an operand).
        static: a compile-time value (shape, dtype, storage, axis, a function): passed to the type rule in
            ``consts`` with type ``None``, never an operand.
        inout: a tile variable of the caller updated in place: the call's result is its new value, stored back
            into the variable; the call itself then has no value. With several such parameters the C++ function
            ``<cpp>_<name>`` computes each one's new value.
        fn_args: for a function parameter (``tile_map``'s ``op``): how many elements of the next operand it takes
            (``tile_reduce``: 2); 0: one element (or value) of each operand after it.
    """

    name: str
    default: Any = REQUIRED
    static: bool = False
    inout: bool = False
    fn_args: int = 0


@dataclasses.dataclass(frozen=True, eq=False)
class Overload:
    """A builtin resolved for concrete argument types."""

    builtin: Builtin
    arg_types: tuple[Any, ...]
    ret: Any
    cpp: str
    template: tuple[Any, ...] = ()
    fmt: str | None = None  #: the format string of a printing call (``Op.PRINTF``)
    #: A function applied per element (``tile_map``): a ``tile_common.TileCallee``, passed first as a functor
    callee: Any = None

    @property
    def differentiable(self) -> bool:
        """Whether gradients flow through this call."""
        return self.builtin.differentiable


@dataclasses.dataclass(eq=False)
class Builtin:
    """One builtin function as declared in a group file (the fields are described at :func:`builtin`)."""

    name: str
    group: str
    rule: TypeRule
    doc: str
    signature: str
    cpp: str
    differentiable: bool = True
    host: Callable[..., Any] | None = None
    kernel_only: bool = False
    lowering: Lowering = Lowering.CALL
    template: Callable[[Sequence[Any], Any], Sequence[Any]] | None = None
    static_args: int = 0
    ref_args: tuple[int, ...] = ()
    op: Op | None = None
    side_effects: bool = False
    replay: bool = True
    zero_derivative: bool = False
    singular: bool = False
    pass_through: bool = False
    metadata_only: bool = False
    shape_query: bool = False
    infix: str = ""
    atomic: str = ""
    partner: str = ""
    interpret: Interp | None = None
    twin: str = ""
    params: tuple[Param, ...] = ()
    grad_sink: bool = False
    _cache: dict[tuple[Any, ...], Overload] = dataclasses.field(default_factory=dict)

    def resolve(self, types: Sequence[Any], consts: Sequence[Any] | None = None) -> Overload:
        """The overload for these argument types; raises :class:`NoMatch` with a readable reason otherwise."""
        key = tuple(types)
        if consts is None or all(c is NOT_CONST for c in consts):
            hit = self._cache.get(key)
            if hit is not None:
                return hit
            cacheable = True
            consts = [NOT_CONST] * len(types)
        else:
            cacheable = False
        ret = self.rule(list(types), list(consts))
        template = tuple(self.template(list(types), ret)) if self.template else ()
        ov = Overload(self, key, ret, self.cpp, template)
        if cacheable:
            self._cache[key] = ov
        return ov

    def host_call(self, *args: Any) -> Any:
        """Evaluate the builtin on host values (Python scope)."""
        if self.host is None or self.kernel_only:
            raise RuntimeError(
                f"'{self.name}' can only be called inside a @kernel or @func, not from Python scope"
            )
        from ..types.hostvals import from_numpy_result, host_type_of, to_numpy

        types = [host_type_of(a) for a in args]
        try:
            ov = self.resolve(types)
        except NoMatch as e:
            sig = ", ".join(type_str(t) for t in types)
            raise TypeError(f"{self.name}({sig}): {e}. Valid forms: {self.signature}") from None
        values = [to_numpy(a, t) for a, t in zip(args, types)]
        # Host implementations marked _treadle_typed_ also receive the argument types (e.g. quaternion products).
        result = self.host(types, *values) if getattr(self.host, "_treadle_typed_", False) else self.host(*values)
        return from_numpy_result(result, ov.ret)


class Registry:
    """All builtins by name."""

    def __init__(self) -> None:
        self.builtins: dict[str, Builtin] = {}

    def add(self, b: Builtin) -> Builtin:
        if b.name in self.builtins:
            raise ValueError(f"builtin '{b.name}' declared twice")
        self.builtins[b.name] = b
        return b

    def get(self, name: str) -> Builtin | None:
        return self.builtins.get(name)

    def groups(self) -> dict[str, list[Builtin]]:
        out: dict[str, list[Builtin]] = {}
        for b in self.builtins.values():
            out.setdefault(b.group, []).append(b)
        return out


REGISTRY = Registry()


def builtin(
    name: str,
    *,
    group: str,
    rule: TypeRule,
    doc: str,
    signature: str,
    cpp: str | None = None,
    differentiable: bool = True,
    host: Callable[..., Any] | None = None,
    kernel_only: bool = False,
    lowering: Lowering = Lowering.CALL,
    template: Callable[[Sequence[Any], Any], Sequence[Any]] | None = None,
    static_args: int = 0,
    ref_args: tuple[int, ...] = (),
    op: Op | None = None,
    side_effects: bool = False,
    replay: bool = True,
    zero_derivative: bool = False,
    singular: bool = False,
    pass_through: bool = False,
    metadata_only: bool = False,
    shape_query: bool = False,
    infix: str = "",
    atomic: str = "",
    partner: str = "",
    interpret: Interp | None = None,
    twin: str = "",
    params: tuple[Param, ...] = (),
    grad_sink: bool = False,
) -> Builtin:
    """Declare a builtin (the only way builtins come into existence).

    Args:
        name: the builtin's name (public on ``treadle`` unless it starts with ``_``).
        group: the docs group.
        rule: ``rule(types, consts) -> return type``; raises :class:`NoMatch` when the arguments do not fit.
        doc: the docstring.
        signature: the documented forms.
        cpp: the C++ function in ``namespace treadle`` (default: the name); its adjoint is ``adj_<cpp>``.
        differentiable: whether gradients flow through the builtin.
        host: the NumPy implementation for Python-scope calls (and interpret mode).
        kernel_only: the builtin cannot be called from Python scope.
        lowering: how the frontend lowers a call (:class:`Lowering`).
        template: ``template(types, ret) -> tuple`` of C++ template arguments.
        static_args: how many leading arguments are compile-time constants.
        ref_args: argument positions passed by reference: the caller must pass a variable, which the builtin may
            update in place (``hash_grid_query_next(query, index)``).
        op: the C++ operator or special form the emitters write instead of a call (:class:`Op`).
        side_effects: the builtin does more than compute its result (prints, reports, writes memory).
        replay: the backward pass's forward replay runs the call again (printing and reporting builtins: no).
        zero_derivative: not differentiable, with derivative 0 wherever it exists (steps of piecewise-constant
            functions, bit reinterpretation): a gradient reaching it is rightly dropped, without a warning.
        singular: partial derivatives can be infinite or NaN at finite arguments (or overflow); the adjoint call
            runs only where the result's adjoint is not zero.
        pass_through: linear with unit coefficients: the adjoint passes the incoming adjoint on without reading
            the operands' values (``add``, ``sub``, ``neg``, ``pos``).
        metadata_only: reads an array argument's shape or pointer only, never its elements.
        shape_query: the result is an array extent (``len(arr)``: dimension 0, ``arr.shape[d]``).
        infix: the C++ infix operator that computes the builtin on integer scalars (launch-constant loop ranges).
        atomic: the atomic operation ``atomic_<op>`` performs, or that an augmented assignment with this operator
            makes on an array element (``arr[i] += v``; the bitwise ones on 32/64-bit integer elements only).
        partner: ``sin``/``cos``: the other function, computed with it in one call where both are needed
            (``treadle::<name>_<partner>``, adjoint ``treadle::<name>_of_<partner>``).
        interpret: how interpret mode runs it when the host implementation does not (:class:`Interp`).
        twin: for ``Interp.IN_PLACE``: the builtin whose host computes the updated first argument as a copy.
        params: the parameters of a :attr:`Lowering.TILE` builtin (:class:`Param`), in positional order.
        grad_sink: the call has no result, yet its adjoint moves gradients (a tile stored into an array: the
            array's gradient flows back into the tile's adjoint); the reverse sweep calls ``adj_<cpp>`` with the
            operands and their adjoints.
    """
    return REGISTRY.add(
        Builtin(
            name=name,
            group=group,
            rule=rule,
            doc=doc,
            signature=signature,
            cpp=cpp if cpp is not None else name,
            differentiable=differentiable,
            host=host,
            kernel_only=kernel_only,
            lowering=lowering,
            template=template,
            static_args=static_args,
            ref_args=ref_args,
            op=op,
            side_effects=side_effects,
            replay=replay,
            zero_derivative=zero_derivative,
            singular=singular,
            pass_through=pass_through,
            metadata_only=metadata_only,
            shape_query=shape_query,
            infix=infix,
            atomic=atomic,
            partner=partner,
            interpret=interpret,
            twin=twin,
            params=params,
            grad_sink=grad_sink,
        )
    )


# ----------------------------------------------------------------------------------------------------------------
# Rule helpers shared by the group files
# ----------------------------------------------------------------------------------------------------------------


def need(cond: bool, why: str) -> None:
    """Raise :class:`NoMatch` with ``why`` unless ``cond``."""
    if not cond:
        raise NoMatch(why)


def arity(types: Sequence[Any], *counts: int) -> None:
    """Require one of the given argument counts."""
    if len(types) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise NoMatch(f"expected {want} argument(s), got {len(types)}")


def same(types: Sequence[Any]) -> Any:
    """Require all argument types to be equal and return it."""
    first = types[0]
    for t in types[1:]:
        if t != first:
            raise NoMatch("arguments must have the same type, got " + ", ".join(type_str(x) for x in types))
    return first


def np_scalar(t: Any) -> Any:
    """The NumPy dtype of a scalar or composite type."""
    return scalar_of(t)._np_


def composite_or_scalar(t: Any) -> bool:
    """True for numeric scalars and composites."""
    from ..types.typesys import is_float, is_int

    return is_float(t) or is_int(t) or is_composite(t)


def as_array(x: Any) -> np.ndarray:
    """A NumPy view of a host value (helper for host implementations)."""
    return np.asarray(x)
