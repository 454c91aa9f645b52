"""``scatterx bench-gnn --cold`` (``bench/gnn/cold.py``): a real first training step in fresh processes (scatterx on an
empty Numba cache, then cached, then PyG), on a tiny graph, and the table it prints."""

import pytest

pytest.importorskip("torch_geometric")

from scatterx.bench.gnn import cold as gnn_cold
from scatterx.bench.gnn import full_graph as gnn


def test_first_steps_run_in_fresh_processes_and_the_cache_is_reused():
    # edges enough for the PyG switch to fuse the layers (smaller graphs run PyG's own code: nothing to compile)
    config = gnn.GnnConfig.for_graph("cora", nodes=2_000, edges=25_000, features=8, hidden=8, classes=3)
    config.models = ("gcn",)
    config.threads = 1
    rows = gnn_cold.first_steps(config, log=lambda msg: None)
    assert [r.model for r in rows] == ["gcn"]
    (row,) = rows
    assert row.scatterx_cold_s > row.scatterx_cached_s > 0  # the empty cache compiles what the cached one loads
    assert row.pyg_s > 0 and row.scatterx_step_s > 0 and row.pyg_step_s > 0


def test_table_totals_the_models():
    rows = [
        gnn_cold.FirstStep("gcn", 3.0, 0.2, 0.01, 0.004, 0.005),
        gnn_cold.FirstStep("gat", 2.0, 0.1, 0.02, 0.006, 0.007),
    ]
    lines = gnn_cold.table(rows)
    assert lines[2].split()[:4] == ["gcn", "3.00", "0.200", "0.010"]
    assert lines[-1].split() == ["all", "5.00", "0.300", "0.030"]
    assert gnn_cold.as_dicts(rows)[1]["scatterx_cold_s"] == 2.0
