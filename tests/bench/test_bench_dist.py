"""scatterx bench-dist on a tiny graph: 1 and 2 processes train to the same losses, the bytes sent are the
pre-aggregation lower bound (plus the agreement messages), and the table reports the goals."""

from scatterx.bench import dist
from scatterx.bench.gnn import GnnConfig


def test_two_processes_train_like_one_and_send_the_lower_bound():
    config = GnnConfig.for_graph("cora", nodes=300, edges=2000, features=8, hidden=8, threads=2)
    results = dist.run(config, [1, 2], epochs=3, models=("sage", "gcn"), log=lambda *_: None)
    for one, two in (results[:2], results[2:]):
        assert one.bytes_sent == 0 and one.lower_bound == 0
        assert dist.max_rel_diff(two.loss, one.loss) <= dist.LOSS_RTOL
        assert one.loss[-1] < one.loss[0]  # it trains
        assert two.bytes_sent == two.lower_bound > 0  # one row per (rank, distinct remote target), no more
        assert 0 < two.control_bytes < two.bytes_sent
        assert len(two.peak_rss_mib) == 2
    text = dist.table(config, results)
    for model in ("sage", "gcn"):
        assert f"{model} on 2 processes: bytes sent / lower bound" in text
        assert f"{model} on 2 processes: max relative loss difference from 1 process" in text
        assert f"{model} on 2 processes: epoch time / 1 process's" in text


def test_distributed_gcn_is_pyg_s_gcn():
    """DistGcn on one process computes PyG's two GCNConv layers (self-loops, symmetric normalisation)."""
    import pytest
    import torch

    torch_geometric = pytest.importorskip("torch_geometric")
    from torch_geometric.nn import GCNConv

    from scatterx import distributed as sxd

    g = torch.Generator().manual_seed(0)
    n, e = 12, 40
    edge_index = torch.randint(0, n, (2, e), generator=g)
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]  # PyG's gcn_norm adds self-loops to every node
    x = torch.randn(n, 5, generator=g)
    model = dist.DistGcn(5, 4, 3)
    first, second = GCNConv(5, 4), GCNConv(4, 3)
    with torch.no_grad():
        first.lin.weight.copy_(model.lin1.weight)
        second.lin.weight.copy_(model.lin2.weight)
        model.bias1.copy_(torch.randn(4, generator=g))
        model.bias2.copy_(torch.randn(3, generator=g))
        first.bias.copy_(model.bias1)
        second.bias.copy_(model.bias2)
    part = sxd.NodePartition.even(n, 1)
    got = model(x, edge_index[0], sxd.plan(edge_index[1], part), part)
    want = second(first(x, edge_index).relu(), edge_index)
    torch.testing.assert_close(got, want)
