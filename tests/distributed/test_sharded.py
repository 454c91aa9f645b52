"""PyG models trained on a ShardedGraph over real gloo processes against the single-process run (switch on):
the same losses, the same gradients (float64), for every supported layer, even and METIS partitions, loaded from
shard files; and the bad inputs that must raise the same exception on every rank."""

import os
import shutil

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("torch_geometric")

from ranks import expect_raises, free_port, run_ranks

import scatterx.pyg as sxpyg
from scatterx import distributed as sxd
from scatterx.bench.gnn.full_graph import GnnConfig, build_model, make_arxiv_like
from scatterx.distributed.partition_graph import cut_stats, partition_graph

MODELS = ("gcn", "sage", "gin", "gat", "gatv2", "graphconv")
CONFIG = GnnConfig.for_graph("cora", nodes=120, edges=700, features=6, hidden=8, classes=3)
EPOCHS = 2
LOSS_RTOL = 1e-5


def graph():
    return make_arxiv_like(CONFIG)


def edge_weight(data):
    return torch.rand(data.edge_index.size(1), generator=torch.Generator().manual_seed(5)) + 0.5


def save(tmp_path, world, method):
    data = graph()
    gp = partition_graph(data.edge_index, CONFIG.nodes, world, method)
    out = str(tmp_path / f"{method}-{world}")
    sxd.save_shards(
        out,
        gp,
        data.edge_index,
        x=data.x,
        y=data.y,
        masks={"train_mask": data.train_mask},
        edge_attrs={"edge_weight": edge_weight(data)},
    )
    return out


def train(model, optimizer, x, edge_index, y, mask, share, epochs, *more):
    """Losses (global: each rank's local mean weighted by its share, summed over the ranks; share 1: this
    process's alone) and the first step's gradients."""
    losses, first_grads = [], None
    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x, edge_index, *more)[mask], y[mask])
        loss.backward()
        total = loss.detach() * share
        if share != 1.0 and torch.distributed.is_initialized():
            torch.distributed.all_reduce(total)
        optimizer.step()  # replicate()'s hook has summed the gradients first
        if epoch == 0:
            first_grads = [p.grad.clone() for p in model.parameters()]
        losses.append(float(total))
    return losses, first_grads


def check_training(rank, world, dirs, dtype):
    data = graph()
    failures = []
    with sxpyg.enabled():
        for method, path in dirs.items():
            shard = sxd.load_shard(path)
            x, y = shard.x.to(dtype), shard.y
            for name in MODELS:
                torch.manual_seed(0)
                reference = build_model(name, CONFIG).to(dtype)
                torch.manual_seed(0)
                model = build_model(name, CONFIG).to(dtype)
                want, want_grads = train(
                    reference,
                    torch.optim.Adam(reference.parameters(), lr=0.05),
                    data.x.to(dtype),
                    data.edge_index,
                    data.y,
                    data.train_mask,
                    1.0,
                    EPOCHS,
                )
                optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
                sxd.replicate(model, optimizer, weight=shard.train_share)
                got, got_grads = train(
                    model, optimizer, x, shard.edge_index, y, shard.train_mask, shard.train_share, EPOCHS
                )
                case = f"{method} {name} {dtype}"
                rel = max(abs(a - b) / abs(b) for a, b in zip(got, want))
                if rel > (1e-12 if dtype is torch.float64 else LOSS_RTOL):
                    failures.append(f"{case}: losses {got} vs single process {want} (rel {rel:.1e})")
                if got[-1] >= got[0]:
                    failures.append(f"{case}: does not train: {got}")
                if dtype is torch.float64:
                    for (pname, _), a, b in zip(model.named_parameters(), got_grads, want_grads):
                        if not torch.allclose(a, b, rtol=1e-9, atol=1e-12):
                            failures.append(f"{case}: gradient of {pname} differs by {(a - b).abs().max():.1e}")
            # per-edge weights saved with the shards, in the shard's edge order; the layer called with keywords
            from torch_geometric.nn import GCNConv, GraphConv

            for layer in (GCNConv, GraphConv):
                torch.manual_seed(0)
                reference = layer(CONFIG.features, CONFIG.classes).to(dtype)
                torch.manual_seed(0)
                conv = layer(CONFIG.features, CONFIG.classes).to(dtype)
                want = reference(data.x.to(dtype), data.edge_index, edge_weight(data).to(dtype))
                got = conv(x=x, edge_index=shard.edge_index, edge_weight=shard.edge_weight.to(dtype))
                if not torch.allclose(got, want[shard.node_ids], rtol=1e-5, atol=1e-6):
                    failures.append(
                        f"{method} {layer.__name__} with edge weights: differs by "
                        f"{(got - want[shard.node_ids]).abs().max():.1e}"
                    )
    assert not failures, f"rank {rank} of {world}:\n" + "\n".join(failures)


