"""Runnable examples: ``python -m treadle.examples.<name>``.

``get_source_directory()`` and ``get_asset_directory()`` locate this package and its asset files, as the
reference's ``warp.examples`` functions of the same names do for its examples.
"""

from __future__ import annotations

import os


def get_source_directory() -> str:
    """Return the directory holding the example programs."""
    return os.path.realpath(os.path.dirname(__file__))


def get_asset_directory() -> str:
    """Return the directory example programs read their asset files from (``assets`` next to them)."""
    return os.path.join(get_source_directory(), "assets")
