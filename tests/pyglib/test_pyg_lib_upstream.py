"""PyG's own tests of its loaders, samplers and the layers that call pyg-lib, and pyg-lib's own Python tests, run
with ``scatterx.pyg_lib`` installed as ``pyg_lib``.

Neither project's tests are part of this repository; they come from git checkouts:

- ``PYG_SOURCE``: pyg-team/pytorch_geometric (a bare git dir or a work tree), at the tag of the installed
  ``torch_geometric`` (or the highest below it);
- ``PYG_LIB_SOURCE``: pyg-team/pyg-lib, at its ``HEAD`` (its Python tests of the ops this drop-in provides).

Without the variable, each test skips. The files run in a subprocess with ``-p pyg_lib_plugin``
(tests/pyglib/pyg_lib_plugin.py: the drop-in installed before PyG is imported, checked before every test).
Skips (a missing optional package, no GPU) are fine; a failure fails the test, with the output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from upstream import extract, find_git_dir, git, pick_tag

TESTS_DIR = Path(__file__).resolve().parent  # where pyg_lib_plugin.py is
REPO_ROOT = TESTS_DIR.parents[1]
INSTALLED_LINE = "scatterx.pyg_lib installed as pyg_lib"  # pyg_lib_plugin.INSTALLED_LINE (not imported: it installs)
CHECKED_LINE = re.compile(r"installed as pyg_lib: checked for each of (\d+) tests run")
TIMEOUT_S = 1500

#: PyG's tests of what runs on pyg-lib: the loaders and samplers, and the layers and functions that call its ops
PYG_TESTS = [
    "test/loader",
    "test/sampler",
    "test/nn/conv/test_rgcn_conv.py",
    "test/nn/dense/test_linear.py",
    "test/nn/models/test_node2vec.py",
    "test/utils/test_softmax.py",
    "test/utils/test_index_sort.py",
    "test/utils/test_dropout.py",
    "test/transforms/test_rooted_subgraph.py",
]

#: PyG test id prefix -> why it is left out
PYG_DESELECTED: Dict[str, str] = {
    "test/loader/test_imbalanced_sampler.py::test_in_memory_dataset_imbalanced_sampler": (
        "calls nothing of pyg-lib (FakeDataset, ImbalancedSampler, DataLoader) and passes alone with the drop-in; "
        "after the other loader tests in one process its seeded draw lands on the bound (prob.min() == 0.4 > 0.4)"
    ),
    "test/utils/test_dropout.py::test_dropout_path": (
        "asserts the exact walks pyg-lib's own random engine draws at torch.manual_seed(12345); the drop-in draws "
        "from torch's generator through its own streams (walks are checked in tests/pyglib/test_walk.py)"
    ),
}

#: pyg-lib's Python tests of the ops this drop-in provides
PYG_LIB_TESTS = [
    "test/ops/test_matmul.py",
    "test/ops/test_softmax.py",
    "test/ops/test_index_sort.py",
]


def _run(tmp_path: Path, files: List[str], deselected: Dict[str, str], label: str) -> None:
    # an ini file of its own makes the extracted directory pytest's rootdir: no configuration from here applies
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ)
    for var in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(var, None)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfEs", "--tb=short", "-W", "ignore::UserWarning"]
    cmd += ["-p", "pyg_lib_plugin", "-p", "no:cacheprovider"]
    for test_id in deselected:
        cmd += ["--deselect", test_id]
    cmd += files
    try:
        proc = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"{label}'s tests ran past {TIMEOUT_S} s:\n{out[-5000:]}")
    output = proc.stdout + proc.stderr
    lines = [line for line in output.splitlines() if line.strip()]
    summary = next((line for line in reversed(lines) if re.search(r"\d+ (passed|failed|error)", line)), "")
    print(" ".join(cmd))
    for test_id, reason in deselected.items():
        print(f"deselected {test_id}*: {reason}")
    print(summary)
    assert proc.returncode == 0, f"{label}'s tests failed with the drop-in (exit {proc.returncode}):\n{output[-20000:]}"
    assert any(line.startswith(INSTALLED_LINE) for line in lines), f"no {INSTALLED_LINE!r} line:\n{output[-5000:]}"
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) > 0, f"no test passed:\n{output[-5000:]}"
    checked = CHECKED_LINE.search(output)
    assert checked and int(checked.group(1)) >= int(passed.group(1)), f"drop-in not checked per test:\n{output[-5000:]}"


def test_pyg_loader_and_sampler_tests_pass_with_the_drop_in(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot read PyTorch Geometric's tests from its git source")
    git_dir = find_git_dir("PYG_SOURCE", "pyg-team/pytorch_geometric", "run PyG's loader tests on the drop-in")
    torch_geometric = pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    tags = git(git_dir, "tag", "--list", text=True)
    tag = pick_tag(tags.stdout.split(), torch_geometric.__version__)
    if tag is None:
        pytest.skip(f"{git_dir} has no tag at or below the installed torch_geometric {torch_geometric.__version__}")
    extract(git_dir, tag, tmp_path, "test")
    print(f"PyG {tag} tests from {git_dir}")
    _run(tmp_path, PYG_TESTS, PYG_DESELECTED, "PyG")


def test_pyg_lib_tests_pass_on_the_drop_in(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot read pyg-lib's tests from its git source")
    git_dir = find_git_dir("PYG_LIB_SOURCE", "pyg-team/pyg-lib", "run pyg-lib's tests on the drop-in")
    extract(git_dir, "HEAD", tmp_path, *PYG_LIB_TESTS)
    print(f"pyg-lib HEAD tests from {git_dir}")
    _run(tmp_path, PYG_LIB_TESTS, {}, "pyg-lib")
