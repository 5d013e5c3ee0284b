"""Fixtures for the renderer tests: USD (``usd-core``), an X server (the existing ``DISPLAY``, or an Xvfb started
here) and OpenGL renderers on it. Each skips, saying what is missing, where the machine lacks a piece."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pxr() -> Any:
    """Pixar's USD library, or a skip naming the package to install."""
    return pytest.importorskip("pxr", reason="usd-core is not installed (pip install usd-core, or treadle[render])")


@pytest.fixture(scope="session")
def x_display() -> Iterator[str]:
    """An X display: ``$DISPLAY`` if set, else a private Xvfb server for the session."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no X server: DISPLAY is unset and Xvfb is not installed (apt-get install xvfb libgl1-mesa-dri)")
    # ``-displayfd``: Xvfb picks a free display itself and writes its number to the pipe once it accepts
    # connections, so the fixture waits for that event (or for Xvfb's exit: end of file) instead of polling.
    rfd, wfd = os.pipe()
    proc = subprocess.Popen([xvfb, "-displayfd", str(wfd), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(wfd,))
    os.close(wfd)
    with os.fdopen(rfd) as r:
        number = r.readline().strip()
    if not number.isdigit():
        proc.kill()
        proc.wait()
        pytest.skip(f"Xvfb did not start (exit status {proc.poll()})")
    n = int(number)
    os.environ["DISPLAY"] = f":{n}"
    try:
        yield f":{n}"
    finally:
        os.environ.pop("DISPLAY", None)
        proc.terminate()
        proc.wait()


@pytest.fixture(scope="session")
def gl_available(x_display: str) -> None:
    """Skip unless pyglet can make an OpenGL 3.3 context on the X display."""
    pytest.importorskip("pyglet", reason="pyglet is not installed (pip install pyglet, or treadle[render])")
    import treadle.render as render

    try:
        probe = render.OpenGLRenderer(screen_width=8, screen_height=8, headless=True, show_info=False)
    except RuntimeError as exc:
        pytest.skip(f"no OpenGL 3.3 context on {x_display} (install Mesa: libgl1-mesa-dri libglx-mesa0): {exc}")
    probe.clear()


@pytest.fixture
def make_renderer(gl_available: None) -> Iterator[Any]:
    """``make_renderer(**kwargs)``: a small hidden-window OpenGL renderer with a plain background, closed after."""
    import treadle.render as render

    made = []

    def make(**kwargs: Any) -> Any:
        opts = dict(screen_width=128, screen_height=96, headless=True, draw_grid=False, draw_sky=False,
                    draw_axis=False, show_info=False, camera_pos=(0.0, 0.0, 5.0), near_plane=0.1,
                    far_plane=50.0, background_color=(0.0, 0.0, 0.0))
        opts.update(kwargs)
        r = render.OpenGLRenderer(**opts)
        made.append(r)
        return r

    yield make
    for r in made:
        r.clear()
