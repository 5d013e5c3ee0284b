"""Renderers for simulation results, with the API of ``warp.render``.

- :class:`UsdRenderer` writes animated USD stages (needs ``usd-core``).
- :class:`OpenGLRenderer` draws in a window or headless and reads pixels back into arrays (needs ``pyglet``).

Install both with ``pip install "treadle[render]"``. Importing this module needs neither: each renderer imports its
package when it is constructed and names what to install if it is missing.
"""

from __future__ import annotations

from .._src.render.opengl import OpenGLRenderer as OpenGLRenderer
from .._src.render.usd import UsdRenderer as UsdRenderer
from .._src.render.utils import bourke_color_map as bourke_color_map
from .._src.render.utils import solidify_mesh as solidify_mesh
from .._src.render.utils import tab10_color_map as tab10_color_map

__all__ = ["OpenGLRenderer", "UsdRenderer", "bourke_color_map", "solidify_mesh", "tab10_color_map"]
