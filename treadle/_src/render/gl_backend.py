"""OpenGL plumbing for the OpenGL renderer.

The pyglet window or headless context, buffers, vertex arrays, an offscreen framebuffer and pixel read-back.

Headless rendering needs no display server: pyglet then makes an EGL context (Mesa's software rasteriser works);
with a display (an X server, Xvfb included) the renderer opens a window, hidden when ``headless=True``. Which of the
two pyglet provides is fixed when ``pyglet.gl`` is first imported, so :func:`load_pyglet` decides before that.
"""

from __future__ import annotations

import ctypes
import os
import sys
from types import ModuleType
from typing import Any

import numpy as np

from .deps import pyglet_module


def _display_available() -> bool:
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def load_pyglet(headless: bool | None) -> tuple[ModuleType, bool]:
    """Import pyglet with its OpenGL module, choosing headless (EGL) or windowed mode first.

    Args:
        headless: ``True`` for no visible window; ``None`` follows ``pyglet.options["headless"]`` and, on Linux,
            falls back to headless when no display server is set (no ``DISPLAY``/``WAYLAND_DISPLAY``).

    Returns:
        ``(pyglet, headless)``: the module, and whether the renderer runs without a visible window.

    Raises:
        ImportError: pyglet is missing (names the ``render`` extra).
        RuntimeError: a window was asked for where pyglet already runs headless, or there is no display.
    """
    pyglet = pyglet_module()
    gl_loaded = "pyglet.gl" in sys.modules
    if headless is None:
        headless = bool(pyglet.options["headless"]) or not _display_available()
    if not gl_loaded and headless and not _display_available():
        pyglet.options["headless"] = True
    import pyglet.gl  # noqa: F401, PLC0415 - creates pyglet's shadow context in the mode chosen above

    if not headless and pyglet.options["headless"]:
        raise RuntimeError("OpenGLRenderer(headless=False) needs a window, but pyglet runs headless in this process "
                           "(pyglet.options['headless'] was set before pyglet.gl was imported); pass headless=True")
    if not headless and not _display_available():
        raise RuntimeError("OpenGLRenderer(headless=False) needs a display server (DISPLAY is not set); pass "
                           "headless=True, or run under Xvfb (`xvfb-run python ...`)")
    return pyglet, headless


def create_window(pyglet: ModuleType, width: int, height: int, title: str, visible: bool, vsync: bool) -> Any:
    """A pyglet window (a headless one under EGL) with an OpenGL 3.3 core context.

    Raises:
        RuntimeError: no OpenGL 3.3 context could be made.
    """
    gl = pyglet.gl
    configs = [gl.Config(major_version=3, minor_version=3, forward_compatible=True, depth_size=24,
                         double_buffer=True), None]
    errors = []
    for config in configs:
        try:
            return pyglet.window.Window(width, height, caption=title, visible=visible, resizable=True, vsync=vsync,
                                        config=config)
        except Exception as exc:  # noqa: BLE001 - pyglet raises several kinds; report them all below
            errors.append(f"{type(exc).__name__}: {exc}")
    raise RuntimeError("could not create an OpenGL 3.3 context: " + "; ".join(errors))


