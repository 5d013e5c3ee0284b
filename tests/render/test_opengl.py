"""OpenGLRenderer in a real X server (Xvfb + Mesa in CI): screenshots against images computed analytically.

The camera sits at (0, 0, 5) looking down -z with a 45 degree vertical field of view, so a point (X, Y, Z) lands
at pixel column ``W/2 + f X / (5 - Z)`` and row ``H/2 - f Y / (5 - Z)`` with ``f = (H/2) / tan(22.5 deg)``, and
a sphere of radius r at the origin covers the pixels whose rays pass within r of its centre.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import treadle as wp

W, H = 128, 96
F = (H / 2) / math.tan(math.radians(22.5))
BG = np.zeros(3)


def _rays() -> np.ndarray:
    """Unit view directions through each pixel centre (top row first), camera at the origin looking down -z."""
    cols = (np.arange(W) + 0.5 - W / 2) / F
    rows = (H / 2 - (np.arange(H) + 0.5)) / F
    x, y = np.meshgrid(cols, rows)
    d = np.stack([x, y, -np.ones_like(x)], axis=-1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def _sphere_hits(center, radius):
    """Per pixel: hit mask, hit point and distance of the ray from the centre (camera at (0, 0, 5))."""
    d = _rays()
    c = np.asarray(center, float) - np.array([0.0, 0.0, 5.0])
    b = d @ c
    miss2 = np.sum(c * c) - b * b
    hit = miss2 <= radius * radius
    t = b - np.sqrt(np.maximum(radius * radius - miss2, 0.0))
    return hit, d * t[..., None], np.sqrt(np.maximum(miss2, 0.0))


def _pixels(r, mode="rgb"):
    out = wp.zeros((r.screen_height, r.screen_width, 3 if mode == "rgb" else 1), dtype=float)
    assert r.get_pixels(out, mode=mode)
    return out.numpy()


def _frame(r, draw):
    r.begin_frame(0.0)
    draw()
    r.end_frame()


def _centroid(mask):
    rows, cols = np.nonzero(mask)
    assert len(rows), "nothing drawn"
    return cols.mean() + 0.5, rows.mean() + 0.5


def _covered(img):
    return img.max(axis=-1) > 0.02  # the background is black


@pytest.fixture(params=["sprites", "quads"])
def sphere_path(request):
    """Small spheres are drawn as point sprites; those too large for a sprite as quads: test both."""
    return request.param


def _force(r, path):
    if path == "quads":
        r._max_point_size = 1.0  # no sphere fits a sprite now


def test_flat_discs_match_the_analytic_image(make_renderer, sphere_path):
    r = make_renderer()
    _force(r, sphere_path)
    _frame(r, lambda: r.render_points("p", [(0.0, 0.0, 0.0)], 1.0, colors=(1.0, 0.25, 0.5), as_spheres=False))
    img = _pixels(r)
    hit, _, dist = _sphere_hits((0, 0, 0), 1.0)
    expected = np.where(hit[..., None], np.array([1.0, 0.25, 0.5]), BG)
    # away from the outline (a pixel's footprint is about 1/F wide there) every pixel matches to 8-bit precision
    interior = np.abs(dist - 1.0) > 1.5 / F * 5.0
    assert np.abs(img - expected)[interior].max() <= 1.0 / 255 + 1e-6
    differing = np.any(np.abs(img - expected) > 2.0 / 255, axis=-1).sum()
    assert differing <= 2 * np.pi * (F * 1.0 / math.sqrt(24))  # at most about one outline's worth of pixels


def test_shaded_spheres_match_the_lighting_model(make_renderer, sphere_path):
    from treadle._src.render.opengl import LIGHT_DIRECTION

    r = make_renderer()
    _force(r, sphere_path)
    base = np.array([0.2, 0.6, 0.9])
    _frame(r, lambda: r.render_points("p", np.zeros((1, 3), np.float32), 1.2, colors=base))
    img = _pixels(r)
    hit, p, dist = _sphere_hits((0, 0, 0), 1.2)
    p = p + np.array([0.0, 0.0, 5.0])  # world hit points
    n = p / 1.2
    light = np.asarray(LIGHT_DIRECTION) / np.linalg.norm(LIGHT_DIRECTION)
    v = np.array([0.0, 0.0, 5.0]) - p
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    h = light + v
    h /= np.linalg.norm(h, axis=-1, keepdims=True)
    shade = base * (0.3 + 0.7 * np.maximum(n @ light, 0.0))[..., None]
    shade += 0.18 * np.maximum(np.sum(n * h, axis=-1), 0.0)[..., None] ** 48
    expected = np.where(hit[..., None], np.clip(shade, 0, 1), BG)
    interior = np.abs(dist - 1.2) > 2.0 / F * 5.0
    assert np.abs(img - expected)[interior].max() < 4.0 / 255
    depth = _pixels(r, "depth")[..., 0]
    assert depth[H // 2, W // 2] == pytest.approx(5.0 - 1.2, abs=2e-3)  # along the view axis
    assert np.all(depth[~hit & interior] == pytest.approx(50.0))  # the far plane where nothing was drawn


def test_overlapping_spheres_show_the_nearer_surface(make_renderer, sphere_path):
    r = make_renderer()
    _force(r, sphere_path)
    centers = np.array([[0.0, 0.0, 0.0], [0.6, 0.3, 0.9], [-0.9, -0.2, -1.0]], np.float32)
    radii = np.array([1.0, 0.5, 0.8], np.float32)
    colors = np.eye(3, dtype=np.float32)
    _frame(r, lambda: r.render_points("p", centers, radii, colors=colors, as_spheres=False))
    img = _pixels(r)
    # the analytic answer: per pixel, the sphere whose ray hit is nearest
    t = np.full((H, W), np.inf)
    owner = np.full((H, W), -1)
    near_outline = np.zeros((H, W), bool)
    for k, (c, rad) in enumerate(zip(centers, radii)):
        hit, p, dist = _sphere_hits(c, rad)
        depth = np.linalg.norm(p, axis=-1)
        closer = hit & (depth < t)
        t[closer], owner[closer] = depth[closer], k
        near_outline |= np.abs(dist - rad) < 1.5 / F * 6.0
    for k in range(3):
        mine = (owner == k) & ~near_outline
        assert mine.sum() > 20
        assert np.all(np.argmax(img[mine], axis=-1) == k), k


def test_mesh_sphere_covers_the_expected_disc(make_renderer):
    r = make_renderer()
    _frame(r, lambda: r.render_sphere("s", (0, 0, 0), (0, 0, 0, 1), 1.0, color=(1.0, 0.0, 0.0)))
    img = _pixels(r)
    covered = _covered(img)
    disc, _, _ = _sphere_hits((0, 0, 0), 1.0)
    assert (covered & disc).sum() / (covered | disc).sum() > 0.97  # a 32-segment tessellation of the sphere
    cx, cy = _centroid(covered)
    assert abs(cx - W / 2) < 0.3 and abs(cy - H / 2) < 0.3
    assert np.all(img[covered][:, 0] >= img[covered][:, 1])  # red, with a white highlight at most


@pytest.mark.parametrize("up_axis,scene_point,display_point", [
    ("Y", (1.0, 0.8, 0.0), (1.0, 0.8, 0.0)),
    ("Z", (0.0, 1.0, 0.8), (1.0, 0.8, 0.0)),  # scene (x, y, z) shows as (y, z, x)
    ("X", (0.8, 0.0, 1.0), (1.0, 0.8, 0.0)),  # scene (x, y, z) shows as (z, x, y)
])
def test_points_project_where_the_camera_model_says(make_renderer, up_axis, scene_point, display_point):
    r = make_renderer(up_axis=up_axis)
    _frame(r, lambda: r.render_points("p", [scene_point], 0.15, colors=(0.0, 1.0, 0.0)))
    green = _pixels(r)[..., 1] > 0.1
    x, y, z = display_point
    cx, cy = _centroid(green)
    assert cx == pytest.approx(W / 2 + F * x / (5 - z), abs=0.5)
    assert cy == pytest.approx(H / 2 - F * y / (5 - z), abs=0.5)  # row 0 is the top of the image


def test_scaling_and_camera_moves(make_renderer):
    r = make_renderer(scaling=2.0)
    _frame(r, lambda: r.render_points("p", [(0.5, 0.0, 0.0)], 0.1, colors=(0, 0, 1)))
    blue = _pixels(r)[..., 2] > 0.1
    assert _centroid(blue)[0] == pytest.approx(W / 2 + F * 1.0 / 5, abs=0.5)
    disc, _, _ = _sphere_hits((1.0, 0.0, 0.0), 0.2)
    assert abs(int(blue.sum()) - int(disc.sum())) <= 0.12 * disc.sum()
    r.update_view_matrix(cam_pos=(1.0, 0.0, 5.0))  # the camera now looks straight at the point
    r.update()
    assert _centroid(_pixels(r)[..., 2] > 0.1)[0] == pytest.approx(W / 2, abs=0.5)
    assert tuple(r.camera_pos) == (1.0, 0.0, 5.0)


def test_tiled_cameras_and_instance_selection(make_renderer):
    r = make_renderer()
    r.begin_frame(0.0)
    r.render_sphere("ball", (0, 0, 0), (0, 0, 0, 1), 1.0, color=(1, 0, 0))
    cloud = r.render_points("cloud", [(0.0, 0.0, 0.0)], 0.3, colors=(0, 0, 1))
    ball_id = r.scene.instance_by_name["ball"]
    shifted = r.compute_view_matrix((1.0, 0.0, 5.0), (0, 0, -1), (0, 1, 0))
    r.setup_tiled_rendering([[ball_id], [cloud]], view_matrices=[None, shifted])
    r.end_frame()
    assert r.tiled_rendering and r.num_tiles == 2 and (r.tile_width, r.tile_height) == (W // 2, H)
    tiles = wp.zeros((2, H, W // 2, 3), dtype=float)
    r.get_pixels(tiles, split_up_tiles=True)
    t = tiles.numpy()
    red0, blue0 = t[0, ..., 0] > 0.2, t[0, ..., 2] > 0.2
    red1, blue1 = t[1, ..., 0] > 0.2, t[1, ..., 2] > 0.2
    assert red0.sum() > 100 and blue0.sum() == 0 and blue1.sum() > 100 and red1.sum() == 0
    f_tile = F  # same vertical field of view and height: the same focal length in pixels
    assert _centroid(red0)[0] == pytest.approx(W / 4, abs=0.5)
    assert _centroid(blue1)[0] == pytest.approx(W / 4 - f_tile * 1.0 / 5, abs=0.5)  # camera moved right
    whole = wp.zeros((H, W, 3), dtype=float)
    r.get_pixels(whole, split_up_tiles=False)
    np.testing.assert_array_equal(whole.numpy()[:, : W // 2], t[0])
    np.testing.assert_array_equal(whole.numpy()[:, W // 2:], t[1])


def test_instancing_bodies_and_visibility(make_renderer):
    r = make_renderer()
    template = r.render_sphere("ball", (0, 0, 0), (0, 0, 0, 1), 0.4, is_template=True, color=(1, 1, 1))
    body = r.register_body("arm")
    left = r.add_shape_instance("left", template, None, (-1.5, 0, 0), (0, 0, 0, 1), color1=(1, 0, 0))
    right = r.add_shape_instance("right", template, body, (0, 0, 0), (0, 0, 0, 1), color1=(0, 1, 0))
    assert left != right and r.num_instances == 2
    r.update_body_transforms(np.array([[1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]))  # the body carries "right"
    r.update()
    img = _pixels(r)
    red, green = img[..., 0] > 0.2, img[..., 1] > 0.2
    assert _centroid(red)[0] == pytest.approx(_centroid(_sphere_hits((-1.5, 0, 0), 0.4)[0])[0], abs=0.3)
    assert _centroid(green)[0] == pytest.approx(_centroid(_sphere_hits((1.5, 0, 0), 0.4)[0])[0], abs=0.3)
    r.update_shape_instance("left", visible=False)
    r.update_shape_instance("right", pos=(0.0, 1.0, 0.0), scale=(2, 2, 2))
    r.update()
    img = _pixels(r)
    assert (img[..., 0] > 0.2).sum() == 0
    green = img[..., 1] > 0.2
    disc, _, _ = _sphere_hits((1.5, 1.0, 0.0), 0.8)
    assert _centroid(green)[1] == pytest.approx(_centroid(disc)[1], abs=0.3)
    assert abs(int(green.sum()) - int(disc.sum())) < 0.05 * disc.sum()
    r.remove_shape_instance("right")
    r.update()
    assert _pixels(r).max() == 0.0
    with pytest.raises(ValueError, match="no shape instance"):
        r.update_shape_instance("right", visible=True)


def test_mesh_colors_update_and_topology(make_renderer):
    r = make_renderer(enable_backface_culling=False)
    quad = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    colors = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0], [1, 0, 0]], np.float32)
    _frame(r, lambda: r.render_mesh("quad", quad, [0, 1, 2, 0, 2, 3], colors=colors))
    img = _pixels(r)
    edge = F * 1.0 / 5
    left = img[H // 2, int(W / 2 - 0.8 * edge)]
    right = img[H // 2, int(W / 2 + 0.8 * edge)]
    assert left[0] > left[1] and right[1] > right[0]
    covered = img.max(axis=-1) > 0.05
    assert abs(int(covered.sum()) - (2 * edge) ** 2) < 4 * 2 * edge  # the square's area, up to its outline
    _frame(r, lambda: r.render_mesh("quad", quad + np.float32([0, 1, 0]), None, colors=(0.0, 0.0, 1.0)))
    blue = _pixels(r)[..., 2] > 0.05
    assert _centroid(blue)[1] == pytest.approx(H / 2 - F * 1.0 / 5, abs=0.6)
    with pytest.raises(ValueError, match="update_topology"):
        r.render_mesh("quad", quad[:3], [0, 1, 2])
    _frame(r, lambda: r.render_mesh("quad", quad[:3], [0, 1, 2], update_topology=True, colors=(0, 0, 1)))
    assert (_pixels(r)[..., 2] > 0.05).sum() == pytest.approx(0.5 * (2 * edge) ** 2, rel=0.1)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        r.render_mesh("bad", quad[:3], [0, 1, 3])


def test_lines_and_shapes_draw(make_renderer):
    r = make_renderer()

    def draw():
        r.render_line_strip("strip", [(-2.0, -1.0, 0.0), (2.0, -1.0, 0.0)], color=(1.0, 1.0, 0.0), radius=0.05)
        r.render_box("box", (-1.2, 1.0, 0.0), (0, 0, 0, 1), (0.2, 0.2, 0.2), color=(0.0, 0.0, 1.0))
        r.render_capsule("capsule", (1.2, 1.0, 0.0), (0, 0, 0, 1), 0.2, 0.2, color=(0.0, 1.0, 0.0))
        r.render_cone("cone", (0.0, 1.0, 0.0), (0, 0, 0, 1), 0.2, 0.2, color=(1.0, 0.0, 1.0))

    _frame(r, draw)
    img = _pixels(r)
    yellow = (img[..., 0] > 0.2) & (img[..., 1] > 0.2) & (img[..., 2] < 0.05)
    assert _centroid(yellow)[1] == pytest.approx(H / 2 + F * 1.0 / 5, abs=0.6)
    assert np.ptp(np.nonzero(yellow)[1]) > 0.95 * 4 * F / 5  # spans the 4 units of the strip
    blue = (img[..., 2] > 0.2) & (img[..., 0] < 0.05)
    green = (img[..., 1] > 0.2) & (img[..., 0] < 0.05)
    magenta = (img[..., 0] > 0.2) & (img[..., 2] > 0.2) & (img[..., 1] < 0.05)
    for mask, x in ((blue, -1.2), (green, 1.2), (magenta, 0.0)):
        assert _centroid(mask)[0] == pytest.approx(W / 2 + F * x / 5, abs=1.0)


def test_get_pixels_modes_and_bad_targets(make_renderer):
    r = make_renderer()
    _frame(r, lambda: r.render_points("p", [(0.0, 0.0, 0.0)], 1.0, colors=(0.7, 0.2, 0.1)))
    as_float = _pixels(r)
    as_uint8 = wp.zeros((H, W, 3), dtype=wp.uint8)
    r.get_pixels(as_uint8, use_uint8=True)
    np.testing.assert_array_equal(as_uint8.numpy(), np.round(as_float * 255).astype(np.uint8))
    into_numpy = np.zeros((H, W, 3), np.float32)
    r.get_pixels(into_numpy)
    np.testing.assert_array_equal(into_numpy, as_float)
    with pytest.raises(ValueError, match=r"\(96, 128, 3\)"):
        r.get_pixels(wp.zeros((H, W, 4), dtype=float))
    with pytest.raises(ValueError, match="float32"):
        r.get_pixels(wp.zeros((H, W, 3), dtype=wp.float64))
    with pytest.raises(ValueError, match=r"\(96, 128, 1\)"):
        r.get_pixels(wp.zeros((H, W, 3), dtype=float), mode="depth")
    with pytest.raises(ValueError, match="mode"):
        r.get_pixels(wp.zeros((H, W, 3), dtype=float), mode="normals")
    with pytest.raises(ValueError, match="per point"):
        r.render_points("q", np.zeros((3, 3)), [0.1, 0.2])


def test_window_events_drive_the_camera_and_playback(make_renderer):
    pyglet = pytest.importorskip("pyglet")
    r = make_renderer(headless=False)
    assert r.is_running() and not r.paused
    front = np.array(r.camera_front)
    r.window.dispatch_event("on_mouse_drag", 10, 10, 50, 0, pyglet.window.mouse.LEFT, 0)
    r.update()  # handles the queued events
    assert not np.allclose(np.array(r.camera_front), front)  # dragging turned the camera
    fov = r.camera_fov
    r.window.dispatch_event("on_mouse_scroll", 10, 10, 0, 2)
    r.update()
    assert r.camera_fov < fov
    r.window.dispatch_event("on_key_press", pyglet.window.key.SPACE, 0)
    r.update()
    assert r.paused
    r.window.dispatch_event("on_key_press", pyglet.window.key.ESCAPE, 0)
    r.update()
    assert not r.is_running()


def _window_back_buffer(r) -> np.ndarray:
    """The window's back buffer after a redraw (top row first): what the next flip would show."""
    import ctypes

    from pyglet import gl

    r._switch_context()
    r._draw()
    w, h = r._framebuffer_size()
    buf = (ctypes.c_ubyte * (w * h * 3))()
    gl.glReadBuffer(gl.GL_BACK)
    gl.glReadPixels(0, 0, w, h, gl.GL_RGB, gl.GL_UNSIGNED_BYTE, buf)
    return np.frombuffer(buf, np.uint8).reshape(h, w, 3)[::-1].copy()


