"""scatterx.pyg: the switch, and PyG with it on against PyG's default path (outputs and gradients)."""

import contextlib
import inspect
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pyg = pytest.importorskip("torch_geometric")

import torch_geometric  # noqa: E402
import torch_geometric.nn.aggr as aggr  # noqa: E402
import torch_geometric.nn.aggr.base as aggr_base  # noqa: E402
import torch_geometric.nn.aggr.basic as aggr_basic  # noqa: E402
import torch_geometric.utils as pyg_utils  # noqa: E402
import torch_geometric.utils._softmax as pyg_softmax_module  # noqa: E402
from torch_geometric.nn import GATConv, GATv2Conv, GCNConv, GINConv, GraphConv, SAGEConv  # noqa: E402

import scatterx  # noqa: E402
import scatterx.pyg as sxpyg  # noqa: E402
from scatterx.pyg import _common, adjacency, fused, pays, routed  # noqa: E402

ORIGINAL = {
    "scatter": pyg_utils.scatter,
    "segment": pyg_utils.segment,
    "softmax": pyg_utils.softmax,
    "spmm": pyg_utils.spmm,
}


@pytest.fixture(autouse=True)
def switch_off_after():
    """The switch off around each test; within it, every call the switch can take runs on scatterx, whatever its
    size (the tests' graphs are small: the shipped rule would hand them to PyG's code; its own tests are in
    test_pyg_pays.py)."""
    sxpyg.disable()
    with pays.tuned(pays.ALWAYS):
        yield
    sxpyg.disable()


def both_paths(fn):
    """``fn()`` with PyG's default path, then with the switch on."""
    assert not sxpyg.is_enabled()
    default = fn()
    with sxpyg.enabled():
        routed = fn()
    return default, routed


def assert_same(default, routed, atol=1e-5, rtol=1e-4):
    if isinstance(default, (tuple, list)):
        assert len(default) == len(routed)
        for d, r in zip(default, routed):
            assert_same(d, r, atol, rtol)
    else:
        torch.testing.assert_close(routed, default, atol=atol, rtol=rtol)


def value_and_grads(fn, *tensors):
    """fn's output and the gradients of a random projection of it w.r.t. ``tensors`` (and parameters)."""
    out = fn()
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(7), dtype=out.dtype)
    grads = torch.autograd.grad((out * weight).sum(), tensors, allow_unused=True)
    return [out.detach()] + [g if g is not None else torch.zeros(()) for g in grads]


# ------------------------------------------------------------------------------------------------- the switch
def test_enable_patches_every_bound_name_and_disable_restores_them():
    sxpyg.enable()
    assert pyg_utils.scatter is sxpyg.scatter and pyg_utils.softmax is sxpyg.softmax
    # names bound at import time, by `from torch_geometric.utils import scatter, segment`
    assert aggr_base.scatter is sxpyg.scatter and aggr_base.segment is sxpyg.segment
    assert pyg_softmax_module.scatter is sxpyg.scatter and pyg_softmax_module.segment is sxpyg.segment
    assert aggr_basic.softmax is sxpyg.softmax
    assert aggr_base.Aggregation.reduce is routed.aggregation_reduce
    for name, fn in ORIGINAL.items():  # nothing in torch_geometric still holds the original
        assert not [
            m
            for m_name, m in sys.modules.items()
            if m_name.startswith("torch_geometric") and m is not None and any(v is fn for v in vars(m).values())
        ], name
    sxpyg.enable()  # twice: a no-op, disable still restores everything
    sxpyg.disable()
    assert pyg_utils.scatter is ORIGINAL["scatter"] and aggr_base.scatter is ORIGINAL["scatter"]
    assert aggr_basic.softmax is ORIGINAL["softmax"] and pyg_softmax_module.segment is ORIGINAL["segment"]
    assert aggr_base.Aggregation.reduce is _common.ORIGINAL["Aggregation.reduce"]
    assert not sxpyg.is_enabled()


def test_context_manager_restores_the_previous_state():
    with sxpyg.enabled():
        assert sxpyg.is_enabled()
        with sxpyg.enabled():
            assert sxpyg.is_enabled()
        assert sxpyg.is_enabled()  # the inner block found it on and leaves it on
    assert not sxpyg.is_enabled() and pyg_utils.scatter is ORIGINAL["scatter"]
    sxpyg.enable()
    with sxpyg.enabled():
        pass
    assert sxpyg.is_enabled()


def test_layer_propagate_is_wrapped_and_restored_even_for_layers_built_while_on():
    before = {cls: cls.__dict__.get("propagate") for cls in sxpyg.FUSED_CONVS}
    with sxpyg.enabled():
        conv = SAGEConv(4, 3)  # PyG would replace a propagate it did not make itself: it must keep ours
        assert type(conv).propagate.__code__ is SAGEConv.__dict__["propagate"].__code__
        assert SAGEConv.__dict__["propagate"].__qualname__.endswith("routed_propagate.<locals>.propagate")
    for cls, had in before.items():
        assert cls.__dict__.get("propagate") is had
    x, edge_index = torch.randn(5, 4), torch.tensor([[0, 1, 2], [1, 2, 3]])
    SAGEConv(4, 3)(x, edge_index)  # still works with PyG's own propagate


