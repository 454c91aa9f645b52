"""The benchmark harness on a tiny graph: it runs, checks correctness before timing, and writes its files.
(No timing is asserted here: speed is measured by ``scatterx bench`` itself, never by a unit test.)"""

import json
import os
import re

import pytest
import torch

import scatterx
from scatterx import cli
from scatterx.bench import Config, goals, make_graph, run
from scatterx.bench.harness import REDUCTIONS
from scatterx.cli import main
from scatterx.kernels.gpu import available as triton_available

TINY = dict(edges=3000, nodes=300, features=4, repeat=1, warmup=0, latency=False, launch=False)


@pytest.mark.parametrize("degrees", ["powerlaw", "uniform"])
def test_graph_is_sorted_and_consistent(degrees):
    g = make_graph(5000, 400, 3, torch.float32, degrees, seed=1)
    assert bool((g.index[1:] >= g.index[:-1]).all())
    assert torch.equal(scatterx.ptr_to_index(g.ptr), g.index)
    assert torch.equal(g.shuffled_index.sort().values, g.index)
    # the shuffled copy pairs each row with its own target: the per-node sums agree
    a = scatterx.index_scatter_reduce(0, g.index, g.src.double(), dim_size=400)
    b = scatterx.index_scatter_reduce(0, g.shuffled_index, g.shuffled_src.double(), sorted=False, dim_size=400)
    torch.testing.assert_close(a, b)


def test_cli_bench_writes_table_csv_json_and_figures(tmp_path, capsys):
    args = [
        "bench",
        "--edges",
        "3000",
        "--nodes",
        "300",
        "--features",
        "4",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--no-latency",
        "--out-dir",
        str(tmp_path),
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "bandwidth probe" in printed and "scatterx.index_scatter_reduce" in printed and "CPU goals" in printed
    if triton_available():  # the GPU backend's Python per call, its launches stubbed
        assert "GPU backend, Python per call" in printed
    for name in ("bench.csv", "bench.json"):
        assert os.path.getsize(tmp_path / name) > 0
    data = json.loads((tmp_path / "bench.json").read_text())
    cases = {(r["reduce"], r["order"]) for r in data["rows"] if r["implementation"] == "scatterx.index_scatter_reduce"}
    assert cases == {(r, o) for r in REDUCTIONS for o in ("sorted", "shuffled")}
    # what else ran meanwhile: other processes and the hypervisor's steal, as shares of a core
    assert re.search(
        r"\d+% of a core, hypervisor steal \d+% of a core", data["environment"]["other processes"]
    ) or data["environment"]["other processes"].startswith("not measured")
    if triton_available():
        assert data["gpu_host"]["us"] > 0 and data["gpu_host"]["launches"] >= 1
    assert data["environment"]["commit"]  # the commit that ran (or "unknown" outside a git checkout)
    pytest.importorskip("matplotlib")
    for name in ("forward.png", "forward-backward.png", "message-passing.png", "drop-in.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG", name
    assert not (tmp_path / "bench.png").exists()


def test_cli_rejects_unknown_reduction():
    with pytest.raises(SystemExit, match="--reductions"):
        main(["bench", "--reductions", "sum,median"])


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--threads", "0"], "--threads must be >= 1"),
        (["--edges", "0", "--nodes", "-3"], "--edges must be >= 1, got 0; --nodes must be >= 1"),
        (["--features", "-1"], "--features"),
        (["--repeat", "0"], "--repeat"),
        (["--warmup", "-1"], "--warmup"),
    ],
)
def test_cli_bench_rejects_sizes_and_counts_before_it_runs(argv, match, monkeypatch):
    monkeypatch.setattr(cli, "run", lambda *a, **k: pytest.fail("the benchmark ran"))
    with pytest.raises(SystemExit, match=match):
        main(["bench", *argv])


@pytest.mark.parametrize("command", [["bench"], ["bench-gnn"], ["partition", "--world", "2"]])
def test_an_output_folder_that_cannot_be_made_is_refused_before_the_work(command, tmp_path, monkeypatch):
    """A path through a file, or a file in the folder's place: a usage error naming the folder, before minutes of
    benchmark or partitioning (which then had nowhere to go)."""
    monkeypatch.setattr(cli, "run", lambda *a, **k: pytest.fail("the benchmark ran"))
    monkeypatch.setattr(cli.gnn, "GnnConfig", None)  # (bench-gnn and partition would start here)
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for path in (a_file / "sub", a_file):
        where = [str(path)] if command[0] == "partition" else ["--out-dir", str(path)]
        argv = [*command[:1], "cora", *command[1:]] if command[0] == "partition" else command
        with pytest.raises(SystemExit, match="output folder"):
            main([*argv, *where])


