"""Diagnostics routed through a replaceable logger (``set_logger``, ``get_logger``, ``ScopedLogger``, ...).

``log_debug`` / ``log_info`` / ``log_warning`` / ``log_error`` send a message to the active logger when
``wp.config.log_level`` lets it through. The default logger prints debug and info messages to ``sys.stdout``,
errors to ``sys.stderr``, and issues warnings through :func:`warnings.warn` (so warning filters apply).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Protocol, runtime_checkable

from ... import config


@runtime_checkable
class Logger(Protocol):
    """What a logger provides: any object with these four methods can be installed with :func:`set_logger`."""

    def debug(self, message: str) -> None:
        """Emit a debug message."""

    def info(self, message: str) -> None:
        """Emit an informational message."""

    def warning(self, message: str, category: type[Warning] | None = None, stacklevel: int = 1) -> None:
        """Emit a warning; ``stacklevel`` is ready for a direct call of :func:`warnings.warn`."""

    def error(self, message: str) -> None:
        """Emit an error message."""


class DefaultLogger:
    """The built-in logger: stdout for debug/info, :func:`warnings.warn` for warnings, stderr for errors."""

    def debug(self, message: str) -> None:
        print(f"Treadle debug: {message}", file=sys.stdout)

    def info(self, message: str) -> None:
        print(message, file=sys.stdout)

    def warning(self, message: str, category: type[Warning] | None = None, stacklevel: int = 1) -> None:
        warnings.warn(message, category or UserWarning, stacklevel=stacklevel + 1)

    def error(self, message: str) -> None:
        print(f"Treadle error: {message}", file=sys.stderr)


class _LoggerState:
    def __init__(self) -> None:
        self.default = DefaultLogger()
        self.logger: Any = self.default


_STATE = _LoggerState()


def set_logger(logger: Any) -> None:
    """Install ``logger``, an object with ``debug``, ``info``, ``warning`` and ``error`` methods (``None``: default).

    Raises:
        TypeError: ``logger`` lacks one of the four methods.

    """
    if logger is None:
        _STATE.logger = _STATE.default
        return
    missing = [m for m in ("debug", "info", "warning", "error") if not callable(getattr(logger, m, None))]
    if missing:
        raise TypeError(f"set_logger() needs an object with debug, info, warning and error methods; "
                        f"{type(logger).__name__} lacks {', '.join(missing)}")
    _STATE.logger = logger


def get_logger() -> Any:
    """Return the active logger."""
    return _STATE.logger


class ScopedLogger:
    """Install a logger for a ``with`` block (``None``: the default logger); the previous one comes back after."""

    def __init__(self, logger: Any) -> None:
        """Remember the logger to install."""
        self.logger = logger
        self._saved: Any = None

    def __enter__(self) -> ScopedLogger:
        self._saved = _STATE.logger
        set_logger(self.logger)
        return self

    def __exit__(self, *exc: object) -> None:
        _STATE.logger = self._saved


class ScopedLogLevel:
    """Set ``wp.config.log_level`` for a ``with`` block; the previous level comes back after."""

    def __init__(self, log_level: int) -> None:
        """Remember the level to set (``wp.LOG_DEBUG``, ``LOG_INFO``, ``LOG_WARNING`` or ``LOG_ERROR``)."""
        self.log_level = int(log_level)
        self._saved = 0

    def __enter__(self) -> ScopedLogLevel:
        self._saved = config.log_level
        config.log_level = self.log_level
        return self

    def __exit__(self, *exc: object) -> None:
        config.log_level = self._saved


def log_debug(message: str) -> None:
    """Send a debug message to the active logger if ``config.log_level`` allows debug messages."""
    if config.log_level <= config.LOG_DEBUG:
        _STATE.logger.debug(message)


def log_info(message: str) -> None:
    """Send an informational message to the active logger if ``config.log_level`` allows it."""
    if config.log_level <= config.LOG_INFO:
        _STATE.logger.info(message)


def log_warning(message: str, category: type[Warning] | None = None, stacklevel: int = 1) -> None:
    """Send a warning to the active logger if ``config.log_level`` allows it.

    ``stacklevel`` counts from the caller of this function, as for :func:`warnings.warn`.
    """
    if config.log_level <= config.LOG_WARNING:
        _STATE.logger.warning(message, category, stacklevel + 1)


def log_error(message: str) -> None:
    """Send an error message to the active logger if ``config.log_level`` allows it."""
    if config.log_level <= config.LOG_ERROR:
        _STATE.logger.error(message)
