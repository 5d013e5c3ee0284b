"""Optional dependencies of the renderers, imported on first use with an error that names what to install."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

_EXTRA_HINT = 'install it with `pip install usd-core pyglet` or `pip install "treadle[render]"`'


def _import(module: str, package: str, needed_by: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{needed_by} needs the optional package '{package}' ({module} could not be imported: "
                          f"{exc}); {_EXTRA_HINT}") from exc


def usd_modules() -> tuple[Any, Any, Any, Any, Any]:
    """``(Usd, UsdGeom, UsdLux, Gf, Vt)`` from Pixar's USD library (PyPI ``usd-core``).

    Raises:
        ImportError: ``pxr`` is not installed; the message names the package and the ``render`` extra.
    """
    _import("pxr", "usd-core", "warp.render.UsdRenderer")
    from pxr import Gf, Usd, UsdGeom, UsdLux, Vt  # noqa: PLC0415 - optional, imported on first use

    return Usd, UsdGeom, UsdLux, Gf, Vt


def pyglet_module() -> ModuleType:
    """The ``pyglet`` package (OpenGL windows and contexts), version 2 or newer.

    Raises:
        ImportError: pyglet is missing or older than 2.0; the message names the package and the ``render`` extra.
    """
    pyglet = _import("pyglet", "pyglet", "warp.render.OpenGLRenderer")
    major = int(str(getattr(pyglet, "version", "0")).split(".")[0] or 0)
    if major < 2:
        raise ImportError(f"warp.render.OpenGLRenderer needs pyglet >= 2.0 (found {pyglet.version}); {_EXTRA_HINT}")
    return pyglet
