"""Sphinx configuration of the documentation site (`make docs`, see scripts/build_docs.py).

scripts/build_docs.py copies this folder, the notebooks and their student copies into a
staging folder and runs Sphinx there, so ``notebooks/`` below is the staged copy of the
repository's ``notebooks/NN_*.ipynb``. The pages are rendered from the outputs stored in
the notebooks (never re-executed): the site shows exactly what strict nbval checked.
The generated parts (landing page, API page, download links, TensorFlow version) are made
by ``_ext/tutorial_site.py``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "TFRecord tutorials"
author = "The TFRecord tutorials authors"
copyright = "2026 The TFRecord tutorials authors, MIT License"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "tutorial_site",
]
exclude_patterns = ["README.md", "_ext", "_extra", "_templates", "**/.ipynb_checkpoints"]
root_doc = "index"

# Notebooks: the stored outputs, as CI checked them.
nb_execution_mode = "off"
nb_merge_streams = True
# Exercise solutions are folded (tutorial_site.py tags them hide-cell): the reader opens them.
nb_code_prompt_show = "Show the solution"
nb_code_prompt_hide = "Hide the solution"
# Notebooks link to their own sections the way Jupyter names them ("#Use-a-real-VOC2012").
myst_heading_anchors = 3
myst_heading_slug_func = "tutorial_site.jupyter_slug"

# API reference: Google-style docstrings, members in the order of the source.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"

html_theme = "furo"
html_title = "TFRecord tutorials"
html_static_path = ["_static"]
html_css_files = ["tutorial_site.css"]
templates_path = ["_templates"]
# The notebooks and their student copies, for download next to each page.
html_extra_path = ["_extra"]
html_copy_source = False
html_show_sourcelink = False
html_favicon = "_static/favicon.svg"
