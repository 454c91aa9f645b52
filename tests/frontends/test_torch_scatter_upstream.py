"""torch_scatter's own test suite, run against ``scatterx.torch_scatter`` installed as ``torch_scatter``.

Its tests are not part of this repository. They come from a git checkout of rusty1s/pytorch_scatter named by
``TORCH_SCATTER_SOURCE`` (a work tree or a bare git dir); without it the test skips. The checkout's HEAD is used
(its master branch: the drop-in follows master where it differs from the 2.1.2 release, e.g. ``scatter_logsumexp``
with ``out``). ``test/`` and ``torch_scatter/testing.py`` are extracted (``git archive``) into pytest's
``tmp_path`` and run there in a subprocess with ``-p torch_scatter_plugin``. CUDA tests skip without a GPU.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from upstream import extract, find_git_dir, git

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parents[1]
INSTALLED_LINE = "scatterx.torch_scatter installed as torch_scatter"  # torch_scatter_plugin.INSTALLED_LINE
TIMEOUT_S = 1200


def test_torch_scatter_upstream_tests_pass_on_the_drop_in(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot read torch_scatter's tests from its git source")
    git_dir = find_git_dir(
        "TORCH_SCATTER_SOURCE", "rusty1s/pytorch_scatter", "run torch_scatter's own tests on scatterx.torch_scatter"
    )
    for path in ("test/test_scatter.py", "torch_scatter/testing.py"):
        assert git(git_dir, "cat-file", "-e", f"HEAD:{path}").returncode == 0, (
            f"{git_dir} lacks {path}: is this torch_scatter's repository?"
        )
    extract(git_dir, "HEAD", tmp_path, "test", "torch_scatter/testing.py")
    (tmp_path / "torch_scatter" / "testing.py").rename(tmp_path / "torch_scatter_testing.py")
    (tmp_path / "torch_scatter").rmdir()  # nothing of torch_scatter's package may shadow the drop-in
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own rootdir: no configuration of ours applies

    env = dict(os.environ)
    for var in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(var, None)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rfE",
        "--tb=short",
        "-s",
        "-p",
        "torch_scatter_plugin",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
        "test",
    ]
    try:
        proc = subprocess.run(
            cmd, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"torch_scatter's tests ran past {TIMEOUT_S} s:\n{str(e.stdout)[-5000:]}")
    output = proc.stdout + proc.stderr
    summary = next((line for line in reversed(output.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    print(f"torch_scatter tests from {git_dir} at HEAD: {summary}")
    assert proc.returncode == 0, f"torch_scatter's tests failed on the drop-in:\n{output[-20000:]}"
    assert INSTALLED_LINE in output, f"the drop-in was not installed:\n{output[-5000:]}"
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) > 0, f"no test passed:\n{output[-5000:]}"
