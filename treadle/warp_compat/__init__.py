"""Run programs and libraries written for NVIDIA Warp on Treadle, unchanged.

``python -m treadle.warp_compat script.py args`` (or ``-m package.module args``) runs a program with ``import warp``
resolved to Treadle; :func:`install_warp_alias` does the same from Python. See ``docs/warp_compat.md``.
"""

from __future__ import annotations

from .._src.warp_compat.alias import WarpAliasFinder as WarpAliasFinder
from .._src.warp_compat.alias import install_warp_alias as install_warp_alias
from .._src.warp_compat.alias import is_warp_alias_installed as is_warp_alias_installed
from .._src.warp_compat.alias import provided_submodules as provided_submodules
from .._src.warp_compat.alias import uninstall_warp_alias as uninstall_warp_alias
from .._src.warp_compat.runner import main as main

__all__ = [
    "WarpAliasFinder",
    "install_warp_alias",
    "is_warp_alias_installed",
    "main",
    "provided_submodules",
    "uninstall_warp_alias",
]
