"""Sphinx configuration of ascendgrad's documentation (``docs/``).

Build: ``pip install '.[docs]'`` (or ``.[test]``), then
``python -m sphinx -W -n -b html docs build/docs`` and open ``build/docs/index.html``.
tests_py/test_docs.py runs this build with warnings as errors and nitpicky references.
"""

import sys

import ascendgrad

# The docs extra has no PyTorch: ascendgrad.torch is then documented from autodoc's stand-ins for
# torch (its signatures name torch's types; nothing of torch runs in a build).
try:
    import torch  # noqa: F401
except ImportError:
    sys.modules.pop("torch", None)  # (a None entry, as tests_py/test_docs.py sets it, blocks the mock)
    autodoc_mock_imports = ["torch"]

project = "ascendgrad"
version = release = ascendgrad.__version__
author = "the ascendgrad authors"
copyright = "the ascendgrad authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links, as on GitHub

# Google-style docstrings (Args:, Returns:, Raises:).
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"

# Every reference must resolve (-n), except those into other projects' documentation, which an
# offline build cannot link to (no intersphinx: the build must not need the network).
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"ascendgrad\.(\w+\.)?_\w+.*"),  # the private modules' and classes' names in signatures
    (r"py:class", r"ascendgrad\.dump_check\.(Call|Prepared)"),  # check_dump's on_call hook: internal records
    (r"py:.*", r"(numpy|np|ml_dtypes|torch|typing|typing_extensions|collections\.abc|os|pathlib|types)\..*"),
]

html_theme = "alabaster"
html_title = f"ascendgrad {release}"
