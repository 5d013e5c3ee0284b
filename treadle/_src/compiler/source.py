"""Source capture: the AST of a Python function with real file/line/column positions, and name lookup.

The AST keeps the positions of the user's file, so every IR statement and diagnostic can point at the user's line.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import io
import linecache
import os
import textwrap
import tokenize
from collections.abc import Callable
from typing import Any

from ..core import pyast
from ..core.errors import CodegenError, SourceLoc


class _Missing:
    pass


MISSING: Any = _Missing()

#: The files that define kernels, as they were when the kernels were defined (kernels are lowered lazily; their file
#: may be gone or rewritten by then, e.g. a module loaded from a temporary file): the file's bytes, decoded into lines
#: only if a kernel is lowered from them (a warm start lowers nothing), or the lines ``linecache`` gave.
_SNAPSHOTS: dict[str, bytes | list[str]] = {}


def _read_bytes(path: str) -> bytes | None:
    """The bytes of a regular file (``None`` if it cannot be read): three system calls, no text decoding."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        chunks: list[bytes] = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    except OSError:
        return None
    finally:
        os.close(fd)


def remember_source(fn: Callable[..., Any]) -> None:
    """Keep the text of ``fn``'s file (read once per file) so that its source can be read later."""
    file = getattr(getattr(fn, "__code__", None), "co_filename", None)
    if file and file not in _SNAPSHOTS:
        data = _read_bytes(file) if os.path.isabs(file) else None
        if data:
            _SNAPSHOTS[file] = data
            return
        lines = linecache.getlines(file)  # not a file on disk: whatever ``linecache`` knows (loaders, ``exec``)
        if lines:
            _SNAPSHOTS[file] = lines


def _snapshot(file: str) -> list[str] | None:
    """The remembered lines of ``file`` (decoded as Python decodes source files)."""
    snap = _SNAPSHOTS.get(file)
    if isinstance(snap, bytes):
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(snap).readline)
            snap = io.TextIOWrapper(io.BytesIO(snap), encoding).readlines()  # as ``linecache`` reads it
        except (SyntaxError, UnicodeDecodeError, LookupError):
            snap = None
        if snap:
            _SNAPSHOTS[file] = snap
        else:
            _SNAPSHOTS.pop(file, None)
    return snap


def _source_lines(fn: Callable[..., Any]) -> tuple[list[str], int]:
    """``inspect.getsourcelines(fn)``, falling back to the snapshot of its file taken at definition."""
    try:
        return inspect.getsourcelines(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        lines = _snapshot(code.co_filename) if code is not None else None
        if not lines or code is None:
            raise
        start = code.co_firstlineno - 1
        return inspect.getblock(lines[start:]), start + 1


class FuncSource:
    """A Python function's source, AST and the scopes its free names resolve in."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.qualname = getattr(fn, "__qualname__", self.name)
        self.module = getattr(fn, "__module__", "__main__") or "__main__"
        code = fn.__code__
        self.file = code.co_filename
        try:
            lines, first = _source_lines(fn)
        except (OSError, TypeError) as e:
            raise CodegenError(
                f"cannot read the source of '{self.qualname}': {e}",
                fix="define kernels and functions in a .py file (not in an interactive prompt or exec string)",
            ) from None
        text = textwrap.dedent("".join(lines))
        indent = len(lines[0]) - len(lines[0].lstrip())
        self.source = text
        try:
            tree = pyast.parse(text)
        except SyntaxError as e:  # pragma: no cover - Python already parsed it once
            raise CodegenError(f"cannot parse '{self.qualname}': {e}") from None
        ast.increment_lineno(tree, first - 1)
        if indent:
            for node in ast.walk(tree):
                if hasattr(node, "col_offset"):
                    node.col_offset += indent
                    if getattr(node, "end_col_offset", None) is not None:
                        node.end_col_offset += indent  # type: ignore[attr-defined]
        fdef = tree.body[0]
        if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise CodegenError(f"'{self.qualname}' is not a function definition")
        self.tree: ast.FunctionDef = fdef  # type: ignore[assignment]
        self.first_line = first
        self.globals = fn.__globals__
        self.closure: dict[str, Any] = {}
        if fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # empty cell: assigned later in the enclosing scope
                    self.closure[name] = MISSING
        self.signature = inspect.signature(fn)
        self.source_hash = hashlib.sha256(text.encode()).hexdigest()

    def loc(self, node: ast.AST | None) -> SourceLoc:
        """The user-file location of an AST node."""
        if node is None or not hasattr(node, "lineno"):
            return SourceLoc(self.file, self.first_line, 0, None, self.qualname)
        return SourceLoc(
            self.file,
            node.lineno,
            getattr(node, "col_offset", 0),
            getattr(node, "end_col_offset", None) if getattr(node, "end_lineno", None) == node.lineno else None,
            self.qualname,
        )

    def lookup(self, name: str) -> Any:
        """Resolve a free name: closure cells, then module globals, then Python builtins; ``MISSING`` if none."""
        if name in self.closure:
            value = self.closure[name]
            if value is not MISSING:
                return value
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        return MISSING

    def eval_annotation(self, node: ast.expr | None, raw: Any) -> Any:
        """Evaluate a parameter annotation (strings from ``from __future__ import annotations`` included)."""
        if raw is inspect.Parameter.empty:
            return MISSING
        if isinstance(raw, str):
            scope = dict(self.globals)
            scope.update({k: v for k, v in self.closure.items() if v is not MISSING})
            try:
                return eval(raw, scope)  # noqa: S307 - annotations are the user's own code
            except Exception as e:
                raise CodegenError(f"cannot evaluate annotation '{raw}': {e}", self.loc(node)) from None
        return raw
