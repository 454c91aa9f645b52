"""The backends: the same functions with the same signatures on both sides, ``backend_for`` choosing by device,
and the helpers both share (``_common.py``)."""

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


# ------------------------------------------------------------------------------------------- reused outputs
LARGE = (_common.HUGE_PAGES_FROM_BYTES // 4 + 1024,)  # float32 elements: just over the threshold


def _large(dtype=torch.float32):
    return _common.empty(LARGE, dtype, "cpu")


def test_a_dropped_output_is_reused_only_within_the_block():
    _common.release_outputs()
    with _common.reusing_outputs():
        a = _large()
        where = a.data_ptr()
        del a
        b = _large()
        assert b.data_ptr() == where and b.shape == LARGE and b.is_contiguous() and b._base is None
        del b
        c = _large(torch.int32)  # same bytes, another dtype: the same size class
        assert c.data_ptr() == where and c.dtype == torch.int32
        del c
    d = _large()  # outside the block: fresh memory
    assert d.data_ptr() != where
    _common.release_outputs()


@pytest.mark.parametrize("holder", ["tensor", "view", "numpy", "saved for backward"])
def test_an_output_still_referenced_is_never_reused(holder):
    _common.release_outputs()
    with _common.reusing_outputs():
        a = _large().fill_(1.0)
        where = a.data_ptr()
        x = torch.ones(LARGE, requires_grad=True)
        if holder == "tensor":
            kept = a
        elif holder == "view":
            kept = a[10:20]
        elif holder == "numpy":
            kept = a.numpy()
        else:
            kept = x * a  # saves a for x's gradient
        del a
        b = _large().fill_(2.0)
        assert b.data_ptr() != where
        if holder == "saved for backward":
            kept.sum().backward()
            assert torch.equal(x.grad, torch.ones(LARGE))  # the saved a still holds its ones
        else:
            assert float(torch.as_tensor(kept).min()) == 1.0
    _common.release_outputs()


def test_what_is_kept_is_bounded_and_released():
    _common.release_outputs()
    with _common.reusing_outputs():
        live = [_large() for _ in range(6)]  # all alive: no reuse, at most ``count`` kept
        assert len(_common._SPARES._buffers) <= _common._SPARES.count
        del live
    _common.release_outputs()
    assert _common._SPARES._buffers == []


def test_onnx_results_in_reused_memory_are_right_and_never_overwrite_a_live_one():
    from scatterx import onnx

    g = torch.Generator().manual_seed(0)
    data = torch.randn(1000, 64, generator=g)
    index = torch.randint(-1000, 1000, (150_000, 1), generator=g)  # a 38 MB result
    first = onnx.gather_nd(data, index)
    expected = data[index[:, 0]]
    other = onnx.gather_nd(data, index.flip(0))  # ``first`` is alive: not its memory
    assert torch.equal(first, expected) and torch.equal(other, expected.flip(0))
    del first, other
    again = onnx.gather_nd(data, index)
    assert torch.equal(again, expected)
    _common.release_outputs()
