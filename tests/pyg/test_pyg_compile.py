"""The switch inside ``torch.compile``: the fused layers and routed reductions traced as scatterx's ops, in PyG's
own graphs (no break of ours), trained to eager's losses and gradients, compiled once across steps of the same
shapes; ``max-autotune-no-cudagraphs``; dynamic shapes, traced again only where a size crosses the rule.

torch.compile is slow to run: few tests, tiny graphs. Every call the switch can take runs on scatterx here
(``pays.ALWAYS``) unless a test says otherwise."""

import pytest

pytest.importorskip("torch_geometric")

import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

import scatterx.pyg as sxpyg
from scatterx.pyg import pays


@pytest.fixture(autouse=True)
def switch_on():
    sxpyg.disable()
    sxpyg.clear_cache()
    torch._dynamo.reset()
    with sxpyg.enabled(), pays.tuned(pays.ALWAYS):
        yield
    torch._dynamo.reset()


class Stack(torch.nn.Module):
    """Layers applied in turn on one graph, ReLU between them."""

    def __init__(self, *layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x, edge_index):
        for i, layer in enumerate(self.layers):
            x = layer(x, edge_index) if i == 0 else layer(F.relu(x), edge_index)
        return x


MODELS = {
    "gcn": lambda: Stack(GCNConv(8, 8), GCNConv(8, 4)),
    "sage": lambda: Stack(SAGEConv(8, 8, aggr="mean"), SAGEConv(8, 4, aggr="mean")),
    "gin": lambda: Stack(GINConv(torch.nn.Linear(8, 8)), GINConv(torch.nn.Linear(8, 4))),
    "gat": lambda: Stack(GATConv(8, 4, heads=2), GATConv(8, 4, heads=1)),
}
#: the op each model's message passing traces to
OPS = {
    "gcn": "weighted_gather_segment_reduce",
    "sage": "adjacency_matmul",
    "gin": "adjacency_matmul",
    "gat": "weighted_gather_segment_reduce",
}


def graph(nodes=40, edges=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(nodes, 8, generator=g), torch.randint(0, nodes, (2, edges), generator=g)


def build(name):
    torch.manual_seed(0)
    return MODELS[name]()


def explain(model, *args):
    torch._dynamo.reset()
    result = torch._dynamo.explain(model)(*args)
    torch._dynamo.reset()
    return result


@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_layers_trace_scatterx_ops_into_pygs_own_graphs(name):
    """As many graphs and breaks as PyG's own model (SAGE and GIN: one graph; GCN and GAT: PyG breaks where its
    self-loops are masked), with the layers' message passing as scatterx's op in them."""
    model, (x, edge_index) = build(name), graph()
    on = explain(model, x, edge_index)
    sxpyg.disable()
    off = explain(model, x, edge_index)
    assert (on.graph_count, on.graph_break_count) == (off.graph_count, off.graph_break_count)
    if name in ("sage", "gin"):
        assert (on.graph_count, on.graph_break_count) == (1, 0)
    code = "".join(g.code for g in on.graphs)
    assert f"torch.ops.scatterx.{OPS[name]}" in code
    assert "scatterx" not in "".join(g.code for g in off.graphs)


def test_one_graph_for_self_loop_layers_where_pyg_traces_its_mask():
    """With ``capture_dynamic_output_shape_ops`` PyG's own GCN and GAT trace whole (their edge count after the
    self-loop mask is known only at run time); so do they with the switch on. The rule, which cannot read that
    count, takes the source rows in its place: a threshold above them hands the layers back to PyG's code."""
    torch._dynamo.config.capture_dynamic_output_shape_ops = True
    try:
        x, edge_index = graph()
        for name in ("gcn", "gat"):
            result = explain(build(name), x, edge_index)
            assert (result.graph_count, result.graph_break_count) == (1, 0)
            assert f"torch.ops.scatterx.{OPS[name]}" in result.graphs[0].code
        with pays.tuned(fused_min_edges=x.size(0) + 1, fused_min_elements=1 << 40, softmax_min_elements=1 << 40):
            result = explain(build("gcn"), x, edge_index)  # 300 + 40 edges, but 40 source rows
        assert (result.graph_count, result.graph_break_count) == (1, 0)
        assert "weighted_gather_segment_reduce" not in result.graphs[0].code
    finally:
        torch._dynamo.config.capture_dynamic_output_shape_ops = False


def _train(model, steps, x, edge_index, y):
    """(losses, gradients of the last step) of ``steps`` SGD steps."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x, edge_index), y)
        loss.backward()
        losses.append(loss.detach())
        optimizer.step()
    return torch.stack(losses), [p.grad.clone() for p in model.parameters()]


def _steps(model, x, edge_index, y, steps=3):
    """(losses, gradients at the last step) of ``steps`` SGD steps; and the graphs compiled during the first step
    and during the later ones."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, compiled = [], []
    for _ in range(steps):
        counters.clear()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x, edge_index), y)
        loss.backward()
        losses.append(loss.detach())
        optimizer.step()
        compiled.append(counters["stats"]["unique_graphs"])
    return torch.stack(losses), [p.grad.clone() for p in model.parameters()], compiled


