"""``scatterx bench-gnn --mini-batch`` (``bench/gnn/minibatch.py``, ``bench/gnn/minibatch_graphs.py``): the graphs it
builds, its table and goals, and a tiny run end to end (in a fresh process: the run installs scatterx.pyg_lib,
which changes what PyG does for the rest of a process)."""

import json
import subprocess
import sys

import pytest
import torch

pytest.importorskip("torch_geometric")

from scatterx import cli
from scatterx.bench.gnn import minibatch as mb
from scatterx.bench.gnn import minibatch_graphs as graphs


def test_the_products_graph_is_csc_ordered_power_law_and_deterministic():
    g = graphs.make_products_like(5_000, 60_000, 8, 5, seed=3)
    src, dst = g.edge_index
    assert g.edge_index.shape == (2, 60_000) and g.x.shape == (5_000, 8)
    assert torch.all(dst[1:] >= dst[:-1])  # grouped by target
    assert int(src.min()) >= 0 and int(src.max()) < 5_000 and int(dst.max()) < 5_000
    for degrees in (torch.bincount(dst, minlength=5_000), torch.bincount(src, minlength=5_000)):
        assert int(degrees.max()) > 8 * degrees.float().mean()  # hubs, on both ends
    assert int(g.y.max()) < 5 and len(torch.unique(g.y)) > 1
    assert g.train_nodes.numel() == round(5_000 * graphs.PRODUCTS_TRAIN)
    again = graphs.make_products_like(5_000, 60_000, 8, 5, seed=3)
    assert torch.equal(again.edge_index, g.edge_index) and torch.equal(again.x, g.x) and torch.equal(again.y, g.y)
    assert not torch.equal(graphs.make_products_like(5_000, 60_000, 8, 5, seed=4).edge_index, g.edge_index)


def test_the_hetero_graph_scales_ogbn_mag_s_types():
    h = graphs.make_mag_like(50_000, 8, 5)
    assert set(h.x) == {"paper", "author", "institution"}
    assert [k[1] for k in h.edge_index] == ["writes", "cites", "affiliated_with", "employs"]
    for (src, _, dst), edge_index in h.edge_index.items():
        assert int(edge_index[0].max()) < h.x[src].size(0) and int(edge_index[1].max()) < h.x[dst].size(0)
    assert h.y.numel() == h.x["paper"].size(0)
    data = h.to_pyg()
    assert set(data.metadata()[0]) == {"paper", "author", "institution"} and len(data.metadata()[1]) == 4


def test_the_default_config_is_the_products_shape_and_the_named_graphs_resolve():
    config = mb.MiniBatchConfig()
    assert (config.graph, config.nodes, config.edges, config.features, config.classes) == (
        "products",
        2_449_029,
        61_859_140,
        100,
        47,
    )
    assert (config.batch_size, config.fanout, config.batches, config.models) == (1024, (15, 10), 20, ("sage", "gat"))
    arxiv = mb.MiniBatchConfig.for_graph("arxiv", nodes=None, batches=3)
    assert (arxiv.nodes, arxiv.edges, arxiv.batches) == (169_343, 1_166_243, 3)


def _row(model, sample, off, on, losses=(2.0, 1.0)):
    row = mb.MiniBatchRow(model)
    row.sample_s, row.sampler_s, row.gather_s = [sample] * 3, [sample / 2] * 3, [sample / 2] * 3
    row.train_s = {"pyg": [off] * 3, "scatterx": [on] * 3}
    row.loss = {"pyg": list(losses), "scatterx": list(losses)}
    row.sampled = [(100, 1000)] * 3
    return row


def test_speedup_share_and_goals_of_a_row():
    row = _row("sage", 0.010, 0.090, 0.020)
    assert row.sample_ms == pytest.approx(10) and row.speedup == pytest.approx(100 / 30)
    assert row.sample_share == pytest.approx(1 / 3) and row.losses_agree
    report = mb.MiniBatchReport(mb.MiniBatchConfig(), "g", [row, _row("hetero-gat", 0.010, 0.02, 0.02)], {}, {})
    goals = {g.name: g.ok for g in mb.goal_results(report)}
    assert goals == {
        "sage run: sampling ms per batch of 1024 seeds on products": True,
        "sage: sampling's share of a training step (switch on) on products": False,
        "sage: epoch speedup over PyG's default path, sampling included, on products": True,
        "sage: max relative loss difference from PyG's path over the batches": True,
        "hetero-gat: epoch speedup over PyG's default path, sampling included, on products": False,
        "hetero-gat: max relative loss difference from PyG's path over the batches": True,
    }


def test_goals_about_the_products_shape_skip_other_graphs():
    config = mb.MiniBatchConfig.for_graph("arxiv")
    report = mb.MiniBatchReport(config, "g", [_row("sage", 0.1, 0.2, 0.3, losses=(1.0, 1.1))], {}, {})
    (only,) = mb.goal_results(report)
    assert only.name.endswith("max relative loss difference from PyG's path over the batches") and only.ok


def test_a_tiny_run_end_to_end(tmp_path):
    argv = ["bench-gnn", "--mini-batch", "--graph", "products", "--nodes", "3000", "--edges", "40000"]
    argv += ["--features", "8", "--hidden", "8", "--batches", "3", "--batch-size", "64", "--threads", "1"]
    argv += ["--out-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "scatterx", *argv], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "scatterx bench-gnn --mini-batch (products): 3,000 nodes, 40,000 edges" in out
    assert "batches of 64 seeds, fanout [15, 10]; 3 batches per model after 1 warm-up" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["sage"], ["gat"], ["hetero-sage"])]
    rows += [line.split() for line in out.splitlines() if line.split()[:1] == ["hetero-gat"]]
    assert [r[0] for r in rows] == ["sage", "gat", "hetero-sage", "hetero-gat"]
    assert all(r[-1] == "ok" for r in rows), out  # the two paths' losses agree at every batch
    assert "goals:" in out and "environment:" in out and "cpu " in out and "torch_threads 1" in out
    saved = json.loads((tmp_path / "bench-gnn-mini-batch.json").read_text())
    assert [r["model"] for r in saved["rows"]] == ["sage", "gat", "hetero-sage", "hetero-gat"]
    for r in saved["rows"]:
        assert len(r["sample_s"]) == len(r["train_s"]["pyg"]) == len(r["train_s"]["scatterx"]) == 3
        assert len(r["loss"]["pyg"]) == 4 and r["max_loss_rel_diff"] <= 1e-3
        assert all(s > 0 for s in r["sample_s"]) and all(n > 64 and e > 0 for n, e in r["sampled"])
    assert set(saved["setup_s"]) == {
        "graph generation",
        "NeighborLoader construction",
        "hetero graph generation",
        "hetero NeighborLoader construction",
    }
    lines = (tmp_path / "bench-gnn-mini-batch.csv").read_text().splitlines()
    assert len(lines) == 1 + 4 * 2 * 3


@pytest.mark.parametrize(
    "args, message",
    [
        (["--graph", "products"], "--graph products is for --mini-batch runs only"),
        (["--mini-batch", "--cold"], "--cold is for full-batch runs"),
        (["--mini-batch", "--batches", "0"], "--batches must be >= 1"),
        (["--mini-batch", "--batch-size", "0"], "--batch-size must be >= 1"),
        (["--mini-batch", "--models", "sage,foo"], "--models takes a comma-separated subset"),
    ],
)
def test_cli_rejects_bad_arguments(args, message):
    with pytest.raises(SystemExit, match=message):
        cli.main(["bench-gnn", *args])
