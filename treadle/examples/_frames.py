"""Where a gallery example's frames go: PNG files and, optionally, an animated USD stage, through ``warp.render``.

PNG frames come from the examples' own software renderer (``png="builtin"``: no optional package needed) or from
:class:`treadle.render.OpenGLRenderer` (``png="opengl"``: needs pyglet and an OpenGL, a display or EGL); a USD stage
(``usd=PATH``) comes from :class:`treadle.render.UsdRenderer` (needs usd-core). Each example describes its scene
once, as a function of a renderer, for both renderers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from treadle.examples import _image

Scene = Callable[[Any], None]


class Frames:
    """Writes ``frame_NNN.png`` files into ``out`` and, with ``usd``, one stage with a time sample per frame.

    Args:
        out: The folder of the PNG frames.
        view: The examples' camera (its rotation, centre and extent set the OpenGL camera too).
        usd: A ``.usd``/``.usda`` path for the stage, or ``None``.
        png: ``"builtin"`` (the software renderer in ``_image``) or ``"opengl"``.
        fps: Frames per second of the stage.
    """

    def __init__(self, out: str, view: _image.View, usd: str | None = None, png: str = "builtin",
                 fps: float = 24.0) -> None:
        if png not in ("builtin", "opengl"):
            raise ValueError(f"png must be 'builtin' or 'opengl', got {png!r}")
        os.makedirs(out, exist_ok=True)
        self.out, self.view, self.png = out, view, png
        self.fps = max(int(round(fps)), 1)  # frame k is written at time k / fps: time code k
        self.usd_path = usd
        self.usd: Any = None
        self.gl: Any = None
        import treadle.render as render

        if usd is not None:
            self.usd = render.UsdRenderer(usd, up_axis="Y", fps=self.fps)
        if png == "opengl":
            fov = 40.0
            # far enough for the perspective view to span the orthographic view's extent at its centre
            distance = 0.5 * view.height / view.scale / math.tan(math.radians(fov) / 2.0)
            toward, up = view.rotation[2], view.rotation[1]
            self.gl = render.OpenGLRenderer(screen_width=view.width, screen_height=view.height, headless=True,
                                            camera_fov=fov, camera_pos=tuple(view.center + toward * distance),
                                            camera_front=tuple(-toward), camera_up=tuple(up), near_plane=0.05,
                                            far_plane=10.0 * distance, draw_grid=False, draw_axis=False,
                                            show_info=False, background_color=(0.86, 0.89, 0.93),
                                            enable_backface_culling=False)  # cloth and walls are seen from both sides

    def frame(self, index: int, scene: Scene, picture: Callable[[], np.ndarray]) -> str:
        """Write frame ``index``; returns the PNG path.

        ``scene(renderer)`` draws the frame for the renderers, ``picture()`` is the built-in image.
        """
        path = os.path.join(self.out, f"frame_{index:03d}.png")
        time = index / self.fps
        if self.usd is not None:
            self.usd.begin_frame(time)
            scene(self.usd)
            self.usd.end_frame()
        if self.gl is not None:
            self.gl.begin_frame(time)
            scene(self.gl)
            self.gl.end_frame()
            import treadle as wp

            pixels = wp.zeros((self.gl.screen_height, self.gl.screen_width, 3), dtype=float)
            self.gl.get_pixels(pixels)
            _image.write_png(path, pixels.numpy())
        else:
            _image.write_png(path, picture())
        return path

    def close(self) -> None:
        """Save the stage and release the OpenGL renderer."""
        if self.usd is not None:
            self.usd.save()
        if self.gl is not None:
            self.gl.clear()


def add_arguments(parser: Any) -> None:
    """The ``--usd PATH`` and ``--png {builtin,opengl}`` options of every gallery example."""
    parser.add_argument("--usd", default=None, metavar="PATH",
                        help="also write an animated USD stage (needs usd-core: pip install 'treadle[render]')")
    parser.add_argument("--png", default="builtin", choices=("builtin", "opengl"),
                        help="PNG frames from the built-in software renderer or from warp.render's OpenGLRenderer")
