"""Golden IR: the printed IR of representative kernels after lowering and the adjoint sweep, against checked-in text.

For each kernel of ``golden_kernels.py`` the file ``golden/<kernel>.txt`` holds

- ``lowered``: the typed IR of the kernel and of the functions it calls, as the frontend produces it;
- ``structurized``: the jump-free IR the adjoint sweep reads (``structurize``);
- ``adjoint``: the reverse sweep the adjoint emitter writes for it (the per-thread backward body and the adjoint of
  each called function; the launch entry points are left out).

No C++ compiler is needed. A change that alters any of these on purpose regenerates the files with

    TREADLE_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_golden_ir.py

and the diff of ``tests/compiler/golden/`` is then reviewed with the change.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

import pytest

from treadle._src.compiler import ir
from treadle._src.compiler.emit_adjoint import AdjointEmitter
from treadle._src.compiler.emit_cpp import Emitter
from treadle._src.compiler.pipeline import ordered_deps
from treadle._src.compiler.structurize import structurize

sys.path.insert(0, str(Path(__file__).parent))
from golden_kernels import KERNELS  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TREADLE_UPDATE_GOLDEN", "") not in ("", "0")


def _stable(text: str) -> str:
    """Function symbols carry a hash of their module's identity (its path): print them without it."""
    return re.sub(r"\b(fn_\w+?)_[0-9a-f]{12}\b", r"\1", text)


def _sweep(text: str) -> str:
    """The body of an emitted function, from its opening brace to its closing one (no signature, no entry points)."""
    lines = text.split("\n")
    start = lines.index("{")
    end = lines.index("}", start)
    return "\n".join(lines[start:end + 1])


def render(kernel: object) -> str:
    """The golden text of one kernel."""
    inst = kernel.get_instance(None)  # type: ignore[attr-defined]
    funcs = ordered_deps(inst.deps)
    lowered = [ir.format_func(fi.ir) for fi in funcs] + [ir.format_func(inst.ir)]
    structured = [ir.format_func(structurize(fi.ir)) for fi in funcs] + [ir.format_func(structurize(inst.ir))]
    adj = AdjointEmitter(Emitter(line_directives=False))
    sweeps = [f"// adjoint of {fi.name}\n" + _sweep(adj.adjoint_function(structurize(fi.ir), fi.cname))
              for fi in funcs]
    sweeps.append(f"// backward of {inst.ir.name}\n" + _sweep(adj.adjoint_kernel(structurize(inst.ir), "@SYMBOL@")))
    parts = ["# lowered", *lowered, "# structurized", *structured, "# adjoint", *sweeps]
    return _stable("\n\n".join(parts)) + "\n"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_golden_ir(name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    text = render(KERNELS[name])
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path}; create it with TREADLE_UPDATE_GOLDEN=1 (see the module docstring)"
    want = path.read_text()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), f"golden/{name}.txt",
                                            "now", n=2))
        pytest.fail(f"the IR of '{name}' changed (regenerate with TREADLE_UPDATE_GOLDEN=1 if on purpose):\n{diff}")


def test_golden_files_cover_every_kernel_and_nothing_else() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(KERNELS)


def test_golden_text_is_deterministic() -> None:
    """Rendering twice gives the same text (fresh instances of the same kernels are lowered the same way)."""
    for k in KERNELS.values():
        assert render(k) == render(k)


def test_a_changed_kernel_does_not_match_its_golden_file() -> None:
    """The comparison can fail: a kernel with one operation changed renders differently."""
    import treadle as wp

    @wp.kernel
    def loops(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
        i = wp.tid()
        s = 0.0
        for j in range(n):
            s += x[j] * wp.cos(x[i])  # sin in the golden kernel
        k = 0
        while k < n:
            if x[k] > 1.0:
                break
            s = s * 0.5
            k += 1
        out[i] = s

    assert render(loops) != (GOLDEN / "loops.txt").read_text()
    assert "cos(" in render(loops)
