"""The public Python API of ``treadle``, found by walking the package (no list of names to keep up to date).

Public modules are ``treadle`` and its submodules whose names do not start with ``_`` (``treadle.examples``, the
example programs, is shown in the gallery instead). A module's public names are its ``__all__`` when it has one;
otherwise every name not starting with ``_`` that the module defines or re-exports from ``treadle`` (modules,
``from __future__`` features and names imported from other libraries are left out). Data (constants, settings,
instances) is documented by a ``#:`` comment on the line(s) above its assignment, in the module or in the
``treadle`` module it is imported from; classes and functions by their docstrings.
"""

from __future__ import annotations
import __future__

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import types
from functools import cache
from pathlib import Path
from typing import Any

#: Submodules that are programs rather than API.
NOT_API = {"treadle.examples"}

#: Section of the ``treadle`` reference by the module that defines a name (longest prefix wins); names from other
#: modules go to a section named after their module, so new code is never left out.
SECTIONS: list[tuple[str, str]] = [
    ("treadle._src.lang.kernel", "Kernels and functions"),
    ("treadle._src.lang.function", "Kernels and functions"),
    ("treadle._src.lang.struct", "Kernels and functions"),
    ("treadle._src.lang.typesys", "Kernels and functions"),
    ("treadle._src.lang.map", "Kernels and functions"),
    ("treadle._src.lang.module_api", "Kernels and functions"),
    ("treadle._src.lang.launch", "Launches"),
    ("treadle._src.runtime.graph", "Launches"),
    ("treadle._src.lang.array", "Arrays"),
    ("treadle._src.lang.creation", "Arrays"),
    ("treadle._src.lang.indexedarray", "Arrays"),
    ("treadle._src.lang.scalars", "Types"),
    ("treadle._src.lang.vector", "Types"),
    ("treadle._src.lang.matrix", "Types"),
    ("treadle._src.lang.quat", "Types"),
    ("treadle._src.lang.constants", "Constants"),
    ("treadle._src.builtins", "Types"),
    ("treadle._src.autodiff", "Autodiff"),
    ("treadle._src.runtime", "Devices, streams and the runtime"),
    ("treadle._src.interop", "Interop"),
    ("treadle._src.geometry", "Geometry"),
    ("treadle._src.errors", "Errors and warnings"),
    ("treadle.config", "Configuration"),
    ("treadle", "Type annotations and aliases"),
]


@dataclasses.dataclass(frozen=True)
class Name:
    """One public name of a module.

    Attributes:
        module: The module's dotted name (``"treadle"``).
        name: The attribute name.
        kind: ``"class"``, ``"function"``, ``"builtin"`` (a kernel builtin's Python-scope callable, documented in
            the builtin reference) or ``"data"``.
        doc: The docstring or ``#:`` comment ("" when there is none).
        home: The module whose name it was imported from (``"treadle._src.lang.array"``), or ``module``.
        same_as: For a submodule's name that is the same object as a public name of an enclosing package, that
            name (dotted).
        obj: The object itself.
    """

    module: str
    name: str
    kind: str
    doc: str
    home: str
    same_as: str | None
    obj: Any

    @property
    def qualname(self) -> str:
        """``module.name``."""
        return f"{self.module}.{self.name}"


def public_modules() -> list[str]:
    """``treadle`` and its public submodules (recursively), in walk order."""
    import treadle

    out = ["treadle"]

    def walk(pkg: types.ModuleType) -> None:
        for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
            short = info.name.rsplit(".", 1)[-1]
            if short.startswith("_") or info.name in NOT_API:
                continue
            out.append(info.name)
            if info.ispkg:
                walk(importlib.import_module(info.name))

    walk(treadle)
    return out