def test_scatterx_imports_without_torch_geometric():
    code = (
        "import sys; sys.modules['torch_geometric'] = None\n"
        "import scatterx\n"
        "assert scatterx.index_scatter_reduce is not None\n"
        "try:\n"
        "    scatterx.pyg\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "pip install 'scatterx[pyg]'" in result.stdout


# --------------------------------------------------------------------------------------- the helpers, routed
REDUCES = ["sum", "add", "mean", "mul", "min", "max"]


@st.composite
def graphs(draw, max_nodes=12, max_edges=40):
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    num_nodes = draw(st.integers(1, max_nodes))
    num_edges = draw(st.integers(0, max_edges))
    index = torch.randint(0, num_nodes, (num_edges,), generator=g)
    if draw(st.booleans()):
        index = index.sort().values
    features = draw(st.integers(1, 5))
    return g, num_nodes, index, features


@settings(max_examples=60)
@given(graphs(), st.sampled_from(REDUCES), st.sampled_from([0, 1, -1]), st.booleans())
def test_scatter_matches_pyg(graph, reduce, dim, given_size):
    g, num_nodes, index, features = graph
    shape = [index.numel(), features] if dim == 0 else [features, index.numel()]
    scale = 0.5 if reduce == "mul" else 1.0
    src = (torch.randn(shape, generator=g, dtype=torch.float64) * scale).requires_grad_()
    dim_size = num_nodes if given_size or index.numel() == 0 else None

    def run():
        return value_and_grads(lambda: pyg_utils.scatter(src, index, dim, dim_size, reduce), src)

    assert_same(*both_paths(run))


@settings(max_examples=40)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=8),
    st.sampled_from(["sum", "mean", "min", "max"]),
    st.integers(1, 4),
    st.integers(0, 2**31 - 1),
)
def test_segment_matches_pyg(lengths, reduce, features, seed):
    ptr = torch.tensor([0] + lengths).cumsum(0)
    src = torch.randn(int(ptr[-1]), features, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    src.requires_grad_()

    def run():
        return value_and_grads(lambda: pyg_utils.segment(src, ptr, reduce), src)

    assert_same(*both_paths(run))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_segment_of_integers_is_pyg_s_at_every_size(dtype, monkeypatch):
    """torch's segment_reduce, which PyG's ``segment`` calls, takes no integer ``src``: the switch hands such a call
    back at every size (it gave a result above the size rule, a mean truncated to an integer, and PyG's error
    below it)."""
    src, ptr = torch.arange(10, dtype=dtype).view(5, 2), torch.tensor([0, 2, 5])
    pyg_error = None
    try:
        pyg_utils.segment(src, ptr, "mean")
    except Exception as error:  # (a PyG or torch that takes it some day: then both sides must agree)
        pyg_error = type(error)
    kernel_calls = []
    monkeypatch.setattr(routed, "segment_reduce", lambda *a, **k: kernel_calls.append(a))
    with sxpyg.enabled():
        for reduce in ("sum", "mean"):
            if pyg_error is None:
                assert_same(pyg_utils.segment(src, ptr, reduce), ORIGINAL["segment"](src, ptr, reduce))
            else:
                with pytest.raises(pyg_error):
                    pyg_utils.segment(src, ptr, reduce)
    assert not kernel_calls


@settings(max_examples=40)
@given(graphs(), st.booleans(), st.sampled_from([0, 1]))
def test_softmax_matches_pyg(graph, use_ptr, dim):
    g, num_nodes, index, features = graph
    index = index.sort().values if use_ptr else index
    shape = [index.numel(), features] if dim == 0 else [features, index.numel()]
    src = torch.randn(shape, generator=g, dtype=torch.float64).mul(3).requires_grad_()
    ptr = scatterx.index_to_ptr(index, num_nodes) if use_ptr else None
    # PyG's default path, by index (with a ptr along dim 1 it needs torch_scatter, which CI does not install)
    default = value_and_grads(lambda: pyg_utils.softmax(src, index, num_nodes=num_nodes, dim=dim), src)
    with sxpyg.enabled():
        if use_ptr:
            routed = value_and_grads(lambda: pyg_utils.softmax(src, ptr=ptr, dim=dim), src)
        else:
            routed = value_and_grads(lambda: pyg_utils.softmax(src, index, num_nodes=num_nodes, dim=dim), src)
    assert_same(default, routed)


def test_softmax_runs_on_scatterx_segment_softmax(monkeypatch):
    calls = []
    real = routed.segment_softmax
    monkeypatch.setattr(
        routed, "segment_softmax", lambda *a, **k: calls.append(k.get("ptr") is not None) or real(*a, **k)
    )
    index = torch.tensor([0, 0, 1, 3])
    src = torch.randn(4, 2)
    with sxpyg.enabled():
        pyg_utils.softmax(src, index, num_nodes=4)
        pyg_utils.softmax(src, ptr=scatterx.index_to_ptr(index, 4))
    assert calls == [False, True]


AGGREGATIONS = [
    aggr.SumAggregation,
    aggr.MeanAggregation,
    aggr.MaxAggregation,
    aggr.MinAggregation,
    aggr.MulAggregation,
    lambda: aggr.SoftmaxAggregation(learn=True),
    lambda: aggr.PowerMeanAggregation(learn=True),
    aggr.StdAggregation,
    aggr.VarAggregation,
]


@pytest.mark.parametrize("make", AGGREGATIONS)
@pytest.mark.parametrize("use_ptr", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_aggregations_match_pyg(make, use_ptr, seed):
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, 9, (40,), generator=g).sort().values
    module = make()
    if use_ptr and isinstance(module, aggr.MulAggregation):
        pytest.skip("MulAggregation takes no ptr")
    x = torch.rand(40, 6, generator=g, dtype=torch.float64).add(0.5).requires_grad_()
    module = module.double()
    ptr = scatterx.index_to_ptr(index, 10) if use_ptr else None
    params = list(module.parameters())

    def run():
        return value_and_grads(lambda: module(x, index, ptr=ptr, dim_size=10), x, *params)

    assert_same(*both_paths(run))


def test_aggregation_with_ptr_runs_the_csr_kernel(monkeypatch):
    calls = []
    real = routed.segment_reduce
    monkeypatch.setattr(routed, "segment_reduce", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    index = torch.tensor([0, 0, 1, 3])
    with sxpyg.enabled():
        aggr.MeanAggregation()(torch.ones(4, 2), index, ptr=scatterx.index_to_ptr(index, 4))
    assert calls == ["mean"]


# ------------------------------------------------------------------------------------------------ layers, routed
def random_graph(seed, num_nodes=30, num_edges=120, sort=False):
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, num_nodes, (2, num_edges), generator=g)
    if sort:
        edge_index = edge_index[:, edge_index[1].argsort(stable=True)]
    return g, edge_index


def mlp(a, b):
    return torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.ReLU(), torch.nn.Linear(b, b))


