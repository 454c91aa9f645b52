"""The switch's rule (``scatterx/pyg/pays.py``): from the shapes alone, which calls run on scatterx and which on
PyG's own code -- on a table of shapes, through a layer and ``utils.scatter`` with the switch on, and traced by
``torch.compile`` -- and bad input, which raises the same error on both sides of the rule."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch_geometric")

import torch
import torch_geometric.utils as pyg_utils
from torch_geometric.nn import GATConv, GCNConv

import scatterx.pyg as sxpyg
from scatterx.pyg import fused, pays, routed

T = pays.TUNING

#: (edges, width, expected) for a fused layer call on the CPU
FUSED = [
    (1_000, 8, False),
    (1_000, 128, False),
    (3_000, 128, False),
    (10_000, 32, False),
    (T.fused_min_edges - 1, 8, False),
    (T.fused_min_edges, 1, True),  # enough edges at any width
    (30_000, 8, True),
    (T.fused_min_elements // 128, 128, True),  # enough elements
    (10_000, 128, True),
    (1_000_000, 1, True),
]


@pytest.mark.parametrize(("edges", "width", "expected"), FUSED)
def test_a_fused_layer_call_runs_on_scatterx_from_enough_edges_or_elements(edges, width, expected):
    assert pays.fused_pays(edges, width, "cpu") is expected
    assert pays.fused_pays(edges, width, "cuda") is True  # no rule on the GPU


#: (rows, width, reduce, grad, expected) for a routed reduction on the CPU
ROUTED = [
    (300, 16, "sum", True, False),
    (1_000, 64, "sum", True, False),
    (3_000, 64, "sum", True, True),
    (10_000, 16, "amax", True, True),
    (10_000, 32, "mean", True, False),  # a mean's gradient: PyG's is cheap
    (40_000, 32, "mean", True, True),
    (30_000, 64, "sum", False, False),  # a forward alone gains less
    (100_000, 32, "sum", False, True),
    (30_000, 1, "amax", False, True),  # narrow max: torch's is slow
    (30_000, 1, "sum", False, False),
    (30_000, 64, "amin", False, False),
    (1_000, 4, "softmax", True, False),
    (10_000, 4, "softmax", True, True),
    (1_000_000, 1, "softmax", True, False),  # rows of one element never paid
]


@pytest.mark.parametrize(("rows", "width", "reduce", "grad", "expected"), ROUTED)
def test_a_routed_reduction_runs_on_scatterx_where_it_was_measured_to_pay(rows, width, reduce, grad, expected):
    assert pays.routed_pays(rows, width, reduce, grad, "cpu") is expected
    assert pays.routed_pays(rows, width, reduce, grad, "cuda") is True


def test_always_takes_every_call_and_tuned_refuses_an_unknown_threshold():
    with pays.tuned(pays.ALWAYS):
        assert pays.fused_pays(1, 1, "cpu") and pays.routed_pays(1, 1, "softmax", True, "cpu")
        assert pays.routed_pays(2, 1, "mean", False, "cpu")
    assert not pays.fused_pays(1, 1, "cpu")
    with pytest.raises(TypeError, match="unknown switch threshold"), pays.tuned(fused_min_nodes=3):
        pass


def _spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("layer", [GCNConv(8, 8), GATConv(8, 2, heads=4)], ids=["gcn", "gat"])
def test_a_layer_call_takes_the_fused_path_only_above_the_rule(monkeypatch, layer):
    torch.manual_seed(0)
    x, edge_index = torch.randn(50, 8), torch.randint(0, 50, (2, 400))
    expected = layer(x, edge_index)
    fused_calls = _spy(monkeypatch, fused, "adjacency")
    routed_calls = _spy(monkeypatch, routed, "index_scatter_reduce")
    with sxpyg.enabled():
        small = layer(x, edge_index)  # far below the shipped thresholds: PyG's own code, scatterx never called
        assert fused_calls == [] and routed_calls == []
        with pays.tuned(fused_min_edges=400):  # the same call, now at the threshold
            large = layer(x, edge_index)
        assert fused_calls  # the fused path built its adjacency
    torch.testing.assert_close(small, expected)
    torch.testing.assert_close(large, expected, atol=1e-5, rtol=1e-4)


def test_utils_scatter_hands_small_calls_to_pyg_and_large_ones_to_scatterx(monkeypatch):
    calls = _spy(monkeypatch, routed, "index_scatter_reduce")
    src, index = torch.randn(100, 4, requires_grad=True), torch.randint(0, 10, (100,))
    expected = pyg_utils.scatter(src, index, 0, 10, "max")
    with sxpyg.enabled():
        small = pyg_utils.scatter(src, index, 0, 10, "max")
        assert calls == []
        with pays.tuned(routed_min_elements_grad=400):
            large = pyg_utils.scatter(src, index, 0, 10, "max")
        assert calls == ["index_scatter_reduce"]
        with torch.no_grad(), pays.tuned(routed_min_elements_grad=400):  # without a gradient: its own threshold
            pyg_utils.scatter(src, index, 0, 10, "max")
        assert calls == ["index_scatter_reduce"]
    torch.testing.assert_close(small, expected)
    torch.testing.assert_close(large, expected)


def test_under_torch_compile_a_small_graph_is_traced_as_pygs_own():
    """Traced by dynamo, the rule reads the traced shapes: a small layer's calls run PyG's torch ops (inductor fuses
    them with their neighbours), the same graphs and breaks as with the switch off and no scatterx op in them; the
    same layer above the thresholds traces scatterx's op (tests/pyg/test_pyg_compile.py: the compiled models)."""
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(0)
    layer = SAGEConv(8, 8)
    x, edge_index = torch.randn(50, 8), torch.randint(0, 50, (2, 400))
    torch._dynamo.reset()
    off = torch._dynamo.explain(layer)(x, edge_index)
    with sxpyg.enabled():
        torch._dynamo.reset()
        small = torch._dynamo.explain(layer)(x, edge_index)
        with pays.tuned(fused_min_edges=400):
            torch._dynamo.reset()
            large = torch._dynamo.explain(layer)(x, edge_index)
    torch._dynamo.reset()
    assert (small.graph_count, small.graph_break_count) == (off.graph_count, off.graph_break_count) == (1, 0)
    assert "scatterx" not in small.graphs[0].code
    assert (large.graph_count, large.graph_break_count) == (1, 0)
    assert "torch.ops.scatterx.adjacency_matmul" in large.graphs[0].code