def _compiled_as_eager(make, x, edge_index, y, **compile_args):
    """Three training steps of ``torch.compile(make(), **compile_args)`` give eager's losses and gradients (the
    switch on in both), and nothing is compiled after the first step."""
    want_losses, want_grads, _ = _steps(make(), x, edge_index, y)
    model = make()
    losses, grads, compiled = _steps(torch.compile(model, **compile_args), x, edge_index, y)
    assert compiled[0] >= 1 and compiled[1:] == [0, 0], f"graphs compiled at each step: {compiled}"
    torch.testing.assert_close(losses, want_losses, rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, want_grads):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def _labels(x):
    return torch.randint(0, 4, (x.size(0),), generator=torch.Generator().manual_seed(1))


def test_compiled_training_equals_eager_and_compiles_once():
    """GCN (its normalisation's routed scatter, the weighted op), GAT (the routed softmax, attention per head) and
    SAGE (the edge list's cached CSR) in one model, one graph (no self-loops: PyG's mask of them breaks it), in
    inductor's ``max-autotune-no-cudagraphs`` mode."""
    x, edge_index = graph()

    def make():
        torch.manual_seed(0)
        return Stack(GCNConv(8, 8, add_self_loops=False), GATConv(8, 4, heads=2, add_self_loops=False), SAGEConv(8, 4))

    _compiled_as_eager(make, x, edge_index, _labels(x), fullgraph=True, mode="max-autotune-no-cudagraphs")


def test_dynamic_shapes_trace_again_only_where_a_batch_crosses_the_rule():
    """Mini-batches of varying size under ``dynamic=True``: one graph on each side of the rule's edge threshold
    (its guard), none more for further sizes, and each batch's output and gradient eager's."""
    torch.manual_seed(0)
    model = build("sage")
    compiled = torch.compile(model, dynamic=True, fullgraph=True)
    batches = [(30, 200), (45, 330), (38, 260), (52, 400), (33, 240)]  # (nodes, edges): below, above, ...
    with pays.tuned(fused_min_edges=250, fused_min_elements=1 << 40):
        counters.clear()
        for i, (nodes, edges) in enumerate(batches):
            x, edge_index = graph(nodes, edges, seed=i)
            x.requires_grad_(True)
            got = compiled(x, edge_index)
            (got_grad,) = torch.autograd.grad(got.square().sum(), x)
            want = model(x, edge_index)
            (want_grad,) = torch.autograd.grad(want.square().sum(), x)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(got_grad, want_grad, rtol=1e-5, atol=1e-6)
    assert counters["stats"]["unique_graphs"] == 2
