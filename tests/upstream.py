"""Reading another project's tests out of its git source at test time (nothing of them is committed here):
shared by the upstream jobs of PyG (tests/pyg/test_pyg_upstream.py) and torch_scatter
(tests/frontends/test_torch_scatter_upstream.py)."""

import io
import os
import re
import subprocess
import tarfile
from pathlib import Path
from typing import List, Optional, Tuple

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


def version_key(text: str):
    """A sortable key for a version string, or None for a tag that is not a version."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging ships with pytest's dependencies
        return _simple_version_key(text)
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _simple_version_key(text: str) -> Optional[Tuple[Tuple[int, ...], int]]:
    """``[v]X.Y.Z[.postN][+local]`` -> ((X, Y, Z) without trailing zeros, N or -1); pre-releases -> None."""
    m = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:[.-]?post(\d+))?(?:\+[\w.]+)?", text.strip())
    if m is None:
        return None
    release = [int(p) for p in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    return tuple(release), int(m.group(2)) if m.group(2) is not None else -1


def pick_tag(tags: List[str], installed: str) -> Optional[str]:
    """The tag equal to the installed version if there is one, else the highest tag below it."""
    want = version_key(installed)
    if want is None:
        return None
    keyed = [(key, tag) for tag in tags for key in [version_key(tag)] if key is not None and key <= want]
    exact = [tag for key, tag in keyed if tag == installed or key == want]
    if exact:
        return exact[0]
    return max(keyed, key=lambda kt: kt[0])[1] if keyed else None
