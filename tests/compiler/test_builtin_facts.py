"""Every fact about a builtin lives on its declaration: no table of builtin names elsewhere, no fact left unstated.

The compiler, the backends and the front end read builtin facts from the declaration (``Builtin.op``,
``Builtin.lowering``, ``Builtin.interpret``, ``Builtin.replay``, ...). These tests fail when a module outside
``builtins/`` keys a table (set, tuple, list or dict) by builtin names or compares a builtin's name with a literal,
when a declaration leaves how interpret mode runs it unstated, and when a fact names something that does not exist.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import treadle  # noqa: F401 - declares every builtin
from treadle._src.backends.interpret.handlers import HANDLERS
from treadle._src.builtins import REGISTRY
from treadle._src.builtins.registry import Interp, Lowering, Op
from treadle._src.compiler.lower_call import SPECIAL_LOWERINGS

SRC = Path(treadle.__file__).parent / "_src"
#: Packages that consume builtin facts (the declarations themselves live in ``builtins/``).
CONSUMERS = ["compiler", "backends", "lang", "runtime", "autodiff"]
NAMES = set(REGISTRY.builtins)
#: Tables whose keys coincide with builtin names but are something else.
NOT_BUILTIN_TABLES = {
    "_ATOMIC_OPS": "keyed by ir.ArrayAtomic.op, the atomic operation (add, sub, min, max, ...)",
}


def _literal_strings(node: ast.AST) -> list[str]:
    """The string elements of a set/tuple/list literal (dict: its keys), also inside ``frozenset(...)``/``set(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return _literal_strings(node.args[0]) if node.args else []
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        elts = node.elts
    elif isinstance(node, ast.Dict):
        elts = [k for k in node.keys if k is not None]
    else:
        return []
    return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _name_keyed_tables(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """Module- and class-level tables with two or more builtin names as elements or keys."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef)):
            continue
        for stmt in node.body:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            if value is None:
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id in NOT_BUILTIN_TABLES for t in targets):
                continue
            hits = [s for s in _literal_strings(value) if s in NAMES]
            if len(hits) >= 2:
                found.append((stmt.lineno, hits))
    return found


def _name_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """``<...>.builtin.name == "x"`` / ``in (...)`` comparisons with builtin names."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        if not (isinstance(left, ast.Attribute) and left.attr == "name" and isinstance(left.value, ast.Attribute)
                and left.value.attr == "builtin"):
            continue
        for comp in node.comparators:
            strings = _literal_strings(comp) or ([comp.value] if isinstance(comp, ast.Constant) else [])
            if any(s in NAMES for s in strings if isinstance(s, str)):
                found.append((node.lineno, ast.unparse(node)))
    return found


def _sources() -> list[Path]:
    return sorted(p for pkg in CONSUMERS for p in (SRC / pkg).rglob("*.py"))


def test_no_table_of_builtin_names_outside_the_declarations() -> None:
    bad = [f"{p.relative_to(SRC)}:{line}: {hits}" for p in _sources()
           for line, hits in _name_keyed_tables(ast.parse(p.read_text()))]
    assert not bad, "builtin facts keyed by name outside builtins/ (declare them on the builtin instead):\n" + \
        "\n".join(bad)


def test_no_comparison_with_builtin_names_outside_the_declarations() -> None:
    bad = [f"{p.relative_to(SRC)}:{line}: {text}" for p in _sources()
           for line, text in _name_comparisons(ast.parse(p.read_text()))]
    assert not bad, "code that recognises builtins by name (declare the fact on the builtin instead):\n" + \
        "\n".join(bad)


def test_the_scanner_sees_a_side_table() -> None:
    """The check above fails for the kind of table it forbids (and for a name comparison)."""
    tree = ast.parse('_NO_REPLAY = ("print", "printf")\n_X = frozenset({"floor", "ceil"})\n'
                     'class E:\n    _S = {"sqrt": 1, "log": 2}\n'
                     'def f(s):\n    return s.overload.builtin.name in ("sin", "cos")\n')
    assert [line for line, _ in _name_keyed_tables(tree)] == [1, 2, 4]
    assert [line for line, _ in _name_comparisons(tree)] == [6]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_builtin_states_how_interpret_mode_runs_it(name: str) -> None:
    b = REGISTRY.builtins[name]
    # tid() and the atomics lower to their own IR statements (ir.Tid, ir.ArrayAtomic), which the interpreter runs.
    lowered_away = b.lowering in (Lowering.TID, Lowering.ATOMIC)
    assert b.host is not None or b.interpret is not None or lowered_away, (
        f"'{name}' has no host implementation: name its interpreter handler (interpret=Interp....) or declare "
        "interpret=Interp.NONE")
    if b.interpret is Interp.COMPARE:
        assert b.op is not None and b.op.binary
    if b.interpret in (Interp.RANDOM, Interp.IN_PLACE):
        assert b.ref_args and b.host is not None
    if b.interpret is Interp.IN_PLACE:
        twin = REGISTRY.get(b.twin)
        assert twin is not None and twin.host is not None, f"'{name}': twin '{b.twin}' has no host implementation"
    else:
        assert not b.twin


@pytest.mark.parametrize("name", sorted(NAMES))
def test_declared_facts_are_typed_and_consistent(name: str) -> None:
    b = REGISTRY.builtins[name]
    assert isinstance(b.lowering, Lowering)
    assert b.op is None or isinstance(b.op, Op)
    assert b.interpret is None or isinstance(b.interpret, Interp)
    assert ":" not in b.cpp, "the C++ symbol is a name; operators are Builtin.op"
    assert b.replay or b.side_effects, "only builtins with side effects are left out of the replay"
    assert not (b.singular and not b.differentiable), "singular describes an adjoint"
    assert not (b.pass_through and not b.differentiable)
    assert not (b.zero_derivative and b.singular)
    assert not b.shape_query or b.metadata_only
    if b.partner:
        partner = REGISTRY.get(b.partner)
        assert partner is not None and partner.partner == name
    if b.lowering is Lowering.ATOMIC:
        assert b.atomic


def test_every_interpreter_kind_and_lowering_has_an_implementation() -> None:
    assert set(HANDLERS) == set(Interp)
    assert set(SPECIAL_LOWERINGS) == set(Lowering) - {Lowering.CALL}


def test_interp_none_reports_unsupported_in_interpret_mode() -> None:
    import numpy as np

    import treadle as wp

    @wp.kernel
    def k(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.length(wp.spatial_top(wp.spatial_vector(p[i], p[i])))

    @wp.kernel
    def q(grid: wp.uint64, out: wp.array(dtype=int)):
        n = 0
        for _ in wp.hash_grid_query(grid, wp.vec3(0.0), 1.0):
            n += 1
        out[0] = n

    old = wp.config.mode
    wp.config.mode = "interpret"
    try:
        p = wp.array(np.ones((2, 3), np.float32), dtype=wp.vec3)
        out = wp.zeros(2, dtype=float)
        with pytest.raises(Exception, match="spatial_vector.*interpret mode"):
            wp.launch(k, dim=2, inputs=[p, out])
        with pytest.raises(Exception, match="hash_grid_query.*interpret mode"):
            wp.launch(q, dim=1, inputs=[wp.uint64(0), wp.zeros(1, dtype=int)])
    finally:
        wp.config.mode = old