def test_wrong_result_aborts_the_benchmark(monkeypatch):
    real = scatterx.index_scatter_reduce

    def off_by_one(*args, **kwargs):
        return real(*args, **kwargs) + 1

    monkeypatch.setattr(scatterx, "index_scatter_reduce", off_by_one)
    with pytest.raises(AssertionError, match="wrong result"):
        run(Config(reductions=("sum",), orders=("sorted",), peers=False, **TINY), log=lambda *_: None)


def test_goals_compare_each_measurement_with_its_limit():
    report = run(Config(reductions=("sum",), orders=("sorted", "shuffled"), **TINY), log=lambda *_: None)
    table = {what: (op, limit, value, ok) for what, op, limit, value, ok in goals(report)}
    _op, limit, value, ok = table["sorted sum: time / read probe"]
    assert value == pytest.approx(
        next(
            r.probe_ratio
            for r in report.rows
            if (r.reduce, r.order, r.implementation) == ("sum", "sorted", "scatterx.index_scatter_reduce")
        )
    )
    assert ok == (value <= limit)
    assert table["sorted mean: time / read probe"][2] is None  # not measured in this run


def test_bench_gpu_path_checks_every_case_on_the_triton_kernels():
    """The benchmark's device path (peers on the graph's device, correctness checks, GPU goals), run on the GPU
    backend (CPU tensors through the interpreter when there is no GPU): every scatterx row is checked against
    torch before it is timed."""
    from conftest import _backend

    from scatterx.bench import harness, report

    gpu = _backend("gpu")
    if not gpu.interpreted:
        pytest.skip("on a GPU, run `scatterx bench --device cuda` itself")
    # the smallest graph with every code path (its drop-in rows run the frontends' GPU tests' kernels; left out)
    config = harness.Config(
        edges=16, nodes=4, features=32, repeat=1, warmup=0, latency=False, launch=False, peers=True, dropin=False
    )
    with gpu:
        result = harness.run(config)
    cases = {(r.reduce, r.order, r.mode) for r in result.rows if r.implementation == harness.SCATTERX.name}
    assert len(cases) == 2 * len(harness.REDUCTIONS) + 2 * 3  # forward: all; forward+backward: sum, mean, amax
    result.config.device = "cuda"
    text = report.table(result)
    assert "GPU goals (stated for an H100)" in text and "sorted sum: bandwidth / read-probe bandwidth" in text


def test_weighted_rows_are_checked_timed_and_have_a_goal(monkeypatch):
    from scatterx.bench.ops import gather_segment_reduce as weighted_rows
    from scatterx.bench.ops import gatv2_logits as gatv2_rows

    report = run(Config(reductions=("sum",), orders=("sorted",), **TINY), log=lambda *_: None)
    weighted = {r.implementation: r for r in report.rows if r.reduce == weighted_rows.WEIGHTED}
    assert set(weighted) == {p.name for p in weighted_rows.WEIGHTED_IMPLEMENTATIONS}
    ours, pyg = (weighted[p.name] for p in weighted_rows.WEIGHTED_IMPLEMENTATIONS)
    table = {what: value for what, op, limit, value, ok in goals(report)}
    assert table["weighted gather-segment sum: forward+backward speedup over PyG's path"] == pytest.approx(
        pyg.ms / ours.ms
    )
    gatv2 = {r.implementation: r for r in report.rows if r.reduce == gatv2_rows.GATV2}
    ours, pyg = (gatv2[p.name] for p in gatv2_rows.GATV2_IMPLEMENTATIONS)
    assert table["GATv2 logits: forward+backward speedup over PyG's path"] == pytest.approx(pyg.ms / ours.ms)
    # a wrong gradient aborts the run
    quiet = dict(TINY, backward=False, skip=("softmax",))
    real_logits = scatterx.gatv2_logits
    monkeypatch.setattr(scatterx, "gatv2_logits", lambda *a, **k: real_logits(*a, **k) * 2)
    with pytest.raises(AssertionError, match="wrong result"):
        run(Config(reductions=("sum",), orders=("sorted",), **quiet), log=lambda *_: None)
    monkeypatch.setattr(scatterx, "gatv2_logits", real_logits)
    real = scatterx.gather_segment_reduce
    monkeypatch.setattr(scatterx, "gather_segment_reduce", lambda *a, **k: real(*a, **k) * 2)
    with pytest.raises(AssertionError, match="wrong result"):
        run(Config(reductions=("sum",), orders=("sorted",), **quiet), log=lambda *_: None)


