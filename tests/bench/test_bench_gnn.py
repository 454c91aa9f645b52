"""scatterx bench-gnn on a small graph: both paths train the same model to the same losses; report and files."""

import pytest
import torch

pytest.importorskip("torch_geometric")

import scatterx.pyg  # noqa: E402
from scatterx import cli  # noqa: E402
from scatterx.bench import gnn  # noqa: E402

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
    result = gnn.ModelResult("sage", {"pyg": [1.0, 1.0], "scatterx": [0.5, 0.5]}, {"pyg": [2.0, 1.0],
                             "scatterx": [2.0, 1.01]})
    assert not result.losses_agree
    assert result.speedup == 2.0
    report = gnn.GnnReport("g", gnn.GnnConfig(**SMALL), [result], {})
    assert [ok for *_, ok in gnn.goals(report)] == [True, False]


def test_cli_writes_table_csv_json_and_loss_chart(tmp_path, capsys):
    argv = ["bench-gnn", "--nodes", "300", "--edges", "2000", "--features", "16", "--hidden", "8",
            "--epochs", "2", "--models", "sage,gin", "--out-dir", str(tmp_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "sage: epoch speedup over PyG's default path" in out and "gin: max relative loss difference" in out
    for name in ("bench-gnn.csv", "bench-gnn.json", "bench-gnn.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "bench-gnn.png").read_bytes()[:4] == b"\x89PNG"


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
