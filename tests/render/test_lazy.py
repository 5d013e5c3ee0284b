"""``treadle.render`` loads on first use, and its optional packages only when a renderer is made."""

from __future__ import annotations

import os
import subprocess
import sys

import treadle as wp


def _run(code: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(wp.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_render_is_lazy_and_needs_no_optional_package_to_import():
    out = _run(
        "import sys, treadle\n"
        "print(sorted(m for m in ('treadle.render', 'pxr', 'pyglet') if m in sys.modules))\n"
        "r = treadle.render\n"
        "print(r.__name__, sorted(m for m in ('pxr', 'pyglet', 'pyglet.gl') if m in sys.modules))\n"
        "print(hasattr(r, 'UsdRenderer') and hasattr(r, 'OpenGLRenderer') and hasattr(r, 'bourke_color_map'))\n")
    assert out.split("\n")[:3] == ["[]", "treadle.render []", "True"]


def test_missing_pyglet_names_the_extra():
    out = _run(
        "import sys; sys.modules['pyglet'] = None\n"
        "import treadle.render as r\n"
        "try:\n    r.OpenGLRenderer(headless=True)\nexcept ImportError as e:\n    print(e)\n")
    assert "pyglet" in out and "treadle[render]" in out
