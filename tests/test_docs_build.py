"""The docs site builds with warnings as errors, and a broken cross-reference does fail it.

Both builds are the README's command (``sphinx-build -W --keep-going -b html docs ...``), started when the tests are
collected (``tests/conftest.py``) so that they run beside the other tests; these tests run last and wait for them.
The examples of the docs run in ``test_docs.py``; the sections every docstring needs are checked there too.
"""

import pathlib

from conftest import DOCS_BROKEN_TEST, DOCS_BUILD_TEST, background

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_docs_build_without_warnings(request):
    returncode, output, out = background(request, DOCS_BUILD_TEST, timeout=600)
    assert returncode == 0, f"sphinx-build failed:\n{output}"
    html = pathlib.Path(out, "html")
    pages = {p.stem for p in (DOCS / "api").glob("*.rst")}
    assert pages, "no API pages"
    for page in pages:
        assert (html / "api" / f"{page}.html").exists(), page
    for guide in (DOCS / "guide").glob("*.md"):
        assert (html / "guide" / f"{guide.stem}.html").exists(), guide.name


def test_a_broken_cross_reference_fails_the_build(request):
    returncode, output, _ = background(request, DOCS_BROKEN_TEST, timeout=600)
    assert returncode != 0
    assert "no_such_function" in output