@pytest.mark.parametrize("world", [1, 2])
def test_pyg_models_on_shards_train_as_one_process(tmp_path, world):
    dirs = {method: save(tmp_path, world, method) for method in ("even", "metis")}
    if world == 1:  # the same code in this process, without torch.distributed
        check_sharded(0, 1, dirs)
    else:
        run_ranks(check_sharded, world, dirs)


def check_sharded(rank, world, dirs):
    check_training(rank, world, dirs, torch.float32)
    check_training(rank, world, {"metis": dirs["metis"]}, torch.float64)


def check_bad_input(rank, world, good, other, missing, corrupt):
    """Each bad input is on the last rank only; every rank must raise the same exception, not hang, and leave the
    user's tensors as they were."""
    last = rank == world - 1
    failures = []

    def expect(name, error, match, call):
        expect_raises(failures, name, error, match, call)

    expect(
        "a missing shard file",
        FileNotFoundError,
        rf"rank {world - 1}: the shard file .* is missing",
        lambda: sxd.load_shard(missing),
    )
    expect(
        "shards of another partition", ValueError, "the ranks disagree", lambda: sxd.load_shard(other if last else good)
    )
    expect(
        "shards for another world size",
        ValueError,
        "shards for 1 ranks, but the process group has",
        lambda: sxd.load_shard(os.path.join(os.path.dirname(good), "even-1")),
    )
    expect(
        "a corrupt shard file",
        ValueError,
        rf"rank {world - 1}: cannot read the shard of rank {world - 1}",
        lambda: sxd.load_shard(corrupt),
    )
    shard = sxd.load_shard(good)
    from torch_geometric.nn import GINEConv, SAGEConv

    torch.manual_seed(1 if last else 0)
    model = SAGEConv(CONFIG.features, 4)
    expect(
        "parameters differ",
        ValueError,
        "parameters differ between rank 0 and rank 1 .first: lin_l.weight",
        lambda: sxd.replicate(model, torch.optim.SGD(model.parameters(), lr=0.1)),
    )
    with sxpyg.enabled():
        x = shard.x.clone()
        before = x.clone()
        expect(
            "x of the wrong rows",
            ValueError,
            rf"rank {world - 1}: x has \d+ rows but rank {world - 1} owns",
            lambda: model(x[:-1] if last else x, shard.edge_index),
        )
        nn = torch.nn.Linear(CONFIG.features, CONFIG.features)
        expect(
            "a layer that does not run sharded",
            TypeError,
            "GINEConv does not run on a scatterx.distributed.ShardedGraph: the layers that do are GCNConv",
            lambda: GINEConv(nn)(x, shard.edge_index, torch.zeros(shard.edge_index.num_edges, CONFIG.features)),
        )
        expect(
            "a graph used as a tensor",
            TypeError,
            "is not a tensor",
            lambda: torch.cat([shard.edge_index, shard.edge_index]),
        )
        expect("a size", ValueError, "takes no size", lambda: model(x, shard.edge_index, size=(3, 3)))
        from torch_geometric.nn import GCNConv

        gcn = GCNConv(CONFIG.features, 4)
        weights = torch.ones(shard.edge_index.num_edges - last)
        expect(
            "edge weights of the wrong rows",
            ValueError,
            rf"rank {world - 1}: GCNConv's argument 3 has",
            lambda: gcn(x, shard.edge_index, weights),
        )
        assert torch.equal(x, before)
        # after all that, the group still works
        torch.manual_seed(0)
        same = SAGEConv(CONFIG.features, 4)
        sxd.replicate(same, torch.optim.SGD(same.parameters(), lr=0.1))
        assert same(x, shard.edge_index).shape == (shard.num_nodes, 4)
    assert not failures, f"rank {rank} of {world}:\n" + "\n".join(failures)


def test_bad_input_raises_on_every_rank(tmp_path):
    good, other = save(tmp_path, 2, "even"), save(tmp_path, 2, "metis")
    save(tmp_path, 1, "even")  # shards for one rank, next to good's
    missing = str(tmp_path / "missing")
    shutil.copytree(other, missing)
    os.remove(os.path.join(missing, "rank-1-of-2.pt"))
    corrupt = str(tmp_path / "corrupt")
    shutil.copytree(other, corrupt)
    with open(os.path.join(corrupt, "rank-1-of-2.pt"), "wb") as f:
        f.write(b"not a shard")
    run_ranks(check_bad_input, 2, good, other, missing, corrupt)