# ----------------------------------------------------------------------- bad input on both sides of the rule
SRC = torch.arange(8.0).view(4, 2)


def _aggregate_with_ptr():
    from torch_geometric.nn.aggr import SumAggregation

    return SumAggregation()(SRC, ptr=torch.tensor([0, 2, 3]))


def _layer(edge_index):
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(0)
    return SAGEConv(2, 3)(SRC, edge_index)


#: a call with bad input, small enough for the shipped rule to hand it back -> the exception it must raise
BAD_INPUTS = {
    "segment: ptr ends before src's rows": (
        lambda: pyg_utils.segment(SRC, torch.tensor([0, 2, 3])),
        ValueError,
        r"ptr must end at src.size\(0\)=4, got ptr\[-1\]=3",
    ),
    "segment: ptr does not start at 0": (
        lambda: pyg_utils.segment(SRC, torch.tensor([1, 2, 4]), "max"),
        ValueError,
        r"ptr must start at 0",
    ),
    "segment: ptr decreases": (
        lambda: pyg_utils.segment(SRC, torch.tensor([0, 3, 2, 4]), "mean"),
        ValueError,
        r"ptr must be non-decreasing: ptr\[2\]=2 < ptr\[1\]=3",
    ),
    "scatter: index past dim_size": (
        lambda: pyg_utils.scatter(SRC, torch.tensor([0, 5, 1, 2]), 0, 3, "sum"),
        IndexError,
        r"index\[1\]=5 is out of range for dim_size=3",
    ),
    "scatter: negative index": (
        lambda: pyg_utils.scatter(SRC, torch.tensor([0, -1, 1, 2]), 0, None, "max"),
        IndexError,
        r"index\[1\]=-1 is negative",
    ),
    "scatter: negative dim_size": (
        lambda: pyg_utils.scatter(SRC, torch.tensor([0, 0, 1, 2]), 0, -1, "mean"),
        ValueError,
        r"dim_size must be >= 0",
    ),
    "softmax: index past num_nodes": (
        lambda: pyg_utils.softmax(SRC, torch.tensor([0, 4, 1, 1]), num_nodes=3),
        IndexError,
        r"index\[1\]=4 is out of range for num_segments=3",
    ),
    "softmax: ptr ends before src's rows": (
        lambda: pyg_utils.softmax(SRC, ptr=torch.tensor([0, 2, 3])),
        ValueError,
        r"ptr must end at src.size\(0\)=4",
    ),
    "aggregation: ptr ends before x's rows": (_aggregate_with_ptr, ValueError, r"ptr must end at src.size\(0\)=4"),
    "layer: a source past the nodes": (
        lambda: _layer(torch.tensor([[0, 9], [1, 2]])),
        IndexError,
        r"edge_index\[0\]\[1\]=9 is out of range for the number of source nodes=4",
    ),
    "layer: a target past the nodes": (
        lambda: _layer(torch.tensor([[0, 1], [1, 7]])),
        IndexError,
        r"edge_index\[1\]\[1\]=7 is out of range for the number of target nodes=4",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_raises_the_same_error_on_both_sides_of_the_rule(case):
    """Handed back to PyG's code (the shipped rule: these calls are small) or taken by scatterx (``ALWAYS``), the
    same exception and words, and the caller's tensors as they were."""
    call, kind, words = BAD_INPUTS[case]
    before = SRC.clone()
    messages = []
    with sxpyg.enabled():
        for tuning in (pays.TUNING, pays.ALWAYS):
            with pays.tuned(tuning), pytest.raises(kind, match=words) as info:
                call()
            messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert torch.equal(SRC, before)


def test_a_ptr_past_srcs_rows_raises_instead_of_crashing_on_both_sides():
    """PyG's own segment reads outside ``src`` for such a ``ptr`` (torch's ``segment_reduce`` checks nothing: the
    process died with SIGSEGV); both sides of the rule raise. In a child process, where a crash is a result."""
    code = textwrap.dedent(
        """
        import torch, torch_geometric.utils as u
        import scatterx.pyg as sxpyg
        from scatterx.pyg import pays
        src, ptr = torch.randn(3, 2), torch.tensor([0, 2, 2_147_483_653])
        with sxpyg.enabled():
            for tuning in (pays.TUNING, pays.ALWAYS):
                with pays.tuned(tuning):
                    try:
                        u.segment(src, ptr, "sum")
                    except ValueError as e:
                        print("ValueError:", e)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines == ["ValueError: ptr must end at src.size(0)=3, got ptr[-1]=2147483653"] * 2, result.stdout
