"""A pytest plugin that runs a test session with scatterx's PyG switch on.

    PYTHONPATH=<repo>/tests python -m pytest -p pyg_switch_plugin <PyG's tests>

``scatterx.pyg.enable()`` runs at configure time, before any test module is imported, so the tests' own
``from torch_geometric.utils import scatter`` already binds scatterx's function. An autouse fixture checks
before and after every test that the switch is still on; the session reports one line saying so at its start
and one with the count of tests checked at its end (``tests/test_pyg_upstream.py`` looks for both).
"""

from __future__ import annotations

import pytest
import torch_geometric
import torch_geometric.utils

import scatterx
import scatterx.pyg
import scatterx.pyg.pays

#: the first words of the line reported at session start (tests/test_pyg_upstream.py matches it)
SWITCH_ON_LINE = "scatterx.pyg switch: ON"

_ROUTED = ("scatter", "segment", "softmax", "spmm")
_ALWAYS = scatterx.pyg.pays.tuned(scatterx.pyg.pays.ALWAYS)
_checked = {"tests": 0}


def _assert_switch_on() -> None:
    assert scatterx.pyg.is_enabled(), "scatterx.pyg switch is off"
    for name in _ROUTED:
        got = getattr(torch_geometric.utils, name)
        assert got is getattr(scatterx.pyg, name), f"torch_geometric.utils.{name} is not scatterx's: {got!r}"


def pytest_configure(config):
    scatterx.pyg.enable()
    # PyG's tests run on small graphs, which the switch's rule would hand back to PyG's own code: every call it can
    # take runs on scatterx instead, as the tests are here to check
    _ALWAYS.__enter__()
    _assert_switch_on()


def pytest_unconfigure(config):
    _ALWAYS.__exit__(None, None, None)
    scatterx.pyg.disable()


def pytest_report_header(config):
    return _header()


def _header() -> str:
    return (
        f"{SWITCH_ON_LINE} (scatterx {getattr(scatterx, '__version__', '?')} from {scatterx.__file__}; "
        f"torch_geometric {torch_geometric.__version__}; routed: torch_geometric.utils."
        f"{{{','.join(_ROUTED)}}}, Aggregation.reduce, "
        f"{', '.join(c.__name__ + '.propagate' for c in scatterx.pyg.FUSED_CONVS)})"
    )


def pytest_sessionstart(session):
    # The report header is hidden under -q; say it in any case.
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.verbosity < 0:
        reporter.write_line(_header())


@pytest.fixture(autouse=True)
def _scatterx_pyg_switch_on():
    _assert_switch_on()
    yield
    _assert_switch_on()
    _checked["tests"] += 1


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(
        f"scatterx.pyg switch: was ON for each of {_checked['tests']} tests run (checked before and after each)"
    )
