"""The C++ emitter: the only place that writes C++.

Each kernel instance becomes one self-contained block in its own namespace (structs, tuple types, the ``@func`` s it
calls, the argument struct, the per-thread body and an ``extern "C"`` entry point), so a block's text -- and
therefore its hash -- depends on nothing but that kernel. Blocks of several kernels can be concatenated into one
translation unit. ``#line`` directives map compiler messages back to Python lines.
"""

from __future__ import annotations

import math
from typing import Any

from ... import config
from ..builtins.registry import Op
from ..types import scalars
from ..types.typesys import (
    ArrayT,
    OpaqueType,
    TileStackT,
    TileT,
    TupleT,
    generic_kind,
    is_composite,
    is_struct,
    normalize_annotation,
    scalar_of,
)
from . import emit_entry, index_bounds, ir, reductions, streaming, uniform

_CHECKED_STMTS = (ir.ArrayLoad, ir.ArrayStore, ir.ArrayAtomic, ir.ArrayView, ir.Extract, ir.Insert, ir.Call,
                  ir.CallFunc)


def _writes_local(s: ir.Stmt, local: ir.Local) -> bool:
    """Whether ``s`` or a statement nested in it may change ``local``."""
    for t in (s, *_nested(s)):
        if isinstance(t, (ir.StoreLocal, ir.DeclLocal)) and t.local is local:
            return True
        if isinstance(t, ir.ForRange) and t.var is local:
            return True
        if any(isinstance(o, ir.LocalRef) and o.local is local for o in ir.operands(t)):
            return True
    return False


def _nested(s: ir.Stmt) -> list[ir.Stmt]:
    if isinstance(s, ir.If):
        return [*ir.walk(s.then), *ir.walk(s.orelse)]
    if isinstance(s, ir.ForRange):
        return list(ir.walk(s.body))
    if isinstance(s, ir.While):
        return [*ir.walk(s.cond_block), *ir.walk(s.body)]
    return []


def _reads(s: ir.Stmt, v: ir.Value) -> bool:
    return any(o is v for t in (s, *_nested(s)) for o in ir.operands(t))


def tile_reference_loads(b: ir.Block) -> set[int]:
    """The tile-typed ``LoadLocal`` results of ``b`` (not of nested blocks) that may be references to their local.

    Such a result binds a const reference instead of copying the local: no statement from the load to the value's last
    use in ``b`` may change the local. A tile is a value of up to many kilobytes; the copies a load per use made cost a 64x64 product's kernel about as
    much as its loads from memory.
    """
    out: set[int] = set()
    stmts = b.stmts
    for i, s in enumerate(stmts):
        if not (isinstance(s, ir.LoadLocal) and isinstance(s.result.type, TileT)):
            continue
        last = i
        for j in range(i + 1, len(stmts)):
            if _reads(stmts[j], s.result):
                last = j
        if not any(_writes_local(stmts[j], s.local) for j in range(i + 1, last + 1)):
            out.add(s.result.id)
    return out


class EmitError(Exception):
    """An IR construct the emitter cannot express (an internal error: the frontend should have refused it)."""


def cpp_type(t: Any, names: dict[Any, str] | None = None) -> str:
    """The C++ spelling of a compiler type."""
    if t is None:
        return "void"
    if scalars.is_scalar_type(t):
        return "bool" if t is scalars.bool else f"treadle::{t._cname_}"
    kind = generic_kind(t)
    if kind == "vec_t":
        return f"treadle::vec_t<{t._length_},{cpp_type(t._wp_scalar_type_)}>"
    if kind == "mat_t":
        r, c = t._shape_
        return f"treadle::mat_t<{r},{c},{cpp_type(t._wp_scalar_type_)}>"
    if kind == "quat_t":
        return f"treadle::quat_t<{cpp_type(t._wp_scalar_type_)}>"
    if kind == "transform_t":
        return f"treadle::transform_t<{cpp_type(t._wp_scalar_type_)}>"
    if isinstance(t, ArrayT):
        kind = "indexedarray_t" if t.indexed else "array_t"
        return f"treadle::{kind}<{cpp_type(t.dtype, names)}>"
    if isinstance(t, TileT):
        rows, cols = t.rows_cols
        return f"treadle::tile_t<{cpp_type(t.dtype, names)},{rows},{cols}>"
    if isinstance(t, TileStackT):
        return f"treadle::tile_stack_t<{cpp_type(t.dtype, names)},{t.capacity}>"
    if isinstance(t, OpaqueType):
        return t.cname
    if is_struct(t):
        return t.native_name
    if isinstance(t, TupleT):
        if names is None or t not in names:
            raise EmitError(f"tuple type {t} has no emitted name")
        return names[t]
    raise EmitError(f"no C++ type for {t!r}")


