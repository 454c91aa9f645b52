"""``scatterx.pyg_lib.install()``: PyG's loaders that need pyg-lib run on a fresh interpreter (the way a user
starts), PyG imported first still gets the drop-in, and ``uninstall()`` puts everything back."""

import copy
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import scatterx.pyg_lib

torch_geometric = pytest.importorskip("torch_geometric")

REPO_ROOT = Path(__file__).resolve().parents[2]

LOADERS = textwrap.dedent(
    """
    import scatterx.pyg_lib
    scatterx.pyg_lib.install()
    import torch
    import torch_geometric.typing
    from torch_geometric.data import Data, HeteroData
    from torch_geometric.loader import ClusterData, ClusterLoader, LinkNeighborLoader, NeighborLoader
    from torch_geometric.nn import Node2Vec

    assert torch_geometric.typing.WITH_PYG_LIB and torch_geometric.typing.WITH_METIS
    torch.manual_seed(0)
    n = 200
    edge_index = torch.randint(0, n, (2, 2000))
    data = Data(x=torch.randn(n, 8), edge_index=edge_index, y=torch.randint(0, 3, (n,)))

    batch = next(iter(NeighborLoader(data, num_neighbors=[5, 3], batch_size=16, shuffle=True)))
    src, dst = batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]]
    edges = set(zip(*edge_index.tolist()))
    assert all(e in edges for e in zip(src.tolist(), dst.tolist()))
    assert batch.batch_size == 16 and bool((batch.edge_index[1][1:] >= batch.edge_index[1][:-1]).all())
    print("NeighborLoader", batch.num_nodes, batch.num_edges)

    link = next(iter(LinkNeighborLoader(data, num_neighbors=[4, 2], batch_size=8, neg_sampling_ratio=1.0)))
    assert link.edge_label.numel() == 16
    print("LinkNeighborLoader", link.num_nodes)

    hetero = HeteroData()
    hetero["paper"].x = torch.randn(60, 4)
    hetero["author"].x = torch.randn(30, 4)
    writes = torch.stack([torch.randint(0, 30, (200,)), torch.randint(0, 60, (200,))])
    hetero["author", "writes", "paper"].edge_index = writes
    hetero["paper", "rev_writes", "author"].edge_index = writes.flip(0)
    hetero["paper", "cites", "paper"].edge_index = torch.randint(0, 60, (2, 300))
    hb = next(iter(NeighborLoader(hetero, num_neighbors=[4, 2], input_nodes="paper", batch_size=8)))
    assert hb["paper"].batch_size == 8 and hb["author", "writes", "paper"].edge_index.size(1) > 0
    print("NeighborLoader on HeteroData", hb["paper"].num_nodes, hb["author"].num_nodes)

    undirected = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    parts = ClusterData(Data(x=data.x, edge_index=undirected), num_parts=4, log=False)
    cluster_batch = next(iter(ClusterLoader(parts, batch_size=2)))
    assert 0 < cluster_batch.num_nodes < n
    print("ClusterLoader", cluster_batch.num_nodes)

    model = Node2Vec(undirected, embedding_dim=8, walk_length=5, context_size=3, num_nodes=n)
    pos, neg = next(iter(model.loader(batch_size=16)))
    assert pos.size(1) == 3 and float(model.loss(pos, neg)) > 0
    print("Node2Vec", tuple(pos.shape))
    """
)


def test_pygs_loaders_run_on_a_fresh_interpreter():
    proc = subprocess.run(
        [sys.executable, "-c", LOADERS], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("NeighborLoader", "LinkNeighborLoader", "HeteroData", "ClusterLoader", "Node2Vec"):
        assert name in proc.stdout


def test_pyg_imported_first_gets_the_drop_in_and_uninstall_restores_it():
    import torch
    import torch_geometric.loader.utils as loader_utils
    import torch_geometric.typing as pyg_typing
    import torch_geometric.utils._softmax as pyg_softmax

    before = (pyg_typing.WITH_PYG_LIB, pyg_typing.WITH_SOFTMAX, pyg_softmax.pyg_lib)
    gather = loader_utils.index_select
    if before[0]:
        pytest.skip("a real pyg-lib is installed: the drop-in never replaces it")
    try:
        assert scatterx.pyg_lib.install() is scatterx.pyg_lib
        assert sys.modules["pyg_lib"] is scatterx.pyg_lib and scatterx.pyg_lib.is_installed()
        assert pyg_typing.WITH_PYG_LIB and pyg_typing.WITH_SOFTMAX and pyg_softmax.pyg_lib is scatterx.pyg_lib
        assert scatterx.pyg_lib.install() is scatterx.pyg_lib  # again: nothing changes
        # the loader's feature gather: the same values, into memory of its own
        x, index = torch.randn(50, 3), torch.tensor([4, 0, 4, 49])
        assert loader_utils.index_select is not gather
        assert torch.equal(loader_utils.index_select(x, index), x[index])
        assert torch.equal(loader_utils.index_select(x, index, dim=-2), x[index])
        # features that require grad (learnt, or computed upstream): gathered as PyG does, differentiably
        learnt = x.clone().requires_grad_()
        gathered = loader_utils.index_select(learnt, index)
        assert gathered.grad_fn is not None and torch.equal(gathered, x[index])
        # a sampler pickled or copied after uninstall() must not install the drop-in again
        from torch_geometric.data import Data
        from torch_geometric.sampler import NeighborSampler

        sampler = NeighborSampler(Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2), num_neighbors=[1])
    finally:
        scatterx.pyg_lib.uninstall()
    assert (pyg_typing.WITH_PYG_LIB, pyg_typing.WITH_SOFTMAX, pyg_softmax.pyg_lib) == before
    assert loader_utils.index_select is gather
    assert "pyg_lib" not in sys.modules and not scatterx.pyg_lib.is_installed()
    copy.deepcopy(sampler)
    pickle.loads(pickle.dumps(sampler))
    assert "pyg_lib" not in sys.modules and not scatterx.pyg_lib.is_installed()
