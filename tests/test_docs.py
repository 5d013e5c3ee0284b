"""The documentation: docstrings of every public name and builtin, the gallery's pictures, and the Sphinx build."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

import api_pages  # noqa: E402
import builtin_reference  # noqa: E402
import make_gallery  # noqa: E402
import python_api  # noqa: E402


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def test_every_builtin_has_a_docstring():
    assert builtin_reference.undocumented_builtins() == []


def test_every_public_name_has_a_docstring():
    assert python_api.undocumented() == []


def test_public_modules_are_found_by_walking_the_package():
    mods = python_api.public_modules()
    assert mods[0] == "treadle"
    assert {"treadle.types", "treadle.config", "treadle.autograd", "treadle.optim"} <= set(mods)
    assert not any("._" in m or m == "treadle.examples" for m in mods)


def test_public_names_cover_the_namespace():
    import treadle

    names = {n.name: n for n in python_api.public_names("treadle")}
    expected = {n for n, v in vars(treadle).items()
                if not n.startswith("_") and not isinstance(v, type(treadle)) and n != "annotations"}
    assert set(names) == expected
    assert names["launch"].kind == "function" and names["Tape"].kind == "class"
    assert names["sin"].kind == "builtin" and names["pi"].kind == "data"
    assert names["pi"].doc and names["DeviceLike"].doc


def test_undocumented_names_are_reported(tmp_path, monkeypatch):
    (tmp_path / "docs_probe_mod.py").write_text(
        '"""A module."""\n\nimport os\n\n#: Documented.\nA = 1\nB = 2\n\n\ndef f():\n    pass\n\n\n'
        'def g():\n    """Documented."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    names = {n.name: n for n in python_api.public_names("docs_probe_mod")}
    assert set(names) == {"A", "B", "f", "g"}  # not the imported module os
    assert python_api.undocumented(["docs_probe_mod"]) == ["docs_probe_mod.B", "docs_probe_mod.f"]


def test_sections_follow_the_defining_module():
    def name(home: str) -> python_api.Name:
        return python_api.Name("treadle", "x", "data", "doc", home, None, 1.0)

    assert python_api.section_of(name("treadle._src.lang.creation")) == "Arrays"
    assert python_api.section_of(name("treadle._src.geometry.mesh")) == "Geometry"
    assert python_api.section_of(name("treadle")) == "Type annotations and aliases"
    assert python_api.section_of(name("treadle._src.volume_render.camera")) == "Volume render"  # unknown: own section


def test_builtin_records_follow_the_registry():
    from treadle._src.builtins import REGISTRY

    records = builtin_reference.builtin_records()
    by_name = {r.name: r for r in records}
    public = {n for n in REGISTRY.builtins if not n.startswith("_")}
    assert public <= set(by_name)
    assert [g for g in api_pages.builtin_groups(records)] == list(REGISTRY.groups())
    sin = by_name["sin"]
    assert sin.python_callable and sin.differentiable
    assert ("float64",) in [o.args for o in sin.overloads]
    assert by_name["tid"].forms == ("tid() -> int | tuple of int",) and not by_name["tid"].python_callable
    assert len(by_name["quaternion"].forms) == 4
    assert by_name["_cmp_lt"].syntax and "_bvh_build" not in by_name


def test_split_forms():
    assert builtin_reference.split_forms("f", "f(x: a | b) -> c | f(x, y)") == ("f(x: a | b) -> c", "f(x, y)")


def test_generated_pages_name_every_exported_builtin():
    from treadle._src.builtins import exported_builtins

    pages = api_pages.api_pages()
    text = "\n".join(v for k, v in pages.items() if k.startswith("builtins/"))
    declared = set(re.findall(r"^\.\. py:function:: (\w+)\(", text, flags=re.M))
    assert set(exported_builtins()) <= declared
    python = "\n".join(v for k, v in pages.items() if k.startswith("python/"))
    for name in ("launch", "array", "Tape", "HashGrid", "config.mode", "gradcheck", "Adam"):
        assert re.search(rf"(auto\w+|py:data)::\s+(treadle\.)?\S*{re.escape(name.split('.')[-1])}\b", python), name


def test_gallery_lists_every_example_that_writes_frames():
    listed = {e["name"] for e in make_gallery.GALLERY}
    assert set(make_gallery.gallery_modules()) <= listed
    assert {"dem", "sph", "cloth", "raycast", "marching_cubes"} <= listed


def test_gallery_pictures_are_current():
    problems = make_gallery.stale_entries()
    assert problems == [], "; ".join(problems) + "; run: python tools/make_gallery.py"
    manifest = json.loads(make_gallery.MANIFEST.read_text())
    for entry in make_gallery.GALLERY:
        rec = manifest["examples"][entry["name"]]
        image = make_gallery.OUT_DIR / rec["image"]
        head = image.read_bytes()[:8]
        assert head[:6] in (b"GIF89a", b"GIF87a") or head == b"\x89PNG\r\n\x1a\n"
        assert rec["command"].startswith(f"python -m treadle.examples.{entry['name']} --out ")


def test_stale_gallery_picture_is_reported(monkeypatch):
    monkeypatch.setattr(make_gallery, "source_hash", lambda name: "0" * 64)
    problems = make_gallery.stale_entries()
    assert len(problems) == len(make_gallery.GALLERY) and all("changed since" in p for p in problems)


@pytest.mark.skipif(not _have("sphinx", "myst_parser", "furo"),
                    reason="Sphinx, myst-parser or furo not installed (pip install -e '.[docs]')")
def test_sphinx_build_has_no_warnings(tmp_path):
    from treadle._src.builtins import exported_builtins

    out = tmp_path / "html"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", "-d", str(tmp_path / "doctrees"),
                        "docs", str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    builtins_html = "".join(p.read_text() for p in (out / "api" / "builtins").glob("*.html"))
    import treadle

    # A builtin whose name is also a type of treadle (spatial_vector) is indexed as the type on the Python pages.
    missing = [n for n in exported_builtins()
               if f'id="treadle.{n}"' not in builtins_html and hasattr(getattr(treadle, n), "_treadle_builtin_")]
    assert missing == []
    gallery = (out / "gallery.html").read_text()
    for entry in make_gallery.GALLERY:
        assert f"treadle.examples.{entry['name']}" in gallery
    images = re.findall(r'<img [^>]*src="([^"]+)"', gallery)
    assert len(images) >= len(make_gallery.GALLERY)
    assert all((out / src).is_file() for src in images)
    assert "normalize" in (out / "searchindex.js").read_text()