PYG_VERSION = tuple(int(v) for v in torch_geometric.__version__.split(".")[:2])
#: GATv2Conv's residual connection (PyG 2.6 and later; 2.5 has none)
RESIDUAL = {"residual": True} if "residual" in inspect.signature(GATv2Conv.__init__).parameters else {}

LAYERS = {
    "gcn": lambda: GCNConv(8, 5),
    "sage-mean": lambda: SAGEConv(8, 5),
    "sage-max": lambda: SAGEConv(8, 5, aggr="max"),
    "sage-sum-root-weight-off": lambda: SAGEConv(8, 5, aggr="sum", root_weight=False),
    "gin": lambda: GINConv(mlp(8, 5), train_eps=True),
    "gat": lambda: GATConv(8, 5, heads=2),
    "gatv2": lambda: GATv2Conv(8, 5, heads=3),
    "gatv2-mean-heads-shared": lambda: GATv2Conv(8, 5, heads=2, concat=False, share_weights=True, negative_slope=0.5),
    "gatv2-no-self-loops": lambda: GATv2Conv(8, 5, add_self_loops=False, **RESIDUAL),
    "graphconv": lambda: GraphConv(8, 5, aggr="mean"),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
@pytest.mark.parametrize("seed, sort", [(0, False), (1, True), (2, False)])
def test_layers_match_pyg_outputs_and_gradients(name, seed, sort):
    g, edge_index = random_graph(seed, sort=sort)
    torch.manual_seed(seed)
    layer = LAYERS[name]().double()
    x = torch.randn(30, 8, generator=g, dtype=torch.float64).requires_grad_()
    params = list(layer.parameters())

    def run():
        return value_and_grads(lambda: layer(x, edge_index), x, *params)

    assert_same(*both_paths(run))


def test_bipartite_sage_with_size_matches_pyg():
    g = torch.Generator().manual_seed(4)
    edge_index = torch.stack([torch.randint(0, 7, (25,), generator=g), torch.randint(0, 4, (25,), generator=g)])
    layer = SAGEConv((6, 3), 5).double()
    x_src = torch.randn(7, 6, generator=g, dtype=torch.float64).requires_grad_()
    x_dst = torch.randn(4, 3, generator=g, dtype=torch.float64).requires_grad_()

    def run():
        return value_and_grads(lambda: layer((x_src, x_dst), edge_index, size=(7, 4)), x_src, x_dst)

    default, routed = both_paths(run)
    assert routed[0].shape == (4, 5)
    assert_same(default, routed)


@pytest.mark.parametrize("self_loops", [True, False])
def test_bipartite_gatv2_matches_pyg(self_loops):
    """Sources and targets of their own (more targets than sources), attention weights returned in edge order."""
    g = torch.Generator().manual_seed(6)
    edge_index = torch.stack([torch.randint(0, 5, (30,), generator=g), torch.randint(0, 8, (30,), generator=g)])
    layer = GATv2Conv((6, 4), 3, heads=2, add_self_loops=self_loops).double()
    x_src = torch.randn(5, 6, generator=g, dtype=torch.float64).requires_grad_()
    x_dst = torch.randn(8, 4, generator=g, dtype=torch.float64).requires_grad_()

    def run():
        out, (_, alpha) = layer((x_src, x_dst), edge_index, return_attention_weights=True)
        return value_and_grads(lambda: out, x_src, x_dst) + [alpha.detach()]

    assert_same(*both_paths(run))


def test_fused_layers_run_without_materializing_messages(monkeypatch):
    """SAGE/GIN go through gather_segment_reduce, not through a scatter of gathered rows."""
    calls = []
    real = adjacency.gather_segment_reduce
    monkeypatch.setattr(adjacency, "gather_segment_reduce", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    monkeypatch.setattr(routed, "scatter_pyg", lambda *a, **k: pytest.fail("scatter was called"))
    _, edge_index = random_graph(0)
    x = torch.randn(30, 8)
    with sxpyg.enabled():
        SAGEConv(8, 5)(x, edge_index)
        GINConv(mlp(8, 5))(x, edge_index)
    assert calls == ["mean", "sum"]


def test_gatv2_runs_fused_and_draws_pyg_s_dropout_mask(monkeypatch):
    """GATv2's logits go through gatv2_logits (no edges x heads x channels sum); in training, attention dropout
    draws the same mask as PyG's (same seed, same outputs and gradients); edge_attr and hooks take PyG's code."""
    calls = []
    real = fused.gatv2_logits
    monkeypatch.setattr(fused, "gatv2_logits", lambda *a, **k: calls.append(a[2].shape) or real(*a, **k))
    g, edge_index = random_graph(5)
    x = torch.randn(30, 8, generator=g, dtype=torch.float64).requires_grad_()
    layer = GATv2Conv(8, 4, heads=2, dropout=0.5).double().train()
    params = list(layer.parameters())

    def run():
        torch.manual_seed(11)
        return value_and_grads(lambda: layer(x, edge_index), x, *params)

    assert_same(*both_paths(run))
    assert calls == [(30, 2, 4)]
    calls.clear()
    with_edges = GATv2Conv(8, 4, heads=2, edge_dim=3).double()
    edge_attr = torch.randn(edge_index.size(1), 3, generator=g, dtype=torch.float64)
    with sxpyg.enabled():
        routed_out = with_edges(x, edge_index, edge_attr)
        hooked = GATv2Conv(8, 4).double()
        seen = []
        hooked.register_edge_update_forward_hook(lambda module, inputs, out: seen.append(out.shape))
        hooked(x, edge_index)
    torch.testing.assert_close(routed_out, with_edges(x, edge_index, edge_attr))
    assert calls == [] and len(seen) == 1


def test_hooks_and_explain_keep_pyg_s_own_propagate(monkeypatch):
    monkeypatch.setattr(adjacency, "gather_segment_reduce", lambda *a, **k: pytest.fail("fused path taken"))
    _, edge_index = random_graph(0)
    x = torch.randn(30, 8)
    seen = []
    with sxpyg.enabled():
        conv = SAGEConv(8, 5)
        conv.register_message_forward_hook(lambda module, inputs, out: seen.append(out.shape))
        conv(x, edge_index)
        assert seen == [(120, 8)]  # the hook saw every message
        conv = SAGEConv(8, 5)
        conv.explain = True
        conv._edge_mask = torch.ones(120)
        conv._apply_sigmoid = False
        conv(x, edge_index)


def test_adjacency_cache_follows_in_place_changes_of_edge_index():
    _, edge_index = random_graph(3)
    x = torch.randn(30, 8)
    conv = SAGEConv(8, 5)
    with sxpyg.enabled():
        first = conv(x, edge_index)
        edge_index[1] = edge_index[1].flip(0)  # same tensor, new contents
        second = conv(x, edge_index)
    torch.testing.assert_close(second, conv(x, edge_index))
    assert not torch.allclose(first, second)


def test_bad_edge_index_raises_with_the_switch_on():
    x = torch.randn(5, 4)
    with sxpyg.enabled():
        with pytest.raises(IndexError, match=r"edge_index\[0\]\[1\]=9 .* the number of source nodes=5"):
            SAGEConv(4, 3)(x, torch.tensor([[0, 9], [1, 2]]))  # source out of range
        with pytest.raises(IndexError, match=r"edge_index\[1\]\[1\]=7 .* the number of target nodes=5"):
            SAGEConv(4, 3)(x, torch.tensor([[0, 1], [1, 7]]))  # target out of range
        with pytest.raises(ValueError):
            pyg_utils.scatter(x, torch.zeros(5, 1, dtype=torch.long))  # PyG's own check: a 1-D index


# ------------------------------------------------------------------------------------ fallbacks and aggr= module
def test_unsupported_calls_fall_back_to_pyg():
    index = torch.tensor([0, 1, 0])
    src = torch.tensor([[1, 2], [3, 4], [5, 6]], dtype=torch.uint8)  # a dtype scatterx does not take
    with sxpyg.enabled():
        got = pyg_utils.scatter(src, index, reduce="sum")
        anything = pyg_utils.scatter(src.float(), index, reduce="any")
    assert got.tolist() == [[6, 8], [3, 4]]
    assert anything[1].tolist() == [3.0, 4.0]


@pytest.mark.parametrize(
    "reduce, builtin", [("sum", "sum"), ("mean", "mean"), ("max", "max"), ("min", "min"), ("mul", "mul")]
)
@pytest.mark.parametrize("use_ptr", [False, True])
def test_scatter_aggregation_as_aggr_matches_the_builtin(reduce, builtin, use_ptr):
    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, 6, (30,), generator=g).sort().values
    x = torch.rand(30, 4, generator=g, dtype=torch.float64).add(0.5)
    ptr = scatterx.index_to_ptr(index, 8) if use_ptr and reduce != "mul" else None
    module = sxpyg.ScatterAggregation(reduce)
    want = aggr.MultiAggregation([builtin]).aggrs[0](x, index, ptr=ptr, dim_size=8)
    torch.testing.assert_close(module(x, index, ptr=ptr, dim_size=8), want)
    assert repr(module) == f"ScatterAggregation({reduce!r})"
    _, edge_index = random_graph(1)
    conv = SAGEConv(8, 5, aggr=sxpyg.ScatterAggregation("mean"))
    reference = SAGEConv(8, 5)
    reference.load_state_dict(conv.state_dict())
    x = torch.randn(30, 8)
    torch.testing.assert_close(conv(x, edge_index), reference(x, edge_index))
    with pytest.raises(ValueError, match="unknown reduce"):
        sxpyg.ScatterAggregation("median")


def test_arguments_of_the_wrong_type_are_type_errors_in_both_states():
    """A non-tensor argument, or a float index/ptr, is a TypeError with the switch on and off (PyG's code used to
    leak an AttributeError, a NotImplementedError or a RuntimeError)."""
    src, index, ptr = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 0, 2]), torch.tensor([0, 2, 3])
    adj = torch.eye(3).to_sparse_csr()
    calls = {
        "scatter src": lambda: sxpyg.scatter([1.0, 2.0, 3.0], index),
        "scatter index": lambda: sxpyg.scatter(src, [0, 0, 2]),
        "scatter float index": lambda: sxpyg.scatter(src, index.float()),
        "segment ptr": lambda: sxpyg.segment(src, [0, 2, 3]),
        "segment float ptr": lambda: sxpyg.segment(src, ptr.float()),
        "softmax src": lambda: sxpyg.softmax([1.0, 2.0, 3.0], index),
        "softmax index": lambda: sxpyg.softmax(src, [0, 0, 2]),
        "softmax float ptr": lambda: sxpyg.softmax(src, ptr=ptr.float()),
        "spmm src": lambda: sxpyg.spmm([[1.0]], src[:, None]),
        "spmm other": lambda: sxpyg.spmm(adj, [[1.0], [2.0], [3.0]]),
    }
    for on in (False, True):
        with sxpyg.enabled() if on else contextlib.nullcontext():
            for name, call in calls.items():
                with pytest.raises(TypeError, match="must"):
                    call()
                    pytest.fail(f"{name}: no TypeError (switch {'on' if on else 'off'})")