@pytest.mark.parametrize(
    "edge_index,error,match",
    [
        (torch.tensor([[-1], [0]]), IndexError, "holds -1"),  # (it was read as node 3)
        (torch.tensor([[0.7, 2.9], [1.5, 3.99]]), TypeError, "integer"),  # (truncated)
        (torch.tensor([[True], [False]]), TypeError, "integer"),
        (torch.tensor([[0, 1], [1, 2], [2, 3]]), ValueError, r"\[2, E\]"),  # (failed only at load_shard)
    ],
)
def test_save_shards_checks_the_edges_before_it_writes(tmp_path, edge_index, error, match):
    gp = partition_graph(torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]]), 4, 2)
    with pytest.raises(error, match=match):
        sxd.save_shards(str(tmp_path / "out"), gp, edge_index, x=torch.zeros(4, 1))
    with pytest.raises(TypeError, match="mask 'train_mask' must be a boolean"):
        sxd.save_shards(str(tmp_path / "out"), gp, torch.zeros(2, 0, dtype=torch.long), x=torch.zeros(4, 1),
                        masks={"train_mask": torch.ones(4)})  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("order", [[3, 3, 1, 0], [0, 1, 2], [0, 1, 2, 4], [[0, 1, 2, 3]], [0.0, 1.0, 2.0, 3.0]])
def test_a_partition_s_order_must_be_a_permutation_of_its_nodes(order):
    """``order[new_id]`` is a node's id: a repeated or missing one left a rank's ids unset (memory read as ids)."""
    with pytest.raises((ValueError, TypeError), match="order must be"):
        sxd.GraphPartition(sxd.NodePartition([0, 2, 4]), torch.tensor(order), "even")
    sxd.GraphPartition(sxd.NodePartition([0, 2, 4]), torch.tensor([3, 2, 1, 0]), "even")  # a permutation


def test_partitions_relabel_to_contiguous_ranges_and_count_their_cut():
    data = graph()
    for method in ("even", "metis"):
        gp = partition_graph(data.edge_index, CONFIG.nodes, 3, method)
        assert torch.equal(gp.order.sort().values, torch.arange(CONFIG.nodes))  # a permutation
        new = gp.relabel(data.edge_index)
        assert torch.equal(gp.order[new], data.edge_index)  # new ids map back to the old
        stats = cut_stats(new, gp.partition)
        owner = [gp.partition.owner(int(i)) for i in range(CONFIG.nodes)]
        cut = sum(owner[s] != owner[t] for s, t in new.t().tolist())
        halo = [len({s for s, t in new.t().tolist() if owner[t] == r and owner[s] != r}) for r in range(3)]
        assert (stats.edge_cut, stats.halo) == (cut, halo)
        assert sum(stats.nodes) == CONFIG.nodes and sum(stats.edges) == new.size(1)
    with pytest.raises(ValueError, match="method must be one of"):
        partition_graph(data.edge_index, CONFIG.nodes, 2, "random")
    with pytest.raises(IndexError, match="out of range"):
        partition_graph(data.edge_index, 10, 2)


def test_metis_finds_the_communities():
    """On a block model METIS cuts about the edges between blocks; the even partition of random ids cuts most."""
    from scatterx.bench.graphs import make_community_graph

    _, edge_index, _, _ = make_community_graph(2000, 20000, 4, 2, communities=4, mixing=0.1, zipf_exponent=0.8, seed=0)
    even = cut_stats(edge_index, partition_graph(edge_index, 2000, 4, "even").partition)
    gp = partition_graph(edge_index, 2000, 4, "metis")
    metis = cut_stats(gp.relabel(edge_index), gp.partition)
    assert even.cut_fraction > 0.7 and metis.cut_fraction < 0.15
    assert sum(metis.halo) < 0.5 * sum(even.halo)


def test_the_group_made_from_torchrun_s_environment_is_destroyed_at_exit():
    """A gloo group left to the interpreter's teardown can abort a finished script; the one load_shard makes is
    destroyed by an exit hook (registered before it, the check below runs after it)."""
    import subprocess
    import sys

    port = free_port()
    script = (
        "import atexit, torch.distributed as dist\n"
        "atexit.register(lambda: print('alive at exit:', dist.is_initialized()))\n"
        "from scatterx.distributed.shards import init_from_environment\n"
        "print('made:', init_from_environment())\n"
    )
    env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "made: True" in run.stdout and "alive at exit: False" in run.stdout, run.stdout
