"""``warp._src.context`` under the alias: the reference's runtime object, as far as Warp-based libraries reach it.

Libraries call a few functions of the reference's native library as ``warp._src.context.runtime.core.<symbol>``
(after ``wp.init()``). Here ``runtime.core`` is the library of those entry points that :mod:`.native_exports`
builds from Treadle's native headers; a symbol it does not export raises ``AttributeError`` naming it.
"""

from __future__ import annotations

from typing import Any


class Runtime:
    """The runtime of the reference's context module: :attr:`core` is its native library."""

    @property
    def core(self) -> Any:
        """The native entry points (``wp_builtin_*`` value builtins, ``wp_array_*_host`` reductions)."""
        from .native_exports import native_core

        return native_core()


#: The process's runtime (the reference makes one at ``wp.init()``).
runtime = Runtime()
