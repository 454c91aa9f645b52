"""The fused layers' CSR adjacency (``scatterx/pyg/adjacency.py``): an edge list already grouped by target -- a
neighbour sampler's batch -- is its own CSR (one validating pass, no permutation, no copy of the sources), and the
layers give on it exactly what they give on the same edges in any order."""

import pytest

pytest.importorskip("torch_geometric")

import torch
from torch_geometric.nn import GATConv, GATv2Conv, GCNConv, GINConv, GraphConv, SAGEConv

import scatterx.pyg as sxpyg
from scatterx.pyg import adjacency, pays


@pytest.fixture(autouse=True)
def switch_off_after():
    """Every fused call on scatterx whatever its size (these graphs are small), the switch off afterwards."""
    sxpyg.disable()
    sxpyg.clear_cache()
    with pays.tuned(pays.ALWAYS):
        yield
    sxpyg.disable()


def shuffled_and_sorted(seed, num_sources=40, num_targets=30, num_edges=300):
    """A random edge list and the same edges stably sorted by target (what a sampler hands out: each target's
    edges in the order the shuffled list has them, so both group into the same CSR)."""
    g = torch.Generator().manual_seed(seed)
    shuffled = torch.stack(
        [
            torch.randint(0, num_sources, (num_edges,), generator=g),
            torch.randint(0, num_targets, (num_edges,), generator=g),
        ]
    )
    return shuffled, shuffled[:, shuffled[1].argsort(stable=True)]


def test_a_sorted_edge_list_is_its_own_csr():
    shuffled, ordered = shuffled_and_sorted(0)
    adj = adjacency.adjacency(ordered, 40, 30, -2)
    assert adj.edges is None
    assert torch.equal(adj.col, ordered[0])
    assert torch.equal(
        adj.ptr, torch.cat([torch.zeros(1, dtype=torch.long), ordered[1].bincount(minlength=30).cumsum(0)])
    )
    for other in (ordered.t().contiguous().t(), ordered.int()):  # rows of another layout, int32
        again = adjacency.adjacency(other, 40, 30, -2)
        assert again.edges is None and torch.equal(again.ptr, adj.ptr) and torch.equal(again.col.long(), adj.col)
    grouped = adjacency.adjacency(shuffled, 40, 30, -2)
    assert grouped.edges is not None
    assert torch.equal(grouped.ptr, adj.ptr) and torch.equal(grouped.col, adj.col)


