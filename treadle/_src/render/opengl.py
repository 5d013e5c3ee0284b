"""``OpenGLRenderer``: draws the scene with OpenGL 3.3 through pyglet, in a window or headless.

With camera controls, instancing, tiled cameras and pixel read-back into arrays.

The scene is always drawn into an offscreen framebuffer first; the window shows a copy of it. So
:meth:`OpenGLRenderer.get_pixels` reads the same pixels with or without a window, and works with any OpenGL,
Mesa's software rasteriser included: on a machine without a GPU or display server, rendering runs under Xvfb or
headless through EGL, and the pixels land in a Treadle array on the CPU (or any device, through a copy).

Matrices in this API are 4x4 NumPy-style (row-major) arrays that act on column vectors, ``M @ [x, y, z, 1]``; a
flat sequence of 16 numbers is read in the same row-major order.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

import treadle as wp

from . import gl_shaders as shaders
from .common import as_vec, check_up_axis, to_numpy
from .gl_backend import GL, Framebuffer, create_window, load_pyglet
from .gl_scene import Scene
from .gl_tiles import Tile, layout_tiles, read_pixels_into
from .opengl_shapes import OpenGLShapes

Mat44 = np.ndarray

#: Direction towards the one directional light, in the display frame (+Y up); shading is
#: ``base * (0.3 + 0.7 max(n . l, 0))`` plus a white specular highlight (see ``gl_shaders``).
LIGHT_DIRECTION = (0.35, 1.0, 0.55)


def _normalize(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _as_matrix(m: Any, name: str) -> np.ndarray:
    arr = np.asarray(to_numpy(m, np.float64))
    if arr.size != 16:
        raise ValueError(f"{name} must be a 4x4 matrix or 16 numbers, got {arr.size} values")
    return arr.reshape(4, 4)


def _gl(m: np.ndarray) -> tuple[float, ...]:
    """A matrix in the column-major order OpenGL uniforms expect."""
    return tuple(float(x) for x in np.asarray(m, np.float64).T.reshape(-1))


class OpenGLRenderer(OpenGLShapes):
    """Draws shapes, meshes, points and lines with OpenGL, in a window or headless.

    Call :meth:`begin_frame`, ``render_*`` methods (shapes persist between frames under their names), then
    :meth:`end_frame`, which draws, shows the frame and handles input. Camera: drag with the left mouse button to
    look around, scroll to zoom, W/A/S/D (or the arrow keys) to move, Q/E down/up; Space pauses, Escape closes.

    Args:
        title: The window title.
        scaling: A uniform scale applied to the scene.
        fps: The intended frame rate (used by :meth:`save` to pace redraws).
        up_axis: The scene's up axis, ``"X"``, ``"Y"`` or ``"Z"`` (shown pointing up on screen).
        screen_width: Width of the image in pixels.
        screen_height: Height of the image in pixels.
        near_plane: Near clipping distance.
        far_plane: Far clipping distance.
        camera_fov: Vertical field of view in degrees.
        camera_pos: Camera position (in the display frame, where +Y is up).
        camera_front: Viewing direction.
        camera_up: Camera up vector.
        background_color: The sky (or clear) colour.
        draw_grid: Draw a grid on the ground plane.
        draw_sky: Draw a sky gradient instead of a plain background.
        draw_axis: Draw the scene's coordinate axes at the origin.
        show_info: Overlay frame rate and scene counts in the window.
        render_wireframe: Draw shapes as wireframes.
        render_depth: Show the depth buffer instead of colours (in the window).
        axis_scale: Length of the drawn axes.
        vsync: Synchronise window updates with the display.
        headless: No visible window. ``None`` follows ``pyglet.options["headless"]`` and, on Linux, runs headless
            when no display server is set.
        enable_backface_culling: Skip triangles facing away from the camera.
        enable_mouse_interaction: Mouse controls the camera.
        enable_keyboard_interaction: Keys move the camera.
        device: The device of arrays the renderer hands out (none at present; accepted for compatibility).
        use_legacy_opengl: Accepted for compatibility; the renderer always uses OpenGL 3.3 core.

    Raises:
        ImportError: pyglet is not installed (the message names the ``treadle[render]`` extra).
        RuntimeError: no OpenGL context could be made, or a window was asked for without a display.
    """

    default_num_segments = 32

    def __init__(self, title: str = "Warp", scaling: float = 1.0, fps: int = 60, up_axis: str = "Y",
                 screen_width: int = 1024, screen_height: int = 768, near_plane: float = 1.0,
                 far_plane: float = 100.0, camera_fov: float = 45.0, camera_pos: Any = (0.0, 2.0, 10.0),
                 camera_front: Any = (0.0, 0.0, -1.0), camera_up: Any = (0.0, 1.0, 0.0),
                 background_color: Any = (0.53, 0.8, 0.92), draw_grid: bool = True, draw_sky: bool = True,
                 draw_axis: bool = True, show_info: bool = True, render_wireframe: bool = False,
                 render_depth: bool = False, axis_scale: float = 1.0, vsync: bool = False,
                 headless: bool | None = None, enable_backface_culling: bool = True,
                 enable_mouse_interaction: bool = True, enable_keyboard_interaction: bool = True,
                 device: Any = None, use_legacy_opengl: bool | None = None) -> None:
        if int(screen_width) <= 0 or int(screen_height) <= 0:
            raise ValueError(f"screen size must be positive, got {screen_width} x {screen_height}")
        self.up_axis = check_up_axis(up_axis)
        pyglet, self.headless = load_pyglet(headless)
        self._pyglet = pyglet
        self.window = create_window(pyglet, int(screen_width), int(screen_height), title, not self.headless, vsync)
        self.window.switch_to()
        self._g = GL(pyglet)
        self._init_shapes(Scene(self._g))
        self.device = device
        self.fps = fps
        self._scaling = float(scaling)
        self.screen_width, self.screen_height = self._framebuffer_size()
        self._fbo = Framebuffer(self._g, self.screen_width, self.screen_height)
        self.camera_near_plane, self.camera_far_plane = float(near_plane), float(far_plane)
        self.camera_fov = float(camera_fov)
        self.background_color = tuple(float(c) for c in as_vec(background_color, 3, "background_color"))
        self.draw_grid, self.draw_sky, self.draw_axis = draw_grid, draw_sky, draw_axis
        self.show_info, self.render_wireframe, self.render_depth = show_info, render_wireframe, render_depth
        self.axis_scale = float(axis_scale)
        self.enable_backface_culling = enable_backface_culling
        self.enable_mouse_interaction = enable_mouse_interaction
        self.enable_keyboard_interaction = enable_keyboard_interaction
        self.render_2d_callbacks: list[Any] = []
        self._key_callbacks: list[Any] = []
        self._input_processors: list[Any] = []
        self._tiles: list[Tile] = []
        self._paused = False
        self._closed = False
        self._exit_requested = False  # set by input handlers; the window closes once event dispatch is over
        self._info_label: Any = None
        self._frame_count, self._fps_time, self._measured_fps = 0, time.perf_counter(), 0.0
        self._start = time.perf_counter()
        self.time = 0.0
        self._programs = {
            "shape": self._g.program(shaders.SHAPE_VERTEX, shaders.SHAPE_FRAGMENT),
            "spheres": self._g.program(shaders.SPHERES_VERTEX, shaders.SPHERES_FRAGMENT),
            "lines": self._g.program(shaders.LINES_VERTEX, shaders.LINES_FRAGMENT),
            "sky": self._g.program(shaders.SKY_VERTEX, shaders.SKY_FRAGMENT),
            "present": self._g.program(shaders.PRESENT_VERTEX, shaders.PRESENT_FRAGMENT),
        }
        self._empty_vao = self._g.gen_vertex_array()
        size_range = (self._g.gl.GLfloat * 2)()
        self._g.gl.glGetFloatv(self._g.gl.GL_POINT_SIZE_RANGE, size_range)
        self._max_point_size = float(size_range[1])
        self._lines_vao, self._lines_vbo = self._g.gen_vertex_array(), self._g.gen_buffer()
        self._lines_count: dict[str, tuple[int, int]] = {}
        self._camera_pos = as_vec(camera_pos, 3, "camera_pos").astype(np.float64)
        self._camera_front = _normalize(as_vec(camera_front, 3, "camera_front").astype(np.float64))
        self._camera_up = _normalize(as_vec(camera_up, 3, "camera_up").astype(np.float64))
        self._yaw = math.degrees(math.atan2(self._camera_front[2], self._camera_front[0]))
        self._pitch = math.degrees(math.asin(max(-1.0, min(1.0, self._camera_front[1]))))
        self._model_matrix = self.compute_model_matrix("XYZ".index(self.up_axis), self._scaling)
        self.update_view_matrix()
        self.update_projection_matrix()
        self._upload_helper_lines()
        self._keys: Any = None
        if not self.headless:
            self._connect_events()

    # -------------------------------------------------------------------------------------------- context
    def _framebuffer_size(self) -> tuple[int, int]:
        try:
            w, h = self.window.get_framebuffer_size()
        except Exception:  # noqa: BLE001 - headless windows may not report one
            w, h = self.window.width, self.window.height
        return int(w), int(h)

    def _switch_context(self) -> None:
        self.window.switch_to()

    # ---------------------------------------------------------------------------------------- matrices
    @staticmethod
    def compute_model_matrix(camera_axis: int, scaling: float) -> Mat44:
        """The matrix taking scene coordinates to the display frame (+Y up), scaled by ``scaling``.

        ``camera_axis`` is the scene's up axis (0, 1, 2); the matrix permutes the axes cyclically, which keeps
        handedness.
        """
        m = np.zeros((4, 4))
        # which scene axis feeds display x, y, z: Y-up is the identity, the others rotate the axes cyclically
        rows = {0: [2, 0, 1], 1: [0, 1, 2], 2: [1, 2, 0]}[int(camera_axis)]
        for r, c in enumerate(rows):
            m[r, c] = scaling
        m[3, 3] = 1.0
        return m

    @staticmethod
    def compute_projection_matrix(fov: float, aspect_ratio: float, near_plane: float, far_plane: float) -> Mat44:
        """An OpenGL perspective projection: vertical field of view ``fov`` in degrees."""
        f = 1.0 / math.tan(math.radians(fov) / 2.0)
        n, fa = float(near_plane), float(far_plane)
        m = np.zeros((4, 4))
        m[0, 0] = f / aspect_ratio
        m[1, 1] = f
        m[2, 2] = (fa + n) / (n - fa)
        m[2, 3] = 2.0 * fa * n / (n - fa)
        m[3, 2] = -1.0
        return m

    def compute_view_matrix(self, cam_pos: Any, cam_front: Any, cam_up: Any) -> Mat44:
        """The look-at matrix of a camera at ``cam_pos`` looking along ``cam_front`` with ``cam_up`` up."""
        eye = as_vec(cam_pos, 3, "cam_pos")
        f = _normalize(as_vec(cam_front, 3, "cam_front"))
        s = _normalize(np.cross(f, as_vec(cam_up, 3, "cam_up")))
        u = np.cross(s, f)
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = s, u, -f
        m[:3, 3] = -m[:3, :3] @ eye
        return m

    def update_model_matrix(self, model_matrix: Any = None) -> None:
        """Set the scene-to-display matrix (default: from ``up_axis`` and ``scaling``)."""
        self._model_matrix = (self.compute_model_matrix("XYZ".index(self.up_axis), self._scaling)
                              if model_matrix is None else _as_matrix(model_matrix, "model_matrix"))
        if hasattr(self, "_lines_vbo"):
            self._switch_context()
            self._upload_helper_lines()

    def update_projection_matrix(self) -> None:
        """Recompute the projection from the field of view, the image's aspect ratio and the clipping planes."""
        aspect = self.screen_width / max(self.screen_height, 1)
        self._projection_matrix = self.compute_projection_matrix(self.camera_fov, aspect, self.camera_near_plane,
                                                                 self.camera_far_plane)

    def update_view_matrix(self, cam_pos: Any = None, cam_front: Any = None, cam_up: Any = None,
                           stiffness: float = 1.0) -> None:
        """Move the camera (each given vector is blended in by ``stiffness``, 1 = at once) and recompute the view."""
        k = float(stiffness)
        if cam_pos is not None:
            self._camera_pos = self._camera_pos + k * (as_vec(cam_pos, 3, "cam_pos") - self._camera_pos)
        if cam_front is not None:
            self._camera_front = _normalize(self._camera_front + k * (_normalize(as_vec(cam_front, 3, "cam_front"))
                                                                      - self._camera_front))
            self._yaw = math.degrees(math.atan2(self._camera_front[2], self._camera_front[0]))
            self._pitch = math.degrees(math.asin(max(-1.0, min(1.0, self._camera_front[1]))))
        if cam_up is not None:
            self._camera_up = _normalize(self._camera_up + k * (_normalize(as_vec(cam_up, 3, "cam_up"))
                                                                - self._camera_up))
        self._view_matrix = self.compute_view_matrix(self._camera_pos, self._camera_front, self._camera_up)

    @property
    def camera_pos(self) -> Any:
        """The camera position (display frame), as a ``wp.vec3``."""
        return wp.vec3(*self._camera_pos)

    @camera_pos.setter
    def camera_pos(self, value: Any) -> None:
        self.update_view_matrix(cam_pos=value)

    @property
    def camera_front(self) -> Any:
        """The unit viewing direction, as a ``wp.vec3``."""
        return wp.vec3(*self._camera_front)

    @camera_front.setter
    def camera_front(self, value: Any) -> None:
        self.update_view_matrix(cam_front=value)

    @property
    def camera_up(self) -> Any:
        """The camera's up vector, as a ``wp.vec3``."""
        return wp.vec3(*self._camera_up)

    @camera_up.setter
    def camera_up(self, value: Any) -> None:
        self.update_view_matrix(cam_up=value)

    @property
    def scaling(self) -> float:
        """The scene's uniform scale."""
        return self._scaling

    @scaling.setter
    def scaling(self, value: float) -> None:
        self._scaling = float(value)
        self.update_model_matrix()

    # ------------------------------------------------------------------------------------------- frames
    @property
    def clock_time(self) -> float:
        """Seconds since the renderer was created."""
        return time.perf_counter() - self._start

    @property
    def paused(self) -> bool:
        """Whether playback is paused (Space toggles it)."""
        return self._paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self._paused = bool(value)

    @property
    def has_exit(self) -> bool:
        """Whether the window was closed (or Escape pressed)."""
        return self._closed or self._exit_requested or bool(getattr(self.window, "has_exit", False))

    def is_running(self) -> bool:
        """``True`` until the window is closed."""
        return not self.has_exit

    def begin_frame(self, t: float | None = None) -> None:
        """Start a frame at time ``t`` (default: :attr:`clock_time`)."""
        self.time = self.clock_time if t is None else float(t)
        self._switch_context()

    def end_frame(self) -> None:
        """Draw the frame, show it in the window and handle input events."""
        self.update()

    def update(self) -> None:
        """Handle input, redraw the current scene and show it."""
        if self._closed:
            return
        self._switch_context()
        self._process_inputs()
        self._draw()
        if not self.headless:
            self.window.dispatch_events()
            if self._exit_requested:
                self.close()
            else:
                self.window.flip()

    def save(self) -> None:
        """With a window, keep showing the scene until it is closed; headless, nothing is left to do."""
        if self.headless:
            return
        while self.is_running():
            self.update()
            time.sleep(1.0 / max(self.fps, 1))

    def close(self) -> None:
        """Close the window (the renderer cannot draw afterwards)."""
        if not self._closed:
            self._closed = True
            self.window.close()

    def clear(self) -> None:
        """Release every OpenGL resource and close the window."""
        if self._closed:
            return
        self._switch_context()
        self.scene.delete_all()
        self._fbo.delete()
        self._g.delete_buffers([self._lines_vbo])
        self._g.delete_vertex_arrays([self._empty_vao, self._lines_vao])
        self._tiles = []
        self.close()

    @property
    def num_shapes(self) -> int:
        """How many shapes (geometries) are registered."""
        return len(self.scene.shapes)

    @property
    def num_instances(self) -> int:
        """How many instances exist (named shape instances, point clouds and line batches)."""
        return len(self.scene.instances) + len(self.scene.clouds) + len(self.scene.segments)

    # ------------------------------------------------------------------------------------------- drawing
    def _upload_helper_lines(self) -> None:
        """The ground grid (display frame, y = 0) and the three scene axes, in one line buffer."""
        n, step = 50, 1.0
        ticks = np.arange(-n, n + 1) * step
        grid = []
        for t in ticks:
            grid += [(t, 0.0, -n * step), (t, 0.0, n * step), (-n * step, 0.0, t), (n * step, 0.0, t)]
        grid_c = np.tile([0.55, 0.57, 0.6], (len(grid), 1))
        axes = np.zeros((6, 3))
        axes_c = np.zeros((6, 3))
        for k in range(3):
            axes[2 * k + 1] = self._model_matrix[:3, :3] @ np.eye(3)[k] * self.axis_scale
            axes_c[2 * k: 2 * k + 2, k] = 1.0
        pos = np.concatenate([np.asarray(grid), axes])
        data = np.concatenate([pos, np.concatenate([grid_c, axes_c])], axis=1).astype(np.float32)
        gl = self._g.gl
        gl.glBindVertexArray(self._lines_vao)
        self._g.upload(gl.GL_ARRAY_BUFFER, self._lines_vbo, data)
        self._g.attrib(0, 3, 24, 0)
        self._g.attrib(1, 3, 24, 12)
        gl.glBindVertexArray(0)
        self._lines_count = {"grid": (0, len(grid)), "axes": (len(grid), 6)}

    def _draw(self) -> None:
        gl = self._g.gl
        self._fbo.bind()
        gl.glViewport(0, 0, self.screen_width, self.screen_height)
        gl.glDisable(gl.GL_SCISSOR_TEST)
        gl.glClearColor(*self.background_color, 1.0)
        gl.glClear(gl.GL_COLOR_BUFFER_BIT | gl.GL_DEPTH_BUFFER_BIT)
        if self._tiles:
            gl.glEnable(gl.GL_SCISSOR_TEST)
            for tile in self._tiles:
                gl.glViewport(tile.x, tile.y, tile.width, tile.height)
                gl.glScissor(tile.x, tile.y, tile.width, tile.height)
                view = self._view_matrix if tile.view_matrix is None else tile.view_matrix
                proj = tile.projection_matrix
                if proj is None:
                    proj = self.compute_projection_matrix(self.camera_fov, tile.width / max(tile.height, 1),
                                                          self.camera_near_plane, self.camera_far_plane)
                self._draw_view(view, proj, set(int(i) for i in tile.instances))
            gl.glDisable(gl.GL_SCISSOR_TEST)
        else:
            self._draw_view(self._view_matrix, self._projection_matrix, None)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        if not self.headless:
            self._present()

    def _draw_view(self, view: np.ndarray, proj: np.ndarray, tile_ids: set[int] | None) -> None:
        gl = self._g.gl
        cam_world = np.linalg.inv(view)[:3, 3]
        if self.draw_sky:
            sky = self._programs["sky"]
            sky.use()
            sky["u_inv_view_proj"] = _gl(np.linalg.inv(proj @ view))
            bg = np.asarray(self.background_color)
            sky["u_sky_color"] = tuple(bg * 0.85)
            sky["u_horizon_color"] = tuple(np.minimum(bg * 0.55 + 0.45, 1.0))
            sky["u_ground_color"] = tuple(bg * 0.45 + 0.1)
            gl.glDisable(gl.GL_DEPTH_TEST)
            gl.glDepthMask(gl.GL_FALSE)
            gl.glBindVertexArray(self._empty_vao)
            gl.glDrawArrays(gl.GL_TRIANGLES, 0, 3)
            gl.glDepthMask(gl.GL_TRUE)
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glDepthFunc(gl.GL_LESS)
        if self.draw_grid or self.draw_axis:
            lines = self._programs["lines"]
            lines.use()
            gl.glBindVertexArray(self._lines_vao)
            if self.draw_grid:
                lines["u_mvp"] = _gl(proj @ view)
                gl.glDrawArrays(gl.GL_LINES, *self._lines_count["grid"])
            if self.draw_axis:
                lines["u_mvp"] = _gl(proj @ view)
                gl.glDrawArrays(gl.GL_LINES, *self._lines_count["axes"])
        light = np.asarray(LIGHT_DIRECTION)
        shape = self._programs["shape"]
        shape.use()
        shape["u_model"] = _gl(self._model_matrix)
        shape["u_view"] = _gl(view)
        shape["u_proj"] = _gl(proj)
        shape["u_light_dir"] = tuple(light)
        shape["u_camera_pos"] = tuple(cam_world)
        if self.enable_backface_culling:
            gl.glEnable(gl.GL_CULL_FACE)
            gl.glCullFace(gl.GL_BACK)
        if self.render_wireframe:
            gl.glPolygonMode(gl.GL_FRONT_AND_BACK, gl.GL_LINE)
        self.scene.draw_shapes(shape, tile_ids)
        self.scene.draw_segments(shape, tile_ids)
        if self.render_wireframe:
            gl.glPolygonMode(gl.GL_FRONT_AND_BACK, gl.GL_FILL)
        gl.glDisable(gl.GL_CULL_FACE)
        spheres = self._programs["spheres"]
        spheres.use()
        spheres["u_model"] = _gl(self._model_matrix)
        spheres["u_view"] = _gl(view)
        spheres["u_proj"] = _gl(proj)
        spheres["u_model_scale"] = float(abs(np.linalg.det(self._model_matrix[:3, :3])) ** (1.0 / 3.0))
        spheres["u_ortho"] = 1 if abs(proj[3, 3] - 1.0) < 1e-9 and abs(proj[3, 2]) < 1e-9 else 0
        spheres["u_light_dir"] = tuple(light)
        spheres["u_camera_pos"] = tuple(cam_world)
        spheres["u_inv_proj"] = _gl(np.linalg.inv(proj))
        vp = (gl.GLint * 4)()
        gl.glGetIntegerv(gl.GL_VIEWPORT, vp)
        spheres["u_viewport"] = tuple(float(v) for v in vp)
        spheres["u_viewport_size"] = (float(vp[2]), float(vp[3]))
        spheres["u_max_point_size"] = self._max_point_size
        gl.glEnable(gl.GL_PROGRAM_POINT_SIZE)
        to_view = view @ self._model_matrix
        scale = float(abs(np.linalg.det(self._model_matrix[:3, :3])) ** (1.0 / 3.0))
        f_px = max(abs(proj[0, 0]) * vp[2], abs(proj[1, 1]) * vp[3]) / 2.0
        ortho = abs(proj[3, 3] - 1.0) < 1e-9

        def needs_quads(cloud: Any) -> bool:
            # A bound on the sprite size: a sphere of view radius r at depth z >= z_min, at most R off the axis,
            # has its quad corners within f h (z_min + R) / (z_min (z_min - h)) pixels of its centre's image,
            # h = r z_min / sqrt(z_min^2 - r^2) the quad's half size.
            corners = np.array([[x, y, z, 1.0] for x in (cloud.lo[0], cloud.hi[0]) for y in (cloud.lo[1], cloud.hi[1])
                                for z in (cloud.lo[2], cloud.hi[2])]) @ to_view.T
            r = cloud.max_radius * scale
            if ortho:
                return 2.0 * f_px * r + 2.0 > self._max_point_size
            z_min = float(np.min(-corners[:, 2]))
            if z_min <= 1.5 * r:
                return True
            lateral = float(np.max(np.abs(corners[:, :2])))
            h = r * z_min / math.sqrt(z_min * z_min - r * r)
            return 2.0 * f_px * h * (z_min + lateral) / (z_min * (z_min - h)) + 2.0 > self._max_point_size

        self.scene.draw_points(spheres, tile_ids, needs_quads)
        gl.glDisable(gl.GL_PROGRAM_POINT_SIZE)

    def _present(self) -> None:
        gl = self._g.gl
        w, h = self._framebuffer_size()
        gl.glViewport(0, 0, w, h)
        gl.glDisable(gl.GL_DEPTH_TEST)
        present = self._programs["present"]
        present.use()
        gl.glActiveTexture(gl.GL_TEXTURE0)
        gl.glBindTexture(gl.GL_TEXTURE_2D, self._fbo.color)
        gl.glActiveTexture(gl.GL_TEXTURE1)
        gl.glBindTexture(gl.GL_TEXTURE_2D, self._fbo.depth)
        present["u_color"] = 0
        present["u_depth"] = 1
        present["u_show_depth"] = 1 if self.render_depth else 0
        present["u_near"] = self.camera_near_plane
        present["u_far"] = self.camera_far_plane
        gl.glBindVertexArray(self._empty_vao)
        gl.glDrawArrays(gl.GL_TRIANGLES, 0, 3)
        gl.glBindVertexArray(0)
        gl.glActiveTexture(gl.GL_TEXTURE0)
        gl.glUseProgram(0)
        for callback in self.render_2d_callbacks:
            callback()
        if self.show_info:
            self._draw_info()

    def _draw_info(self) -> None:
        self._frame_count += 1
        now = time.perf_counter()
        if now - self._fps_time >= 0.5:
            self._measured_fps = self._frame_count / (now - self._fps_time)
            self._frame_count, self._fps_time = 0, now
        try:
            if self._info_label is None:
                self._info_label = self._pyglet.text.Label("", x=10, y=self.window.height - 10, anchor_y="top",
                                                           font_size=11, color=(20, 20, 20, 255), multiline=True,
                                                           width=400)
            self._info_label.y = self.window.height - 10
            self._info_label.text = (f"{self._measured_fps:.1f} fps\n{self.num_shapes} shapes, {self.num_instances} "
                                     f"instances{chr(10) + 'paused' if self._paused else ''}")
            self._info_label.draw()
        except Exception:  # noqa: BLE001 - no usable font: the overlay is a convenience, the scene still shows
            self.show_info = False

    # ------------------------------------------------------------------------------------------- input
    def _connect_events(self) -> None:
        window = self.window
        key = self._pyglet.window.key
        self._keys = key.KeyStateHandler()
        window.push_handlers(self._keys)
        window.push_handlers(on_resize=self._window_resize_callback, on_mouse_drag=self._mouse_drag_callback,
                             on_mouse_scroll=self._scroll_callback, on_key_press=self._key_press_callback,
                             on_close=self._close_callback)

    def _window_resize_callback(self, width: int, height: int) -> None:
        w, h = self._framebuffer_size()
        if (w, h) != (self.screen_width, self.screen_height) and w > 0 and h > 0:
            self._switch_context()
            self._fbo.delete()
            self.screen_width, self.screen_height = w, h
            self._fbo = Framebuffer(self._g, w, h)
            self.update_projection_matrix()

    def _mouse_drag_callback(self, x: int, y: int, dx: int, dy: int, buttons: int, modifiers: int) -> None:
        if not self.enable_mouse_interaction or not buttons & self._pyglet.window.mouse.LEFT:
            return
        self._yaw += dx * 0.2
        self._pitch = max(-89.0, min(89.0, self._pitch + dy * 0.2))
        yaw, pitch = math.radians(self._yaw), math.radians(self._pitch)
        front = np.array([math.cos(yaw) * math.cos(pitch), math.sin(pitch), math.sin(yaw) * math.cos(pitch)])
        self._camera_front = _normalize(front)
        self.update_view_matrix()

    def _scroll_callback(self, x: int, y: int, scroll_x: float, scroll_y: float) -> None:
        if not self.enable_mouse_interaction:
            return
        self.camera_fov = max(5.0, min(120.0, self.camera_fov - 2.0 * scroll_y))
        self.update_projection_matrix()

    def _key_press_callback(self, symbol: int, modifiers: int) -> None:
        key = self._pyglet.window.key
        if self.enable_keyboard_interaction:
            if symbol == key.ESCAPE:
                self._exit_requested = True
            elif symbol == key.SPACE:
                self._paused = not self._paused
        for callback in self._key_callbacks:
            callback(symbol, modifiers)

    def _close_callback(self) -> bool:
        self._exit_requested = True
        return True  # handled: the renderer closes the window after the events of this frame

    def register_key_press_callback(self, callback: Any) -> None:
        """Call ``callback(symbol, modifiers)`` on every key press (pyglet key codes)."""
        self._key_callbacks.append(callback)

    def register_input_processor(self, callback: Any) -> None:
        """Call ``callback(key_state)`` (a pyglet ``KeyStateHandler``) once per frame."""
        self._input_processors.append(callback)

    def _process_inputs(self) -> None:
        if self._keys is None:
            return
        key = self._pyglet.window.key
        if self.enable_keyboard_interaction:
            k = self._keys
            speed = 0.1 * (4.0 if k[key.LSHIFT] or k[key.RSHIFT] else 1.0)
            right = _normalize(np.cross(self._camera_front, self._camera_up))
            move = np.zeros(3)
            move += self._camera_front * ((k[key.W] or k[key.UP]) - (k[key.S] or k[key.DOWN]))
            move += right * ((k[key.D] or k[key.RIGHT]) - (k[key.A] or k[key.LEFT]))
            move += self._camera_up * (k[key.E] - k[key.Q])
            if np.any(move):
                self._camera_pos = self._camera_pos + speed * move
                self.update_view_matrix()
        for callback in self._input_processors:
            callback(self._keys)

    # ------------------------------------------------------------------------------------------- tiles
    def setup_tiled_rendering(self, instances: list[list[int]], rescale_window: bool = False,
                              tile_width: int | None = None, tile_height: int | None = None,
                              tile_ncols: int | None = None, tile_nrows: int | None = None,
                              tile_positions: list[tuple[int, int]] | None = None,
                              tile_sizes: list[tuple[int, int]] | None = None,
                              projection_matrices: list[Any] | None = None,
                              view_matrices: list[Any] | None = None) -> None:
        """Split the image into tiles, each drawing its own instances with its own camera.

        Args:
            instances: One list of instance ids per tile (what ``add_shape_instance``/``render_*`` returned).
            rescale_window: Resize the image to fit the tile grid exactly.
            tile_width: Tile width in pixels (default: the image split evenly).
            tile_height: Tile height in pixels.
            tile_ncols: Tiles per row (default: ``ceil(sqrt(n))``).
            tile_nrows: Tile rows (default: enough for all tiles).
            tile_positions: ``(x, y)`` lower-left pixel of each tile (OpenGL window coordinates); default: a
                grid, tile 0 at the top left, row by row.
            tile_sizes: ``(width, height)`` of each tile.
            projection_matrices: A projection per tile (``None`` entries: the renderer's perspective).
            view_matrices: A view matrix per tile (``None`` entries: follow the renderer's camera).

        Raises:
            ValueError: lists of the wrong length, or tiles outside the image.
        """
        self._tiles = layout_tiles(self, instances, rescale_window, tile_width, tile_height, tile_ncols, tile_nrows,
                                   tile_positions, tile_sizes, projection_matrices, view_matrices)

    def update_tile(self, tile_id: int, instances: list[int] | None = None, projection_matrix: Any = None,
                    view_matrix: Any = None, tile_size: tuple[int, int] | None = None,
                    tile_position: tuple[int, int] | None = None) -> None:
        """Change one tile's instances, camera matrices, size or position (``None`` keeps each)."""
        if not 0 <= int(tile_id) < len(self._tiles):
            raise ValueError(f"tile_id must be in [0, {len(self._tiles)}), got {tile_id}")
        tile = self._tiles[int(tile_id)]
        if instances is not None:
            tile.instances = [int(i) for i in instances]
        if projection_matrix is not None:
            tile.projection_matrix = _as_matrix(projection_matrix, "projection_matrix")
        if view_matrix is not None:
            tile.view_matrix = _as_matrix(view_matrix, "view_matrix")
        if tile_size is not None:
            tile.width, tile.height = int(tile_size[0]), int(tile_size[1])
        if tile_position is not None:
            tile.x, tile.y = int(tile_position[0]), int(tile_position[1])

    @property
    def tiled_rendering(self) -> bool:
        """Whether :meth:`setup_tiled_rendering` split the image into tiles."""
        return bool(self._tiles)

    @property
    def num_tiles(self) -> int:
        """How many tiles are drawn (0 without tiled rendering)."""
        return len(self._tiles)

    @property
    def tile_width(self) -> int:
        """The width of a tile (of the first, if sizes differ); the image width without tiles."""
        return self._tiles[0].width if self._tiles else self.screen_width

    @property
    def tile_height(self) -> int:
        """The height of a tile (of the first, if sizes differ); the image height without tiles."""
        return self._tiles[0].height if self._tiles else self.screen_height

    def _resize_image(self, width: int, height: int) -> None:
        """Resize the window (when there is one) and the offscreen image to ``width`` x ``height`` pixels."""
        self._switch_context()
        if not self.headless:
            self.window.set_size(int(width), int(height))
        self._fbo.delete()
        self.screen_width, self.screen_height = int(width), int(height)
        self._fbo = Framebuffer(self._g, self.screen_width, self.screen_height)
        self.update_projection_matrix()

    # ------------------------------------------------------------------------------------------ pixels
    def get_pixels(self, target_image: Any, split_up_tiles: bool = True, mode: str = "rgb",
                   use_uint8: bool = False) -> bool:
        """Copy the last drawn frame into ``target_image``, top row first.

        Args:
            target_image: A float32 array (uint8 with ``use_uint8`` in RGB mode): a Treadle array on any device,
                or a NumPy array. Shape ``(screen_height, screen_width, C)``, or ``(num_tiles, tile_height,
                tile_width, C)`` with tiled rendering and ``split_up_tiles``; ``C`` is 3 for ``"rgb"``, 1 for
                ``"depth"``.
            split_up_tiles: With tiled rendering, one image per tile.
            mode: ``"rgb"`` (colours in [0, 1], or [0, 255] with ``use_uint8``) or ``"depth"`` (distance from the
                camera plane along the view axis, in scene units times ``scaling``; ``far_plane`` where nothing was
                drawn).
            use_uint8: 8-bit colours.

        Returns:
            ``True``.

        Raises:
            ValueError: a bad ``mode``, or a target of the wrong shape or dtype (the message gives the expected
                ones).
        """
        self._switch_context()
        self._g.gl.glFinish()
        return read_pixels_into(self, target_image, split_up_tiles, mode, use_uint8)