def test_scatter_aggregation_refuses_bad_arguments():
    x = torch.tensor([[1.0], [2.0], [3.0]])
    with pytest.raises(TypeError, match="reduce must be a string"):
        sxpyg.ScatterAggregation(3)
    with pytest.raises(TypeError, match="reduce must be a string"):
        sxpyg.ScatterAggregation(["sum"])
    module = sxpyg.ScatterAggregation("sum")
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor"):
        module([[1.0]], torch.tensor([0]))
    with pytest.raises(TypeError, match=r"index must be a torch\.Tensor"):
        module(x, [0, 1, 1])
    with pytest.raises(TypeError, match="ptr must have an integer dtype"):
        module(x, ptr=torch.tensor([0.0, 3.0]))
    for reduce in ("sum", "mean", "max", "mul"):  # an index shorter than x used to reduce x's first rows silently
        with pytest.raises(ValueError, match="index has 2 entries but x has 3 rows"):
            sxpyg.ScatterAggregation(reduce)(x, torch.tensor([0, 1]))


# --------------------------------------------------------------------------------------------------- TorchScript
def test_torchscript_of_pyg_code_still_works_with_the_switch_on():
    """TorchScript cannot compile the kernels: scripted PyG code runs PyG's own functions, eager code stays fused."""
    _, edge_index = random_graph(2)
    x = torch.randn(30, 8)
    # built before the switch: PyG 2.5 compiles a class's scriptable propagate when it is first built
    layers = (SAGEConv(8, 5), GINConv(mlp(8, 5)), GCNConv(8, 5))
    with sxpyg.enabled():
        for layer in layers:
            scripted = torch.jit.script(layer)
            torch.testing.assert_close(scripted(x, edge_index), layer(x, edge_index), atol=1e-5, rtol=1e-4)
        assert SAGEConv.propagate in fused.WRAPPERS  # the eager class kept its fused propagate
        module = aggr.MeanAggregation()
        index = edge_index[1].sort().values
        ptr = scatterx.index_to_ptr(index, 30)
        scripted = torch.jit.script(module)
        messages = torch.randn(120, 2)
        if PYG_VERSION >= (2, 6):  # PyG 2.5's own scripted aggregations take no ptr (without torch_scatter)
            torch.testing.assert_close(scripted(messages, ptr=ptr), module(messages, ptr=ptr))
        torch.testing.assert_close(scripted(messages, index, dim_size=30), module(messages, index, dim_size=30))

        @torch.jit.script
        def scripted_scatter(src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
            return pyg_utils.scatter(src, index, 0, 30, "max")

        src = torch.randn(120, 3)
        torch.testing.assert_close(scripted_scatter(src, index), pyg_utils.scatter(src, index, 0, 30, "max"))
    assert not hasattr(aggr_base.Aggregation, "_pyg_reduce")  # disable() removed what enable() added
    assert "__prepare_scriptable__" not in SAGEConv.__dict__


@pytest.mark.parametrize("name", ["sage-mean", "gin", "gcn", "gat"])
@pytest.mark.parametrize("sort_order", ["col", "row", None])
def test_layers_on_an_edge_index_match_pyg(name, sort_order, monkeypatch):
    """An EdgeIndex, sorted or not: a sorted one hands ``ptr`` to the aggregations (CSR kernel), and the fused
    layers use its CSC; an unsorted one is grouped by target as a plain tensor is."""
    from torch_geometric import EdgeIndex

    g, edge_index = random_graph(5)
    edge_index = EdgeIndex(edge_index, sparse_size=(30, 30))
    if sort_order is not None:
        edge_index = edge_index.sort_by(sort_order)[0]
    assert edge_index.is_sorted == (sort_order is not None)
    torch.manual_seed(0)
    layer = LAYERS[name]().double()
    x = torch.randn(30, 8, generator=g, dtype=torch.float64).requires_grad_()
    params = list(layer.parameters())
    built = []
    real = adjacency.edge_index_csc
    monkeypatch.setattr(adjacency, "edge_index_csc", lambda *a: built.append(1) or real(*a))

    def run():
        return value_and_grads(lambda: layer(x, edge_index), x, *params)

    assert_same(*both_paths(run))
    assert built  # every one of these layers is fused (GCN and GAT: weighted), and asks the EdgeIndex first


def test_pyg_index_subclasses_are_read_as_plain_indices():
    """PyG's index subclasses given to the ops directly -- a row of an EdgeIndex, PyG 2.6's Index, a whole
    EdgeIndex as torch.scatter's index -- give the plain tensor's result, sorted or not."""
    from torch_geometric import EdgeIndex

    g, edge_index = random_graph(5)
    src = torch.randn(edge_index.size(1), 3, generator=g)
    rows = [EdgeIndex(edge_index, sparse_size=(30, 30))[1]]
    if hasattr(torch_geometric, "Index"):
        rows.append(torch_geometric.Index(edge_index[1], dim_size=30))
    for index in rows:
        for sorted_ in (False, True):
            given, plain = (index.sort()[0], edge_index[1].sort()[0]) if sorted_ else (index, edge_index[1])
            for reduce in ("sum", "amax"):
                torch.testing.assert_close(
                    scatterx.index_scatter_reduce(0, given, src, reduce, sorted=sorted_),
                    scatterx.index_scatter_reduce(0, plain, src, reduce, sorted=sorted_),
                )
    both = torch.randn(2, edge_index.size(1), generator=g)
    torch.testing.assert_close(
        scatterx.pytorch.scatter_reduce(
            torch.zeros(2, 30), 1, EdgeIndex(edge_index, sparse_size=(30, 30)), both, "sum"
        ),
        torch.zeros(2, 30).scatter_reduce(1, edge_index, both, "sum"),
    )


def test_ptr_reductions_along_a_later_dim():
    """What PyG needs torch_scatter for (and tests with it): softmax and aggregations over a ptr along dim 1 or -1."""
    g = torch.Generator().manual_seed(0)
    with sxpyg.enabled():
        src = torch.randn(4, 16, generator=g)
        ptr = torch.tensor([0, 16])
        torch.testing.assert_close(pyg_utils.softmax(src, ptr=ptr, dim=-1), src.softmax(-1))
        src = torch.randn(4, 4, 16, generator=g)
        ptr = torch.tensor([0, 4])
        torch.testing.assert_close(pyg_utils.softmax(src, ptr=ptr, dim=1), src.softmax(dim=1))
    x = torch.randn(2, 6, 5, generator=g)
    index = torch.tensor([0, 0, 1, 1, 1, 2])
    ptr = torch.tensor([0, 2, 5, 6])
    for module in (aggr.SumAggregation(), aggr.MeanAggregation(), aggr.MaxAggregation()):
        want = module(x, index, dim=1)  # PyG's default path (an index along dim 1 needs no torch_scatter)
        with sxpyg.enabled():
            torch.testing.assert_close(module(x, ptr=ptr, dim=1), want)


def test_fused_layers_under_inference_mode():
    """Inference tensors have no version counter: the adjacency is built without the cache."""
    _, edge_index = random_graph(6)
    conv = SAGEConv(8, 5)
    x = torch.randn(30, 8)
    want = conv(x, edge_index)
    with torch.inference_mode(), sxpyg.enabled():
        inference_edges = edge_index.clone()
        torch.testing.assert_close(conv(x, inference_edges), want)
        torch.testing.assert_close(conv(x, inference_edges), want)


def test_adjacency_cache_entry_goes_with_its_tensor():
    sxpyg.clear_cache()
    _, edge_index = random_graph(7)
    with sxpyg.enabled():
        SAGEConv(8, 5)(torch.randn(30, 8), edge_index)
        assert len(adjacency.CACHE) == 1
        del edge_index
        assert len(adjacency.CACHE) == 0


def test_integer_mean_keeps_pyg_s_exact_division():
    index = torch.tensor([0, 0, 1])
    src = torch.tensor([[1, 2], [2, 5], [7, 7]])
    want = pyg_utils.scatter(src, index, reduce="mean")
    with sxpyg.enabled():
        got = pyg_utils.scatter(src, index, reduce="mean")
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(sxpyg.ScatterAggregation("mean")(src, index), want)


def test_bindings_made_while_on_follow_the_switch():
    """A module that imported PyG's scatter while the switch was on holds scatterx's function: off, it is PyG's."""
    index = torch.tensor([0, 0, 1])
    src = torch.tensor([[1, 2], [2, 5], [7, 7]])
    with sxpyg.enabled():
        from torch_geometric.utils import scatter as bound_while_on
    assert bound_while_on is sxpyg.scatter
    calls = []
    original = _common.ORIGINAL["scatter"]
    _common.ORIGINAL["scatter"] = lambda *a: calls.append(1) or original(*a)
    try:
        bound_while_on(src.float(), index, 0, None, "sum")
    finally:
        _common.ORIGINAL["scatter"] = original
    assert calls == [1]


@pytest.mark.parametrize("name", ["sage-max", "sage-mean", "gin", "gatv2"])
def test_gradient_penalty_through_layers_matches_pyg(name):
    """A double backward (gradient penalty) through the routed layers, max included."""
    g, edge_index = random_graph(8)
    torch.manual_seed(0)
    layer = LAYERS[name]().double()
    x0 = torch.randn(30, 8, generator=g, dtype=torch.float64)

    def run():
        x = x0.clone().requires_grad_()
        (gx,) = torch.autograd.grad(layer(x, edge_index).pow(2).sum(), x, create_graph=True)
        return torch.autograd.grad(gx.pow(2).sum(), [x, *layer.parameters()])

    assert_same(*both_paths(run))


# ------------------------------------------------------------------------------------------ weighted layers, fused
def awkward_graph(seed, num_nodes=12, num_edges=50):
    """Isolated nodes (the last three), self-loops and repeated edges, in random order."""
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, num_nodes - 3, (2, num_edges), generator=g)
    edge_index[1, :5] = edge_index[0, :5]  # self-loops
    edge_index = torch.cat([edge_index, edge_index[:, :6]], 1)  # multi-edges
    return g, edge_index[:, torch.randperm(edge_index.size(1), generator=g)]