def test_a_list_sorted_only_at_its_head_is_grouped():
    """Sorted over more than the probe, then one decrease: the validating pass finds it and the list is grouped."""
    n = adjacency.SORTED_PROBE + 500
    target = torch.cat([torch.arange(n - 1) // 2, torch.tensor([0])])
    source = torch.arange(n) % 7
    edge_index = torch.stack([source, target])
    adj = adjacency.adjacency(edge_index, 7, n, -2)
    assert adj.edges is not None
    order = target.argsort(stable=True)
    assert torch.equal(adj.col, source[order]) and torch.equal(adj.edges, order)


def test_a_sorted_list_out_of_range_raises_with_pyg_s_names():
    with pytest.raises(IndexError, match=r"edge_index\[1\]\[2\]=9 .* the number of target nodes=5"):
        adjacency.adjacency(torch.tensor([[0, 1, 2], [1, 2, 9]]), 5, 5, -2)
    with pytest.raises(IndexError, match=r"edge_index\[1\]\[0\]=-1 is negative"):
        adjacency.adjacency(torch.tensor([[0, 1, 2], [-1, 2, 3]]), 5, 5, -2)


def test_the_cache_entry_of_a_sorted_list_goes_with_its_tensor():
    """The adjacency keeps the sources without a view of ``edge_index`` (which would keep it alive)."""
    _, ordered = shuffled_and_sorted(1)
    adjacency.adjacency(ordered, 40, 30, -2)
    assert len(adjacency.CACHE) == 1
    del ordered
    assert len(adjacency.CACHE) == 0


LAYERS = {
    "sage-mean": lambda: SAGEConv((8, 8), 5),
    "sage-max": lambda: SAGEConv((8, 8), 5, aggr="max"),
    "gin": lambda: GINConv(torch.nn.Linear(8, 5), train_eps=True),
    "graphconv": lambda: GraphConv((8, 8), 5, aggr="mean"),
    "gcn": lambda: GCNConv(8, 5, add_self_loops=False, normalize=False),
    "gat": lambda: GATConv((8, 8), 5, heads=2, add_self_loops=False),
    "gatv2": lambda: GATv2Conv((8, 8), 5, heads=2, add_self_loops=False),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_give_the_same_outputs_and_gradients_on_sorted_and_shuffled_edges(name):
    shuffled, ordered = shuffled_and_sorted(2, num_sources=30)
    torch.manual_seed(0)
    layer = LAYERS[name]().double()
    x = torch.randn(30, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).requires_grad_()
    params = list(layer.parameters())

    def run(edge_index):
        with sxpyg.enabled():
            out = layer(x, edge_index)
        weight = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(7))
        grads = torch.autograd.grad((out * weight).sum(), [x, *params], allow_unused=True)
        return [out.detach()] + [g for g in grads if g is not None]

    on_shuffled, on_sorted = run(shuffled), run(ordered)
    built = {key[0]: entry[2] for key, entry in adjacency.CACHE.items()}  # fused both times; the sorted one as is
    assert built[id(shuffled)].edges is not None and built[id(ordered)].edges is None
    for a, b in zip(on_shuffled, on_sorted):
        torch.testing.assert_close(b, a, atol=1e-12, rtol=1e-12)  # per-edge terms summed in another order
    default = layer(x, ordered)  # and PyG's own path agrees
    torch.testing.assert_close(on_sorted[0], default.detach())


# ---------------------------------------------------------------------------------- under torch.compile: the op
def _adjacency_matmul_reference(x, edge_index, num_sources, num_targets, reduce, transposed):
    """Edge by edge with torch's index_add: each edge's source row into its target, or (transposed) its target's
    row -- divided by the target's count for a mean -- into its source."""
    source, target = edge_index
    counts = torch.bincount(target, minlength=num_targets).clamp(min=1).to(x.dtype).view(-1, 1)
    if not transposed:
        out = x.new_zeros(num_targets, x.size(1)).index_add(0, target, x[source])
        return out / counts if reduce == "mean" else out
    rows = x / counts if reduce == "mean" else x
    return x.new_zeros(num_sources, x.size(1)).index_add(0, source, rows[target])


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_adjacency_matmul_and_its_gradients(reduce):
    """``scatterx::adjacency_matmul``, what a compiled layer's sum or mean becomes: ``A @ x`` and ``A.T @ x``
    against torch's index_add; gradcheck and gradgradcheck in float64 (each direction's gradient is the other);
    opcheck; the edge list's CSR structure built once for all the calls."""
    shuffled, _ = shuffled_and_sorted(4, num_sources=20, num_targets=15, num_edges=60)
    g = torch.Generator().manual_seed(5)
    builds = []
    real_by_target = adjacency.by_target

    def counting_by_target(*args):
        builds.append(1)
        return real_by_target(*args)

    adjacency.by_target = counting_by_target
    try:
        for transposed, rows in ((False, 20), (True, 15)):
            x = torch.randn(rows, 3, dtype=torch.float64, generator=g, requires_grad=True)
            args = (shuffled, 20, 15, reduce, transposed)
            torch.testing.assert_close(
                adjacency.adjacency_matmul(x, *args), _adjacency_matmul_reference(x, *args), rtol=1e-12, atol=1e-12
            )
            assert torch.autograd.gradcheck(adjacency.adjacency_matmul, (x, *args))
            assert torch.autograd.gradgradcheck(adjacency.adjacency_matmul, (x, *args))
        assert len(builds) == 1
    finally:
        adjacency.by_target = real_by_target
    torch.library.opcheck(
        torch.ops.scatterx.adjacency_matmul.default, (torch.randn(20, 3), shuffled, 20, 15, reduce, False)
    )


def test_adjacency_matmul_refuses_bad_input():
    x, edge_index = torch.randn(5, 2), torch.tensor([[0, 9], [1, 2]])
    with pytest.raises(IndexError, match=r"edge_index\[0\]\[1\]=9 is out of range for the number of source nodes=5"):
        adjacency.adjacency_matmul(x, edge_index, 5, 5, "sum", False)
    with pytest.raises(ValueError, match="x must have 6 rows"):
        adjacency.adjacency_matmul(x, torch.tensor([[0, 1], [1, 2]]), 6, 5, "sum", False)
    with pytest.raises(ValueError, match="reduce a sum or mean"):
        adjacency.adjacency_matmul(x, torch.tensor([[0, 1], [1, 2]]), 5, 5, "amax", False)
