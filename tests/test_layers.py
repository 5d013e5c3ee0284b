"""The layering of ``treadle/_src``: every import points down the declared order, and files form no long cycles.

Every ``import`` statement of every file is read from its syntax tree, at module level and inside functions,
classes and ``if TYPE_CHECKING:`` blocks alike, relative or absolute, ``import a.b`` and ``from a import b``. A
package of ``treadle/_src`` may import its own files and the packages of the rows *below* its own in
:data:`LAYERS`; packages in the same row are peers that never import each other. Files may form import cycles of
two (a module and a helper that call each other) but never longer ones. Strings handed to ``importlib`` or
``__import__`` that name Treadle modules count as violations too: an import is written as an import.

Adding a package is adding its folder and its row (or its name in a row) here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "treadle" / "_src"

#: The layers, lowest first. A package may import packages of lower rows; packages of one row are peers.
LAYERS: list[tuple[str, ...]] = [
    ("core",),                   # errors, ctypes layouts of the native ABI
    ("types",),                  # scalars, vectors/matrices/quaternions, structs, the type system, array protocol
    ("builtins",),               # the builtin registry (every builtin declared once) and builtin-side types
    ("compiler", "runtime"),     # frontend/IR/passes/emitters/instances | devices, memory, cache, toolchain, pool
    ("backends",),               # cpu/, cuda/, interpret/: build, load and launch kernel instances
    ("lang",),                   # the public front: decorators, Kernel/Function/Module, array, launch
    ("autodiff",),               # Tape, gradient checks
    ("autograd",),               # the reference's internal path of the autograd tools
    ("interop",),                # NumPy/DLPack/CUDA array interface, PyTorch, JAX, Paddle
    ("geometry",),               # HashGrid, Bvh, Mesh, MarchingCubes
    ("volume", "texture"),       # wp.Volume (NanoVDB), wp.Texture1D/2D/3D
    ("api",),                    # the public package ``treadle`` (not a folder: see EXTERNAL)
    ("utils",),                  # library layers built on the public API: warp.utils, ...
    ("geometry_lib",),           # warp.geometry
    ("sparse",),                 # warp.sparse: block-sparse (BSR) matrices
    ("optim",),                  # warp.optim.linear: Krylov solvers and preconditioners over BSR matrices
    ("fem",),
    ("render",),
    ("warp_compat",),            # the ``warp`` alias: resolves every public module
]

#: Modules outside ``treadle/_src`` that ``_src`` may import, and the layer they count as. The public package
#: ``treadle`` is everything up to the ``api`` row: the library layers above it are written against it, as a user's
#: library would be (``import treadle as wp``), and ``treadle/__init__.py`` imports none of them eagerly.
EXTERNAL = {"treadle.config": "core", "treadle": "api"}


def _rank() -> dict[str, int]:
    return {name: i for i, row in enumerate(LAYERS) for name in row}


def _modules(src: Path = SRC) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``src`` (packages by their ``__init__``)."""
    out = {}
    for p in sorted(src.rglob("*.py")):
        parts = list(p.relative_to(src.parent.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _resolve(name: str, mods: dict[str, Path]) -> str:
    """The module a dotted name imports: itself if it is a module, else its longest module prefix."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in mods or cand in EXTERNAL:
            return cand
        parts.pop()
    return name


def _imports(mod: str, path: Path, mods: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every Treadle import in one file (all of them, wherever they are)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "treadle" or a.name.startswith("treadle."):
                    found.append((node.lineno, _resolve(a.name, mods)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "treadle" or target.startswith("treadle.")):
                continue
            for a in node.names:
                full = f"{target}.{a.name}"
                found.append((node.lineno, full if full in mods or full in EXTERNAL else _resolve(target, mods)))
        elif isinstance(node, ast.Call):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if fname in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and (
                        arg.value.startswith("treadle") or arg.value.startswith(".")):
                    found.append((node.lineno, f"<string import {arg.value!r}>"))
    return sorted({(line, m) for line, m in found if m != mod})


def _layer(mod: str) -> str | None:
    if mod in EXTERNAL:
        return EXTERNAL[mod]
    parts = mod.split(".")
    if parts[:2] != ["treadle", "_src"] or len(parts) < 3:
        return None
    return parts[2]


def import_graph(src: Path = SRC) -> tuple[dict[str, list[tuple[int, str]]], dict[str, Path]]:
    """Every file's Treadle imports, and the files by module name."""
    mods = _modules(src)
    return {m: _imports(m, p, mods) for m, p in mods.items()}, mods


def layer_violations(src: Path = SRC) -> list[str]:
    """Imports against :data:`LAYERS`, as ``file:line: message`` lines."""
    graph, mods = import_graph(src)
    rank = _rank()
    out = []
    for mod, deps in graph.items():
        here = _layer(mod)
        where = mods[mod].relative_to(src.parent.parent)
        if here is None:  # treadle/_src/__init__.py
            continue
        if here not in rank:
            out.append(f"{where}: package '{here}' is not in the declared layers (add it to LAYERS)")
            continue
        for line, dep in deps:
            if dep.startswith("<string import"):
                out.append(f"{where}:{line}: {dep[1:-1]} (write it as an import statement)")
                continue
            there = _layer(dep)
            if there is None:
                out.append(f"{where}:{line}: imports {dep} (outside treadle/_src; only {sorted(EXTERNAL)} may be)")
                continue
            if there == here:
                continue
            if there not in rank:
                out.append(f"{where}:{line}: imports {dep} of undeclared package '{there}'")
            elif rank[there] == rank[here]:
                out.append(f"{where}:{line}: imports {dep}: '{here}' and '{there}' are peers and never import "
                           "each other")
            elif rank[there] > rank[here]:
                out.append(f"{where}:{line}: imports {dep}: '{here}' is below '{there}' in the layers")
    return out


def long_cycles(src: Path = SRC) -> list[list[str]]:
    """One example of each import cycle through more than two files (as module names, first repeated last).

    A cycle ``a -> b -> ... -> a`` of three or more distinct files exists exactly when some edge ``u -> v`` has a
    path back ``v -> ... -> w -> u`` that avoids ``u`` and whose last step comes from a file ``w`` other than ``v``.
    """
    graph, _ = import_graph(src)
    edges = {m: sorted({d for _, d in deps if d in graph}) for m, deps in graph.items()}
    found: list[list[str]] = []
    covered: set[frozenset[str]] = set()
    for u in sorted(edges):
        for v in edges[u]:
            # breadth-first from v without u, remembering the way back
            parent = {v: ""}
            queue = [v]
            hit = None
            while queue and hit is None:
                nxt = []
                for x in queue:
                    for y in edges[x]:
                        if y == u and x != v:
                            hit = x
                            break
                        if y != u and y not in parent:
                            parent[y] = x
                            nxt.append(y)
                    if hit is not None:
                        break
                queue = nxt
            if hit is None:
                continue
            path = [hit]
            while path[-1] != v:
                path.append(parent[path[-1]])
            cycle = [u, *reversed(path), u]
            key = frozenset(cycle)
            if key not in covered:
                covered.add(key)
                found.append(cycle)
    return found


def test_layers_declared_folders_exist() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py") if p.name != "__init__.py"}
    undeclared = sorted((packages | modules) - set(_rank()))
    assert not undeclared, f"packages of treadle/_src missing from LAYERS: {undeclared}"


def test_imports_follow_the_layers() -> None:
    bad = layer_violations()
    assert not bad, f"{len(bad)} import(s) against the layer order:\n" + "\n".join(bad)


def test_no_import_cycle_longer_than_two_files() -> None:
    cycles = long_cycles()
    short = [" -> ".join(m.replace("treadle._src.", "") for m in c) for c in cycles]
    assert not cycles, f"{len(cycles)} import cycle(s) through more than two files:\n" + "\n".join(short)


def test_the_checker_sees_every_import_form(tmp_path: Path) -> None:
    """The checks themselves: each import form is found, an upward one is reported, a three-file cycle too."""
    src = tmp_path / "treadle" / "_src"
    for pkg in ("core", "types", "lang"):
        (src / pkg).mkdir(parents=True)
        (src / pkg / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "core" / "a.py").write_text("def f():\n    from ..lang import c\n")           # deferred, relative
    (src / "core" / "b.py").write_text("import treadle._src.types.t\n")                # absolute, import a.b
    (src / "types" / "t.py").write_text("from treadle._src.core import a\nfrom treadle import config\n")
    (src / "lang" / "c.py").write_text("from ..core import b\nimport importlib\n"
                                       "importlib.import_module('treadle._src.types.t')\n")
    bad = layer_violations(src)
    assert any("core/a.py:2" in b and "lang.c" in b for b in bad), bad
    assert any("core/b.py:1" in b and "types.t" in b for b in bad), bad
    assert any("string import" in b for b in bad), bad
    assert not any("types/t.py" in b for b in bad), bad  # core and treadle.config sit below types
    (src / "lang" / "d.py").write_text("from . import e\n")                              # a pair: allowed
    (src / "lang" / "e.py").write_text("def g():\n    from .d import x\n")
    cycles = long_cycles(src)
    assert [set(c) for c in cycles] == [{"treadle._src.core.a", "treadle._src.lang.c", "treadle._src.core.b",
                                         "treadle._src.types.t"}], cycles
