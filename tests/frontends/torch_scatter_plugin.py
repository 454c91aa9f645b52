"""pytest plugin for torch_scatter's own tests (tests/frontends/test_torch_scatter_upstream.py): registers
scatterx's drop-in as ``torch_scatter`` before any test module is imported, and torch_scatter's test helpers
(``torch_scatter/testing.py`` of the same checkout, extracted next to the tests as ``torch_scatter_testing.py``)
as ``torch_scatter.testing``. Prints one line the job checks, proving the drop-in was what the tests imported."""

import importlib.util
import os
import sys

import scatterx.torch_scatter as drop_in

INSTALLED_LINE = "scatterx.torch_scatter installed as torch_scatter"


def pytest_configure(config):
    drop_in.install()
    path = os.path.join(str(config.rootpath), "torch_scatter_testing.py")
    spec = importlib.util.spec_from_file_location("torch_scatter.testing", path)
    testing = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(testing)
    sys.modules["torch_scatter.testing"] = testing
    drop_in.testing = testing
    print(INSTALLED_LINE)


def pytest_sessionfinish(session, exitstatus):
    import torch_scatter

    assert torch_scatter is drop_in, "torch_scatter was replaced during the run"
