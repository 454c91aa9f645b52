"""``scatterx bench-gnn --compile`` (``bench/gnn/compiled.py``): both paths trained under ``torch.compile`` (here
with dynamo's eager backend: the traced graphs without inductor's compile time) beside the eager switch, equal
losses, and the table."""

import pytest

pytest.importorskip("torch_geometric")

from scatterx.bench.gnn import compiled as gnn_compiled
from scatterx.bench.gnn import full_graph as gnn


def test_a_compiled_model_trains_on_both_paths_with_equal_losses():
    config = gnn.GnnConfig.for_graph("cora", nodes=300, edges=2_000, features=8, hidden=8, classes=3, epochs=2)
    data = gnn.make_arxiv_like(config)
    row = gnn_compiled.row(gnn.train_side_by_side("sage", data, config, log=lambda msg: None, compile_backend="eager"))
    assert row.model == "sage" and row.pyg_ms > 0 and row.scatterx_ms > 0 and row.pyg_first_s > 0 and row.eager_ms > 0
    assert row.max_loss_rel_diff <= gnn.LOSS_RTOL
    lines = gnn_compiled.table([row])
    assert lines[-1].startswith("goal: speedup >= 1.80x and vs eager >= 0.95x: sage ")
    cells = lines[-2].split()
    assert cells[0] == "sage" and cells[3] == f"{row.speedup:.2f}x" and cells[5] == f"{row.vs_eager:.2f}x"
    assert gnn_compiled.as_dicts([row])[0]["vs_eager"] == row.vs_eager
    assert gnn_compiled.as_dicts([row])[0]["meets_goal"] == row.meets_goal
