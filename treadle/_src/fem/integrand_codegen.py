"""Specialising integrands: from a user's ``@fem.integrand`` to a ``@wp.func`` for given fields and domain.

The integrand's source is rewritten, keeping every statement on its line, into a function whose field and domain
parameters are struct values (``{elt_arg, eval_arg}`` for fields, the domain's element argument for domains) and
whose field/domain calls are calls of the kernel functions the field and domain types provide:

- ``u(s)`` becomes ``_fem_k(u, s)`` with ``_fem_k = u's inner`` (``domain(s)``: the domain's ``position``);
- ``grad(u, s)`` (any :class:`Operator`) becomes ``_fem_k(u, s)`` with ``_fem_k`` the field's ``grad``; operators
  with constant results (``scalar_type(u)``, ``degree(u)``) become the constant;
- a call of another integrand becomes a call of its specialisation for the arguments' fields.

The rewritten source is executed as a file of its own (``<treadle.fem:...>``) padded so that its lines are the
user's lines: an error the compiler reports in it is mapped back to the user's file, line and column
(:func:`remap_error`).
"""

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from ..core import pyast
from ..core.errors import CodegenError
from . import codegen
from .field.field import FieldError, FieldLike
from .operator import Integrand, Operator
from .types import Domain, Field, Sample, Sample_f64


class IntegrandError(TypeError):
    """An integrand uses a field, domain or operator in a way its arguments do not allow."""


class IntegrandOverloadError(CodegenError, IntegrandError):
    """No overload of a field or domain operator accepts the arguments of a call in an integrand."""


@dataclass(frozen=True)
class ParamSpec:
    """What one integrand parameter receives in a specialisation.

    Attributes:
        kind: ``sample``, ``field``, ``domain`` or ``value``.
        obj: the field or domain object (``None`` for samples and values).
        type: the kernel type of the argument.

    """

    kind: str
    obj: Any
    type: Any

    def key(self) -> Any:
        """What distinguishes specialisations."""
        if self.kind == "field":
            return ("field", self.obj.name, codegen.type_key(self.type))
        if self.kind == "domain":
            return ("domain", self.obj.name, codegen.type_key(self.type))
        return (self.kind, codegen.type_key(self.type))


@dataclass
class Specialization:
    """A specialised integrand: the generated function and what its parameters are."""

    func: Any
    params: list[tuple[str, ParamSpec]]
    filename: str
    user_file: str
    first: int
    indent: int
    edits: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    _return_type: Any = None

    @property
    def arg_types(self) -> tuple[Any, ...]:
        """Kernel types of the parameters, in order."""
        return tuple(p.type for _, p in self.params)

    def return_type(self) -> Any:
        """The type the specialised integrand returns (lowering it now; errors are mapped to the user's code)."""
        if self._return_type is None:
            fdef = self.func.defs()[0]
            try:
                inst = fdef.instance(self.arg_types)
            except Exception as e:  # noqa: BLE001 - re-raised at the user's line
                raise remap_error(e) from None
            self._return_type = inst.return_type
        return self._return_type


#: generated file name -> its specialisation (for mapping compiler errors back)
_GENERATED: dict[str, Specialization] = {}


def _byte_to_char(line: str, col: int) -> int:
    return len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))


