"""The backends: the same functions with the same signatures on both sides, ``backend_for`` choosing by device,
and the helpers both share (``_common.py``; new outputs: ``test_outputs.py``)."""

import ast
import inspect
import pathlib

import numpy as np
import pytest
import torch

from scatterx import backends
from scatterx.backends import _common, cpu
from scatterx.kernels.gpu import available

INTERFACE = [
    "output_size",
    "check_index",
    "check_ptr",
    "index_to_ptr",
    "segments",
    "index_scatter_reduce",
    "small_index_scatter_reduce",
    "segment_reduce",
    "segment_arg_reduce",
    "segment_logsumexp",
    "gather_segment_reduce",
    "weighted_gather_segment_reduce",
    "sddmm",
    "gatv2_logits",
    "gatv2_grad",
    "tie_backward",
    "csr_transpose",
    "element_scatter",
    "element_gather",
    "segment_softmax",
    "segment_softmax_backward",
]


@pytest.mark.skipif(not available(), reason="triton is not installed")
@pytest.mark.parametrize("name", INTERFACE)
def test_both_backends_have_the_same_function_and_signature(name):
    from scatterx.backends import gpu

    assert inspect.signature(getattr(cpu, name)) == inspect.signature(getattr(gpu, name)), name


def test_the_documented_interface_is_complete():
    assert set(cpu.__all__) - {"routes"} == set(INTERFACE)
    for name in INTERFACE:
        assert f"``{name}``" in backends.__doc__, f"backends/__init__.py does not list {name}"


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
