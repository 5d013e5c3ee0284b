"""Error classes and source-location formatting.

Every diagnostic Treadle raises about user code carries a :class:`SourceLoc` and renders as::

    file.py:12:9: error: <message>
        y = foo(x)
            ^^^
    fix: <how to fix it>
"""

from __future__ import annotations

import dataclasses
import linecache


@dataclasses.dataclass(frozen=True)
class SourceLoc:
    """A position in user source code (1-based line, 0-based column, as in :mod:`ast`)."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None
    func: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def source_line(self) -> str:
        """Return the line of source this location points at (without the newline), or ``""``."""
        return linecache.getline(self.file, self.line).rstrip("\n")

    def render(self) -> str:
        """Return the source line with a caret underline, indented for display."""
        text = self.source_line()
        if not text:
            return ""
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        col = max(self.col - indent, 0)
        width = 1
        if self.end_col is not None and self.end_col > self.col:
            width = self.end_col - self.col
        return f"    {stripped}\n    {' ' * col}{'^' * width}"


@dataclasses.dataclass(frozen=True)
class StoreSite(SourceLoc):
    """A checked float store (``config.verify_fp``): its location and the name of the array written."""

    array: str = "array"
    field: str = ""  # ".f.g" for a float inside a struct element


class TreadleError(Exception):
    """Base class of all Treadle errors."""


class CodegenError(TreadleError, RuntimeError):
    """An error in a kernel or function definition, reported at the user's source line.

    A ``RuntimeError`` as in the reference (code catching its codegen errors keeps working); the subclasses add the
    matching built-in class (``TypeError``, ``ValueError``, ...).

    Attributes:
        loc: where in the user's code the problem is (may be ``None`` when unknown).
        msg: the plain message.
        fix: a short suggestion of how to fix it (may be empty).

    """

    def __init__(self, msg: str, loc: SourceLoc | None = None, fix: str = "") -> None:
        self.msg = msg
        self.loc = loc
        self.fix = fix
        super().__init__(self._format())

    def _format(self) -> str:
        parts = []
        if self.loc is not None:
            where = str(self.loc)
            if self.loc.func:
                where += f" (in '{self.loc.func}')"
            parts.append(f"{where}: error: {self.msg}")
            shown = self.loc.render()
            if shown:
                parts.append(shown)
        else:
            parts.append(self.msg)
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self._format()


class CodegenTypeError(CodegenError, TypeError):
    """A type error in kernel code."""


class CodegenValueError(CodegenError, ValueError):
    """A value error in kernel code."""


class CodegenAttributeError(CodegenError, AttributeError):
    """An unknown attribute used in kernel code."""


class CodegenIndexError(CodegenError, IndexError):
    """A bad index in kernel code."""


class CodegenKeyError(CodegenError, KeyError):
    """An unknown name in kernel code."""

    def __str__(self) -> str:  # KeyError would repr() the message otherwise
        return self._format()


class UnsupportedConstructError(CodegenError, NotImplementedError):
    """A Python construct that kernels cannot use (lambda, try, comprehension, ...)."""


class CompileError(TreadleError):
    """The native compiler failed on generated code.

    The message leads with the Python location recovered from ``#line`` directives; the raw
    compiler output is kept in :attr:`output`.
    """

    def __init__(self, msg: str, output: str = "", loc: SourceLoc | None = None) -> None:
        self.output = output
        self.loc = loc
        text = msg
        if loc is not None:
            text = f"{loc}: {msg}"
            shown = loc.render()
            if shown:
                text += "\n" + shown
        if output:
            text += "\n\n--- compiler output ---\n" + output
        super().__init__(text)


class ToolchainError(TreadleError):
    """No usable native compiler was found."""


class LaunchError(TreadleError, ValueError, RuntimeError):
    """A launch was given wrong arguments (count, type, shape or device).

    A ``ValueError``, and a ``RuntimeError`` as some of the reference API's launch errors are.
    """


class ShapeError(TreadleError, ValueError, RuntimeError):
    """An array cannot take the requested shape (``reshape``).

    A ``ValueError``, and a ``RuntimeError`` as in the reference API.
    """


class CopyError(TreadleError, ValueError, RuntimeError):
    """``wp.copy`` was given offsets, a count or arrays it cannot copy.

    A ``ValueError``, and a ``RuntimeError`` as in the reference API.
    """


class CopyTypeError(TreadleError, TypeError, RuntimeError):
    """``wp.copy`` between arrays of different element types.

    A ``TypeError``, and a ``RuntimeError`` as in the reference API.
    """


class DroppedGradientWarning(UserWarning):
    """A backward pass takes the derivative of a builtin without an adjoint as 0 where a gradient reaches it."""


class CheckedModeError(TreadleError, RuntimeError):
    """A runtime check in debug mode failed (out-of-bounds index, division by zero, NaN store)."""


def checked_mode_message(rec: tuple[int, ...] | list[int], locs: list[SourceLoc], name: str) -> str:
    """The message of a failed checked-mode check.

    ``rec``: location index, thread, dimension (or code), index, extent, and optionally three more indices.
    Dimension codes: ``>= 0`` an array dimension, ``-1`` a vector/matrix component, ``-2`` integer division by
    zero, ``-3`` a zero slice step, ``-4`` / ``-5`` a NaN / an infinity stored into a float array
    (``config.verify_fp``; then ``index`` and the extra entries are the element's indices and ``extent`` their
    number).
    """
    loc_i, tid, dim, index, extent = rec[:5]
    loc = locs[loc_i] if 0 <= loc_i < len(locs) else None
    if dim >= 0:
        what = f"index {index} is out of bounds for dimension {dim} of extent {extent}"
    elif dim == -2:
        what = f"integer division or modulo by zero ({index} / 0)"
    elif dim == -3:
        what = "slice step cannot be zero"
    elif dim in (-4, -5):
        idx = ([index] + list(rec[5:8]))[: max(1, min(int(extent), 4))]
        arr, field = (loc.array, loc.field) if isinstance(loc, StoreSite) else ("array", "")
        value = "NaN" if dim == -4 else "an infinite value (Inf)"
        what = (f"{value} was stored to {arr}[{', '.join(str(int(i)) for i in idx)}]{field} "
                "(wp.config.verify_fp is on); "
                "find the operation that produced it, e.g. a division by zero, sqrt/log of a negative number, or "
                "an overflow")
    else:
        what = f"component index {index} is out of range for {extent} components"
    text = f"{f'{loc}: ' if loc is not None else ''}kernel '{name}', thread {tid}: {what}"
    if loc is not None and hasattr(loc, "render") and loc.render():
        text += "\n" + loc.render()
    return text


# Names the reference API exposes for its code generation errors.
WarpCodegenError = CodegenError
WarpCodegenTypeError = CodegenTypeError
WarpCodegenValueError = CodegenValueError
WarpCodegenAttributeError = CodegenAttributeError
WarpCodegenIndexError = CodegenIndexError
WarpCodegenKeyError = CodegenKeyError