@pytest.mark.skipif(not any(os.path.isdir(d) for d in ("/usr/share/fonts", "/usr/local/share/fonts")),
                    reason="no fonts installed for the text overlay")
def test_info_overlay_draws_text_in_the_window_corner(make_renderer):
    shown = make_renderer(headless=False, show_info=True, background_color=(1.0, 1.0, 1.0))
    shown.begin_frame(0.0)
    shown.end_frame()
    img = _window_back_buffer(shown)
    assert shown.show_info  # a usable font was found
    dark = img.max(axis=-1) < 128
    assert dark[:30, :100].sum() > 20  # frame rate and scene counts, top left
    assert not dark[H // 2:].any()  # nothing else drawn on the white background
    plain = make_renderer(headless=False, show_info=False, background_color=(1.0, 1.0, 1.0))
    plain.begin_frame(0.0)
    plain.end_frame()
    assert not (_window_back_buffer(plain).max(axis=-1) < 128).any()


def test_headless_without_a_display_server(tmp_path):
    pytest.importorskip("pyglet", reason="pyglet is not installed (pip install pyglet, or treadle[render])")
    code = (
        "import numpy as np, treadle as wp, treadle.render as render\n"
        "try:\n"
        "    r = render.OpenGLRenderer(screen_width=64, screen_height=48, draw_grid=False, draw_sky=False,\n"
        "                              draw_axis=False, show_info=False, background_color=(0, 0, 0))\n"
        "except RuntimeError as e:\n"
        "    print('NO-CONTEXT', e); raise SystemExit(0)\n"
        "r.begin_frame(0.0); r.render_sphere('s', (0, 0, 0), (0, 0, 0, 1), 1.0, color=(1, 0, 0)); r.end_frame()\n"
        "img = wp.zeros((48, 64, 3), dtype=float); r.get_pixels(img)\n"
        "print('HEADLESS', r.headless, float(img.numpy()[:, :, 0].max()), float(img.numpy()[0, 0].max()))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    root = os.path.dirname(os.path.dirname(os.path.abspath(wp.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    if "NO-CONTEXT" in out.stdout:
        pytest.skip(f"no headless (EGL) OpenGL context here: {out.stdout.strip()}")
    tag, headless, centre, corner = out.stdout.split()[-4:]
    assert tag == "HEADLESS" and headless == "True" and float(centre) > 0.2 and float(corner) == 0.0
