"""Sphinx extension of Treadle's documentation.

At ``builder-inited`` it writes the generated pages: the API reference under ``docs/api/`` (from the package and the
builtin registry, :mod:`api_pages`) and the gallery's items (``docs/_generated/gallery.md``, from
``tools/make_gallery.py``'s list and manifest), warning (an error under ``-W``) when a gallery image is older than
its example's source. At ``doctree-read`` it adds every top-level page that no toctree of the index names to the
index's first toctree, so a new page of the user guide appears without editing the index.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import api_pages
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent


def gallery_tool() -> ModuleType:
    """``tools/make_gallery.py`` (its ``GALLERY`` list, manifest and source hashes)."""
    name = "treadle_docs_make_gallery"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "make_gallery.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (unchanged files keep Sphinx's incremental build)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def generate(app: Sphinx) -> None:
    """Write the API reference and the gallery's items into the source tree."""
    api = Path(app.srcdir) / "api"
    pages = api_pages.api_pages()
    for rel, text in pages.items():
        _write(api / rel, text)
    for old in api.rglob("*.rst"):  # pages of names or groups that no longer exist
        if str(old.relative_to(api)) not in pages:
            old.unlink()
    tool = gallery_tool()
    _write(Path(app.srcdir) / "_generated" / "gallery.md", api_pages.gallery_items(tool.GALLERY, tool.load_manifest()))
    for problem in tool.stale_entries():
        logger.warning(f"gallery: {problem}; run: python tools/make_gallery.py", type="treadle", subtype="gallery")


def complete_index_toctree(app: Sphinx, doctree: nodes.document) -> None:
    """Add top-level pages that the index's toctrees do not name to its first toctree."""
    if app.env.docname != app.config.root_doc:
        return
    toctrees = list(doctree.findall(addnodes.toctree))
    if not toctrees:
        return
    named = {doc for t in toctrees for doc in t["includefiles"]}
    skip = {app.config.root_doc, *app.config.treadle_unlisted_pages}
    extra = sorted(d for d in app.env.found_docs if "/" not in d and d not in named and d not in skip)
    first = toctrees[0]
    for doc in extra:
        first["entries"].append((None, doc))
        first["includefiles"].append(doc)


def reread_index(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Read the index again when pages come or go (its toctree lists every top-level page)."""
    return [app.config.root_doc] if added or removed else []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("treadle_unlisted_pages", [], "env")
    app.connect("builder-inited", generate)
    app.connect("doctree-read", complete_index_toctree, priority=400)
    app.connect("env-get-outdated", reread_index)  # before the toctree collector (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
