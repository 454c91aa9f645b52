"""``scatterx bench-export`` (``scatterx/bench/export_onnx.py``) on a small graph: each row exported, run in
onnxruntime and compared with eager scatterx; the CLI prints the table and the goal lines."""

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from scatterx import cli
from scatterx.bench import export_onnx


def test_rows_run_and_agree_with_eager():
    rows = export_onnx.export_onnx_rows(2_000, 200, 4, threads=1, repeats=1, cases=["sum-shuffled", "amax-sorted"])
    assert [r.case for r in rows] == ["sum-shuffled", "amax-sorted"]
    for r in rows:
        assert r.onnxruntime_ms > 0 and r.eager_ms > 0 and r.ratio == r.onnxruntime_ms / r.eager_ms
        assert r.max_abs_diff <= 1e-4


def test_an_unknown_case_is_refused():
    with pytest.raises(ValueError, match="unknown case"):
        export_onnx.export_onnx_rows(100, 10, 2, cases=["median"])


def test_the_command_prints_the_table_and_its_goals(capsys):
    cli.main(["bench-export", "--edges", "2000", "--nodes", "200", "--features", "4", "--cases", "amax-shuffled"])
    out = capsys.readouterr().out
    assert "amax-shuffled" in out and "goals:" in out
    assert "amax-shuffled: onnxruntime time / eager scatterx time" in out


@pytest.mark.parametrize("flag", ["--edges", "--nodes", "--features", "--threads", "--repeats"])
def test_the_command_refuses_a_size_below_one_by_name(flag):
    with pytest.raises(SystemExit, match=f"{flag} must be at least 1"):
        cli.main(["bench-export", flag, "0"])
