"""``scatterx/bench/targets.py``: the grid once per CPU target -- each target's child process is told the target
the way Numba reads it, gets the parent's arguments with its own target and output folder, and its counts are
read back (a failed target is reported, never replaced by an earlier run's results)."""

import json
import subprocess
import sys

from scatterx.bench import targets
from scatterx.cli import build_parser


def test_a_target_s_environment_is_what_numba_reads():
    env = targets.env_for("x86-64-v3", {"NUMBA_CPU_FEATURES": "+avx512f", "PATH": "/bin"})
    assert env["NUMBA_CPU_NAME"] == "x86-64-v3" and env["NUMBA_CPU_FEATURES"] == ""  # not the host's AVX-512
    assert env["PATH"] == "/bin" and env[targets.CHILD] == "1"
    host = targets.env_for(targets.HOST, {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""})
    assert "NUMBA_CPU_NAME" not in host and "NUMBA_CPU_FEATURES" not in host
    code = (
        "import numba; from scatterx.bench.targets import compiling_for; "
        "print(numba.config.CPU_NAME, compiling_for('x86-64-v3'), compiling_for('host'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=targets.env_for("x86-64-v3"), capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["x86-64-v3", "True", "False"]


def test_a_child_gets_the_parent_s_arguments_with_its_own_target_and_folder():
    argv = ["bench", "--grid", "--cpu-target", "host,haswell", "--grid-edges=100", "--out-dir=old", "--threads", "1"]
    got = targets.child_argv(argv, "haswell", "old/haswell")
    assert got[:3] == [sys.executable, "-m", "scatterx"]
    args = build_parser().parse_args(got[3:])  # what the child's parser makes of them
    assert (args.cpu_target, args.out_dir) == ("haswell", "old/haswell")
    assert (args.grid, args.grid_edges, args.threads) == ("default", "100", 1)


def _grid_json(path, speedups_goals, elements):
    path.mkdir(parents=True, exist_ok=True)
    cells = [dict(speedup=s, ok=None if g is None else s >= g) for s, g in speedups_goals]
    rows = [dict(goal=g, ok=None if g is None else s >= g) for s, g in elements]
    (path / "grid.json").write_text(
        json.dumps(dict(environment={"numba_cpu_target": "haswell (avx2, avx)"}, cells=cells, elements=rows))
    )


def test_each_target_s_counts_are_read_back_and_a_failed_target_is_reported(tmp_path):
    _grid_json(tmp_path / "host", [(0.5, 0.8), (1.5, 2.0), (2.5, 2.0), (None, None)], [(0.9, 1.0), (3.0, None)])
    calls = []

    def call(argv, env):
        calls.append((argv[argv.index("--cpu-target") + 1], env.get("NUMBA_CPU_NAME")))
        if env.get("NUMBA_CPU_NAME") == "haswell":
            _grid_json(tmp_path / "haswell", [(0.7, 0.8), (1.2, 1.0)], [(1.6, 1.5)])
            return 0
        return -4  # the host's child dies of SIGILL: its stale grid.json must not count

    rows = targets.run(["bench", "--grid"], ["host", "haswell"], str(tmp_path), call=call)
    assert calls == [("host", None), ("haswell", "haswell")]
    assert rows[0]["target"] == "host" and rows[0]["failed"].startswith("killed by SIGILL (an illegal instruction")
    assert rows[1] == dict(
        target="haswell",
        compiled_for="haswell (avx2, avx)",
        cells=2,
        below_1x=1,
        below_goal=1,
        element_rows=1,
        elements_below_goal=0,
    )
    text = targets.table(rows)
    assert "host             failed: killed by SIGILL" in text and "haswell (avx2, avx)" in text


def test_a_child_s_exit_status_is_named():
    assert targets._failure(3) == "exit status 3"
    assert targets._failure(-9) == "killed by SIGKILL"
