"""scatterx bench-gnn on a small graph: both paths train the same model to the same losses; report and files."""

import pytest
import torch

pytest.importorskip("torch_geometric")

import scatterx.pyg
from scatterx import cli
from scatterx.bench.gnn import full_graph as gnn

SMALL = dict(nodes=300, edges=2_000, features=16, hidden=8, classes=5, epochs=3)


def test_graph_is_coalesced_power_law_and_deterministic():
    config = gnn.GnnConfig(**SMALL)
    data = gnn.make_arxiv_like(config)
    src, dst = data.edge_index
    key = src * config.nodes + dst
    assert torch.all(key[1:] >= key[:-1])  # sorted by source, then target
    assert data.x.shape == (300, 16) and int(data.y.max()) < 5
    in_deg = torch.bincount(dst, minlength=300)
    assert int(in_deg.max()) > 5 * in_deg.float().mean()  # hubs
    again = gnn.make_arxiv_like(config)
    assert torch.equal(again.edge_index, data.edge_index) and torch.equal(again.x, data.x)


def test_default_config_is_ogbn_arxiv_shaped():
    config = gnn.GnnConfig()
    assert (config.nodes, config.edges, config.features) == (169_343, 1_166_243, 128)


@pytest.mark.parametrize("model", gnn.MODELS)
def test_both_paths_train_the_same_model_to_the_same_losses(model):
    config = gnn.GnnConfig(**SMALL)
    result = gnn.train_side_by_side(model, gnn.make_arxiv_like(config), config, log=lambda msg: None)
    assert len(result.loss["pyg"]) == len(result.loss["scatterx"]) == 3
    assert result.losses_agree, result.loss
    assert result.loss["pyg"][-1] < result.loss["pyg"][0]  # it learns
    assert not scatterx.pyg.is_enabled()


def test_loss_check_fails_when_the_paths_differ():
    result = gnn.ModelResult(
        "sage", {"pyg": [1.0, 1.0], "scatterx": [0.5, 0.5]}, {"pyg": [2.0, 1.0], "scatterx": [2.0, 1.01]}
    )
    assert not result.losses_agree
    assert result.speedup == 2.0
    report = gnn.GnnReport("g", gnn.GnnConfig(**SMALL), [result], {})
    assert [(label.split(":")[0], ok) for label, *_, ok in gnn.goals(report)] == [("sage", False), ("sage", False)]
    report.config.graph = "cora"  # no layer may be slower on a small graph: 2x passes
    assert [ok for *_, ok in gnn.goals(report)] == [True, False]


def test_gat_memory_goal_is_checked_on_arxiv():
    result = gnn.ModelResult(
        "gat",
        {"pyg": [1.0, 1.0], "scatterx": [0.4, 0.4]},
        {"pyg": [1.0], "scatterx": [1.0]},
        {"pyg": 1000, "scatterx": 400},
    )
    report = gnn.GnnReport("g", gnn.GnnConfig(), [result], {})
    labels = {label: ok for label, *_, ok in gnn.goals(report)}
    assert labels == {
        "gat: epoch speedup over PyG's default path on arxiv": True,
        "gat: peak step memory, scatterx / PyG, on arxiv": True,
        "gat: max relative loss difference from PyG's path": True,
    }
    result.peak_bytes["scatterx"] = 600
    labels = {label: ok for label, *_, ok in gnn.goals(report)}
    assert not labels["gat: peak step memory, scatterx / PyG, on arxiv"]


@pytest.mark.parametrize("graph", sorted(gnn.GRAPHS))
def test_built_in_graph_shapes(graph):
    config = gnn.GnnConfig.for_graph(graph, nodes=None, epochs=2)
    assert (config.nodes, config.edges, config.features, config.classes) == tuple(
        gnn.GRAPHS[graph][k] for k in ("nodes", "edges", "features", "classes")
    )
    assert config.graph == graph and config.epochs == 2
    assert gnn.GnnConfig.for_graph(graph, nodes=50).nodes == 50


def test_peak_step_memory_sees_a_large_temporary():
    """The sampler sees a step that allocates ~400 MB more than PyG-sized steps do."""
    if not gnn._mmap_every_large_allocation():
        pytest.skip("no /proc/self/statm or glibc mallopt here")
    config = gnn.GnnConfig(**{**SMALL, "nodes": 20_000, "edges": 100_000, "features": 64})
    data = gnn.make_arxiv_like(config)
    small = gnn.peak_step_bytes("sage", "pyg", data, config)
    big_data = gnn.ArxivLike(data.x.repeat(1, 16), data.edge_index, data.y, data.train_mask)
    big_config = gnn.GnnConfig(**{**SMALL, "nodes": 20_000, "edges": 100_000, "features": 1024})
    big = gnn.peak_step_bytes("sage", "pyg", big_data, big_config)
    assert big > small + 20 * 2**20


def test_cli_writes_table_csv_json_and_loss_chart(tmp_path, capsys):
    argv = [
        "bench-gnn",
        "--nodes",
        "300",
        "--edges",
        "2000",
        "--features",
        "16",
        "--hidden",
        "8",
        "--epochs",
        "2",
        "--models",
        "sage,gin,gcn",
        "--out-dir",
        str(tmp_path),
    ]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "sage: epoch speedup over PyG's default path" in out and "gin: max relative loss difference" in out
    assert "peak MiB PyG/sx" in out and "CSR build for an edge_index not seen before" in out
    for name in ("bench-gnn.csv", "bench-gnn.json", "bench-gnn.png", "epochs.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "bench-gnn.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "epochs.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--epochs", "0"], "--epochs must be >= 1"),
        (["--models", "sage,foo"], "--models takes a comma-separated subset"),
        (["--hidden", "6"], "multiple of 4"),
        (["--edges", "-1"], "--edges must be >= 0"),
    ],
)
def test_cli_rejects_bad_arguments(args, message):
    with pytest.raises(SystemExit, match=message):
        cli.main(["bench-gnn", *args])
