"""``scatterx bench --grid --cpu-target host,x86-64-v3``: the grid once per CPU target Numba compiles for.

A kernel's speed depends on the instructions it was compiled to, not only on the machine: the same loop may
vectorise with AVX-512 and not with AVX2 (a masked store, a missing 64-bit max), and most users' CPUs have AVX2
only. Numba compiles for another CPU than the host when ``NUMBA_CPU_NAME`` names it; ``NUMBA_CPU_FEATURES`` set to
the empty string then takes that CPU's own features (unset, Numba would add the host's -- AVX-512 included). Each
target runs in a child process (the variable is read when Numba starts), with its own disk cache (Numba keys it
by target), writing its results to ``<out-dir>/<target>/``; then the counts of cells below 1.0x and below their
goal are printed side by side. A target must be one the host can execute: an AVX-512 target on an AVX2 machine
stops its child with an illegal instruction, reported as a failed target.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numba

from .text import Column, Columns

HOST = "host"
CHILD = "SCATTERX_GRID_TARGET_CHILD"  # set in a target's child: it runs the grid itself, never spawns
#: The targets ``--cpu-target`` takes: the host itself, x86-64-v3 (AVX2 + FMA: Haswell, Zen 1-3 and most CPUs
#: users run) and x86-64-v2 (SSE4.2, no AVX), and two named CPUs: Haswell (AVX2) and Skylake-AVX512.
TARGETS = (HOST, "x86-64-v3", "x86-64-v2", "haswell", "skylake-avx512")


def env_for(target: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of a child process compiling for ``target`` (``base``: default ``os.environ``)."""
    env = dict(os.environ if base is None else base)
    env.pop("NUMBA_CPU_NAME", None)
    env.pop("NUMBA_CPU_FEATURES", None)
    env[CHILD] = "1"
    if target != HOST:
        env["NUMBA_CPU_NAME"], env["NUMBA_CPU_FEATURES"] = target, ""
    return env


def numba_cpu() -> Tuple[Optional[str], Optional[str]]:
    """``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES`` as this process's Numba read them (None: not set)."""
    config = numba.config
    return config.CPU_NAME, config.CPU_FEATURES  # type: ignore[attr-defined]  # numba.config sets them at import


def compiling_for(target: str) -> bool:
    """Whether this process's Numba compiles for ``target`` (as ``env_for`` sets it)."""
    name, features = numba_cpu()
    if target == HOST:
        return name is None
    return target == name and features == ""


def child_argv(argv: Sequence[str], target: str, out_dir: str) -> List[str]:
    """``argv`` (the parent's arguments after the program name) for one target's child: the same arguments, then
    ``--cpu-target`` and ``--out-dir`` again (argparse keeps an option's last value)."""
    return [sys.executable, "-m", "scatterx", *argv, "--cpu-target", target, "--out-dir", out_dir]


def summary(target: str, grid_json: str) -> Dict[str, object]:
    """One target's counts from its ``grid.json``: cells timed, below 1.0x the fastest torch path, below their
    goal; element rows with a goal, below it; the CPU target its environment line names."""
    with open(grid_json) as f:
        data = json.load(f)
    cells = [c for c in data["cells"] if c.get("speedup") is not None]
    elements = [e for e in data["elements"] if e.get("goal") is not None]
    return dict(
        target=target,
        compiled_for=data["environment"].get("numba_cpu_target", "?"),
        cells=len(cells),
        below_1x=sum(c["speedup"] < 1.0 for c in cells),
        below_goal=sum(c["ok"] is False for c in cells),
        element_rows=len(elements),
        elements_below_goal=sum(e["ok"] is False for e in elements),
    )


def table(rows: List[Dict[str, object]]) -> str:
    cols = Columns(
        Column("target", 16, left=True),
        Column("compiled for", 34, left=True),
        Column("cells", 6),
        Column("< 1.0x", 7),
        Column("< goal", 7),
        Column("element rows < goal", 20),
    )
    lines = ["the grid per CPU target (cells: index_scatter_reduce against the fastest torch path)", *cols.head()]
    for r in rows:
        if "failed" in r:
            lines.append(f"{r['target']:<16} failed: {r['failed']}")
            continue
        elements = f"{r['elements_below_goal']} of {r['element_rows']}"
        lines.append(cols.row(r["target"], r["compiled_for"], r["cells"], r["below_1x"], r["below_goal"], elements))
    return "\n".join(lines)


def run(
    argv: Sequence[str], targets: Sequence[str], out_dir: str, call: Callable[..., int] = subprocess.call
) -> List[Dict[str, object]]:
    """The grid once per target, each in a child process writing to ``<out_dir>/<target>/``; the summaries."""
    rows: List[Dict[str, object]] = []
    for target in targets:
        where = os.path.join(out_dir, target)
        print(f"scatterx bench --grid: CPU target {target} (a child process, results in {where})", file=sys.stderr)
        grid_json = os.path.join(where, "grid.json")
        if os.path.exists(grid_json):
            os.remove(grid_json)  # an earlier run's results must not stand in for a failed one
        code = call(child_argv(argv, target, where), env=env_for(target))
        if code != 0 or not os.path.exists(grid_json):
            rows.append(dict(target=target, failed=_failure(code)))
        else:
            rows.append(summary(target, grid_json))
    return rows


def _failure(code: int) -> str:
    """What a child's exit status says: a signal by name (SIGILL: the machine cannot run the target's code)."""
    if code >= 0:
        return f"exit status {code}"
    name = signal.Signals(-code).name
    why = " (an illegal instruction: this machine cannot run code compiled for the target)" if name == "SIGILL" else ""
    return f"killed by {name}{why}"