class _Rewriter:
    def __init__(self, itg: Integrand, params: dict[str, ParamSpec], domain: Any) -> None:
        self.itg = itg
        self.params = params
        self.domain = domain
        fn = itg.func
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise IntegrandError(f"cannot read the source of integrand '{fn.__qualname__}': {e}; define integrands "
                                 "in a .py file") from None
        self.first = first
        self.user_file = fn.__code__.co_filename
        self.indent = len(lines[0]) - len(lines[0].lstrip())
        text = textwrap.dedent("".join(lines))
        self.lines = text.splitlines(True)
        tree = pyast.parse(text)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise IntegrandError(f"integrand '{fn.__qualname__}' is not a function definition")
        self.fdef = fdef
        self.env = dict(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.env[name] = cell.cell_contents
                except ValueError:
                    pass
        self.local_names = {a.arg for a in fdef.args.args}
        for node in ast.walk(fdef):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.local_names.add(node.id)
        self.bindings: dict[str, Any] = {}
        #: local variables holding a field or domain (``cells = fem.cells(domain)``)
        self.local_kinds: dict[str, tuple[str, Any, Any]] = {}
        self.edits: list[tuple[int, int, int, int, str]] = []  # line, col, end_line, end_col (chars), text

    # ------------------------------------------------------------------------------------------ helpers
    def _loc(self, node: ast.AST) -> str:
        return f"{self.user_file}:{node.lineno + self.first - 1}"  # type: ignore[attr-defined]

    def error(self, node: ast.AST, msg: str, fix: str = "") -> IntegrandError:
        line = node.lineno  # type: ignore[attr-defined]
        text = self.lines[line - 1].rstrip("\n") if line - 1 < len(self.lines) else ""
        where = f"{self.user_file}:{line + self.first - 1}:{node.col_offset + self.indent + 1}"  # type: ignore[attr-defined]
        out = f"{where} (in integrand '{self.itg.func.__qualname__}'): error: {msg}\n    {text.strip()}"
        if fix:
            out += f"\nfix: {fix}"
        return IntegrandError(out)

    def bind(self, value: Any, hint: str) -> str:
        for name, v in self.bindings.items():
            if v is value:
                return name
        name = f"_fem_{hint}_{len(self.bindings)}"
        self.bindings[name] = value
        return name

    def _span(self, node: ast.AST) -> tuple[int, int, int, int]:
        l0 = node.lineno - 1  # type: ignore[attr-defined]
        l1 = node.end_lineno - 1  # type: ignore[attr-defined]
        c0 = _byte_to_char(self.lines[l0], node.col_offset)  # type: ignore[attr-defined]
        c1 = _byte_to_char(self.lines[l1], node.end_col_offset)  # type: ignore[attr-defined]
        return l0, c0, l1, c1

    def replace(self, node: ast.AST, text: str) -> None:
        l0, c0, l1, c1 = self._span(node)
        if l1 != l0:
            text = "(" + text + "\n" * (l1 - l0) + ")"
        self.edits.append((l0, c0, l1, c1, text))

    def insert_first_arg(self, call: ast.Call, text: str) -> None:
        l0, c0, l1, c1 = self._span(call.func)
        # the '(' after the callee (possibly after spaces or on a following line)
        line, col = l1, c1
        while True:
            seg = self.lines[line]
            idx = seg.find("(", col)
            if idx >= 0:
                break
            line, col = line + 1, 0
        has_args = bool(call.args or call.keywords)
        ins = text + (", " if has_args else "")
        self.edits.append((line, idx + 1, line, idx + 1, ins))

    def static_value(self, node: ast.AST) -> Any:
        """The Python object a Name/Attribute chain denotes in the integrand's scope (``_MISSING`` if none)."""
        if isinstance(node, ast.Name):
            if node.id in self.local_names:
                return _MISSING
            return self.env.get(node.id, _MISSING) if node.id in self.env else getattr(__builtins__, node.id,
                                                                                        _MISSING)
        if isinstance(node, ast.Attribute):
            base = self.static_value(node.value)
            if base is _MISSING:
                return _MISSING
            return getattr(base, node.attr, _MISSING)
        return _MISSING

    def kind_of(self, node: ast.AST) -> tuple[str, Any, Any] | None:
        """``(kind, object, domain)`` for expressions denoting a field or a domain, else ``None``.

        ``kind`` is ``"field"`` or ``"domain"``; ``domain`` is the domain a field is evaluated on (the domain itself
        for domains).
        """
        if isinstance(node, ast.Name) and node.id in self.local_kinds:
            return self.local_kinds[node.id]
        if isinstance(node, ast.Name) and node.id in self.params:
            p = self.params[node.id]
            if p.kind == "field":
                return "field", p.obj, self.domain
            if p.kind == "domain":
                return "domain", p.obj, p.obj
            return None
        if isinstance(node, ast.Call):
            target = self.static_value(node.func)
            if isinstance(target, Operator) and target.name == "cells" and node.args:
                inner = self.kind_of(node.args[0])
                if inner is not None:
                    cells = _cells_of(inner[2])
                    return inner[0], (cells if inner[0] == "domain" else inner[1]), cells
        return None

    # ------------------------------------------------------------------------------------------ rewriting
    def run(self) -> None:
        for stmt in self.fdef.body:
            self.visit(stmt)

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            kind = self.kind_of(node.value)
            if kind is not None:
                self.local_kinds[node.targets[0].id] = kind
        if isinstance(node, ast.Call):
            if self.visit_call(node):
                return
        if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            raise self.error(node, "nested functions and classes are not supported in integrands")
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def visit_call(self, call: ast.Call) -> bool:
        """Rewrite a call if it involves fields, domains, operators or integrands; True if fully handled."""
        func = call.func
        callee_kind = self.kind_of(func)
        if callee_kind is not None:
            kind = callee_kind[0]
            op = "inner" if kind == "field" else "position"
            res = self.resolve(call, op, callee_kind, len(call.args) + len(call.keywords) + 1)
            self.replace(func, self.bind(res.value, op))
            self.insert_first_arg(call, _source(self.lines, func))
            self.visit_args(call)
            return True
        target = self.static_value(func)
        if isinstance(target, Operator):
            if not call.args:
                raise self.error(call, f"fem.{target.name} needs a field or domain as its first argument")
            first = self.kind_of(call.args[0])
            if first is None:
                want = {"field": "a fem.Field parameter", "domain": "a fem.Domain parameter"}.get(
                    target.attr, "a fem.Field or fem.Domain parameter")
                raise self.error(call.args[0], f"the first argument of fem.{target.name} must be {want}",
                                 "pass the integrand parameter annotated with fem.Field / fem.Domain")
            if target.attr == "field" and first[0] != "field":
                raise self.error(call.args[0], f"fem.{target.name} applies to fields, not to a domain")
            if target.attr == "domain" and first[0] != "domain":
                raise self.error(call.args[0], f"fem.{target.name} applies to domains, not to a field")
            res = self.resolve(call, target.name, first, len(call.args) + len(call.keywords))
            if res.static:
                self.replace(call, self.bind(res.value, target.name))
                return True
            if res.value is None:
                # cells(domain) on a cell domain, or of a field: the argument itself
                self.replace(call, _source(self.lines, call.args[0]))
                return True
            self.replace(func, self.bind(res.value, target.name.lstrip("_")))
            self.visit_args(call)
            return True
        if isinstance(target, Integrand):
            spec = self.specialize_callee(target, call)
            self.replace(func, self.bind(spec.func, target.__name__))
            self.visit_args(call)
            return True
        return False

    def visit_args(self, call: ast.Call) -> None:
        for a in call.args:
            self.visit(a)
        for k in call.keywords:
            self.visit(k.value)

    def resolve(self, call: ast.Call, op: str, target: tuple[str, Any, Any], nargs: int) -> Any:
        kind, obj, domain = target
        from .domain_ops import MissingOverload, resolve_domain_op, resolve_field_cells

        try:
            if kind == "field":
                if op == "cells":
                    return resolve_field_cells(obj, domain)
                return obj.resolve(op, domain, nargs)
            return resolve_domain_op(obj, op, nargs)
        except MissingOverload as e:
            raise IntegrandOverloadError(str(self.error(call, str(e)))) from None
        except (FieldError, TypeError, ValueError, NotImplementedError) as e:
            raise self.error(call, str(e)) from None

    def specialize_callee(self, callee: Integrand, call: ast.Call) -> Specialization:
        names = callee.argspec.args
        if len(call.args) > len(names):
            raise self.error(call, f"integrand '{callee.__name__}' takes {len(names)} arguments, "
                                   f"{len(call.args)} given")
        bound: dict[str, ast.AST] = dict(zip(names, call.args))
        for k in call.keywords:
            if k.arg is None or k.arg not in names:
                raise self.error(call, f"integrand '{callee.__name__}' has no parameter {k.arg!r}")
            bound[k.arg] = k.value
        specs: dict[str, ParamSpec] = {}
        for name, kind in callee.params():
            node = bound.get(name)
            if node is None:
                raise self.error(call, f"integrand '{callee.__name__}': missing argument '{name}'")
            if kind in ("field", "domain"):
                k = self.kind_of(node)
                if k is None or k[0] != kind:
                    raise self.error(node, f"argument '{name}' of integrand '{callee.__name__}' must be a "
                                           f"fem.{kind.title()}")
                if kind == "field":
                    if k[2] is not self.domain:
                        raise self.error(node, f"argument '{name}' of integrand '{callee.__name__}': fields "
                                               "converted with fem.cells() cannot be passed to other integrands")
                    specs[name] = ParamSpec("field", k[1], k[1].field_arg_type(k[2]))
                else:
                    specs[name] = ParamSpec("domain", k[1], k[1].IntegrandArg)
            elif kind == "sample":
                specs[name] = ParamSpec("sample", None, self.domain.geometry.sample_type)
            else:
                ann = callee.func.__annotations__.get(name, inspect.Parameter.empty)
                if ann is inspect.Parameter.empty or isinstance(ann, str):
                    from .operator import _annotations

                    ann = _annotations(callee.func).get(name, inspect.Parameter.empty)
                if ann is inspect.Parameter.empty or isinstance(ann, str):
                    ann = Any
                specs[name] = ParamSpec("value", None, ann)
        return specialize(callee, specs, self.domain)

    # ------------------------------------------------------------------------------------------ output
    def header_edits(self) -> None:
        for a in self.fdef.args.args:
            p = self.params.get(a.arg)
            if p is None:
                continue
            name = self.bind(p.type, f"T_{a.arg}")
            if a.annotation is not None:
                self.replace(a.annotation, name)
            else:
                l0, c0, l1, c1 = self._span(a)
                self.edits.append((l1, c1, l1, c1, f": {name}"))

    def source(self) -> tuple[str, dict[int, list[tuple[int, int, int]]]]:
        lines = list(self.lines)
        col_edits: dict[int, list[tuple[int, int, int]]] = {}
        for l0, c0, l1, c1, text in sorted(self.edits, key=lambda e: (e[0], e[1], e[2], e[3]), reverse=True):
            if l0 == l1:
                lines[l0] = lines[l0][:c0] + text + lines[l0][c1:]
                col_edits.setdefault(l0, []).append((c0, c1, len(text)))
            else:
                head = lines[l0][:c0] + text.split("\n")[0]
                tail_text = lines[l1][c1:]
                parts = text.split("\n")
                lines[l0] = head + "\n"
                for i in range(l0 + 1, l1):
                    lines[i] = parts[i - l0] + "\n" if i - l0 < len(parts) - 1 else "\n"
                lines[l1] = parts[-1] + tail_text
        # drop the decorators: the generated function starts at the user's `def` line
        def_line = self.fdef.lineno - 1
        body = lines[def_line:]
        pad = "\n" * (self.first - 1 + def_line)
        return pad + "".join(body), col_edits


_MISSING: Any = object()


def _source(lines: list[str], node: ast.AST) -> str:
    l0 = node.lineno - 1  # type: ignore[attr-defined]
    l1 = node.end_lineno - 1  # type: ignore[attr-defined]
    c0 = _byte_to_char(lines[l0], node.col_offset)  # type: ignore[attr-defined]
    c1 = _byte_to_char(lines[l1], node.end_col_offset)  # type: ignore[attr-defined]
    if l0 == l1:
        return lines[l0][c0:c1]
    return " ".join([lines[l0][c0:].strip()] + [lines[i].strip() for i in range(l0 + 1, l1)] + [lines[l1][:c1].strip()])


def _cells_of(domain: Any) -> Any:
    from .domain import Cells
    from .types import ElementKind

    if domain.element_kind == ElementKind.CELL:
        return domain
    return Cells(domain.geometry_partition)


def specialize(itg: Integrand, params: dict[str, ParamSpec], domain: Any) -> Specialization:
    """The specialisation of ``itg`` for ``params`` (cached on the integrand).

    Args:
        itg: the integrand.
        params: what each parameter receives.
        domain: the integration domain (fields are evaluated on it).

    """
    key = (tuple((n, params[n].key()) for n, _ in itg.params() if n in params), domain.name)
    cached = itg.cached_funcs.get(key)
    if cached is not None:
        return cached
    for name, _ in itg.params():
        if name not in params:
            raise IntegrandError(f"integrand '{itg.func.__qualname__}': no argument for parameter '{name}'")
    rw = _Rewriter(itg, params, domain)
    rw.run()
    rw.header_edits()
    text, col_edits = rw.source()
    tag = codegen.digest(itg.name, key)
    filename = f"<treadle.fem:integrand {itg.func.__qualname__} {tag}>"
    namespace = dict(rw.env)
    namespace.update(rw.bindings)
    namespace["__name__"] = codegen.GEN_MODULE
    codegen.exec_source(text, f"integrand {itg.func.__qualname__} {tag}", namespace)
    pyfn = namespace[rw.fdef.name]
    pyfn.__qualname__ = f"{itg.func.__qualname__}"
    wfn = codegen.func(pyfn, itg.name, key)
    ordered = [(n, params[n]) for n, _ in itg.params()]
    spec = Specialization(wfn, ordered, filename, rw.user_file, rw.first, rw.indent, col_edits)
    _GENERATED[filename] = spec
    itg.cached_funcs[key] = spec
    return spec


def param_spec(itg: Integrand, name: str, kind: str, arg: Any, domain: Any) -> ParamSpec:
    """The :class:`ParamSpec` of parameter ``name`` (of ``kind``) receiving ``arg`` in an integral over ``domain``."""
    if kind == "sample":
        return ParamSpec("sample", None, domain.geometry.sample_type)
    if kind == "domain":
        return ParamSpec("domain", domain, domain.IntegrandArg)
    if kind == "field":
        if not isinstance(arg, FieldLike):
            raise IntegrandError(f"integrand '{itg.func.__qualname__}': parameter '{name}' is annotated fem.Field "
                                 f"but received {_describe(arg)}; pass a field (a DiscreteField, make_test(), "
                                 "make_trial(), ImplicitField...) in fields=")
        try:
            arg.check_domain(domain)
        except FieldError as e:
            raise IntegrandError(f"integrand '{itg.func.__qualname__}', field '{name}': {e}") from None
        return ParamSpec("field", arg, arg.field_arg_type(domain))
    if isinstance(arg, FieldLike):
        raise IntegrandError(f"integrand '{itg.func.__qualname__}': parameter '{name}' received a field "
                             f"({arg.name}) but is not annotated fem.Field")
    from .operator import _annotations

    ann = _annotations(itg.func).get(name, inspect.Parameter.empty)
    return ParamSpec("value", None, value_type(ann, arg, name, itg))


def value_type(ann: Any, arg: Any, name: str, itg: Integrand) -> Any:
    """The kernel type a value parameter takes: its annotation, or the type of the value passed."""
    import treadle as wp

    from ..types.typesys import contains_any, normalize_annotation

    if ann is inspect.Parameter.empty or isinstance(ann, str):
        t = None
    else:
        t = normalize_annotation(ann)
        if contains_any(t):
            t = None
    if t is not None:
        return t
    if isinstance(arg, wp.array):
        return wp.array(dtype=arg.dtype, ndim=arg.ndim)
    if isinstance(arg, bool):
        return wp.bool
    if isinstance(arg, int):
        return wp.int32
    if isinstance(arg, float):
        return wp.float32
    tp = type(arg)
    struct_type = getattr(arg, "_struct_", None) or getattr(arg, "_cls", None)
    if struct_type is not None and hasattr(struct_type, "ctype"):
        return struct_type
    if hasattr(tp, "_wp_scalar_type_") or hasattr(tp, "_wp_generic_type_str_"):
        return tp
    from ..types import scalars

    if scalars.is_scalar_type(tp):
        return tp
    raise IntegrandError(f"integrand '{itg.func.__qualname__}': cannot tell the kernel type of value '{name}' "
                         f"({type(arg).__name__}); annotate the parameter")


def _describe(arg: Any) -> str:
    if arg is None:
        return "None"
    return f"a {type(arg).__name__}"


def remap_error(e: BaseException) -> BaseException:
    """An error raised in a generated integrand, re-pointed at the user's line and column (others unchanged)."""
    from ..core.errors import CodegenError, SourceLoc

    if not isinstance(e, CodegenError) or e.loc is None:
        return e
    spec = _GENERATED.get(e.loc.file)
    if spec is None:
        return e
    line0 = e.loc.line - spec.first
    col = _map_col(spec.edits.get(line0, []), e.loc.col) + spec.indent
    end = None
    if e.loc.end_col is not None:
        end = _map_col(spec.edits.get(line0, []), e.loc.end_col) + spec.indent
    loc = SourceLoc(spec.user_file, e.loc.line, col, end, e.loc.func)
    try:
        new = type(e)(e.msg, loc, e.fix)
    except TypeError:
        return e
    return new


def _map_col(edits: list[tuple[int, int, int]], col: int) -> int:
    """Map a column of the rewritten line back to the original (edits: original start, end, new length)."""
    shift = 0
    for c0, c1, n in sorted(edits):
        new_start = c0 + shift
        if col < new_start:
            break
        if col < new_start + n:
            return c0
        shift += n - (c1 - c0)
    return col - shift


__all__ = ["Domain", "Field", "IntegrandError", "ParamSpec", "Sample", "Sample_f64", "Specialization",
           "param_spec", "remap_error", "specialize"]
