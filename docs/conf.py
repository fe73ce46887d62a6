"""Sphinx configuration: ``pip install -e ".[test,docs]"`` then ``sphinx-build -W -b html docs docs/_build/html``.

Pages are Markdown (MyST) and hold the whole documentation; the README is a front page that links
to them. Every Python example runs: the README's and these pages' in ``tests/docs/test_readme.py`` and
``tests/docs/test_docs.py``, the API's docstring examples under ``pytest --doctest-modules``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numcodecs_ext

ROOT = Path(__file__).resolve().parents[1]

project = "numcodecs_ext"
author = "the numcodecs_ext developers"
release = version = numcodecs_ext.__version__
copyright = "2026, the numcodecs_ext developers"  # noqa: A001 - Sphinx's name

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False

html_theme = "pydata_sphinx_theme"
html_title = f"numcodecs_ext {release}"
html_static_path = ["_static"]
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}


def _draw_tradeoff(app) -> None:  # noqa: ANN001 - Sphinx's app
    """The demo's plot, drawn during the build so the page shows what this version measures."""
    target = Path(app.srcdir) / "_static" / "tradeoff.png"
    try:
        from numcodecs_ext.tools.demo import plot_tradeoff

        plot_tradeoff(target, quiet=True)
    except ImportError as exc:  # matplotlib missing: the docs extra installs it
        sys.exit(f"docs: cannot draw the trade-off plot: {exc}")


def setup(app) -> None:  # noqa: ANN001
    app.connect("builder-inited", _draw_tradeoff)
