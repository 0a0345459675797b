"""Sphinx configuration of calibkit's documentation site (built by ``scripts/build-docs``).

The source folder is ``docs/`` (the guide in ``docs/guide/``, the API reference in
``docs/api/``, the notes ``docs/*.md`` as they are); this configuration lives in
``docs/site/`` with the site's own scripts and templates. Before reading the sources it runs
``docs/site/scripts/which_metric.py``, which computes the numbers of the "Which metric to
report" page on the real model outputs (``../shared/data`` or ``$CALIBKIT_SHARED_DATA``) into
``docs/_generated/`` (ignored by git, rewritten on every build).
"""

from __future__ import annotations

import importlib.util
import runpy
from pathlib import Path

import matplotlib
from pygments.lexers import TextLexer
from sphinx.highlighting import lexers

matplotlib.use("Agg")

import calibkit  # noqa: E402

SITE = Path(__file__).resolve().parent
DOCS = SITE.parent

project = "calibkit"
author = "the calibkit developers"
copyright = "the calibkit developers"  # noqa: A001
release = version = calibkit.__version__

root_doc = "index"
extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "matplotlib.sphinxext.plot_directive",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = [str(SITE / "_templates")]
exclude_patterns = ["_build", "_generated", "site", "**/.ipynb_checkpoints"]

# The API reference: one stub page per public name (docs/api/generated/, ignored by git).
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

# calibkit.torch (issue 28) needs PyTorch; where it is not installed its page is still built
# from the docstrings, with torch and torchmetrics mocked.
autodoc_mock_imports = [m for m in ("torch", "torchmetrics") if importlib.util.find_spec(m) is None]

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

# Figures of the gallery: the code on the page runs at build time.
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
plot_rcparams = {"figure.dpi": 110}
plot_pre_code = "import matplotlib.pyplot as plt\nimport numpy as np\nimport calibkit\nimport calibkit.plots"

html_theme = "pydata_sphinx_theme"
html_title = f"calibkit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None

# docs/spec.md's worked example is a fenced block named `example` (tests/spec_doc.py reads it).
lexers["example"] = TextLexer()

# The numbers of the "Which metric to report" page: computed now, on the real model outputs.
runpy.run_path(str(SITE / "scripts" / "which_metric.py"))["main"](DOCS / "_generated" / "which_metric")