@cache
def _source_facts(module_name: str) -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    """Facts from a module's source.

    Returns ``#:`` comments by assigned name, the module each imported name comes from (a dotted name), and every
    name the module binds itself.
    """
    mod = importlib.import_module(module_name)
    path = getattr(mod, "__file__", None)
    if not path or not path.endswith(".py"):
        return {}, {}, frozenset()
    text = Path(path).read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    comments: dict[str, str] = {}
    imports: dict[str, str] = {}
    bound: set[str] = set()
    package = module_name if path.endswith("__init__.py") else module_name.rpartition(".")[0]
    for node in tree.body:
        targets: list[str] = []
        if isinstance(node, ast.Assign):
            for t in node.targets:
                targets += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets.append(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level \
                else (node.module or "")
            for alias in node.names:
                imports[alias.asname or alias.name] = base
            continue
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        else:
            continue
        bound.update(targets)
        doc: list[str] = []
        i = node.lineno - 2
        while i >= 0 and lines[i].lstrip().startswith("#:"):
            doc.insert(0, lines[i].lstrip()[2:].strip())
            i -= 1
        if doc:
            for t in targets:
                comments[t] = "\n".join(doc)
    return comments, imports, frozenset(bound)


def data_doc(module_name: str, name: str, depth: int = 0) -> str:
    """The ``#:`` comment of data ``name`` in ``module_name``, following ``from X import name`` into ``treadle``."""
    comments, imports, _ = _source_facts(module_name)
    if name in comments:
        return comments[name]
    origin = imports.get(name)
    if origin and origin.startswith("treadle") and depth < 8:
        try:
            return data_doc(origin, name, depth + 1)
        except ImportError:
            return ""
    return ""


def _own_doc(obj: Any) -> str:
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
    else:
        doc = getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _instance_doc(obj: Any) -> str:
    """The docstring an instance carries itself (a struct type, a query type).

    Else its class's, when that class is defined in ``treadle``.
    """
    own = getattr(obj, "__dict__", {}).get("__doc__") if hasattr(obj, "__dict__") else None
    if isinstance(own, str) and own.strip():
        return inspect.cleandoc(own)
    return _own_doc(type(obj)) if _is_ours(type(obj)) else ""


def _kind(obj: Any) -> str:
    if hasattr(obj, "_treadle_builtin_"):
        return "builtin"
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return "data"


def _is_ours(obj: Any, root: str = "treadle") -> bool:
    """Whether ``obj`` is defined in package ``root`` (``treadle``), not imported from another library."""
    mod = getattr(obj, "__module__", None)
    return isinstance(mod, str) and (mod == root or mod.startswith(root + "."))


def public_names(module_name: str) -> list[Name]:
    """The public names of one module, sorted case-insensitively."""
    import treadle

    mod = importlib.import_module(module_name)
    for lazy in (*getattr(treadle, "_LAZY_NAMES", ()), *getattr(mod, "_LAZY_NAMES", ())):
        # names a package loads on first use (treadle.Mesh ...) are documented like the others: load them now
        getattr(treadle if lazy in getattr(treadle, "_LAZY_NAMES", ()) else mod, lazy)
    root = module_name.split(".")[0]
    _, imports, bound = _source_facts(module_name)
    explicit = getattr(mod, "__all__", None)
    # a name that is the same object as a public name of an enclosing package (treadle, treadle.fem, ...) is
    # documented there; the outermost package wins
    top: dict[int, str] = {}
    parts = module_name.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        outer = ".".join(parts[:depth])
        pkg = importlib.import_module(outer)
        names = getattr(pkg, "__all__", None) or [n for n in vars(pkg) if not n.startswith("_")]
        for n in names:
            if hasattr(pkg, n) and not isinstance(getattr(pkg, n), types.ModuleType):
                top[id(getattr(pkg, n))] = f"{outer}.{n}"
    out = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or isinstance(obj, (types.ModuleType, __future__._Feature)):
            continue
        if explicit is not None:
            if name not in explicit:
                continue
        elif inspect.isclass(obj) or inspect.isroutine(obj):
            if not _is_ours(obj, root):
                continue
        elif name not in bound and not imports.get(name, "").startswith(root):
            continue
        kind = _kind(obj)
        if kind == "data":
            doc = data_doc(module_name, name) or _instance_doc(obj)
        else:
            doc = _own_doc(obj)
        same = top.get(id(obj)) if kind != "data" or not isinstance(obj, (int, float, str, bool)) else None
        out.append(Name(module_name, name, kind, doc, imports.get(name, module_name), same, obj))
    return sorted(out, key=lambda n: (n.name.lower(), n.name))



def section_of(n: Name) -> str:
    """The section of the ``treadle`` reference a top-level name belongs to."""
    home = getattr(n.obj, "__module__", None) if n.kind in ("class", "function") else None
    where = home if isinstance(home, str) and home.startswith("treadle") else n.home
    best, title = "", ""
    for prefix, t in SECTIONS:
        # "treadle" itself matches only names defined in treadle/__init__.py
        inside = where == prefix or (prefix != "treadle" and where.startswith(prefix + "."))
        if inside and len(prefix) > len(best):
            best, title = prefix, t
    if not title:  # a part of the package SECTIONS does not know yet: a section named after it
        parts = where.split(".")
        title = (parts[2] if len(parts) > 2 and parts[1] == "_src" else parts[-1]).replace("_", " ").capitalize()
    return title


def undocumented(modules: list[str] | None = None) -> list[str]:
    """Qualified public names of ``modules`` (default: every public module) without a docstring or ``#:`` comment."""
    missing = []
    for m in public_modules() if modules is None else modules:
        mod = importlib.import_module(m)
        if not _own_doc(mod):
            missing.append(m)
        for n in public_names(m):
            if n.same_as is None and not n.doc.strip():
                missing.append(n.qualname)
    return missing
