"""The docs site builds with warnings as errors, and a broken cross-reference does fail it.

The build is the README's command (``sphinx-build -W --keep-going -b html docs ...``). Its examples run in
``test_docs.py``; the sections every docstring needs are checked there too.
"""

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def sphinx(source, out):
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(out / "doctrees"),
         str(source), str(out / "html")],
        capture_output=True, text=True, cwd=ROOT,
    )


def test_docs_build_without_warnings(tmp_path):
    run = sphinx(DOCS, tmp_path)
    assert run.returncode == 0, f"sphinx-build failed:\n{run.stdout}\n{run.stderr}"
    html = tmp_path / "html"
    pages = {p.stem for p in (DOCS / "api").glob("*.rst")}
    assert pages, "no API pages"
    for page in pages:
        assert (html / "api" / f"{page}.html").exists(), page
    for guide in (DOCS / "guide").glob("*.md"):
        assert (html / "guide" / f"{guide.stem}.html").exists(), guide.name


def test_a_broken_cross_reference_fails_the_build(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(DOCS / "conf.py", source / "conf.py")
    (source / "index.rst").write_text(
        "Broken\n======\n\n.. autofunction:: scatterx.ptr_to_index\n\nSee :func:`scatterx.no_such_function`.\n"
    )
    run = sphinx(source, tmp_path / "out")
    assert run.returncode != 0
    assert "no_such_function" in run.stderr