class GL:
    """Thin helpers over ``pyglet.gl`` (ctypes bindings), for one context."""

    def __init__(self, pyglet: ModuleType) -> None:
        self.gl = pyglet.gl
        from pyglet.graphics.shader import Shader, ShaderProgram  # noqa: PLC0415 - needs pyglet.gl loaded

        self._shader, self._program = Shader, ShaderProgram

    def program(self, vertex: str, fragment: str) -> Any:
        """A linked shader program (pyglet's ``ShaderProgram``: ``program["name"] = value`` sets uniforms)."""
        return self._program(self._shader(vertex, "vertex"), self._shader(fragment, "fragment"))

    def gen_buffer(self) -> int:
        buf = self.gl.GLuint()
        self.gl.glGenBuffers(1, ctypes.byref(buf))
        return buf.value

    def gen_vertex_array(self) -> int:
        vao = self.gl.GLuint()
        self.gl.glGenVertexArrays(1, ctypes.byref(vao))
        return vao.value

    def delete_buffers(self, ids: list[int]) -> None:
        if ids:
            arr = (self.gl.GLuint * len(ids))(*ids)
            self.gl.glDeleteBuffers(len(ids), arr)

    def delete_vertex_arrays(self, ids: list[int]) -> None:
        if ids:
            arr = (self.gl.GLuint * len(ids))(*ids)
            self.gl.glDeleteVertexArrays(len(ids), arr)

    def upload(self, target: int, buf: int, data: np.ndarray, capacity: dict[int, int] | None = None) -> None:
        """Copy ``data`` (C-contiguous) into ``buf``; reuses the storage when it is large enough."""
        gl = self.gl
        data = np.ascontiguousarray(data)
        gl.glBindBuffer(target, buf)
        size = int(data.nbytes)
        ptr = data.ctypes.data_as(ctypes.c_void_p)
        if capacity is not None and capacity.get(buf, -1) >= size > 0:
            gl.glBufferSubData(target, 0, size, ptr)
        else:
            gl.glBufferData(target, max(size, 4), ptr if size else None, gl.GL_DYNAMIC_DRAW)
            if capacity is not None:
                capacity[buf] = max(size, 4)

    def attrib(self, location: int, components: int, stride: int, offset: int, divisor: int = 0) -> None:
        """Point float attribute ``location`` at the bound ``GL_ARRAY_BUFFER``."""
        gl = self.gl
        gl.glEnableVertexAttribArray(location)
        gl.glVertexAttribPointer(location, components, gl.GL_FLOAT, gl.GL_FALSE, stride, ctypes.c_void_p(offset))
        gl.glVertexAttribDivisor(location, divisor)


class Framebuffer:
    """An offscreen RGBA8 colour + 32-bit float depth target the scene is drawn into (and read back from)."""

    def __init__(self, g: GL, width: int, height: int) -> None:
        self.g, self.width, self.height = g, int(width), int(height)
        gl = g.gl
        ids = (gl.GLuint * 2)()
        gl.glGenTextures(2, ids)
        self.color, self.depth = ids[0], ids[1]
        fbo = gl.GLuint()
        gl.glGenFramebuffers(1, ctypes.byref(fbo))
        self.fbo = fbo.value
        for tex, internal, fmt, kind in ((self.color, gl.GL_RGBA8, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE),
                                         (self.depth, gl.GL_DEPTH_COMPONENT32F, gl.GL_DEPTH_COMPONENT, gl.GL_FLOAT)):
            gl.glBindTexture(gl.GL_TEXTURE_2D, tex)
            gl.glTexImage2D(gl.GL_TEXTURE_2D, 0, internal, self.width, self.height, 0, fmt, kind, None)
            gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_MIN_FILTER, gl.GL_NEAREST)
            gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_MAG_FILTER, gl.GL_NEAREST)
            gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_WRAP_S, gl.GL_CLAMP_TO_EDGE)
            gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_WRAP_T, gl.GL_CLAMP_TO_EDGE)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glFramebufferTexture2D(gl.GL_FRAMEBUFFER, gl.GL_COLOR_ATTACHMENT0, gl.GL_TEXTURE_2D, self.color, 0)
        gl.glFramebufferTexture2D(gl.GL_FRAMEBUFFER, gl.GL_DEPTH_ATTACHMENT, gl.GL_TEXTURE_2D, self.depth, 0)
        status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        if status != gl.GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"the offscreen framebuffer is incomplete (status 0x{status:x})")

    def bind(self) -> None:
        self.g.gl.glBindFramebuffer(self.g.gl.GL_FRAMEBUFFER, self.fbo)

    def read_color(self) -> np.ndarray:
        """The colour image, ``(height, width, 4)`` uint8, bottom row first (OpenGL order)."""
        gl = self.g.gl
        out = np.empty((self.height, self.width, 4), np.uint8)
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, self.fbo)
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
        gl.glReadPixels(0, 0, self.width, self.height, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE,
                        out.ctypes.data_as(ctypes.c_void_p))
        return out

    def read_depth(self) -> np.ndarray:
        """The depth buffer, ``(height, width)`` float32 window depths in [0, 1], bottom row first."""
        gl = self.g.gl
        out = np.empty((self.height, self.width), np.float32)
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, self.fbo)
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 4)
        gl.glReadPixels(0, 0, self.width, self.height, gl.GL_DEPTH_COMPONENT, gl.GL_FLOAT,
                        out.ctypes.data_as(ctypes.c_void_p))
        return out

    def delete(self) -> None:
        gl = self.g.gl
        fbo = gl.GLuint(self.fbo)
        gl.glDeleteFramebuffers(1, ctypes.byref(fbo))
        ids = (gl.GLuint * 2)(self.color, self.depth)
        gl.glDeleteTextures(2, ids)
