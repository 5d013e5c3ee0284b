"""Python's ``ast`` conversions under one process-wide lock.

CPython 3.11 (and 3.12 before its fix) keeps the recursion counter of its AST object conversions in interpreter
state shared by every thread, so two threads parsing source into ``ast`` nodes at once (kernels defined in several
threads) can fail with ``SystemError: AST constructor recursion depth mismatch``. Every conversion between source,
``ast`` objects and code that Treadle makes goes through here.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_LOCK = threading.Lock()


def parse(text: str) -> ast.Module:
    """``ast.parse(text)``, one thread at a time."""
    with _LOCK:
        return ast.parse(text)


def compile_ast(node: ast.Expression | ast.Module, filename: str, mode: str) -> CodeType:
    """``compile(node, filename, mode)`` of an ``ast`` node, one thread at a time."""
    with _LOCK:
        return compile(node, filename, mode)
