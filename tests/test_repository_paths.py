"""Every repository path that the package's docstrings, comments and strings, and the docs, name exists.

A path is a token of ``/``-separated names that starts at a directory of the repository (``scatterx/``,
``tests/``, ``docs/``, ``tools/``, ...), of the package (``backends/``, ``kernels/``, ``ops/``, ... resolved against
``scatterx/``) or of the docs (``decisions/``, ``guide/``, ``api/``, resolved against ``docs/``), and ends in a
file name with an extension or in ``/`` (a directory); a Markdown link may also start with ``../``. It is looked up
against the repository's root, ``scatterx/``, ``docs/`` and the naming file's own directory. ``{a,b}`` expands to
both. Left alone, so that prose is not read as paths: URLs and paths inside longer ones, placeholders (``<op>``,
``*``, a format field ``{name}``), and words joined by a slash (``sum/mean``: no extension, no trailing ``/``).

The decision records (``docs/decisions/``) are history and name what was there at the time; they are not read.
"""

import io
import pathlib
import re
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: where a path's first name may start, besides the directories found in the tree (so that a path into a
#: directory that was removed whole is still read)
FIRST = {
    "scatterx", "tests", "docs", "tools", "examples", "bench-results", ".ci",  # the repository's
    "backends", "kernels", "ops", "pyg", "pyg_lib", "torch_scatter", "distributed", "export", "bench",  # scatterx/
    "decisions", "guide", "api",  # docs/
}  # fmt: skip

EXTENSIONS = "py|pyi|md|rst|txt|json|csv|toml|cfg|ini|ya?ml|sh|png|svg|typed|log"
PATH = re.compile(
    r"(?<![\w./:{}<>*@-])"  # not inside a longer path, a URL or a placeholder
    r"((?:\.\./)*(?:[\w.{},-]+/)+(?:[\w.{},-]*\.(?:" + EXTENSIONS + r"))?)"
    r"(?![\w/{}<>*@-])"
)

#: paths named because they must NOT exist: a directory of that name on the tests' path would be imported as the
#: real package (docs/ARCHITECTURE.md, docs/decisions/torch-scatter-dropin.md, neighbor-sampling.md)
ABSENT_ON_PURPOSE = {"tests/torch_scatter/", "tests/pyg_lib/"}

#: stale paths tolerated for now, as (file, path): none. A new entry is a debt; the test fails once one is no
#: longer found, so that the list only shrinks
KNOWN_STALE: set = set()


def _first_names():
    names = set(FIRST)
    for base in (ROOT, ROOT / "scatterx", ROOT / "docs"):
        names.update(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
    return names


FIRST_NAMES = _first_names()


def _expand(path: str):
    match = re.search(r"\{([^{}]*)\}", path)
    if match is None:
        yield path
        return
    for alternative in match.group(1).split(","):
        yield from _expand(path[: match.start()] + alternative + path[match.end() :])


def paths_in(text: str):
    """The repository paths ``text`` names (braces expanded), in order."""
    found = []
    for match in PATH.finditer(text):
        path = match.group(1)
        if re.search(r"\{[^{},]*\}", path):
            continue  # a format field, not a choice
        first = path.split("/")[0]
        if first != ".." and first not in FIRST_NAMES:
            continue
        found.extend(_expand(path))
    return found


def exists(path: str, where: pathlib.Path) -> bool:
    """Whether ``path``, named in the file ``where``, is in the repository."""
    if path.startswith("../"):
        return (where.parent / path).exists()
    return any((base / path).exists() for base in (ROOT, ROOT / "scatterx", ROOT / "docs", where.parent))


def _python_texts(path: pathlib.Path):
    """The comments and string literals (docstrings included) of a Python module."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [t.string for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def sources():
    """The files read: the package's modules, and the docs (decision records and the build aside)."""
    files = sorted((ROOT / "scatterx").rglob("*.py"))
    files += [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    files += sorted(
        p
        for p in (ROOT / "docs").rglob("*")
        if p.suffix in (".md", ".rst") and not {"decisions", "_build"} & set(p.relative_to(ROOT / "docs").parts)
    )
    return files


def stale(path: pathlib.Path):
    """The paths ``path`` names that do not exist."""
    texts = _python_texts(path) if path.suffix == ".py" else [path.read_text()]
    return sorted({p for text in texts for p in paths_in(text) if p not in ABSENT_ON_PURPOSE and not exists(p, path)})


def test_the_paths_named_in_the_package_and_the_docs_exist():
    found = {(f.relative_to(ROOT).as_posix(), p) for f in sources() for p in stale(f)}
    new = sorted(found - KNOWN_STALE)
    assert not new, "paths named that do not exist (file: path):\n" + "\n".join(f"{f}: {p}" for f, p in new)
    fixed = sorted(KNOWN_STALE - found)
    assert not fixed, f"fixed, or no longer there: remove from KNOWN_STALE: {fixed}"


def test_paths_named_as_absent_are_absent():
    assert not [p for p in ABSENT_ON_PURPOSE if (ROOT / p).exists()]


def test_a_path_that_stops_existing_is_found():
    text = "see `scatterx/ops/segment_softmax.py`, `scatterx/ops/no_such_op.py` and [it](../no/such.md)"
    where = ROOT / "docs" / "guide" / "x.md"
    assert paths_in(text) == ["scatterx/ops/segment_softmax.py", "scatterx/ops/no_such_op.py", "../no/such.md"]
    assert [p for p in paths_in(text) if not exists(p, where)] == ["scatterx/ops/no_such_op.py", "../no/such.md"]
    # relative to scatterx/ and docs/, and braces
    assert all(exists(p, where) for p in paths_in("`kernels/{cpu,gpu}/segment_softmax.py`, decisions/planner.md"))
    assert not exists("backends/cpu.py", ROOT / "scatterx" / "ops" / "_checks.py")


@pytest.mark.parametrize(
    "prose",
    [
        "sum/mean and amax/amin, CPU/GPU, input/output.",
        "https://github.com/rusty1s/pytorch_scatter/blob/master/torch_scatter/scatter.py",
        "f'{out_dir}/bench.json', docs/decisions/<topic>.md, tests/kernels/test_<side>_<module>.py, tests/ops/*.py",
        "an edge u/v, the ratio bytes/s, 1/2 of the rows, a/b.",
    ],
)
def test_prose_is_not_read_as_paths(prose):
    assert [p for p in paths_in(prose) if not exists(p, ROOT / "README.md")] == []
