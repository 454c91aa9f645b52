"""Sphinx configuration: the API reference from the docstrings (autodoc + napoleon, Google style), the guides in
Markdown (MyST), the pydata theme. Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html``
(``pip install -e ".[docs]"``); ``tests/test_docs_build.py`` runs the same with warnings as errors."""

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# the Triton kernels import without a GPU through the interpreter; nothing here launches one
os.environ.setdefault("TRITON_INTERPRET", "1")

import scatterx  # noqa: E402

project = "scatterx"
author = "the scatterx developers"
copyright = "2026, the scatterx developers"
release = version = scatterx.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# the engineers' documents (architecture, decision records) are read on GitHub, beside the code they describe
exclude_patterns = ["_build", "DESIGN.md", "ARCHITECTURE.md", "decisions/*"]

# A broken cross-reference is an error (with -W): every :func:, :class: and type in a signature must resolve,
# except the names of other projects, which are not linked (the build runs offline: no intersphinx).
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|numpy|np|numba|triton|torch_geometric|onnx|onnxscript|onnxruntime)(\..*)?"),
    (r"py:.*", r"(Tensor|Optional|Union|Callable|Sequence|Iterable|Iterator|Any|Dict|List|Tuple|ModuleType)"),
    (r"py:class", r"(int|float|str|bool|None|tuple|list|dict|type|object|callable|optional)"),
    (r"py:class", r"(typing|collections\.abc|contextlib|types|pathlib|os)\..*"),
    (r"py:class", r"(dtype|device|Module|Generator|ContextManager|PathLike)"),
]

autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = "scatterx"
html_static_path = []
html_theme_options = {
    "navigation_depth": 2,
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
