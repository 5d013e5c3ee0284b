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
    """Return the directory example programs read their asset files from.

    That is ``assets`` next to Treadle's examples when it exists. Treadle's own examples generate their inputs and
    ship no asset files; the reference's example programs (run through ``python -m treadle.warp_compat``) read
    meshes, images and volumes that the ``warp-lang`` distribution ships, so when it is installed its asset
    directory is returned (located through the package metadata: nothing of warp-lang is imported).
    """
    own = os.path.join(get_source_directory(), "assets")
    if os.path.isdir(own):
        return own
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        found = distribution("warp-lang").locate_file("warp/examples/assets")
    except (PackageNotFoundError, ValueError):
        return own
    return str(found) if os.path.isdir(str(found)) else own
