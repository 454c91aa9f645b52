"""scatterx bench-dist on a tiny graph: a PyG model from saved shards on 2 processes trains as in one process on
the whole graph, sends the halo exchange's lower bound (plus the agreement messages), and the table reports the
goals; the torchrun recipe of the README runs."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch_geometric")

from scatterx.bench.gnn import distributed as dist
from scatterx.bench.gnn.full_graph import GnnConfig
from scatterx.cli import main

CONFIG = GnnConfig.for_graph("cora", nodes=300, edges=2000, features=8, hidden=8, threads=2, epochs=3)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_two_processes_from_shards_train_like_one_and_send_the_lower_bound():
    results = dist.run(CONFIG, [2], epochs=3, models=("sage",), methods=("metis",), log=lambda *_: None)
    single, two = results
    assert (single.method, single.procs, two.method, two.procs) == ("single", 1, "metis", 2)
    assert single.bytes_sent == 0 and single.lower_bound == 0
    assert dist.max_rel_diff(two.loss, single.loss) <= dist.LOSS_RTOL
    assert single.loss[-1] < single.loss[0]  # it trains
    # SAGE: layer 1 fetches x (no gradient back), layer 2 fetches h and pushes its gradient: nothing more
    assert two.bytes_sent == two.lower_bound > 0
    assert 0 < two.control_bytes < two.bytes_sent
    assert len(two.peak_rss_mib) == 2 and all(p > b for p, b in zip(two.peak_rss_mib, two.base_rss_mib))
    text = dist.table(CONFIG, results)
    assert "sage, metis, 2 processes: bytes sent / lower bound" in text
    assert "sage, metis, 2 processes: max relative loss difference from one process" in text


def test_lower_bound_widths_follow_what_each_layer_aggregates():
    c = GnnConfig.for_graph("cora", features=10, hidden=6, classes=3)
    assert dist.lower_bound_widths("sage", c) == 10 + 2 * 6  # x forward; h forward and its gradient back
    assert dist.lower_bound_widths("gcn", c) == 2 * (6 + 3)  # lin(x), lin(h): both with gradients


@pytest.mark.skipif(
    shutil.which("torchrun") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "torchrun")),
    reason="torchrun is not on the PATH",
)
def test_the_torchrun_recipe_trains_from_saved_shards(tmp_path, capsys):
    """The README's two commands: partition once, then torchrun the example (2 ranks, gloo)."""
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), OMP_NUM_THREADS="1")
    shards = str(tmp_path / "shards")
    assert main(["partition", "cora", shards, "--world", "2"]) == 0
    out = capsys.readouterr().out
    assert "metis partition over 2 ranks" in out and "halo" in out
    assert sorted(os.listdir(shards)) == ["meta.json", "rank-0-of-2.pt", "rank-1-of-2.pt"]
    run = subprocess.run(
        [
            "torchrun",
            "--nproc-per-node",
            "2",
            os.path.join(ROOT, "examples", "train_sharded.py"),
            shards,
            "--epochs",
            "3",
            "--hidden",
            "8",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    losses = [float(line.split()[-1]) for line in run.stdout.splitlines() if line.startswith("epoch")]
    assert len(losses) == 3 and losses[-1] < losses[0]