WEIGHTED_LAYERS = {
    "gcn": lambda: GCNConv(8, 5),
    "gcn-no-self-loops": lambda: GCNConv(8, 5, add_self_loops=False),
    "gcn-unnormalized": lambda: GCNConv(8, 5, normalize=False),
    "gcn-cached": lambda: GCNConv(8, 5, cached=True),
    "gcn-mean": lambda: GCNConv(8, 5, aggr="mean"),
    "gat": lambda: GATConv(8, 5, heads=3),
    "gat-mean-heads": lambda: GATConv(8, 5, heads=2, concat=False, add_self_loops=False),
    "gat-max": lambda: GATConv(8, 5, heads=2, aggr="max"),
    "graphconv": lambda: GraphConv(8, 5),
    "graphconv-max": lambda: GraphConv(8, 5, aggr="max"),
}


@pytest.mark.parametrize("name", sorted(WEIGHTED_LAYERS))
@pytest.mark.parametrize("with_weight", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_layers_are_fused_and_match_pyg(name, with_weight, seed, monkeypatch):
    """GCN, GAT and GraphConv with the switch on reduce ``weight * x_j`` in gather_segment_reduce (never a
    scatter of materialized messages), with PyG's values and gradients, edge weights' gradients included."""
    g, edge_index = awkward_graph(seed)
    torch.manual_seed(seed)
    layer = WEIGHTED_LAYERS[name]().double()
    x = torch.randn(12, 8, generator=g, dtype=torch.float64).requires_grad_()
    inputs = [x]
    kwargs = {}
    if with_weight and not name.startswith("gat"):
        kwargs["edge_weight"] = torch.rand(edge_index.size(1), generator=g, dtype=torch.float64)
        if name != "gcn-cached":  # a cached normalisation keeps the first call's weights, and their graph
            inputs.append(kwargs["edge_weight"].requires_grad_())
    calls = []
    real = adjacency.gather_segment_reduce
    monkeypatch.setattr(
        adjacency, "gather_segment_reduce", lambda *a, **k: calls.append(k.get("weight") is not None) or real(*a, **k)
    )
    real_scatter = routed.scatter_pyg

    def scatter_no_messages(src, *args):
        assert src.dim() == 1, "messages were scattered"  # GCN's degree count scatters (E,) weights: fine
        return real_scatter(src, *args)

    monkeypatch.setattr(routed, "scatter_pyg", scatter_no_messages)

    def run():
        return value_and_grads(lambda: layer(x, edge_index, **kwargs), *inputs, *layer.parameters())

    default = run()
    with sxpyg.enabled():
        fused_out = run()
        if name == "gcn-cached":
            fused_out = run()  # the cached normalisation: the same edge_index tensor, the adjacency reused
    assert_same(default, fused_out)
    weighted = with_weight or name.startswith("gat") or (name.startswith("gcn") and name != "gcn-unnormalized")
    assert calls and all(c == weighted for c in calls), calls


def test_gat_attention_dropout_draws_pyg_s_random_stream():
    _, edge_index = awkward_graph(3)
    layer = GATConv(8, 4, heads=2, dropout=0.5).double().train()
    x = torch.randn(12, 8, dtype=torch.float64, requires_grad=True)

    def run():
        torch.manual_seed(123)
        return value_and_grads(lambda: layer(x, edge_index), x, *layer.parameters())

    assert_same(*both_paths(run))


def test_bipartite_gat_and_graphconv_with_size_match_pyg():
    g = torch.Generator().manual_seed(4)
    edge_index = torch.stack([torch.randint(0, 7, (25,), generator=g), torch.randint(0, 4, (25,), generator=g)])
    x_src = torch.randn(7, 6, generator=g, dtype=torch.float64).requires_grad_()
    x_dst = torch.randn(4, 3, generator=g, dtype=torch.float64).requires_grad_()
    weight = torch.rand(25, generator=g, dtype=torch.float64).requires_grad_()
    for layer, kwargs in [
        (GATConv((6, 3), 5, heads=2, add_self_loops=False).double(), {}),
        (GraphConv((6, 3), 5).double(), {"edge_weight": weight}),
    ]:

        def run(layer=layer, kwargs=kwargs):
            return value_and_grads(
                lambda: layer((x_src, x_dst), edge_index, size=(7, 4), **kwargs),
                x_src,
                x_dst,
                weight,
                *layer.parameters(),
            )

        assert_same(*both_paths(run))


@pytest.mark.parametrize("layer", ["gcn", "graph"])
def test_propagate_of_one_x_with_a_rectangular_size_matches_pyg(layer):
    """``propagate(edge_index, x=x, size=(sources, targets))`` with one tensor ``x``: the message reads its source
    rows only, so PyG checks no target rows against ``size`` (the fused path checked ``x`` against both)."""
    g = torch.Generator().manual_seed(5)
    edge_index = torch.stack([torch.randint(0, 9, (30,), generator=g), torch.randint(0, 4, (30,), generator=g)])
    x = torch.randn(9, 6, generator=g, dtype=torch.float64).requires_grad_()
    weight = torch.rand(30, generator=g, dtype=torch.float64).requires_grad_()
    conv = (GCNConv(6, 6, normalize=False) if layer == "gcn" else GraphConv(6, 6)).double()
    for kwargs in ({"edge_weight": weight}, {"edge_weight": None}):

        def run(kwargs=kwargs):
            out = conv.propagate(edge_index, x=x, size=(9, 4), **kwargs)
            assert out.shape == (4, 6)
            return value_and_grads(lambda: out, x, weight)

        assert_same(*both_paths(run))


def test_weighted_layer_gradient_penalty_matches_pyg():
    g, edge_index = awkward_graph(6)
    torch.manual_seed(0)
    layer = GATConv(8, 5, heads=2).double()
    x0 = torch.randn(12, 8, generator=g, dtype=torch.float64)

    def run():
        x = x0.clone().requires_grad_()
        (gx,) = torch.autograd.grad(layer(x, edge_index).pow(2).sum(), x, create_graph=True)
        return torch.autograd.grad(gx.pow(2).sum(), [x, *layer.parameters()])

    assert_same(*both_paths(run))


def test_weighted_layers_fall_back_where_the_fused_path_does_not_apply(monkeypatch):
    """A weight of another dtype (PyG promotes), 3-D node features, a subclass with its own message: PyG's code."""
    monkeypatch.setattr(adjacency, "gather_segment_reduce", lambda *a, **k: pytest.fail("fused path taken"))
    _, edge_index = awkward_graph(2)
    x = torch.randn(12, 8)

    class Scaled(GCNConv):
        def message(self, x_j, edge_weight):
            return 2 * super().message(x_j, edge_weight)

    with sxpyg.enabled():
        GCNConv(8, 5, normalize=False)(x, edge_index, torch.rand(edge_index.size(1), dtype=torch.float64))
        Scaled(8, 5)(x, edge_index)
        GraphConv(8, 5)(torch.randn(2, 12, 8), edge_index)
