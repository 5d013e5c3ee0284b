"""The builtin registry as plain records, for the generated builtin reference.

This is the only module of the documentation that reads the registry (``treadle/_src/builtins/registry.py``): when
the registry's internals change, only :func:`builtin_records` needs updating. The overloads listed for a builtin
are the sample argument signatures its type rule accepts, as enumerated by the test suite
(``tests/kernels/registry_samples.py``), each with the return type the rule gives for it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class OverloadRecord:
    """One concrete overload: argument type names and the return type name."""

    args: tuple[str, ...]
    returns: str


@dataclasses.dataclass(frozen=True)
class BuiltinRecord:
    """What the reference says about one builtin.

    Attributes:
        name: The name used in kernels (``wp.<name>``); for a syntax form (an operator), the registry's own name.
        group: The registry's doc group, e.g. ``"Vector Math"``.
        forms: The declared signatures, one per accepted form (``"sin(x: Float) -> Float"``).
        overloads: Concrete overloads among the sample types (may be empty: builtins on arrays, handles or
            compile-time arguments are described by their forms only).
        differentiable: Whether gradients flow through a call.
        python_callable: Whether ``wp.<name>(...)`` can be called from Python scope.
        syntax: True for builtins reached through syntax (``a < b``, ``arr.shape[d]``) rather than by name.
        doc: The docstring.
    """

    name: str
    group: str
    forms: tuple[str, ...]
    overloads: tuple[OverloadRecord, ...]
    differentiable: bool
    python_callable: bool
    syntax: bool
    doc: str


def _samples() -> ModuleType:
    """``tests/kernels/registry_samples.py``, the suite's enumerator of sample argument signatures."""
    name = "treadle_docs_registry_samples"
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "tests" / "kernels" / "registry_samples.py"
    if not path.is_file():
        raise RuntimeError(f"the builtin reference needs {path} (build the documentation from a source checkout)")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def split_forms(name: str, signature: str) -> tuple[str, ...]:
    """The forms of a declared signature.

    ``" | "`` separates forms only where the next one starts ``name(`` (elsewhere it is a union of types, as in
    ``x: float32 | vec2``).
    """
    parts = signature.split(" | ")
    forms = [parts[0]]
    start = re.compile(rf"^{re.escape(name)}\(")
    for part in parts[1:]:
        if start.match(part):
            forms.append(part)
        else:
            forms[-1] += " | " + part
    return tuple(f.strip() for f in forms)


def builtin_records() -> list[BuiltinRecord]:
    """Every documented builtin, in the registry's group order and, within a group, its declaration order.

    Internal builtins called by name (``_bvh_build``) are implementation details and left out; internal builtins
    reached through syntax (comparisons, ``not``, array attributes) are included with ``syntax=True``.
    """
    from treadle._src.builtins import REGISTRY
    from treadle._src.types.typesys import type_str

    samples = _samples()
    names = list(REGISTRY.builtins)
    accepted = samples.accepted_for(names)
    records = []
    for group, builtins in REGISTRY.groups().items():
        for b in builtins:
            syntax = b.name.startswith("_")
            if syntax and b.signature.startswith(b.name + "("):
                continue
            overloads = []
            for sig in accepted.get(b.name, []):
                ret = b.resolve(list(sig)).ret
                overloads.append(OverloadRecord(tuple(type_str(t) for t in sig), type_str(ret) if ret else "None"))
            records.append(BuiltinRecord(
                name=b.name,
                group=group,
                forms=(b.signature,) if syntax else split_forms(b.name, b.signature),
                overloads=tuple(overloads),
                differentiable=b.differentiable,
                python_callable=b.host is not None and not b.kernel_only,
                syntax=syntax,
                doc=b.doc,
            ))
    return records


def undocumented_builtins() -> list[str]:
    """Names of registry builtins (internal ones included) whose docstring is empty."""
    from treadle._src.builtins import REGISTRY

    return sorted(n for n, b in REGISTRY.builtins.items() if not (b.doc or "").strip())
