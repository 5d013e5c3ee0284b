"""Test helper: (re)import a generated Python module from a directory, as a new process would see it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from treadle._src.lang.kernel import modules


def import_fresh(root: Path, name: str, text: str) -> ModuleType:
    """Write ``root/<name>.py`` (when its text differs) and import it anew, forgetting its Treadle module."""
    path = root / f"{name}.py"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    sys.modules.pop(name, None)
    modules().modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module(name)