#: Scalars whose fields tiles of structs add field by field (the others keep the first operand's value).
_ACCUMULATING = (scalars.float16, scalars.float32, scalars.float64, scalars.int32, scalars.int64, scalars.uint32,
                 scalars.uint64)


def struct_arithmetic(t: Any) -> str:
    """Field-wise ``tile_struct_add/sub`` and ``atomic_add`` of a struct, found by argument-dependent lookup.

    Tiles of structs add, subtract, sum and atomically add field by field (``treadle/native/tile.h`` reaches these
    through its generic ``add``/``sub``); fields of other types (bool, 8/16-bit integers, arrays) keep the first
    operand's value, as in the reference.
    """
    name = t.native_name
    parts: dict[str, list[str]] = {"add": [], "sub": [], "atomic": []}
    for field, ft in t.vars.items():
        ft = normalize_annotation(ft)
        f = cpp_field(field)
        if is_struct(ft) or ft in _ACCUMULATING or (is_composite(ft) and scalar_of(ft) in _ACCUMULATING):
            for op in ("add", "sub"):
                parts[op].append(f"    r.{f} = treadle::{op}(a.{f}, b.{f});")
            qual = "" if is_struct(ft) else "treadle::"  # a struct field: its own overload, next to it
            parts["atomic"].append(f"    old.{f} = {qual}atomic_add(&p->{f}, v.{f});")
    out = []
    for op in ("add", "sub"):
        out.append(f"static TREADLE_FUNC {name} tile_struct_{op}(const {name}& a, const {name}& b)\n{{\n"
                   f"    {name} r = a;\n" + "".join(x + "\n" for x in parts[op]) + "    (void)b;\n    return r;\n}")
    out.append(f"static TREADLE_FUNC {name} atomic_add({name}* p, const {name}& v)\n{{\n    {name} old = *p;\n"
               + "".join(x + "\n" for x in parts["atomic"]) + "    (void)v;\n    return old;\n}")
    return "\n".join(out)


def callee_functor(fn: Any, name: str, call: str, names: dict[Any, str], adjoint: bool = False) -> str:
    """A local struct calling a per-element function (``tile_map``'s ``op``) or its adjoint.

    A functor rather than a lambda: NVRTC compiles lambdas in device code only with an option (extended lambdas),
    while a local struct with a typed call operator compiles everywhere.
    """
    ts = [cpp_type(t, names) for t in fn.args]
    ret = cpp_type(fn.ret, names)
    params = ", ".join(f"{t} x{i}" for i, t in enumerate(ts))
    xs = ", ".join(f"x{i}" for i in range(len(ts)))
    if not adjoint:
        return f"struct {name} {{ TREADLE_FUNC {ret} operator()({params}) const {{ return {call}({xs}); }} }};"
    adj_params = ", ".join(f"{t}& a{i}" for i, t in enumerate(ts))
    adjs = ", ".join(f"a{i}" for i in range(len(ts)))
    body = f"{call}({xs}, {adjs}, r);" if call else ""
    return (f"struct {name} {{ TREADLE_FUNC void operator()({params}, {adj_params}, const {ret}& r) const "
            f"{{ {body} }} }};")


def template_arg(x: Any) -> str:
    """A C++ template argument: an int, a bool or a type."""
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x) if isinstance(x, int) else cpp_type(x)


_CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class compl
concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete
do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long mutable
namespace new noexcept not not_eq nullptr operator or or_eq private protected public register reinterpret_cast
requires return short signed sizeof static static_assert static_cast struct switch template this thread_local throw
true try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
NULL errno stdin stdout stderr main
""".split())


def cpp_field(name: str) -> str:
    """The C++ spelling of a struct field.

    Names C++ cannot use as a member (keywords, likely macros such as ``INFINITY``, reserved ``__x``/``_X`` names,
    non-ASCII characters) get a ``tr_`` prefix and escapes; other names are kept (native snippets can use them).
    """
    macro_like = name.isupper() and len(name) > 2
    reserved = "__" in name or (name[:1] == "_" and name[1:2].isupper()) or name.startswith("tr_")  # injective
    if name.isascii() and name not in _CPP_KEYWORDS and not macro_like and not reserved:
        return name
    return "tr_" + "".join(c if c.isascii() and c != "_" else ("_u" if c == "_" else f"_x{ord(c):x}_") for c in name)


def _float_leaves(t: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """The parts of a value of type ``t`` that ``verify_fp`` checks: ``(struct field path, float scalar type)``."""
    if is_struct(t):
        return [leaf for f, ft in t.vars.items() for leaf in _float_leaves(normalize_annotation(ft), (*path, f))]
    if scalars.is_scalar_type(t) or is_composite(t):
        st = scalar_of(t)
        return [(path, st)] if scalars.is_float_type(st) else []
    return []


def cpp_const(c: ir.Const) -> str:
    """A C++ literal for a constant, exact for floats (hex literals)."""
    t, v = c.type, c.value
    if isinstance(v, scalars.scalar_base):
        v = v.value
    if is_composite(t):
        flat = [float(x) if scalars.is_float_type(scalar_of(t)) else int(x) for x in _flatten(v)]
        st = scalar_of(t)
        return f"{cpp_type(t)}({', '.join(_scalar_literal(x, st) for x in flat)})"
    if t is None:
        return "0"
    return _scalar_literal(v, t)


def _flatten(v: Any) -> list[Any]:
    import numpy as np

    to_numpy = getattr(v, "_to_numpy", None)  # composites: decoded values (float16 storage holds raw bits)
    return list(np.asarray(to_numpy() if to_numpy is not None else v).reshape(-1).tolist())


def _scalar_literal(v: Any, t: Any) -> str:
    if t is scalars.bool:
        return "true" if v else "false"
    if scalars.is_float_type(t):
        f = float(v)
        if math.isnan(f):
            lit = "__builtin_nanf(\"\")"
        elif math.isinf(f):
            lit = "__builtin_inff()" if f > 0 else "-__builtin_inff()"
        else:
            lit = f.hex()
        if t is scalars.float64:
            return f"treadle::float64({lit})"
        if t is scalars.float32:
            return f"treadle::float32({lit}{'f' if lit[-1].isdigit() else ''})"
        return f"treadle::cast<treadle::float16>(treadle::float32({lit}))"
    iv = int(v)
    suffix = {scalars.int64: "LL", scalars.uint64: "ULL", scalars.uint32: "U"}.get(t, "")
    if t is scalars.int64 and iv == -(2**63):
        return "treadle::int64(-9223372036854775807LL - 1)"
    if t is scalars.int32 and iv == -(2**31):
        return "treadle::int32(-2147483647 - 1)"
    return f"treadle::{t._cname_}({iv}{suffix})"


class Emitter:
    """Writes the C++ block of one kernel instance (plus the functions and types it uses)."""

    def __init__(self, line_directives: bool = True, checked: bool = False, verify_fp: bool = False) -> None:
        self.line_directives = line_directives
        self.checked = checked
        #: ``config.verify_fp`` (checked builds only): check float array stores and atomics for NaN/Inf.
        self.verify_fp = verify_fp and checked
        #: Source locations referenced by ``TREADLE_AT(i)`` markers in checked builds.
        self.locs: list[Any] = []
        self.tuple_names: dict[Any, str] = {}
        self.out: list[str] = []
        #: The struct and tuple types defined so far, in definition order (the adjoint emitter follows it).
        self.types_done: dict[Any, None] = {}
        self.type_defs: list[str] = []

    # Types ------------------------------------------------------------------------------------------------------
    def need_type(self, t: Any) -> None:
        """Emit definitions of struct and tuple types (and their field types) once, before use."""
        if t in self.types_done or t is None:
            return
        if isinstance(t, ArrayT):
            self.need_type(t.dtype)
            return
        if is_struct(t):
            self.types_done[t] = None
            fields = []
            for name, ft in t.vars.items():
                ft = normalize_annotation(ft)
                self.need_type(ft)
                fields.append(f"    {cpp_type(ft, self.tuple_names)} {cpp_field(name)};")
            self.type_defs.append(f"struct {t.native_name} {{\n" + "\n".join(fields) + "\n};")
            self.type_defs.append(struct_arithmetic(t))
        elif isinstance(t, TupleT):
            self.types_done[t] = None
            for et in t.types:
                self.need_type(et)
            name = f"tuple_{len(self.tuple_names)}"
            self.tuple_names[t] = name
            members = "\n".join(f"    {cpp_type(et, self.tuple_names)} f{i};" for i, et in enumerate(t.types))
            self.type_defs.append(f"struct {name} {{\n{members}\n}};")

    def collect_types(self, f: ir.FuncIR) -> None:
        for p in f.params:
            self.need_type(p.type)
        for loc in f.locals:
            self.need_type(loc.type)
        self.need_type(f.return_type)
        for s in ir.walk(f.body):
            r = getattr(s, "result", None)
            if r is not None:
                self.need_type(r.type)

    # Functions --------------------------------------------------------------------------------------------------
    def native_function(self, f: ir.FuncIR, cname: str, snippet: str, adjoint: bool = False) -> str:
        """A ``@func_native`` function: the user's C++ snippet with the parameters under their own names."""
        self.collect_types(f)
        ret = cpp_type(f.return_type, self.tuple_names)
        params = [f"{cpp_type(p.type, self.tuple_names)} {p.name}" for p in f.params]
        if adjoint:
            params += [f"{cpp_type(p.type, self.tuple_names)}& adj_{p.name}" for p in f.params]
            if f.return_type is not None:
                params.append(f"{ret} adj_ret")
            ret = "void"
        body = snippet if snippet is not None else ""
        return f"static TREADLE_FUNC {ret} {cname}({', '.join(params)})\n{{\n{body}\n}}"

    def function(self, f: ir.FuncIR, cname: str) -> str:
        """A ``@func`` as a static inline C++ function."""
        native = getattr(f, "native", None)
        if native is not None:
            return self.native_function(f, cname, native[0])
        self.collect_types(f)
        ret = cpp_type(f.return_type, self.tuple_names)
        # a stack is a place: the function works on the caller's (every other parameter is a copy)
        params = ", ".join(f"{cpp_type(p.type, self.tuple_names)}{'&' if isinstance(p.type, TileStackT) else ''} "
                           f"var_{p.name}" for p in f.params)
        lines = [f"static TREADLE_FUNC {ret} {cname}({params})", "{"]
        lines += self.local_decls(f)
        self.enter(f)
        self.block(f.body, lines, "    ")
        if f.return_type is not None:
            lines.append(f"    return {ret}{{}};")
        lines.append("}")
        return "\n".join(lines)

    def local_decls(self, f: ir.FuncIR) -> list[str]:
        return [f"    {cpp_type(loc.type, self.tuple_names)} var_{loc.name}{{}};" for loc in f.locals]

    def kernel(self, f: ir.FuncIR, symbol: str) -> tuple[str, str]:
        """The argument struct, the per-thread body and the CPU entry points of a kernel (see ``emit_entry``)."""
        self.collect_types(f)
        fields = "\n".join(f"    {cpp_type(p.type, self.tuple_names)} p_{p.name};" for p in f.params)
        args_struct = f"struct Args {{\n{fields}\n    char _treadle_pad;\n}};"
        priv = None if self.checked else reductions.privatize(f)
        self.uniform_loops = {} if self.checked else uniform.uniform_ranges(f)
        bodies = [self.kernel_body(f, "kernel_body")]
        nonempty = " && ".join(dict.fromkeys(self.uniform_loops.values()))
        out = None if self.checked or nonempty or not config.stream_stores else streaming.streamed_output(f)
        if priv is not None:  # a second body, with reductions into fixed elements done in chunk-local buffers
            bodies.append(self.kernel_body(priv[0], "kernel_body_priv"))
        entry = emit_entry.entries(symbol, "forward", "kernel_body", f, checked=self.checked,
                                   privatized=priv[1] if priv is not None else None, nonempty=nonempty or None,
                                   streamed=out.name if out is not None else None)
        return args_struct, "\n\n".join(bodies) + "\n\n" + entry

    def kernel_body(self, f: ir.FuncIR, name: str) -> str:
        """One per-thread body of a kernel (the prologue is ``emit_entry``'s; the statements are the IR's)."""
        lines = emit_entry.body_head(name)
        for p in f.params:
            lines.append(f"    {cpp_type(p.type, self.tuple_names)} var_{p.name} = args.p_{p.name};")
            dense = emit_entry.dense_line(p.name, p.type)
            if dense is not None:
                lines.append(dense)
        lines += self.local_decls(f)
        lines += emit_entry.tid_lines(f)
        lines.append("    TREADLE_THREAD(_flat)")
        self.enter(f)
        self.block(f.body, lines, "    ")
        lines.append("}")
        return "\n".join(lines)

    # Statements -------------------------------------------------------------------------------------------------
    def op(self, x: Any) -> str:
        if isinstance(x, ir.Const):
            return cpp_const(x)
        if isinstance(x, ir.LocalRef):
            return f"var_{x.local.name}"
        return f"_v{x.id}"

    #: The integer values proven non-negative in the function being emitted (``index_bounds.nonneg_values``).
    nonneg: frozenset[int] = frozenset()

    def enter(self, f: ir.FuncIR) -> None:
        """Start emitting the body of ``f``: run the analyses its statements' emission reads."""
        self.nonneg = index_bounds.nonneg_values(f)
        self.tile_refs = set()

    def indices(self, s: Any) -> list[str]:
        """The C++ index operands of array access ``s``.

        A negative index counts from the end of its dimension: release builds pass each index of a plain array that
        ``index_bounds`` cannot prove non-negative through ``treadle::wrap_index``; checked builds' accessors wrap
        after their bounds check, and indexed arrays wrap in their index map.
        """
        t = getattr(s.array, "type", None)
        if self.checked or not isinstance(t, ArrayT) or t.indexed:
            return [self.op(i) for i in s.indices]
        arr = self.op(s.array)
        return [self.op(i) if index_bounds.is_nonneg(i, self.nonneg) else f"treadle::wrap_index({arr}, {d}, {self.op(i)})"
                for d, i in enumerate(s.indices)]

    #: Adjoint code declares every value once at the top of the function (so the reverse sweep can read it).
    hoist = False
    #: LoadLocal results of tile type emitted as references to their local (see :func:`tile_reference_loads`).
    tile_refs: set[int] = set()  # noqa: RUF012 - replaced in enter(), never mutated here
    #: Which variant of a per-element function (``Overload.callee``) forward code calls: 0 the function, 2 its
    #: replay variant (backward passes and replay functions, where only that variant is emitted).
    callee_slot = 0
    #: The kernel's loops with launch-constant ranges (``uniform.uniform_ranges``; empty outside forward kernels).
    uniform_loops: dict[int, str] = {}  # noqa: RUF012 - replaced, never mutated

    def decl(self, v: ir.Value) -> str:
        if self.hoist:
            return f"_v{v.id}"
        return f"const {cpp_type(v.type, self.tuple_names)} _v{v.id}"

    def decl_mut(self, v: ir.Value) -> str:
        if self.hoist:
            return f"_v{v.id}"
        return f"{cpp_type(v.type, self.tuple_names)} _v{v.id}"

    def line(self, s: ir.Stmt, lines: list[str], ind: str) -> None:
        if self.line_directives and s.loc is not None:
            f = s.loc.file.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'#line {s.loc.line} "{f}"')
        if self.checked and s.loc is not None and isinstance(s, _CHECKED_STMTS):
            if not self.locs or self.locs[-1] != s.loc:
                self.locs.append(s.loc)
            # Straight-line code already marked with this location needs no new (thread-local) store.
            if self._marked != len(self.locs) - 1:
                lines.append(f"{ind}TREADLE_AT({len(self.locs) - 1})")
                self._marked = len(self.locs) - 1
            if isinstance(s, (ir.CallFunc, ir.CallGrad)):
                self._marked = None  # the callee marks its own statements

    #: The ``TREADLE_AT`` location known to be current at this point of straight-line code (``None``: unknown).
    _marked: int | None = None

    def block(self, b: ir.Block, lines: list[str], ind: str) -> None:
        self._marked = None  # entered from a branch or a loop's back edge
        if not self.hoist:
            self.tile_refs |= tile_reference_loads(b)
        for s in b.stmts:
            self.stmt(s, lines, ind)
        self._marked = None  # what follows may be reached from elsewhere (another branch, break, the loop exit)

    def stmt(self, s: ir.Stmt, lines: list[str], ind: str) -> None:  # noqa: C901 - one dispatch table
        op = self.op
        if not isinstance(s, (ir.DeclLocal, ir.Block)):
            self.line(s, lines, ind)
        if isinstance(s, ir.Call):
            if s.overload.callee is not None and s.result is not None:
                fn = s.overload.callee
                name = fn.replay if self.callee_slot == 2 and fn.replay else fn.fwd
                lines.append(f"{ind}{callee_functor(fn, f'_fn{s.result.id}', name, self.tuple_names)}")
            expr = self.call_expr(s)
            lines.append(f"{ind}{self.decl(s.result)} = {expr};" if s.result is not None else f"{ind}{expr};")
        elif isinstance(s, ir.CallFunc):
            args = ", ".join(op(a) for a in s.args)
            call = f"{s.func.cname}({args})"
            lines.append(f"{ind}{self.decl(s.result)} = {call};" if s.result is not None else f"{ind}{call};")
        elif isinstance(s, ir.CallGrad):
            self.call_grad(s, lines, ind)
        elif isinstance(s, ir.Construct):
            lines.append(f"{ind}{self.decl(s.result)} = {self.construct_expr(s)};")
        elif isinstance(s, ir.Extract):
            src = op(s.src)
            if s.field is not None:
                expr = f"{src}.{cpp_field(s.field)}"
            elif isinstance(s.src.type, TupleT):
                expr = f"{src}.f{s.index[0].value}"  # type: ignore[union-attr]
            else:
                expr = f"treadle::extract({src}, {', '.join(op(i) for i in s.index)})"
            lines.append(f"{ind}{self.decl(s.result)} = {expr};")
        elif isinstance(s, ir.Insert):
            if s.field is not None:
                lines.append(f"{ind}{self.decl_mut(s.result)} = {op(s.src)};")
                lines.append(f"{ind}_v{s.result.id}.{cpp_field(s.field)} = {op(s.value)};")
            else:
                idx = ", ".join(op(i) for i in s.index)
                lines.append(f"{ind}{self.decl(s.result)} = treadle::insert({op(s.src)}, {idx}, {op(s.value)});")
        elif isinstance(s, ir.ArrayLoad):
            idx = ", ".join(self.indices(s))
            lines.append(f"{ind}{self.decl(s.result)} = treadle::load({op(s.array)}, {idx});")
        elif isinstance(s, ir.LocalArray):
            self.local_array(s, lines, ind)
        elif isinstance(s, ir.ArrayView) and any(isinstance(i, ir.SliceSpec) for i in s.indices):
            specs = []
            for i in s.indices:
                if isinstance(i, ir.SliceSpec):
                    kind = 1 | (2 if i.start is not None else 0) | (4 if i.stop is not None else 0)
                    parts = [op(p) if p is not None else "0" for p in (i.start, i.stop)]
                    step = op(i.step) if i.step is not None else "1"
                    specs.append(f"{{treadle::int64({parts[0]}), treadle::int64({parts[1]}), treadle::int64({step}), {kind}}}")
                else:
                    specs.append(f"{{treadle::int64({op(i)}), 0, 0, 0}}")
            lines.append(f"{ind}{self.decl_mut(s.result)} = [&]() {{ const treadle::slice_spec _sp[] = "
                         f"{{{', '.join(specs)}}}; return treadle::subview({op(s.array)}, _sp, {len(specs)}); }}();")
        elif isinstance(s, ir.ArrayView):
            idx = ", ".join(self.indices(s))
            lines.append(f"{ind}{self.decl(s.result)} = treadle::view({op(s.array)}, {idx});")
        elif isinstance(s, ir.ArrayStore):
            idx = ", ".join(self.indices(s))
            lines.append(f"{ind}treadle::store({op(s.array)}, {idx}, {op(s.value)});")
            if self.verify_fp:
                self.fp_check(s, op(s.value), lines, ind)
        elif isinstance(s, ir.ArrayAtomic):
            idx = ", ".join(self.indices(s))
            addr = f"treadle::address({op(s.array)}, {idx})"
            operands = [addr] + ([op(s.compare)] if s.compare is not None else []) + [op(s.value)]
            call = f"treadle::atomic_{s.op}({', '.join(operands)})"
            lines.append(f"{ind}{self.decl(s.result)} = {call};" if s.result is not None else f"{ind}{call};")
            if self.verify_fp:
                self.fp_check(s, None, lines, ind)
        elif isinstance(s, ir.DeclLocal):
            pass
        elif isinstance(s, ir.LoadLocal):
            if not self.hoist and s.result.id in self.tile_refs:
                # a reference, not a copy of the whole tile (the local keeps its value while this one is used)
                ct = cpp_type(s.result.type, self.tuple_names)
                lines.append(f"{ind}const {ct}& _v{s.result.id} = var_{s.local.name};")
            else:
                lines.append(f"{ind}{self.decl(s.result)} = var_{s.local.name};")
        elif isinstance(s, ir.StoreLocal):
            lines.append(f"{ind}var_{s.local.name} = {op(s.value)};")
        elif isinstance(s, ir.Tid):
            src = "treadle::int32(_flat)" if s.dim < 0 else f"_tid[{s.dim}]"
            lines.append(f"{ind}{self.decl(s.result)} = {src};")
        elif isinstance(s, ir.If):
            lines.append(f"{ind}if ({op(s.cond)}) {{")
            self.block(s.then, lines, ind + "    ")
            if s.orelse.stmts:
                lines.append(f"{ind}}} else {{")
                self.block(s.orelse, lines, ind + "    ")
            lines.append(f"{ind}}}")
        elif isinstance(s, ir.ForRange):
            self.for_range(s, lines, ind)
        elif isinstance(s, ir.While):
            self.loop_prologue(s, lines, ind)
            lines.append(f"{ind}while (true) {{")
            self.block(s.cond_block, lines, ind + "    ")
            lines.append(f"{ind}    if (!({op(s.cond)})) break;")
            self.iter_prologue(s, lines, ind + "    ")
            self.block(s.body, lines, ind + "    ")
            self.iter_epilogue(s, lines, ind + "    ")
            lines.append(f"{ind}}}")
        elif isinstance(s, ir.Break):
            lines.append(f"{ind}break;")
        elif isinstance(s, ir.Continue):
            lines.append(f"{ind}continue;")
        elif isinstance(s, ir.Return):
            lines.append(f"{ind}return{' ' + op(s.value) if s.value is not None else ''};")
        else:  # pragma: no cover
            raise EmitError(f"cannot emit {type(s).__name__}")

    def fp_check(self, s: Any, value: str | None, lines: list[str], ind: str) -> None:
        """``verify_fp``: check a float store (``value``) or atomic (``None``: re-read the element) for NaN/Inf.

        A failure is reported with the array's name, the element's indices and, for structs, the field (see
        ``treadle::verify_fp``).
        """
        from ..core.errors import StoreSite

        if s.loc is None or len(s.indices) > 4 or not isinstance(s.array.type, ArrayT):
            return
        name = getattr(s.array, "hint", "") or getattr(getattr(s.array, "local", None), "name", "") or "array"
        idx = ", ".join(f"(long long)({self.op(i)})" for i in s.indices)
        if value is None:
            value = f"(*treadle::address({self.op(s.array)}, {', '.join(self.indices(s))}))"
        loc = s.loc
        for path, st in _float_leaves(s.array.type.dtype):
            self.locs.append(StoreSite(loc.file, loc.line, loc.col, loc.end_col, loc.func, array=name,
                                       field="".join(f".{f}" for f in path)))
            what = value + "".join(f".{cpp_field(f)}" for f in path)
            lines.append(f"{ind}TREADLE_AT({len(self.locs) - 1}) "
                         f"treadle::verify_fp<{cpp_type(st)}>({what}, {len(s.indices)}, {idx});")
            self._marked = len(self.locs) - 1

    def for_range(self, s: ir.ForRange, lines: list[str], ind: str) -> None:
        op = self.op
        t = cpp_type(s.var.type)
        it = f"_it{s.var.id}_{len(lines)}"
        step = s.step
        if isinstance(step, ir.Const):
            cond = f"{it} < {op(s.stop)}" if step.value > 0 else f"{it} > {op(s.stop)}"
        else:
            cond = f"({op(step)} > 0 ? {it} < {op(s.stop)} : {it} > {op(s.stop)})"
        self.loop_prologue(s, lines, ind)
        if id(s) in self.uniform_loops:
            # A launch-constant range (see uniform.py): the `_nonempty` instantiation, which the entry runs when
            # every such range is known to be non-empty, enters the loop without testing (a do-while).
            lt = "<" if step.value > 0 else ">"
            lines.append(f"{ind}if (_nonempty || {op(s.start)} {lt} {op(s.stop)}) {{")
            lines.append(f"{ind}{t} {it} = {op(s.start)};")
            lines.append(f"{ind}do {{")
            close = f"{ind}}} while (({it} += {op(step)}) {lt} {op(s.stop)}); }}"
        else:
            lines.append(f"{ind}for ({t} {it} = {op(s.start)}; {cond}; {it} += {op(step)}) {{")
            close = f"{ind}}}"
        lines.append(f"{ind}    var_{s.var.name} = {it};")
        self.iter_prologue(s, lines, ind + "    ")
        self.block(s.body, lines, ind + "    ")
        self.iter_epilogue(s, lines, ind + "    ")
        lines.append(close)

    def call_grad(self, s: Any, lines: list[str], ind: str) -> None:
        """Seed the adjoint of the result with 1 and collect the argument adjoints."""
        tgt = s.target
        names = [f"_g{s.result.id}_{k}" for k in range(len(s.args))]
        decls = " ".join(f"{cpp_type(a.type, self.tuple_names)} {n}{{}};" for a, n in zip(s.args, names))
        args = ", ".join([self.op(a) for a in s.args] + names)
        if hasattr(tgt, "cname"):
            one = f"{cpp_type(tgt.return_type)}(1)"
            call = f"adj_{tgt.cname}({args}, {one})"
        else:
            one = f"{cpp_type(tgt.ret)}(1)"
            call = f"treadle::adj_{tgt.cpp}({args}, {one})"
        value = names[0] if len(names) == 1 else f"{cpp_type(s.result.type, self.tuple_names)}{{{', '.join(names)}}}"
        lines.append(f"{ind}{self.decl_mut(s.result)} = [&]() {{ {decls} {call}; return {value}; }}();")

    def local_array(self, s: Any, lines: list[str], ind: str) -> None:
        """Thread-private storage and its descriptor; hoisted code declares the storage at the top instead."""
        t = s.result.type
        el = cpp_type(t.dtype, self.tuple_names)
        n = 1
        for d in s.shape:
            n *= d
        dims = list(s.shape) + [0] * (4 - len(s.shape))
        shape = ", ".join(str(d) for d in dims)
        if self.hoist:
            lines.append(f"{ind}treadle::zero_fill(_lb{s.result.id}, {n});")
            grad = f"_lg{s.result.id}"
        else:
            lines.append(f"{ind}{el} _lb{s.result.id}[{max(n, 1)}]{{}};")
            grad = "nullptr"
        lines.append(f"{ind}{self.decl(s.result)} = treadle::local_array<{el}>(_lb{s.result.id}, {grad}, "
                     f"{len(s.shape)}, {shape});")

    # Loop hooks (the adjoint emitter adds checkpointing) --------------------------------------------------------
    def loop_prologue(self, s: Any, lines: list[str], ind: str) -> None:
        pass

    def iter_prologue(self, s: Any, lines: list[str], ind: str) -> None:
        pass

    def iter_epilogue(self, s: Any, lines: list[str], ind: str) -> None:
        exit_flag = s.exit
        if exit_flag is not None:
            lines.append(f"{ind}if (var_{exit_flag.name}) break;")

    def call_expr(self, s: ir.Call) -> str:
        ov = s.overload
        args = [self.op(a) for a in s.args]
        cpp = ov.cpp
        op = ov.builtin.op
        if op is not None:
            return self.operator_expr(op, s, args)
        tmpl = ""
        if ov.template:
            tmpl = "<" + ",".join(template_arg(x) for x in ov.template) + ">"
        if ov.callee is not None:  # a function applied per element (tile_map): the functor stmt() defined
            args.insert(0, f"_fn{s.result.id}{{}}" if s.result is not None else "")
        return f"treadle::{cpp}{tmpl}({', '.join(args)})"

    def operator_expr(self, op: Op, s: ir.Call, args: list[str]) -> str:
        """A builtin written as a C++ operator or special form (``Builtin.op``)."""
        if op is Op.SELECT:
            return f"({args[0]} ? {args[2]} : {args[1]})"
        if op is Op.WHERE:
            return f"({args[0]} ? {args[1]} : {args[2]})"
        if op is Op.PRINTF:
            fmt = (s.overload.fmt or "").encode("unicode_escape").decode().replace('"', '\\"')
            conv = [self.printf_arg(a) for a in s.args]
            return f'treadle::printf_flush("{fmt}"{"".join(", " + c for c in conv)})'
        if op is Op.SHAPE:
            return f"treadle::int32({args[0]}.shape[{args[1]}])"
        if op is Op.ARRAY_VALID:
            indexed = getattr(s.args[0].type, "indexed", False)  # indexed arrays: the underlying array's data
            return f"({args[0]}{'.arr' if indexed else ''}.data != nullptr)"
        if op is Op.NOT:
            return f"(!{args[0]})"
        return f"({args[0]} {op.value} {args[1]})"

    def printf_arg(self, a: Any) -> str:
        t = a.type
        if scalars.is_float_type(t):
            return f"double(treadle::cast<treadle::float64>({self.op(a)}))"
        if t is scalars.int64:
            return f"(long long)({self.op(a)})"
        if t is scalars.uint64:
            return f"(unsigned long long)({self.op(a)})"
        if t is scalars.bool:
            return f"int({self.op(a)})"
        if t in (scalars.uint32, scalars.uint16, scalars.uint8):
            return f"(unsigned)({self.op(a)})"
        return f"int({self.op(a)})"

    def construct_expr(self, s: ir.Construct) -> str:
        t = s.result.type
        args = [self.op(a) for a in s.args]
        ct = cpp_type(t, self.tuple_names)
        if scalars.is_scalar_type(t):
            return f"treadle::cast<{ct}>({args[0]})"
        if is_struct(t):
            return f"{ct}{{}}"
        if isinstance(t, TupleT):
            return f"{ct}{{{', '.join(args)}}}"
        return f"{ct}({', '.join(args)})"
