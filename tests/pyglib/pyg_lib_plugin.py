"""A pytest plugin that runs a test session with ``scatterx.pyg_lib`` installed as ``pyg_lib``.

    PYTHONPATH=<repo>/tests/pyglib python -m pytest -p pyg_lib_plugin <PyG's or pyg-lib's tests>

``install()`` runs when the plugin is imported, before any test module (and so before PyG) is imported. The
session reports one line saying so at its start; an autouse fixture checks before every test that ``pyg_lib`` is
still the drop-in, and the session's last line counts the tests checked (``test_pyg_lib_upstream.py`` reads both).

(The tests of ``scatterx/pyg_lib/`` live in ``tests/pyglib/``: a directory named ``pyg_lib`` on ``sys.path`` --
pytest puts the repository's root there -- would be imported by PyG's ``import pyg_lib`` as a namespace package.)
"""

from __future__ import annotations

import sys
import types

import pytest
import torch

import scatterx.pyg_lib

scatterx.pyg_lib.install()


def with_cuda(func):
    """pyg-lib's ``pyg_lib.testing.withCUDA``, the one helper its tests of the ops import: the test's ``device``
    over the CPU, and ``cuda:0`` where CUDA is available."""
    devices = [pytest.param(torch.device("cpu"), id="cpu")]
    if torch.cuda.is_available():
        devices.append(pytest.param(torch.device("cuda:0"), id="cuda:0"))
    return pytest.mark.parametrize("device", devices)(func)


# (pyg-lib's test helpers are no part of its API: a stand-in for its tests only)
_testing = types.ModuleType("pyg_lib.testing")
_testing.withCUDA = with_cuda  # type: ignore[attr-defined]
sys.modules["pyg_lib.testing"] = _testing

#: the first words of the line reported at session start
INSTALLED_LINE = "scatterx.pyg_lib installed as pyg_lib"
_checked = {"tests": 0}


def pytest_report_header(config):
    return f"{INSTALLED_LINE} (scatterx from {scatterx.__file__})"


@pytest.fixture(autouse=True)
def _drop_in_in_place():
    assert sys.modules.get("pyg_lib") is scatterx.pyg_lib, "pyg_lib is not scatterx's drop-in"
    _checked["tests"] += 1
    yield


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"{INSTALLED_LINE}: checked for each of {_checked['tests']} tests run")