def test_an_op_module_s_section_is_run_checked_and_skippable_with_nothing_else_edited(monkeypatch):
    """A ``Section`` added to an op module's ``SECTIONS`` (here a made-up one, in the softmax module) gets its rows
    in both index orders, scatterx's speedups, a ``--no-<flag>`` option, and aborts the run on a wrong result."""
    import argparse

    from scatterx.bench import ops
    from scatterx.bench.ops import Peer, Section
    from scatterx.bench.ops import segment_softmax as module
    from scatterx.cli import build_parser

    def doubled(scale):
        return lambda graph, sorted: lambda: ops.inputs(graph, sorted)[1] * scale

    mine, trusted = Peer("scatterx doubling", False, doubled(2.0)), Peer("torch doubling", True, doubled(2.0))
    made_up = Section("double", (mine, trusted), per_order=True, flag="doubling", what="the doubling rows")
    monkeypatch.setattr(module, "SECTIONS", module.SECTIONS + (made_up,))
    assert ops.section_flags()["doubling"] == "the doubling rows"
    parser = build_parser()
    bench = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["bench"]
    assert bench.parse_args(["--no-doubling"]).no_doubling
    config = dict(TINY, backward=False, skip=("weighted",), dropin=False)
    report = run(Config(reductions=("sum",), **config), log=lambda *_: None)
    rows = {(r.order, r.implementation): r for r in report.rows if r.reduce == "double"}
    assert set(rows) == {(o, p.name) for o in ("sorted", "shuffled") for p in (mine, trusted)}
    assert rows["sorted", trusted.name].scatterx_speedup == pytest.approx(
        rows["sorted", trusted.name].ms / rows["sorted", mine.name].ms
    )
    report = run(Config(reductions=("sum",), **dict(config, skip=("weighted", "doubling"))), log=lambda *_: None)
    assert not [r for r in report.rows if r.reduce == "double"]
    with pytest.raises(ValueError, match=r"Config.skip names no section: \['dubling'\]"):
        run(Config(reductions=("sum",), **dict(config, skip=("dubling",))), log=lambda *_: None)
    wrong = Section("double", (Peer("scatterx doubling", False, doubled(3.0)), trusted), True, "doubling", "rows")
    monkeypatch.setattr(module, "SECTIONS", module.SECTIONS[:-1] + (wrong,))
    with pytest.raises(AssertionError, match="wrong result"):
        run(Config(reductions=("sum",), **config), log=lambda *_: None)


def test_every_op_module_but_the_core_op_s_declares_its_sections():
    """The core op's rows are the harness's own; every other op module in ``bench/ops`` has its rows as
    ``SECTIONS`` (a module without is a row that never runs), each labelled apart."""
    import importlib
    import pkgutil

    from scatterx.bench import ops

    names = [m.name for m in pkgutil.iter_modules(ops.__path__)]
    assert "index_scatter_reduce" in names
    for name in names:
        if name != "index_scatter_reduce":
            assert getattr(importlib.import_module(f"scatterx.bench.ops.{name}"), "SECTIONS", ()), name
    labels = [s.label for s in ops.sections()]
    assert len(labels) == len(set(labels)) >= 3


def test_dropin_rows_cover_every_function_are_checked_and_tabled(monkeypatch):
    """The torch_scatter drop-in section: a row pair for every function (both orders where the function
    takes a shuffled index), its own table section with the goals, and a wrong result aborts the run."""
    from scatterx.bench import dropin
    from scatterx.bench.report import table

    small = dict(TINY, backward=False, skip=("softmax", "weighted"))
    report = run(Config(reductions=("sum",), orders=("sorted",), **small), log=lambda *_: None)
    rows = [r for r in report.rows if r.mode == "drop-in"]
    ours = {(r.reduce, r.order) for r in rows if r.implementation == dropin.DROP_IN}
    want = {
        (f, o) for f in dropin.FUNCTIONS for o in (("sorted",) if f in dropin.SORTED_ONLY else ("sorted", "shuffled"))
    }
    assert ours == want
    assert {(r.reduce, r.order) for r in rows if r.implementation != dropin.DROP_IN} == want
    text = table(report)
    assert "torch_scatter drop-in" in text and ">=5x" in text
    import scatterx.torch_scatter as drop_in

    real = drop_in.scatter_max
    monkeypatch.setattr(drop_in, "scatter_max", lambda *a, **k: (real(*a, **k)[0] + 1, real(*a, **k)[1]))
    with pytest.raises(AssertionError, match="wrong result"):
        run(Config(reductions=("sum",), orders=("sorted",), **small), log=lambda *_: None)
