"""Reading another project's tests out of its git source at test time (nothing of them is committed here):
shared by the upstream jobs of PyG (tests/pyg/test_pyg_upstream.py) and torch_scatter
(tests/frontends/test_torch_scatter_upstream.py)."""

import io
import os
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Optional

import pytest


def git(git_dir: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False, **kwargs)


def git_dir_of(path: Path) -> Optional[Path]:
    """The git directory of a work tree or of a bare repository (found without git's upward discovery)."""
    dot_git = path / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():  # a linked work tree or a submodule: "gitdir: <path>"
        m = re.match(r"gitdir:\s*(.+)", dot_git.read_text().strip())
        return (path / m.group(1)).resolve() if m else None
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    return None


def find_git_dir(variable: str, project: str, purpose: str) -> Path:
    """The git directory named by the environment ``variable`` (it must be a checkout when set); skips without
    it, saying how to run the test."""
    explicit = os.environ.get(variable)
    if not explicit:
        pytest.skip(
            f"no {project} source: set {variable} to a git checkout of {project} (a work tree or a bare "
            f"git dir) to {purpose}"
        )
    git_dir = git_dir_of(Path(explicit).expanduser())
    if git_dir is None:
        pytest.fail(f"{variable}={explicit!r} is not a git work tree or git directory of {project}")
    return git_dir


def extract(git_dir: Path, ref: str, dest: Path, *paths: str) -> None:
    """``git archive <ref> <paths>`` unpacked into ``dest``."""
    archive = git(git_dir, "archive", "--format=tar", ref, *paths)
    if archive.returncode != 0:
        pytest.fail(
            f"git archive {ref} {' '.join(paths)} failed in {git_dir}: {archive.stderr.decode(errors='replace')}"
        )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout), mode="r:") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - Python < 3.11.4
            tar.extractall(dest)
