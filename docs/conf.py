"""Sphinx configuration of Treadle's documentation: ``python -m sphinx -W -b html docs docs/_build/html``."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # the checkout's treadle, not an installed one
sys.path.insert(0, str(DOCS / "_ext"))

import treadle  # noqa: E402

project = "Treadle"
author = "The Treadle authors"
copyright = "The Treadle authors"  # noqa: A001 - Sphinx's name
release = treadle.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "treadle_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated"]
# Pages reached from elsewhere than the index's toctrees (none yet); others are added to the user guide's toctree.
treadle_unlisted_pages: list[str] = []

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

html_theme = "furo"
html_title = f"Treadle {release}"
html_static_path = ["_static"]
html_css_files = ["treadle.css"]
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
