"""``scatterx bench --grid`` on tiny grids: end to end through the CLI (table, CSV, JSON, PNG), the grid's cells,
memory skips, the correctness check before timing, the element-plan rows with and without onnxruntime.
(No speed is asserted: the grid measures it.)"""

import csv
import itertools
import json
import sys
import time

import pytest
import torch

import scatterx
from scatterx.bench import grid, grid_elements, grid_report
from scatterx.cli import main

QUICK = dict(seconds=0.0, min_calls=1, elements=())
QUIET = dict(log=lambda *_: None)


def tiny(**kw):
    axes = dict(
        edges=(100, 1000),
        features=(3,),
        degrees=(10,),
        dtypes=("float32",),
        dims=(0,),
        reductions=("sum",),
        orders=("sorted",),
        backward=False,
    )
    return grid.GridSpec(**{**axes, **QUICK, **kw})


def test_cli_grid_writes_table_csv_json_and_figure(tmp_path, capsys):
    argv = [
        "bench",
        "--grid",
        "--grid-edges",
        "100,1000",
        "--grid-features",
        "1,16",
        "--grid-degrees",
        "10",
        "--grid-dtypes",
        "float32",
        "--grid-dims",
        "0",
        "--reductions",
        "sum,amax",
        "--grid-time",
        "0",
        "--repeat",
        "1",
        "--grid-elements",
        "none",
        "--out-dir",
        str(tmp_path),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # 2 E x 2 F x 2 orders x (sum, amax forward + sum forward+backward)
    assert "24 cells" in out and "fastest torch" in out and "worst 15 cells" in out and "goals missed:" in out
    assert out.count(" fwd+bwd ") >= 8 and "(1,000, 16)" in out
    with open(tmp_path / "grid.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 24 and {r["section"] for r in rows} == {"cell"}
    assert all(float(r["speedup"]) > 0 and r["ok"] in ("True", "False") for r in rows)
    data = json.loads((tmp_path / "grid.json").read_text())
    assert len(data["cells"]) == 24 and data["spec"]["reductions"] == ["sum", "amax"]
    assert data["missed"] == sum(c["ok"] is False for c in data["cells"])
    assert "hypervisor steal" in out or "not measured" in out  # the environment line says what else ran
    pytest.importorskip("matplotlib")
    assert (tmp_path / "grid-sizes.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "grid.png").exists() and not (tmp_path / "grid-elements.png").exists()  # no elements


def test_full_grid_is_the_product_of_its_axes():
    spec = grid.GridSpec(full=True)
    cells = grid.cells(spec)
    per_shape = len(spec.edges) * len(spec.features) * len(spec.degrees) * len(spec.dtypes) * len(spec.dims)
    assert sum(c.mode == "fwd" for c in cells) == per_shape * 2 * 3
    assert sum(c.mode == "fwd+bwd" for c in cells) == per_shape * 2 * 2
    assert len(set(cells)) == len(cells)


def test_default_grid_is_the_base_plane_and_one_axis_at_a_time():
    spec = grid.GridSpec()
    cells = grid.cells(spec)
    base = (10, "float32", 0)
    plane = {(c.edges, c.features) for c in cells if (c.degree, c.dtype, c.dim) == base}
    assert plane == {(e, f) for e, f in itertools.product(grid.EDGES, grid.FEATURES) if e * f <= 2**28}
    assert (1_000_000, 256) in plane and (1_000_000, 1433) not in plane
    for c in cells:
        off = [a != b for a, b in zip((c.degree, c.dtype, c.dim), base)]
        assert sum(off) <= 1
        if any(off) or c.mode == "fwd+bwd":
            assert c.edges * c.features <= 2**26
        if any(off):
            assert c.mode == "fwd" and c.edges in grid.SIDE_EDGES and c.features in grid.SIDE_FEATURES
    for axis, values in (
        ("degree", grid.DEGREES),
        ("dtype", grid.DTYPES),
        ("dim", grid.DIMS),
        ("reduce", grid.REDUCTIONS),
        ("order", ("sorted", "shuffled")),
    ):
        assert {getattr(c, axis) for c in cells} == set(values)
    assert {c.reduce for c in cells if c.mode == "fwd+bwd"} == {"sum", "mean"}
    assert len(cells) < len(grid.cells(grid.GridSpec(full=True))) / 5


def test_goal_per_size():
    assert [grid.goal(e) for e in (100, 999, 1000, 99_999, 100_000, 4_000_000)] == [0.8, 0.8, 1.0, 1.0, 2.0, 2.0]


def test_cell_over_the_memory_limit_is_skipped_and_says_so(monkeypatch):
    monkeypatch.setattr(grid, "_free_bytes", lambda device: 40 * 2**20)  # limit: half of it, 20 MiB
    built = []
    real = grid.make_graph
    monkeypatch.setattr(grid, "make_graph", lambda e, *a, **k: built.append(e) or real(e, *a, **k))
    spec = tiny(edges=(100, 200_000), features=(16,))
    assert grid.cell_bytes(grid.cells(spec)[-1]) > 20 * 2**20 > grid.cell_bytes(grid.cells(spec)[0])
    report = grid.run(spec, **QUIET)
    small, big = report.rows
    assert small.speedup is not None and not small.skipped
    assert big.skipped.startswith("skipped: needs") and "MiB" in big.skipped
    assert big.speedup is None and big.ok is None and big not in grid.missed(report)
    assert built == [100]  # the skipped cell's tensors were never made
    text = grid_report.table(report)
    assert "skipped: needs" in text and "1 cell(s) skipped for memory" in text


@pytest.mark.parametrize("dtype, dim", [("float32", 0), ("bfloat16", -1)])
def test_wrong_scatterx_result_aborts_the_grid(monkeypatch, dtype, dim):
    real = scatterx.index_scatter_reduce
    monkeypatch.setattr(scatterx, "index_scatter_reduce", lambda *a, **k: real(*a, **k) + 1)
    with pytest.raises(AssertionError, match="wrong result"):
        grid.run(tiny(dtypes=(dtype,), dims=(dim,)), **QUIET)


def test_wrong_gradient_aborts_the_grid(monkeypatch):
    real = scatterx.index_scatter_reduce
    monkeypatch.setattr(
        scatterx,
        "index_scatter_reduce",
        lambda *a, **k: real(*a, **k) * (2.0 if torch.is_grad_enabled() and a[2].requires_grad else 1.0),
    )
    with pytest.raises(AssertionError, match=r"fwd\+bwd.*wrong result"):
        grid.run(tiny(backward=True), **QUIET)


def test_half_types_and_the_last_dim_run_every_reduction_and_pass():
    spec = tiny(
        edges=(1000,),
        features=(5,),
        degrees=(2, 50),
        dtypes=("bfloat16", "float32"),
        dims=(-1, 0),
        reductions=("sum", "mean", "amax"),
        orders=("sorted", "shuffled"),
        backward=True,
    )
    report = grid.run(spec, **QUIET)
    assert len(report.rows) == len(grid.cells(spec)) and all(r.speedup is not None for r in report.rows)
    # the base is the first of each axis: (2, bfloat16, -1); the star changes one of them at a time
    assert {(r.cell.dtype, r.cell.dim) for r in report.rows} == {("bfloat16", -1), ("float32", -1), ("bfloat16", 0)}
    peers = {r.torch_peer for r in report.rows}
    assert peers <= {"scatter_reduce_", "index_add_", "index_reduce_", "scatter_reduce", "index_add"}


def test_measure_times_each_implementation_and_prunes():
    def slow():
        time.sleep(0.003)

    times, calls, dropped = grid.measure(
        {"fast": lambda: None, "slow": slow}, 0.01, 4, prune=lambda first: [n for n, t in first.items() if t > 1e-3]
    )
    assert dropped == {"slow"} and calls["slow"] <= 3 and calls["fast"] >= 4
    assert times["slow"] > 2e-3 > times["fast"]


def _element_rows(monkeypatch=None):
    notes = []
    rows = grid_elements.rows(
        grid.GridSpec(elements=("small",), seconds=0.0, min_calls=1), grid.measure, lambda it, **kw: it, notes.append
    )
    return rows, notes


def test_element_plan_rows_against_torch_and_onnxruntime():
    rows, notes = _element_rows()
    ops = {r.op for r in rows}
    assert ops == {
        "scatter_reduce sum",
        "scatter_reduce amax",
        "scatter_reduce mean",
        "scatter (assign)",
        "gather",
        "onnx ScatterElements add",
        "onnx GatherElements",
        "onnx ScatterND add",
        "onnx GatherND",
        "index_scatter_reduce sum, last dim",
        "scatter_reduce sum, last dim",
    }
    goals = {(r.op, r.peer): r.goal for r in rows if r.scale == "small"}
    assert goals["gather", "torch.gather"] == 1.0 and goals["scatter (assign)", "torch.scatter"] == 1.0
    assert goals["onnx GatherND", "torch.index_select"] is None
    assert all(r.speedup > 0 for r in rows)
    assert {r.size for r in rows if r.scale == "small"} == {"2,000x16 -> 500x16"}
    last_dim = [r for r in rows if r.op.endswith("last dim")]
    assert sorted({r.scale for r in last_dim}) == sorted(grid_elements.LAST_DIM) and all(
        r.goal == 1.0 for r in last_dim
    )
    assert notes[0].startswith("the planner's per-call Python at 2,000x16")
    if grid_elements.ort_version():
        assert sum(r.peer == "onnxruntime" for r in rows) == 4 and "onnxruntime" in notes[1]
        assert all(r.goal == 1.0 for r in rows if r.peer == "onnxruntime")


def test_large_element_rows_have_the_larger_goal():
    row = grid_elements.ElementRow("scatter_reduce mean", "x", "torch.scatter_reduce", 1.0, 2.0, None, 3, "large")
    assert grid_elements.goal(row) == 1.5
    row.scale = "small"
    assert grid_elements.goal(row) == 1.0


def test_onnxruntime_absent_is_handled(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    assert grid_elements.ort_version() is None
    assert grid_elements.ort_session("GatherND", {}, {}, 1) is None
    rows, notes = _element_rows()
    assert notes[1:] == ["onnxruntime not installed: the ONNX rows are compared with torch only"]
    assert len(rows) == 9 + 2 * len(grid_elements.LAST_DIM) and all(r.peer != "onnxruntime" for r in rows)


def test_onnxruntime_giving_another_result_is_flagged_not_fatal(monkeypatch):
    onx = scatterx.onnx
    fake = {  # a stand-in for onnxruntime whose ScatterND is off by one
        "ScatterElements": lambda i, a: onx.scatter_elements(i["data"], i["indices"], i["updates"], a["axis"], "add"),
        "GatherElements": lambda i, a: onx.gather_elements(i["data"], i["indices"], a["axis"]),
        "ScatterND": lambda i, a: onx.scatter_nd(i["data"], i["indices"], i["updates"], "add") + 1,
        "GatherND": lambda i, a: onx.gather_nd(i["data"], i["indices"]),
    }
    monkeypatch.setattr(grid_elements, "ort_version", lambda: "fake")
    monkeypatch.setattr(grid_elements, "ort_session", lambda op, i, a, threads: lambda: fake[op](i, a))
    rows, notes = _element_rows()
    assert sum(r.peer == "onnxruntime" for r in rows) == 3
    flagged = [r for r in rows if r.peer == "onnxruntime (wrong result)"]
    assert [r.op for r in flagged] == ["onnx ScatterND add"] and flagged[0].goal == 1.0
    assert any("onnxruntime's onnx ScatterND add" in n and "differs from torch's" in n for n in notes)


def test_wrong_element_result_aborts(monkeypatch):
    real = scatterx.gather
    monkeypatch.setattr(scatterx, "gather", lambda *a, **k: real(*a, **k) + 1)
    with pytest.raises(AssertionError, match=r"scatterx gather .*wrong result"):
        _element_rows()


def test_report_counts_every_missed_goal():
    cell = grid.Cell(100_000, 4, 10, "float32", 0, "sorted", "sum", "fwd")
    rows = [
        grid.GridRow(cell, 2.0, 1.0, 1.5, "index_add_"),  # 1.5x < 2.0: missed
        grid.GridRow(cell, 2.0, 1.0, 3.0, "scatter_reduce_"),
        grid.GridRow(cell, 2.0, skipped="skipped: needs 9.0 GiB"),
    ]
    elements = [
        grid_elements.ElementRow("gather", "s", "torch.gather", 1.0, 1.2, 1.5, 3),
        grid_elements.ElementRow("onnx GatherND", "s", "torch.index_select", 1.0, 0.5, None, 3),
    ]
    report = grid.GridReport(grid.GridSpec(), rows, elements, 1.0, 2**30, {})
    assert grid.missed(report) == [rows[0], elements[0]]
    text = grid_report.table(report)
    assert "goals missed: 2 of 3 (1 cells, 1 element rows)" in text
    assert "cells below 1.0x the fastest torch path: 0 of 2" in text
    assert text.count("\n  MISSED ") == 2  # listed at the end


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grid-dims", "1"], "--grid-dims"),
        (["--grid-elements", "huge"], "--grid-elements"),
        (["--grid-edges", "0"], "--grid-edges"),
        (["--grid-dtypes", "int32"], "--grid-dtypes"),
        (["--device", "cuda"], "CPU only"),
    ],
)
def test_cli_rejects_bad_grid_arguments(args, message):
    with pytest.raises(SystemExit, match=message):
        main(["bench", "--grid", *args])
