"""Fixtures for the renderer tests: USD (``usd-core``), an X server (the existing ``DISPLAY``, or an Xvfb started
here) and OpenGL renderers on it. Each skips, saying what is missing, where the machine lacks a piece."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pxr() -> Any:
    """Pixar's USD library, or a skip naming the package to install."""
    return pytest.importorskip("pxr", reason="usd-core is not installed (pip install usd-core, or treadle[render])")


def _free_display() -> int:
    for n in range(99, 160):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    raise RuntimeError("no free X display number in :99 .. :159")


@pytest.fixture(scope="session")
def x_display() -> Iterator[str]:
    """An X display: ``$DISPLAY`` if set, else a private Xvfb server for the session."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no X server: DISPLAY is unset and Xvfb is not installed (apt-get install xvfb libgl1-mesa-dri)")
    n = _free_display()
    proc = subprocess.Popen([xvfb, f":{n}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10.0
    while not os.path.exists(f"/tmp/.X11-unix/X{n}"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.skip(f"Xvfb :{n} did not start")
        time.sleep(0.05)
    os.environ["DISPLAY"] = f":{n}"
    try:
        yield f":{n}"
    finally:
        os.environ.pop("DISPLAY", None)
        proc.terminate()
        proc.wait(timeout=10)


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
