"""The checks every change passes, as CI runs them: ruff's formatter and linter over the whole tree, and mypy over
the package, each configured in ``pyproject.toml`` and pinned by its ``lint`` extra (``.pre-commit-config.yaml``
runs the same before a commit)."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: what ruff formats and lints (mypy's files are pyproject.toml's)
TREE = ["scatterx", "tests", "tools", "examples", "docs/conf.py"]


def _run(*command):
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    return done.returncode, done.stdout + done.stderr


def _tool(name):
    path = shutil.which(name, path=str(pathlib.Path(sys.executable).parent))
    if path is None:
        pytest.fail(f"{name} is not installed beside this Python: pip install -e '.[lint]'")
    return path


def test_the_tree_is_formatted_as_ruff_format_writes_it():
    code, out = _run(_tool("ruff"), "format", "--check", *TREE)
    assert code == 0, f"run `ruff format {' '.join(TREE)}`:\n{out}"


def test_ruff_finds_nothing():
    code, out = _run(_tool("ruff"), "check", *TREE)
    assert code == 0, out


def test_mypy_finds_nothing_in_the_package():
    code, out = _run(_tool("mypy"))
    assert code == 0, out
