"""The backends: the same functions with the same signatures on both sides, ``backend_for`` choosing by device,
and the helpers both share (``_common.py``; new outputs: ``test_outputs.py``)."""

import ast
import importlib
import inspect
import pathlib
import re

import numpy as np
import pytest
import torch

from scatterx import backends
from scatterx.backends import _common, _interface, cpu
from scatterx.kernels.gpu import available


@pytest.mark.skipif(not available(), reason="triton is not installed")
def test_both_backends_offer_the_same_functions_with_the_same_signatures():
    from scatterx.backends import gpu

    assert cpu.INTERFACE == gpu.INTERFACE
    for name in cpu.INTERFACE:
        assert inspect.signature(getattr(cpu, name)) == inspect.signature(getattr(gpu, name)), name


def test_the_interface_is_what_the_op_modules_offer():
    """Each op module names its functions in ``__all__`` (sorted, each a documented function of its own); the package
    binds exactly those, and the op layer calls nothing else of a backend."""
    offered = []
    for module_name in _interface.op_modules(cpu.__path__):
        module = importlib.import_module(f"scatterx.backends.cpu.{module_name}")
        assert module.__all__ == sorted(module.__all__), module_name
        for name in module.__all__:
            function = getattr(module, name)
            assert inspect.isfunction(function) and function.__module__ == module.__name__, (module_name, name)
            assert function.__doc__, (module_name, name)
            assert getattr(cpu, name) is function
        offered += module.__all__
    assert sorted(offered) == cpu.INTERFACE
    package = pathlib.Path(backends.__file__).parent.parent
    called = set()
    for path in package.rglob("*.py"):
        called |= set(re.findall(r"(?:\bbackend_for\([^)]*\)|\bbackend)\.(\w+)", path.read_text()))
    assert len(called) > 10 and called - {"routes"} <= set(cpu.INTERFACE), called - set(cpu.INTERFACE)


def test_a_function_offered_twice_is_an_error(tmp_path, monkeypatch):
    for name in ("first", "second"):
        (tmp_path / f"{name}.py").write_text('__all__ = ["twice"]\n\n\ndef twice():\n    """One."""\n')
    monkeypatch.syspath_prepend(str(tmp_path.parent))
    namespace = {"__path__": [str(tmp_path)], "__name__": tmp_path.name}
    with pytest.raises(ImportError, match="twice is offered by both"):
        _interface.export_op_functions(namespace)


def test_both_backends_have_the_same_modules():
    """One module per op family on each side, with the same names (``backends/cpu/X.py`` <-> ``backends/gpu/X.py``);
    the GPU side also lists its kernel variants (``variants.py``: what ``scatterx gpu-report`` compiles; the CPU's
    compiled variants are counted by ``tests/compile_budget.py`` instead). Underscore modules are each side's own
    helpers, named for what they hold (the CPU's kernel arguments, the GPU's launch through Triton)."""
    here = pathlib.Path(backends.__file__).parent
    names = {
        side: sorted(p.name for p in (here / side).glob("*.py") if not p.stem.startswith("_") or p.stem == "__init__")
        for side in ("cpu", "gpu")
    }
    assert names["cpu"] == [n for n in names["gpu"] if n != "variants.py"]


def _names_bound_to_backends(tree: ast.AST):
    """Names a test module binds to scatterx.backends or one of its modules."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if full.startswith("scatterx.backends") or (module == "scatterx" and alias.name == "backends"):
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("scatterx.backends"):
                    bound.add(alias.asname or alias.name.split(".")[0])
    return bound


def test_no_test_overwrites_a_backend_global():
    """Tests force routes and thresholds with ``routes.force`` / ``routes.tuned``, never by overwriting a module
    global of a backend (``monkeypatch.setattr(cpu, ...)``, ``setattr(backends.cpu, ...)``): what they test is then
    what users run."""
    offenders = []
    for path in sorted(pathlib.Path(__file__).resolve().parents[1].rglob("*.py")):
        tree = ast.parse(path.read_text())
        bound = _names_bound_to_backends(tree) | {"backends"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                if name in ("setattr", "delattr") and node.args:
                    target = node.args[0]
                    while isinstance(target, ast.Attribute):
                        target = target.value
                    if isinstance(target, ast.Name) and target.id in bound:
                        offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"tests overwrite backend globals at {offenders}"


def test_backend_for_picks_by_device():
    assert backends.backend_for(torch.zeros(1)) is cpu
    assert not backends.is_gpu(torch.zeros(1))


@pytest.mark.skipif(not available() or torch.cuda.is_available(), reason="needs triton's interpreter")
def test_gpu_backend_on_cpu_tensors_for_tests():
    from scatterx.backends import gpu

    with backends.gpu_backend_on_cpu():
        assert backends.backend_for(torch.zeros(1)) is gpu and backends.is_gpu(torch.zeros(1))
    assert backends.backend_for(torch.zeros(1)) is cpu


# --------------------------------------------------------------------------------------------------- _common
def test_overlaps_by_address_range():
    buf = torch.zeros(16)
    assert _common.overlaps(buf[:8], buf[4:12])
    assert not _common.overlaps(buf[:8], buf[8:])
    assert not _common.overlaps(buf, None) and not _common.overlaps(buf[:0], buf)
    array = np.zeros(16)
    a, b = torch.from_numpy(array[:8]), torch.from_numpy(array[6:])  # two storages, one memory
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert _common.overlaps(a, b)
    assert _common.overlaps(buf.view(4, 4).t(), buf[15:])  # non-contiguous views: the whole span counts


def test_explain_bad_index_names_what_the_caller_named():
    err = _common.explain_bad_index(torch.tensor([0, 5]), 3, False, "edge_index[1]", "the number of target nodes")
    assert isinstance(err, IndexError) and str(err) == (
        "edge_index[1][1]=5 is out of range for the number of target nodes=3 (must be < 3)"
    )
    err = _common.explain_bad_index(torch.tensor([2, 1]), 3, True, unsorted_hint="")
    assert isinstance(err, ValueError) and str(err).endswith("index[1]=1 < index[0]=2")
    err = _common.explain_bad_index(torch.tensor([-4]), 3, False)
    assert "negative" in str(err)
